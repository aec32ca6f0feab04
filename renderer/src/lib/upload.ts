// Browser uploads: a picked or dropped file goes to the web host that served this page as its raw bytes
// (POST /api/upload), streamed from disk by the browser, never read into memory or base64-encoded here.
// The page's own Origin is its credential (see electron/web/access.ts); no token is needed.
import {
  ApiError,
  UPLOAD_FILE_NAME_HEADER,
  UPLOAD_KEEP_DUPLICATE_HEADER,
  UPLOAD_ROUTE,
} from '../../../electron/api/contract.ts';
import { MAX_DOCUMENT_BYTES } from '../../../electron/shared/limits.ts';
import { formatBytes } from './format.ts';

export async function uploadDocument(
  file: File,
  fetchImpl: typeof fetch = fetch,
  /** Keep the file when the library has it already (documents.import's keepDuplicate). */
  o: { keepDuplicate?: boolean } = {},
): Promise<{ documentId: string; taskId: string }> {
  if (file.size > MAX_DOCUMENT_BYTES)
    throw new ApiError(
      'TOO_LARGE',
      `the file is ${formatBytes(file.size)}; the largest document Folio reads is ${formatBytes(MAX_DOCUMENT_BYTES)}`,
    );
  let res: Response;
  try {
    res = await fetchImpl(UPLOAD_ROUTE, {
      method: 'POST',
      body: file,
      headers: {
        'content-type': 'application/octet-stream',
        [UPLOAD_FILE_NAME_HEADER]: encodeURIComponent(file.name),
        ...(o.keepDuplicate ? { [UPLOAD_KEEP_DUPLICATE_HEADER]: '1' } : {}),
      },
    });
  } catch (e) {
    throw new ApiError('DISCONNECTED', `the upload did not reach Folio: ${(e as Error).message}`);
  }
  const body = (await res.json().catch(() => null)) as {
    result?: { documentId: string; taskId: string };
    error?: { code: string; message: string; details?: unknown };
  } | null;
  if (res.ok && body?.result) return body.result;
  throw new ApiError(
    body?.error?.code ?? `HTTP_${res.status}`,
    body?.error?.message ?? `the upload failed (HTTP ${res.status})`,
    body?.error?.details,
  );
}
