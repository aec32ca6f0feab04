// The inspector's state: which number the grid shows, which cache (the document's saved one, or the
// pair of methods computed on demand by documents.compare), and the locked head.
import { create } from 'zustand';

import type { CompressionMethod, Result } from '../../../electron/api/contract.ts';
import { api, errorCode, errorMessage } from '../api/client.ts';
import type { Metric } from '../lib/heatmap.ts';

/** The grid's cache: the saved one, or one of the comparison's two runs. */
export type Source = 'cache' | 'a' | 'b';

/** Two methods' runs at one budget; each run's stats name its method. */
export type Comparison = Result<'documents.compare'>;

export interface InspectorState {
  metric: Metric;
  source: Source;
  selected: { row: number; col: number } | null;
  compare: Record<string, Comparison>;
  comparing: Record<string, boolean>;
  compareError: Record<string, string>;
}

const initial: InspectorState = {
  metric: 'budget',
  source: 'cache',
  selected: null,
  compare: {},
  comparing: {},
  compareError: {},
};
export const useInspector = create<InspectorState>()(() => ({ ...initial }));

export function resetInspector(): void {
  useInspector.setState({ ...initial }, true);
}

export function setMetric(metric: Metric): void {
  useInspector.setState({ metric });
}

export function setSource(source: Source): void {
  useInspector.setState({ source });
}

export function lockHead(cell: { row: number; col: number } | null): void {
  useInspector.setState({ selected: cell });
}

/** Runs two methods on the document at one budget (progress comes as a 'compare' task). */
export async function runCompare(
  documentId: string,
  methods: { a: CompressionMethod; b: CompressionMethod },
  budget?: number,
): Promise<void> {
  useInspector.setState((s) => {
    const compareError = { ...s.compareError };
    delete compareError[documentId];
    return { comparing: { ...s.comparing, [documentId]: true }, compareError };
  });
  try {
    const r = await api().call(
      'documents.compare',
      budget === undefined ? { documentId, ...methods } : { documentId, budget, ...methods },
    );
    useInspector.setState((s) => ({
      compare: { ...s.compare, [documentId]: r },
      source: s.source === 'cache' ? 'b' : s.source,
    }));
  } catch (e) {
    const cancelled = errorCode(e) === 'CANCELLED' || /cancel/i.test(errorMessage(e));
    if (!cancelled)
      useInspector.setState((s) => ({ compareError: { ...s.compareError, [documentId]: errorMessage(e) } }));
  } finally {
    useInspector.setState((s) => ({ comparing: { ...s.comparing, [documentId]: false } }));
  }
}
