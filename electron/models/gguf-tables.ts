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

/** Architectures Folio's engine runs (docs/architecture.md, "model"). */
export const SUPPORTED_ARCHITECTURES: readonly string[] = ['llama', 'qwen2', 'qwen3', 'qwen3moe', 'phi3', 'gemma3'];

/** What the metadata rules read of a header: each key's value and its value type. */
export interface GgufMetadataView {
  metadata: Map<string, unknown>;
  types: Map<string, { type: number; elementType?: number }>;
}
