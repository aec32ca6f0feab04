// Reading a document into the model: the one way the app's documents, `folio chat` and `folio compress` turn
// pages into a compressed session, so that the command line reads a file exactly as the app does. The pages
// become the prefix (prefix.ts: the system prompt and the pages in the model's chat format, mapped back to
// pages), the read is planned (read-plan.ts: the context, one pass or chunks, the document's own positions or
// re-based), a session of that context is made and the prefix is compressed into it with the settings'
// options. The session is the caller's once this returns.
import type { CompressionSettings } from '../api/contract.ts';
import type { RequestOptions } from '../engine/client.ts';
import type { CompressionStats } from '../engine/protocol.ts';
import { shapeFromInfo } from '../models/estimate.ts';
import type { KvFormat } from '../shared/kv/precision.ts';
import { compressOptionsFor } from '../shared/kv/budget.ts';
import type { EngineManager, LoadedModel } from './engine-manager.ts';
import { type DocumentPrefix, documentPrefix } from './prefix.ts';
import { planRead, type ReadPlan } from './read-plan.ts';

export interface ReadRequest {
  model: LoadedModel;
  pages: readonly { page: number; text: string }[];
  systemPrompt: string;
  compression: CompressionSettings;
  kv: KvFormat;
  /** The settings' context cap (null: the model's own, up to DEFAULT_CONTEXT_TOKENS). */
  contextCap: number | null;
  /** The settings' room for the conversation (null: the default). */
  conversationRoom: number | null;
  /** By hand, as the command line allows: a chunk size (0: one pass) and re-based positions. */
  chunk?: 'auto' | number;
  rebase?: boolean;
  /** Measure the attention output's L1 change per layer (slower). */
  measureLoss?: boolean;
  /** A chunked read saves where it stands here, and a read of the same tokens resumes from it. */
  checkpoint?: { path: string; seconds?: number };
  signal?: AbortSignal;
  onProgress?: RequestOptions['onProgress'];
  /** Called once the prefix and the plan are known, before anything is read (the app records the read). */
  onPlanned?: (prefix: DocumentPrefix, plan: ReadPlan) => Promise<void> | void;
  /** Called once the read is compressed, at the document's own positions, before a packed read packs them:
   * the app saves its cache here, so that a saved cache can always be placed beside others. */
  onCompressed?: (read: { sessionId: string; stats: CompressionStats }) => Promise<void>;
}

export interface DocumentRead {
  prefix: DocumentPrefix;
  plan: ReadPlan;
  /** The compressed session, the caller's to keep or dispose. */
  sessionId: string;
  nCtx: number;
  nPast: number;
  stats: CompressionStats;
}

export async function readDocument(engine: EngineManager, r: ReadRequest): Promise<DocumentRead> {
  const format = await engine.chatFormat(r.model);
  const prefix = await documentPrefix(
    (text, o) => engine.call('tokenize', { modelId: r.model.engineId, text, ...o }, { signal: r.signal }),
    format,
    r.systemPrompt,
    r.pages,
  );
  const plan = planRead({
    prefixTokens: prefix.tokenized.tokens.length,
    shape: shapeFromInfo(r.model.info),
    compression: r.compression,
    kv: r.kv,
    contextCap: r.contextCap,
    conversationRoom: r.conversationRoom,
  });
  await r.onPlanned?.(prefix, plan);
  const handle = await engine.createSession(r.model, { ...engine.sessionOptions(), nCtx: plan.nCtx });
  try {
    const c = r.compression;
    const compressed = await engine.call(
      'compress',
      {
        sessionId: handle.sessionId,
        tokens: prefix.tokenized.tokens,
        options: {
          ...compressOptionsFor(c.method, plan.budget ?? c.budget, c),
          measureLoss: r.measureLoss,
          chunk: r.chunk ?? plan.chunk,
          rebase: plan.rebase || !!r.rebase,
          room: plan.room,
          checkpoint: r.checkpoint?.path,
          checkpointSeconds: r.checkpoint?.seconds,
        },
      },
      { signal: r.signal, onProgress: r.onProgress },
    );
    let { stats, nPast } = compressed;
    await r.onCompressed?.({ sessionId: handle.sessionId, stats });
    // Packed after the read (and after the app saved it at its own positions): each head's kept entries end
    // together, the document taking as many positions as its fullest head keeps. A re-based read is already so.
    if (plan.pack && !stats.rebased) {
      nPast = (await engine.call('packSpan', { sessionId: handle.sessionId, from: 0, to: nPast })).nPast;
      stats = { ...stats, positions: nPast, rebased: true };
    }
    return { prefix, plan, sessionId: handle.sessionId, nCtx: handle.nCtx, nPast, stats };
  } catch (e) {
    await engine.disposeSession(handle.sessionId);
    throw e;
  }
}
