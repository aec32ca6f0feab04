// The engine's numeric options with their bounds and defaults: the TypeScript copy of the table in
// native/src/napi/options.cc (the addon exports it as optionsSchema(); test/kv-schema.test.ts holds the two
// equal). A compression's (budget, alpha, window, kernel, beta) and a generation's sampling (temperature,
// topK, topP, minP, repeatPenalty, repeatLastN, seed). The settings, the API contract, the engine protocol
// and the command line all take their schemas and defaults from here, so nothing the app accepts is
// refused by the engine later.
import { z } from 'zod';

export interface OptionRow {
  name: string;
  integer: boolean;
  min: number;
  max: number;
  /** min itself excluded */
  minOpen: boolean;
  /** an odd integer (the pooling kernel) */
  odd: boolean;
  /** The engine's default; null: none (the caller must give one). */
  default: number | null;
}

const number = (name: string, min: number, max: number, def: number | null, minOpen = false): OptionRow => ({
  name,
  integer: false,
  min,
  max,
  minOpen,
  odd: false,
  default: def,
});
const integer = (name: string, min: number, max: number, def: number, odd = false): OptionRow => ({
  name,
  integer: true,
  min,
  max,
  minOpen: false,
  odd,
  default: def,
});

export const COMPRESS_OPTION_ROWS = [
  // A kept ratio (<= 1) or whole tokens per head (> 1): budget.ts's BudgetValue reads it.
  number('budget', 0, 2 ** 24, null, true),
  number('alpha', 0, 1, 0.2),
  integer('window', 1, 2 ** 20, 32),
  integer('kernel', 1, 2 ** 10 - 1, 7, true),
  integer('beta', 1, 2 ** 20, 20),
] as const satisfies readonly OptionRow[];

// The engine keeps these defaults as floats (SamplingParams): Math.fround is the number it reports.
export const SAMPLING_OPTION_ROWS = [
  number('temperature', 0, 10, Math.fround(0.8)),
  integer('topK', 0, 2 ** 30, 40),
  number('topP', 1e-9, 1, Math.fround(0.95)),
  number('minP', 0, 1, Math.fround(0.05)),
  number('repeatPenalty', 1e-3, 100, 1),
  integer('repeatLastN', -1, 2 ** 30, 64),
  integer('seed', 0, Number.MAX_SAFE_INTEGER, 0),
] as const satisfies readonly OptionRow[];

type CompressOptionName = (typeof COMPRESS_OPTION_ROWS)[number]['name'];
type SamplingOptionName = (typeof SAMPLING_OPTION_ROWS)[number]['name'];

function rowOf(rows: readonly OptionRow[], name: string): OptionRow {
  const r = rows.find((x) => x.name === name);
  if (!r) throw new Error(`no option row named ${name}`);
  return r;
}

/** The zod schema of one option: its kind and bounds as the engine checks them. */
export function optionSchema(row: OptionRow) {
  let s = z.number();
  if (row.integer) s = s.int();
  s = row.minOpen ? s.gt(row.min) : s.min(row.min);
  s = s.max(row.max);
  // The kernel is the one odd option.
  return row.odd ? s.refine((v) => v % 2 === 1, 'the pooling kernel must be odd') : s;
}

export const compressOption = (name: CompressOptionName) => optionSchema(rowOf(COMPRESS_OPTION_ROWS, name));
export const samplingOption = (name: SamplingOptionName) => optionSchema(rowOf(SAMPLING_OPTION_ROWS, name));

/** An option's bounds and default (the budget has none). */
export const compressRow = (name: CompressOptionName): OptionRow => rowOf(COMPRESS_OPTION_ROWS, name);
export const samplingRow = (name: SamplingOptionName): OptionRow => rowOf(SAMPLING_OPTION_ROWS, name);

/** What a value of the option must be, for people: "an odd integer from 1 to 1023", "a number above 0 up to 16777216". */
export function describeOption(row: OptionRow): string {
  const what = row.integer ? (row.odd ? 'an odd integer' : 'an integer') : 'a number';
  return `${what} ${row.minOpen ? 'above' : 'from'} ${row.min} ${row.minOpen ? 'up to' : 'to'} ${row.max}`;
}

/** The engine's defaults for the options a compression may leave out. */
export const COMPRESS_DEFAULTS = {
  alpha: compressRow('alpha').default!,
  window: compressRow('window').default!,
  kernel: compressRow('kernel').default!,
  beta: compressRow('beta').default!,
};
