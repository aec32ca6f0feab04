// A chat as a file: Markdown for people (questions and answers in order, with the pages each answer
// cites), or JSON with every field for programs. Both hold the versions shown, the conversation as it
// stands.
import type { ChatExportFormat, ChatSummary, DocumentSummary, Message, Result } from '../api/contract.ts';
import { citedChips } from '../shared/citation-chips.ts';

/** Version of the JSON export's shape. */
export const CHAT_EXPORT_VERSION = 1;

/** A file name from a title: letters, digits, spaces, dashes and underscores kept, at most 80 characters. */
export function exportFileName(title: string, format: ChatExportFormat): string {
  const stem =
    title
      .normalize('NFKC')
      .replace(/[^\p{L}\p{N} _-]+/gu, ' ')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, 80)
      .trim() || 'chat';
  return `${stem}.${format === 'markdown' ? 'md' : 'json'}`;
}

const STATUS_NOTE: Record<Message['status'], string> = {
  complete: '',
  streaming: 'still being written',
  interrupted: 'interrupted',
  cancelled: 'stopped',
  failed: 'failed',
};

/** The pages an answer cites: by its chips' documents in a set, else by page. */
function citedPages(m: Message, docs: readonly DocumentSummary[]): string {
  const cited = m.citations?.filter((c) => c.documentId) ?? [];
  if (cited.length > 0)
    return citedChips(cited)
      .map((c) => `*${docs.find((d) => d.id === c.documentId)?.title ?? 'a document no longer here'}* p. ${c.page}`)
      .join(', ');
  return m.pageRefs.length ? `${m.pageRefs.length === 1 ? 'page' : 'pages'} ${m.pageRefs.join(', ')}` : '';
}

function markdown(chat: ChatSummary, docs: readonly DocumentSummary[], messages: readonly Message[]): string {
  const named = (d: DocumentSummary) => `*${d.title}* (${d.fileName})`;
  const about =
    docs.length === 1
      ? `About ${named(docs[0])}.`
      : [`About ${docs.length} documents:`, ...docs.map((d, i) => `${i + 1}. ${named(d)}`)].join('\n');
  const out = [`# ${chat.title}`, '', about];
  for (const m of messages) {
    out.push('', m.role === 'user' ? '## Question' : '## Answer', '', m.text.trim() || '*(no text)*');
    if (m.role !== 'assistant') continue;
    const notes = [
      citedPages(m, docs),
      m.version.count > 1 ? `version ${m.version.index} of ${m.version.count}` : '',
      STATUS_NOTE[m.status],
      m.error ?? '',
    ].filter(Boolean);
    if (notes.length) out.push('', `*${notes.join(' · ')}*`);
  }
  return `${out.join('\n')}\n`;
}

/** The chat over `docs` (its documents in order: one, or a set) as a file. */
export function exportChat(
  chat: ChatSummary,
  docs: DocumentSummary | readonly DocumentSummary[],
  messages: readonly Message[],
  format: ChatExportFormat,
): Result<'chats.export'> {
  const all = 'id' in docs ? [docs] : docs;
  const fileName = exportFileName(chat.title, format);
  if (format === 'markdown') return { fileName, mimeType: 'text/markdown', text: markdown(chat, all, messages) };
  const about = (d: DocumentSummary) => ({ id: d.id, title: d.title, fileName: d.fileName, kind: d.kind });
  const json = {
    folioChatExport: CHAT_EXPORT_VERSION,
    // The first document, as in version 1, and all of them in order.
    document: about(all[0]),
    documents: all.map(about),
    chat,
    messages,
  };
  return { fileName, mimeType: 'application/json', text: `${JSON.stringify(json, null, 2)}\n` };
}
