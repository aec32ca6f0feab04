// The import button's file picker: the desktop shell's own dialog, or a hidden file input in a browser.
import { useRef } from 'react';

import { api } from '../api/client.ts';
import { ACCEPTED_EXTENSIONS, importFiles, openImportDialog } from '../stores/documents.ts';

/** Opens the platform's file picker: the desktop shell's own dialog, or the page's file input. */
export function useImportPicker(): { open: () => void; input: React.ReactNode } {
  const ref = useRef<HTMLInputElement>(null);
  const open = () => {
    if (api().shell) void openImportDialog();
    else ref.current?.click();
  };
  const input = (
    <input
      ref={ref}
      type="file"
      multiple
      accept={ACCEPTED_EXTENSIONS.join(',')}
      className="sr-only"
      tabIndex={-1}
      aria-hidden="true"
      data-testid="import-input"
      onChange={(e) => {
        const files = [...(e.currentTarget.files ?? [])];
        e.currentTarget.value = '';
        if (files.length) void importFiles(files);
      }}
    />
  );
  return { open, input };
}
