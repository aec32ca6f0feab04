// folio serve: the app core on a local web host: the UI, the app's API, and an OpenAI-compatible API, on
// 127.0.0.1 only. It prints (and opens) the link that signs a browser in, and runs until interrupted
// (Ctrl-C, SIGTERM): then it takes no new connection, cancels the answers under way, gives clients a few
// seconds, closes every connection, the engine and the database, and exits; a second signal exits at once.
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { createAppCore } from '../../services/app-core.ts';
import { dataPaths, defaultDataDir } from '../../services/paths.ts';
import { MAX_DOCUMENT_BYTES } from '../../shared/limits.ts';
import { parseOriginList } from '../../web/access.ts';
import { ALLOW_DIRS_ENV, AllowedFolders, parseAllowDirs } from '../../web/allowed-folders.ts';
import { API_TOKEN_ENV, resolveApiToken } from '../../web/api-token.ts';
import { startWebHost, STOP_GRACE_MS } from '../../web/server.ts';
import { type Command, common, int, str, UsageError } from '../args.ts';
import { canOpenBrowser, openSignInPage } from '../open-browser.ts';

/** Where `npm run build` puts the renderer. */
export const rendererDist = fileURLToPath(new URL('../../../dist/renderer/', import.meta.url));

export const ORIGINS_ENV = 'FOLIO_ORIGINS';

export const serve: Command = {
  summary: 'serve the app and an OpenAI-compatible API on 127.0.0.1',
  usage:
    'folio serve [--port 8080] [--model M.gguf] [--data DIR] [--token T] [--origins URL,URL] [--allow-dirs D:D] [--no-open]\n' +
    "      the library (database, caches, downloads) is DIR, by default the desktop app's\n" +
    '      a browser signs in by opening the link printed at start (the UI with ?token=...), which it opens itself\n' +
    '      unless --no-open; programs send `Authorization: Bearer <token>`. The token is made on first start and\n' +
    `      kept in DIR/api-token (--token or ${API_TOKEN_ENV} set another)\n` +
    `      pages of other origins may call the API with the token only when listed in --origins or ${ORIGINS_ENV}\n` +
    '      (comma-separated, e.g. http://localhost:3000); * lets every web page you visit send requests (risky: only\n' +
    '      the token keeps them out)\n' +
    `      --allow-dirs (or ${ALLOW_DIRS_ENV}): folders whose files the API may import by path, separated as in PATH;\n` +
    '      none by default (the browser UI uploads its documents)',
  options: {
    model: common.model,
    help: common.help,
    port: { type: 'string' },
    data: { type: 'string' },
    token: { type: 'string' },
    origins: { type: 'string' },
    'allow-dirs': { type: 'string' },
    'no-open': { type: 'boolean' },
  },
  async run(v) {
    const port = int(v, 'port', 8080, 0);
    const dataDir = str(v, 'data') ?? defaultDataDir();
    let apiToken, allowedOrigins, allowDirs;
    try {
      apiToken = resolveApiToken({ dataDir, flag: str(v, 'token') });
      allowedOrigins = [...parseOriginList(process.env[ORIGINS_ENV]), ...parseOriginList(str(v, 'origins'))];
      allowDirs = [
        ...parseAllowDirs(process.env[ALLOW_DIRS_ENV], ALLOW_DIRS_ENV),
        ...parseAllowDirs(str(v, 'allow-dirs'), '--allow-dirs'),
      ];
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    const core = await createAppCore({ dataDir, model: str(v, 'model') });
    const host = await startWebHost({
      dispatcher: core.dispatcher,
      openai: core.openai,
      staticDir: rendererDist,
      port,
      apiToken: apiToken.token,
      allowedOrigins,
      paths: new AllowedFolders(allowDirs),
      uploads: {
        dir: dataPaths(dataDir).tmp,
        maxBytes: MAX_DOCUMENT_BYTES,
        importUpload: async (fileName, tempPath, o) =>
          core.documents.imports.importUpload({ fileName, tempPath, keepDuplicate: o.keepDuplicate }),
      },
      documentFile: (id, part) => core.documents.library.file(id, part),
    });
    core.setServerInfo({ apiUrl: host.url, apiToken: apiToken.token });
    // Listening for the signals before saying where we are: whoever waits for that line may stop us next.
    const stopRequested = new Promise<void>((resolve) => {
      let signals = 0;
      const onSignal = () => {
        // A second Ctrl-C does not wait for anything: the database is consistent after every commit.
        if (++signals > 1) {
          process.stdout.write('stopped at once\n');
          process.exit(130);
        }
        resolve();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    });
    const opened =
      str(v, 'no-open') || !canOpenBrowser() ? null : openSignInPage(host.signInUrl, dataPaths(dataDir).tmp, host.port);
    process.stdout.write(
      `Folio is at ${host.url}/  (library: ${dataDir})\n` +
        `Sign in: open ${host.signInUrl}${opened ? '  (opened in your browser)' : ''}\n` +
        `OpenAI-compatible API: ${host.url}/v1\n` +
        `API token (Authorization: Bearer ...): ${apiToken.source === '--token' || apiToken.source === API_TOKEN_ENV ? `from ${apiToken.source}` : `in ${apiToken.source}`}; Settings → API access shows it\n` +
        (allowedOrigins.length ? `Also allowed from (with the token): ${allowedOrigins.join(', ')}\n` : '') +
        (allowedOrigins.includes('*')
          ? 'Warning: --origins * lets every web page you visit send requests here; only the token keeps them out, so never paste it into a web page\n'
          : '') +
        (allowDirs.length ? `Imports by path from: ${allowDirs.join(', ')}\n` : ''),
    );
    await stopRequested;
    process.stdout.write(`stopping: answers cancelled, connections closed within ${STOP_GRACE_MS / 1000} s...\n`);
    if (opened) rmSync(opened, { force: true });
    const answers = core.chats.stopAll();
    await host.close();
    await answers;
    await core.close();
    process.stdout.write('stopped\n');
  },
};
