// Where the user is: the page, the selected document and chat, the main pane's tab, the page shown in
// the document view, overlays, and notices (errors and confirmations for people).
import { create } from 'zustand';
import type { Citation } from '../lib/retention-overlay.ts';

export type Tab = 'chat' | 'document' | 'inspector';
export type Route = 'main' | 'models' | 'settings';

/** error: something failed, with the reason; success: a finished action; info: anything else worth a word. */
export type NoticeKind = 'error' | 'info' | 'success';

/** How long a notice stays before it goes by itself: an error longer, as it has a reason to read. Every one
 * has a close button too. */
export const NOTICE_MS: Record<NoticeKind, number> = { success: 4000, info: 6000, error: 15000 };

export interface Notice {
  id: number;
  kind: NoticeKind;
  text: string;
  action?: { label: string; route: Route };
}

export interface ConfirmRequest {
  title: string;
  body: string;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => void;
}

/** The sidebar: shown or hidden by its toggle, or 'auto' (shown, but hidden on its own in a narrow window). */
export type SidebarMode = 'auto' | 'shown' | 'hidden';

export interface UiState {
  route: Route;
  sidebar: SidebarMode;
  tab: Tab;
  documentId: string | null;
  chatId: string | null;
  /** The page the document view shows (1-based). */
  docPage: number;
  /** The cited sentences the document view highlights, set by an answer's page chip. */
  citation: Citation | null;
  helpOpen: boolean;
  confirm: ConfirmRequest | null;
  notices: Notice[];
}

const initial: UiState = {
  route: 'main',
  sidebar: 'auto',
  tab: 'chat',
  documentId: null,
  chatId: null,
  docPage: 1,
  citation: null,
  helpOpen: false,
  confirm: null,
  notices: [],
};

// Where the user was (the document, the chat, the tab) survives a reload and a restart: a reload used to open
// the most recently added document, not the chat the user was in. Kept in the page's storage (per origin: the
// desktop's app:// page, or the web host's), checked against the library when it loads (loadDocuments, the
// sidebar's chat list).
const PLACE_KEY = 'folio.place';
type Place = Pick<UiState, 'documentId' | 'chatId' | 'tab'>;

function storedPlace(): Partial<Place> {
  try {
    const p = JSON.parse(globalThis.localStorage?.getItem(PLACE_KEY) ?? 'null') as Partial<Place> | null;
    if (!p || typeof p !== 'object') return {};
    const id = (v: unknown) => (typeof v === 'string' && v.length > 0 && v.length <= 64 ? v : null);
    const tab = p.tab === 'chat' || p.tab === 'document' || p.tab === 'inspector' ? p.tab : 'chat';
    return { documentId: id(p.documentId), chatId: id(p.chatId), tab };
  } catch {
    return {}; // no storage (a sandbox), or something else's text under the key
  }
}

export const useUi = create<UiState>()(() => ({ ...initial, ...storedPlace() }));

useUi.subscribe((s, before) => {
  if (s.documentId === before.documentId && s.chatId === before.chatId && s.tab === before.tab) return;
  try {
    globalThis.localStorage?.setItem(
      PLACE_KEY,
      JSON.stringify({ documentId: s.documentId, chatId: s.chatId, tab: s.tab } satisfies Place),
    );
  } catch {
    // storage full or denied: the place is not remembered, nothing else changes
  }
});

export function resetUi(): void {
  globalThis.localStorage?.removeItem(PLACE_KEY);
  useUi.setState({ ...initial }, true);
}

export function go(route: Route): void {
  useUi.setState({ route });
}

export function setTab(tab: Tab): void {
  useUi.setState({ tab, route: 'main' });
}

export function selectDocument(documentId: string | null): void {
  const s = useUi.getState();
  if (s.documentId === documentId) {
    useUi.setState({ route: 'main' });
    return;
  }
  useUi.setState({ documentId, chatId: null, docPage: 1, route: 'main' });
}

export function selectChat(chatId: string | null): void {
  useUi.setState({ chatId, route: 'main', tab: 'chat' });
}

/** Opens the document view at a page (page references in answers link here). */
export function openPage(page: number): void {
  useUi.setState({ docPage: Math.max(1, Math.floor(page)), citation: null, tab: 'document', route: 'main' });
}

/** Opens the document view at a cited page with the sentences the answer looked at highlighted: in a chat over
 * a set, the page's document, the chat staying open (it is one of that document's chats too). */
export function openCitation(citation: Citation): void {
  useUi.setState({
    citation,
    documentId: citation.documentId,
    docPage: Math.max(1, Math.floor(citation.page)),
    tab: 'document',
    route: 'main',
  });
}

/** Shows another document of the open chat's set, the chat staying open. */
export function showChatDocument(documentId: string): void {
  const s = useUi.getState();
  if (s.documentId !== documentId) useUi.setState({ documentId, docPage: 1, citation: null, route: 'main' });
}

export function clearCitation(): void {
  useUi.setState({ citation: null });
}

export function setDocPage(page: number): void {
  useUi.setState({ docPage: Math.max(1, Math.floor(page)) });
}

/** The toggle: hides the sidebar when it is on screen, shows it when it is not (in a wide window by going
 * back to 'auto', so that it hides again on its own once the window is narrow). */
export function toggleSidebar(visibleNow: boolean, narrow: boolean): void {
  useUi.setState({ sidebar: visibleNow ? 'hidden' : narrow ? 'shown' : 'auto' });
}

export function setHelp(open: boolean): void {
  useUi.setState({ helpOpen: open });
}

export function askConfirm(req: ConfirmRequest): void {
  useUi.setState({ confirm: req });
}

export function closeConfirm(): void {
  useUi.setState({ confirm: null });
}

let nextNotice = 1;
/** The one way to tell the user something in passing (a toast): it expires after NOTICE_MS[kind]; the
 * same text again replaces the earlier one, and at most three stay. */
export function notify(text: string, kind: NoticeKind = 'error', action?: Notice['action']): number {
  const id = nextNotice++;
  useUi.setState((s) => ({
    notices: [...s.notices.filter((n) => n.text !== text), { id, kind, text, action }].slice(-3),
  }));
  setTimeout(() => dismiss(id), NOTICE_MS[kind]);
  return id;
}

export function dismiss(id: number): void {
  useUi.setState((s) => ({ notices: s.notices.filter((n) => n.id !== id) }));
}
