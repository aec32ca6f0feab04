// The compression methods as the UI names them: labels and one-line descriptions from the one method
// table (electron/shared/kv/methods.ts, held equal to the engine's), grouped by scorer for the pickers.
import {
  METHOD_TABLE,
  RECOMMENDED_METHOD,
  SCORER_TABLE,
  methodLabel,
  type CompressionMethod,
} from '../../../electron/shared/kv/methods.ts';

export { methodLabel };

export interface MethodChoice {
  value: CompressionMethod;
  label: string;
  hint: string;
}

/** The methods a user can choose, in the table's order, with their labels and descriptions. */
export const METHOD_CHOICES: readonly MethodChoice[] = METHOD_TABLE.map((m) => ({
  value: m.name,
  // The recommended one says so in the list, not only in its hint.
  label: m.name === RECOMMENDED_METHOD ? `${m.label} (recommended)` : m.label,
  hint: m.description,
}));

/** The choices grouped for <optgroup>: the unscored methods first, then one group per scorer. */
export const METHOD_GROUPS: readonly { label: string; choices: readonly MethodChoice[] }[] = [
  { label: 'Without a scorer', scorer: 'none' as const },
  ...SCORER_TABLE.map((sc) => ({ label: sc.label, scorer: sc.name })),
].map((g) => ({
  label: g.label,
  choices: METHOD_CHOICES.filter((_, i) => METHOD_TABLE[i]!.scorer === g.scorer),
}));
