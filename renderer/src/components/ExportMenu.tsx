// Export a chat: as Markdown to read, or as JSON with every field; saved as a download.
import { useState } from 'react';

import { exportChat } from '../stores/chats.ts';

export function ExportMenu({ chatId }: { chatId: string }) {
  const [open, setOpen] = useState(false);
  const save = (format: 'markdown' | 'json') => {
    setOpen(false);
    void exportChat(chatId, format);
  };
  return (
    <span className="export-menu">
      <button
        type="button"
        className="button small"
        aria-expanded={open}
        aria-haspopup="true"
        onClick={() => setOpen(!open)}
      >
        Export
      </button>
      {open && (
        <span className="export-options">
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
