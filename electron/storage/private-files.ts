// The library is the user's alone: every document's text, every chat, the saved caches and the API token
// are in it. Folders are made 0700 and files 0600 whatever the umask (mkdir and open modes only take bits
// away from the umask's result, so the mode is set explicitly), and a library made by an older build, or
// copied in with looser rights, is tightened when the app starts. On Windows a user's profile folder is
// private already and POSIX modes mean little: nothing is changed there.
import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

const posix = process.platform !== 'win32';

/** Makes `dir` (and missing parents) and sets the folder itself to 0700. */
export function privateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (posix) chmodSync(dir, PRIVATE_DIR_MODE);
}

/** Creates `file` empty with mode 0600 if it does not exist (so that what opens it next keeps that mode). */
export function privateFile(file: string): void {
  closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
  if (posix) chmodSync(file, PRIVATE_FILE_MODE);
}

/**
 * Every folder under `root` (itself included) to 0700, every file to 0600. Links are left alone (their
 * targets are not the library's); what cannot be changed (another owner's file) is skipped. Returns how many
 * entries were tightened.
 */
export function tightenTree(root: string): number {
  if (!posix) return 0;
  let changed = 0;
  const visit = (path: string) => {
    let st;
    try {
      st = lstatSync(path);
    } catch {
      return; // removed meanwhile
    }
    const want = st.isDirectory() ? PRIVATE_DIR_MODE : st.isFile() ? PRIVATE_FILE_MODE : null;
    if (want === null) return;
    if ((st.mode & 0o777) !== want) {
      try {
        chmodSync(path, want);
        changed++;
      } catch {
        // not ours to change
      }
    }
    if (st.isDirectory()) {
      let names: string[] = [];
      try {
        names = readdirSync(path);
      } catch {
        return;
      }
      for (const name of names) visit(join(path, name));
    }
  };
  visit(root);
  return changed;
}
