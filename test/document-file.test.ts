// A document's stored original (issue 18): kept by content (document-files.ts), served to the renderer by
// the web host's GET /api/documents/:id/file and by the desktop app's own protocol under the same path.
// Both read only the file the app core names for a stored document's id: no token, another site, an
// unknown id or a path that tries to name a file are refused, and nothing else is ever read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { documentFileRoute, parseDocumentFileRoute, type DocumentFilePart } from '../electron/api/contract.ts';
import { Dispatcher, EventBus, type Handlers } from '../electron/api/dispatcher.ts';
import { DocumentFiles, sha256Hex } from '../electron/services/document-files.ts';
import { createAppProtocolHandler, type StoredDocumentFile } from '../electron/shell/app-protocol.ts';
import { startWebHost, type WebHost } from '../electron/web/server.ts';

const dir = mkdtempSync(join(tmpdir(), 'folio-document-file-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

const apiToken = 'file-token-0123456789abcdef';
const files = new DocumentFiles(join(dir, 'documents'));
const pdfBytes = new TextEncoder().encode('%PDF-1.7\nnot really a pdf, but bytes to serve\n%%EOF\n');
const sha = await files.put(pdfBytes);
// A file beside the store that no document names: it must never be served.
const secret = join(dir, 'secret.txt');
writeFileSync(secret, 'not yours');

/** The app core's answer: only document "doc-1" has a stored original, and no HTML. */
const documentFile = (id: string, part: DocumentFilePart): StoredDocumentFile | null => {
  const path = id === 'doc-1' && part === 'file' ? files.path(sha) : null;
  return path ? { path, type: 'application/pdf' } : null;
};

async function withHost(fn: (host: WebHost, own: string) => Promise<void>) {
  const host = await startWebHost({
    dispatcher: new Dispatcher({} as Handlers, new EventBus()),
    apiToken,
    documentFile,
  });
  try {
    await fn(host, `http://127.0.0.1:${host.port}`);
  } finally {
    await host.close();
  }
}

test('the store keeps a file once by its sha256 and names nothing but sha256s', async () => {
  assert.equal(sha, sha256Hex(pdfBytes));
  assert.equal(await files.put(pdfBytes), sha, 'the same bytes again: the same name');
  assert.deepEqual(
    readdirSync(join(dir, 'documents')).filter((f) => !f.startsWith('.')),
    [sha],
    'one file, no leftovers',
  );
  assert.ok(files.path(sha));
  for (const bad of [null, '', '../secret.txt', `${sha}/..`, sha.toUpperCase(), 'a'.repeat(64)])
    assert.equal(files.path(bad), null, String(bad));
  files.remove('../secret.txt');
  assert.ok(existsSync(secret), 'remove ignores what is not a sha256');
});

test('the startup sweep removes files no document uses and stale half-writes, and nothing else', async () => {
  const store = new DocumentFiles(join(dir, 'sweep'));
  const kept = await store.put(new TextEncoder().encode('kept'));
  store.putDerived(kept, 'html', '<p>kept</p>');
  const orphan = await store.put(new TextEncoder().encode('orphan'));
  store.putDerived(orphan, 'html', '<p>orphan</p>');
  const oldPart = join(dir, 'sweep', `.${orphan}.aaaaaa.part`);
  const newPart = join(dir, 'sweep', `.${orphan}.bbbbbb.part`);
  writeFileSync(oldPart, 'x');
  writeFileSync(newPart, 'x');
  utimesSync(oldPart, new Date(Date.now() - 2 * 3600_000), new Date(Date.now() - 2 * 3600_000));
  writeFileSync(join(dir, 'sweep', 'notes.txt'), 'not ours to judge');
  const removed = store.sweep(new Set([kept]));
  assert.deepEqual(removed.sort(), [`.${orphan}.aaaaaa.part`, orphan, `${orphan}.html`].sort());
  assert.ok(store.path(kept) && store.derivedPath(kept, 'html'));
  assert.ok(existsSync(newPart), 'a write that may be under way is left alone');
  assert.ok(existsSync(join(dir, 'sweep', 'notes.txt')));
});

test('the route names a document by id and one of its parts, and nothing else', () => {
  assert.equal(documentFileRoute('doc-1'), '/api/documents/doc-1/file');
  assert.equal(documentFileRoute('doc-1', 'html'), '/api/documents/doc-1/html');
  assert.deepEqual(parseDocumentFileRoute(documentFileRoute('a b/c')), { documentId: 'a b/c', part: 'file' });
  assert.deepEqual(parseDocumentFileRoute(documentFileRoute('d', 'html')), { documentId: 'd', part: 'html' });
  for (const p of [
    '/api/documents//file',
    '/api/documents/x/file/',
    '/api/documents/x/y/file',
    '/api/documents/%E0/file',
    '/api/documents/x/secret',
  ])
    assert.equal(parseDocumentFileRoute(p), null, p);
});

test('web host: the app page and token holders get the file; no token, another site or an unknown id are refused', async () => {
  await withHost(async (host, own) => {
    const url = host.url + documentFileRoute('doc-1');
    // The app's page holds the session cookie the token link set.
    const cookie = ((await fetch(host.signInUrl, { redirect: 'manual' })).headers.get('set-cookie') ?? '').split(
      ';',
    )[0];
    const fromPage = await fetch(url, { headers: { origin: own, cookie } });
    assert.equal(fromPage.status, 200);
    assert.equal(fromPage.headers.get('content-type'), 'application/pdf');
    assert.deepEqual(new Uint8Array(await fromPage.arrayBuffer()), pdfBytes);
    const sameOrigin = await fetch(url, { headers: { 'sec-fetch-site': 'same-origin', cookie } });
    assert.equal(sameOrigin.status, 200);
    await sameOrigin.arrayBuffer();
    const program = await fetch(url, { headers: { authorization: `Bearer ${apiToken}` } });
    assert.equal(program.status, 200);
    await program.arrayBuffer();
    const head = await fetch(url, { method: 'HEAD', headers: { origin: own, cookie } });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String(pdfBytes.length));

    const noToken = await fetch(url);
    assert.equal(noToken.status, 401, 'a program (or a no-cors page) without the token');
    for (const headers of [{ origin: own }, { 'sec-fetch-site': 'same-origin' }] as Record<string, string>[])
      assert.equal((await fetch(url, { headers })).status, 401, 'headers a program can send are no session');
    const wrongToken = await fetch(url, { headers: { authorization: 'Bearer nope' } });
    assert.equal(wrongToken.status, 401);
    const foreign = await fetch(url, { headers: { origin: 'https://evil.example' } });
    assert.equal(foreign.status, 403, 'another site');
    const otherPort = await fetch(url, { headers: { origin: 'http://127.0.0.1:1' } });
    assert.equal(otherPort.status, 403, 'another localhost port');

    const auth = { authorization: `Bearer ${apiToken}` };
    for (const path of [
      documentFileRoute('doc-2'),
      documentFileRoute('../../secret.txt'),
      `/api/documents/${encodeURIComponent(secret)}/file`,
      `/api/documents/${sha}/file`,
      '/api/documents/doc-1/file/..',
      documentFileRoute('doc-1', 'html'),
    ]) {
      const r = await fetch(host.url + path, { headers: auth });
      assert.equal(r.status, 404, path);
      assert.doesNotMatch(await r.text(), /not yours|%PDF/, path);
    }
    const post = await fetch(url, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' } });
    assert.equal(post.status, 405);
  });
});

test('app protocol: the same path serves the stored file; an unknown id or any other path under /api is 404', async () => {
  const renderer = join(dir, 'renderer');
  const handle = createAppProtocolHandler(renderer, documentFile);
  const ok = await handle(new Request('app://folio' + documentFileRoute('doc-1')));
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get('content-type'), 'application/pdf');
  assert.ok(ok.headers.get('content-security-policy'), 'the security headers come with it');
  assert.deepEqual(new Uint8Array(await ok.arrayBuffer()), pdfBytes);
  for (const path of [
    documentFileRoute('doc-2'),
    documentFileRoute('../../secret.txt'),
    `/api/documents/${encodeURIComponent(secret)}/file`,
    '/api/documents/doc-1',
  ]) {
    const r = await handle(new Request('app://folio' + path));
    assert.equal(r.status, 404, path);
    assert.doesNotMatch(await r.text(), /not yours|%PDF/, path);
  }
  const notReady = createAppProtocolHandler(renderer);
  assert.equal((await notReady(new Request('app://folio' + documentFileRoute('doc-1')))).status, 404);
});
