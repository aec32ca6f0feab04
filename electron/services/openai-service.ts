// The app core behind the OpenAI-compatible endpoints: a chat completion on one of the library's models,
// or, with Folio's `document_id`, over a stored compressed document (its saved cache is forked: no prefill
// of the document).
import { ApiError } from '../api/contract.ts';
import { readGgufHeader } from '../models/gguf-header.ts';
import type { Storage } from '../storage/index.ts';
import { contentText, type ChatCompletionRequest, type CompletionResult, type OpenAiBackend } from '../api/openai.ts';
import type { Message } from './chat-format.ts';
import { ConversationSession, generateAnswer, type AnswerOptions } from './conversation.ts';
import { chatStyleFor } from '../shared/chat-style.ts';
import type { DocumentReader } from './documents/reader.ts';
import type { EngineManager, LoadedModel } from './engine-manager.ts';
import type { ModelsService } from './models-service.ts';
import { tokenizeFormatted } from './prefix.ts';

/** Tokenizers whose tokens are pieces of the text itself (the text is their concatenation, nothing dropped). */
const PIECEWISE_TOKENIZERS = new Set(['llama', 'gpt2']);
/** An unknown character becomes one token of up to 4 UTF-8 bytes, whatever the vocabulary stores. */
const MIN_TOKEN_BYTES_BOUND = 4;

/**
 * The longest token text of a model's vocabulary in UTF-8 bytes, from its GGUF header (read once per file),
 * or null when it cannot be known. A stored token is never shorter than the text it stands for
 * (SentencePiece writes a space as 3-byte ▁, byte tokens as <0xAB>, GPT-2 BPE each byte as a 1-2 byte
 * character), so no token covers more bytes of a prompt than this.
 */
const longestTokens = new Map<string, Promise<number | null>>();
function longestTokenBytes(path: string, fileBytes: number): Promise<number | null> {
  const key = `${path}:${fileBytes}`;
  let p = longestTokens.get(key);
  if (!p) {
    p = readGgufHeader(path, { keepArrayElements: 1 << 22 }).then(
      (h) => {
        const tokens = h.metadata.get('tokenizer.ggml.tokens');
        if (!Array.isArray(tokens) || tokens.length === 0) return null;
        let longest = 0;
        for (const t of tokens) if (typeof t === 'string') longest = Math.max(longest, Buffer.byteLength(t));
        return Math.max(longest, MIN_TOKEN_BYTES_BOUND);
      },
      () => null,
    );
    longestTokens.set(key, p);
  }
  return p;
}

export class OpenAiService implements OpenAiBackend {
  /** The model `folio serve --model` was given: listed first. */
  preferred: string | null = null;

  constructor(
    private readonly storage: Storage,
    private readonly engine: EngineManager,
    private readonly models: ModelsService,
    private readonly documents: DocumentReader,
  ) {}

  async listModels() {
    const list = (await this.models.list()).filter((m) => m.supported);
    list.sort((a, b) => Number(b.id === this.preferred) - Number(a.id === this.preferred));
    return list.map((m) => ({ id: m.name, created: 0, owned_by: m.source }));
  }

  /** The model a request names (by name, id or file name); 'folio' or 'default' means the chat model. */
  private async model(name: string): Promise<LoadedModel> {
    const list = await this.models.list();
    const chosen = this.storage.settings.get().modelId ?? this.preferred;
    const m =
      name === 'folio' || name === 'default'
        ? list.find((x) => x.id === chosen)
        : list.find(
            (x) => x.name === name || x.id === name || x.path.endsWith('/' + name) || x.path.endsWith('\\' + name),
          );
    if (!m)
      throw new ApiError('MODEL_NOT_FOUND', `the model '${name}' does not exist here: GET /v1/models lists the models`);
    if (!m.supported) throw new ApiError('UNSUPPORTED_MODEL', `${m.name}: ${m.unsupportedReason}`);
    return this.engine.ensureModel(m.id, m.path);
  }

  /**
   * Refuses text whose byte length alone proves it cannot fit in `capacity` tokens, before the engine spends
   * seconds tokenizing it: a prompt needs at least bytes / (longest token) tokens.
   */
  private async refuseIfCannotFit(model: LoadedModel, bytes: number, capacity: number): Promise<void> {
    if (bytes <= capacity || !PIECEWISE_TOKENIZERS.has(model.info.tokenizer.model)) return; // every token covers >= 1 byte
    const longest = await longestTokenBytes(model.info.path, model.info.fileBytes);
    if (longest === null || bytes <= capacity * longest) return;
    throw new ApiError(
      'CONTEXT_FULL',
      `the messages are ${bytes} bytes long: even at ${longest} bytes a token (the model's longest) ` +
        `that is more than the ${capacity} tokens the context has room for; send less text or use a model with a longer context`,
    );
  }

