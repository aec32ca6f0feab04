// Chats over a compressed document, or a set of them. A chat over one document forks the document's compressed
// session, so a new chat costs no prefill; a chat over a set assembles its documents' saved caches side by side
// (chat-set.ts), nothing read again, or reads them together once (its reading). Its conversation lives in that
// session. Answers stream as chat.token events and are written to the database as they grow; stop, regenerate
// and edit truncate the conversation. When the engine dies mid-answer the answer is kept as interrupted, and the
// chat's session is rebuilt on the next question from the saved caches plus the stored conversation.
import {
  ApiError,
  type ChatStyle,
  type ChatSummary,
  type CitedPage,
  type DocumentPage,
  type Message,
  type Params,
  type Result,
} from '../api/contract.ts';
import { toSummary } from '../storage/index.ts';
import type { EventBus } from '../api/dispatcher.ts';
import type { DocumentRecord, Storage } from '../storage/index.ts';
import type { StreamingAnswer } from '../storage/streaming.ts';
import { exportChat } from './chat-export.ts';
import { SEARCH_LIMIT, searchHit } from './chat-search.ts';
import { isUntitled, titleFromQuestion } from './chat-title.ts';
import { chatStyleFor } from '../shared/chat-style.ts';
import { answerEnds } from './chat-format.ts';
import { ConversationSession } from './conversation.ts';
import type { ChatFormat } from './prefix.ts';
import type { DocumentReader } from './documents/reader.ts';
import type { EngineManager } from './engine-manager.ts';
import { citationsFromAttention, pageRefsOf } from './citations.ts';
import { evidencePages } from './evidence.ts';
import { MAX_CHAT_DOCUMENTS } from '../shared/limits.ts';
import { pagesRead } from '../shared/room.ts';
import { setCitations, setEvidence, type AssembledSet } from './chat-set.ts';
import { setBudgetChoice } from '../shared/kv/budget.ts';
import { SessionKey } from './session-key.ts';

/** Tokens kept free at the end of the context for the answer's first words. */
const ANSWER_ROOM = 16;

export class ChatsService {
  private live = new Map<string, Promise<ConversationSession>>();
  /** The chats over a set as their sessions were assembled: where each document's entries lie. */
  private sets = new Map<string, AssembledSet>();
  private running = new Map<string, { controller: AbortController; done: Promise<void> }>();

  constructor(
    private readonly storage: Storage,
    private readonly engine: EngineManager,
    private readonly documents: DocumentReader,
    private readonly bus: EventBus,
  ) {}

  /** The chats over the document (alone or in a set) that hold messages, and its newest empty chat over it alone
   * (the one "New chat" reuses); other empty chats (left by an older version of the app) are not listed. */
  list(documentId: string): ChatSummary[] {
    this.storage.documents.require(documentId);
    const empty = this.emptyChat([documentId]);
    return this.storage.chats.list(documentId).filter((c) => c.messageCount > 0 || c.id === empty?.id);
  }

  /** The newest chat without messages over exactly these documents, if any. */
  private emptyChat(documentIds: readonly string[]): ChatSummary | undefined {
    const same = (c: ChatSummary) =>
      c.documentIds.length === documentIds.length && c.documentIds.every((d, i) => d === documentIds[i]);
    return this.storage.chats.list(documentIds[0]).find((c) => c.messageCount === 0 && same(c));
  }

  /** The empty chat over the document, or the set (renamed when a title is given, and made the most recent),
   * else a new one. */
  create(params: Params<'chats.create'>): ChatSummary {
    const ids = [params.documentId, ...(params.others ?? [])];
    if (new Set(ids).size !== ids.length) throw new ApiError('BAD_REQUEST', 'a chat lists each document once');
    if (ids.length > MAX_CHAT_DOCUMENTS)
      throw new ApiError('BAD_REQUEST', `a chat reads at most ${MAX_CHAT_DOCUMENTS} documents together`);
    for (const id of ids) this.storage.documents.require(id);
    const title = params.title?.trim();
    const empty = this.emptyChat(ids);
    if (!empty) return this.storage.chats.create(ids, title, params.style ?? null);
    if (params.style !== undefined) this.storage.chats.setStyle(empty.id, params.style);
    if (title) return this.storage.chats.rename(empty.id, title);
    this.storage.chats.touch(empty.id);
    return this.storage.chats.require(empty.id);
  }

