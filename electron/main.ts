// The desktop app's main process: the Electron shell (electron/shell/) around the app core. Thin on
// purpose: createShell does the wiring and is tested with a fake electron module (test/shell.test.ts).
// Runs as ES module from dist/electron/main.js (`npm start`, or the packaged app).
import * as electron from 'electron';

import { createShell } from './shell/shell.ts';
import { shellLocations } from './shell/locations.ts';

const where = shellLocations(import.meta.url, electron.app.getAppPath());

const shell = createShell(electron, {
  rendererDir: where.rendererDir,
  preloadPath: where.preloadPath,
  hostEntry: where.hostEntry,
  // FOLIO_ADDON (e.g. a debug build of the engine) wins over the bundled addon.
  addonPath: process.env.FOLIO_ADDON ?? where.addonPath,
  icon: where.icon,
  // Loaded once the app is ready, so a second launch (which only hands over its files) stays light.
  createCore: async (options) => (await import('./services/app-core.ts')).createAppCore(options),
});

if (shell.primary) {
  // Ctrl+C in the terminal of `npm start`, or a service manager: quit through before-quit, as the menu does.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => electron.app.quit());
}
