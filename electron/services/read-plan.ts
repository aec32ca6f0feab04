// How the app reads a document into the model (docs/compression.md, "Reading a long document"): into which
// context, in one pass or in chunks, at the document's own positions or re-based. A pure function of the
// document's length, the model, the settings and the memory available, so it is tested with faked memory.
//
// - Positions: the context holds the prefix (system prompt, template and document) and room for the
//   conversation, up to the model's trained context (or the settings' cap, which may not exceed it).
// - One pass reads everything before compressing: the best scores, but the whole document's cache of one
//   layer, and its attention grows with the square of the length. It is used when the document fits the
//   positions, is at most ONE_PASS_MAX_TOKENS long and its estimate fits the memory.
// - Otherwise chunks: the cache never holds more than the budget plus one chunk and the time grows linearly.
// - A document longer than the positions is read in chunks with re-based positions (lower quality: the
//   model sees its kept entries as contiguous); the user is offered a page range that fits instead.
// - Packed positions (the settings' compression.positions): after the read the kept entries get contiguous
//   positions, so the document takes as many as the most entries a head keeps and the conversation the rest.
//   'auto' packs where positions, not memory, would end the chat: when the document at its own positions
//   leaves the conversation less than its room (conversationRoom: a quarter of the context, at most 1,024),
//   and compression keeps fewer entries than the document has.
// - The context: the largest, up to the model's, whose estimate (weights, the compressed document, a full
//   conversation to the end of the context, the working buffers) fits the memory. Our cache grows with what it
//   holds, so a larger context costs memory only as the conversation fills it.
import { ApiError, type CompressionSettings } from '../api/contract.ts';
import { defaultChunk, resolveBudget } from '../shared/kv/budget.ts';
import { estimateMemory, type ModelShape } from '../models/estimate.ts';
import type { KvFormat } from '../shared/kv/precision.ts';
import { conversationRoom, MIN_CONVERSATION_ROOM } from '../shared/room.ts';

/** Documents up to this many tokens are read in one pass when they fit; longer ones in chunks. */
export const ONE_PASS_MAX_TOKENS = 8192;

export interface ReadPlanInput {
  /** The prefix's tokens: system prompt, chat template and the document. */
  prefixTokens: number;
  shape: ModelShape;
  compression: CompressionSettings;
  kv: KvFormat;
  /** The settings' context cap (null: the model's own). */
  contextCap: number | null;
  /** The settings' room for the conversation (null: the default). */
  conversationRoom: number | null;
  memory?: { free(): number; total(): number };
}

export interface ReadPlan {
  /** The context the document session gets (positions). */
  nCtx: number;
  /** Positions kept free after the document. */
  room: number;
  /** 0: one pass; 'auto': chunks of the engine's size. */
  chunk: 0 | 'auto';
  rebase: boolean;
  /** Pack the kept entries' positions after the read (the engine's packPositions). */
  pack: boolean;
  /** A budget in tokens per head that replaces the settings' for this read: a re-based read keeps no more per
   * head than the positions left after a chunk and the room (undefined: the settings' budget). */
  budget?: number;
  /** What the app says about it, one sentence. */
  note: string;
  /** The memory estimate the choice was made on. */
  totalBytes: number;
  availableBytes: number;
}

/** The model's positions, or the settings' cap; a cap beyond the model's trained context is refused. */
export function maxPositions(shape: Pick<ModelShape, 'contextLength'>, cap: number | null): number {
  const trained = shape.contextLength ?? 4096;
  if (cap !== null && cap > trained)
    throw new ApiError(
      'CONTEXT_TOO_LONG',
      `a context of ${cap} tokens exceeds the model's trained context of ${trained}: choose ${trained} or less (or leave it empty for the model's own)`,
      { nCtx: cap, contextLength: trained },
    );
  return cap ?? trained;
}

