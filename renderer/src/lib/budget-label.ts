// A compression budget for people: a kept ratio as a percentage, tokens per head as a count. What the
// number means comes from budgetKind (electron/shared/kv/budget.ts), the one reading of a budget.
import { budgetKind } from '../../../electron/shared/kv/budget.ts';
import { formatCount, formatPercent } from './format.ts';

/** "20% budget", "512 tokens/head". */
export function budgetLabel(budget: number): string {
  const k = budgetKind(budget);
  return 'ratio' in k ? `${formatPercent(k.ratio)} budget` : `${formatCount(k.tokensPerHead)} tokens/head`;
}

/** "20%", "512/head": for a list row. */
export function budgetShortLabel(budget: number): string {
  const k = budgetKind(budget);
  return 'ratio' in k ? formatPercent(k.ratio) : `${formatCount(k.tokensPerHead)}/head`;
}

/** "20%", "512 tokens": inside a sentence. */
export function budgetInline(budget: number): string {
  const k = budgetKind(budget);
  return 'ratio' in k ? formatPercent(k.ratio) : `${k.tokensPerHead} tokens`;
}
