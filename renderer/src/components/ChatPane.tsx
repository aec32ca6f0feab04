// The chat over a document: the conversation (virtualised), each answer rendered as sanitised Markdown
// while it streams, with stop / regenerate / edit / copy, tokens per second, the pages where the answer's
// evidence was found, and how full the context is.
import {
  memo,
  useDeferredValue,
  useEffect,
  useMemo,
  useRef,
  useState,
  type FormEvent,
  type KeyboardEvent,
} from 'react';
import { useShallow } from 'zustand/react/shallow';

import {
  SET_BUDGET_CHOICES,
  SET_READINGS,
  type ChatStyle,
  type CitedPage,
  type DocumentDetail,
  type Message,
  type SetReading,
} from '../../../electron/api/contract.ts';
import {
  createChat,
  editQuestion,
  EMPTY,
  liveRate,
  liveUsage,
  refreshChat,
  regenerateAnswer,
  renameChat,
  sendQuestion,
  chatOver,
  setChatReading,
  setChatStyle,
  stopAnswer,
  streamingMessage,
  useChats,
  type ContextUsage,
} from '../stores/chats.ts';
import { loadDetail, useDocuments } from '../stores/documents.ts';
import { useModels } from '../stores/models.ts';
import { useSettings } from '../stores/settings.ts';
import { notify, openCitation, openPage, setTab, showChatDocument, useUi } from '../stores/ui.ts';
import { keptBudget, readKind } from '../lib/read-kind.ts';
import { copyText } from '../lib/clipboard.ts';
import { formatCount, formatPercent, formatRate } from '../lib/format.ts';
import { renderMarkdown } from '../lib/markdown.ts';
import { ContextMeter } from './ContextMeter.tsx';
import { ExportMenu } from './ExportMenu.tsx';
import { VersionPager } from './VersionPager.tsx';
import { SanitizedHtml } from './SanitizedHtml.tsx';
import { VirtualList } from './VirtualList.tsx';
import { pagesRead } from '../../../electron/shared/room.ts';
import { CHAT_STYLES, chatStyleFor } from '../../../electron/shared/chat-style.ts';
import { citedChips } from '../../../electron/shared/citation-chips.ts';
import { MAX_CHAT_DOCUMENTS } from '../../../electron/shared/limits.ts';

export function Markdown({ text, streaming }: { text: string; streaming?: boolean }) {
  // While an answer streams, rendering may lag a token or two behind rather than block typing.
  const deferred = useDeferredValue(text);
  const html = useMemo(() => renderMarkdown(deferred), [deferred]);
  return <SanitizedHtml className={`markdown${streaming ? ' streaming' : ''}`} html={html} />;
}

async function copyMessage(text: string) {
  if (await copyText(text)) notify('Copied to the clipboard', 'info');
  else notify('Could not copy: the clipboard is not available', 'error');
}

const STATUS_NOTE: Partial<Record<Message['status'], string>> = {
  cancelled: 'Stopped',
  interrupted: 'Interrupted',
  failed: 'Failed',
};

/** The error the app core gives an answer cut short by the end of the context (chats-service.ts). */
export const CONTEXT_FULL_ERROR = 'the answer stopped because the context is full';

/**
 * An answer stopped by the end of the context: nothing more fits this chat, so the way on is a new chat over
 * the same document, which starts from the document alone.
 */
function ContextFullNote({ chatId }: { chatId: string }) {
  const chatDoc = useChats((s) => s.chats[chatId]?.documentId);
  const shownDoc = useUi((s) => s.documentId);
  const documentId = chatDoc ?? shownDoc;
  return (
    <p className="msg-error context-full" data-testid="context-full">
      <strong>Stopped: the context is full</strong>{' '}
      {documentId && (
        <button type="button" className="button small" onClick={() => void createChat(documentId)}>
          New chat over this document
        </button>
      )}
    </p>
  );
}

/**
 * An answer's page chips, in pageRefs' order: ranked by the answer's attention where it was measured (then a chip
 * opens its page with the sentences the answer looked at highlighted), else by the words the answer shares with
 * each page (docs/citations.md).
 */
