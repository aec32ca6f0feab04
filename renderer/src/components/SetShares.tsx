// A chat over a set, in the inspector: each document's part of the one cache the chat reads (contract SetShare),
// its entries before and after the set's one budget, and its share of every layer and KV head as a small grid
// (the share of that head's entries that are the document's; the other documents hold the rest).
import { useLayoutEffect, useRef } from 'react';
import { useShallow } from 'zustand/react/shallow';

import type { SetShare } from '../../../electron/api/contract.ts';
import { useChats } from '../stores/chats.ts';
import { useDocuments } from '../stores/documents.ts';
import { showChatDocument, useUi } from '../stores/ui.ts';
import { formatCount, formatPercent } from '../lib/format.ts';
import { computeLayout, drawHeatmap, shareGrid, type Domain } from '../lib/heatmap.ts';

const SHARE_DOMAIN: Domain = [0, 1];

function ShareGrid({ shares, index, label }: { shares: readonly SetShare[]; index: number; label: string }) {
  const ref = useRef<HTMLCanvasElement>(null);
  useLayoutEffect(() => {
    const canvas = ref.current;
    const ctx = canvas?.getContext('2d');
    if (!canvas || !ctx) return;
    const grid = shareGrid(shares, index);
    const layout = computeLayout(grid.rows, grid.cols, 240, { maxCell: 20, maxHeight: 220 });
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(layout.width * dpr);
    canvas.height = Math.round(layout.height * dpr);
    canvas.style.width = `${layout.width}px`;
    canvas.style.height = `${layout.height}px`;
    drawHeatmap(ctx, layout, grid, SHARE_DOMAIN, { dpr, labelColor: getComputedStyle(canvas).color || '#666' });
  }, [shares, index]);
  return <canvas ref={ref} className="share-grid" role="img" aria-label={label} />;
}

/** The open chat's documents' shares of its cache; nothing unless the open chat is an assembled set. */
export function SetSharesCard() {
  const chatId = useUi((s) => s.chatId);
  const shares = useChats((s) => (chatId ? s.usage[chatId]?.setShares : undefined));
  const setBudget = useChats((s) => (chatId ? (s.chats[chatId]?.setBudget ?? null) : null));
  const shown = useUi((s) => s.documentId);
  const titles = useDocuments(useShallow((s) => (shares ?? []).map((d) => s.byId[d.documentId]?.title ?? '')));
  if (!shares || shares.length < 2) return null;
  const sum = (d: SetShare) => d.entries.reduce((n, l) => n + l.reduce((a, b) => a + b, 0), 0);
  const total = shares.reduce((n, d) => n + sum(d), 0);
  return (
    <section className="card set-shares" aria-labelledby="set-shares-heading" data-testid="set-shares">
      <h3 id="set-shares-heading">This chat’s documents in its cache</h3>
      <p className="muted small">
        {setBudget === null
          ? 'Each document keeps what its own read kept.'
          : `One budget over the set: ${formatPercent(setBudget)} of the entries the documents’ reads chose, chosen again together by the scores they were chosen by (each head’s window stays).`}{' '}
        Each grid is the document’s share of a layer’s KV head (bright: most of that head’s entries are its).
      </p>
      <ul className="set-share-list">
        {shares.map((d, i) => {
          const kept = sum(d);
          const line = `${formatCount(kept)} entries${d.before !== kept ? ` of ${formatCount(d.before)}` : ''}, ${formatPercent(total ? kept / total : 0)} of the set`;
          return (
            <li key={d.documentId} className={d.documentId === shown ? 'current' : undefined}>
              <button type="button" className="link-button" onClick={() => showChatDocument(d.documentId)}>
                {titles[i] || 'Untitled'}
              </button>
              <span className="small" data-testid="set-share-line">
                {' '}
                · {line}
              </span>
              <ShareGrid shares={shares} index={i} label={`${titles[i]}: its share of each layer and head; ${line}`} />
            </li>
          );
        })}
      </ul>
    </section>
  );
}
