// Importing a file into the library: refused before any record when its kind is wrong or the library has it
// already (by content), kept by content as the document's original, parsed in a task (the file held meanwhile,
// for trying again or a PDF's password), then read into the model (reader.ts).
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';

import { ApiError, type OcrChoice, type OcrPages, type Params, type Result } from '../../api/contract.ts';
import {
  MAX_DOCUMENT_BYTES,
  detectKind,
  importDocument,
  readDocumentFile,
  type ImportedDocument,
} from '../../documents/index.ts';
import { baseName } from '../../documents/detect.ts';
import { checkOcrRange, isFileFault, isImportError } from '../../documents/errors.ts';
import { OcrCache, ocrLanguages, ocrSpeed, recordOcrSpeed, type OcrLanguage } from '../../documents/ocr.ts';
import { copyOwned, tooLarge } from '../../documents/read-file.ts';
import { sha256Hex } from '../document-files.ts';
import { ocrCacheDir, type DocumentsContext } from './context.ts';
import type { DocumentReader } from './reader.ts';

export class DocumentImports {
  constructor(
    private readonly ctx: DocumentsContext,
    private readonly reader: DocumentReader,
  ) {}

  /**
   * Imports a file and compresses it; returns, once the file is read and its kind known, with the task that
   * does the work. A path must be a regular file of at most MAX_DOCUMENT_BYTES; bytes come base64-encoded.
   */
  async import(params: Params<'documents.import'>): Promise<Result<'documents.import'>> {
    this.requireModel();
    if ('documentId' in params) return this.importAgain(params.documentId, params.password, params.ocrPages);
    const how = { password: params.password, keepDuplicate: params.keepDuplicate, ocrPages: params.ocrPages };
    if ('path' in params) {
      const hash = createHash('sha256');
      const bytes = await readDocumentFile(params.path, { hash });
      return this.start(baseName(params.path), bytes, hash.digest('hex'), how);
    }
    const fileName = baseName(params.fileName);
    // Refused before decoding: base64 takes 4 characters for 3 bytes.
    const size = Math.floor((params.dataBase64.length * 3) / 4);
    if (size > MAX_DOCUMENT_BYTES + 2) throw tooLarge(fileName, size, MAX_DOCUMENT_BYTES);
    // At most a JSON body's worth (MAX_INLINE_BASE64_CHARS): hashed at once in a few milliseconds.
    const bytes = ownedBytes(Buffer.from(params.dataBase64, 'base64'));
    return this.start(fileName, bytes, sha256Hex(bytes), how);
  }

  /** Reads again the held file of a failed import (trying again, or with the PDF's password). */
  private importAgain(
    documentId: string,
    password: string | undefined,
    ocrPages: OcrPages | undefined,
  ): Result<'documents.import'> {
    const doc = this.ctx.storage.documents.require(documentId);
    const file = this.ctx.held.get(documentId);
    if (doc.status !== 'failed' || !file)
      throw new ApiError(
        'FILE_NOT_HELD',
        doc.status === 'failed'
          ? `Folio no longer holds ${doc.fileName}: import the file again`
          : `${doc.fileName} did not fail to import: there is nothing to read again`,
      );
    return { documentId, taskId: this.startImport(documentId, file.fileName, file.bytes, { password, ocrPages }) };
  }

  /** Answers an import waiting before a long OCR: all its pages, or a range of them (checked against its pages). */
  chooseOcrPages({ documentId, pages }: Params<'documents.chooseOcrPages'>): void {
    const doc = this.ctx.storage.documents.require(documentId);
    const choice = this.ctx.ocrChoices.get(documentId);
    if (!choice)
      throw new ApiError(
        'NOT_WAITING',
        `the import of ${doc.fileName} is not waiting for a choice of pages to read by OCR (it was cancelled, or goes on already)`,
      );
    checkOcrRange(doc.fileName, choice.pages, pages);
    this.ctx.ocrChoices.answer(documentId, pages);
  }

