// A chat search's hit: the matching message with a piece of its text around the first match, cut at
// words, so that a list of hits reads at a glance.
import type { ChatSearchHit } from '../api/contract.ts';
import type { SearchRow } from '../storage/messages.ts';

/** Characters of context kept before and after the match. */
const BEFORE = 40;
const AFTER = 80;

/** The default number of hits (chats.search's limit). */
export const SEARCH_LIMIT = 50;

export function searchHit(row: SearchRow, query: string): ChatSearchHit {
  const text = row.text.replace(/\s+/g, ' ');
  const q = query.trim().replace(/\s+/g, ' ');
  const found = text.toLowerCase().indexOf(q.toLowerCase());
  const at = Math.max(0, found);
  const len = found < 0 ? 0 : q.length;
  let start = Math.max(0, at - BEFORE);
  let end = Math.min(text.length, at + len + AFTER);
  // Cut at a space where there is one near, so that no word is split.
  if (start > 0) {
    const sp = text.indexOf(' ', start);
    if (sp >= 0 && sp < at) start = sp + 1;
  }
  if (end < text.length) {
    const sp = text.lastIndexOf(' ', end);
    if (sp > at + len) end = sp;
  }
  const lead = start > 0 ? '…' : '';
  const snippet = lead + text.slice(start, end) + (end < text.length ? '…' : '');
  return {
    chatId: row.chatId,
    documentId: row.documentId,
    chatTitle: row.chatTitle,
    messageId: row.messageId,
    role: row.role,
    snippet,
    matchStart: lead.length + at - start,
    matchEnd: lead.length + at - start + len,
    createdAt: row.createdAt,
  };
}
