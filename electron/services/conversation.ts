// The one chat driver: a conversation over a compressed document, held in a fork of the document's session.
// The chats (ChatsService), the OpenAI endpoint over a document (OpenAiService) and `folio chat` all drive
// their turns through it, over the engine methods of EngineManager. What it does, turn by turn:
//   fork     a copy of the document's pristine cache (no prefill of the document);
//   ask      plan the question's text with the chat format (chat-format.ts Conversation), check that it and
//            room for an answer fit the context (else compress the older turns by the question, or set the
//            oldest aside), go back to where the last answer began when the template renders that answer
//            differently, append (tokenize + prefill);
//   answer   generate, streaming, with stop sequences; the cache then holds the answer for the next turn;
//   replay   re-append a stored conversation (a rebuilt chat, an OpenAI request's history);
//   reset    back to the document alone, in a new fork;
//   status   where the cache stands.
import { ApiError } from '../api/contract.ts';
import type { Conversation, Message } from './chat-format.ts';
import type { EngineManager, GenerateOptions, LoadedModel } from './engine-manager.ts';
import { tokenizeFormatted, type ChatFormat } from './prefix.ts';

/** What a conversation needs of the engine (EngineManager's). */
export type ConversationEngine = Pick<EngineManager, 'call' | 'disposeSession'>;

/** Positions below which older turns are not compressed further: they are set aside whole instead. */
export const MIN_COMPRESSED_POSITIONS = 8;

/** A question (or a replayed answer) and room for an answer do not fit in what is left of the context. */
export class ContextFullError extends ApiError {
  constructor(
    /** Tokens of the text that did not fit. */
    readonly promptTokens: number,
    /** Context tokens free where it would have gone. */
    readonly free: number,
    readonly nCtx: number,
  ) {
    super(
      'CONTEXT_FULL',
      `the conversation has filled the model's context (${nCtx} tokens): start a new chat over this document`,
      { promptTokens, free, nCtx },
    );
  }
}

/** Sampling of one answer; `maxTokens` is capped by what is left of the context. */
export interface AnswerOptions extends Omit<GenerateOptions, 'n' | 'stopAtEog'> {
  maxTokens: number;
  /** Generation stops once one of these appears; the answer is cut before it. */
  stops?: readonly string[];
  signal?: AbortSignal;
  /** The answer's text as it grows (held back while it could be the start of a stop sequence). */
  onText?: (delta: string) => void;
}

export interface Answer {
  /** The answer to show: what was generated, cut before a stop sequence. */
  text: string;
  /** Tokens generated. */
  tokens: number;
  /** 'stop': a stop sequence appeared; 'context': the context is full; 'cancelled': the signal. */
  stopReason: 'length' | 'eog' | 'cancelled' | 'context' | 'stop';
  tokensPerSecond: number;
  /** Tokens the answer added to the cache. */
  cacheTokens: number;
  /** With collectAttention: the attention the answer paid each position before it, per layer (the engine's
   * GenerateResult.attention); null otherwise. */
  attention: Float32Array[] | null;
}

/** Where a conversation's cache stands. */
export interface ConversationStatus {
  /** Tokens in the cache (positions: compression keeps them even where it dropped entries). */
  position: number;
  nCtx: number;
  /** Context tokens left for questions and answers. */
  free: number;
  /** Questions asked since the document (or the last reset). */
  turns: number;
  /** The oldest turns set aside to make room (the cache no longer holds them; the document stays whole). */
  forgottenTurns: number;
  /** Older turns compressed to make room: the cache holds the entries of theirs the later questions attended to. */
  compressedTurns: number;
}

export class ConversationSession {
  /** Cache position where the last answer begins, -1 when there is none (the conversation's answerStart). */
  private answerStart = -1;
  /**
   * Cache position where each turn region the cache still holds begins (its question), oldest first: a turn,
   * or the older turns compressed together (always the first region).
   */
  private turnStarts: number[] = [];
  /** Questions in each region of turnStarts. */
  private turnCounts: number[] = [];
  private forgottenTurns = 0;
  /** Questions in the compressed region (turnStarts[0] when not 0). */
  private compressedTurns = 0;

