// The inspector: what Ada-KV compression did to this document's cache. A layer x KV-head heatmap of the
// allocated budgets (or of retained attention mass, or concentration), a locked head's detail with the
// tokens it kept on the document's text, per-layer memory, the memory saved, and any two methods side by
// side for the same document and budget. Every term carries its one-line explanation (lib/glossary.ts);
// a comparison computed from another cache than the document's now is marked stale, with a recompute.
import { useEffect, useMemo, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';

import {
  compareCounterpart,
  type CompressionMethod,
  type CompressionStats,
  type DocumentDetail,
  type KeptPositions,
} from '../../../electron/api/contract.ts';
import { loadDetail, recompressDocument, useDocuments } from '../stores/documents.ts';
import { useSettings } from '../stores/settings.ts';
import {
  cacheKey,
  compareKey,
  keptKey,
  loadKeptPositions,
  lockHead,
  runCompare,
  setMetric,
  setSource,
  useInspector,
  type Comparison,
  type Source,
} from '../stores/inspector.ts';
import { headSizeOf, parseKvFormatName } from '../../../electron/shared/kv/precision.ts';
import { methodParams, RECOMMENDED_METHOD } from '../../../electron/shared/kv/methods.ts';
import { explain, Term } from './Term.tsx';
import { documentTask, useTasks } from '../stores/tasks.ts';
import { budgetInline } from '../lib/budget-label.ts';
import { formatBytes, formatCount, formatDuration, formatPercent } from '../lib/format.ts';
import { formatDomain, metricDomain, metricGrid, METRICS, type Metric } from '../lib/heatmap.ts';
import { methodLabel } from '../lib/method-label.ts';
import { Heatmap, HeatmapLegend } from './Heatmap.tsx';
import { MethodSelect } from './MethodSelect.tsx';
import { ReadNote } from './ReadNote.tsx';
import { SetSharesCard } from './SetShares.tsx';
import { TaskProgress } from './Progress.tsx';
import { Segmented } from './Segmented.tsx';

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN;
}

export function meanMass(stats: CompressionStats): number {
  return mean(stats.layers.flatMap((l) => l.heads.map((h) => h.retainedMass)));
}

/**
 * What the cache's precision saves apart from what eviction saves: one entry's bytes (a key and a value of one
 * head) in the cache's format and in f16; null where the statistics do not say (an empty read).
 */
export function precisionSaving(stats: CompressionStats): { format: string; bytes: number; f16Bytes: number } | null {
  const layer = stats.layers[0];
  if (!layer || stats.prefixTokens <= 0 || !layer.heads.length) return null;
  const bytes = layer.bytesFull / (stats.prefixTokens * layer.heads.length);
  const format = parseKvFormatName(stats.kvType);
  const d = headSizeOf(format, bytes);
  return d === null ? null : { format: stats.kvType, bytes, f16Bytes: 4 * d };
}

