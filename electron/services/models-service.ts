// Models: the GGUF files found on disk (LM Studio, Ollama, Hugging Face cache, folders and files the user
// added, Folio's downloads), the curated catalog, downloads with progress and resume, the memory estimate
// before loading, and choosing the chat model.

import {
  ApiError,
  type CatalogEntry,
  type EngineStatus,
  type MemoryEstimate,
  ModelEntry,
  type Params,
  type Result,
} from '../api/contract.ts';
import type { EventBus } from '../api/dispatcher.ts';
import { CATALOG, catalogEntry } from '../models/catalog.ts';
import { describeModelFile, discoverModels, type DiscoveryOptions, type HeaderCache } from '../models/discovery.ts';
import { downloadModel } from '../models/download.ts';
import { estimateForFile } from '../models/estimate.ts';
import type { Storage } from '../storage/index.ts';
import { privateDir } from '../storage/private-files.ts';
import { kvFormat } from '../shared/kv/precision.ts';
import type { EngineManager } from './engine-manager.ts';
import { settingsProblems } from './settings-rules.ts';
import type { Tasks } from './tasks.ts';

export interface ModelsServiceOptions {
  /** Where downloads go. */
  downloadDir: string;
  /** Discovery roots (home, env, known places): tests point them at fake trees. */
  discovery?: Omit<DiscoveryOptions, 'folders' | 'files' | 'downloadFolder' | 'cache'>;
  /** Free and total memory for the estimate (tests). */
  memory?: { free(): number; total(): number };
  /** Extra hosts downloads may start at (tests use a server on 127.0.0.1). */
  allowedHosts?: string[];
}

export class ModelsService {
  private models: ModelEntry[] | null = null;
  private scanning: Promise<ModelEntry[]> | null = null;
  private readonly headerCache: HeaderCache = new Map();

  constructor(
    private readonly storage: Storage,
    private readonly engine: EngineManager,
    private readonly tasks: Tasks,
    private readonly bus: EventBus,
    private readonly o: ModelsServiceOptions,
  ) {
    privateDir(o.downloadDir);
  }

  async list(): Promise<ModelEntry[]> {
    return this.models ?? this.rescan();
  }

  async rescan(): Promise<ModelEntry[]> {
    if (this.scanning) return this.scanning;
    this.scanning = (async () => {
      const r = await discoverModels({
        ...this.o.discovery,
        folders: this.storage.models.folders(),
        files: this.storage.models.files().map((f) => f.path),
        downloadFolder: this.o.downloadDir,
        cache: this.headerCache,
      });
      // Only the contract's fields go to the UI.
      this.models = r.models.map((m) => ModelEntryOnly(m));
      this.bus.emit('models.changed', this.models);
      return this.models;
    })();
    try {
      return await this.scanning;
    } finally {
      this.scanning = null;
    }
  }

  async get(modelId: string): Promise<ModelEntry> {
    let m = (await this.list()).find((x) => x.id === modelId);
    if (!m) m = (await this.rescan()).find((x) => x.id === modelId);
    if (!m) throw new ApiError('MODEL_NOT_FOUND', 'that model is no longer on disk: choose another one');
    return m;
  }

  /** Adds a GGUF file by path (it stays where it is). */
  async add(path: string): Promise<ModelEntry> {
    const m = await describeModelFile(path, { source: 'added', cache: this.headerCache });
    if (m.error) throw new ApiError('MODEL_UNREADABLE', `${path}: ${m.error}`);
    this.storage.models.addFile(path, 'added');
    await this.rescan();
    return ModelEntryOnly(m);
  }

  catalog(): CatalogEntry[] {
    return [...CATALOG];
  }

  /** Starts a download; progress comes as task events; the model appears in the list when it is done. */
  download(params: Params<'models.download'>): Result<'models.download'> {
    const catalog = 'catalogId' in params ? catalogEntry(params.catalogId) : undefined;
    const url = 'url' in params ? params.url : catalog!.url;
    const { taskId } = this.tasks.start('download', null, async (task) => {
      const r = await downloadModel({
        url,
        catalog,
        destDir: this.o.downloadDir,
        signal: task.signal,
        allowedHosts: this.o.allowedHosts ? ['huggingface.co', 'hf.co', ...this.o.allowedHosts] : undefined,
        onProgress: (p) =>
          task.progress(
            'download',
            p.bytes,
            p.total ?? p.bytes,
            p.total ? `downloading: ${((100 * p.bytes) / p.total).toFixed(0)}%` : 'downloading',
          ),
      });
      this.storage.models.addFile(r.path, 'download');
      await this.rescan();
      return r;
    });
    return { taskId };
  }

  async estimate(params: Params<'models.estimate'>): Promise<MemoryEstimate> {
    const m = await this.get(params.modelId);
    const s = this.storage.settings.get();
    const e = await estimateForFile(m.path, {
      nCtx: params.nCtx ?? s.nCtx ?? undefined,
      compression: params.compression ?? s.compression,
      kv: kvFormat(s),
      ...this.memorySource(),
    });
    const { weightBytes, kvBytesFull, kvBytesCompressed, workingBytes, totalBytes, availableBytes, fits, message } = e;
    return { weightBytes, kvBytesFull, kvBytesCompressed, workingBytes, totalBytes, availableBytes, fits, message };
  }

  /** What the model must fit in: the GPU's memory where the engine computes on one, else the machine's. */
  private memorySource(): { memory?: { free(): number; total(): number }; memoryName?: string } {
    if (this.o.memory) return { memory: this.o.memory };
    const gpu = this.engine.gpu();
    if (!gpu) return {};
    return {
      memory: { free: () => gpu.freeBytes, total: () => gpu.totalBytes },
      memoryName: `the ${gpu.name}'s memory`,
    };
  }

  /**
   * Makes a model the chat model: checks that it fits in memory and that the settings work with it (a
   * context beyond its trained one is refused, as settings.update refuses it), then loads it in the engine.
   */
  async select(modelId: string): Promise<EngineStatus> {
    const m = await this.get(modelId);
    if (!m.supported) throw new ApiError('UNSUPPORTED_MODEL', `${m.name}: ${m.unsupportedReason}`);
    const [problem, ...more] = settingsProblems(this.storage.settings.get(), {
      name: m.name,
      contextLength: m.contextLength,
    });
    if (problem)
      throw new ApiError(
        'INVALID_SETTING',
        `${m.name} cannot be used with the current settings (${problem.field}: ${problem.message}): change it in Settings, or reset the settings to their defaults, and choose the model again`,
        { field: problem.field, problems: [problem, ...more] },
      );
    const e = await this.estimate({ modelId });
    if (!e.fits) throw new ApiError('MODEL_TOO_LARGE', e.message, e);
    await this.tasks.run('load-model', null, async (task) => {
      task.progress('load-model', 0, 1, `loading ${m.name}`);
      await this.engine.ensureModel(m.id, m.path);
      task.progress('load-model', 1, 1, `${m.name} is ready`);
    });
    this.storage.settings.update({ modelId: m.id });
    return this.engine.status();
  }
}

/** A discovered model reduced to the contract's fields (the contract's schema drops the others). */
function ModelEntryOnly(m: Omit<ModelEntry, 'unsupportedReason'> & { unsupportedReason?: string | null }): ModelEntry {
  const unsupportedReason = m.supported ? null : (m.unsupportedReason ?? m.error ?? 'Folio cannot run this model');
  return ModelEntry.parse({ ...m, unsupportedReason });
}