export function PageChips({ m }: { m: Message }) {
  const documentId = useChats((s) => s.chats[m.chatId]?.documentId ?? null);
  const shown = useUi((s) => s.documentId);
  const cited = new Map((m.citations ?? []).map((c) => [c.page, c]));
  const docId = documentId ?? shown;
  if (m.citations?.some((c) => c.documentId)) return <SetChips citations={m.citations} />;
  return (
    <span className="page-refs">
      {m.citations ? 'Looked at' : 'Evidence on'}
      {m.pageRefs.map((p) => {
        const c = cited.get(p);
        return (
          <button
            key={p}
            type="button"
            className="page-ref"
            onClick={() =>
              c && docId ? openCitation({ documentId: docId, page: p, ranges: c.sentences }) : openPage(p)
            }
            aria-label={`Open page ${p}${c ? `, where ${formatPercent(c.share)} of the answer's attention to the document went` : ''}`}
            title={c ? `${formatPercent(c.share)} of the answer's attention to the document` : undefined}
          >
            p. {p}
          </button>
        );
      })}
    </span>
  );
}

/** An answer's chips in a chat over a set: each names its document; it opens that document at the page (the
 * sentences the answer looked at highlighted, where they were found by its attention). */
function SetChips({ citations }: { citations: readonly CitedPage[] }) {
  const chips = citedChips(citations);
  const titles = useDocuments(useShallow((s) => chips.map((c) => (c.documentId && s.byId[c.documentId]?.title) || '')));
  const byWords = chips[0]?.basis === 'words';
  const share = (c: CitedPage) =>
    byWords
      ? `${formatPercent(c.share)} of the evidence by the words it shares with the answer`
      : `${formatPercent(c.share)} of the answer's attention to the documents`;
  return (
    <span className="page-refs">
      {byWords ? 'Evidence on' : 'Looked at'}
      {chips.map((c, i) => {
        const title = titles[i] || 'a deleted document';
        return (
          <button
            key={`${c.documentId}:${c.page}`}
            type="button"
            className="page-ref"
            disabled={!titles[i]}
            onClick={() =>
              c.documentId && openCitation({ documentId: c.documentId, page: c.page, ranges: c.sentences })
            }
            aria-label={`Open ${title}, page ${c.page}: ${share(c)}`}
            title={share(c)}
          >
            {title} · p. {c.page}
          </button>
        );
      })}
    </span>
  );
}

const READING_TEXT: Record<SetReading, string> = {
  assembled: 'side by side: opens at once, each read alone',
  together: 'together: better across documents, one slower read',
};

/** An assembled set's one budget, for people: the share of what the documents' reads chose that the set keeps. */
const budgetText = (b: number) => `one over the set: keep ${formatPercent(b)} of what they chose`;

/** The documents a chat over a set reads, in order (each opens in the document view, the chat staying open), and
 * how it reads them. */
function ChatDocuments({ chatId }: { chatId: string | null }) {
  const ids = useChats(useShallow((s) => (chatId ? (s.chats[chatId]?.documentIds ?? EMPTY) : EMPTY)));
  const reading = useChats((s) => (chatId ? (s.chats[chatId]?.reading ?? 'assembled') : 'assembled'));
  const setBudget = useChats((s) => (chatId ? (s.chats[chatId]?.setBudget ?? null) : null));
  const busy = useChats((s) => !!streamingMessage(s, chatId));
  const titles = useDocuments(useShallow((s) => ids.map((id) => s.byId[id]?.title ?? '')));
  const shown = useUi((s) => s.documentId);
  if (!chatId || ids.length < 2) return null;
  return (
    <nav className="chat-documents small" aria-label="The chat's documents" data-testid="chat-documents">
      <label
        className="muted"
        title="Side by side: each document's saved cache, placed after the others (no document saw another). Together: the set read again as one document, so later documents attend to earlier ones (kept for this chat; read again when a document or the settings change)."
      >
        Read{' '}
        <select
          value={reading}
          disabled={busy}
          onChange={(e) => void setChatReading(chatId, e.target.value as SetReading)}
        >
          {SET_READINGS.map((r) => (
            <option key={r} value={r}>
              {READING_TEXT[r]}
            </option>
          ))}
        </select>
      </label>
      {reading === 'assembled' && (
        <label
          className="muted"
          title="Each document's own: every document keeps what its own read kept. One over the set: the documents' kept entries chosen again together, by the scores their reads kept them by, so that a document the model needs less keeps less (less memory, a faster answer; the inspector shows each document's share)."
        >
          Budget{' '}
          <select
            value={setBudget === null ? '' : String(setBudget)}
            disabled={busy}
            onChange={(e) => void setChatReading(chatId, reading, e.target.value ? Number(e.target.value) : null)}
          >
            <option value="">each document’s own</option>
            {[...new Set([...SET_BUDGET_CHOICES, ...(setBudget === null ? [] : [setBudget])])].map((b) => (
              <option key={b} value={String(b)}>
                {budgetText(b)}
              </option>
            ))}
          </select>
        </label>
      )}
      <span className="muted">· {ids.length} documents:</span>
      {ids.map((id, i) => (
        <span key={id} className={`doc-chip${id === shown ? ' current' : ''}`}>
          <button
            type="button"
            className="link-button"
            aria-current={id === shown ? 'true' : undefined}
            onClick={() => showChatDocument(id)}
            title={`Show “${titles[i]}” in the document view`}
          >
            {titles[i]}
          </button>
          <button
            type="button"
            className="link-button doc-chip-remove"
            aria-label={`A new chat without ${titles[i]}`}
            title="A new chat over the others (this one stays as it is)"
            onClick={() => void chatOver(ids.filter((d) => d !== id))}
          >
            ×
          </button>
        </span>
      ))}
      <AddToSet ids={ids} />
    </nav>
  );
}

/** Another ready document for a new chat over the set and it (the set's own chat stays as it is). */
function AddToSet({ ids }: { ids: readonly string[] }) {
  const others = useDocuments(
    useShallow((s) =>
      s.order.filter((id) => !ids.includes(id) && (s.byId[id]?.status === 'ready' || s.byId[id]?.status === 'stale')),
    ),
  );
  const titles = useDocuments(useShallow((s) => others.map((id) => s.byId[id]?.title ?? '')));
  if (others.length === 0 || ids.length >= MAX_CHAT_DOCUMENTS) return null;
  return (
    <select
      className="small"
      aria-label="A new chat with another document"
      value=""
      onChange={(e) => e.target.value && void chatOver([...ids, e.target.value])}
    >
      <option value="">+ document…</option>
      {others.map((id, i) => (
        <option key={id} value={id}>
          {titles[i]}
        </option>
      ))}
    </select>
  );
}

export const MessageRow = memo(function MessageRow({ id, isLast }: { id: string; isLast: boolean }) {
  const m = useChats((s) => s.messages[id]);
  const live = useChats((s) => s.live[id]);
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState('');
  const chatBusy = useChats((s) => !!streamingMessage(s, m?.chatId ?? null));
  const focused = useChats((s) => s.focus === id);
  // The user asked to edit: the cursor goes into the question box (when editing starts, not on any mount).
  const editBox = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    if (editing) editBox.current?.focus();
  }, [editing]);
  if (!m) return null;
  const streaming = m.status === 'streaming';
  const who = m.role === 'user' ? 'You' : 'Folio';
  const rate = streaming ? liveRate(live) : m.tokensPerSecond;
  const tokens = streaming ? (live?.tokens ?? 0) : m.tokens;
  const saveEdit = async (e: FormEvent) => {
    e.preventDefault();
    if (!draft.trim()) return;
    if (await editQuestion(m.chatId, m.id, draft.trim())) setEditing(false);
  };
  return (
    <article
      className={`msg msg-${m.role} msg-${m.status}${focused ? ' msg-focus' : ''}`}
      aria-label={m.role === 'user' ? 'Your question' : 'Answer'}
      aria-busy={streaming || undefined}
      data-testid={`msg-${m.role}`}
      data-status={m.status}
      data-message-id={m.id}
    >
      <div className="msg-head">
        <span className="msg-who">{who}</span>
        {streaming && <span className="badge status-compressing">Writing…</span>}
        {STATUS_NOTE[m.status] && <span className={`badge msg-status-${m.status}`}>{STATUS_NOTE[m.status]}</span>}
      </div>
      {m.role === 'user' ? (
        editing ? (
          <form className="msg-edit" onSubmit={saveEdit}>
            <label className="sr-only" htmlFor={`edit-${m.id}`}>
              Edit your question
            </label>
            <textarea
              id={`edit-${m.id}`}
              ref={editBox}
              value={draft}
              onChange={(e) => setDraft(e.target.value)}
              rows={Math.min(8, draft.split('\n').length + 1)}
            />
            <div className="msg-edit-actions">
              <button type="button" className="button small" onClick={() => setEditing(false)}>
                Cancel
              </button>
              <button type="submit" className="button small primary">
                Ask again
              </button>
            </div>
          </form>
        ) : (
          <p className="msg-text">{m.text}</p>
        )
      ) : m.text ? (
        <Markdown text={m.text} streaming={streaming} />
      ) : streaming ? (
        <p className="muted">Reading your question…</p>
      ) : null}
      {m.error === CONTEXT_FULL_ERROR ? (
        <ContextFullNote chatId={m.chatId} />
      ) : (
        m.error && (
          <p className="msg-error" role={m.status === 'failed' ? 'alert' : undefined}>
            {m.error}
          </p>
        )
      )}
      {m.status === 'interrupted' && !m.error && <p className="msg-error">The engine stopped while answering.</p>}
      <div className="msg-foot">
        {m.role === 'assistant' && (tokens || rate) ? (
          <span className="msg-stats">
            {tokens ? `${formatCount(tokens)} tokens` : ''}
            {rate ? ` · ${formatRate(rate)}` : ''}
          </span>
        ) : null}
        {m.pageRefs.length > 0 && <PageChips m={m} />}
        {!streaming && !editing && (
          <span className="msg-actions">
            {m.text && (
              <button
                type="button"
                className="link-button"
                onClick={() => void copyMessage(m.text.trim())}
                aria-label={m.role === 'user' ? 'Copy question' : 'Copy answer'}
              >
                Copy
              </button>
            )}
            {m.role === 'user' && !chatBusy && (
              <button
                type="button"
                className="link-button"
                onClick={() => {
                  setDraft(m.text);
                  setEditing(true);
                }}
                aria-label="Edit question"
              >
                Edit
              </button>
            )}
            <VersionPager m={m} disabled={chatBusy} />
            {m.role === 'assistant' && isLast && !chatBusy && (
              <button
                type="button"
                className="link-button"
                onClick={() => void regenerateAnswer(m.chatId)}
                aria-label="Regenerate answer"
              >
                Regenerate
              </button>
            )}
          </span>
        )}
      </div>
    </article>
  );
});

