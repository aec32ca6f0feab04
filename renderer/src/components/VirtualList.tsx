// A virtualised list for long chats: only the items near the viewport are in the DOM. Heights are
// measured as items render (ResizeObserver) and estimated until then; an item above the viewport that
// changes height moves the scroll position by the same amount, so what the user reads stays put. When the
// list is scrolled to the bottom it stays there as content grows (a streaming answer).
import { useCallback, useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState, type ReactNode } from 'react';

import { atBottom, HeightCache, visibleRange } from '../lib/virtual.ts';

export interface VirtualListProps {
  keys: readonly string[];
  renderItem: (key: string, index: number) => ReactNode;
  /** Height assumed for an item not measured yet. */
  estimate?: number;
  /** Pixels rendered beyond the viewport, above and below. */
  overscan?: number;
  /** Changing this scrolls to the bottom and sticks there (e.g. the user just sent a question). */
  bottomKey?: unknown;
  className?: string;
  label: string;
  busy?: boolean;
  /** An item to bring to the top of the view (a search hit), once it is among the keys. */
  scrollToKey?: string | null;
}

export function VirtualList({
  keys,
  renderItem,
  estimate = 120,
  overscan = 800,
  bottomKey,
  className,
  label,
  busy,
  scrollToKey,
}: VirtualListProps) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const cache = useMemo(() => new HeightCache(estimate), [estimate]);
  const [viewport, setViewport] = useState(800);
  const scrollTop = useRef(0);
  const stick = useRef(true);
  // A render for what React does not see: a height measured into the cache, a scroll to other items.
  const [, rerender] = useReducer((n: number) => n + 1, 0);

  // Recomputed on every render (the cache changes under React): one pass over the keys, a few hundred at most.
  const offsets = cache.offsets(keys);
  const range = visibleRange(offsets, scrollTop.current, viewport, overscan);
  const latest = useRef({ keys, offsets, range });
  latest.current = { keys, offsets, range };

  // Measuring: one observer for every rendered item.
  const observer = useMemo(() => {
    if (typeof ResizeObserver === 'undefined') return null;
    return new ResizeObserver((entries) => {
      const el = scrollRef.current;
      let changed = false;
      let anchor = 0;
      const { keys: ks, offsets: os } = latest.current;
      for (const e of entries) {
        const target = e.target as HTMLElement;
        const key = target.dataset.key;
        if (!key) continue;
        const h = e.borderBoxSize?.[0]?.blockSize ?? target.getBoundingClientRect().height;
        const index = Number(target.dataset.index);
        const oldBottom = ks[index] === key ? os[index + 1] : Infinity;
        const d = cache.set(key, h);
        if (!d) continue;
        changed = true;
        if (el && !stick.current && oldBottom <= el.scrollTop) anchor += d;
      }
      if (!changed) return;
      rerender();
      if (anchor && el) {
        el.scrollTop += anchor;
        scrollTop.current = el.scrollTop;
      }
    });
  }, [cache]);
  useEffect(() => () => observer?.disconnect(), [observer]);
  const measure = useCallback(
    (el: HTMLDivElement | null) => {
      if (!el || !observer) return;
      observer.observe(el);
      return () => observer.unobserve(el);
    },
    [observer],
  );

  // The viewport's height.
  useEffect(() => {
    const el = scrollRef.current;
    if (!el) return;
    if (el.clientHeight) setViewport(el.clientHeight);
    if (typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(() => el.clientHeight && setViewport(el.clientHeight));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  useEffect(() => cache.retain(keys), [cache, keys]);

  // Stay at the bottom while content grows, if the user was there: whenever the content's height (items
  // added, heights measured) or the viewport's changes, scroll to the new bottom.
  const total = offsets[offsets.length - 1];
  useLayoutEffect(() => {
    const el = scrollRef.current;
    if (el && stick.current) {
      el.scrollTop = Math.max(0, total - (el.clientHeight || viewport));
      scrollTop.current = el.scrollTop;
    }
  }, [total, viewport]);

  useLayoutEffect(() => {
    if (bottomKey === undefined) return;
    stick.current = true;
    const el = scrollRef.current;
    if (el) {
      el.scrollTop = el.scrollHeight;
      scrollTop.current = el.scrollTop;
      rerender();
    }
  }, [bottomKey]);

  const scrollIndex = scrollToKey ? keys.indexOf(scrollToKey) : -1;
  useLayoutEffect(() => {
    const el = scrollRef.current;
    if (scrollIndex < 0 || !el) return;
    stick.current = false;
    el.scrollTop = latest.current.offsets[scrollIndex];
    scrollTop.current = el.scrollTop;
    rerender();
  }, [scrollIndex]);

  const onScroll = () => {
    const el = scrollRef.current;
    if (!el) return;
    scrollTop.current = el.scrollTop;
    stick.current = atBottom(el.scrollTop, el.clientHeight, el.scrollHeight);
    const next = visibleRange(latest.current.offsets, el.scrollTop, el.clientHeight || viewport, overscan);
    const cur = latest.current.range;
    if (next.start !== cur.start || next.end !== cur.end) rerender();
  };

  // No tabIndex: a log is no control. The keyboard still scrolls it: Chromium (Electron) makes a scroller
  // without focusable content a tab stop itself, and otherwise Tab reaches the messages' buttons, from where
  // the arrow and page keys scroll the list.
  return (
    <div
      ref={scrollRef}
      className={`vlist ${className ?? ''}`}
      onScroll={onScroll}
      role="log"
      aria-label={label}
      aria-busy={busy || undefined}
      data-testid="message-list"
    >
      <div className="vlist-inner" style={{ height: total }}>
        <div className="vlist-window" style={{ transform: `translateY(${offsets[range.start] ?? 0}px)` }}>
          {keys.slice(range.start, range.end).map((key, i) => (
            <div key={key} ref={measure} data-key={key} data-index={range.start + i} className="vlist-item">
              {renderItem(key, range.start + i)}
            </div>
          ))}
        </div>
      </div>
    </div>
  );
}