  /** How the chat's turns are written from its next question on; what was said is replayed in that style. */
  async setStyle(params: Params<'chats.setStyle'>): Promise<ChatSummary> {
    const chat = this.storage.chats.require(params.chatId);
    if (this.running.has(chat.id))
      throw new ApiError('BUSY', 'an answer is still being written in this chat: stop it first');
    if (chat.style === params.style) return chat;
    const changed = this.storage.chats.setStyle(chat.id, params.style);
    await this.forget(changed);
    return changed;
  }

  /** How a chat over a set reads its documents from its next question on (SetReading), and an assembled set's one
   * budget (SetBudget, 1 or null: none); what was said is replayed. */
  async setReading(params: Params<'chats.setReading'>): Promise<ChatSummary> {
    const chat = this.storage.chats.require(params.chatId);
    if (this.running.has(chat.id))
      throw new ApiError('BUSY', 'an answer is still being written in this chat: stop it first');
    const setBudget = params.setBudget === 1 ? null : (params.setBudget ?? null);
    if (chat.documentIds.length < 2 && (params.reading !== 'assembled' || setBudget !== null))
      throw new ApiError(
        'BAD_REQUEST',
        'a chat over one document reads it as it is: only a set is read together or given one budget',
      );
    if (params.reading === 'together' && setBudget !== null)
      throw new ApiError(
        'BAD_REQUEST',
        'a set read together already has one budget (its read chooses over all of it): one budget is for a set ' +
          'assembled side by side',
      );
    if (chat.reading === params.reading && chat.setBudget === setBudget) return chat;
    const changed = this.storage.chats.setReading(chat.id, params.reading, setBudget);
    await this.forget(changed);
    return changed;
  }

  /** The style the chat's turns are written in (chatStyleFor). */
  private style(chat: ChatSummary, format: ChatFormat): ChatStyle {
    return chatStyleFor(chat.style, format.template);
  }

  /** Messages holding the query, in one document's chats or in all of them. */
  search(params: Params<'chats.search'>): Result<'chats.search'> {
    if (params.documentId) this.storage.documents.require(params.documentId);
    const rows = this.storage.messages.search(params.query, {
      documentId: params.documentId,
      limit: params.limit ?? SEARCH_LIMIT,
    });
    return rows.map((r) => searchHit(r, params.query));
  }

  export(params: Params<'chats.export'>): Result<'chats.export'> {
    const chat = this.storage.chats.require(params.chatId);
    const docs = chat.documentIds.map((id) => toSummary(this.storage.documents.require(id)));
    return exportChat(chat, docs, this.storage.messages.list(chat.id), params.format);
  }

  /**
   * Shows another version of an answer. The cache holds the conversation with the version shown before, so
   * the chat's session is rebuilt on the next question, replaying the version shown now.
   */
  async selectVersion(params: Params<'chats.selectVersion'>): Promise<Message> {
    const chat = this.storage.chats.require(params.chatId);
    if (this.running.has(chat.id))
      throw new ApiError('BUSY', 'an answer is still being written in this chat: stop it first');
    const m = this.storage.messages.require(params.messageId);
    if (m.chatId !== chat.id) throw new ApiError('BAD_REQUEST', 'only a message of this chat has versions');
    if (m.version.index === params.version) return m;
    const shown = this.storage.messages.selectVersion(m.id, params.version);
    await this.forget(chat);
    this.bus.emit('chat.message', shown);
    return shown;
  }

