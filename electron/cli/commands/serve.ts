// folio serve: the app core on a local web host: the UI, the app's API, and an OpenAI-compatible API, on
// 127.0.0.1 only. It runs until interrupted (Ctrl-C), then stops answers, the engine and the database.
import { fileURLToPath } from 'node:url';

import { createAppCore } from '../../services/app-core.ts';
import { dataPaths, defaultDataDir } from '../../services/paths.ts';
import { MAX_DOCUMENT_BYTES } from '../../documents/limits.ts';
import { parseOriginList } from '../../web/access.ts';
import { API_TOKEN_ENV, resolveApiToken } from '../../web/api-token.ts';
import { startWebHost } from '../../web/server.ts';
import { type Command, common, int, str, UsageError } from '../args.ts';

/** Where `npm run build` puts the renderer. */
export const rendererDist = fileURLToPath(new URL('../../../dist/renderer/', import.meta.url));

export const ORIGINS_ENV = 'FOLIO_ORIGINS';

export const serve: Command = {
  summary: 'serve the app and an OpenAI-compatible API on 127.0.0.1',
  usage:
    'folio serve [--port 8080] [--model M.gguf] [--data DIR] [--token T] [--origins URL,URL]\n' +
    "      the library (database, caches, downloads) is DIR, by default the desktop app's\n" +
    `      programs send \`Authorization: Bearer <token>\`: the token is made on first start and kept in DIR/api-token\n` +
    `      (--token or ${API_TOKEN_ENV} set another); pages of other origins may call the API only when listed in\n` +
    `      --origins or ${ORIGINS_ENV} (comma-separated, e.g. http://localhost:3000; * for any)`,
  options: {
    model: common.model,
    help: common.help,
    port: { type: 'string' },
    data: { type: 'string' },
    token: { type: 'string' },
    origins: { type: 'string' },
  },
  async run(v) {
    const port = int(v, 'port', 8080, 0);
    const dataDir = str(v, 'data') ?? defaultDataDir();
    let apiToken, allowedOrigins;
    try {
      apiToken = resolveApiToken({ dataDir, flag: str(v, 'token') });
      allowedOrigins = [...parseOriginList(process.env[ORIGINS_ENV]), ...parseOriginList(str(v, 'origins'))];
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
      uploads: {
        dir: dataPaths(dataDir).tmp,
        maxBytes: MAX_DOCUMENT_BYTES,
        importUpload: async (fileName, tempPath, o) =>
          core.documents.importUpload({ fileName, tempPath, keepDuplicate: o.keepDuplicate }),
      },
      documentFile: (id, part) => core.documents.file(id, part),
    });
    core.setServerInfo({ apiUrl: host.url, apiToken: apiToken.token });
    process.stdout.write(
      `Folio is at ${host.url}/  (library: ${dataDir})\nOpenAI-compatible API: ${host.url}/v1\n` +
        `API token (Authorization: Bearer ...): ${apiToken.source === '--token' || apiToken.source === API_TOKEN_ENV ? `from ${apiToken.source}` : `in ${apiToken.source}`}; Settings → API access shows it\n` +
        (allowedOrigins.length ? `Also allowed from: ${allowedOrigins.join(', ')}\n` : ''),
    );
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    process.stdout.write('stopping...\n');
    await host.close();
    await core.close();
  },
};
