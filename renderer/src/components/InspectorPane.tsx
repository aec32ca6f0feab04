// The inspector: what Ada-KV compression did to this document's cache. A layer x KV-head heatmap of the
// allocated budgets (or of retained attention mass, or concentration), a locked head's detail, per-layer
// memory, the memory saved, and any two methods side by side for the same document and budget.
import { useEffect, useMemo, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';

import { compareCounterpart, type CompressionMethod, type CompressionStats } from '../../../electron/api/contract.ts';
import { loadDetail, useDocuments } from '../stores/documents.ts';
import {
  lockHead,
  runCompare,
  setMetric,
  setSource,
  useInspector,
  type Comparison,
  type Source,
} from '../stores/inspector.ts';
import { RECOMMENDED_METHOD } from '../../../electron/kv/methods.ts';
import { documentTask, useTasks } from '../stores/tasks.ts';
import { budgetInline } from '../lib/budget-label.ts';
import { formatBytes, formatCount, formatDuration, formatPercent } from '../lib/format.ts';
import { formatMetric, metricDomain, metricGrid, METRICS, type Metric } from '../lib/heatmap.ts';
import { methodLabel } from '../lib/method-label.ts';
import { Heatmap, HeatmapLegend } from './Heatmap.tsx';
import { MethodSelect } from './MethodSelect.tsx';
import { ReadNote } from './ReadNote.tsx';
import { TaskProgress } from './Progress.tsx';
import { Segmented } from './Segmented.tsx';

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN;
}

export function meanMass(stats: CompressionStats): number {
  return mean(stats.layers.flatMap((l) => l.heads.map((h) => h.retainedMass)));
}

function MemorySummary({ stats }: { stats: CompressionStats }) {
  const saved = stats.kvBytesFull - stats.kvBytesKept;
  const f = stats.kvBytesFull > 0 ? saved / stats.kvBytesFull : 0;
  return (
    <section className="card memory-summary" aria-labelledby="memory-heading">
      <h3 id="memory-heading">Memory</h3>
      <p className="big-number" data-testid="memory-saved">
        saves {formatPercent(f)}
      </p>
      <p className="small">
        The cache of this document takes <strong>{formatBytes(stats.kvBytesKept)}</strong> instead of{' '}
        {formatBytes(stats.kvBytesFull)}: {formatBytes(saved)} less.
      </p>
      <div className="stack-bar" aria-hidden="true">
        <span style={{ width: `${100 - 100 * f}%` }} />
      </div>
      <dl className="facts side-facts small">
        <dt>Method</dt>
        <dd>{methodLabel(stats.method)}</dd>
        <dt>Document</dt>
        <dd>{formatCount(stats.prefixTokens)} tokens</dd>
        {stats.compressed && (
          <>
            <dt>Budget per head</dt>
            <dd>
              {formatCount(stats.budget)} tokens ({formatCount(stats.budgetSelectable)} chosen +{' '}
              {formatCount(stats.window)} window)
            </dd>
            <dt>Safeguard α</dt>
            <dd>{stats.alpha}</dd>
          </>
        )}
        <dt>Time</dt>
        <dd>
          read {formatDuration(stats.msPrefill)} · compressed {formatDuration(stats.msCompress)}
        </dd>
      </dl>
      {stats.budgetClamped && (
        <p className="notice small">
          The budget was too small for the observation window and was raised to window + 1.
        </p>
      )}
      {!stats.compressed && <p className="notice small">Not compressed{stats.reason ? `: ${stats.reason}` : ''}.</p>}
    </section>
  );
}

/** How the saved cache was read: one pass or chunks, the cache's peak during the read against the bound a
 * chunked read keeps under, and the positions the document takes in its context. */
function ReadingSummary({ stats, contextTokens }: { stats: CompressionStats; contextTokens: number | null }) {
  return (
    <section className="card reading-summary" aria-labelledby="reading-heading" data-testid="reading">
      <h3 id="reading-heading">Reading</h3>
      <dl className="facts side-facts small">
        <dt>Read</dt>
        <dd>
          {stats.chunks > 1
            ? `in ${formatCount(stats.chunks)} chunks of ${formatCount(stats.chunkTokens)} tokens`
            : 'in one pass'}
        </dd>
        {stats.chunks > 1 && (
          <>
            <dt>Cache peak</dt>
            <dd title="The most the cache held during the read, against the bound a chunked read keeps under">
              {formatBytes(stats.kvBytesPeak)} of {formatBytes(stats.kvBytesBound)} bound
            </dd>
          </>
        )}
        <dt>Positions</dt>
        <dd>
          {formatCount(stats.positions)}
          {contextTokens ? ` of ${formatCount(contextTokens)}` : ''}
          {stats.rebased ? <strong className="warn-text"> · re-based</strong> : null}
        </dd>
      </dl>
    </section>
  );
}