  /**
   * Imports an upload that the web host streamed to `tempPath`. The file becomes this service's: hashed as it
   * is read, then kept as the document's original (moved, not written again) or removed, whether the import
   * then goes on, fails or is cancelled (its bytes are in memory).
   */
  async importUpload(params: {
    fileName: string;
    tempPath: string;
    keepDuplicate?: boolean;
  }): Promise<Result<'documents.import'>> {
    try {
      this.requireModel();
      const hash = createHash('sha256');
      const bytes = await readDocumentFile(params.tempPath, { hash });
      return await this.start(baseName(params.fileName), bytes, hash.digest('hex'), {
        keepDuplicate: params.keepDuplicate,
        original: params.tempPath,
      });
    } finally {
      await rm(params.tempPath, { force: true }).catch(() => {});
    }
  }

  private requireModel(): void {
    if (!this.ctx.storage.settings.get().modelId)
      throw new ApiError('NO_MODEL', 'choose a model first: documents are compressed for the model they are read with');
  }

  /**
   * Checks the kind (a bad file fails here, before any record) and whether the library has the file
   * already (by its content), then parses and compresses in a task. A file already there is refused with
   * DUPLICATE unless kept; one whose import failed before is read again into that document.
   */
  private async start(
    fileName: string,
    bytes: Uint8Array,
    sha256: string,
    o: { password?: string; keepDuplicate?: boolean; original?: string; ocrPages?: OcrPages } = {},
  ): Promise<Result<'documents.import'>> {
    const kind = detectKind(bytes, fileName);
    const same = this.ctx.storage.documents.findBySha256(sha256);
    const failed = same.find((d) => d.status === 'failed');
    const present = same.find((d) => d.status !== 'failed');
    if (present && !o.keepDuplicate)
      throw new ApiError(
        'DUPLICATE',
        `${fileName} is already in the library as “${present.title}”: open that one, or import it again to keep both`,
        { documentId: present.id, title: present.title },
      );
    // The original is kept by its content before the parser takes the bytes (document-files.ts): an upload's
    // file is moved into place; other bytes are written, off the event loop.
    if (this.ctx.files && o.original) await this.ctx.files.adopt(o.original, sha256);
    else await this.ctx.files?.put(bytes, sha256);
    const doc =
      failed ?? this.ctx.storage.documents.create({ title: fileName, kind, fileName, sha256, status: 'importing' });
    return { documentId: doc.id, taskId: this.startImport(doc.id, fileName, bytes, o) };
  }

