// pdf.js ships no types for its parser side; pdf.ts only loads it into the parser thread as the fake worker.
declare module 'pdfjs-dist/legacy/build/pdf.worker.mjs' {
  export const WorkerMessageHandler: unknown;
}
