import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import type { Settings, SettingsPatch } from '../../../electron/api/contract.ts';
import { ApiError } from '../../../electron/api/contract.ts';
import { createFakeApi, settings } from '../test/fake-api.ts';
import { renderApp } from '../test/render-app.tsx';
import { go } from '../stores/ui.ts';

function settingsApi() {
  let s: Settings = settings({ theme: 'system' });
  const api = createFakeApi({
    'settings.get': () => s,
    'settings.update': (p: SettingsPatch) => {
      s = {
        ...s,
        ...p,
        compression: { ...s.compression, ...p.compression },
        sampling: { ...s.sampling, ...p.sampling },
      } as Settings;
      return s;
    },
  });
  return api;
}

describe('settings', () => {
  it('chooses the languages of scans among English and those added to the library folder, never none', async () => {
    const api = settingsApi();
    api.handlers['documents.ocrLanguages'] = () => ({
      folder: '/library/ocr-languages',
      available: [
        { code: 'eng', name: 'English', shipped: true },
        { code: 'fra', name: 'French', shipped: false },
      ],
    });
    await renderApp(api);
    act(() => go('settings'));
    const box = await screen.findByTestId('ocr-languages');
    expect(box.textContent).toMatch(/put Tesseract models .* in \/library\/ocr-languages/);
    const english = within(box).getByRole('checkbox', { name: 'English (shipped)' }) as HTMLInputElement;
    expect(english.checked).toBe(true);
    expect(english.disabled).toBe(true); // the only one: OCR needs a language
    await userEvent.click(within(box).getByRole('checkbox', { name: 'French' }));
    await waitFor(() => expect(api.callsOf('settings.update')).toEqual([{ ocrLanguages: ['eng', 'fra'] }]));
    await waitFor(() => expect(english.disabled).toBe(false));
  });

  it('switches the theme at once: light and dark, or the system’s', async () => {
    const api = settingsApi();
    await renderApp(api);
    act(() => go('settings'));
    expect(document.documentElement.dataset.theme).toBe('light'); // system, and jsdom's system is light
    await userEvent.click(await screen.findByRole('radio', { name: 'Dark' }));
    await waitFor(() => expect(document.documentElement.dataset.theme).toBe('dark'));
    expect(api.callsOf('settings.update')).toEqual([{ theme: 'dark' }]);
    await userEvent.click(screen.getByRole('radio', { name: 'Light' }));
    await waitFor(() => expect(document.documentElement.dataset.theme).toBe('light'));
    // From the keyboard, as any radio group: the arrow keys move to the next option and choose it.
    await userEvent.keyboard('{ArrowRight}');
    await waitFor(() => expect(document.documentElement.dataset.theme).toBe('dark'));
    expect(document.activeElement).toBe(screen.getByRole('radio', { name: 'Dark' }));
  });

  it('edits compression and sampling, checks the numbers, and saves one patch', async () => {
    const api = settingsApi();
    await renderApp(api);
    act(() => go('settings'));
    const method = await screen.findByRole('combobox', { name: 'Method' });
    // Grouped by scorer: SnapKV's six methods under one heading.
    expect(within(screen.getByRole('group', { name: 'SnapKV' })).getAllByRole('option')).toHaveLength(6);
    await userEvent.selectOptions(method, 'snapkv');
    const budget = screen.getByRole('textbox', { name: 'Budget' });
    await userEvent.clear(budget);
    await userEvent.type(budget, '0.5');
    const kernel = screen.getByRole('textbox', { name: 'Pooling kernel' });
    await userEvent.clear(kernel);
    await userEvent.type(kernel, '8');
    expect(screen.getByText(/become stale/)).toBeTruthy();
    await userEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    expect(screen.getByText('Expected an odd number')).toBeTruthy();
    expect(kernel.getAttribute('aria-invalid')).toBe('true');
    expect(api.callsOf('settings.update')).toEqual([]);
    await userEvent.clear(kernel);
    await userEvent.type(kernel, '9');
    await userEvent.type(screen.getByRole('textbox', { name: 'System prompt' }), 'Be brief.');
    await userEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    await waitFor(() => expect(api.callsOf('settings.update')).toHaveLength(1));
    const patch = api.callsOf('settings.update')[0] as SettingsPatch;
    expect(patch.compression).toEqual({
      method: 'snapkv',
      budget: 0.5,
      alpha: 0.2,
      window: 32,
      kernel: 9,
      positions: 'auto',
    });
    expect(patch.systemPrompt).toBe('Be brief.');
    expect(patch.sampling?.seed).toBeNull();
    expect(await screen.findByText('Saved.')).toBeTruthy();
  });
  it('sets the pyramid steepness β, a whole number from 1, or empty for the engine default', async () => {
    const api = settingsApi();
    await renderApp(api);
    act(() => go('settings'));
    // β is shown for the pyramid methods only.
    expect(screen.queryByRole('textbox', { name: 'Pyramid steepness β' })).toBeNull();
    await userEvent.selectOptions(await screen.findByRole('combobox', { name: 'Method' }), 'ada-pyramidkv');
    const beta = await screen.findByRole('textbox', { name: 'Pyramid steepness β' });
    expect((beta as HTMLInputElement).value).toBe('');
    await userEvent.type(beta, '0');
    await userEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    expect(beta.getAttribute('aria-invalid')).toBe('true');
    expect(api.callsOf('settings.update')).toEqual([]);
    await userEvent.clear(beta);
    await userEvent.type(beta, '12');
    expect(screen.getByText(/become stale/)).toBeTruthy();
    await userEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    await waitFor(() => expect(api.callsOf('settings.update')).toHaveLength(1));
    expect((api.callsOf('settings.update')[0] as SettingsPatch).compression?.beta).toBe(12);
    // Cleared, β goes back to the engine's default rather than keeping 12.
    await userEvent.clear(beta);
    await userEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    await waitFor(() => expect(api.callsOf('settings.update')).toHaveLength(2));
    expect((api.callsOf('settings.update')[1] as SettingsPatch).compression?.beta).toBe(20);
  });

  it('the context is a cap, and the conversation room a whole number from 16, or empty for the default', async () => {
    const api = settingsApi();
    await renderApp(api);
    act(() => go('settings'));
    const cap = await screen.findByRole('textbox', { name: 'Context cap' });
    expect(cap.getAttribute('aria-describedby')).toBe('set-nCtx-msg');
    expect(document.getElementById('set-nCtx-msg')?.textContent).toMatch(
      /a context sized to it, up to the model’s own/,
    );
    const room = screen.getByRole('textbox', { name: 'Conversation room' });
    expect((room as HTMLInputElement).value).toBe('');
    expect(document.getElementById('set-conversationRoom-msg')?.textContent).toMatch(/Empty = 1,024/);
    await userEvent.type(room, '8');
    await userEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    expect(room.getAttribute('aria-invalid')).toBe('true');
    expect(screen.getByText('Expected a whole number from 16 to 1048576')).toBeTruthy();
    expect(api.callsOf('settings.update')).toEqual([]);
    await userEvent.clear(room);
    await userEvent.type(room, '256');
    await userEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    await waitFor(() => expect(api.callsOf('settings.update')).toHaveLength(1));
    expect((api.callsOf('settings.update')[0] as SettingsPatch).conversationRoom).toBe(256);
    // Cleared, it sends null: the default rule again.
    await userEvent.clear(room);
    await userEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    await waitFor(() => expect(api.callsOf('settings.update')).toHaveLength(2));
    expect((api.callsOf('settings.update')[1] as SettingsPatch).conversationRoom).toBeNull();
    expect((room as HTMLInputElement).value).toBe('');
  });

  it('chooses where the engine computes: automatic by default, or a backend by name', async () => {
    const api = settingsApi();
    await renderApp(api);
    act(() => go('settings'));
    const compute = (await screen.findByRole('combobox', { name: 'Compute on' })) as HTMLSelectElement;
    expect(compute.value).toBe('auto');
    expect([...compute.options].map((o) => o.value)).toEqual(['auto', 'cpu', 'cuda', 'vulkan']);
    expect(document.getElementById('set-backend-msg')?.textContent).toMatch(/else a discrete GPU through Vulkan/);
    await userEvent.selectOptions(compute, 'vulkan');
    await userEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    await waitFor(() => expect(api.callsOf('settings.update')).toHaveLength(1));
    expect((api.callsOf('settings.update')[0] as SettingsPatch).backend).toBe('vulkan');
  });

  it('chooses the cache precision: 16-bit by default, 8 or 4 bits, keys and values apart, rotated', async () => {
    const api = settingsApi();
    await renderApp(api);
    act(() => go('settings'));
    const precision = (await screen.findByRole('combobox', { name: 'Cache precision' })) as HTMLSelectElement;
    expect(precision.value).toBe('f16');
    expect([...precision.options].map((o) => o.value)).toEqual(['f16', 'q8_0', 'q8_0/q4_0', 'q4_0', 'f32']);
    const rotate = screen.getByRole('checkbox', { name: /Rotate before quantizing/ }) as HTMLInputElement;
    expect(rotate.disabled).toBe(true); // nothing to rotate in f16
    await userEvent.selectOptions(precision, 'q8_0/q4_0');
    expect(rotate.disabled).toBe(false);
    expect(rotate.checked).toBe(true);
    await userEvent.click(rotate);
    await userEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    await waitFor(() => expect(api.callsOf('settings.update')).toHaveLength(1));
    const patch = api.callsOf('settings.update')[0] as SettingsPatch;
    expect([patch.kvType, patch.kvTypeV, patch.kvRotate]).toEqual(['q8_0', 'q4_0', false]);
  });
});

