// folio serve: the app core on a local web host: the UI, the app's API, and an OpenAI-compatible API, on
// 127.0.0.1 only. It runs until interrupted (Ctrl-C), then stops answers, the engine and the database.
import { fileURLToPath } from 'node:url';

import { createAppCore } from '../../core/app-core.ts';
import { defaultDataDir } from '../../core/paths.ts';
import { startWebHost } from '../../web/server.ts';
import { type Command, common, int, str } from '../args.ts';

/** Where `npm run build` puts the renderer. */
export const rendererDist = fileURLToPath(new URL('../../../dist/renderer/', import.meta.url));

export const serve: Command = {
  summary: 'serve the app and an OpenAI-compatible API on 127.0.0.1',
  usage: 'folio serve [--port 8080] [--model M.gguf] [--data DIR]\n      the library (database, caches, downloads) is DIR, by default the desktop app\'s',
  options: { model: common.model, help: common.help, port: { type: 'string' }, data: { type: 'string' } },
  async run(v) {
    const port = int(v, 'port', 8080, 0);
    const dataDir = str(v, 'data') ?? defaultDataDir();
    const core = await createAppCore({ dataDir, model: str(v, 'model') });
    const host = await startWebHost({ dispatcher: core.dispatcher, openai: core.openai, staticDir: rendererDist, port });
    process.stdout.write(`Folio is at ${host.url}/  (library: ${dataDir})\nOpenAI-compatible API: ${host.url}/v1\n`);
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
