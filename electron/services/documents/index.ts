// The documents of the library, one part per concern, over one shared context (context.ts):
//   library    the list, a document's detail, renaming, deleting, its stored files
//   imports    a file (by path, by content, an upload) into the library, parsed in a task
//   reader     reading a document into the model, its saved cache and its pristine session
//   inspector  what the compression kept: one head's positions, the retention map, two methods compared
import type { EventBus } from '../../api/dispatcher.ts';
import type { Storage } from '../../storage/index.ts';
import { privateDir } from '../../storage/private-files.ts';
import type { DocumentFiles } from '../document-files.ts';
import type { EngineManager } from '../engine-manager.ts';
import type { ModelsService } from '../models-service.ts';
import type { Tasks } from '../tasks.ts';
import { type DocumentsContext, HeldFiles, OcrChoices } from './context.ts';
import { OCR_ASK_OVER_SECONDS } from '../../shared/ocr.ts';
import { DocumentImports } from './imports.ts';
import { DocumentInspector } from './inspector.ts';
import { DocumentLibrary } from './library.ts';
import { DocumentReader } from './reader.ts';

export type { DocumentFile } from './library.ts';

export interface DocumentsOptions {
  storage: Storage;
  engine: EngineManager;
  models: ModelsService;
  tasks: Tasks;
  bus: EventBus;
  /** Where the compressed caches are saved. */
  cacheDir: string;
  /** How often a chunked read saves where it stands (seconds; default 30). */
  checkpointSeconds?: number;
  /** The imported originals, which the document view shows. */
  files?: DocumentFiles;
  /** Where the user adds OCR languages (Tesseract's <code>.traineddata files); none: English only. */
  ocrLanguagesDir?: string;
  /** An import stops for the choice of pages when its OCR would take longer than this (seconds; default
   * OCR_ASK_OVER_SECONDS). */
  ocrAskOverSeconds?: number;
}

export class Documents {
  readonly library: DocumentLibrary;
  readonly imports: DocumentImports;
  readonly reader: DocumentReader;
  readonly inspector: DocumentInspector;

  constructor(o: DocumentsOptions) {
    privateDir(o.cacheDir);
    o.files?.sweep(o.storage.documents.sha256s());
    const ctx: DocumentsContext = {
      ...o,
      checkpointSeconds: o.checkpointSeconds ?? 30,
      ocrAskOverSeconds: o.ocrAskOverSeconds ?? OCR_ASK_OVER_SECONDS,
      ocrChoices: new OcrChoices(),
      held: new HeldFiles(),
      changed: (id) => this.library.changed(id),
    };
    this.library = new DocumentLibrary(ctx);
    this.reader = new DocumentReader(ctx);
    this.imports = new DocumentImports(ctx, this.reader);
    this.inspector = new DocumentInspector(ctx);
  }
}