function ChatTitle({ chatId }: { chatId: string | null }) {
  const title = useChats((s) => (chatId ? s.chats[chatId]?.title : undefined));
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState('');
  // The user asked to rename: the cursor goes into the name box (when editing starts, not on any mount).
  const nameBox = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (editing) nameBox.current?.focus();
  }, [editing]);
  if (!chatId) return <h2 className="chat-heading">New chat</h2>;
  if (editing)
    return (
      <form
        className="rename"
        onSubmit={(e) => {
          e.preventDefault();
          if (draft.trim()) void renameChat(chatId, draft.trim());
          setEditing(false);
        }}
      >
        <label className="sr-only" htmlFor="rename-chat">
          Chat name
        </label>
        <input
          id="rename-chat"
          ref={nameBox}
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          onBlur={() => setEditing(false)}
          onKeyDown={(e) => e.key === 'Escape' && setEditing(false)}
          maxLength={200}
        />
      </form>
    );
  return (
    <h2 className="chat-heading">
      <button
        type="button"
        className="title-button"
        onClick={() => {
          setDraft(title ?? '');
          setEditing(true);
        }}
        title="Rename this chat"
      >
        {title ?? 'Chat'}
      </button>
    </h2>
  );
}

/** The style the model writes a chat in when the chat names none (the contract's ChatStyle rule). */
function useModelStyle(): ChatStyle {
  const modelId = useSettings((s) => s.settings?.modelId ?? null);
  const template = useModels((s) => s.list.find((m) => m.id === modelId)?.chatTemplate ?? null);
  return chatStyleFor(null, template);
}

