// ggml's tensor types for the tests: id by name, and each id's name and block layout. The ids and layouts are
// the app's one table (electron/models/gguf-header.ts GGML_TYPES); the names are spelled out here so that the
// tests get them as types, and test/quant.test.ts holds the two equal.
import { GGML_TYPES, SUPPORTED_TENSOR_TYPES } from '../../electron/models/gguf-header.ts';

/** ggml type ids, as numbered in GGUF files. */
export const T = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q8_1: 9,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  Q8_K: 15,
  IQ2_XXS: 16,
  IQ4_NL: 20,
  IQ4_XS: 23,
  BF16: 30,
} as const;
export type TypeName = keyof typeof T;

/** The types a weight matrix may have: the engine's (its capabilities(), held to this list by a test); the
 * others of T are the activations' own (Q8_1, Q8_K) and a codebook type no matrix here uses (IQ2_XXS). */
export type WeightTypeName = Exclude<TypeName, 'Q8_1' | 'Q8_K' | 'IQ2_XXS'>;
export const WEIGHT_TYPE_NAMES = SUPPORTED_TENSOR_TYPES as readonly WeightTypeName[];
export const WEIGHT_TYPES: readonly number[] = WEIGHT_TYPE_NAMES.map((n) => T[n]);

/** A type's name, values per block and bytes per block (the app's table). */
export function layout(type: number): { name: string; block: number; bytes: number } {
  const t = GGML_TYPES[type];
  if (!t) throw new Error(`no ggml type ${type}`);
  return { name: t.name, block: t.blockSize, bytes: t.typeSize };
}
