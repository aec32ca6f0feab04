import { describe, expect, it } from 'vitest';

import { keyLabel, matchShortcut, SHORTCUTS, type KeyLike } from './shortcuts.ts';

const k = (key: string, o: Partial<KeyLike> = {}): KeyLike => ({
  key,
  ctrlKey: false,
  metaKey: false,
  shiftKey: false,
  altKey: false,
  ...o,
});

describe('keyboard shortcuts', () => {
  it('maps the frequent actions (Ctrl on Linux and Windows)', () => {
    expect(matchShortcut(k('O', { ctrlKey: true, shiftKey: true }), false)).toBe('new-chat');
    expect(matchShortcut(k('L', { ctrlKey: true, shiftKey: true }), false)).toBe('focus-question');
    expect(matchShortcut(k('/'), false)).toBe('focus-question');
    expect(matchShortcut(k('Escape'), false)).toBe('stop');
    expect(matchShortcut(k('!', { code: 'Digit1', ctrlKey: true, shiftKey: true }), false)).toBe('tab-chat');
    expect(matchShortcut(k('@', { code: 'Digit2', ctrlKey: true, shiftKey: true }), false)).toBe('tab-document');
    expect(matchShortcut(k('#', { code: 'Digit3', ctrlKey: true, shiftKey: true }), false)).toBe('tab-inspector');
    expect(matchShortcut(k(',', { ctrlKey: true }), false)).toBe('settings');
    expect(matchShortcut(k('i', { ctrlKey: true }), false)).toBe('tab-inspector');
    expect(matchShortcut(k('/', { ctrlKey: true }), false)).toBe('help');
  });

  it('uses ⌘ on macOS and ignores Ctrl there', () => {
    expect(matchShortcut(k('o', { metaKey: true, shiftKey: true }), true)).toBe('new-chat');
    expect(matchShortcut(k('o', { ctrlKey: true, shiftKey: true }), true)).toBeNull();
    expect(keyLabel('Mod', true)).toBe('⌘');
    expect(keyLabel('Mod', false)).toBe('Ctrl');
  });

  it('never takes typing keys inside a text field, nor Alt combinations', () => {
    expect(matchShortcut(k('/', { inTextField: true }), false)).toBeNull();
    expect(matchShortcut(k('?', { inTextField: true }), false)).toBeNull();
    expect(matchShortcut(k('a'), false)).toBeNull();
    expect(matchShortcut(k('o', { ctrlKey: true, shiftKey: true, altKey: true }), false)).toBeNull();
    // Escape still stops an answer from the question box.
    expect(matchShortcut(k('Escape', { inTextField: true }), false)).toBe('stop');
  });

  it('lists every action for the help overlay', () => {
    expect(new Set(SHORTCUTS.map((s) => s.action)).size).toBe(9);
    for (const s of SHORTCUTS) expect(s.keys.length + (s.desktopKeys?.length ?? 0)).toBeGreaterThan(0);
  });
});