function MemorySummary({ stats }: { stats: CompressionStats }) {
  // Only the settings this method reads (α for the Ada allocator, window and kernel for the scored ones).
  const params = methodParams(stats.method);
  const precision = precisionSaving(stats);
  // Against a full f16 cache (what an engine without either keeps): eviction and precision apart.
  const f16Full = precision ? (stats.kvBytesFull * precision.f16Bytes) / precision.bytes : stats.kvBytesFull;
  const saved = f16Full - stats.kvBytesKept;
  const f = f16Full > 0 ? saved / f16Full : 0;
  const evicted = stats.kvBytesFull > 0 ? 1 - stats.kvBytesKept / stats.kvBytesFull : 0;
  return (
    <section className="card memory-summary" aria-labelledby="memory-heading">
      <h3 id="memory-heading">
        <Term id="memory" />
      </h3>
      <p className="big-number" data-testid="memory-saved">
        saves {formatPercent(f)}
      </p>
      <p className="small">
        The cache of this document takes <strong>{formatBytes(stats.kvBytesKept)}</strong> instead of{' '}
        {formatBytes(f16Full)}
        {precision && precision.bytes !== precision.f16Bytes ? ' (full, in f16)' : ''}: {formatBytes(saved)} less.
      </p>
      {precision && precision.bytes !== precision.f16Bytes && (
        <p className="small" data-testid="memory-apart">
          Eviction saves {formatPercent(evicted)} (the entries dropped); precision saves{' '}
          {formatPercent(1 - precision.bytes / precision.f16Bytes)}: each kept entry takes {precision.bytes} bytes in{' '}
          {precision.format} instead of {precision.f16Bytes} in f16.
        </p>
      )}
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
            <dt>
              <Term id="budget">Budget per head</Term>
            </dt>
            <dd>
              {formatCount(stats.budget)} tokens
              {params.window && (
                <>
                  {' '}
                  ({formatCount(stats.budgetSelectable)} chosen + {formatCount(stats.window)}{' '}
                  <Term id="window">window</Term>)
                </>
              )}
            </dd>
            {params.alpha && (
              <>
                <dt>
                  <Term id="alpha" />
                </dt>
                <dd>{stats.alpha}</dd>
              </>
            )}
            {params.window && (
              <>
                <dt>
                  <Term id="kernel" />
                </dt>
                <dd>{stats.kernel}</dd>
              </>
            )}
          </>
        )}
        <dt>Time</dt>
        <dd>
          read {formatDuration(stats.msPrefill)} · compressed {formatDuration(stats.msCompress)}
        </dd>
      </dl>
      {stats.budgetClamped && (
        <p className="notice small">
          The budget was too small for the <Term id="window">observation window</Term> and was raised to window + 1.
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
            <dt>
              <Term id="cachePeak" />
            </dt>
            <dd>
              {formatBytes(stats.kvBytesPeak)} of {formatBytes(stats.kvBytesBound)} bound
            </dd>
          </>
        )}
        <dt>
          <Term id="positions" />
        </dt>
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

function HeadDetail({
  stats,
  cell,
  detail,
}: {
  stats: CompressionStats;
  cell: { row: number; col: number };
  /** The document whose saved cache `stats` describes; null when the grid shows a comparison's run. */
  detail: DocumentDetail | null;
}) {
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
          Layer {cell.row} · <Term id="kvHead">KV head</Term> {cell.col}
        </h3>
        <button type="button" className="link-button" onClick={() => lockHead(null)}>
          Unlock
        </button>
      </div>
      <dl className="facts side-facts">
        <dt>
          <Term id="keptTokens" />
        </dt>
        <dd>
          {formatCount(head.kept)}{' '}
          <span className="muted small">
            ({vsEven >= 0 ? '+' : '−'}
            {formatPercent(Math.abs(vsEven))} vs. an even {formatCount(Math.round(even))})
          </span>
        </dd>
        <dt>Share of the layer’s budget</dt>
        <dd>{formatPercent(layerKept > 0 ? head.kept / layerKept : 0, 1)}</dd>
        <dt>
          <Term id="retainedMass" />
        </dt>
        <dd>{formatPercent(head.retainedMass, 1)}</dd>
        <dt>
          <Term id="concentration" />
        </dt>
        <dd>{formatPercent(head.concentration, 1)} of tokens hold 90%</dd>
        <dt>
          <Term id="budget">Layer budget</Term>
        </dt>
        <dd>{formatCount(layer.budget)} per head</dd>
        <dt>
          <Term id="epsOverC" />
        </dt>
        <dd>{layer.epsOverC.toFixed(3)}</dd>
        <dt>
          <Term id="memory">Layer memory</Term>
        </dt>
        <dd>
          {formatBytes(layer.bytesKept)} of {formatBytes(layer.bytesFull)}
        </dd>
        {layer.attnL1 !== null && (
          <>
            <dt>
              <Term id="attnL1" />
            </dt>
            <dd>{layer.attnL1.toFixed(4)}</dd>
          </>
        )}
        <dt>
          <Term id="layerTime" />
        </dt>
        <dd className="small">
          {formatDuration(layer.msScore + layer.msSelect + layer.msCompact)} (score, select, compact)
        </dd>
      </dl>
      {detail ? (
        <KeptTokens key={`${cell.row}:${cell.col}`} detail={detail} layer={cell.row} head={cell.col} />
      ) : (
        <p className="muted small">
          Which tokens a head kept is read from the saved cache: switch the grid to the saved cache to see them.
        </p>
      )}
    </section>
  );
}