describe('settings the model cannot take, and the defaults', () => {
  it('a context beyond the model’s is refused by the core: the reason at the field, nothing else lost', async () => {
    const api = settingsApi();
    const update = api.handlers['settings.update']!;
    api.handlers['settings.update'] = (p) => {
      if (p.nCtx && p.nCtx > 1024)
        throw new ApiError('INVALID_SETTING', `settings: nCtx: a context of ${p.nCtx} tokens exceeds …`, {
          field: 'nCtx',
          problems: [
            {
              field: 'nCtx',
              message: `a context of ${p.nCtx} tokens exceeds the model's trained context of 1024: choose 1024 or less`,
            },
          ],
        });
      return update(p);
    };
    await renderApp(api);
    act(() => go('settings'));
    const cap = await screen.findByRole('textbox', { name: 'Context cap' });
    await userEvent.type(cap, '4096');
    await userEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    await waitFor(() => expect(cap.getAttribute('aria-invalid')).toBe('true'));
    expect(document.getElementById('set-nCtx-msg')?.textContent).toBe(
      "a context of 4096 tokens exceeds the model's trained context of 1024: choose 1024 or less",
    );
    expect(screen.getByText('Some values need fixing.')).toBeTruthy();
    expect(document.querySelector('.toast')).toBeNull();
    // A value it can take is saved, with a message.
    await userEvent.clear(cap);
    await userEvent.type(cap, '1024');
    expect(cap.getAttribute('aria-invalid')).toBeNull();
    await userEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    expect(await screen.findByText('Settings saved')).toBeTruthy();
    expect((api.callsOf('settings.update').at(-1) as SettingsPatch).nCtx).toBe(1024);
  });

  it('reset to defaults asks first, then goes through the core and shows the defaults', async () => {
    const api = settingsApi();
    api.handlers['settings.reset'] = () =>
      settings({ theme: 'system', sampling: { ...settings().sampling, temperature: 0.7 } });
    await renderApp(api);
    act(() => go('settings'));
    const temperature = await screen.findByRole('textbox', { name: 'Temperature' });
    expect((temperature as HTMLInputElement).value).toBe('0');
    await userEvent.click(screen.getByRole('button', { name: 'Reset to defaults…' }));
    const dialog = screen.getByRole('dialog', { name: 'Reset every setting to its default?' });
    expect(api.callsOf('settings.reset')).toEqual([]);
    await userEvent.click(within(dialog).getByRole('button', { name: 'Reset to defaults' }));
    await waitFor(() => expect(api.callsOf('settings.reset')).toEqual([{}]));
    await waitFor(() => expect((temperature as HTMLInputElement).value).toBe('0.7'));
    expect(await screen.findByText('Settings are back to their defaults')).toBeTruthy();
  });

  it('shows only the compression settings the chosen method reads', async () => {
    await renderApp(settingsApi());
    act(() => go('settings'));
    const method = await screen.findByRole('combobox', { name: 'Method' });
    expect(screen.getByRole('textbox', { name: 'Safeguard α' })).toBeTruthy();
    await userEvent.selectOptions(method, 'snapkv');
    expect(screen.queryByRole('textbox', { name: 'Safeguard α' })).toBeNull();
    expect(screen.getByRole('textbox', { name: 'Observation window' })).toBeTruthy();
    await userEvent.selectOptions(method, 'streaming');
    expect(screen.queryByRole('textbox', { name: 'Observation window' })).toBeNull();
    expect(screen.queryByRole('textbox', { name: 'Pooling kernel' })).toBeNull();
    expect(screen.getByRole('textbox', { name: 'Budget' })).toBeTruthy();
    await userEvent.selectOptions(method, 'full');
    expect(screen.queryByRole('textbox', { name: 'Budget' })).toBeNull();
  });
});
