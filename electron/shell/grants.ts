// What the desktop renderer may touch on disk and on the network. The renderer shows web content (PDF text,
// model names, Markdown), so it is treated as a page that may be hostile: it can only name files and folders
// the user handed to Folio (the open dialog, a drop on the window, the OS's "Open with"), and a download of
// anything but a catalog entry waits for the user's yes in a native dialog the main process shows.
// The main process records the grants (ipc.ts, shell.ts); authorizeCall checks every IPC call against them.
import { isAbsolute } from 'node:path';

import { ApiError, parseParams, type Params } from '../api/contract.ts';

/** What the IPC layer needs of the app core. */
export interface DispatcherLike {
  dispatch(method: string, params: unknown): Promise<unknown>;
}

/** The longest path a grant may name (Windows' extended-length limit; more is no real path). */
export const MAX_GRANTED_PATH_CHARS = 32_767;

export const NOT_GRANTED_DOCUMENT =
  'Folio can only open files you choose or drop on the window: use Open document… or drag the file onto Folio';
export const NOT_GRANTED_MODEL =
  'Folio can only add model files you choose in its file dialog: use Choose a GGUF file… on the Models page';
export const NOT_GRANTED_FOLDER =
  'Folio can only search folders you choose in the folder dialog: use Choose a folder… in Settings';

/** True for a string that may be recorded as a grant: an absolute path of sane length, no NUL. */
export function isGrantablePath(p: unknown): p is string {
  return (
    typeof p === 'string' && p.length > 0 && p.length <= MAX_GRANTED_PATH_CHARS && !p.includes('\0') && isAbsolute(p)
  );
}

/**
 * The files and folders the user handed over in this run of the app. Paths are compared exactly as the OS
 * gave them: normalising ('/granted/link/..') could make a granted string name another file.
 */
export class Grants {
  private readonly files = new Set<string>();
  private readonly folders = new Set<string>();

  grantFiles(paths: readonly string[]): void {
    for (const p of paths) if (isGrantablePath(p)) this.files.add(p);
  }

  grantFolders(paths: readonly string[]): void {
    for (const p of paths) if (isGrantablePath(p)) this.folders.add(p);
  }

  hasFile(path: string): boolean {
    return this.files.has(path);
  }

  hasFolder(path: string): boolean {
    return this.folders.has(path);
  }
}

export interface AuthorizeContext {
  grants: Grants;
  dispatcher: DispatcherLike;
  /** Asks the user (download-confirmation.ts); true: go ahead. */
  confirmDownload(url: string): Promise<boolean>;
}

/**
 * Checks one renderer call against the grants; returns the parameters to dispatch, or throws an ApiError.
 * The contract's own parser runs first, so what is checked is exactly what the handler gets (a union
 * strips keys: `{ path, fileName, dataBase64 }` is an import by path).
 */
export async function authorizeCall(method: string, params: unknown, c: AuthorizeContext): Promise<unknown> {
  const parsed = parseParams(method, params);
  switch (method) {
    case 'documents.import': {
      const p = parsed as Params<'documents.import'>;
      if ('path' in p && !c.grants.hasFile(p.path))
        throw new ApiError('FORBIDDEN', NOT_GRANTED_DOCUMENT, { path: p.path });
      break;
    }
    case 'models.add': {
      const p = parsed as Params<'models.add'>;
      if (!c.grants.hasFile(p.path)) throw new ApiError('FORBIDDEN', NOT_GRANTED_MODEL, { path: p.path });
      break;
    }
    case 'settings.update': {
      const p = parsed as Params<'settings.update'>;
      if (p.modelFolders) {
        // Folders already in the settings may stay (or be removed); each new one must have been chosen.
        const current = new Set(
          ((await c.dispatcher.dispatch('settings.get', {})) as { modelFolders: string[] }).modelFolders,
        );
        const added = p.modelFolders.find((f) => !current.has(f) && !c.grants.hasFolder(f));
        if (added !== undefined) throw new ApiError('FORBIDDEN', NOT_GRANTED_FOLDER, { path: added });
      }
      break;
    }
    case 'models.download': {
      const p = parsed as Params<'models.download'>;
      // Catalog entries are Folio's own list; any other address is the user's to confirm.
      if ('url' in p && !(await c.confirmDownload(p.url)))
        throw new ApiError('CANCELLED', 'The download was cancelled: nothing was downloaded');
      break;
    }
  }
  return parsed;
}