const STYLE_TEXT: Record<ChatStyle, string> = {
  chat: 'Chat: question and answer',
  completion: 'Continue text',
};

/** How the chat's turns are written: by the model (a base model continues text), or as chosen. */
function StyleSelect({ value, onChange }: { value: ChatStyle | null; onChange: (style: ChatStyle | null) => void }) {
  const byModel = useModelStyle();
  return (
    <label className="style-select small">
      <span className="muted">Answers:</span>{' '}
      <select
        value={value ?? ''}
        onChange={(e) => onChange(e.target.value === '' ? null : (e.target.value as ChatStyle))}
        title="How your text is given to the model: as a question in a chat, or as the start of text it continues (for a base model, which has no chat template)"
      >
        <option value="">
          By the model ({byModel === 'completion' ? 'continue text: it has no chat template' : 'chat'})
        </option>
        {CHAT_STYLES.map((s) => (
          <option key={s} value={s}>
            {STYLE_TEXT[s]}
          </option>
        ))}
      </select>
    </label>
  );
}

function Composer({ documentId, chatId }: { documentId: string; chatId: string | null }) {
  const [text, setText] = useState('');
  const [sending, setSending] = useState(false);
  // The style of a chat not made yet: it is made with it.
  const [newStyle, setNewStyle] = useState<ChatStyle | null>(null);
  const chatStyle = useChats((s) => (chatId ? (s.chats[chatId]?.style ?? null) : newStyle));
  const byModel = useModelStyle();
  const style = chatStyle ?? byModel;
  const doc = useDocuments((s) => s.byId[documentId]);
  const setSize = useChats((s) => (chatId ? (s.chats[chatId]?.documentIds.length ?? 1) : 1));
  const about = setSize > 1 ? `these ${setSize} documents` : (doc?.title ?? 'the document');
  const streaming = useChats((s) => !!streamingMessage(s, chatId));
  const ref = useRef<HTMLTextAreaElement>(null);
  const blocked = !doc
    ? 'The document is gone.'
    : doc.status === 'importing'
      ? 'The document is still being read.'
      : doc.status === 'compressing'
        ? 'The document is being compressed.'
        : doc.status === 'failed'
          ? 'The document could not be read: see the error above.'
          : null;
  const submit = async (e?: FormEvent) => {
    e?.preventDefault();
    // Text to continue is sent as typed (a trailing space asks for the next word); a question trimmed.
    const q = style === 'completion' ? text : text.trim();
    if (!q.trim() || blocked || streaming || sending) return;
    setSending(true);
    try {
      const cid = chatId ?? (await createChat(documentId, newStyle));
      if (cid && (await sendQuestion(cid, q))) setText('');
    } finally {
      setSending(false);
      ref.current?.focus();
    }
  };
  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      void submit();
    }
  };
  return (
    <form className="composer" onSubmit={submit}>
      <label htmlFor="question" className="sr-only">
        Ask about {about}
      </label>
      <textarea
        id="question"
        ref={ref}
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={onKeyDown}
        placeholder={
          blocked ??
          (style === 'completion'
            ? `Write the start of a sentence; the model continues it after ${setSize > 1 ? 'the documents' : 'the document'}…`
            : `Ask about ${about}…`)
        }
        rows={Math.min(8, Math.max(2, text.split('\n').length))}
        disabled={!!blocked}
        aria-describedby="composer-hint"
      />
      <div className="composer-side">
        {streaming && chatId ? (
          <button type="button" className="button danger" onClick={() => void stopAnswer(chatId)} title="Stop (Esc)">
            Stop
          </button>
        ) : (
          <button type="submit" className="button primary" disabled={!!blocked || !text.trim() || sending}>
            Send
          </button>
        )}
      </div>
      <p id="composer-hint" className="composer-hint muted small">
        {doc?.status === 'stale'
          ? 'The saved cache was made with other settings; it is rebuilt before the first answer. '
          : ''}
        <StyleSelect value={chatStyle} onChange={(v) => (chatId ? void setChatStyle(chatId, v) : setNewStyle(v))} />{' '}
        Enter to send · Shift + Enter for a new line · Esc stops
      </p>
    </form>
  );
}