function LayerMemory({ stats }: { stats: CompressionStats }) {
  const max = Math.max(1, ...stats.layers.map((l) => l.bytesFull));
  return (
    <section className="card layer-memory" aria-labelledby="layer-memory-heading">
      <h3 id="layer-memory-heading">Memory per layer</h3>
      <p className="muted small">
        <span className="swatch full" aria-hidden="true" /> full cache{' '}
        <span className="swatch kept" aria-hidden="true" /> kept
      </p>
      <ul className="layer-bars">
        {stats.layers.map((l, i) => (
          <li
            key={i}
            className="layer-bar"
            aria-label={`Layer ${i}: ${formatBytes(l.bytesKept)} kept of ${formatBytes(l.bytesFull)}`}
          >
            <span className="layer-name">L{i}</span>
            <span className="bar-track" style={{ width: `${(100 * l.bytesFull) / max}%` }}>
              <span className="bar-kept" style={{ width: `${(100 * l.bytesKept) / Math.max(1, l.bytesFull)}%` }} />
            </span>
            <span className="layer-bytes small">
              {formatBytes(l.bytesKept)} / {formatBytes(l.bytesFull)}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

function HeadDetail({ stats, cell }: { stats: CompressionStats; cell: { row: number; col: number } }) {
  const layer = stats.layers[cell.row];
  const head = layer?.heads[cell.col];
  if (!layer || !head) return null;
  const layerKept = layer.heads.reduce((a, h) => a + h.kept, 0);
  const even = layerKept / layer.heads.length;
  const vsEven = even > 0 ? head.kept / even - 1 : 0;
  return (
    <section className="card head-detail" aria-labelledby="head-heading" data-testid="head-detail">
      <div className="section-head">
        <h3 id="head-heading">
          Layer {cell.row} · KV head {cell.col}
        </h3>
        <button type="button" className="link-button" onClick={() => lockHead(null)}>
          Unlock
        </button>
      </div>
      <dl className="facts side-facts">
        <dt>Kept tokens</dt>
        <dd>
          {formatCount(head.kept)}{' '}
          <span className="muted small">
            ({vsEven >= 0 ? '+' : '−'}
            {formatPercent(Math.abs(vsEven))} vs. an even {formatCount(Math.round(even))})
          </span>
        </dd>
        <dt>Share of the layer’s budget</dt>
        <dd>{formatPercent(layerKept > 0 ? head.kept / layerKept : 0, 1)}</dd>
        <dt>Attention retained</dt>
        <dd>{formatPercent(head.retainedMass, 1)}</dd>
        <dt>Concentration</dt>
        <dd title="Share of the document's tokens that hold 90% of this head's attention">
          {formatPercent(head.concentration, 1)} of tokens hold 90%
        </dd>
        <dt>Layer budget</dt>
        <dd>{formatCount(layer.budget)} per head</dd>
        <dt>Layer bound ε/C</dt>
        <dd title="2·(heads − Σ retained mass): lower is better">{layer.epsOverC.toFixed(3)}</dd>
        <dt>Layer memory</dt>
        <dd>
          {formatBytes(layer.bytesKept)} of {formatBytes(layer.bytesFull)}
        </dd>
        {layer.attnL1 !== null && (
          <>
            <dt>Attention L1 loss</dt>
            <dd>{layer.attnL1.toFixed(4)}</dd>
          </>
        )}
        <dt>Layer time</dt>
        <dd className="small">
          {formatDuration(layer.msScore + layer.msSelect + layer.msCompact)} (score, select, compact)
        </dd>
      </dl>
    </section>
  );
}

function CompareSection({
  documentId,
  method,
  budget,
}: {
  documentId: string;
  /** The document's method: the first pick by default, its counterpart the second. */
  method: CompressionMethod;
  budget: number | undefined;
}) {
  const comparison = useInspector((s) => s.compare[documentId]);
  const comparing = useInspector((s) => !!s.comparing[documentId]);
  const error = useInspector((s) => s.compareError[documentId]);
  const task = useTasks((s) => documentTask(s, documentId, 'compare'));
  const metric = useInspector((s) => s.metric);
  const [a, setA] = useState<CompressionMethod>(method);
  const [b, setB] = useState<CompressionMethod>(() => compareCounterpart(method));
  const domain = useMemo(
    () =>
      comparison
        ? metricDomain([metricGrid(comparison.a, metric), metricGrid(comparison.b, metric)], metric)
        : ([0, 1] as const),
    [comparison, metric],
  );
  return (
    <section className="card compare" aria-labelledby="compare-heading">
      <div className="section-head">
        <h3 id="compare-heading">Two methods, side by side</h3>
        <button
          type="button"
          className="button small"
          onClick={() => void runCompare(documentId, { a, b }, budget)}
          disabled={comparing}
        >
          {comparison ? 'Compute again' : 'Compare'}
        </button>
      </div>
      <div className="field-row">
        <div className="field">
          <label htmlFor="compare-a">First method</label>
          <MethodSelect id="compare-a" value={a} onChange={setA} />
        </div>
        <div className="field">
          <label htmlFor="compare-b">Second method</label>
          <MethodSelect id="compare-b" value={b} onChange={setB} />
        </div>
      </div>
      <p className="muted small">
        Compresses this document with both at the same budget{budget !== undefined ? ` (${budgetInline(budget)})` : ''}.
        Nothing is saved.
      </p>
      {comparing && task && <TaskProgress task={task} title={`Comparing ${methodLabel(a)} and ${methodLabel(b)}`} />}
      {comparing && !task && <p className="muted small">Starting…</p>}
      {error && (
        <p className="msg-error" role="alert">
          {error}
        </p>
      )}
      {comparison && <ComparisonView comparison={comparison} metric={metric} domain={domain} />}
    </section>
  );
}

function ComparisonView({
  comparison,
  metric,
  domain,
}: {
  comparison: Comparison;
  metric: Metric;
  domain: readonly [number, number];
}) {
  const la = methodLabel(comparison.a.method);
  const lb = methodLabel(comparison.b.method);
  return (
    <>
      <div className="compare-grids">
        {(['a', 'b'] as const).map((k) => (
          <figure key={k}>
            <figcaption>
              {methodLabel(comparison[k].method)} · mean attention retained {formatPercent(meanMass(comparison[k]), 1)}
            </figcaption>
            <Heatmap
              stats={comparison[k]}
              metric={metric}
              domain={domain}
              label={methodLabel(comparison[k].method)}
              testId={`heatmap-${k}`}
              maxCell={28}
              maxHeight={320}
              fallbackWidth={260}
            />
          </figure>
        ))}
      </div>
      <HeatmapLegend metric={metric} domain={domain} />
      <table className="compare-table small">
        <caption className="sr-only">
          Per layer: attention retained and error bound, {la} against {lb}
        </caption>
        <thead>
          <tr>
            <th scope="col">Layer</th>
            <th scope="col">Retained, {la}</th>
            <th scope="col">Retained, {lb}</th>
            <th scope="col">ε/C {la}</th>
            <th scope="col">ε/C {lb}</th>
          </tr>
        </thead>
        <tbody>
          {comparison.b.layers.map((l, i) => {
            const u = comparison.a.layers[i];
            const ma = mean(u?.heads.map((h) => h.retainedMass) ?? []);
            const mb = mean(l.heads.map((h) => h.retainedMass));
            return (
              <tr key={i}>
                <th scope="row">L{i}</th>
                <td className={ma > mb + 1e-9 ? 'better' : ''}>{formatPercent(ma, 1)}</td>
                <td className={mb > ma + 1e-9 ? 'better' : ''}>{formatPercent(mb, 1)}</td>
                <td className={u && u.epsOverC < l.epsOverC - 1e-9 ? 'better' : ''}>
                  {u ? u.epsOverC.toFixed(3) : '–'}
                </td>
                <td className={u && l.epsOverC < u.epsOverC - 1e-9 ? 'better' : ''}>{l.epsOverC.toFixed(3)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}

export function InspectorPane({ documentId }: { documentId: string }) {
  const detail = useDocuments((s) => s.details[documentId]);
  const error = useDocuments((s) => s.detailError[documentId]);
  const { metric, source, selected } = useInspector(
    useShallow((s) => ({ metric: s.metric, source: s.source, selected: s.selected })),
  );
  const comparison = useInspector((s) => s.compare[documentId]);
  useEffect(() => {
    if (!detail) void loadDetail(documentId);
  }, [documentId, detail]);
  const cache = detail?.stats ?? null;
  const shown: CompressionStats | null = source === 'cache' ? cache : (comparison?.[source] ?? cache);
  const domain = useMemo(() => {
    const all = [cache, comparison?.a, comparison?.b].filter((x): x is CompressionStats => !!x);
    return metricDomain(
      all.map((s) => metricGrid(s, metric)),
      metric,
    );
  }, [cache, comparison, metric]);
  if (!detail)
    return (
      <div className="pane-pad muted">
        {error ? `Could not open the document: ${error}` : 'Opening the statistics…'}
      </div>
    );
  if (!shown) {
    return (
      <div className="pane-pad">
        <ReadNote detail={detail} />
        <p className="muted">
          The inspector shows what compression did once the document has been compressed
          {detail.status === 'failed' ? '; this one failed' : ''}.
        </p>
      </div>
    );
  }
  const info = METRICS.find((m) => m.id === metric)!;
  const sourceLabel =
    source !== 'cache' && comparison ? methodLabel(shown.method) : `Saved cache (${methodLabel(shown.method)})`;
  const valid =
    selected && selected.row < shown.layers.length && selected.col < (shown.layers[selected.row]?.heads.length ?? 0)
      ? selected
      : null;
  return (
    <div className="inspector">
      <ReadNote detail={detail} />
      <div className="inspector-controls">
        <Segmented<Metric>
          label="Show"
          value={metric}
          onChange={setMetric}
          options={METRICS.map((m) => ({ value: m.id, label: m.label, title: m.explain }))}
          name="metric"
        />
        <Segmented<Source>
          label="Cache"
          value={comparison ? source : 'cache'}
          onChange={setSource}
          name="source"
          options={[
            { value: 'cache', label: 'Saved cache' },
            ...(['a', 'b'] as const).map((k) => ({
              value: k,
              label: comparison ? methodLabel(comparison[k].method) : k === 'a' ? 'First' : 'Second',
              disabled: !comparison,
              title: comparison ? 'From the comparison' : 'Run the comparison first',
            })),
          ]}
        />
      </div>
      <div className="inspector-grid">
        <section className="card heatmap-card" aria-labelledby="heatmap-heading">
          <h3 id="heatmap-heading">
            {info.label} by layer and KV head <span className="muted small">· {sourceLabel}</span>
          </h3>
          <p className="muted small">{info.explain} Hover a cell for its numbers; click to lock a head.</p>
          <Heatmap
            stats={shown}
            metric={metric}
            domain={domain}
            selected={valid}
            onSelect={lockHead}
            label={sourceLabel}
            testId="heatmap"
          />
          <HeatmapLegend metric={metric} domain={domain} />
        </section>
        <div className="inspector-side">
          {cache && <ReadingSummary stats={cache} contextTokens={detail.contextTokens} />}
          <MemorySummary stats={shown} />
          {valid ? (
            <HeadDetail stats={shown} cell={valid} />
          ) : (
            <section className="card hint">
              <h3>A head’s detail</h3>
              <p className="muted small">
                Click a cell (or focus the grid and press Enter) to lock a head and see its numbers here.
              </p>
              <p className="small">
                Mean attention retained: <strong>{formatPercent(meanMass(shown), 1)}</strong>
                <br />
                Range of the grid: {formatMetric(metric, domain[0])} to {formatMetric(metric, domain[1])}
              </p>
            </section>
          )}
        </div>
      </div>
      <LayerMemory stats={shown} />
      <CompareSection
        key={documentId}
        documentId={documentId}
        method={detail.compression?.method ?? RECOMMENDED_METHOD}
        budget={detail.compression?.method === 'full' ? undefined : detail.compression?.budget}
      />
    </div>
  );
}