  get(chatId: string): Result<'chats.get'> {
    const chat = this.storage.chats.require(chatId);
    const messages = this.storage.messages.list(chatId);
    return {
      chat,
      messages,
      usage: chat.documentIds.length > 1 ? this.setUsage(chat) : this.usage(chat),
    };
  }

  /** The context meter: the prefix's positions split into the system prompt (and template) and the document. */
  private usage(chat: ChatSummary): Result<'chats.get'>['usage'] {
    const doc = this.storage.documents.require(chat.documentId);
    const pageTokens = this.pagesRead(doc).reduce((n, p) => n + (p.tokenEnd - p.tokenStart), 0);
    const systemTokens = Math.max(0, doc.tokens - pageTokens);
    return this.meter(chat, {
      systemTokens,
      documentTokens: Math.max(0, this.prefixPositions(chat) - systemTokens),
      documentPacked: !!doc.kept && doc.kept.placement !== 'own',
      contextTokens: doc.contextTokens ?? this.engine.sessionOptions().nCtx,
      kvBytesKept: doc.kvBytesKept,
      kvBytesFull: doc.kvBytesFull,
    });
  }

  /** A set's meter: as assembled when it was (the template, system prompt and headers apart from the
   * documents), else by the documents' own reads; the memory is the sum of theirs. */
  private setUsage(chat: ChatSummary): Result<'chats.get'>['usage'] {
    const docs = chat.documentIds.map((id) => this.storage.documents.require(id));
    const sum = (f: (d: DocumentRecord) => number | null) =>
      docs.some((d) => f(d) === null) ? null : docs.reduce((n, d) => n + f(d)!, 0);
    const set = this.sets.get(chat.id);
    const own = docs.map((d) => this.pagesRead(d).reduce((n, p) => n + (p.tokenEnd - p.tokenStart), 0));
    const documentTokens = set ? set.documentTokens : own.reduce((a, b) => a + b, 0);
    return this.meter(chat, {
      systemTokens: set ? set.nPast - documentTokens : Math.max(0, docs[0].tokens - own[0]),
      documentTokens,
      documentPacked: set?.packed ?? false,
      contextTokens: set?.nCtx ?? Math.max(...docs.map((d) => d.contextTokens ?? this.engine.sessionOptions().nCtx)),
      // Read together, the set's own cache; assembled, the entries the engine holds for the documents.
      kvBytesKept: set?.together?.kvBytesKept ?? set?.keptBytes ?? sum((d) => d.kvBytesKept),
      kvBytesFull: set?.together?.kvBytesFull ?? sum((d) => d.kvBytesFull),
      ...(set?.shares ? { setShares: set.shares } : {}),
    });
  }

  /** The meter with the conversation's positions: what the cache held after the last answer, at most what the
   * context leaves after the prefix. */
  private meter(
    chat: ChatSummary,
    m: Omit<Result<'chats.get'>['usage'], 'conversationTokens'>,
  ): Result<'chats.get'>['usage'] {
    const positions = m.systemTokens + m.documentTokens;
    const contextTokens = m.contextTokens;
    const chatId = chat.id;
    // What the cache held after the last answer (older turns may have been compressed or set aside,
    // conversation.ts), else the messages' own tokens: more than the cache can hold once older turns were
    // compressed or set aside, so at most what the context leaves after the document.
    const held = this.storage.chats.conversationPositions(chatId);
    const said = held ?? this.storage.messages.conversationTokens(chatId).tokens;
    return { ...m, conversationTokens: Math.min(said, Math.max(0, contextTokens - positions)) };
  }

  /** An answer's attention folded onto the document's sentences; null where its positions are not the
   * document's tokens (a read with re-based positions) or nothing was measured. */
  private citations(doc: DocumentRecord, pages: DocumentPage[], attention: Float32Array[] | null): CitedPage[] | null {
    if (!attention || this.storage.stats.get(doc.id)?.rebased) return null;
    const charMap = this.storage.documents.charMap(doc.id);
    return charMap ? citationsFromAttention(attention, { pages, charMap }) : null;
  }

