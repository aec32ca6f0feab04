// The compression methods: the app's copy of the engine's method table (native/src/kv/method.cc,
// reported by the addon's methods()), derived the same way from the same scorer table: full, streaming, and
// every scorer under every head allocator and layer schedule, named [ada-]<scorer>[-pyramid|-global].
// test/kv-schema.test.ts holds the two equal in both directions, and checks that no other source file lists
// the methods: the zod enums, the command line's choices and the UI's labels all derive from this table, so
// a new scorer is a row here and a row there (native/src/kv/scorers/scorers.cc).
import { z } from 'zod';

/** How a method picks the entries it keeps. */
export type Selection = 'full' | 'streaming' | 'scored';
/** How the budget is spread over layers: the same everywhere, more for early layers (PyramidKV), or by one
 * ranking over every layer's heads (global, as KVzip). */
export type Schedule = 'flat' | 'pyramid' | 'global';
/** How a layer's budget is spread over its KV heads: evenly, or by need (Ada-KV). */
export type Allocator = 'uniform' | 'ada';

/** The scorers: what ranks a document's tokens (native/src/kv/scorers/). */
export const SCORER_TABLE = [
  { name: 'snapkv', label: 'SnapKV', ranks: 'the attention of the document’s last tokens' },
  { name: 'critical', label: 'CriticalKV', ranks: 'attention weighted by how far each token moves the output' },
  { name: 'defensive', label: 'DefensiveKV', ranks: 'the largest attention any recent token gives, not the average' },
  { name: 'expected', label: 'ExpectedAttention', ranks: 'the attention questions to come are expected to give' },
  { name: 'kvzip', label: 'KVzip', ranks: 'the attention while the model repeats the document (reads it twice)' },
] as const;

/** What ranks the prefix tokens: nothing (full, streaming) or a scorer. */
export type Scorer = 'none' | (typeof SCORER_TABLE)[number]['name'];
type ScorerName = (typeof SCORER_TABLE)[number]['name'];
type AdaPrefix = '' | 'ada-';
type ScoredName =
  | Exclude<`${AdaPrefix}${ScorerName}${'' | '-pyramid' | '-global'}`, `${AdaPrefix}snapkv-pyramid`>
  | `${AdaPrefix}pyramidkv`;
export type CompressionMethod = 'full' | 'streaming' | ScoredName;

export interface MethodRow {
  name: CompressionMethod;
  selection: Selection;
  schedule: Schedule;
  allocator: Allocator;
  scorer: Scorer;
  /** For people, e.g. "Ada-SnapKV". */
  label: string;
  /** One line for the method's choice in the UI. */
  description: string;
}

/** The method the app starts with and the UI recommends (docs/quality.md measures why). */
export const RECOMMENDED_METHOD: CompressionMethod = 'ada-snapkv-global';

function scoredMethod(sc: (typeof SCORER_TABLE)[number], allocator: Allocator, schedule: Schedule): MethodRow {
  const ada = allocator === 'ada';
  // SnapKV over the pyramid schedule is PyramidKV, by its published name.
  const pyramidkv = sc.name === 'snapkv' && schedule === 'pyramid';
  const suffix = schedule === 'flat' ? '' : `-${schedule}`;
  const name = `${ada ? 'ada-' : ''}${pyramidkv ? 'pyramidkv' : sc.name + suffix}` as CompressionMethod;
  const where = schedule === 'pyramid' ? ' (pyramid)' : schedule === 'global' ? ' (global)' : '';
  const label = `${ada ? 'Ada-' : ''}${pyramidkv ? 'PyramidKV' : sc.label + where}`;
  const description =
    `${name === RECOMMENDED_METHOD ? 'Recommended: ranks by ' : 'Ranks by '}${sc.ranks}; ` +
    (ada ? 'each layer’s budget shared among its heads by need' : 'every head keeps as many') +
    (schedule === 'pyramid'
      ? ', more for early layers.'
      : schedule === 'global'
        ? ', the layers’ budgets by one ranking over them all.'
        : '.');
  return { name, selection: 'scored', schedule, allocator, scorer: sc.name, label, description };
}

export const METHOD_TABLE: readonly MethodRow[] = [
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
  ...SCORER_TABLE.flatMap((sc) =>
    (['uniform', 'ada'] as const).flatMap((a) =>
      (['flat', 'pyramid', 'global'] as const).map((sch) => scoredMethod(sc, a, sch)),
    ),
  ),
];

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

/** Which compression settings a method reads, from its row: the safeguard α shares a layer's budget among
 * its heads (the Ada allocator), β shapes the pyramid schedule, and the observation window and the pooling
 * kernel score the tokens (the scored methods; StreamingLLM keeps the first and the last tokens unscored). */
export function methodParams(name: CompressionMethod): {
  alpha: boolean;
  beta: boolean;
  window: boolean;
  kernel: boolean;
} {
  const m = methodRow(name);
  const scored = m.selection === 'scored';
  return {
    alpha: scored && m.allocator === 'ada',
    beta: scored && m.schedule === 'pyramid',
    window: scored,
    kernel: scored,
  };
}
