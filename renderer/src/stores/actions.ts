// Actions that span stores: the keyboard shortcuts and the desktop's menu commands run the same code.
import type { MenuAction, OpenedDocument } from '../../../electron/api/bridge.ts';
import type { ShortcutAction } from '../lib/shortcuts.ts';
import { createChat, stopAnswer, streamingMessage, useChats } from './chats.ts';
import { openImportDialog } from './documents.ts';
import { registerTask } from './tasks.ts';
import { go, notify, selectDocument, setHelp, setTab, useUi } from './ui.ts';

/** Runs a shortcut's action; false when there was nothing to do (the key then does what it normally does). */
export function runShortcut(action: ShortcutAction): boolean {
  const ui = useUi.getState();
  switch (action) {
    case 'import':
      void openImportDialog();
      return true;
    case 'new-chat':
      if (!ui.documentId) return false;
      void createChat(ui.documentId);
      return true;
    case 'focus-question': {
      if (ui.route !== 'main' || ui.tab !== 'chat') setTab('chat');
      setTimeout(() => document.getElementById('question')?.focus(), 0);
      return true;
    }
    case 'stop': {
      if (ui.helpOpen) return (setHelp(false), true);
      const m = streamingMessage(useChats.getState(), ui.chatId);
      if (!m || !ui.chatId) return false;
      void stopAnswer(ui.chatId);
      return true;
    }
    case 'tab-chat':
      return (setTab('chat'), true);
    case 'tab-document':
      return (setTab('document'), true);
    case 'tab-inspector':
      return (setTab('inspector'), true);
    case 'settings':
      return (go(ui.route === 'settings' ? 'main' : 'settings'), true);
    case 'help':
      return (setHelp(!ui.helpOpen), true);
  }
}

/** A command of the desktop app's menu. */
export function runMenuAction(action: MenuAction): void {
  if (action === 'open-document') void openImportDialog();
  else if (action === 'new-chat') runShortcut('new-chat');
  else if (action === 'settings') go('settings');
  else if (action === 'inspector') setTab('inspector');
}

/** A document the OS asked Folio to open: the main process imported it (or could not). */
export function onDocumentOpened(d: OpenedDocument): void {
  const name = d.path.split(/[\\/]/).pop() ?? d.path;
  if (!d.ok) return void notify(`${name} was not imported: ${d.error.message}`);
  registerTask(d.taskId, 'import', d.documentId, name);
  selectDocument(d.documentId);
}
