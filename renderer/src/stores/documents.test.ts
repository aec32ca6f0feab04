import { afterEach, describe, expect, it, vi } from 'vitest';

import { ApiError } from '../../../electron/api/contract.ts';
import { setApi } from '../api/client.ts';
import { createFakeApi, doc, fakeShell } from '../test/fake-api.ts';
import { deleteDocument, importFiles, loadDocuments, upsertDocument, useDocuments } from './documents.ts';
import { useTasks } from './tasks.ts';
import { useUi } from './ui.ts';

describe('the library', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('lists documents newest first and selects one', async () => {
    setApi(
      createFakeApi({
        'documents.list': () => [
          doc({ id: 'a', createdAt: '2026-01-01T00:00:00Z' }),
          doc({ id: 'b', createdAt: '2026-02-01T00:00:00Z' }),
        ],
      }),
    );
    await loadDocuments();
    expect(useDocuments.getState().order).toEqual(['b', 'a']);
    expect(useUi.getState().documentId).toBe('b');
    upsertDocument(doc({ id: 'a', status: 'stale', createdAt: '2026-01-01T00:00:00Z' }));
    expect(useDocuments.getState().byId.a.status).toBe('stale');
  });

  it("a document read again drops the old answer's highlights on it, not another document's", () => {
    const citation = { documentId: 'a', page: 1, ranges: [{ start: 0, end: 5, share: 1 }] };
    useUi.setState({ citation });
    upsertDocument(doc({ id: 'b', status: 'compressing' }));
    expect(useUi.getState().citation).toBe(citation);
    upsertDocument(doc({ id: 'a', status: 'compressing' }));
    expect(useUi.getState().citation).toBeNull();
  });

  it('uploads a picked file to the web host as raw bytes in the browser', async () => {
    const api = createFakeApi({ 'documents.import': () => ({ documentId: 'd0', taskId: 't0' }) });
    setApi(api);
    const sent: { url: string; init: RequestInit }[] = [];
    vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
      sent.push({ url, init });
      return new Response(JSON.stringify({ result: { documentId: 'd9', taskId: 't9' } }), { status: 200 });
    });
    const file = new File(['Once upon a time'], 'my story #1.txt', { type: 'text/plain' });
    await importFiles([file]);
    expect(api.callsOf('documents.import')).toEqual([]);
    expect(sent).toHaveLength(1);
    expect(sent[0].url).toBe('/api/upload');
    expect(sent[0].init.method).toBe('POST');
    expect(sent[0].init.body).toBe(file);
    expect(sent[0].init.headers).toEqual({
      'content-type': 'application/octet-stream',
      'x-folio-file-name': 'my%20story%20%231.txt',
    });
    expect(useTasks.getState().byId.t9).toMatchObject({ kind: 'import', documentId: 'd9', label: 'my story #1.txt' });
    expect(useUi.getState().documentId).toBe('d9');
  });

  it('says why an upload was refused', async () => {
    setApi(createFakeApi());
    vi.stubGlobal(
      'fetch',
      async () =>
        new Response(
          JSON.stringify({ error: { code: 'TOO_LARGE', message: 'big.pdf is larger than the limit of 256 MiB' } }),
          { status: 413 },
        ),
    );
    await importFiles([new File(['x'], 'big.pdf')]);
    expect(useUi.getState().notices.at(-1)?.text).toBe(
      'big.pdf was not imported: big.pdf is larger than the limit of 256 MiB',
    );
  });

  it('imports by path when the desktop shell can tell a file’s path', async () => {
    const api = createFakeApi(
      { 'documents.import': () => ({ documentId: 'd9', taskId: 't9' }) },
      { shell: fakeShell({ pathForFile: async (f: File) => `/home/me/${f.name}` }) },
    );
    setApi(api);
    await importFiles([new File(['x'], 'paper.pdf')]);
    expect(api.callsOf('documents.import')).toEqual([{ path: '/home/me/paper.pdf' }]);
  });

  it('explains that a model is needed first', async () => {
    setApi(createFakeApi());
    vi.stubGlobal(
      'fetch',
      async () =>
        new Response(JSON.stringify({ error: new ApiError('NO_MODEL', 'choose a model first').toJSON() }), {
          status: 422,
        }),
    );
    await importFiles([new File(['x'], 'a.txt')]);
    const n = useUi.getState().notices[0];
    expect(n.text).toMatch(/Choose a model first/);
    expect(n.action).toEqual({ label: 'Models', route: 'models' });
  });

  it('deleting removes the document and moves the selection', async () => {
    const api = createFakeApi({
      'documents.list': () => [
        doc({ id: 'a', createdAt: '2026-01-01T00:00:00Z' }),
        doc({ id: 'b', createdAt: '2026-02-01T00:00:00Z' }),
      ],
      'documents.delete': () => ({ ok: true }),
    });
    setApi(api);
    await loadDocuments();
    await deleteDocument('b');
    expect(api.callsOf('documents.delete')).toEqual([{ documentId: 'b' }]);
    expect(useDocuments.getState().order).toEqual(['a']);
    expect(useUi.getState().documentId).toBe('a');
  });
});
