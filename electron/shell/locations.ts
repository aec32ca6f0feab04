// Where the desktop app finds its parts, from the compiled main module's URL (dist/electron/main.js) and
// the app's folder (the repository when run with `electron .`, resources/app.asar when packaged). The
// native addon is unpacked from the asar (build/electron-builder.yml, asarUnpack): a .node file must be a
// real file for the engine host to load it.
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ShellLocations {
  /** dist/renderer: the built renderer, served as app://folio/. */
  rendererDir: string;
  /** dist/electron/preload.cjs (CommonJS: a sandboxed preload cannot be an ES module). */
  preloadPath: string;
  /** dist/electron/engine/host.js: the engine host's entry for the utilityProcess. */
  hostEntry: string;
  /** native/build/Release/folio.node, outside the asar. */
  addonPath: string;
  /** The window icon (Linux). */
  icon: string;
}

/** The same path outside the asar archive (app.asar/x → app.asar.unpacked/x); others unchanged. */
export function unpackedPath(path: string): string {
  return path.replace(`${sep}app.asar${sep}`, `${sep}app.asar.unpacked${sep}`);
}

export function shellLocations(mainModuleUrl: string, appPath: string): ShellLocations {
  const here = fileURLToPath(new URL('.', mainModuleUrl)); // dist/electron/
  return {
    rendererDir: join(here, '..', 'renderer'),
    preloadPath: join(here, 'preload.cjs'),
    hostEntry: join(here, 'engine', 'host.js'),
    addonPath: unpackedPath(join(appPath, 'native', 'build', 'Release', 'folio.node')),
    icon: join(appPath, 'assets', 'icons', '512x512.png'),
  };
}
