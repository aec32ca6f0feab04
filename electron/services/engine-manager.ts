// The core's view of the engine process: which model is loaded, the sessions that live in the process,
// and the engine's status as the API reports it. When the process dies, everything in it is gone: the
// sessions are forgotten here, and whoever needs one rebuilds it from the saved cache (no new prefill).
//
// The services reach the engine only through here (never through `client`): `call` runs any operation of the
// engine-call table (protocol.ts) as it is; the methods below are the operations the core adds something to
// (the model it loads, the sessions' options, the GPU the settings chose). `folio chat` and `folio compress`
// drive the same.
import { ApiError, DEFAULT_CONTEXT_TOKENS, type EngineStatus, type Settings } from '../api/contract.ts';
import type { EventBus } from '../api/dispatcher.ts';
import type { EngineClient, RequestOptions } from '../engine/client.ts';
import {
  type BackendOffer,
  type EngineMethod,
  type EngineParams,
  type EngineResult,
  EngineRequestError,
  type ModelInfo,
  type SessionOptions,
} from '../engine/protocol.ts';
import { chatFormat, type ChatFormat } from './prefix.ts';
import { sessionKeyId, sessionUses, type SessionKey } from './session-key.ts';

export interface LoadedModel {
  /** The model's id in the library (models.list). */
  entryId: string;
  path: string;
  /** The model's handle in the engine process. */
  engineId: string;
  info: ModelInfo;
}

/** The settings new sessions are made with. */
export type SessionSettings = Pick<Settings, 'nCtx' | 'threads' | 'kvType' | 'kvTypeV' | 'kvRotate' | 'backend'>;

/** Options of a generation: sampling, how many tokens at most, whether an end-of-generation token stops it. */
export type GenerateOptions = Omit<EngineParams<'generate'>, 'sessionId'>;

export class EngineManager {
  private model: LoadedModel | null = null;
  private loading: Promise<LoadedModel> | null = null;
  /** Sessions in the engine process by what they belong to (see session-key.ts), under sessionKeyId. */
  private sessions = new Map<string, { key: SessionKey; sessionId: string }>();
  /** The loaded model's chat format (its special tokens' text comes from the engine once). */
  private format: { engineId: string; format: Promise<ChatFormat> } | null = null;

  constructor(
    readonly client: EngineClient,
    private readonly bus: EventBus,
    private readonly settings: () => SessionSettings,
  ) {
    client.on('status', () => this.publish());
    client.on('crash', () => {
      // Everything in the dead process is gone; the next use reloads the model and rebuilds its sessions.
      this.model = null;
      this.loading = null;
      this.sessions.clear();
      this.format = null;
    });
  }

  /** The backend new sessions get (the settings' choice) as the running host offers it; null before a start. */
  private offer(): BackendOffer | null {
    const choice = this.settings().backend;
    return choice === 'auto' ? null : (this.client.hostInfo()?.backends[choice] ?? null);
  }

  /** The GPU the engine computes on (its memory when the engine started), null on the CPU or before a start. */
  gpu(): { name: string; freeBytes: number; totalBytes: number } | null {
    const offer = this.offer();
    return offer ? offer.gpu : (this.client.hostInfo()?.gpu ?? null);
  }

  status(): EngineStatus {
    const s = this.client.status();
    const offer = s.state === 'ready' ? this.offer() : null;
    return {
      state: s.state,
      modelId: this.model?.entryId ?? null,
      backend: offer?.label ?? (s.backend || 'cpu'),
      backendReason: offer
        ? offer.available
          ? offer.reason
          : `chosen in the settings, but ${offer.reason}`
        : s.backendReason,
      message: s.message,
      restarts: s.restarts,
      willRestart: s.willRestart,
    };
  }

  /**
   * The user's Retry (engine.restart): starts an engine that is down, crashed past its restart limit or
   * stopped; one that runs, or restarts by itself, is left to it. A failed start shows in the status.
   */
  async restart(): Promise<EngineStatus> {
    const s = this.client.status();
    if (s.state === 'stopped' || (s.state === 'crashed' && !s.willRestart)) await this.client.start().catch(() => {});
    return this.status();
  }

  publish(): void {
    this.bus.emit('engine.status', this.status());
  }

  get loaded(): LoadedModel | null {
    return this.model;
  }

  /** The model loaded in the engine, loading (or switching to) it first when needed. */
  async ensureModel(entryId: string, path: string): Promise<LoadedModel> {
    if (this.model?.entryId === entryId) return this.model;
    if (this.loading) {
      const m = await this.loading.catch(() => null);
      if (m?.entryId === entryId) return m;
    }
    this.loading = (async () => {
      // Choosing or using a model is a user's action: it brings back an engine that crashed past its restart
      // limit too (start() waits for an automatic restart that is already on its way).
      const state = this.client.status().state;
      if (state === 'stopped' || state === 'crashed') await this.client.start();
      if (this.model) {
        // One model at a time: its sessions go with it.
        await this.client.call('unloadModel', { modelId: this.model.engineId }).catch(() => {});
        this.sessions.clear();
        this.model = null;
        this.format = null;
      }
      const { modelId, info } = await this.client.call('loadModel', { path });
      this.model = { entryId, path, engineId: modelId, info };
      this.publish();
      return this.model;
    })();
    try {
      return await this.loading;
    } finally {
      this.loading = null;
    }
  }