  /**
   * Where an answer's evidence is. Only the pages the model read can hold it: ranked by the answer's attention to
   * them, else (no attention measured) by the words they share with it. In a set, the pages name their documents
   * (citations; by shared words, basis 'words', where the set's attention cannot be read).
   */
  private evidence(
    chat: ChatSummary,
    text: string,
    attention: Float32Array[] | null,
  ): { citations: CitedPage[] | null; pageRefs: number[] } {
    if (chat.documentIds.length > 1) {
      const set = this.sets.get(chat.id);
      const citations = set ? (setCitations(attention, set) ?? setEvidence(text, set)) : null;
      return { citations, pageRefs: citations ? pageRefsOf(citations) : [] };
    }
    const doc = this.storage.documents.require(chat.documentId);
    const pages = this.pagesRead(doc);
    const citations = this.citations(doc, pages, attention);
    return { citations, pageRefs: citations ? pageRefsOf(citations) : evidencePages(text, pages) };
  }

  /** The pages the document's cache holds: what the meter counts and what answers may cite. */
  private pagesRead(doc: DocumentRecord) {
    return pagesRead(this.storage.documents.pages(doc.id), doc.readPages);
  }

  /** Positions the chat's prefix takes in its session: the document's (fewer than its tokens when read with
   * re-based positions), or the set's as assembled. */
  private prefixPositions(chat: ChatSummary): number {
    const set = this.sets.get(chat.id);
    if (set) return set.nPast;
    return this.storage.stats.get(chat.documentId)?.positions ?? this.storage.documents.require(chat.documentId).tokens;
  }

  rename(params: Params<'chats.rename'>): ChatSummary {
    return this.storage.chats.rename(params.chatId, params.title);
  }

  async delete(chatId: string): Promise<void> {
    const chat = this.storage.chats.require(chatId);
    await this.stop(chatId);
    await this.forget(chat);
    this.storage.chats.delete(chatId);
    this.documents.forgetTogether(chatId);
  }

  private key(chat: ChatSummary): SessionKey {
    return SessionKey.chat(chat.documentIds, chat.id);
  }

  private async forget(chat: ChatSummary): Promise<void> {
    this.live.delete(chat.id);
    this.sets.delete(chat.id);
    this.storage.chats.setConversationPositions(chat.id, null);
    await this.engine.dropSession(this.key(chat));
  }

  /** The chat's conversation: alive, or forked from the document's session with the stored conversation replayed. */
  private liveChat(chat: ChatSummary, upTo?: string): Promise<ConversationSession> {
    const existing = this.live.get(chat.id);
    if (existing && this.engine.session(this.key(chat))) return existing;
    const p = this.build(chat, upTo);
    this.live.set(chat.id, p);
    p.catch(() => this.live.delete(chat.id));
    return p;
  }

  private async build(chat: ChatSummary, upTo?: string): Promise<ConversationSession> {
    const live = chat.documentIds.length > 1 ? await this.assemble(chat) : await this.fork(chat);
    this.engine.setSession(this.key(chat), live.sessionId);
    // Replay what was said (finished answers only; an interrupted one is replayed as far as it got).
    const said = this.storage.messages.list(chat.id);
    const until = said.findIndex((m) => m.id === upTo);
    await live.replay(
      said.slice(0, until < 0 ? said.length : until).map((m) => ({ role: m.role, content: m.text })),
      { answerRoom: ANSWER_ROOM },
    );
    return live;
  }

  /** A chat over one document: a fork of the document's session. */
  private async fork(chat: ChatSummary): Promise<ConversationSession> {
    const docSession = await this.documents.session(chat.documentId);
    const model = this.engine.requireModel();
    const format = await this.engine.chatFormat(model);
    const conversation = this.documents.prefixConversation(
      chat.documentId,
      format,
      this.storage.settings.get().systemPrompt,
      this.style(chat, format),
    );
    return ConversationSession.fork(this.engine, model, format, conversation, docSession);
  }