  /** The import task: parse (the file held meanwhile, for trying again), store the pages, compress. A scan whose
   * OCR would be long stops before it for the user's choice of pages (ocrChoices), then is parsed again with it. */
  private startImport(
    documentId: string,
    fileName: string,
    bytes: Uint8Array,
    o: { password?: string; ocrPages?: OcrPages },
  ): string {
    for (const id of this.ctx.held.hold(documentId, fileName, bytes)) this.ctx.changed(id);
    const { sha256 } = this.ctx.storage.documents.require(documentId);
    this.ctx.storage.documents.update(documentId, { status: 'importing', error: null });
    this.ctx.changed(documentId);
    const { taskId } = this.ctx.tasks.start('import', documentId, async (task) => {
      try {
        const kept = ocrCacheDir(this.ctx.cacheDir);
        let imported: ImportedDocument | undefined;
        for (let ocrPages = o.ocrPages; !imported; ) {
          const speed = ocrSpeed(kept);
          try {
            imported = await importDocument(
              // A copy goes to the parser thread: the file stays held until it is read.
              { fileName, bytes: await copyOwned(bytes) },
              {
                signal: task.signal,
                transferBytes: true,
                password: o.password,
                ocrCache: kept,
                ocrLanguages: this.languages(),
                ocrPages,
                ocrAsk: { overSeconds: this.ctx.ocrAskOverSeconds, secondsPerPage: speed.secondsPerPage },
                onProgress: (d, t, stage) =>
                  stage === 'ocr'
                    ? task.progress(
                        'ocr',
                        d,
                        t,
                        `recognising the text of ${fileName} (OCR): page ${Math.min(d + 1, t)} of ${t}`,
                      )
                    : task.progress('import', d, t, `reading ${fileName}`),
              },
            );
          } catch (e) {
            if (!isImportError(e, 'OCR_CHOICE')) throw e;
            // A long OCR: nothing is recognised until the user chooses (the UI shows the summary's ocrChoice).
            const wait = this.ctx.ocrChoices.wait(
              documentId,
              fileName,
              { ...(e.details as Omit<OcrChoice, 'measured'>), measured: speed.measured },
              task.signal,
            );
            task.progress('ocr', 0, 0, e.message);
            this.ctx.changed(documentId);
            try {
              ocrPages = await wait;
            } finally {
              this.ctx.changed(documentId);
            }
          }
        }
        recordOcrSpeed(kept, imported.ocrSeconds);
        this.ctx.held.delete(documentId);
        this.ctx.storage.documents.update(documentId, {
          title: this.keptTitle(documentId, sha256, imported.title || fileName),
        });
        if (sha256 && imported.html !== undefined) this.ctx.files?.putDerived(sha256, 'html', imported.html);
        if (sha256 && imported.pdf !== undefined) this.ctx.files?.putDerived(sha256, 'pdf', imported.pdf);
        await this.ctx.storage.content.setContent(documentId, {
          pages: imported.pages.map(({ ocr, ...p }) => ({
            ...p,
            tokenStart: 0,
            tokenEnd: 0,
            ...(ocr
              ? {
                  ocr: { language: ocr.language, confidence: ocr.confidence, ...(ocr.unread ? { unread: true } : {}) },
                  ocrWords: ocr.words,
                }
              : {}),
          })),
          tokens: [],
        });
        // Its recognised pages are stored with it now: their resume copies go.
        OcrCache.clear(kept, imported.sha256);
        await this.reader.read(documentId, task, undefined);
      } catch (e) {
        this.reader.fail(documentId, e, task);
        // A damaged (or empty, unsupported...) file cannot be read by trying again: its bytes are not kept.
        if (isFileFault((e as { code?: string }).code ?? null)) this.letGo(documentId, sha256);
        throw e;
      }
    });
    return taskId;
  }

  /** The languages the settings ask OCR to read in, of those there are (one removed from the folder is left out). */
  private languages(): OcrLanguage[] {
    const there = ocrLanguages(this.ctx.ocrLanguagesDir ?? null);
    const chosen = there.filter((l) => this.ctx.storage.settings.get().ocrLanguages.includes(l.code));
    return chosen.length ? chosen : there.slice(0, 1);
  }

  /** Lets go of a failed import's file: the copy held for trying again, and the stored original unless
   * another document was made from it. */
  private letGo(documentId: string, sha256: string | null): void {
    this.ctx.held.delete(documentId);
    const others = sha256 ? this.ctx.storage.documents.findBySha256(sha256).filter((d) => d.id !== documentId) : [];
    if (sha256 && others.length === 0) this.ctx.files?.remove(sha256);
    this.ctx.changed(documentId);
  }

  /**
   * The title of a document, told apart from the other copies of its file (a duplicate kept beside them):
   * `title (2)`, `title (3)`… when one of them has `title` already.
   */
  private keptTitle(documentId: string, sha256: string | null, title: string): string {
    const copies = sha256 ? this.ctx.storage.documents.findBySha256(sha256) : [];
    const taken = new Set(copies.filter((d) => d.id !== documentId).map((d) => d.title));
    let kept = title;
    for (let n = 2; taken.has(kept); n++) kept = `${title} (${n})`;
    return kept;
  }
}

/**
 * The bytes of a Buffer as a Uint8Array that owns its whole ArrayBuffer, so that holding them (a failed
 * import's file) holds nothing else: a big Buffer already does (no copy); a small one lives in Node's
 * shared pool and is copied.
 */
function ownedBytes(b: Buffer): Uint8Array {
  if (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer)
    return new Uint8Array(b.buffer);
  return new Uint8Array(b);
}
