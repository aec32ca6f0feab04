// A document's stored files, fetched from documentFileRoute: the same path on the web host and under the
// desktop app's own protocol, so a path relative to the page reaches the right one.
import { documentFileRoute, type DocumentFilePart } from '../../../electron/api/contract.ts';

async function fetchPart(documentId: string, part: DocumentFilePart): Promise<Response> {
  const res = await fetch(documentFileRoute(documentId, part), { credentials: 'same-origin' });
  if (res.ok) return res;
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = (await res.json()) as { error?: { message?: string } };
    message = body.error?.message ?? message;
  } catch {
    // not JSON (the desktop protocol answers text): the status says enough
  }
  throw new Error(`the document's ${part === 'html' ? 'HTML' : 'original file'} could not be loaded: ${message}`);
}

/** The stored original's bytes; an Error with the host's message when there is none. */
export async function fetchDocumentFile(documentId: string, part: 'file' | 'pdf' = 'file'): Promise<Uint8Array> {
  return new Uint8Array(await (await fetchPart(documentId, part)).arrayBuffer());
}

/**
 * A stored part as text: the HTML of a Word document, or a Markdown original (UTF-8, else Windows-1252, as
 * the importer decodes text files that are not UTF-8).
 */
export async function fetchDocumentText(documentId: string, part: DocumentFilePart): Promise<string> {
  const bytes = new Uint8Array(await (await fetchPart(documentId, part)).arrayBuffer());
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return new TextDecoder('windows-1252').decode(bytes);
  }
}
