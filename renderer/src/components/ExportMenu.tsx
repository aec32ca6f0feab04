// Export a chat: as Markdown to read, or as JSON with every field; saved as a download.
import { useEffect, useRef, useState, type CSSProperties } from 'react';

import { exportChat } from '../stores/chats.ts';

/**
 * Where the open menu goes, fixed to the window (a pane's overflow would clip it): under the button, towards
 * the middle of the window, so that it stays on screen wherever the chat bar's wrapping put the button.
 */
export function menuPlace(button: DOMRect, windowWidth: number): CSSProperties {
  const top = button.bottom + 4;
  return button.left + button.width / 2 <= windowWidth / 2
    ? { top, left: button.left }
    : { top, right: windowWidth - button.right };
}

export function ExportMenu({ chatId }: { chatId: string }) {
  const button = useRef<HTMLButtonElement>(null);
  const [place, setPlace] = useState<CSSProperties | null>(null);
  // The window resized: the button may have moved, and the menu with it no longer beside it.
  useEffect(() => {
    if (!place) return;
    const close = () => setPlace(null);
    window.addEventListener('resize', close);
    return () => window.removeEventListener('resize', close);
  }, [place]);
  const save = (format: 'markdown' | 'json') => {
    setPlace(null);
    void exportChat(chatId, format);
  };
  const toggle = () =>
    setPlace(place || !button.current ? null : menuPlace(button.current.getBoundingClientRect(), window.innerWidth));
  return (
    <span className="export-menu">
      <button
        ref={button}
        type="button"
        className="button small"
        aria-expanded={!!place}
        aria-haspopup="true"
        onClick={toggle}
      >
        Export
      </button>
      {place && (
        <span className="export-options" style={place} data-testid="export-options">
          <button type="button" className="link-button" onClick={() => save('markdown')}>
            Markdown
          </button>
          <button type="button" className="link-button" onClick={() => save('json')}>
            JSON
          </button>
        </span>
      )}
    </span>
  );
}
