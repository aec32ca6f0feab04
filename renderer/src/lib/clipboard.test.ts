import { afterEach, describe, expect, it, vi } from 'vitest';

import { copyText } from './clipboard.ts';

/** Puts an execCommand on the document (jsdom's copies nothing) that records the selected textarea's text. */
function fakeExecCommand(result: boolean) {
  const copied: string[] = [];
  const exec = vi.fn((command: string) => {
    const area = document.querySelector('textarea');
    if (command === 'copy' && area) copied.push(area.value.slice(area.selectionStart, area.selectionEnd));
    return result;
  });
  Object.defineProperty(document, 'execCommand', { configurable: true, value: exec });
  return { exec, copied };
}

describe('copyText', () => {
  afterEach(() => {
    delete (document as { execCommand?: unknown }).execCommand;
  });

  it('writes through the Clipboard API when there is one', async () => {
    const { exec } = fakeExecCommand(true);
    expect(await copyText('hello')).toBe(true);
    expect(navigator.clipboard.writeText).toHaveBeenCalledWith('hello');
    expect(exec).not.toHaveBeenCalled();
  });

  it('without the Clipboard API (plain http), copies a selected textarea and leaves nothing behind', async () => {
    Object.defineProperty(navigator, 'clipboard', { configurable: true, value: undefined });
    const { copied } = fakeExecCommand(true);
    expect(await copyText('from http')).toBe(true);
    expect(copied).toEqual(['from http']);
    expect(document.querySelector('textarea')).toBeNull();
  });

  it('reports failure when neither route copies', async () => {
    vi.mocked(navigator.clipboard.writeText).mockRejectedValueOnce(new DOMException('denied', 'NotAllowedError'));
    fakeExecCommand(false);
    expect(await copyText('nope')).toBe(false);
    expect(document.querySelector('textarea')).toBeNull();
  });
});
