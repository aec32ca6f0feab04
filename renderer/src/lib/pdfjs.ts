// pdf.js in the renderer: loaded on first use (it is large), its worker a file of the build (Vite emits
// pdf.worker.min.mjs as an asset; worker-src 'self' allows it), and a document opened from its stored
// original (documentFileRoute, the same path on the web host and the desktop app's protocol). A
// password-protected PDF asks for its password through `askPassword` (again, saying so, when it was wrong).
import type { PDFDocumentProxy } from 'pdfjs-dist';

import { documentFileRoute } from '../../../electron/api/contract.ts';

type Pdfjs = typeof import('pdfjs-dist');

let pdfjsModule: Promise<Pdfjs> | null = null;

export function loadPdfjs(): Promise<Pdfjs> {
  pdfjsModule ??= (async () => {
    const [pdfjs, worker] = await Promise.all([
      import('pdfjs-dist'),
      import('pdfjs-dist/build/pdf.worker.min.mjs?url'),
    ]);
    pdfjs.GlobalWorkerOptions.workerSrc = worker.default;
    return pdfjs;
  })();
  pdfjsModule.catch(() => {
    pdfjsModule = null;
  });
  return pdfjsModule;
}

/** The stored original of a document; an Error with the host's message when there is none. */
export async function fetchDocumentFile(documentId: string): Promise<Uint8Array> {
  const res = await fetch(documentFileRoute(documentId), { credentials: 'same-origin' });
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const body = (await res.json()) as { error?: { message?: string } };
      message = body.error?.message ?? message;
    } catch {
      // not JSON (the desktop protocol answers text): the status says enough
    }
    throw new Error(`the original file could not be loaded: ${message}`);
  }
  return new Uint8Array(await res.arrayBuffer());
}

/** Thrown when the user declines to give a PDF's password. */
export class PasswordDeclined extends Error {
  constructor() {
    super('the PDF is password-protected and no password was given');
  }
}

/**
 * Opens a PDF from its bytes. `askPassword(wrong)` is asked when pdf.js needs a password (wrong: the last one
 * was not it) and answers the password, or null to give up (then PasswordDeclined).
 */
export async function openPdf(
  bytes: Uint8Array,
  askPassword: (wrong: boolean) => Promise<string | null>,
): Promise<PDFDocumentProxy> {
  const pdfjs = await loadPdfjs();
  const task = pdfjs.getDocument({
    data: bytes,
    verbosity: pdfjs.VerbosityLevel.ERRORS,
    isEvalSupported: false,
    enableXfa: false,
  });
  let declined = false;
  task.onPassword = (update: (password: string) => void, reason: number) => {
    void askPassword(reason === pdfjs.PasswordResponses.INCORRECT_PASSWORD).then((password) => {
      if (password === null) {
        declined = true;
        void task.destroy();
      } else update(password);
    });
  };
  try {
    return await task.promise;
  } catch (e) {
    if (declined) throw new PasswordDeclined();
    throw e;
  }
}
