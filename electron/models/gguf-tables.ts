// The numbers and names of GGUF the header reader and the metadata rules share (a module of its own so
// neither imports the other).

/** GGUF metadata value types, as numbered in the file. */
export const GGUF_VALUE_TYPE = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

// What Folio's engine opens, for reading a header without the engine (the app's main process does not load
// it): the engine's own lists (capabilities() in native/src/napi/model.cc) are held equal to these by
// test/capabilities.test.ts.

/** Architectures Folio's engine runs (docs/architecture.md, "model"). */
export const SUPPORTED_ARCHITECTURES: readonly string[] = ['llama', 'qwen2', 'qwen3', 'qwen3moe', 'phi3', 'gemma3'];

/** Tensor types Folio's engine has kernels for, by their ggml names (gguf-header.ts: GGML_TYPES). */
export const SUPPORTED_TENSOR_TYPES: readonly string[] = [
  'F32',
  'F16',
  'Q4_0',
  'Q4_1',
  'Q5_0',
  'Q5_1',
  'Q8_0',
  'Q2_K',
  'Q3_K',
  'Q4_K',
  'Q5_K',
  'Q6_K',
  'IQ4_NL',
  'IQ4_XS',
  'BF16',
];

/** What the metadata rules read of a header: each key's value and its value type. */
export interface GgufMetadataView {
  metadata: Map<string, unknown>;
  types: Map<string, { type: number; elementType?: number }>;
}
