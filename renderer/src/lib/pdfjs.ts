// pdf.js in the renderer: loaded on first use (it is large), its worker a file of the build (Vite emits
// pdf.worker.min.mjs as an asset; worker-src 'self' allows it), its data (CMaps, standard fonts, image
// decoders) under pdfjs/ beside the build, and a document opened from its bytes (the stored original,
// lib/document-file.ts). A password-protected PDF asks for its password through
// `askPassword` (again, saying so, when it was wrong).
import type { PDFDocumentProxy } from 'pdfjs-dist';

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
  // pdf.js wants absolute folder URLs ending in '/': the data vite.config.ts copies beside the build.
  const data = (dir: string) => new URL(`pdfjs/${dir}/`, document.baseURI).href;
  const task = pdfjs.getDocument({
    data: bytes,
    cMapUrl: data('cmaps'),
    cMapPacked: true,
    standardFontDataUrl: data('standard_fonts'),
    wasmUrl: data('wasm'),
    iccUrl: data('iccs'),
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
