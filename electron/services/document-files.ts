// The imported originals, kept so the document view can show the file itself (the PDF's pages, the Word
// document's formatting). Content-addressed: a file is stored once under its sha256, whatever it was named
// and however often it was imported, and removed when the last document made from it is deleted. Beside a
// Word document, the HTML mammoth made of it at import (<sha256>.html), and beside an image the PDF page it was
// put on (<sha256>.pdf), which the view shows. Names in the folder are only ever 64 hex digits (and .html or
// .pdf), so a name that reaches here from a request cannot leave it.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { copyFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const SHA256_HEX = /^[0-9a-f]{64}$/;
/** What an import may keep beside an original (putDerived). */
const DERIVED_EXTS = ['html', 'pdf'] as const;
export type DerivedExt = (typeof DERIVED_EXTS)[number];
const DERIVED_SUFFIX = new RegExp(`\\.(${DERIVED_EXTS.join('|')})$`);
/** A file being written is left alone this long by the startup sweep (another process may be writing it). */
const PART_STALE_MS = 60 * 60 * 1000;

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export class DocumentFiles {
  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /**
   * Stores the bytes (once: an identical file is already there) and returns their sha256 (pass it when it is
   * known: hashing a large file takes a while). Written by libuv's threads, never on the event loop.
   */
  async put(bytes: Uint8Array, sha = sha256Hex(bytes)): Promise<string> {
    const path = join(this.dir, sha);
    if (existsSync(path)) return sha;
    // Written aside and renamed, so a crash never leaves a partial file under a content name.
    const part = join(this.dir, `.${sha}.${randomBytes(6).toString('hex')}.part`);
    try {
      await writeFile(part, bytes, { mode: 0o600, flag: 'wx' });
      await rename(part, path);
    } finally {
      await rm(part, { force: true });
    }
    return sha;
  }

  /**
   * Takes a file already on this disk (an upload's temporary file, whose sha256 was taken as it was read)
   * as the original of `sha`: moved into place, or removed when an identical file is there already.
   */
  async adopt(file: string, sha: string): Promise<void> {
    const path = join(this.dir, sha);
    if (!SHA256_HEX.test(sha) || existsSync(path)) return await rm(file, { force: true });
    try {
      await rename(file, path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
      // Another disk: copied aside and renamed, like put.
      const part = join(this.dir, `.${sha}.${randomBytes(6).toString('hex')}.part`);
      try {
        await copyFile(file, part);
        await rename(part, path);
      } finally {
        await rm(part, { force: true });
        await rm(file, { force: true });
      }
    }
  }

  /** The stored file of a sha256, or null when there is none (or the name is not a sha256). */
  path(sha256: string | null | undefined): string | null {
    if (!sha256 || !SHA256_HEX.test(sha256)) return null;
    const path = join(this.dir, sha256);
    try {
      return statSync(path).isFile() ? path : null;
    } catch {
      return null;
    }
  }

  /** Keeps what the import made of a file beside it, under the same name: a Word document's HTML (.html), the
   * page an image was put on (.pdf). */
  putDerived(sha256: string, ext: DerivedExt, data: string | Uint8Array): void {
    if (!SHA256_HEX.test(sha256)) return;
    const part = join(this.dir, `.${sha256}.${randomBytes(6).toString('hex')}.${ext}.part`);
    try {
      writeFileSync(part, data, { mode: 0o600, flag: 'wx' });
      renameSync(part, join(this.dir, `${sha256}.${ext}`));
    } finally {
      rmSync(part, { force: true });
    }
  }

  /** What the import made of a sha256's file (putDerived), or null. */
  derivedPath(sha256: string | null | undefined, ext: DerivedExt): string | null {
    const original = this.path(sha256);
    if (!original) return null;
    try {
      return statSync(`${original}.${ext}`).isFile() ? `${original}.${ext}` : null;
    } catch {
      return null;
    }
  }

  /**
   * Removes what no document uses: files of a sha256 not in `used` (a crash between storing a file and
   * recording its document), and writes left half-done by a crash. Run once at startup.
   */
  sweep(used: ReadonlySet<string>, now = Date.now()): string[] {
    const removed: string[] = [];
    for (const name of readdirSync(this.dir)) {
      const path = join(this.dir, name);
      const sha = name.replace(DERIVED_SUFFIX, '');
      let stale = false;
      if (name.endsWith('.part')) {
        try {
          stale = now - statSync(path).mtimeMs > PART_STALE_MS;
        } catch {
          // gone meanwhile
        }
      } else stale = SHA256_HEX.test(sha) && !used.has(sha);
      if (stale) {
        rmSync(path, { force: true });
        removed.push(name);
      }
    }
    return removed;
  }

  remove(sha256: string): void {
    if (!SHA256_HEX.test(sha256)) return;
    rmSync(join(this.dir, sha256), { force: true });
    for (const ext of DERIVED_EXTS) rmSync(join(this.dir, `${sha256}.${ext}`), { force: true });
  }
}
