// What the inspector shows of a document's compression: the positions one KV head kept (from the saved cache,
// nothing loaded), the retention map folded onto sentences, and two methods side by side at one budget.
import { existsSync } from 'node:fs';

import {
  ApiError,
  compareCounterpart,
  type CompressionMethod,
  type CompressionStats,
  type DocumentDetail,
  type DocumentPage,
  type Params,
  type Result,
} from '../../api/contract.ts';
import { passages as splitPassages } from '../../documents/index.ts';
import { readKeptPositions } from '../../engine/session-file.ts';
import { compressOptionsFor } from '../../shared/kv/budget.ts';
import { methodLabel } from '../../shared/kv/methods.ts';
import { pagesRead } from '../../shared/room.ts';
import { foldKeptPositions } from '../kept-positions.ts';
import type { Task } from '../tasks.ts';
import { chatModel, documentSessionOptions, type DocumentsContext } from './context.ts';

export class DocumentInspector {
  constructor(private readonly ctx: DocumentsContext) {}

  /**
   * The positions one KV head kept, read from the saved cache (not the engine's copy in memory, so nothing is
   * loaded), folded onto the pages read. Refused when there is no saved cache, when the read re-based the
   * positions (the cache no longer says which token an entry came from), or when the file does not match
   * the document's read.
   */
  async keptPositions(params: Params<'documents.keptPositions'>): Promise<Result<'documents.keptPositions'>> {
    const doc = this.ctx.storage.documents.require(params.documentId);
    const stats = this.ctx.storage.stats.get(doc.id);
    const charMap = this.ctx.storage.documents.charMap(doc.id);
    const tokens = this.ctx.storage.documents.tokens(doc.id);
    if (!doc.kvPath || !existsSync(doc.kvPath) || !stats || !charMap || !tokens)
      throw new ApiError('DOCUMENT_NOT_READY', 'the document has no saved cache yet: compress it first');
    const { layer, head } = params;
    if (layer >= stats.layers.length || head >= (stats.layers[layer]?.heads.length ?? 0))
      throw new ApiError(
        'BAD_REQUEST',
        `the cache has ${stats.layers.length} layers of ${stats.layers[0]?.heads.length ?? 0} KV heads: there is no layer ${layer}, head ${head}`,
      );
    if (stats.rebased)
      throw new ApiError(
        'NOT_AVAILABLE',
        'this document was read with re-based (or packed) positions, so its cache no longer says which token each entry came from: compress a range of pages that fits the context, with the document positions set to "own" in Settings, to see them',
      );
    const { header, positions } = await readKeptPositions(doc.kvPath, layer, head);
    if (header.tokens !== tokens.length || header.layers !== stats.layers.length)
      throw new ApiError(
        'SESSION_FILE_CORRUPT',
        'the saved cache does not match the document as it was read: compress it again to rebuild it',
      );
    return foldKeptPositions({
      layer,
      head,
      positions,
      charMap,
      pages: pagesRead(this.ctx.storage.documents.pages(doc.id), doc.readPages),
      prefixTokens: stats.prefixTokens,
      window: stats.compressed ? stats.window : 0,
    });
  }

  /** Two methods at the same budget, on fresh sessions (nothing is saved): by default the document's method
   * and its counterpart. */
  async compare(params: Params<'documents.compare'>): Promise<Result<'documents.compare'>> {
    const doc = this.ctx.storage.documents.require(params.documentId);
    const tokens = this.ctx.storage.documents.tokens(doc.id);
    if (!tokens || tokens.length === 0) throw new ApiError('DOCUMENT_NOT_READY', 'the document has not been read yet');
    const model = await chatModel(this.ctx);
    const c = this.ctx.storage.settings.get().compression;
    const budget = params.budget ?? c.budget;
    const a = params.a ?? doc.compression?.method ?? c.method;
    const b = params.b ?? compareCounterpart(a);
    // Read as the document was: into its context, in one pass or in chunks, re-based or not.
    const read = this.ctx.storage.stats.get(doc.id);
    const how = read ? { chunk: read.chunks > 1 ? ('auto' as const) : 0, rebase: read.rebased } : {};
    const run = async (method: CompressionMethod, task: Task) => {
      const h = await this.ctx.engine.createSession(model, documentSessionOptions(this.ctx.engine, doc));
      try {
        const r = await this.ctx.engine.call(
          'compress',
          {
            sessionId: h.sessionId,
            tokens,
            options: { ...compressOptionsFor(method, budget, c), ...how },
          },
          {
            signal: task.signal,
            onProgress: (d, t) => task.progress('compare', d, t, `${methodLabel(method)} at ${budget}`),
          },
        );
        return { ...r.stats, tokenRetention: Array.from(r.stats.tokenRetention) };
      } finally {
        await this.ctx.engine.disposeSession(h.sessionId);
      }
    };
    return this.ctx.tasks.run('compare', doc.id, async (task) => ({
      budget,
      a: await run(a, task),
      b: await run(b, task),
    }));
  }
}

/**
 * The retention map folded onto sentences of each page read. The observation window (the read's last
 * `window` tokens, kept by every head whatever the scores) is left out of the passages' means and reported
 * apart: otherwise the ending reads as the part the model found most important.
 */
export function retentionMap(
  map: Int32Array | null,
  pages: DocumentPage[],
  stats: CompressionStats | null,
): Pick<DocumentDetail, 'passages' | 'keptWindow'> {
  if (!stats || !map) return { passages: [], keptWindow: null };
  const slots = stats.layers.length * (stats.layers[0]?.heads.length ?? 1);
  const retention = stats.tokenRetention;
  const windowStart = stats.compressed ? Math.max(0, retention.length - stats.window) : retention.length;
  let keptWindow: DocumentDetail['keptWindow'] = null;
  for (let t = windowStart; t < retention.length && t * 3 < map.length && !keptWindow; t++)
    if (map[t * 3] > 0)
      keptWindow = { page: map[t * 3], start: map[t * 3 + 1], tokens: retention.length - windowStart };
  const passages: DocumentDetail['passages'] = [];
  for (const p of pages) {
    const ps = splitPassages(p.text, 'sentences');
    const sum = new Float64Array(ps.length),
      count = new Int32Array(ps.length);
    let k = 0;
    for (let t = p.tokenStart; t < p.tokenEnd && t < windowStart; t++) {
      if (map[t * 3] !== p.page) continue;
      const c = map[t * 3 + 1];
      while (k + 1 < ps.length && c >= ps[k].end) k++;
      sum[k] += retention[t] / slots;
      count[k]++;
    }
    ps.forEach((x, i) => {
      if (count[i] === 0) return;
      // A sentence the window begins in ends, for the map, where the window begins.
      const end = keptWindow?.page === p.page && keptWindow.start < x.end ? Math.max(x.start, keptWindow.start) : x.end;
      if (end > x.start)
        passages.push({ page: p.page, start: x.start, end, retention: Math.min(1, sum[i] / count[i]) });
    });
  }
  return { passages, keptWindow };
}
