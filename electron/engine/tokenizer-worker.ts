// A worker thread of the engine host that tokenizes and detokenizes long texts, so that a book-length
// document (about 0.2 s per MB of text on a small vocabulary) never blocks the host's event loop, where
// cancellations, progress and tokens of running operations pass. It opens the model file's vocabulary
// (openVocab: the tokenizer alone, no weights), which tokenizes exactly as the loaded model does.
import { parentPort } from 'node:worker_threads';

import { loadAddon, type Vocab } from './binding.ts';
import { PieceLengths, specialIdsOfVocab, tokenizeWithPieces } from './tokenize.ts';

export type WorkerRequest =
  | { id: number; op: 'tokenize'; path: string; text: string; addSpecial?: boolean; parseSpecial?: boolean }
  | { id: number; op: 'detokenize'; path: string; tokens: Int32Array | number[]; special?: boolean }
  | { id: number; op: 'forget'; path: string };

/** A request without its id (Omit over each member of the union). */
export type WorkerCall = WorkerRequest extends infer R ? (R extends WorkerRequest ? Omit<R, 'id'> : never) : never;

export type WorkerReply =
  | { id: number; ok: true; tokens?: Int32Array; pieceBytes?: Int32Array; text?: string }
  | { id: number; ok: false; code: string; message: string };

const port = parentPort;
if (!port) throw new Error('tokenizer-worker.ts runs as a worker thread of the engine host');

const vocabs = new Map<string, { vocab: Vocab; pieces: PieceLengths }>();

function open(path: string) {
  let v = vocabs.get(path);
  if (!v) {
    const vocab = loadAddon().openVocab(path);
    v = { vocab, pieces: new PieceLengths(vocab, specialIdsOfVocab(vocab)) };
    vocabs.set(path, v);
  }
  return v;
}

port.on('message', (m: WorkerRequest) => {
  try {
    if (m.op === 'forget') {
      vocabs.delete(m.path);
      port.postMessage({ id: m.id, ok: true } satisfies WorkerReply);
    } else if (m.op === 'tokenize') {
      const v = open(m.path);
      const r = tokenizeWithPieces(v.vocab, v.pieces, m.text, m);
      port.postMessage({ id: m.id, ok: true, ...r } satisfies WorkerReply, [
        r.tokens.buffer as ArrayBuffer,
        r.pieceBytes.buffer as ArrayBuffer,
      ]);
    } else {
      const text = open(m.path).vocab.detokenize(m.tokens, { special: m.special ?? false });
      port.postMessage({ id: m.id, ok: true, text } satisfies WorkerReply);
    }
  } catch (e) {
    const err = e as { code?: unknown; message?: unknown };
    port.postMessage({
      id: m.id,
      ok: false,
      code: typeof err.code === 'string' ? err.code : 'INTERNAL',
      message: String(err.message ?? e),
    } satisfies WorkerReply);
  }
});
