// The desktop app opens only what the user chose (electron/shell/grants.ts): the models page and the
// settings offer the native dialogs instead of typed paths, and a download the user declined in the main
// process's confirmation is no error.
import { act, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import { ApiError, type Settings, type SettingsPatch } from '../../../electron/api/contract.ts';
import { createFakeApi, fakeShell, model, settings } from '../test/fake-api.ts';
import { renderApp } from '../test/render-app.tsx';
import { go, useUi } from '../stores/ui.ts';

describe('the desktop app names only files and folders the user chose', () => {
  it('adds a model from the native dialog; there is no typed path', async () => {
    const dialogs: string[] = [];
    const shell = fakeShell({
      openFileDialog: async (kind) => (dialogs.push(kind ?? 'document'), ['/models/qwen.gguf']),
    });
    const api = createFakeApi({ 'models.add': () => model({ id: 'new', name: 'new' }) }, { shell });
    await renderApp(api);
    act(() => go('models'));
    await userEvent.click(await screen.findByRole('button', { name: 'Choose a GGUF file…' }));
    await waitFor(() => expect(api.callsOf('models.add')).toEqual([{ path: '/models/qwen.gguf' }]));
    expect(dialogs).toEqual(['model']);
    expect(screen.queryByRole('textbox', { name: 'Add a GGUF file' })).toBeNull();
  });

  it('adds a model folder from the folder dialog; there is no typed path', async () => {
    let s: Settings = settings({ modelFolders: ['/old'] });
    const dialogs: string[] = [];
    const shell = fakeShell({ openFileDialog: async (kind) => (dialogs.push(kind ?? 'document'), ['/data/models']) });
    const api = createFakeApi(
      {
        'settings.get': () => s,
        'settings.update': (p: SettingsPatch) => (s = { ...s, ...p } as Settings),
      },
      { shell },
    );
    await renderApp(api);
    act(() => go('settings'));
    await userEvent.click(await screen.findByRole('button', { name: 'Choose a folder…' }));
    await waitFor(() => expect(api.callsOf('settings.update')).toEqual([{ modelFolders: ['/old', '/data/models'] }]));
    expect(dialogs).toEqual(['folder']);
    expect(screen.queryByRole('textbox', { name: 'Folder to search for models' })).toBeNull();
  });

  it('a download by URL declined in the confirmation dialog is no error; the address stays to edit', async () => {
    const api = createFakeApi(
      {
        'models.download': () => {
          throw new ApiError('CANCELLED', 'The download was cancelled: nothing was downloaded');
        },
      },
      { shell: fakeShell() },
    );
    await renderApp(api);
    act(() => go('models'));
    const input = await screen.findByRole('textbox', { name: 'From a Hugging Face URL' });
    await userEvent.type(input, 'https://huggingface.co/a/b/resolve/main/m.gguf');
    expect(screen.getByText(/asks before it downloads/)).toBeTruthy();
    await userEvent.click(screen.getAllByRole('button', { name: 'Download' }).at(-1)!);
    await waitFor(() => expect(api.callsOf('models.download')).toHaveLength(1));
    expect(useUi.getState().notices.filter((n) => /download/i.test(n.text))).toEqual([]);
    expect((input as HTMLInputElement).value).toBe('https://huggingface.co/a/b/resolve/main/m.gguf');
  });
});
