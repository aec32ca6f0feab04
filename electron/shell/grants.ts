// What the desktop renderer may touch on disk and on the network. The renderer shows web content (PDF text,
// model names, Markdown), so it is treated as a page that may be hostile: it can only name files and folders
// the user handed to Folio (the open dialog, a drop on the window, the OS's "Open with"), and a download of
// anything but a catalog entry waits for the user's yes in a native dialog the main process shows.
// The main process records the grants (ipc.ts, shell.ts); authorizeCall checks every IPC call against them.
import { isAbsolute } from 'node:path';

import { ApiError, type Params } from '../api/contract.ts';
import { checkPaths, type DispatcherLike, type PathPolicy } from '../api/path-policy.ts';

export type { DispatcherLike };

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
export class Grants implements PathPolicy {
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

  document(path: string): string {
    if (!this.hasFile(path)) throw new ApiError('FORBIDDEN', NOT_GRANTED_DOCUMENT, { path });
    return path;
  }

  model(path: string): string {
    if (!this.hasFile(path)) throw new ApiError('FORBIDDEN', NOT_GRANTED_MODEL, { path });
    return path;
  }

  folder(path: string): string {
    if (!this.hasFolder(path)) throw new ApiError('FORBIDDEN', NOT_GRANTED_FOLDER, { path });
    return path;
  }
}

export interface AuthorizeContext {
  grants: Grants;
  dispatcher: DispatcherLike;
  /** Asks the user (download-confirmation.ts); true: go ahead. */
  confirmDownload(url: string): Promise<boolean>;
}

/**
 * Checks one renderer call against the grants (path-policy.ts: the contract's parser first, then every
 * path it names) and asks about downloads by URL; returns the parameters to dispatch, or throws an ApiError.
 */
export async function authorizeCall(method: string, params: unknown, c: AuthorizeContext): Promise<unknown> {
  const parsed = await checkPaths(method, params, c.grants, c.dispatcher);
  if (method === 'models.download') {
    const p = parsed as Params<'models.download'>;
    // Catalog entries are Folio's own list; any other address is the user's to confirm.
    if ('url' in p && !(await c.confirmDownload(p.url)))
      throw new ApiError('CANCELLED', 'The download was cancelled: nothing was downloaded');
  }
  return parsed;
}