/** One head's kept tokens on the document: counts, the pages, and a page's text with what it kept marked. */
function KeptTokens({ detail, layer, head }: { detail: DocumentDetail; layer: number; head: number }) {
  const k = keptKey(detail.id, cacheKey(detail), layer, head);
  const kept = useInspector((s) => s.kept[k]);
  const error = useInspector((s) => s.keptError[k]);
  const [page, setPage] = useState<number | null>(null);
  useEffect(() => {
    void loadKeptPositions(detail, layer, head);
  }, [detail, layer, head]);
  if (error)
    return (
      <div className="kept-tokens" data-testid="kept-tokens">
        <p className="msg-error small" role="alert">
          Could not read the head’s tokens: {error}
        </p>
        <button type="button" className="link-button" onClick={() => void loadKeptPositions(detail, layer, head, true)}>
          Try again
        </button>
      </div>
    );
  if (!kept)
    return (
      <p className="muted small" data-testid="kept-tokens">
        Reading the head’s tokens from the saved cache…
      </p>
    );
  const shown = page ?? busiestPage(kept);
  return (
    <div className="kept-tokens" data-testid="kept-tokens">
      <h4>On the document</h4>
      <p className="small" data-testid="kept-summary">
        Kept {formatCount(kept.kept)} of {formatCount(kept.prefixTokens)} tokens:{' '}
        {formatCount(kept.kept - kept.inWindow - kept.outsidePages)} chosen on the pages, {formatCount(kept.inWindow)}{' '}
        of the <Term id="window">observation window</Term> (every head keeps it)
        {kept.outsidePages > 0 ? `, ${formatCount(kept.outsidePages)} of the prompt around the pages` : ''}.
      </p>
      <ul className="kept-pages" aria-label="Kept tokens per page">
        {kept.pages.map((p) => (
          <li key={p.page}>
            <button type="button" className="kept-page" aria-pressed={p.page === shown} onClick={() => setPage(p.page)}>
              <span>p. {p.page}</span>
              <span className="bar-track" aria-hidden="true">
                <span className="bar-kept" style={{ width: `${(100 * p.kept) / Math.max(1, p.tokens)}%` }} />
              </span>
              <span className="small">
                {formatCount(p.kept)} of {formatCount(p.tokens)}
              </span>
            </button>
          </li>
        ))}
      </ul>
      {shown !== null && <KeptText detail={detail} kept={kept} page={shown} />}
    </div>
  );
}

/** The page whose tokens the head kept the most of (the window aside), the one shown first. */
function busiestPage(kept: KeptPositions): number | null {
  const chosen = new Map<number, number>();
  for (const s of kept.spans) if (!s.window) chosen.set(s.page, (chosen.get(s.page) ?? 0) + s.end - s.start);
  let best: number | null = kept.pages[0]?.page ?? null,
    most = 0;
  for (const [p, n] of chosen)
    if (n > most) {
      best = p;
      most = n;
    }
  return best;
}

function KeptText({ detail, kept, page }: { detail: DocumentDetail; kept: KeptPositions; page: number }) {
  const text = detail.pageList.find((p) => p.page === page)?.text ?? '';
  const parts = useMemo(() => {
    const out: { text: string; mark: 'chosen' | 'window' | null }[] = [];
    let at = 0;
    for (const s of kept.spans) {
      if (s.page !== page || s.start < at) continue;
      if (s.start > at) out.push({ text: text.slice(at, s.start), mark: null });
      out.push({ text: text.slice(s.start, s.end), mark: s.window ? 'window' : 'chosen' });
      at = s.end;
    }
    if (at < text.length) out.push({ text: text.slice(at), mark: null });
    return out;
  }, [kept, page, text]);
  return (
    <figure className="kept-text-figure">
      <figcaption className="small muted">
        Page {page}: <mark className="kept-chosen">chosen by the head</mark>{' '}
        <mark className="kept-window">observation window</mark>, the rest dropped.
      </figcaption>
      <div className="kept-text" data-testid="kept-text">
        {parts.map((x, i) =>
          x.mark ? (
            <mark key={i} className={`kept-${x.mark}`}>
              {x.text}
            </mark>
          ) : (
            <span key={i}>{x.text}</span>
          ),
        )}
      </div>
    </figure>
  );
}

