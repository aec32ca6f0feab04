// Documents the OS hands to Folio: on the command line (Windows and Linux: "Open with", a double click, a
// drop on the launcher), in a second launch (forwarded to the first by the single-instance lock), or by
// macOS's open-file event (which may come before the app is ready). Each becomes documents.import by path,
// and the renderer hears what came of it (bridge.ts, ShellEvent 'document-opened').
import { existsSync, statSync } from 'node:fs';
import { extname, isAbsolute, resolve } from 'node:path';

import type { ApiErrorShape } from '../api/contract.ts';
import { toApiError } from '../api/dispatcher.ts';
import type { OpenedDocument } from '../api/bridge.ts';
import type { DispatcherLike } from './ipc.ts';

/** The document types the open dialog offers and the OS may hand over (electron-builder's fileAssociations too). */
export { DOCUMENT_EXTENSIONS } from '../shared/document-extensions.ts';
import { DOCUMENT_EXTENSIONS } from '../shared/document-extensions.ts';
export const MODEL_EXTENSIONS = ['gguf'] as const;

export function isDocumentPath(path: string): boolean {
  const ext = extname(path).slice(1).toLowerCase();
  return (DOCUMENT_EXTENSIONS as readonly string[]).includes(ext);
}

/**
 * The document files named on a command line: arguments that are not switches, have a document extension
 * and name an existing file (relative ones against `cwd`). The executable (argv[0]) and, when running
 * unpackaged, the app's folder are never documents, having no such extension.
 */
export function filesFromArgv(argv: readonly string[], cwd: string, exists: (p: string) => boolean = isFile): string[] {
  const out: string[] = [];
  let afterDashes = false;
  for (const arg of argv.slice(1)) {
    if (arg === '--') {
      afterDashes = true;
      continue;
    }
    if (!afterDashes && arg.startsWith('-')) continue;
    if (!isDocumentPath(arg)) continue;
    const path = isAbsolute(arg) ? arg : resolve(cwd, arg);
    if (exists(path) && !out.includes(path)) out.push(path);
  }
  return out;
}

function isFile(p: string): boolean {
  try {
    return existsSync(p) && statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * Imports documents once the core is up; paths that arrive before are kept in order. `notify` tells the
 * renderer (shell.ts queues it until the page has loaded).
 */
export class FileOpener {
  private queue: string[] = [];
  private dispatcher: DispatcherLike | null = null;

  constructor(private readonly notify: (document: OpenedDocument) => void) {}

  /** The core is ready: imports everything queued so far. */
  ready(dispatcher: DispatcherLike): Promise<OpenedDocument[]> {
    this.dispatcher = dispatcher;
    const queued = this.queue.splice(0);
    return Promise.all(queued.map((p) => this.importOne(p)));
  }

  /** Opens documents (now, or when the core is ready). */
  open(paths: readonly string[]): Promise<OpenedDocument[]> {
    const docs = paths.filter(isDocumentPath);
    if (!this.dispatcher) {
      for (const p of docs) if (!this.queue.includes(p)) this.queue.push(p);
      return Promise.resolve([]);
    }
    return Promise.all(docs.map((p) => this.importOne(p)));
  }

  /** Paths waiting for the core. */
  pending(): readonly string[] {
    return this.queue;
  }

  private async importOne(path: string): Promise<OpenedDocument> {
    let result: OpenedDocument;
    try {
      const r = (await this.dispatcher!.dispatch('documents.import', { path })) as {
        documentId: string;
        taskId: string;
      };
      result = { path, ok: true, documentId: r.documentId, taskId: r.taskId };
    } catch (e) {
      const error: ApiErrorShape = { code: toApiError(e).code, message: toApiError(e).message };
      console.error(`folio: could not open ${path}: ${error.message}`);
      result = { path, ok: false, error };
    }
    this.notify(result);
    return result;
  }
}
