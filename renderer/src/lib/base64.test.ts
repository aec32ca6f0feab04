import { describe, expect, it } from 'vitest';

import { bytesToBase64, fileToBase64 } from './base64.ts';

describe('uploads', () => {
  it('encodes bytes as base64, also past the argument-count limit', async () => {
    expect(bytesToBase64(new TextEncoder().encode('Folio ✓'))).toBe(btoa(unescape(encodeURIComponent('Folio ✓'))));
    const big = new Uint8Array(100_000).map((_, i) => i % 251);
    const decoded = Uint8Array.from(atob(bytesToBase64(big)), (c) => c.charCodeAt(0));
    expect(decoded).toEqual(big);
    expect(await fileToBase64(new Blob(['hello']))).toBe('aGVsbG8=');
  });
});
