// The compression methods as the UI names them: labels and one-line descriptions from the one method
// table (electron/kv/methods.ts, held equal to the engine's).
import { METHOD_TABLE, methodLabel, type CompressionMethod } from '../../../electron/kv/methods.ts';

export { methodLabel };

/** The methods a user can choose, in the table's order, with their labels and descriptions. */
export const METHOD_CHOICES: readonly { value: CompressionMethod; label: string; hint: string }[] = METHOD_TABLE.map(
  (m) => ({
    value: m.name,
    label: m.label,
    hint: m.description,
  }),
);
