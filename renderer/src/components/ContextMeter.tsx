// How full the chat's context is, in positions: the system prompt (and the chat template around the
// document), the document and the conversation, against the context the document was read into; and beside
// it what compression bought in memory, the document's cache as kept against as it would be in full. The two
// are apart on purpose: compression frees memory, but a document takes its own length in positions unless
// its kept entries were packed (DocumentPositions), and on a small context positions end a chat first.
import type { ContextUsage } from '../stores/chats.ts';
import { formatBytes, formatCount, formatPercent } from '../lib/format.ts';

export interface UsageParts {
  used: number;
  /** The fraction of the context in use (may exceed 1 when a caller's numbers overflow it). */
  fraction: number;
  level: 'ok' | 'high' | 'full';
  /** Widths in percent of the bar, each clipped so that together they never pass 100. */
  widths: { system: number; document: number; conversation: number };
  /** The whole sentence, for assistive technology and the tooltip. */
  text: string;
}

export function usageParts(u: ContextUsage): UsageParts {
  // Never above the maximum: the cache cannot hold more positions than its context has.
  const used = Math.min(u.systemTokens + u.documentTokens + u.conversationTokens, u.contextTokens);
  const ctx = Math.max(1, u.contextTokens);
  const fraction = used / ctx;
  let left = 100;
  const take = (tokens: number) => {
    const w = Math.min(left, (100 * Math.max(0, tokens)) / ctx);
    left -= w;
    return w;
  };
  const widths = {
    system: take(u.systemTokens),
    document: take(u.documentTokens),
    conversation: take(u.conversationTokens),
  };
  const text =
    `${formatCount(used)} of ${formatCount(u.contextTokens)} positions (${formatPercent(fraction)}): ` +
    `system prompt ${formatCount(u.systemTokens)}, document ${formatCount(u.documentTokens)}` +
    `${u.documentPacked ? ' (packed: its kept entries only)' : ''}, conversation ${formatCount(u.conversationTokens)}`;
  return { used, fraction, level: fraction >= 0.9 ? 'full' : fraction >= 0.75 ? 'high' : 'ok', widths, text };
}

/** "memory 70.3 KiB kept of 234.4 KiB", or null while the document has no cache. */
export function cacheText(u: ContextUsage): string | null {
  if (u.kvBytesKept === null || u.kvBytesFull === null || u.kvBytesFull <= 0) return null;
  return `memory ${formatBytes(u.kvBytesKept)} kept of ${formatBytes(u.kvBytesFull)}`;
}

export function ContextMeter({ usage }: { usage: ContextUsage | null }) {
  if (!usage) return <div className="context-meter muted small">Context: –</div>;
  const p = usageParts(usage);
  const cache = cacheText(usage);
  const saved = cache && usage.kvBytesFull ? 1 - (usage.kvBytesKept ?? 0) / usage.kvBytesFull : null;
  // A native <meter> carries the value for assistive technology; the bar drawn beside it shows the system
  // prompt's, the document's and the conversation's shares, which one <meter> cannot, and is hidden from it.
  return (
    <div className={`context-meter level-${p.level}`} title={p.text} data-testid="context-meter">
      <span className="context-label">Positions</span>
      <meter
        className="sr-only"
        aria-label="Context used"
        min={0}
        max={usage.contextTokens}
        value={Math.min(p.used, usage.contextTokens)}
        aria-valuetext={p.text}
      />
      <div className="meter" aria-hidden="true">
        <span className="meter-sys" style={{ width: `${p.widths.system}%` }} />
        <span className="meter-doc" style={{ width: `${p.widths.document}%` }} />
        <span className="meter-conv" style={{ width: `${p.widths.conversation}%` }} />
      </div>
      <span className="context-numbers">
        {formatCount(p.used)} / {formatCount(usage.contextTokens)}
      </span>
      {usage.documentPacked && (
        <span
          className="badge context-packed"
          title="The document's kept entries were packed into contiguous positions: it takes only the positions of what it kept, and the conversation has the rest"
        >
          packed
        </span>
      )}
      {cache && (
        <span
          className="context-cache"
          data-testid="context-cache"
          title={`The memory the document's cache takes as compressed, against uncompressed${saved !== null ? `: saves ${formatPercent(saved)}` : ''}`}
        >
          {cache}
        </span>
      )}
      {p.level === 'full' && (
        // Short, so that it fits the chat bar of a small window; what happens next is on hover.
        <span
          className="context-warning"
          title="The context is nearly full: the older turns will be compressed, or set aside, to make room"
        >
          nearly full
        </span>
      )}
    </div>
  );
}