  /** A chat over a set: its documents' saved caches side by side (each read first where it has none). */
  private async assemble(chat: ChatSummary): Promise<ConversationSession> {
    const model = await this.documents.model();
    const format = await this.engine.chatFormat(model);
    const settings = this.storage.settings.get();
    const o = { format, systemPrompt: settings.systemPrompt, style: this.style(chat, format) };
    const set =
      chat.reading === 'together'
        ? await this.documents.readTogether(chat.id, chat.documentIds, o)
        : await this.documents.assemble(chat.documentIds, {
            ...o,
            budget:
              chat.setBudget === null
                ? undefined
                : setBudgetChoice(chat.setBudget, settings.compression.method, settings.compression.alpha),
          });
    this.sets.set(chat.id, set);
    return ConversationSession.over(this.engine, model, format, set.conversation, set);
  }

  /** Asks a question; the answer streams in the background. */
  send(params: Params<'chats.send'>): Result<'chats.send'> {
    const chat = this.storage.chats.require(params.chatId);
    if (this.running.has(chat.id))
      throw new ApiError('BUSY', 'an answer is still being written in this chat: stop it first');
    // An untitled chat is named after its first question.
    if (chat.messageCount === 0 && isUntitled(chat.title)) {
      const title = titleFromQuestion(params.text);
      if (title) this.storage.chats.rename(chat.id, title);
    }
    const user = this.storage.messages.add(chat.id, { role: 'user', text: params.text, status: 'complete' });
    return this.answerQuestion(chat, user);
  }

  /** Answers `user`, the chat's last message: the answer streams in the background. */
  private answerQuestion(chat: ChatSummary, user: Message): Result<'chats.send'> {
    const answer = this.storage.messages.beginAnswer(chat.id);
    this.start(
      chat,
      answer,
      async (live, signal) => {
        const { promptTokens } = await live.ask(user.text, { answerRoom: ANSWER_ROOM, signal });
        this.storage.messages.update(user.id, { cacheTokens: promptTokens });
      },
      user.id,
    );
    this.storage.chats.touch(chat.id);
    return { user, assistant: this.storage.messages.require(answer.id) };
  }

  /** Answers the last question again: a new version of its answer, the earlier ones kept (selectVersion). */
  regenerate(chatId: string): Result<'chats.regenerate'> {
    const chat = this.storage.chats.require(chatId);
    if (this.running.has(chat.id))
      throw new ApiError('BUSY', 'an answer is still being written in this chat: stop it first');
    const messages = this.storage.messages.list(chatId);
    const last = messages[messages.length - 1];
    if (!last) throw new ApiError('NOTHING_TO_REGENERATE', 'the chat has no question yet');
    // The conversation changed under the session: rebuild it (the document's cache is reused, not re-read).
    void this.forget(chat);
    // The answer is rewritten in place, so the replay stops before it (upTo) and the question is the last.
    const answer =
      last.role === 'assistant'
        ? this.storage.messages.reviseAnswer(last.id)
        : this.storage.messages.beginAnswer(chat.id);
    this.start(chat, answer, async () => {}, answer.id);
    return { assistant: this.storage.messages.require(answer.id) };
  }

  /** Replaces a question with a new version and answers it; the earlier version keeps what followed it (a
   * branch, selectVersion goes back to it). */
  edit(params: Params<'chats.edit'>): Result<'chats.edit'> {
    const chat = this.storage.chats.require(params.chatId);
    if (this.running.has(chat.id))
      throw new ApiError('BUSY', 'an answer is still being written in this chat: stop it first');
    const m = this.storage.messages.require(params.messageId);
    if (m.chatId !== chat.id || m.role !== 'user')
      throw new ApiError('BAD_REQUEST', 'only a question of this chat can be edited');
    const user = this.storage.messages.reviseQuestion(m.id, params.text);
    void this.forget(chat);
    return this.answerQuestion(chat, user);
  }

