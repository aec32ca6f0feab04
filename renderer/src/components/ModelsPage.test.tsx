import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import { ApiError, type MemoryEstimate } from '../../../electron/api/contract.ts';
import { createFakeApi, engine, model, settings } from '../test/fake-api.ts';
import { renderApp } from '../test/render-app.tsx';
import { go } from '../stores/ui.ts';

const estimate = (fits: boolean): MemoryEstimate => ({
  weightBytes: 4e9,
  kvBytesFull: 2e9,
  kvBytesCompressed: 4e8,
  workingBytes: 2e8,
  totalBytes: 4.6e9,
  availableBytes: fits ? 16e9 : 2e9,
  fits,
  message: fits ? 'needs 4.6 GiB of 16.0 GiB' : 'needs 4.6 GiB but only 2.0 GiB is free',
});

function modelsApi() {
  return createFakeApi({
    'models.list': () => [
      model({ id: 'm1', name: 'tiny' }),
      model({
        id: 'big',
        name: 'Big 70B',
        parameters: 70e9,
        fileBytes: 40e9,
        quantization: 'Q4_K_M',
        contextLength: 131072,
        source: 'lmstudio',
      }),
      model({
        id: 'bert',
        name: 'bert-base',
        architecture: 'bert',
        supported: false,
        unsupportedReason: 'Folio does not run the bert architecture',
      }),
    ],
    'models.estimate': (p) => estimate(p.modelId !== 'big'),
    'models.select': (p) => engine({ modelId: p.modelId }),
    'models.catalog': () => [
      {
        id: 'qwen',
        name: 'Qwen2.5 0.5B',
        url: 'https://huggingface.co/q/resolve/main/q.gguf',
        fileBytes: 4.9e8,
        sha256: null,
        description: 'Small.',
      },
    ],
    'models.download': () => ({ taskId: 'dl1' }),
    'models.add': () => model({ id: 'new', name: 'new' }),
  });
}

describe('models', () => {
  it('lists models with what matters; unsupported ones greyed with the reason', async () => {
    await renderApp(modelsApi());
    act(() => go('models'));
    const list = await screen.findByRole('heading', { name: 'Models on this computer' });
    const card = list.closest('section')!;
    await waitFor(() => expect(card.querySelectorAll('.model-row')).toHaveLength(3));
    const rows = card.querySelectorAll('.model-row');
    expect(rows[1].textContent).toMatch(/llama · 70.0B parameters · Q4_K_M · 37.3 GiB · 131,072 context · LM Studio/);
    expect(rows[2].className).toMatch(/unsupported/);
    expect(rows[2].getAttribute('aria-disabled')).toBe('true');
    expect(rows[2].textContent).toMatch(/Not supported: Folio does not run the bert architecture/);
  });

  it('shows the memory estimate before loading and refuses clearly when it does not fit', async () => {
    const api = modelsApi();
    await renderApp(api);
    act(() => go('models'));
    await userEvent.click(await screen.findByRole('button', { name: /Big 70B/ }));
    const preview = await screen.findByRole('region', { name: 'Big 70B: memory and loading' });
    await within(preview).findByTestId('estimate');
    expect(within(preview).getByRole('alert').textContent).toMatch(
      /Does not fit: needs 4.6 GiB but only 2.0 GiB is free/,
    );
    expect(
      (within(preview).getByRole('button', { name: 'Load and use this model' }) as HTMLButtonElement).disabled,
    ).toBe(true);
    await userEvent.click(screen.getByRole('button', { name: /^tiny/ }));
    const tiny = await screen.findByRole('region', { name: 'tiny: memory and loading' });
    await within(tiny).findByText(/needs 4.6 GiB of 16.0 GiB/);
    expect(within(tiny).getByText(/4.3 GiB of 14.9 GiB available/)).toBeTruthy();
  });

  it('loads a model that fits, and reports a refusal from the core', async () => {
    const api = modelsApi();
    api.handlers['settings.get'] = () => settings({ modelId: null });
    await renderApp(api);
    act(() => go('models'));
    await userEvent.click(await screen.findByRole('button', { name: /^tiny/ }));
    const load = await screen.findByRole('button', { name: 'Load and use this model' });
    await waitFor(() => expect((load as HTMLButtonElement).disabled).toBe(false));
    api.handlers['models.select'] = () => {
      throw new ApiError('MODEL_TOO_LARGE', 'needs 4.6 GiB but only 2.0 GiB is free');
    };
    await userEvent.click(load);
    expect(
      await screen.findByText('needs 4.6 GiB but only 2.0 GiB is free', { selector: '[role="alert"]' }),
    ).toBeTruthy();
    expect(api.callsOf('models.select')).toEqual([{ modelId: 'm1' }]);
  });

  it('downloads from the catalog or a Hugging Face URL, with progress; adds a file by path', async () => {
    const api = modelsApi();
    await renderApp(api);
    act(() => go('models'));
    await userEvent.click(await screen.findByRole('button', { name: 'Download Qwen2.5 0.5B' }));
    expect(api.callsOf('models.download')).toEqual([{ catalogId: 'qwen' }]);
    act(() =>
      api.emit('task.progress', {
        taskId: 'dl1',
        kind: 'download',
        documentId: null,
        done: 1e8,
        total: 4.9e8,
        etaMs: 30_000,
        message: 'downloading: 20%',
      }),
    );
    expect(
      screen.getAllByRole('progressbar', { name: 'Downloading Qwen2.5 0.5B' })[0].getAttribute('aria-valuetext'),
    ).toMatch(/of 467.3 MiB · 20% · 30 s left/);
    await userEvent.type(
      screen.getByRole('textbox', { name: 'From a Hugging Face URL' }),
      'https://huggingface.co/a/b/resolve/main/m.gguf',
    );
    await userEvent.click(screen.getAllByRole('button', { name: 'Download' }).at(-1)!);
    expect(api.callsOf('models.download')[1]).toEqual({ url: 'https://huggingface.co/a/b/resolve/main/m.gguf' });
    await userEvent.type(screen.getByRole('textbox', { name: 'Add a GGUF file' }), '/data/m.gguf');
    await userEvent.click(screen.getByRole('button', { name: 'Add' }));
    expect(api.callsOf('models.add')).toEqual([{ path: '/data/m.gguf' }]);
  });
});
