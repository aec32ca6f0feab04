// The metadata keys the engine reads, with the kind of value each must hold: the TypeScript copy of
// native/src/gguf/metadata-rules.cc, applied to a header so that the models page flags a file with a
// wrong-typed key (the reason names the key, the type found and the type expected) before a load is tried.
// The engine refuses the same files with the same message; test/gguf-rules.test.ts holds this table to the
// addon's (ggufMetadataRules) and feeds the same wrong-typed files to both.
import { GGUF_VALUE_TYPE, type GgufMetadataView, SUPPORTED_ARCHITECTURES } from './gguf-tables.ts';

/** What a key must hold (gguf::Kind in native/src/gguf/gguf.h, spelled as gguf::kind_name spells it). */
export type MetadataKind = 'string' | 'integer' | 'number' | 'bool' | 'string array' | 'integer array' | 'number array';

export interface MetadataRule {
  /** "{arch}." stands for the value of general.architecture. */
  key: string;
  kind: MetadataKind;
}

const ARCH_PREFIX = '{arch}.';

const TOKEN_ID_KEYS = [
  'bos',
  'eos',
  'eot',
  'eom',
  'unknown',
  'seperator',
  'padding',
  'mask',
  'fim_pre',
  'fim_suf',
  'fim_mid',
  'fim_pad',
  'fim_rep',
  'fim_sep',
  'prefix',
  'suffix',
  'middle',
].map((name): MetadataRule => ({ key: `tokenizer.ggml.${name}_token_id`, kind: 'integer' }));

/** In the native table's order (general, {arch}, tokenizer). */
export const METADATA_RULES: readonly MetadataRule[] = [
  { key: 'general.architecture', kind: 'string' },
  { key: 'general.name', kind: 'string' },
  { key: 'general.file_type', kind: 'integer' },
  { key: 'split.count', kind: 'integer' },
  { key: '{arch}.context_length', kind: 'integer' },
  { key: '{arch}.embedding_length', kind: 'integer' },
  { key: '{arch}.block_count', kind: 'integer' },
  { key: '{arch}.feed_forward_length', kind: 'integer' },
  { key: '{arch}.vocab_size', kind: 'integer' },
  { key: '{arch}.attention.head_count', kind: 'integer' },
  { key: '{arch}.attention.head_count_kv', kind: 'integer' },
  { key: '{arch}.attention.key_length', kind: 'integer' },
  { key: '{arch}.attention.value_length', kind: 'integer' },
  { key: '{arch}.attention.layer_norm_rms_epsilon', kind: 'number' },
  { key: '{arch}.rope.dimension_count', kind: 'integer' },
  { key: '{arch}.rope.freq_base', kind: 'number' },
  { key: '{arch}.rope.scaling.type', kind: 'string' },
  { key: '{arch}.rope.scaling.factor', kind: 'number' },
  { key: '{arch}.rope.scaling.attn_factor', kind: 'number' },
  { key: '{arch}.rope.scaling.original_context_length', kind: 'integer' },
  { key: '{arch}.attention.sliding_window', kind: 'integer' },
  { key: '{arch}.expert_count', kind: 'integer' },
  { key: '{arch}.expert_used_count', kind: 'integer' },
  { key: '{arch}.expert_feed_forward_length', kind: 'integer' },
  { key: 'tokenizer.ggml.model', kind: 'string' },
  { key: 'tokenizer.ggml.pre', kind: 'string' },
  { key: 'tokenizer.ggml.tokens', kind: 'string array' },
  { key: 'tokenizer.ggml.scores', kind: 'number array' },
  { key: 'tokenizer.ggml.token_type', kind: 'integer array' },
  { key: 'tokenizer.ggml.merges', kind: 'string array' },
  { key: 'tokenizer.ggml.add_space_prefix', kind: 'bool' },
  { key: 'tokenizer.ggml.add_bos_token', kind: 'bool' },
  { key: 'tokenizer.ggml.add_eos_token', kind: 'bool' },
  { key: 'tokenizer.ggml.add_sep_token', kind: 'bool' },
  ...TOKEN_ID_KEYS,
  { key: 'tokenizer.chat_template', kind: 'string' },
];

