// The parsing side of pdf.js, in a worker thread of its own (plain JavaScript, so it runs without tsx).
// pdf.ts talks to it through the MessagePort in workerData with pdf.js's own protocol; running it here
// keeps long parses off the main thread and lets pdf.ts stop a parse that hangs by terminating the thread.
// pdf.js's messages (warnings about fonts, images, broken objects) are not for the user: the console is
// silenced here, and pdf.ts gives the thread its own stdout/stderr that nobody reads.
import { workerData } from 'node:worker_threads';

for (const k of ['log', 'info', 'warn', 'error', 'debug', 'trace']) console[k] = () => {};

const { WorkerMessageHandler } = await import('pdfjs-dist/legacy/build/pdf.worker.mjs');
WorkerMessageHandler.initializeFromPort(workerData.port);
