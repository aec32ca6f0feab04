// The folders whose files the web API may name (documents.import by path, models.add, new model folders):
// `folio serve --allow-dirs A:B` or FOLIO_ALLOW_DIRS, none by default, so a holder of the token cannot
// make Folio read an arbitrary file of its user (the browser UI uploads its documents instead). A path is
// resolved with every symlink before it is compared, and the resolved path is what gets imported, so a
// link named `p.txt` inside an allowed folder that points at /etc/passwd is refused.
import { realpathSync } from 'node:fs';
import { delimiter, isAbsolute, relative, resolve, sep } from 'node:path';

import { ApiError } from '../api/contract.ts';
import type { PathPolicy } from '../api/path-policy.ts';

export const ALLOW_DIRS_ENV = 'FOLIO_ALLOW_DIRS';

/** A list of folders as PATH writes one (':' between them, ';' on Windows); each must exist. */
export function parseAllowDirs(list: string | undefined, where: string): string[] {
  if (!list?.trim()) return [];
  return list
    .split(delimiter)
    .map((x) => x.trim())
    .filter(Boolean)
    .map((dir) => {
      try {
        return realpathSync(resolve(dir));
      } catch (e) {
        throw new Error(`${where}: the folder ${dir} cannot be used: ${(e as Error).message}`);
      }
    });
}

/** `inner` is `outer` or lies below it (both resolved); a name that only starts with '..' ('..notes') is below. */
function isWithin(outer: string, inner: string): boolean {
  const r = relative(outer, inner);
  return r !== '..' && !r.startsWith(`..${sep}`) && !isAbsolute(r);
}

export class AllowedFolders implements PathPolicy {
  /** `dirs`: resolved folders (parseAllowDirs). */
  constructor(private readonly dirs: readonly string[]) {}

  private refuse(path: string, what: string): never {
    throw new ApiError(
      'FORBIDDEN',
      this.dirs.length === 0
        ? `the web API names no ${what} on disk unless folio serve was started with --allow-dirs (or ${ALLOW_DIRS_ENV}): upload the file instead (POST /api/upload), or restart it with the folder allowed`
        : `${path} is not inside a folder this server may read (${this.dirs.join(', ')}): move it there, upload it (POST /api/upload), or restart folio serve with its folder in --allow-dirs`,
      { path },
    );
  }

  /** The path with its links resolved, when that lies inside an allowed folder. */
  private resolveInside(path: string, what: string): string {
    if (!isAbsolute(path) || path.includes('\0')) this.refuse(path, what);
    let real: string;
    try {
      real = realpathSync(path);
    } catch {
      // Said to be missing only where it may be read: elsewhere the answer would tell what exists.
      if (this.dirs.some((d) => isWithin(d, resolve(path))))
        throw new ApiError('FILE_NOT_FOUND', `${path} does not exist (or cannot be read)`, { path });
      this.refuse(path, what);
    }
    if (!this.dirs.some((d) => isWithin(d, real))) this.refuse(path, what);
    return real;
  }

  document(path: string): string {
    return this.resolveInside(path, 'file');
  }

  model(path: string): string {
    return this.resolveInside(path, 'file');
  }

  folder(path: string): string {
    return this.resolveInside(path, 'folder');
  }
}
