// The library is the user's alone (issue 38 item 3): under a umask of 022, which makes files other users can
// read, every folder of a library Folio made is 0700 and every file 0600 (the database and its WAL and
// shared-memory files, the saved caches, the originals, the API token, uploads), and a library left with
// looser rights by an older build is tightened when the app starts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

import type { AppCore } from '../electron/services/app-core.ts';
import { resolveApiToken } from '../electron/web/api-token.ts';
import { missing, sharedModel } from './helpers/shared.ts';
import { taskDone, testCore } from './helpers/test-core.ts';

const model = sharedModel('stories260K.gguf');
const skip = process.platform === 'win32' ? 'POSIX modes' : missing(model);

let dir: string;
let oldUmask: number;
before(() => {
  oldUmask = process.umask(0o022);
  dir = mkdtempSync(join(tmpdir(), 'folio-private-'));
});
after(() => {
  process.umask(oldUmask);
  rmSync(dir, { recursive: true, force: true });
});

/** Every folder and file under `root` with its mode (links skipped), as "relative path: mode". */
function modes(root: string): { dirs: string[]; files: string[] } {
  const dirs: string[] = [];
  const files: string[] = [];
  const visit = (p: string) => {
    const st = lstatSync(p);
    const line = `${relative(root, p) || '.'}: ${(st.mode & 0o777).toString(8)}`;
    if (st.isDirectory()) {
      dirs.push(line);
      for (const n of readdirSync(p)) visit(join(p, n));
    } else if (st.isFile()) files.push(line);
  };
  visit(root);
  return { dirs, files };
}

async function readOneDocument(core: AppCore): Promise<void> {
  const text = 'Lily had a red kite. She flew it in the park with her dog. '.repeat(8);
  const { taskId } = await core.documents.imports.import({
    fileName: 'kite.txt',
    dataBase64: Buffer.from(text).toString('base64'),
  });
  assert.equal((await taskDone(core, taskId)).ok, true);
}

test('under umask 022, a new library is 0700 folders and 0600 files, caches and database included', {
  skip,
}, async () => {
  const lib = join(dir, 'fresh');
  resolveApiToken({ dataDir: lib, env: {} });
  const core = await testCore(lib, model);
  try {
    await readOneDocument(core);
  } finally {
    await core.close();
  }
  const { dirs, files } = modes(lib);
  for (const name of ['folio.sqlite3', 'api-token'])
    assert.ok(
      files.some((f) => f.startsWith(name + ':')),
      name,
    );
  assert.ok(
    files.some((f) => f.startsWith('caches/')),
    `a saved cache: ${files.join(', ')}`,
  );
  assert.ok(
    files.some((f) => f.startsWith('documents/')),
    'the original',
  );
  assert.deepEqual(
    dirs.filter((d) => !d.endsWith(': 700')),
    [],
    'every folder 0700',
  );
  assert.deepEqual(
    files.filter((f) => !f.endsWith(': 600')),
    [],
    'every file 0600',
  );
});

test("a library with other users' read rights is tightened when the app starts", { skip }, async () => {
  const lib = join(dir, 'old');
  const first = await testCore(lib, model);
  try {
    await readOneDocument(first);
  } finally {
    await first.close();
  }
  // As an older build left it: 0755 folders, 0644 files, a stray file of its own.
  writeFileSync(join(lib, 'caches', 'stray.bin'), 'x');
  const loosen = (p: string) => {
    const st = lstatSync(p);
    chmodSync(p, st.isDirectory() ? 0o755 : 0o644);
    if (st.isDirectory()) for (const n of readdirSync(p)) loosen(join(p, n));
  };
  loosen(lib);
  assert.ok(modes(lib).files.every((f) => f.endsWith(': 644')));
  const core = await testCore(lib, model);
  try {
    const { dirs, files } = modes(lib);
    assert.deepEqual(
      dirs.filter((d) => !d.endsWith(': 700')),
      [],
    );
    assert.deepEqual(
      files.filter((f) => !f.endsWith(': 600')),
      [],
    );
    assert.equal((await core.documents.library.list())[0].status, 'ready', 'the library still reads');
  } finally {
    await core.close();
  }
});
