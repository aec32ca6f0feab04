// The typed face of native/folio.node. Everything the addon exports is declared here, once.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Errors thrown by the addon carry a stable code (GGUF_TRUNCATED, UNSUPPORTED_ARCH, ...). */
export interface EngineError extends Error {
  code: string;
}

/** Kernel-level entry points, used by the tests to check every ISA against the scalar reference. */
export interface OpsBinding {
  /** ISAs compiled in and supported by this CPU, e.g. ['scalar', 'avx2', 'avx512']. */
  isas(): string[];
  /** The ISA the engine uses by default. */
  bestIsa(): string;
  /** ggml type id of the activations a weight type's dot product consumes. */
  vecDotType(type: number): number;
  /** Dequantizes `n` elements of `type` from `data`. */
  dequantize(type: number, data: Uint8Array, n: number, isa?: string): Float32Array;
  /** Quantizes `x` into `type` (reference quantization; the fast path for activation types). */
  quantize(type: number, x: Float32Array, isa?: string): Uint8Array;
  /** Σ w·x: `w` holds n elements of `type`, `x` n elements of vecDotType(type) (already quantized). */
  vecDot(type: number, w: Uint8Array, x: Uint8Array, n: number, isa?: string): number;
}

export interface VocabInfo {
  /** tokenizer.ggml.model: 'llama' (SentencePiece), 'gpt2' (byte-level BPE), ... */
  model: string;
  /** tokenizer.ggml.pre: 'default', 'llama-bpe', 'qwen2', ... */
  pre: string;
  nTokens: number;
  bos: number;
  eos: number;
  /** -1 when the vocabulary has none. */
  eot: number;
  unk: number;
  pad: number;
  addBos: boolean;
  addEos: boolean;
}

export interface Vocab {
  info(): VocabInfo;
  tokenize(text: string, opts?: { addSpecial?: boolean; parseSpecial?: boolean }): Int32Array;
  /** The bytes of one token (special tokens rendered only when `special`). */
  tokenToPiece(id: number, special?: boolean): Uint8Array;
  /** Text of a token sequence; bytes that do not form valid UTF-8 become U+FFFD. */
  detokenize(ids: ArrayLike<number>, opts?: { special?: boolean }): string;
}

export interface FolioAddon {
  napiVersion: number;
  ops: OpsBinding;
  /** Opens the tokenizer of a GGUF file (a model or a vocabulary-only file) without loading weights. */
  openVocab(path: string): Vocab;
}

const require = createRequire(import.meta.url);
let cached: FolioAddon | undefined;

/** Path of the built addon: $FOLIO_ADDON, or native/build/Release/folio.node. */
export function addonPath(): string {
  return process.env.FOLIO_ADDON ?? fileURLToPath(new URL('../../native/build/Release/folio.node', import.meta.url));
}

export function loadAddon(): FolioAddon {
  if (cached) return cached;
  const path = addonPath();
  if (!existsSync(path)) {
    throw new Error(`the native engine is not built (${path} is missing): run \`npm install\` or \`npm run build:native\``);
  }
  cached = require(path) as FolioAddon;
  return cached;
}
