// The cache's precision: how each kept key and value is stored (native/src/kv/entry-format.h). f32 and f16
// hold the numbers as they are; q8_0 and q4_0 hold them in blocks of 32 with an f16 scale each, as GGUF
// defines them (a head size that is no multiple of 32 ends in a shorter block of the same kind). Keys and
// values may differ, and the quantized ones may be rotated first (a Hadamard transform over the head: an
// outlier channel no longer sets a whole block's scale). The settings, the engine's options, the command line,
// the memory estimate and the reader of saved caches all take the types and their sizes from here.
import { z } from 'zod';

export const KV_TYPES = ['f16', 'q8_0', 'q4_0', 'f32'] as const;
export const KvType = z.enum(KV_TYPES);
export type KvType = z.infer<typeof KvType>;

/** The engine's type ids (the ggml ones), as a session file stores them. */
export const KV_TYPE_ID: Readonly<Record<KvType, number>> = { f32: 0, f16: 1, q4_0: 2, q8_0: 8 };

/** How the keys and the values are stored. rotate: the quantized ones rotated before quantizing. */
export interface KvFormat {
  k: KvType;
  v: KvType;
  rotate: boolean;
}

export const quantized = (t: KvType) => t === 'q8_0' || t === 'q4_0';

/** Bytes of one entry of `dim` numbers: entry-format.h's rule. */
export function kvEntryBytes(t: KvType, dim: number): number {
  if (t === 'f32') return 4 * dim;
  if (t === 'f16') return 2 * dim;
  const block = (len: number) => 2 + (t === 'q8_0' ? len : len / 2);
  return Math.floor(dim / 32) * block(32) + (dim % 32 ? block(dim % 32) : 0);
}

/** The engine's name of a format (kv_format_name): 'f16'; 'q8_0/q4_0' where keys and values differ; '+rot'. */
export function kvFormatName(f: KvFormat): string {
  const rotated = f.rotate && (quantized(f.k) || quantized(f.v));
  return `${f.k}${f.v !== f.k ? `/${f.v}` : ''}${rotated ? '+rot' : ''}`;
}

/** A name kvFormatName makes, read back (the engine's statistics and memory name the format so). */
export const KvFormatName = z
  .string()
  .regex(new RegExp(`^(${KV_TYPES.join('|')})(/(${KV_TYPES.join('|')}))?(\\+rot)?$`), 'not a cache format');

export function parseKvFormatName(name: string): KvFormat {
  const [types, rot] = name.split('+');
  const [k, v = k] = types.split('/') as KvType[];
  return { k: KvType.parse(k), v: KvType.parse(v), rotate: rot === 'rot' };
}

/** The format of settings or options that name the keys' type, the values' if different, and the rotation. */
export function kvFormat(o: { kvType: KvType; kvTypeV?: KvType | null; kvRotate?: boolean }): KvFormat {
  return { k: o.kvType, v: o.kvTypeV ?? o.kvType, rotate: o.kvRotate ?? false };
}

/** The precisions the settings offer: keys and values alike, or 8-bit keys with 4-bit values (keys suffer more). */
export const KV_PRESETS: readonly { k: KvType; v: KvType; label: string }[] = [
  { k: 'f16', v: 'f16', label: '16-bit (f16)' },
  { k: 'q8_0', v: 'q8_0', label: '8-bit (q8_0): about half the memory of f16' },
  { k: 'q8_0', v: 'q4_0', label: '8-bit keys, 4-bit values: about 40% of f16' },
  { k: 'q4_0', v: 'q4_0', label: '4-bit (q4_0): about a quarter; keys lose the most' },
  { k: 'f32', v: 'f32', label: '32-bit (f32)' },
];

/** A preset's key in a select: its types as kvFormatName names them, unrotated. */
export const presetKey = (p: { k: KvType; v: KvType }) => kvFormatName({ ...p, rotate: false });

/**
 * The head size behind an entry's bytes in a format (keys and values of one size, as in every architecture the
 * engine runs): the statistics give a cache's bytes, and this gives back what an f16 entry would take; null where
 * no head size gives those bytes.
 */
export function headSizeOf(f: Pick<KvFormat, 'k' | 'v'>, entryBytes: number): number | null {
  for (let d = 2; d <= 1024; d += 2) {
    const b = kvEntryBytes(f.k, d) + kvEntryBytes(f.v, d);
    if (b === entryBytes) return d;
    if (b > entryBytes) return null;
  }
  return null;
}
