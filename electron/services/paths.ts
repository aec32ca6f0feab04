// Where Folio keeps the user's library: the same folder Electron's app.getPath('userData') gives the
// desktop app, so the desktop app and the web host share one library. FOLIO_DATA_DIR overrides it.
import { homedir } from 'node:os';
import { join } from 'node:path';

export function defaultDataDir(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  home = homedir(),
): string {
  if (env.FOLIO_DATA_DIR) return env.FOLIO_DATA_DIR;
  if (platform === 'win32') return join(env.APPDATA ?? join(home, 'AppData', 'Roaming'), 'Folio');
  if (platform === 'darwin') return join(home, 'Library', 'Application Support', 'Folio');
  return join(env.XDG_CONFIG_HOME ?? join(home, '.config'), 'Folio');
}

/** The folders inside the data folder. */
export function dataPaths(dataDir: string) {
  return {
    root: dataDir,
    caches: join(dataDir, 'caches'), // saved compressed KV caches, one per document, and of sets read together
    models: join(dataDir, 'models'), // downloaded models
    documents: join(dataDir, 'documents'), // the imported originals, by content (document-files.ts)
    tmp: join(dataDir, 'tmp'), // uploads on their way in (web host), removed once imported
    ocrLanguages: join(dataDir, 'ocr-languages'), // Tesseract models the user adds (<code>.traineddata): OCR languages
  };
}
