// The web host's event loop keeps answering while large documents come in (issue 38 item 6): a 200 MB upload
// is hashed as it is read and moved into the library, not hashed, copied and written in one stretch; a
// 1,938-page Markdown file's pages, tokens and character map are stored by the storage writer's thread; and
// the uploads a dead server left behind are removed when the next one starts. The client that uploads runs
// in a process of its own, so what is measured is the server's loop alone.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { EventPayload } from '../electron/api/contract.ts';
import type { AppCore } from '../electron/services/app-core.ts';
import { dataPaths } from '../electron/services/paths.ts';
import { prepareUploadDir } from '../electron/web/upload.ts';
import { startWebHost, type WebHost } from '../electron/web/server.ts';
import { missing, sharedModel } from './helpers/shared.ts';
import { testCore } from './helpers/test-core.ts';

const model = sharedModel('stories260K.gguf');
const skip = missing(model);
const token = 'event-loop-token-0123456789';
let dir: string;
let core: AppCore;
let host: WebHost;

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'folio-event-loop-'));
  core = await testCore(join(dir, 'library'), model);
  host = await startWebHost({
    dispatcher: core.dispatcher,
    apiToken: token,
    uploads: {
      dir: dataPaths(join(dir, 'library')).tmp,
      maxBytes: 256 * 2 ** 20,
      importUpload: (fileName, tempPath, o) =>
        core.documents.imports.importUpload({ fileName, tempPath, keepDuplicate: o.keepDuplicate }),
    },
  });
});
after(async () => {
  await host?.close();
  await core?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Uploads `file` from a child process; resolves with the answer's body. */
function uploadFromChild(file: string, name: string): Promise<string> {
  const script = `
    const { openAsBlob } = require('node:fs');
    openAsBlob(process.argv[1]).then((body) => fetch(process.argv[2], { method: 'POST', body, duplex: 'half',
      headers: { 'content-type': 'application/octet-stream', 'x-folio-file-name': process.argv[3],
                 authorization: 'Bearer ' + process.argv[4] } }))
      .then((r) => r.text()).then((t) => process.stdout.write(t), (e) => { console.error(e); process.exit(1); });`;
  return new Promise((ok, fail) => {
    const c = spawn(process.execPath, ['-e', script, file, `${host.url}/api/upload`, name, token], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    c.on('close', (code) => (code === 0 ? ok(out) : fail(new Error(`the uploading process ended with ${code}`))));
  });
}

/**
 * Watches the event loop until `until` settles: a timer every 10 ms, and how late it fired at worst (ms);
 * /api/health, answered on this loop, waits as long. Also polls /api/health, so the server answers meanwhile.
 */
async function worstStall(until: Promise<unknown>): Promise<number> {
  let done = false;
  void until.finally(() => (done = true));
  let worst = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 10);
    last = now;
  }, 10);
  while (!done) {
    await (await fetch(`${host.url}/api/health`)).arrayBuffer();
    await new Promise((ok) => setTimeout(ok, 25));
  }
  clearInterval(timer);
  return worst;
}

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

test('/api/health answers within 200 ms while a 200 MB upload is received, hashed and stored', { skip }, async () => {
  // A 200 MB file with a PDF's header: received, hashed, kept as the original; its parse then fails.
  const file = join(dir, 'big.pdf');
  const bytes = Buffer.alloc(200 * 2 ** 20);
  bytes.write('%PDF-1.7\n');
  for (let i = 16; i < bytes.length; i += 4096) bytes[i] = i & 0xff;
  writeFileSync(file, bytes);
  const upload = uploadFromChild(file, 'big.pdf');
  const stall = await worstStall(upload);
  const { result } = JSON.parse(await upload) as { result: { documentId: string; taskId: string } };
  console.log(`200 MB upload: the event loop stalled ${stall.toFixed(0)} ms at worst`);
  assert.ok(stall < 200, `the event loop stalled ${stall.toFixed(0)} ms: /api/health waited as long`);
  const done = await taskDone(result.taskId);
  // The upload's temporary file became the original (moved, not copied): nothing is left in tmp. The parse
  // then failed on the file itself (too large to read as a PDF), so the original is let go as well: reading it again
  // cannot help (issue 40).
  assert.deepEqual(readdirSync(dataPaths(join(dir, 'library')).tmp), []);
  assert.equal(done.ok, false);
  assert.equal(core.documents.library.get(result.documentId).errorCode, 'TOO_LARGE');
  assert.equal(core.documents.library.file(result.documentId, 'file'), null, 'a damaged file is not kept');
});

test("a 1,938-page Markdown file's pages and tokens are stored without holding the loop", { skip }, async () => {
  const page = (i: number) =>
    `## Section ${i}\n\n${`Sentence ${i} of the long manual, with words to read. `.repeat(45)}\n\n`;
  let text = '';
  for (let i = 0; i < 1938; i++) text += page(i);
  const file = join(dir, 'manual.md');
  writeFileSync(file, text);
  const { result } = JSON.parse(await uploadFromChild(file, 'manual.md')) as {
    result: { documentId: string; taskId: string };
  };
  // Until the read starts: parsed, pages stored, tokenized, mapped to pages, the read's tokens stored.
  const reading = new Promise<void>((resolve) => {
    const off = core.bus.subscribe((event, payload) => {
      const d = payload as { id?: string; status?: string };
      if (event === 'documents.changed' && d.id === result.documentId && d.status === 'compressing') {
        off();
        resolve();
      }
    });
  });
  // The read's tokens are written meanwhile, on the writer's thread.
  const worst = await worstStall(reading.then(() => new Promise((ok) => setTimeout(ok, 300))));
  console.log(`1,938-page Markdown: the event loop stalled ${worst.toFixed(0)} ms at worst`);
  assert.equal(core.storage.documents.pages(result.documentId).length, 1938);
  assert.ok(worst < 200, `the event loop stalled for ${worst.toFixed(0)} ms`);
  core.dispatcher.dispatch('tasks.cancel', { taskId: result.taskId }).catch(() => {});
  await taskDone(result.taskId);
});

test('uploads a dead server left behind are removed when a host starts; a live one keeps its own', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'folio-uploads-'));
  try {
    mkdirSync(tmp, { recursive: true });
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const deadFile = join(tmp, `upload-${dead.stdout}-00aa.part`);
    const liveFile = join(tmp, `upload-${process.ppid}-00bb.part`);
    const ownFile = join(tmp, `upload-${process.pid}-00cc.part`);
    for (const f of [deadFile, liveFile, ownFile]) writeFileSync(f, 'partial upload');
    prepareUploadDir(tmp);
    assert.equal(existsSync(deadFile), false, "the dead process's upload is gone");
    assert.equal(existsSync(liveFile), true, 'a live process keeps its upload');
    assert.equal(existsSync(ownFile), true);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