  /**
   * Context options for new sessions from the settings: the context asked for, or the model's own up to
   * DEFAULT_CONTEXT_TOKENS, never more than the model's.
   */
  sessionOptions(): SessionOptions & { nCtx: number } {
    const s = this.settings();
    const modelContext = this.model?.info.contextLength;
    const nCtx = s.nCtx ?? DEFAULT_CONTEXT_TOKENS;
    return {
      nCtx: modelContext ? Math.min(nCtx, modelContext) : nCtx,
      nThreads: s.threads ?? 0,
      kvType: s.kvType,
      ...(s.kvTypeV ? { kvTypeV: s.kvTypeV } : {}),
      kvRotate: s.kvRotate,
      backend: s.backend,
    };
  }

  // -------------------------------------------------------------------------------------------------------
  // The sessions the core keeps

  session(key: SessionKey): string | undefined {
    return this.sessions.get(sessionKeyId(key))?.sessionId;
  }

  setSession(key: SessionKey, sessionId: string): void {
    this.sessions.set(sessionKeyId(key), { key, sessionId });
  }

  /** Disposes a session if it still exists (it may have died with the process). */
  async dropSession(key: SessionKey): Promise<void> {
    const id = sessionKeyId(key);
    const entry = this.sessions.get(id);
    if (!entry) return;
    this.sessions.delete(id);
    await this.disposeSession(entry.sessionId);
  }

  /** A document's chats' sessions, then its own: what goes when its cache is replaced or it is deleted. */
  async dropDocumentSessions(documentId: string): Promise<void> {
    const all = [...this.sessions.values()].filter((e) => sessionUses(e.key, documentId));
    for (const e of [...all.filter((x) => x.key.kind === 'chat'), ...all.filter((x) => x.key.kind === 'document')])
      await this.dropSession(e.key);
  }

  requireModel(): LoadedModel {
    if (!this.model) throw new ApiError('NO_MODEL', 'no model is loaded: choose one in Models');
    return this.model;
  }

  // -------------------------------------------------------------------------------------------------------
  // Engine operations (protocol.ts says what each does)

  /** Any operation of the engine-call table, as it is. */
  call<M extends EngineMethod>(
    method: M,
    params: EngineParams<M>,
    opts: RequestOptions = {},
  ): Promise<EngineResult<M>> {
    return this.client.call(method, params, opts);
  }

  /** How the model's conversations are rendered and tokenized (prefix.ts). */
  chatFormat(model: LoadedModel): Promise<ChatFormat> {
    if (this.format?.engineId !== model.engineId) {
      const special = async (id: number) =>
        id < 0 ? '' : (await this.call('detokenize', { modelId: model.engineId, tokens: [id], special: true })).text;
      const format = (async () =>
        chatFormat(model.info, await special(model.info.tokenizer.bos), await special(model.info.tokenizer.eos)))();
      this.format = { engineId: model.engineId, format };
      format.catch(() => {
        if (this.format?.format === format) this.format = null;
      });
    }
    return this.format.format;
  }

  /** A new empty session over the model, with sessionOptions() unless told otherwise. */
  createSession(model: LoadedModel, options: SessionOptions = this.sessionOptions()) {
    return this.client
      .call('createSession', { modelId: model.engineId, options })
      .catch((e: unknown) => this.gpuChoiceError(e, options));
  }

  /** A session read from a saved cache (SESSION_FILE_* errors: damaged, or of another model). */
  loadSession(model: LoadedModel, path: string, options: SessionOptions = this.sessionOptions()) {
    return this.client
      .call('loadSession', { modelId: model.engineId, path, options })
      .catch((e: unknown) => this.gpuChoiceError(e, options));
  }

  /** A GPU the settings chose that cannot run: its reason, and the way out. */
  private gpuChoiceError(e: unknown, options: SessionOptions): never {
    if (
      e instanceof EngineRequestError &&
      e.code === 'GPU_UNAVAILABLE' &&
      options.backend &&
      options.backend !== 'auto'
    )
      throw new EngineRequestError(
        e.code,
        `${e.message}. The settings ask for ${options.backend}: choose Automatic or the CPU under "Compute on"`,
        e.method,
      );
    throw e;
  }

  /** Disposes a session; one that died with the process is gone already, which is fine. */
  async disposeSession(sessionId: string): Promise<void> {
    await this.client.call('disposeSession', { sessionId }).catch(() => {});
  }
}