/** The document's share of the context as the app core counts it (chats-service.ts usage): the pages' tokens
 * are the document, the rest of the prefix the system prompt and template; re-based, the document takes fewer
 * positions than its tokens. Null until the document's detail is loaded. */
function prefixSplit(
  d: DocumentDetail | undefined,
): { systemTokens: number; documentTokens: number; documentPacked: boolean } | null {
  if (!d) return null;
  const pageTokens = pagesRead(d.pageList, d.readPages).reduce((n, p) => n + (p.tokenEnd - p.tokenStart), 0);
  const systemTokens = Math.max(0, d.tokens - pageTokens);
  return {
    systemTokens,
    documentTokens: Math.max(0, (d.stats?.positions ?? d.tokens) - systemTokens),
    // As the core counts it: any placement but the document's own positions.
    documentPacked: (readKind(d) ?? 'own') !== 'own',
  };
}

/**
 * Before a chat exists the API reports no usage: the document against the context it was read into (or, read
 * before that was recorded, the one the engine will use: the settings' cap, else the model's own up to 8192),
 * split as the core splits it once the document's detail is here.
 */
function useDocumentOnlyUsage(documentId: string): ContextUsage | null {
  const doc = useDocuments((s) => s.byId[documentId]);
  const split = useDocuments(useShallow((s) => prefixSplit(s.details[documentId])));
  const nCtx = useSettings((s) => s.settings?.nCtx ?? null);
  const modelId = useSettings((s) => s.settings?.modelId ?? null);
  const modelCtx = useModels((s) => s.list.find((m) => m.id === modelId)?.contextLength ?? null);
  const ready = doc?.status === 'ready' || doc?.status === 'stale';
  // The split needs the pages and the statistics: fetched once, as the document view and inspector do.
  useEffect(() => {
    if (ready && !split) void loadDetail(documentId);
  }, [ready, split, documentId]);
  const fallback = nCtx ?? (modelCtx ? Math.min(modelCtx, 8192) : null);
  const ctx = doc?.contextTokens ?? (fallback && modelCtx ? Math.min(fallback, modelCtx) : fallback);
  if (!doc || doc.tokens <= 0 || !ctx) return null;
  return {
    systemTokens: split?.systemTokens ?? 0,
    documentTokens: split?.documentTokens ?? Math.min(doc.tokens, ctx),
    documentPacked: split?.documentPacked ?? false,
    conversationTokens: 0,
    contextTokens: ctx,
    kvBytesKept: doc.kvBytesKept,
    kvBytesFull: doc.kvBytesFull,
  };
}

