// DocumentsService's import entry points on a real app core (storage, the engine process, stories260K):
// a path that is not a regular file is refused at once, before any record is made;
// an upload handed over as a temporary file is imported and its file removed, whether the import goes on or
// the file is refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { EventPayload } from '../electron/api/contract.ts';
import { createAppCore, type AppCore } from '../electron/services/app-core.ts';
import { missing, sharedModel } from './helpers/shared.ts';

const model = sharedModel('stories260K.gguf');
const skip = missing(model);
const dir = mkdtempSync(join(tmpdir(), 'folio-docs-service-'));
let core: AppCore;

before(async () => {
  if (skip) return;
  core = await createAppCore({
    dataDir: join(dir, 'library'),
    model,
    models: { discovery: { knownPlaces: false, systemWide: false } },
  });
});
after(async () => {
  await core?.close();
  rmSync(dir, { recursive: true, force: true });
});

function taskDone(taskId: string): Promise<EventPayload<'task.done'>> {
  return new Promise((resolve) => {
    const off = core.bus.subscribe((event, payload) => {
      if (event === 'task.done' && (payload as EventPayload<'task.done'>).taskId === taskId) {
        off();
        resolve(payload as EventPayload<'task.done'>);
      }
    });
  });
}

test('import by path: /dev/zero is refused at once, with no document made', {
  skip: skip || (process.platform === 'win32' && 'POSIX paths'),
}, async () => {
  const count = core.documents.list().length;
  const t0 = performance.now();
  await assert.rejects(
    core.documents.import({ path: '/dev/zero' }),
    (e: { code: string; message: string }) =>
      e.code === 'READ_FAILED' && /cannot import \/dev\/zero: it is a device, not a document/.test(e.message),
  );
  assert.ok(performance.now() - t0 < 1000, `took ${(performance.now() - t0).toFixed(0)} ms`);
  assert.equal(core.documents.list().length, count, 'no document record');
  await assert.rejects(core.documents.import({ path: join(dir, 'nope.txt') }), /there is no such file/);
});

test('importUpload: the temporary file is imported, then removed; a refused one is removed too', { skip }, async () => {
  const tempPath = join(dir, 'upload-1');
  writeFileSync(tempPath, 'Once upon a time, there was a little dog named Max.\n\nMax liked to run in the park.\n');
  const r = await core.documents.importUpload({ fileName: 'C:\\Users\\me\\max.txt', tempPath });
  assert.ok(!existsSync(tempPath), 'the service removed the upload once read');
  const done = await taskDone(r.taskId);
  assert.equal(done.ok, true, done.error ?? '');
  const doc = core.documents.get(r.documentId);
  assert.equal(doc.fileName, 'max.txt');
  assert.equal(doc.title, 'Once upon a time, there was a little dog named Max.');
  assert.match(doc.pageList[0].text, /Max liked to run in the park\./);

  const bad = join(dir, 'upload-2');
  writeFileSync(bad, Buffer.from([0x4d, 0x5a, 0x90, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0xff, 0xff, 0, 0]));
  const count = core.documents.list().length;
  await assert.rejects(
    core.documents.importUpload({ fileName: 'setup.exe', tempPath: bad }),
    (e: { code: string }) => e.code === 'UNSUPPORTED',
  );
  assert.ok(!existsSync(bad), 'a refused upload is removed too');
  assert.equal(core.documents.list().length, count, 'no document record for a refused upload');
});
