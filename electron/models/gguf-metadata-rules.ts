// The metadata keys the engine reads, with the kind of value each must hold and the range of each
// hyperparameter: the TypeScript copy of native/src/gguf/metadata-rules.cc, applied to a header so that the
// models page flags a file with a wrong-typed key (the reason names the key, the type found and the type
// expected) or a value out of range (+Inf as the RMS epsilon) before a load is tried. The engine refuses the
// same files with the same message; test/gguf-rules.test.ts holds this table to the addon's
// (ggufMetadataRules) and feeds the same broken files to both.
import { GGUF_VALUE_TYPE, type GgufMetadataView, SUPPORTED_ARCHITECTURES } from './gguf-tables.ts';

/** What a key must hold (gguf::Kind in native/src/gguf/gguf.h, spelled as gguf::kind_name spells it). */
export type MetadataKind = 'string' | 'integer' | 'number' | 'bool' | 'string array' | 'integer array' | 'number array';

/** The values an integer or number key may hold: min to max (min excluded when minOpen), never NaN or ±Infinity. */
export interface MetadataRange {
  min: number;
  max: number;
  minOpen: boolean;
  /** What the value must be, as the engine says it ("an integer from 1 to 4096"). */
  text: string;
}

export interface MetadataRule {
  /** "{arch}." stands for the value of general.architecture. */
  key: string;
  kind: MetadataKind;
  range?: MetadataRange;
}

const ARCH_PREFIX = '{arch}.';

const MAX_INT32 = 2 ** 31 - 1;
/** A range's max meaning "any finite value" (DBL_MAX in the engine). */
const ANY_FINITE = Number.MAX_VALUE;

/** A double as C's printf("%g") writes it (6 significant digits, "1e-05", "inf"), as the engine's messages do. */
export function formatG(v: number): string {
  if (Number.isNaN(v)) return v < 0 ? '-nan' : 'nan';
  if (!Number.isFinite(v)) return v < 0 ? '-inf' : 'inf';
  if (v === 0) return Object.is(v, -0) ? '-0' : '0';
  const [mantissa, exp] = v.toExponential(5).split('e');
  const x = Number(exp);
  const trim = (s: string) => (s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s);
  if (x < -4 || x >= 6) return `${trim(mantissa)}e${x < 0 ? '-' : '+'}${String(Math.abs(x)).padStart(2, '0')}`;
  return trim(v.toFixed(5 - x));
}

function rangeText(kind: MetadataKind, min: number, max: number, minOpen: boolean): string {
  if (kind === 'integer') return `an integer from ${min} to ${max}`;
  let s = 'a finite number';
  if (Number.isFinite(min)) s += (minOpen ? ' above ' : ' at least ') + formatG(min);
  if (max !== ANY_FINITE) s += (Number.isFinite(min) ? ' and at most ' : ' at most ') + formatG(max);
  return s;
}

/** A count of things (layers, heads, widths): an integer from 1 to `max`. */
function count(key: string, max: number): MetadataRule {
  return { key, kind: 'integer', range: { min: 1, max, minOpen: false, text: rangeText('integer', 1, max, false) } };
}

function bounded(key: string, kind: MetadataKind, min: number, max: number, minOpen = false): MetadataRule {
  return { key, kind, range: { min, max, minOpen, text: rangeText(kind, min, max, minOpen) } };
}

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

/** In the native table's order (general, {arch}, tokenizer); the bounds are the engine's, held equal by test. */
export const METADATA_RULES: readonly MetadataRule[] = [
  { key: 'general.architecture', kind: 'string' },
  { key: 'general.name', kind: 'string' },
  { key: 'general.file_type', kind: 'integer' },
  { key: 'split.count', kind: 'integer' },
  count('{arch}.context_length', MAX_INT32),
  count('{arch}.embedding_length', 2 ** 20),
  count('{arch}.block_count', 4096),
  count('{arch}.feed_forward_length', 2 ** 22),
  count('{arch}.vocab_size', MAX_INT32),
  count('{arch}.attention.head_count', 2 ** 16),
  count('{arch}.attention.head_count_kv', 2 ** 16),
  count('{arch}.attention.key_length', 2 ** 10),
  count('{arch}.attention.value_length', 2 ** 10),
  bounded('{arch}.attention.layer_norm_rms_epsilon', 'number', 0, 1, true),
  count('{arch}.rope.dimension_count', 2 ** 10),
  bounded('{arch}.rope.freq_base', 'number', 1, ANY_FINITE, true),
  { key: '{arch}.rope.scaling.type', kind: 'string' },
  bounded('{arch}.rope.scaling.factor', 'number', 1, ANY_FINITE),
  bounded('{arch}.rope.scaling.attn_factor', 'number', 0, ANY_FINITE, true),
  count('{arch}.rope.scaling.original_context_length', MAX_INT32),
  bounded('{arch}.attention.sliding_window', 'integer', 0, MAX_INT32),
  count('{arch}.expert_count', 2 ** 12),
  count('{arch}.expert_used_count', 2 ** 12),
  count('{arch}.expert_feed_forward_length', 2 ** 22),
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

/** A key of the wrong type (GGUF_TYPE) or out of its range (GGUF_VALUE): the engine's message, without the path. */
export interface MetadataError {
  key: string;
  code: 'GGUF_TYPE' | 'GGUF_VALUE';
  message: string;
}

/** The rule keys that apply to a file of this architecture (empty: one Folio does not run, no {arch}. key). */
function rulesFor(arch: string | null): Map<string, MetadataRule> {
  const out = new Map<string, MetadataRule>();
  for (const r of METADATA_RULES) {
    if (!r.key.startsWith(ARCH_PREFIX)) out.set(r.key, r);
    else if (arch) out.set(arch + '.' + r.key.slice(ARCH_PREFIX.length), r);
  }
  return out;
}

/** A value as the engine's out_of_range_message writes it: integers as integers, floats with %g. */
function valueText(type: number, value: unknown): string {
  if (typeof value === 'bigint') return value.toString();
  return isFloat(type) ? formatG(Number(value)) : String(value);
}

/**
 * The first key (in file order) that the table names and whose value is of the wrong kind or out of its
 * range, or null: the check a model load makes (gguf::check_metadata). The "{arch}." keys apply only to an
 * architecture Folio runs: a file of another one is unsupported for that, whatever its keys hold.
 */
export function checkMetadata(h: GgufMetadataView): MetadataError | null {
  const a = h.metadata.get('general.architecture');
  const arch = typeof a === 'string' && SUPPORTED_ARCHITECTURES.includes(a) ? a : null;
  const rules = rulesFor(arch);
  for (const [key, value] of h.metadata) {
    const rule = rules.get(key);
    const t = h.types.get(key);
    if (!rule || !t) continue;
    if (!matches(rule.kind, t.type, t.elementType, value)) {
      const found =
        t.type === GGUF_VALUE_TYPE.ARRAY
          ? `an array of ${valueTypeName(t.elementType!)}`
          : beyondInt64(t.type, value)
            ? `uint64 ${value}, beyond the int64 range`
            : valueTypeName(t.type);
      return {
        key,
        code: 'GGUF_TYPE',
        message: `metadata key '${key}' should be ${KIND_DESCRIPTION[rule.kind]} but is ${found}`,
      };
    }
    const r = rule.range;
    const v = Number(value);
    if (r && !(Number.isFinite(v) && (r.minOpen ? v > r.min : v >= r.min) && v <= r.max))
      return {
        key,
        code: 'GGUF_VALUE',
        message: `metadata key '${key}' = ${valueText(t.type, value)} is out of range: it must be ${r.text}`,
      };
  }
  return null;
}