const KIND_DESCRIPTION: Record<MetadataKind, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  bool: 'a bool',
  'string array': 'an array of strings',
  'integer array': 'an array of integers',
  'number array': 'an array of numbers',
};

/** A GGUF value type's name as the engine's value_type_name spells it. */
function valueTypeName(type: number): string {
  return (
    Object.entries(GGUF_VALUE_TYPE)
      .find(([, id]) => id === type)?.[0]
      .toLowerCase() ?? 'unknown'
  );
}

const INT64_MAX = 2n ** 63n - 1n;
const isInteger = (t: number) =>
  t <= GGUF_VALUE_TYPE.INT32 || t === GGUF_VALUE_TYPE.UINT64 || t === GGUF_VALUE_TYPE.INT64;
const isFloat = (t: number) => t === GGUF_VALUE_TYPE.FLOAT32 || t === GGUF_VALUE_TYPE.FLOAT64;

/** A uint64 the int64 an integer is read into cannot hold. */
function beyondInt64(type: number, value: unknown): value is bigint {
  return type === GGUF_VALUE_TYPE.UINT64 && typeof value === 'bigint' && value > INT64_MAX;
}

/** The rule of gguf::value_matches. */
function matches(kind: MetadataKind, type: number, elementType: number | undefined, value: unknown): boolean {
  const element = type === GGUF_VALUE_TYPE.ARRAY ? elementType : undefined;
  switch (kind) {
    case 'string':
      return type === GGUF_VALUE_TYPE.STRING;
    case 'integer':
      return isInteger(type) && !beyondInt64(type, value);
    case 'number':
      return isInteger(type) || isFloat(type);
    case 'bool':
      return type === GGUF_VALUE_TYPE.BOOL;
    case 'string array':
      return element === GGUF_VALUE_TYPE.STRING;
    case 'integer array':
      return element !== undefined && isInteger(element);
    case 'number array':
      return element !== undefined && (isInteger(element) || isFloat(element));
  }
}

/** A key of the wrong type: the engine's wrong_type_message, without the path. */
export interface MetadataTypeError {
  key: string;
  message: string;
}

/** The rule keys that apply to a file of this architecture (empty: one Folio does not run, no {arch}. key). */
function rulesFor(arch: string | null): Map<string, MetadataKind> {
  const out = new Map<string, MetadataKind>();
  for (const r of METADATA_RULES) {
    if (!r.key.startsWith(ARCH_PREFIX)) out.set(r.key, r.kind);
    else if (arch) out.set(arch + '.' + r.key.slice(ARCH_PREFIX.length), r.kind);
  }
  return out;
}

/**
 * The first key (in file order) that the table names and whose value is of the wrong kind, or null: the
 * check a model load makes (gguf::check_metadata_types). The "{arch}." keys apply only to an architecture
 * Folio runs: a file of another one is unsupported for that, whatever its keys hold.
 */
export function checkMetadataTypes(h: GgufMetadataView): MetadataTypeError | null {
  const a = h.metadata.get('general.architecture');
  const arch = typeof a === 'string' && SUPPORTED_ARCHITECTURES.includes(a) ? a : null;
  const rules = rulesFor(arch);
  for (const [key, value] of h.metadata) {
    const kind = rules.get(key);
    const t = h.types.get(key);
    if (!kind || !t || matches(kind, t.type, t.elementType, value)) continue;
    const found =
      t.type === GGUF_VALUE_TYPE.ARRAY
        ? `an array of ${valueTypeName(t.elementType!)}`
        : beyondInt64(t.type, value)
          ? `uint64 ${value}, beyond the int64 range`
          : valueTypeName(t.type);
    return { key, message: `metadata key '${key}' should be ${KIND_DESCRIPTION[kind]} but is ${found}` };
  }
  return null;
}