export function planRead(i: ReadPlanInput): ReadPlan {
  const L = i.prefixTokens;
  const positions = maxPositions(i.shape, i.contextCap);
  let room = conversationRoom(positions, i.conversationRoom);
  // A document that fits but leaves less than that room is read at its own positions with what is left (the
  // conversation sets its oldest turns aside when it fills), rather than re-based.
  const shrunk = L + room > positions && L + Math.min(room, MIN_CONVERSATION_ROOM) <= positions;
  const fullRoom = room;
  if (shrunk) room = positions - L;
  // Packing frees positions only where compression keeps fewer entries than the document has.
  const choice = i.compression.positions ?? 'auto';
  const frees = resolveBudget(i.compression, L).compress;
  const pack = frees && (choice === 'packed' || (choice === 'auto' && (shrunk || L + room > positions)));
  const est = (nCtx: number, chunked: boolean) =>
    estimateMemory(i.shape, {
      nCtx,
      conversationTokens: Math.max(0, nCtx - Math.min(L, nCtx)),
      compression: i.compression,
      kv: i.kv,
      memory: i.memory,
      chunkTokens: chunked ? chunkFor(i, nCtx) : undefined,
    });

  if (L + room > positions) {
    const e = est(positions, true);
    if (!e.fits) throw notEnoughMemory(e.message);
    // Kept entries beyond the free positions would share the oldest position: keep no more than fit.
    const resolved = resolveBudget(i.compression, L);
    const fitting = positions - room - chunkFor(i, positions);
    const budget = resolved.compress && resolved.B > fitting && fitting > i.compression.window ? fitting : undefined;
    return {
      nCtx: positions,
      room,
      chunk: 'auto',
      rebase: true,
      pack,
      budget,
      note:
        `The document (${count(L)} tokens with the system prompt, and ${count(room)} kept for the conversation) does not fit ` +
        `the model's context of ${count(positions)}: ` +
        `it was read in chunks with re-based positions, which answers less accurately than a document that fits` +
        (budget ? `, keeping ${count(budget)} tokens per head (what the positions hold)` : '') +
        (pack ? '; its kept entries then took only the positions they need' : '') +
        `. ` +
        `Compressing a range of pages that fits avoids that.`,
      totalBytes: e.totalBytes,
      availableBytes: e.availableBytes,
    };
  }
  // The largest context from L + room up that fits, read in one pass if that fits too, else in chunks.
  const onePass = L <= ONE_PASS_MAX_TOKENS && est(L + room, false).fits;
  const chunked = !onePass;
  const fits = (n: number) => est(n, chunked).fits;
  if (!fits(L + room)) throw notEnoughMemory(est(L + room, chunked).message);
  let lo = L + room;
  let hi = positions;
  if (fits(hi)) lo = hi;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  const e = est(lo, chunked);
  const memoryNote =
    (lo < positions ? `; the context is ${count(lo)} positions, what the memory allows` : '') +
    (shrunk && !pack
      ? `; it leaves ${count(room)} positions for the conversation, whose older turns are compressed (or set aside) when it fills`
      : '');
  // What packing did and costs, after why it was done.
  const packed = (its: string, why: string) =>
    `${its} kept entries were packed into contiguous positions${why}, so the conversation has what compression ` +
    'freed; answers are somewhat less accurate, and their page chips come from the words they share with the ' +
    'pages, not from the model’s attention.';
  const packNote = !pack
    ? ''
    : choice === 'packed'
      ? ` ${packed('Its', ' (the settings ask for it)')}`
      : ` At its own positions it would leave the conversation ${count(positions - L)} of ${count(positions)} positions, less than its room of ${count(fullRoom)}: ${packed('its', '')}`;
  return {
    nCtx: lo,
    room,
    chunk: chunked ? 'auto' : 0,
    rebase: false,
    pack,
    note:
      (chunked
        ? `Read in chunks, each compressed as it came, so that the cache never held more than the budget and one chunk (${
            L > ONE_PASS_MAX_TOKENS
              ? `the document is longer than ${count(ONE_PASS_MAX_TOKENS)} tokens`
              : 'one pass would not fit the memory'
          })${memoryNote}.`
        : `Read in one pass, then compressed${memoryNote}.`) + packNote,
    totalBytes: e.totalBytes,
    availableBytes: e.availableBytes,
  };
}

/** The chunk the engine will take (the engine's rule, electron/shared/kv/budget.ts). */
function chunkFor(i: ReadPlanInput, nCtx: number): number {
  const r = resolveBudget(i.compression, i.prefixTokens);
  return defaultChunk(r.B, nCtx);
}

function notEnoughMemory(message: string): ApiError {
  return new ApiError('NOT_ENOUGH_MEMORY', `the document cannot be read: it ${message}`);
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}
