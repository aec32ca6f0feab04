import { describe, expect, it } from 'vitest';

import { ApiError } from '../../../electron/api/contract.ts';
import { setApi } from '../api/client.ts';
import { createFakeApi, doc, fakeShell } from '../test/fake-api.ts';
import { deleteDocument, importFiles, loadDocuments, upsertDocument, useDocuments } from './documents.ts';
import { useTasks } from './tasks.ts';
import { useUi } from './ui.ts';

describe('the library', () => {
  it('lists documents newest first and selects one', async () => {
    setApi(createFakeApi({ 'documents.list': () => [doc({ id: 'a', createdAt: '2026-01-01T00:00:00Z' }), doc({ id: 'b', createdAt: '2026-02-01T00:00:00Z' })] }));
    await loadDocuments();
    expect(useDocuments.getState().order).toEqual(['b', 'a']);
    expect(useUi.getState().documentId).toBe('b');
    upsertDocument(doc({ id: 'a', status: 'stale', createdAt: '2026-01-01T00:00:00Z' }));
    expect(useDocuments.getState().byId.a.status).toBe('stale');
  });

  it('uploads a picked file as base64 in the browser', async () => {
    const api = createFakeApi({ 'documents.import': () => ({ documentId: 'd9', taskId: 't9' }) });
    setApi(api);
    await importFiles([new File(['Once upon a time'], 'story.txt', { type: 'text/plain' })]);
    expect(api.callsOf('documents.import')).toEqual([{ fileName: 'story.txt', dataBase64: btoa('Once upon a time') }]);
    expect(useTasks.getState().byId.t9).toMatchObject({ kind: 'import', documentId: 'd9', label: 'story.txt' });
    expect(useUi.getState().documentId).toBe('d9');
  });

  it('imports by path when the desktop shell can tell a file’s path', async () => {
    const api = createFakeApi({ 'documents.import': () => ({ documentId: 'd9', taskId: 't9' }) }, { shell: fakeShell({ pathForFile: (f: File) => `/home/me/${f.name}` }) });
    setApi(api);
    await importFiles([new File(['x'], 'paper.pdf')]);
    expect(api.callsOf('documents.import')).toEqual([{ path: '/home/me/paper.pdf' }]);
  });

  it('explains that a model is needed first', async () => {
    setApi(createFakeApi({ 'documents.import': () => { throw new ApiError('NO_MODEL', 'choose a model first'); } }));
    await importFiles([new File(['x'], 'a.txt')]);
    const n = useUi.getState().notices[0];
    expect(n.text).toMatch(/Choose a model first/);
    expect(n.action).toEqual({ label: 'Models', route: 'models' });
  });

  it('deleting removes the document and moves the selection', async () => {
    const api = createFakeApi({ 'documents.list': () => [doc({ id: 'a', createdAt: '2026-01-01T00:00:00Z' }), doc({ id: 'b', createdAt: '2026-02-01T00:00:00Z' })], 'documents.delete': () => ({ ok: true }) });
    setApi(api);
    await loadDocuments();
    await deleteDocument('b');
    expect(api.callsOf('documents.delete')).toEqual([{ documentId: 'b' }]);
    expect(useDocuments.getState().order).toEqual(['a']);
    expect(useUi.getState().documentId).toBe('a');
  });
});