function CompareSection({
  detail,
  method,
  budget,
}: {
  detail: DocumentDetail;
  /** The document's method: the first pick by default, its counterpart the second. */
  method: CompressionMethod;
  budget: number | undefined;
}) {
  const documentId = detail.id;
  const raw = useInspector((s) => s.compare[documentId]);
  const compression = useSettings((s) => s.settings?.compression ?? null);
  const entry = raw ? { result: raw.result, stale: raw.key !== compareKey(detail, compression) } : null;
  const comparing = useInspector((s) => !!s.comparing[documentId]);
  const error = useInspector((s) => s.compareError[documentId]);
  const task = useTasks((s) => documentTask(s, documentId, 'compare'));
  const metric = useInspector((s) => s.metric);
  const [a, setA] = useState<CompressionMethod>(method);
  const [b, setB] = useState<CompressionMethod>(() => compareCounterpart(method));
  const comparison = entry?.result;
  // One domain for the two grids shown side by side (equal colours, equal values), from those two only.
  const domain = useMemo(
    () =>
      comparison
        ? metricDomain([metricGrid(comparison.a, metric), metricGrid(comparison.b, metric)])
        : ([0, 1] as const),
    [comparison, metric],
  );
  const compute = () => void runCompare(detail, { a, b }, budget);
  return (
    <section className="card compare" aria-labelledby="compare-heading">
      <div className="section-head">
        <h3 id="compare-heading">Two methods, side by side</h3>
        <button type="button" className="button small" onClick={compute} disabled={comparing}>
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
        Compresses this document with both at the same <Term id="budget">budget</Term>
        {budget !== undefined ? ` (${budgetInline(budget)})` : ''}. Nothing is saved.
      </p>
      {comparing && task && <TaskProgress task={task} title={`Comparing ${methodLabel(a)} and ${methodLabel(b)}`} />}
      {comparing && !task && <p className="muted small">Starting…</p>}
      {error && (
        <p className="msg-error" role="alert">
          {error}
        </p>
      )}
      {comparison && entry.stale && (
        <div className="notice stale-notice" role="status" data-testid="compare-stale">
          <span>
            <strong>Out of date:</strong> computed at {budgetInline(comparison.budget)} for the cache and the settings
            of then; the document or the compression settings have changed since
            {budget !== undefined ? ` (now ${budgetInline(budget)})` : ''}.
          </span>{' '}
          <button type="button" className="button small" onClick={compute} disabled={comparing}>
            Compute for the cache now
          </button>
        </div>
      )}
      {comparison && <ComparisonView comparison={comparison} metric={metric} domain={domain} stale={entry.stale} />}
    </section>
  );
}

