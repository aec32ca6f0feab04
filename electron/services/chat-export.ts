// A chat as a file: Markdown for people (questions and answers in order, with the pages each answer
// cites), or JSON with every field for programs. Both hold the versions shown, the conversation as it
// stands.
import type { ChatExportFormat, ChatSummary, DocumentSummary, Message, Result } from '../api/contract.ts';

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

function markdown(chat: ChatSummary, doc: DocumentSummary, messages: readonly Message[]): string {
  const out = [`# ${chat.title}`, '', `About *${doc.title}* (${doc.fileName}).`];
  for (const m of messages) {
    out.push('', m.role === 'user' ? '## Question' : '## Answer', '', m.text.trim() || '*(no text)*');
    if (m.role !== 'assistant') continue;
    const notes = [
      m.pageRefs.length ? `${m.pageRefs.length === 1 ? 'page' : 'pages'} ${m.pageRefs.join(', ')}` : '',
      m.version.count > 1 ? `version ${m.version.index} of ${m.version.count}` : '',
      STATUS_NOTE[m.status],
      m.error ?? '',
    ].filter(Boolean);
    if (notes.length) out.push('', `*${notes.join(' · ')}*`);
  }
  return `${out.join('\n')}\n`;
}

export function exportChat(
  chat: ChatSummary,
  doc: DocumentSummary,
  messages: readonly Message[],
  format: ChatExportFormat,
): Result<'chats.export'> {
  const fileName = exportFileName(chat.title, format);
  if (format === 'markdown') return { fileName, mimeType: 'text/markdown', text: markdown(chat, doc, messages) };
  const json = {
    folioChatExport: CHAT_EXPORT_VERSION,
    document: { id: doc.id, title: doc.title, fileName: doc.fileName, kind: doc.kind },
    chat,
    messages,
  };
  return { fileName, mimeType: 'application/json', text: `${JSON.stringify(json, null, 2)}\n` };
}
