import { describe, expect, it } from 'vitest';
import { METHOD_NAMES, RECOMMENDED_METHOD, SCORER_TABLE } from '../../../electron/shared/kv/methods.ts';
import { METHOD_GROUPS } from './method-label.ts';

describe('METHOD_GROUPS', () => {
  it('puts every method in exactly one group: the unscored ones first, then one group per scorer', () => {
    expect(METHOD_GROUPS.flatMap((g) => g.choices.map((c) => c.value)).sort()).toEqual([...METHOD_NAMES].sort());
    expect(METHOD_GROUPS.map((g) => g.label)).toEqual(['Without a scorer', ...SCORER_TABLE.map((s) => s.label)]);
    expect(METHOD_GROUPS[0]!.choices.map((c) => c.value)).toEqual(['full', 'streaming']);
  });

  it('marks the recommended method, and only it', () => {
    const marked = METHOD_GROUPS.flatMap((g) => g.choices).filter((c) => c.label.includes('(recommended)'));
    expect(marked.map((c) => c.value)).toEqual([RECOMMENDED_METHOD]);
  });
});