  private constructor(
    private readonly engine: ConversationEngine,
    private readonly model: LoadedModel,
    /** How the model's conversations are rendered and tokenized. */
    readonly format: ChatFormat,
    /** The document's pristine session, forked again by reset(); null when the conversation was made in place
     * (a set's assembled session, rebuilt rather than reset). */
    private readonly documentSession: string | null,
    /** The text side: what the cache holds, what each turn appends. */
    readonly conversation: Conversation,
    private session: { sessionId: string; nPast: number; nCtx: number },
  ) {}

  /** A conversation in a new fork of the document's session, whose prefix `conversation` renders. */
  static async fork(
    engine: ConversationEngine,
    model: LoadedModel,
    format: ChatFormat,
    conversation: Conversation,
    documentSession: string,
  ): Promise<ConversationSession> {
    const h = await engine.call('fork', { sessionId: documentSession });
    return new ConversationSession(engine, model, format, documentSession, conversation, {
      sessionId: h.sessionId,
      nPast: h.nPast,
      nCtx: h.nCtx,
    });
  }

  /** A conversation in a session that holds its prefix already (a set's documents assembled, chat-set.ts). */
  static over(
    engine: ConversationEngine,
    model: LoadedModel,
    format: ChatFormat,
    conversation: Conversation,
    session: { sessionId: string; nPast: number; nCtx: number },
  ): ConversationSession {
    const { sessionId, nPast, nCtx } = session;
    return new ConversationSession(engine, model, format, null, conversation, { sessionId, nPast, nCtx });
  }

  get sessionId(): string {
    return this.session.sessionId;
  }

  status(): ConversationStatus {
    const { nPast, nCtx } = this.session;
    return {
      position: nPast,
      nCtx,
      free: nCtx - nPast,
      turns: this.conversation.turns,
      forgottenTurns: this.forgottenTurns,
      compressedTurns: this.compressedTurns,
    };
  }

  private tokenize(text: string, signal?: AbortSignal) {
    return tokenizeFormatted(
      (text, o) => this.engine.call('tokenize', { modelId: this.model.engineId, text, ...o }, { signal }),
      this.format,
      text,
      false,
    );
  }

  private async append(tokens: Int32Array, signal?: AbortSignal): Promise<void> {
    if (tokens.length === 0) return;
    const r = await this.engine.call('prefill', { sessionId: this.session.sessionId, tokens }, { signal });
    this.session.nPast = r.nPast;
  }

  /**
   * Appends a question and the answer's header. Refused with ContextFullError, before anything changes, when
   * it and `answerRoom` tokens for the answer do not fit; ChatFormatError when the template cannot continue
   * the cache. Returns the tokens the question's text took, and the older turns it compressed and set aside to
   * make room.
   */
  async ask(
    question: string,
    o: { answerRoom?: number; signal?: AbortSignal } = {},
  ): Promise<{ promptTokens: number; compressedTurns: number; forgottenTurns: number }> {
    const plan = this.conversation.plan(question);
    const { tokens } = await this.tokenize(plan.text, o.signal);
    // The template renders the last answer differently from how it was generated (it trims it, say): the
    // cache goes back to where that answer began and the plan re-sends it as rendered.
    const fromNow = () => (plan.dropLastAnswer ? this.answerStart : this.session.nPast);
    const room = tokens.length + (o.answerRoom ?? 1);
    const fits = () => fromNow() + room <= this.session.nCtx;
    // No room: the older turns are compressed by the attention this question gives them; where that cannot
    // make room, the oldest turns are set aside whole, one at a time (the document stays).
    const last = plan.dropLastAnswer ? 1 : 0; // the turn whose answer is re-sent stays
    let compressedTurns = 0,
      forgottenTurns = 0;
    while (!fits() && this.turnStarts.length > last) {
      if (this.session.nCtx - this.turnStarts[0] < room) break; // never enough
      const need = fromNow() + room - this.session.nCtx;
      const compressed = await this.compressOlderTurns(last, need, tokens, o.signal);
      if (compressed > 0) compressedTurns = compressed;
      else forgottenTurns += await this.forgetOldestTurn();
    }
    if (!fits()) throw new ContextFullError(tokens.length, this.session.nCtx - fromNow(), this.session.nCtx);
    const from = fromNow();
    if (plan.dropLastAnswer) {
      await this.engine.call('truncate', { sessionId: this.session.sessionId, n: from });
      this.session.nPast = from;
    }
    if (!plan.dropLastAnswer) {
      this.turnStarts.push(from);
      this.turnCounts.push(1);
    }
    this.answerStart = -1;
    await this.append(tokens, o.signal);
    this.conversation.accept(plan);
    return { promptTokens: tokens.length, compressedTurns, forgottenTurns };
  }