function ComparisonView({
  comparison,
  metric,
  domain,
  stale,
}: {
  comparison: Comparison;
  metric: Metric;
  domain: readonly [number, number];
  stale: boolean;
}) {
  const la = methodLabel(comparison.a.method);
  const lb = methodLabel(comparison.b.method);
  return (
    <div className={stale ? 'comparison stale' : 'comparison'} data-stale={stale || undefined}>
      <div className="compare-grids">
        {(['a', 'b'] as const).map((k) => (
          <figure key={k}>
            <figcaption>
              {methodLabel(comparison[k].method)} · mean <Term id="retainedMass">attention retained</Term>{' '}
              {formatPercent(meanMass(comparison[k]), 1)}
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
      <HeatmapLegend metric={metric} domain={domain} testId="compare-legend" />
      <div className="table-scroll">
        <table className="compare-table small">
          <caption className="sr-only">
            Per layer: attention retained and error bound, {la} against {lb}
          </caption>
          <thead>
            <tr>
              <th scope="col">Layer</th>
              <th scope="col">Retained, {la}</th>
              <th scope="col">Retained, {lb}</th>
              <th scope="col" title={explain('epsOverC')}>
                ε/C {la}
              </th>
              <th scope="col" title={explain('epsOverC')}>
                ε/C {lb}
              </th>
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
      </div>
    </div>
  );
}

export function InspectorPane({ documentId }: { documentId: string }) {
  const detail = useDocuments((s) => s.details[documentId]);
  const error = useDocuments((s) => s.detailError[documentId]);
  const { metric, source, selected } = useInspector(
    useShallow((s) => ({ metric: s.metric, source: s.source, selected: s.selected })),
  );
  const raw = useInspector((s) => s.compare[documentId]);
  const compression = useSettings((s) => s.settings?.compression ?? null);
  const entry = raw && detail ? { result: raw.result, stale: raw.key !== compareKey(detail, compression) } : null;
  useEffect(() => {
    if (!detail) void loadDetail(documentId);
  }, [documentId, detail]);
  const cache = detail?.stats ?? null;
  // A stale comparison is never shown in the main grid: that is the saved cache's.
  const comparison = entry && !entry.stale ? entry.result : null;
  const fromCache = source === 'cache' || !comparison;
  const shown: CompressionStats | null = fromCache ? cache : comparison[source as 'a' | 'b'];
  // The legend's range is the shown grid's own, never one kept from another grid.
  const domain = useMemo(() => metricDomain(shown ? [metricGrid(shown, metric)] : []), [shown, metric]);
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
  const sourceLabel = !fromCache ? methodLabel(shown.method) : `Saved cache (${methodLabel(shown.method)})`;
  const valid =
    selected && selected.row < shown.layers.length && selected.col < (shown.layers[selected.row]?.heads.length ?? 0)
      ? selected
      : null;
  return (
    <div className="inspector">
      <ReadNote detail={detail} />
      <SetSharesCard />
      {detail.status === 'stale' && (
        <div className="notice stale-notice" role="status" data-testid="cache-stale">
          <span>
            The saved cache was made with other settings than the current ones: these numbers are the old cache’s.
          </span>{' '}
          <button type="button" className="button small" onClick={() => void recompressDocument(detail.id)}>
            Compress now
          </button>
        </div>
      )}
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
          value={fromCache ? 'cache' : source}
          onChange={setSource}
          name="source"
          options={[
            { value: 'cache', label: 'Saved cache' },
            ...(['a', 'b'] as const).map((k) => ({
              value: k,
              label: comparison ? methodLabel(comparison[k].method) : k === 'a' ? 'First' : 'Second',
              disabled: !comparison,
              title: comparison
                ? 'From the comparison'
                : entry?.stale
                  ? 'The comparison is out of date: compute it again'
                  : 'Run the comparison first',
            })),
          ]}
        />
      </div>
      <div className="inspector-grid">
        <section className="card heatmap-card" aria-labelledby="heatmap-heading">
          <h3 id="heatmap-heading">
            {info.label} by layer and KV head <span className="muted small">· {sourceLabel}</span>
          </h3>
          <p className="muted small">{info.explain} Hover a cell for its numbers; click to see what that head kept.</p>
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
          {shown.layers.some((l) => l.slidingWindow > 0) && (
            <p className="muted small" data-testid="sliding-note">
              Hatched rows are sliding-window layers: each keeps its window (the newest{' '}
              {formatCount(Math.max(...shown.layers.map((l) => l.slidingWindow)))} tokens, all that later tokens can see
              there) and is not scored.
            </p>
          )}
        </section>
        <div className="inspector-side">
          {cache && <ReadingSummary stats={cache} contextTokens={detail.contextTokens} />}
          <MemorySummary stats={shown} />
          {valid ? (
            <HeadDetail stats={shown} cell={valid} detail={fromCache ? detail : null} />
          ) : (
            <section className="card hint">
              <h3>A head’s detail</h3>
              <p className="muted small">
                Click a cell (or focus the grid and press Enter) to lock a head and see its numbers and the tokens it
                kept on the document.
              </p>
              <p className="small">
                Mean <Term id="retainedMass">attention retained</Term>:{' '}
                <strong>{formatPercent(meanMass(shown), 1)}</strong>
                <br />
                Range of the grid: {formatDomain(metric, domain)}
              </p>
            </section>
          )}
        </div>
      </div>
      <LayerMemory stats={shown} />
      <CompareSection
        key={documentId}
        detail={detail}
        method={detail.compression?.method ?? RECOMMENDED_METHOD}
        budget={detail.compression?.method === 'full' ? undefined : detail.compression?.budget}
      />
    </div>
  );
}
