// The inspector's state: which number the grid shows, which cache (the document's saved one, or the
// pair of methods computed on demand by documents.compare), the locked head, and what the locked head kept
// of the document (documents.keptPositions). Results computed from a cache are keyed by what they were
// computed from (cacheKey): after a recompress, or with other settings, they show as stale, never as
// the current cache's.
import { create } from 'zustand';

import type {
  CompressionMethod,
  CompressionSettings,
  DocumentSummary,
  KeptPositions,
  Result,
} from '../../../electron/api/contract.ts';
import { api, errorCode, errorMessage } from '../api/client.ts';
import type { Metric } from '../lib/heatmap.ts';
import { useSettings } from './settings.ts';

/** The grid's cache: the saved one, or one of the comparison's two runs. */
export type Source = 'cache' | 'a' | 'b';

/** Two methods' runs at one budget; each run's stats name its method. */
export type Comparison = Result<'documents.compare'>;

/** A comparison and what it was computed from (compareKey then). */
export interface ComparisonEntry {
  result: Comparison;
  key: string;
}

export interface InspectorState {
  metric: Metric;
  source: Source;
  selected: { row: number; col: number } | null;
  compare: Record<string, ComparisonEntry>;
  comparing: Record<string, boolean>;
  compareError: Record<string, string>;
  /** keptKey -> what the head kept, or the reason it could not be read. */
  kept: Record<string, KeptPositions>;
  keptError: Record<string, string>;
}

const initial: InspectorState = {
  metric: 'budget',
  source: 'cache',
  selected: null,
  compare: {},
  comparing: {},
  compareError: {},
  kept: {},
  keptError: {},
};
export const useInspector = create<InspectorState>()(() => ({ ...initial }));

export function resetInspector(): void {
  useInspector.setState({ ...initial }, true);
}

/**
 * What a document's saved cache was made from: the model, the compression settings, the pages read and
 * the tokens. Results computed from the cache are good while it stays the same.
 */
export function cacheKey(
  d: Pick<DocumentSummary, 'modelId' | 'compression' | 'readPages' | 'tokens' | 'kvBytesKept'>,
): string {
  return JSON.stringify([d.modelId, d.compression, d.readPages, d.tokens, d.kvBytesKept]);
}

/** What a comparison is computed from: the document's cache and the compression settings now (the core runs
 * both methods with the settings' α, window and kernel). */
export function compareKey(d: Parameters<typeof cacheKey>[0], compression: CompressionSettings | null): string {
  return JSON.stringify([cacheKey(d), compression]);
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
  document: Parameters<typeof cacheKey>[0] & { id: string },
  methods: { a: CompressionMethod; b: CompressionMethod },
  budget?: number,
): Promise<void> {
  const documentId = document.id;
  const key = compareKey(document, useSettings.getState().settings?.compression ?? null);
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
      compare: { ...s.compare, [documentId]: { result: r, key } },
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

/** Where one head's kept positions of one saved cache are kept in the store. */
export function keptKey(documentId: string, cache: string, layer: number, head: number): string {
  return `${documentId}\u0000${cache}\u0000${layer}\u0000${head}`;
}

/** Reads what one head of the document's saved cache kept (once per cache and head). */
export async function loadKeptPositions(
  document: Parameters<typeof cacheKey>[0] & { id: string },
  layer: number,
  head: number,
  /** Read again after an error. */
  retry = false,
): Promise<void> {
  const k = keptKey(document.id, cacheKey(document), layer, head);
  const s = useInspector.getState();
  if (s.kept[k] || (s.keptError[k] && !retry)) return;
  if (retry)
    useInspector.setState((x) => {
      const keptError = { ...x.keptError };
      delete keptError[k];
      return { keptError };
    });
  try {
    const r = await api().call('documents.keptPositions', { documentId: document.id, layer, head });
    useInspector.setState((x) => ({ kept: { ...x.kept, [k]: r } }));
  } catch (e) {
    useInspector.setState((x) => ({ keptError: { ...x.keptError, [k]: errorMessage(e) } }));
  }
}
