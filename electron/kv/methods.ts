// The compression methods: the app's copy of the engine's method table (native/src/kv/method.cc,
// reported by the addon's methods()). test/kv-schema.test.ts holds the two equal in both directions, and
// checks that no other source file lists the methods: the zod enums, the command line's choices and the
// UI's labels all derive from this table, so a new method is a row here and a row there.
import { z } from 'zod';

/** How a method picks the entries it keeps. */
export type Selection = 'full' | 'streaming' | 'scored';
/** How the budget is spread over layers: the same everywhere, or more for early layers (PyramidKV). */
export type Schedule = 'flat' | 'pyramid';
/** How a layer's budget is spread over its KV heads: evenly, or by need (Ada-KV). */
export type Allocator = 'uniform' | 'ada';
/** What ranks the prefix tokens: nothing (full, streaming) or the SnapKV observation window. */
export type Scorer = 'none' | 'snapkv';

export interface MethodRow {
  name: string;
  selection: Selection;
  schedule: Schedule;
  allocator: Allocator;
  scorer: Scorer;
  /** For people, e.g. "Ada-SnapKV". */
  label: string;
  /** One line for the method's choice in the UI. */
  description: string;
}

export const METHOD_TABLE = [
  {
    name: 'full',
    selection: 'full',
    schedule: 'flat',
    allocator: 'uniform',
    scorer: 'none',
    label: 'Full cache',
    description: 'No compression: the whole cache (most memory).',
  },
  {
    name: 'streaming',
    selection: 'streaming',
    schedule: 'flat',
    allocator: 'uniform',
    scorer: 'none',
    label: 'StreamingLLM',
    description: 'Keeps the first tokens and the most recent ones only.',
  },
  {
    name: 'snapkv',
    selection: 'scored',
    schedule: 'flat',
    allocator: 'uniform',
    scorer: 'snapkv',
    label: 'SnapKV',
    description: 'Every head keeps the same number of tokens.',
  },
  {
    name: 'pyramidkv',
    selection: 'scored',
    schedule: 'pyramid',
    allocator: 'uniform',
    scorer: 'snapkv',
    label: 'PyramidKV',
    description: 'Uniform heads, more budget for early layers.',
  },
  {
    name: 'ada-snapkv',
    selection: 'scored',
    schedule: 'flat',
    allocator: 'ada',
    scorer: 'snapkv',
    label: 'Ada-SnapKV',
    description: 'Recommended: each layer’s budget shared among its heads by need.',
  },
  {
    name: 'ada-pyramidkv',
    selection: 'scored',
    schedule: 'pyramid',
    allocator: 'ada',
    scorer: 'snapkv',
    label: 'Ada-PyramidKV',
    description: 'Ada’s sharing with more budget for early layers.',
  },
] as const satisfies readonly MethodRow[];

export type CompressionMethod = (typeof METHOD_TABLE)[number]['name'];

/** Every method's name, in the table's order. */
export const METHOD_NAMES = METHOD_TABLE.map((m) => m.name) as [CompressionMethod, ...CompressionMethod[]];

export const CompressionMethod = z.enum(METHOD_NAMES);

/** The row of a method. */
export function methodRow(name: CompressionMethod): MethodRow {
  return METHOD_TABLE.find((m) => m.name === name)!;
}

export function isCompressionMethod(name: string): name is CompressionMethod {
  return (METHOD_NAMES as readonly string[]).includes(name);
}

/** The method's label for people; an unknown name as it is. */
export function methodLabel(name: string): string {
  return isCompressionMethod(name) ? methodRow(name).label : name;
}
