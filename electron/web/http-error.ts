// An error the web host answers with a given HTTP status, and the status of every API error code, so that
// /api/call, /api/upload, the WebSocket and /v1 answer the same mistake the same way.
import type { ApiError } from '../api/contract.ts';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code = 'HTTP_' + status,
  ) {
    super(message);
  }
}

/** Codes that mean the request itself is wrong (the client can fix it). */
const BAD_REQUEST_CODES = new Set([
  'BAD_REQUEST',
  'UNKNOWN_METHOD',
  'INVALID_ARGUMENT',
  'INVALID_TOKEN',
  'CONTEXT_FULL',
  'DOC_TOO_LONG',
  'PAGES_DO_NOT_FIT',
  'BAD_URL',
]);
/** Codes that mean this machine failed, not the caller. */
const SERVER_CODES = new Set(['INTERNAL', 'OUT_OF_MEMORY', 'DISK_FULL', 'FILE_WRITE_FAILED', 'PROTOCOL_ERROR']);
/** The engine is down or going down: try again later. */
const UNAVAILABLE_CODES = new Set([
  'ENGINE_CRASHED',
  'ENGINE_STOPPED',
  'ENGINE_UNAVAILABLE',
  'SHUTTING_DOWN',
  'GPU_UNAVAILABLE',
]);

/** HTTP status of an API error code: 4xx for whatever the caller can change, 5xx only for our own failures. */
export function statusOfCode(code: string): number {
  if (BAD_REQUEST_CODES.has(code)) return 400;
  if (code.endsWith('NOT_FOUND')) return 404;
  if (code === 'FORBIDDEN') return 403;
  if (code === 'BUSY' || code === 'CONFLICT' || code === 'EXISTS') return 409;
  if (SERVER_CODES.has(code)) return 500;
  if (UNAVAILABLE_CODES.has(code)) return 503;
  return 422; // understood but refused: no model chosen, an unsupported model, a document not ready...
}

export function statusOf(e: ApiError | HttpError): number {
  return e instanceof HttpError ? e.status : statusOfCode(e.code);
}