  /**
   * Compresses every turn but the last `keepLast` into one region of fewer positions, ranked by the attention
   * the question's tokens (`window`) give them, to free `need` positions (docs/compression.md, "The
   * conversation"). The region keeps at most half its positions each time, so that older turns fade by
   * halves. Returns the turns now compressed together; 0, with nothing done, when the region would keep fewer
   * than MIN_COMPRESSED_POSITIONS.
   */
  private async compressOlderTurns(
    keepLast: number,
    need: number,
    window: Int32Array,
    signal?: AbortSignal,
  ): Promise<number> {
    const regions = this.turnStarts.length - keepLast;
    const from = this.turnStarts[0];
    const to = keepLast > 0 ? this.turnStarts[regions] : this.session.nPast;
    const span = to - from;
    const keep = Math.min(Math.floor(span / 2), span - need);
    if (keep < MIN_COMPRESSED_POSITIONS) return 0;
    const r = await this.engine.call(
      'compressSpan',
      { sessionId: this.session.sessionId, from, to, keepRatio: keep / span, window },
      { signal },
    );
    const turns = this.turnCounts.slice(0, regions).reduce((a, b) => a + b, 0);
    this.moveBack(from, to, this.session.nPast - r.nPast, regions);
    this.session.nPast = r.nPast;
    this.turnStarts.unshift(from);
    this.turnCounts.unshift(turns);
    this.compressedTurns = turns;
    return turns;
  }

  /**
   * Drops the oldest turn region the cache holds; the turns after it move back (docs/compression.md, "The
   * conversation"). Returns the turns it held.
   */
  private async forgetOldestTurn(): Promise<number> {
    const from = this.turnStarts[0];
    const to = this.turnStarts.length > 1 ? this.turnStarts[1] : this.session.nPast;
    const r = await this.engine.call('forget', { sessionId: this.session.sessionId, from, to });
    this.session.nPast = r.nPast;
    const turns = this.turnCounts[0];
    this.forgottenTurns += turns;
    if (this.compressedTurns > 0) this.compressedTurns = 0; // the compressed region is always the first
    this.moveBack(from, to, to - from, 1);
    return turns;
  }

  /**
   * Bookkeeping after positions [from, to), the first `regions` turn regions, gave up `shift` positions: those
   * regions leave the lists, what follows moves back, and an answer that began inside them no longer stands
   * as it was generated (dropped, or compressed): there is none to go back to.
   */
  private moveBack(from: number, to: number, shift: number, regions: number): void {
    this.turnStarts = this.turnStarts.slice(regions).map((p) => p - shift);
    this.turnCounts = this.turnCounts.slice(regions);
    if (this.answerStart >= to) this.answerStart -= shift;
    else if (this.answerStart >= from) this.answerStart = -1;
  }

  /** Appends an answer given as text (a stored one, an OpenAI request's history), as if it had been generated. */
  async appendAnswer(text: string, o: { signal?: AbortSignal } = {}): Promise<void> {
    const { tokens } = await this.tokenize(text, o.signal);
    const start = this.session.nPast;
    if (start + tokens.length > this.session.nCtx)
      throw new ContextFullError(tokens.length, this.session.nCtx - start, this.session.nCtx);
    await this.append(tokens, o.signal);
    this.conversation.answered(text);
    this.answerStart = start;
  }

  /** Re-appends a conversation: questions and answers in order (system messages are the prefix's). */
  async replay(messages: readonly Message[], o: { answerRoom?: number; signal?: AbortSignal } = {}): Promise<void> {
    for (const m of messages) {
      if (m.role === 'user') await this.ask(m.content, o);
      else if (m.role === 'assistant' && m.content) await this.appendAnswer(m.content, o);
    }
  }

