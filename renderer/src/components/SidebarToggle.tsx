// Whether the sidebar is on screen, and its toggle. In a window narrower than the smallest desktop window the
// sidebar hides on its own and its toggle opens it over the page (so the library keeps its width rather
// than shrinking to a strip); wider, the toggle hides and shows it beside the main pane.
import { useSyncExternalStore } from 'react';

import { toggleSidebar, useUi } from '../stores/ui.ts';

/** Narrower than the desktop window's minimum (electron/shell/security.ts MIN_WIDTH, 720 px); app.css's
 * `@media (max-width: 719px)` is the same width. */
export const NARROW_QUERY = '(max-width: 719px)';

function subscribe(cb: () => void): () => void {
  if (typeof window === 'undefined' || !window.matchMedia) return () => {};
  const mq = window.matchMedia(NARROW_QUERY);
  mq.addEventListener?.('change', cb);
  return () => mq.removeEventListener?.('change', cb);
}

function narrowNow(): boolean {
  return typeof window !== 'undefined' && !!window.matchMedia && window.matchMedia(NARROW_QUERY).matches;
}

/** The sidebar's state on screen: hidden, beside the main pane, or over it (a narrow window). */
export function useSidebar(): { visible: boolean; overlay: boolean; narrow: boolean } {
  const mode = useUi((s) => s.sidebar);
  const narrow = useSyncExternalStore(subscribe, narrowNow, () => false);
  const visible = mode === 'shown' || (mode === 'auto' && !narrow);
  return { visible, overlay: visible && narrow, narrow };
}

export function SidebarToggle() {
  const { visible, narrow } = useSidebar();
  return (
    <button
      type="button"
      className="icon-button sidebar-toggle"
      aria-label={visible ? 'Hide the library' : 'Show the library'}
      aria-expanded={visible}
      aria-controls="sidebar"
      title={visible ? 'Hide the library' : 'Show the library'}
      onClick={() => toggleSidebar(visible, narrow)}
    >
      <svg width="16" height="16" viewBox="0 0 16 16" aria-hidden="true">
        <rect x="1.5" y="2.5" width="13" height="11" rx="1.5" fill="none" stroke="currentColor" />
        <path d="M5.5 3v10" stroke="currentColor" />
      </svg>
    </button>
  );
}