  async stop(chatId: string): Promise<void> {
    const r = this.running.get(chatId);
    if (!r) return;
    r.controller.abort();
    await r.done;
  }

  /** Runs the answer in the background: prepare (append the question), then generate into `answer`. */
  private start(
    chat: ChatSummary,
    answer: StreamingAnswer,
    prepare: (live: ConversationSession, signal: AbortSignal) => Promise<void>,
    upTo: string,
  ) {
    const controller = new AbortController();
    const done = (async () => {
      try {
        const live = await this.liveChat(chat, upTo);
        await prepare(live, controller.signal);
        const s = this.storage.settings.get().sampling;
        const ends = answerEnds({ template: live.format.template, style: this.style(chat, live.format) });
        const r = await live.answer({
          maxTokens: Math.min(s.maxTokens, ends.maxTokens),
          stops: ends.stops,
          temperature: s.temperature,
          topK: s.topK,
          topP: s.topP,
          minP: s.minP,
          repeatPenalty: s.repeatPenalty,
          seed: s.seed ?? Math.floor(Math.random() * 2 ** 32),
          collectAttention: true,
          signal: controller.signal,
          onText: (text) => {
            answer.append(text);
            this.bus.emit('chat.token', { chatId: chat.id, messageId: answer.id, version: answer.version, text });
          },
        });
        // Recorded before the answer is announced, so that the meter read on that event counts it.
        this.storage.chats.setConversationPositions(chat.id, {
          positions: Math.max(0, live.status().position - this.prefixPositions(chat)),
          messages: this.storage.chats.require(chat.id).messageCount,
        });
        const { citations, pageRefs } = this.evidence(chat, r.text, r.attention);
        const status = r.stopReason === 'cancelled' ? 'cancelled' : 'complete';
        const error = r.stopReason === 'context' ? 'the answer stopped because the context is full' : null;
        this.finish(answer, status, {
          text: r.text,
          tokens: r.tokens,
          tokensPerSecond: r.tokensPerSecond,
          pageRefs,
          citations,
          cacheTokens: r.cacheTokens,
          error,
        });
      } catch (e) {
        const code = (e as { code?: string }).code;
        // The conversation may have stopped between the cache and its text: the chat is rebuilt next time.
        this.live.delete(chat.id);
        if (code === 'CANCELLED' || controller.signal.aborted) {
          await this.engine.dropSession(this.key(chat));
          this.finish(answer, 'cancelled', {});
        } else if (code === 'ENGINE_CRASHED' || code === 'ENGINE_STOPPED' || code === 'UNKNOWN_SESSION') {
          // The engine process died: what was said so far is kept; the chat is rebuilt on the next question.
          this.finish(answer, 'interrupted', {
            error: 'the engine stopped while answering; the answer was interrupted',
          });
        } else {
          await this.engine.dropSession(this.key(chat));
          this.finish(answer, 'failed', { error: (e as Error).message });
        }
      } finally {
        this.running.delete(chat.id);
        this.storage.chats.touch(chat.id);
      }
    })();
    this.running.set(chat.id, { controller, done });
  }

  private finish(
    answer: StreamingAnswer,
    status: 'complete' | 'cancelled' | 'interrupted' | 'failed',
    details: Parameters<StreamingAnswer['finish']>[1],
  ) {
    const m: Message | null = answer.finish(status, details);
    if (m) this.bus.emit('chat.message', m);
  }

  /** For a clean shutdown: stop every answer. */
  async stopAll(): Promise<void> {
    await Promise.all([...this.running.keys()].map((id) => this.stop(id)));
  }

  /** Waits until the chat's answer (if any) is finished (tests, shutdown). */
  async idle(chatId: string): Promise<void> {
    await this.running.get(chatId)?.done;
  }
}