  async complete(
    req: ChatCompletionRequest,
    onDelta: (text: string) => void,
    signal: AbortSignal,
  ): Promise<CompletionResult> {
    const s = this.storage.settings.get();
    const messages: Message[] = req.messages.map((m) => ({
      role: m.role === 'developer' ? 'system' : m.role,
      content: contentText(m.content),
    }));
    if (messages[messages.length - 1].role !== 'user')
      throw new ApiError('BAD_REQUEST', 'the last message must be from the user');

    const answer: AnswerOptions = {
      maxTokens: req.max_completion_tokens ?? req.max_tokens ?? s.sampling.maxTokens,
      temperature: req.temperature ?? s.sampling.temperature,
      topP: req.top_p ?? s.sampling.topP,
      topK: s.sampling.topK,
      minP: s.sampling.minP,
      repeatPenalty: s.sampling.repeatPenalty,
      seed: req.seed ?? s.sampling.seed ?? Math.floor(Math.random() * 2 ** 32),
      stops: req.stop === undefined ? [] : Array.isArray(req.stop) ? req.stop : [req.stop],
      signal,
      onText: onDelta,
    };
    const ids = req.document_ids ?? (req.document_id ? [req.document_id] : []);
    const r = ids.length
      ? await this.overDocuments(req, ids, messages, answer)
      : await this.withoutDocument(req, messages, answer);
    if (signal.aborted)
      throw new ApiError('CANCELLED', signal.reason instanceof Error ? signal.reason.message : 'the client went away');
    return {
      model: req.model,
      text: r.text,
      finishReason: r.stopReason === 'stop' || r.stopReason === 'eog' ? 'stop' : 'length',
      promptTokens: r.promptTokens,
      completionTokens: r.tokens,
    };
  }

  /**
   * A conversation over stored documents: one document's saved cache is forked, a set's are assembled side by
   * side (chat-set.ts); the messages are replayed after them.
   */
  private async overDocuments(
    req: ChatCompletionRequest,
    documentIds: readonly string[],
    messages: Message[],
    answer: AnswerOptions,
  ) {
    if (new Set(documentIds).size !== documentIds.length)
      throw new ApiError('BAD_REQUEST', 'document_ids lists a document more than once');
    const docs = documentIds.map((id) => {
      const doc = this.storage.documents.get(id);
      if (!doc) throw new ApiError('DOCUMENT_NOT_FOUND', `no stored document has the id '${id}'`);
      return doc;
    });
    const model = await this.documents.model();
    if (req.model !== 'folio' && req.model !== 'default' && (await this.model(req.model)).entryId !== model.entryId)
      throw new ApiError(
        'BAD_REQUEST',
        `${docs.length === 1 ? `the document '${docs[0].title}' is` : 'the documents are'} compressed for another model: use model 'folio'`,
      );
    const format = await this.engine.chatFormat(model);
    const system = [
      this.storage.settings.get().systemPrompt,
      ...messages.filter((m) => m.role === 'system').map((m) => m.content),
    ]
      .filter(Boolean)
      .join('\n\n');
    // Written as the app's chats are by default: by the model (a base model continues text, chat-style.ts).
    const style = chatStyleFor(null, format.template);
    const chat =
      docs.length === 1
        ? await ConversationSession.fork(
            this.engine,
            model,
            format,
            this.documents.prefixConversation(docs[0].id, format, system, style),
            await this.documents.session(docs[0].id),
          )
        : await this.documents
            .assemble(documentIds, { format, systemPrompt: system, style, signal: answer.signal })
            .then((set) => ConversationSession.over(this.engine, model, format, set.conversation, set));
    try {
      // The messages' own text is part of what is prefilled: too many bytes for the room left, refuse now.
      const said = messages.filter((m) => m.role !== 'system');
      const bytes = said.reduce((n, m) => n + Buffer.byteLength(m.content), 0);
      await this.refuseIfCannotFit(model, bytes, chat.status().free - 1);
      // Replay the conversation; the last user message gets the answer.
      await chat.replay(said, { signal: answer.signal });
      const promptTokens = chat.status().position;
      return { ...(await chat.answer(answer)), promptTokens };
    } finally {
      await chat.dispose();
    }
  }

  /** A plain chat completion: the whole conversation rendered at once and prefilled into a new session. */
  private async withoutDocument(req: ChatCompletionRequest, messages: Message[], answer: AnswerOptions) {
    const model = await this.model(req.model);
    const format = await this.engine.chatFormat(model);
    const text = format.renderer(messages, true);
    // The session gets at most the context sessionOptions asks for; one token is left for the answer.
    await this.refuseIfCannotFit(model, Buffer.byteLength(text), this.engine.sessionOptions().nCtx - 1);
    const t = await tokenizeFormatted(
      (x, o) => this.engine.call('tokenize', { modelId: model.engineId, text: x, ...o }),
      format,
      text,
      true,
    );
    const h = await this.engine.createSession(model);
    try {
      if (t.tokens.length + 1 > h.nCtx)
        throw new ApiError(
          'CONTEXT_FULL',
          `the messages are ${t.tokens.length} tokens long; the context holds ${h.nCtx}`,
        );
      await this.engine.call('prefill', { sessionId: h.sessionId, tokens: t.tokens }, { signal: answer.signal });
      return {
        ...(await generateAnswer(this.engine, h.sessionId, {
          ...answer,
          maxTokens: Math.min(answer.maxTokens, h.nCtx - t.tokens.length),
        })),
        promptTokens: t.tokens.length,
      };
    } finally {
      await this.engine.disposeSession(h.sessionId);
    }
  }
}
