// The native dialog that confirms a download by URL (grants.ts asks for it). It is shown by the main
// process, so a renderer can neither skip it nor draw a look-alike of it; it names the host plainly (as the
// URL parser spells it: punycode, not look-alike letters) and the whole address. One at a time: a page that
// calls in a loop gets BUSY, not a stack of dialogs.
import type { MessageBoxOptions } from 'electron';

import { ApiError } from '../api/contract.ts';

/** A longer address is no download link, and would not fit in a dialog. */
export const MAX_DOWNLOAD_URL_CHARS = 2048;

export const DOWNLOAD_BUTTON = 0;
export const CANCEL_BUTTON = 1;

/** The message box for `url` (already a valid URL: the contract checked it). */
export function downloadConfirmationOptions(url: string): MessageBoxOptions {
  const host = new URL(url).host;
  return {
    type: 'question',
    title: 'Download a model',
    message: `Download a model from ${host}?`,
    detail: `${url}\n\nOnly download files you expect: Folio saves the file in its models folder and may load it.`,
    buttons: ['Download', 'Cancel'],
    defaultId: CANCEL_BUTTON,
    cancelId: CANCEL_BUTTON,
    noLink: true,
  };
}

/** `show`: dialog.showMessageBox (with the window, when there is one). Returns the confirmDownload of grants.ts. */
export function createDownloadConfirmer(
  show: (options: MessageBoxOptions) => Promise<{ response: number }>,
): (url: string) => Promise<boolean> {
  let asking = false;
  return async (url) => {
    if (url.length > MAX_DOWNLOAD_URL_CHARS)
      throw new ApiError('BAD_REQUEST', `a download URL has at most ${MAX_DOWNLOAD_URL_CHARS} characters`);
    if (asking) throw new ApiError('BUSY', 'Folio is already asking you about a download: answer that dialog first');
    asking = true;
    try {
      return (await show(downloadConfirmationOptions(url))).response === DOWNLOAD_BUTTON;
    } finally {
      asking = false;
    }
  };
}
