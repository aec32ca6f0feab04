// Keyboard shortcuts for the frequent actions. The table drives both the handler and the help overlay.
// Modifier combinations only (except Escape and "/" outside text fields), so screen-reader and typing
// keys are never taken.

export type ShortcutAction =
  | 'import'
  | 'new-chat'
  | 'focus-question'
  | 'stop'
  | 'tab-chat'
  | 'tab-document'
  | 'tab-inspector'
  | 'settings'
  | 'help';

export interface Shortcut {
  action: ShortcutAction;
  /** Shown in the help overlay, each a combination that works; "Mod" is Ctrl, or ⌘ on macOS. */
  keys: string[][];
  /** More combinations the desktop app's menu adds (electron/shell/menu.ts ACCELERATORS). */
  desktopKeys?: string[][];
  label: string;
}

export const SHORTCUTS: Shortcut[] = [
  { action: 'import', keys: [], desktopKeys: [['Mod', 'O']], label: 'Import a document' },
  {
    action: 'new-chat',
    keys: [['Mod', 'Shift', 'O']],
    desktopKeys: [['Mod', 'N']],
    label: 'New chat over the selected document',
  },
  { action: 'focus-question', keys: [['/'], ['Mod', 'Shift', 'L']], label: 'Focus the question box' },
  { action: 'stop', keys: [['Esc']], label: 'Stop the answer being written' },
  { action: 'tab-chat', keys: [['Mod', 'Shift', '1']], label: 'Open the chat' },
  { action: 'tab-document', keys: [['Mod', 'Shift', '2']], label: 'Open the document view' },
  {
    action: 'tab-inspector',
    keys: [
      ['Mod', 'I'],
      ['Mod', 'Shift', '3'],
    ],
    label: 'Open the inspector',
  },
  { action: 'settings', keys: [['Mod', ',']], label: 'Models and settings' },
  { action: 'help', keys: [['Mod', '/'], ['?']], label: 'Show these shortcuts' },
];

export interface KeyLike {
  key: string;
  code?: string;
  ctrlKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
  altKey: boolean;
  /** The focused element is a text field (typing must not trigger single-key shortcuts). */
  inTextField?: boolean;
}

export function isMac(platform = typeof navigator !== 'undefined' ? navigator.platform : ''): boolean {
  return /Mac|iPhone|iPad/.test(platform);
}

/** The action a key press asks for, or null. */
export function matchShortcut(e: KeyLike, mac = isMac()): ShortcutAction | null {
  const mod = mac ? e.metaKey && !e.ctrlKey : e.ctrlKey && !e.metaKey;
  const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
  if (e.altKey) return null;
  if (mod && e.shiftKey) {
    if (key === 'o') return 'new-chat';
    if (key === 'l') return 'focus-question';
    // Shift changes the key ("!" for 1): the physical key decides.
    if (e.code === 'Digit1' || key === '1') return 'tab-chat';
    if (e.code === 'Digit2' || key === '2') return 'tab-document';
    if (e.code === 'Digit3' || key === '3') return 'tab-inspector';
    return null;
  }
  if (mod && !e.shiftKey) {
    if (key === ',') return 'settings';
    if (key === 'i') return 'tab-inspector';
    if (key === '/') return 'help';
    return null;
  }
  if (!mod && !e.ctrlKey && !e.metaKey) {
    if (key === 'Escape' && !e.shiftKey) return 'stop';
    if (key === '/' && !e.inTextField) return 'focus-question';
    if (key === '?' && !e.inTextField) return 'help';
  }
  return null;
}

export function keyLabel(k: string, mac = isMac()): string {
  if (k === 'Mod') return mac ? '⌘' : 'Ctrl';
  return k;
}
