// What the parts of the documents service share (documents.ts composes them): the library's storage, the
// engine and the tasks, the files of failed imports held for trying again, and the rules that say whether a
// saved cache still fits the settings, where a read saves where it stands and what context a document's
// sessions get.
import { createHash } from 'node:crypto';
import { join } from 'node:path';

import {
  ApiError,
  type CompressionSettings,
  type OcrChoice,
  type OcrPages,
  type Settings,
} from '../../api/contract.ts';
import { aborted } from '../../documents/errors.ts';
import type { EventBus } from '../../api/dispatcher.ts';
import { DEFAULT_BETA } from '../../shared/kv/budget.ts';
import { methodRow } from '../../shared/kv/methods.ts';
import type { DocumentRecord, Storage } from '../../storage/index.ts';
import type { DocumentFiles } from '../document-files.ts';
import { kvFormat, kvFormatName } from '../../shared/kv/precision.ts';
import type { EngineManager, LoadedModel } from '../engine-manager.ts';
import type { ModelsService } from '../models-service.ts';
import type { Tasks } from '../tasks.ts';

export interface DocumentsContext {
  storage: Storage;
  engine: EngineManager;
  models: ModelsService;
  tasks: Tasks;
  bus: EventBus;
  /** The imported originals, which the document view shows. */
  files?: DocumentFiles;
  /** Where the compressed caches are saved. */
  cacheDir: string;
  /** Where the user adds OCR languages (documents/ocr.ts ocrLanguages); none: English only. */
  ocrLanguagesDir?: string;
  /** An import stops for the choice of pages when its OCR would take longer than this (seconds). */
  ocrAskOverSeconds: number;
  /** The imports waiting for that choice. */
  ocrChoices: OcrChoices;
  /** How often a chunked read saves where it stands (seconds). */
  checkpointSeconds: number;
  held: HeldFiles;
  /** Tells the UI a document's new state (documents.changed). */
  changed(documentId: string): void;
}

/** Files of failed imports held in memory so that trying again (or a password) can read them: at most this many. */
const MAX_HELD_FILES = 4;

/**
 * The files of imports that failed while reading them, by document, for as long as trying again can help (a
 * cancel, a password): in memory only, never written anywhere, the oldest let go past MAX_HELD_FILES. A
 * password is never held.
 */
export class HeldFiles {
  private readonly files = new Map<string, { fileName: string; bytes: Uint8Array }>();

  has(documentId: string): boolean {
    return this.files.has(documentId);
  }

  get(documentId: string): { fileName: string; bytes: Uint8Array } | undefined {
    return this.files.get(documentId);
  }

  delete(documentId: string): void {
    this.files.delete(documentId);
  }

  /** Holds a file being imported; returns the documents whose files were let go to make room. */
  hold(documentId: string, fileName: string, bytes: Uint8Array): string[] {
    this.files.delete(documentId);
    this.files.set(documentId, { fileName, bytes });
    const dropped: string[] = [];
    for (const id of this.files.keys()) {
      if (this.files.size <= MAX_HELD_FILES) break;
      this.files.delete(id);
      dropped.push(id);
    }
    return dropped;
  }
}

/**
 * The imports that stopped before a long OCR, waiting for the user's choice of pages (documents.chooseOcrPages), by
 * document: in memory, as the import's task is (a quit ends both; the document is then a failed import).
 */
export class OcrChoices {
  private readonly waits = new Map<string, { choice: OcrChoice; answer: (pages: OcrPages) => void }>();

  /** What the import of the document waits on, if it does. */
  get(documentId: string): OcrChoice | undefined {
    return this.waits.get(documentId)?.choice;
  }

  /** Waits for the answer; rejects with ABORTED when `signal` fires first (the import was cancelled). */
  wait(documentId: string, fileName: string, choice: OcrChoice, signal: AbortSignal): Promise<OcrPages> {
    return new Promise<OcrPages>((resolve, reject) => {
      const onAbort = () => {
        this.waits.delete(documentId);
        reject(aborted(signal, fileName));
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.waits.set(documentId, {
        choice,
        answer: (pages) => {
          signal.removeEventListener('abort', onAbort);
          this.waits.delete(documentId);
          resolve(pages);
        },
      });
    });
  }

  /** Answers the document's wait; false when it waits for nothing. */
  answer(documentId: string, pages: OcrPages): boolean {
    const w = this.waits.get(documentId);
    w?.answer(pages);
    return !!w;
  }
}

/** Where a document's read saves where it stands, so that a crash or a quit does not lose it. */
/** Where an import keeps the pages OCR recognised until the import is stored (documents/ocr.ts OcrCache). */
export function ocrCacheDir(cacheDir: string): string {
  return join(cacheDir, 'ocr');
}

export function checkpointPath(cacheDir: string, documentId: string): string {
  return join(cacheDir, `${documentId}.reading`);
}

/** The saved cache was made with the chosen model and the current compression settings and system prompt. */
export function cacheMatches(s: Settings, d: DocumentRecord, modelId: string | null = s.modelId): boolean {
  return (
    d.modelId === modelId &&
    sameCompression(d.compression, s.compression) &&
    (d.prefixKey === null || d.prefixKey === prefixKey(s))
  );
}

/**
 * What a compressed prefix was made from besides the document and the model: the system prompt, and the cache's
 * precision where it is not f16 (so that the keys of caches saved before there was a choice still hold).
 */
export function prefixKey(s: Pick<Settings, 'systemPrompt' | 'kvType' | 'kvTypeV' | 'kvRotate'>): string {
  const precision = kvFormatName(kvFormat(s));
  return createHash('sha256')
    .update(precision === 'f16' ? s.systemPrompt : `${s.systemPrompt}\0${precision}`)
    .digest('hex')
    .slice(0, 32);
}

function sameCompression(a: CompressionSettings | null, b: CompressionSettings): boolean {
  const pyramid = !!a && methodRow(a.method).schedule === 'pyramid';
  return (
    !!a &&
    a.method === b.method &&
    (a.method === 'full' ||
      (a.budget === b.budget &&
        a.alpha === b.alpha &&
        a.window === b.window &&
        a.kernel === b.kernel &&
        (a.positions ?? 'auto') === (b.positions ?? 'auto') &&
        (!pyramid || (a.beta ?? DEFAULT_BETA) === (b.beta ?? DEFAULT_BETA))))
  );
}

/** The model the documents are compressed for, loaded. */
export async function chatModel(ctx: Pick<DocumentsContext, 'storage' | 'models' | 'engine'>): Promise<LoadedModel> {
  const s = ctx.storage.settings.get();
  if (!s.modelId) throw new ApiError('NO_MODEL', 'choose a model first');
  const entry = await ctx.models.get(s.modelId);
  return ctx.engine.ensureModel(entry.id, entry.path);
}

/** A document's sessions get the context it was read into. */
export function documentSessionOptions(engine: EngineManager, doc: DocumentRecord) {
  const opts = engine.sessionOptions();
  return doc.contextTokens ? { ...opts, nCtx: doc.contextTokens } : opts;
}
