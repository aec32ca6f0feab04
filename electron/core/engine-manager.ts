// The core's view of the engine process: which model is loaded, the sessions that live in the process,
// and the engine's status as the API reports it. When the process dies, everything in it is gone: the
// sessions are forgotten here, and whoever needs one rebuilds it from the saved cache (no new prefill).
import type { EngineStatus, Settings } from '../api/contract.ts';
import { ApiError } from '../api/contract.ts';
import type { EventBus } from '../api/dispatcher.ts';
import type { EngineClient } from '../engine/client.ts';
import type { ModelInfo, SessionOptions } from '../engine/protocol.ts';

export interface LoadedModel {
  /** The model's id in the library (models.list). */
  entryId: string;
  path: string;
  /** The model's handle in the engine process. */
  engineId: string;
  info: ModelInfo;
}

export class EngineManager {
  private model: LoadedModel | null = null;
  private loading: Promise<LoadedModel> | null = null;
  /** Sessions in the engine process by what they belong to (a document's pristine cache, a chat). */
  private sessions = new Map<string, string>();

  constructor(readonly client: EngineClient, private readonly bus: EventBus, private readonly settings: () => Settings) {
    client.on('status', () => this.publish());
    client.on('crash', () => {
      // Everything in the dead process is gone; the next use reloads the model and rebuilds its sessions.
      this.model = null;
      this.loading = null;
      this.sessions.clear();
    });
  }

  /** The GPU the engine computes on (its memory when the engine started), null on the CPU or before a start. */
  gpu(): { name: string; freeBytes: number; totalBytes: number } | null {
    return this.client.hostInfo()?.gpu ?? null;
  }

  status(): EngineStatus {
    const s = this.client.status();
    return {
      state: s.state,
      modelId: this.model?.entryId ?? null,
      backend: s.backend || 'cpu',
      backendReason: s.backendReason,
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
        await this.client.unloadModel(this.model.engineId).catch(() => {});
        this.sessions.clear();
        this.model = null;
      }
      const { modelId, info } = await this.client.loadModel(path);
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

  /** Context options for new sessions from the settings. */
  sessionOptions(): SessionOptions {
    const s = this.settings();
    const info = this.model?.info;
    const nCtx = s.nCtx ?? Math.min(info?.contextLength ?? 4096, 8192);
    return { nCtx: info ? Math.min(nCtx, info.contextLength) : nCtx, nThreads: s.threads ?? 0, kvType: s.kvType };
  }

  session(key: string): string | undefined {
    return this.sessions.get(key);
  }

  setSession(key: string, sessionId: string): void {
    this.sessions.set(key, sessionId);
  }

  /** Disposes a session if it still exists (it may have died with the process). */
  async dropSession(key: string): Promise<void> {
    const id = this.sessions.get(key);
    if (!id) return;
    this.sessions.delete(key);
    await this.client.disposeSession(id).catch(() => {});
  }

  /** Every session whose key starts with a prefix (e.g. all chats of a document). */
  async dropSessions(prefix: string): Promise<void> {
    for (const key of [...this.sessions.keys()]) if (key.startsWith(prefix)) await this.dropSession(key);
  }

  requireModel(): LoadedModel {
    if (!this.model) throw new ApiError('NO_MODEL', 'no model is loaded: choose one in Models');
    return this.model;
  }
}