  /** Generates the answer to the question asked last; the cache then holds it, for the next turn. */
  async answer(o: AnswerOptions): Promise<Answer> {
    const start = this.session.nPast;
    const a = await generateAnswer(this.engine, this.session.sessionId, {
      ...o,
      maxTokens: Math.min(o.maxTokens, this.session.nCtx - start),
    });
    this.session.nPast = a.nPast;
    // The conversation holds what the cache holds: the tokens fed back, not the one generation stopped at
    // (an end-of-generation token, or the one sampled when the context filled).
    this.conversation.answered(a.pieces.slice(0, a.nPast - start).join(''));
    this.answerStart = start;
    // An answer cut by the end of the context, not by the length asked for, says so.
    const full = a.stopReason === 'length' && o.maxTokens > this.session.nCtx - start && a.nPast >= this.session.nCtx;
    return {
      text: a.text,
      tokens: a.tokens,
      stopReason: full ? 'context' : a.stopReason,
      tokensPerSecond: a.tokensPerSecond,
      cacheTokens: a.nPast - start,
      attention: a.attention,
    };
  }

  /** Back to the document alone, in a new fork (the document is not read again). */
  async reset(): Promise<void> {
    if (this.documentSession === null) throw new ApiError('NOT_SUPPORTED', 'this conversation is rebuilt, not reset');
    const h = await this.engine.call('fork', { sessionId: this.documentSession });
    await this.engine.disposeSession(this.session.sessionId);
    this.session = { sessionId: h.sessionId, nPast: h.nPast, nCtx: h.nCtx };
    this.conversation.reset();
    this.answerStart = -1;
    this.turnStarts = [];
    this.turnCounts = [];
    this.forgottenTurns = 0;
    this.compressedTurns = 0;
  }

  async dispose(): Promise<void> {
    await this.engine.disposeSession(this.session.sessionId);
  }
}

/** One generation, streamed, with stop sequences (also for a session that holds a whole prompt, without a document). */
export async function generateAnswer(
  engine: Pick<ConversationEngine, 'call'>,
  sessionId: string,
  o: AnswerOptions,
): Promise<{
  text: string;
  /** The text of each token generated, as streamed (a stop sequence's tokens included). */
  pieces: string[];
  tokens: number;
  stopReason: Answer['stopReason'];
  tokensPerSecond: number;
  nPast: number;
  attention: Float32Array[] | null;
}> {
  const { maxTokens, stops = [], signal, onText, ...sampling } = o;
  // The engine's generation stops on this signal: the caller's, or a stop sequence.
  const stopper = new AbortController();
  const abort = () => stopper.abort();
  if (signal?.aborted) stopper.abort();
  signal?.addEventListener('abort', abort);
  const pieces: string[] = [];
  let text = '',
    sent = 0,
    stopped = false;
  const hold = Math.max(0, ...stops.map((x) => x.length - 1));
  const flush = (upTo: number) => {
    if (upTo > sent) onText?.(text.slice(sent, upTo));
    sent = Math.max(sent, upTo);
  };
  try {
    const r = await engine.call(
      'generate',
      { ...sampling, sessionId, n: Math.max(0, maxTokens), stopAtEog: true },
      {
        signal: stopper.signal,
        onToken: (t) => {
          pieces.push(t.text);
          if (stopped) return;
          text += t.text;
          // A stop sequence ends an answer once it has begun: a base model's answer may open with a blank line.
          const begun = text.search(/\S/);
          const hit =
            begun < 0
              ? undefined
              : stops
                  .map((x) => text.indexOf(x, begun))
                  .filter((i) => i >= 0)
                  .sort((a, b) => a - b)[0];
          if (hit !== undefined) {
            stopped = true;
            text = text.slice(0, hit);
            flush(hit);
            stopper.abort();
            return;
          }
          // Hold back what could be the start of a stop sequence.
          flush(text.length - hold);
        },
      },
    );
    if (!signal?.aborted) flush(text.length);
    return {
      text: stopped ? text : r.text,
      pieces,
      tokens: r.tokens.length,
      stopReason: stopped ? 'stop' : r.stopReason,
      tokensPerSecond: r.tokensPerSecond,
      nPast: r.nPast,
      attention: r.attention,
    };
  } finally {
    signal?.removeEventListener('abort', abort);
  }
}