/** A document longer than its context, on the chat where its answers are read: their quality is lower, and a
 * range of pages that fits (offered on the Document tab) answers better. */
function LongReadWarning({ documentId }: { documentId: string }) {
  const doc = useDocuments((s) => s.byId[documentId]);
  if (!doc || doc.status === 'failed' || readKind(doc) !== 'rebased') return null;
  const kept = keptBudget(doc);
  return (
    <p className="read-note warning small chat-warning" role="note" data-testid="chat-long-read">
      <strong>
        <span aria-hidden="true">⚠ </span>Lower quality:
      </strong>{' '}
      the document ({formatCount(doc.tokens)} tokens) is longer than the model’s context of{' '}
      {formatCount(doc.contextTokens ?? 0)} positions, so it was read with re-based positions
      {kept ? `, keeping ${kept.text}` : ''}.{' '}
      <button type="button" className="link-button" onClick={() => setTab('document')}>
        Compress a range of pages that fits
      </button>{' '}
      for better answers.
    </p>
  );
}

export function ChatPane({ documentId }: { documentId: string }) {
  const chatId = useUi((s) => s.chatId);
  const ids = useChats((s) => (chatId ? (s.order[chatId] ?? EMPTY) : EMPTY));
  const chatUsage = useChats(useShallow((s) => liveUsage(s, chatId)));
  const docUsage = useDocumentOnlyUsage(documentId);
  const usage = chatUsage ?? docUsage;
  const streaming = useChats((s) => streamingMessage(s, chatId)?.id ?? null);
  const rate = useChats((s) => (streaming ? liveRate(s.live[streaming]) : null));
  const lastUser = useChats((s) => {
    const o = chatId ? s.order[chatId] : undefined;
    if (!o) return null;
    for (let i = o.length - 1; i >= 0; i--) if (s.messages[o[i]]?.role === 'user') return o[i];
    return null;
  });
  useEffect(() => {
    if (chatId) void refreshChat(chatId);
  }, [chatId]);
  const lastId = ids[ids.length - 1];
  // A search hit opened: its message is brought into view.
  const focus = useChats((s) => s.focus);
  return (
    <div className="chat-pane">
      <div className="chat-bar">
        <ChatTitle chatId={chatId} />
        {streaming && rate ? <span className="live-rate muted small">{formatRate(rate)}</span> : null}
        <ContextMeter usage={usage} />
        {chatId && ids.length > 0 && <ExportMenu chatId={chatId} />}
      </div>
      <ChatDocuments chatId={chatId} />
      <LongReadWarning documentId={documentId} />
      {ids.length ? (
        <VirtualList
          keys={ids}
          label="Conversation"
          busy={!!streaming}
          bottomKey={lastUser}
          scrollToKey={focus}
          renderItem={(id) => <MessageRow id={id} isLast={id === lastId} />}
          estimate={140}
        />
      ) : (
        <div className="chat-empty">
          <p className="muted">Ask anything about this document. Answers name the pages their evidence came from.</p>
        </div>
      )}
      <Composer documentId={documentId} chatId={chatId} />
    </div>
  );
}
