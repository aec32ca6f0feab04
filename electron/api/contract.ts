// The one API contract between the UI and the app core: every method with its parameter and result
// schemas, every event the core pushes, and the error shape. Defined once; the Electron IPC bridge and the
// web host (HTTP/WebSocket) both carry exactly this, and both validate with these schemas at run time.
import { z } from 'zod';
import { OCR_LANGUAGE_CODE } from '../shared/ocr.ts';

import { CHAT_STYLES } from '../shared/chat-style.ts';
import { BACKEND_CHOICES, ENGINE_STATES } from '../shared/compute-backends.ts';
import { MAX_CHAT_DOCUMENTS } from '../shared/limits.ts';
import { BudgetValue } from '../shared/kv/budget.ts';
import { CompressionMethod, METHOD_TABLE, RECOMMENDED_METHOD, methodRow } from '../shared/kv/methods.ts';
import { compressOption, samplingOption } from '../shared/kv/options.ts';
import { KvType } from '../shared/kv/precision.ts';
import { CompressionStats } from '../shared/kv/stats.ts';

// ---------------------------------------------------------------------------------------------------------
// Shared shapes

export const Id = z.string().min(1).max(128);

export { CompressionMethod };

/** What a method is compared with by default: the same scorer and schedule under the other head allocator
 * (Ada against uniform and back), or the recommended method for the unscored ones. */
export function compareCounterpart(method: CompressionMethod): CompressionMethod {
  const m = methodRow(method);
  if (m.selection !== 'scored') return RECOMMENDED_METHOD;
  const other = m.allocator === 'ada' ? 'uniform' : 'ada';
  return METHOD_TABLE.find((r) => r.scorer === m.scorer && r.schedule === m.schedule && r.allocator === other)!.name;
}

/**
 * How a document's KV cache is compressed. budget: a kept ratio (<= 1) or tokens per KV head (> 1). Every
 * bound is the engine's own (shared/kv/options.ts).
 */
/**
 * Where a compressed document sits in the context (docs/compression.md, "Packed positions"): 'own', at its
 * tokens' positions (re-based only when it is longer than the context); 'packed', its kept entries at
 * contiguous positions, so that the document takes as many positions as the most entries a head keeps and the
 * conversation gets what compression freed (answers somewhat less accurate, no citations: docs/quality.md);
 * 'auto', packed when the document at its own positions would leave the conversation less than its room.
 */
export const DocumentPositions = z.enum(['auto', 'own', 'packed']);
export type DocumentPositions = z.infer<typeof DocumentPositions>;

export const CompressionSettings = z.object({
  method: CompressionMethod,
  budget: BudgetValue,
  alpha: compressOption('alpha'),
  window: compressOption('window'),
  kernel: compressOption('kernel'),
  /** Pyramid steepness, for the methods with the pyramid schedule; absent: the engine's default (20). */
  beta: compressOption('beta').optional(),
  /** Absent: 'auto'. */
  positions: DocumentPositions.optional(),
});
export type CompressionSettings = z.infer<typeof CompressionSettings>;

/** How answers are sampled, within the engine's bounds (shared/kv/options.ts). */
export const SamplingSettings = z.object({
  temperature: samplingOption('temperature'),
  topK: samplingOption('topK'),
  topP: samplingOption('topP'),
  minP: samplingOption('minP'),
  repeatPenalty: samplingOption('repeatPenalty'),
  /** Most tokens one answer may have. */
  maxTokens: z
    .number()
    .int()
    .min(1)
    .max(1 << 20),
  seed: samplingOption('seed').nullable(),
});
export type SamplingSettings = z.infer<typeof SamplingSettings>;

export const Theme = z.enum(['system', 'light', 'dark']);

/**
 * The context a session gets when none is asked for: the model's own, at most this many tokens (the engine's
 * default too: a session created without nCtx gets the same). Longer contexts are a setting, because the KV
 * cache grows with them.
 */
export const DEFAULT_CONTEXT_TOKENS = 8192;

export const Settings = z.object({
  /** The model chats run on (an id from models.list). */
  modelId: Id.nullable(),
  compression: CompressionSettings,
  sampling: SamplingSettings,
  systemPrompt: z.string().max(100_000),
  /** Context length cap. A document is read into a context sized to it (its tokens plus the conversation
   * room, up to the model's trained context and this cap); other sessions get this, or null: the model's own
   * up to DEFAULT_CONTEXT_TOKENS. A cap beyond the model's trained context is refused. */
  nCtx: z.number().int().min(64).nullable(),
  /** Positions kept free after a document for the conversation; null: 1,024, at most a quarter of the context. */
  conversationRoom: z
    .number()
    .int()
    .min(16)
    .max(1 << 20)
    .nullable(),
  /** Engine threads; null: all cores. */
  threads: z.number().int().min(1).max(1024).nullable(),
  /** Cache precision: how each kept key and value is stored (shared/kv/precision.ts); f16 by default. A document's
   * cache is read again when it changes. */
  kvType: KvType,
  /** The values' type where it differs from the keys' (kvType); null: the same. */
  kvTypeV: KvType.nullable(),
  /** Rotate quantized keys and values before quantizing (a Hadamard transform over each head). */
  kvRotate: z.boolean(),
  /** Where the engine computes: 'auto' (CUDA, else a discrete Vulkan GPU, else the CPU) or a backend by name
   * (an integrated GPU runs only when named). The chats and reads that start after a change use it. */
  backend: z.enum(BACKEND_CHOICES),
  theme: Theme,
  /** Folders searched for GGUF models besides the known places. */
  modelFolders: z.array(z.string().min(1)),
  /** The languages OCR reads scans in (Tesseract's codes): English is shipped, others are files the user adds to
   * the library's OCR folder (documents.ocrLanguages). */
  ocrLanguages: z.array(z.string().regex(OCR_LANGUAGE_CODE)).min(1).max(6),
});
export type Settings = z.infer<typeof Settings>;

export const SettingsPatch = Settings.partial().extend({
  compression: CompressionSettings.partial().optional(),
  sampling: SamplingSettings.partial().optional(),
});
export type SettingsPatch = z.infer<typeof SettingsPatch>;

// ---------------------------------------------------------------------------------------------------------
// Models

export const ModelSource = z.enum(['lmstudio', 'ollama', 'huggingface', 'folder', 'download', 'added']);

export const ModelEntry = z.object({
  id: Id,
  path: z.string(),
  name: z.string(),
  source: ModelSource,
  fileBytes: z.number(),
  /** From the GGUF header, without loading weights. Null when the file could not be read (see error). */
  architecture: z.string().nullable(),
  /** e.g. Q4_K_M, Q8_0, F16 (general.file_type), or the dominant tensor type. */
  quantization: z.string().nullable(),
  contextLength: z.number().nullable(),
  /** Whether the file carries a chat template; without one (a base model) its chats continue text (ChatStyle). */
  chatTemplate: z.boolean().nullable(),
  parameters: z.number().nullable(),
  layers: z.number().nullable(),
  kvHeads: z.number().nullable(),
  /** False for architectures the engine does not run (the UI greys them out, with the reason). */
  supported: z.boolean(),
  /** Why the engine cannot run it (architecture, split file...); null when supported. */
  unsupportedReason: z.string().nullable(),
  /** The file could not be read as a GGUF model. */
  error: z.string().nullable(),
});
export type ModelEntry = z.infer<typeof ModelEntry>;

export const CatalogEntry = z.object({
  id: Id,
  name: z.string(),
  url: z.string().url(),
  fileBytes: z.number(),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable(),
  description: z.string(),
});
export type CatalogEntry = z.infer<typeof CatalogEntry>;

export const MemoryEstimate = z.object({
  weightBytes: z.number(),
  /** The KV cache of a full context without compression, and with the given compression. */
  kvBytesFull: z.number(),
  kvBytesCompressed: z.number(),
  workingBytes: z.number(),
  totalBytes: z.number(),
  availableBytes: z.number(),
  fits: z.boolean(),
  /** What the numbers mean for the user, e.g. why it does not fit. */
  message: z.string(),
});
export type MemoryEstimate = z.infer<typeof MemoryEstimate>;

export const EngineStatus = z.object({
  state: z.enum(ENGINE_STATES),
  modelId: Id.nullable(),
  /** The compute backend in use, e.g. "cpu (avx2)" or "cuda (NVIDIA H200)". */
  backend: z.string(),
  /** Why that one: the GPU found, or why there is none (no CUDA library in this build, no driver). */
  backendReason: z.string(),
  message: z.string().nullable(),
  /** How many times the engine process was restarted after dying. */
  restarts: z.number().int(),
  /** crashed: a new engine process comes by itself; false once it crashed too often (then engine.restart). */
  willRestart: z.boolean(),
});
export type EngineStatus = z.infer<typeof EngineStatus>;

// ---------------------------------------------------------------------------------------------------------
// Documents

/** image: a PNG or JPEG, read by OCR as a page of its own. */
export const DocumentKind = z.enum(['pdf', 'docx', 'markdown', 'text', 'image']);
export const DocumentStatus = z.enum(['importing', 'compressing', 'ready', 'failed', 'stale']);

/**
 * What can help a failed document: compress it again ('compress'), read its file again ('import': the app
 * still holds the file), give the PDF's password ('password': held too); null: nothing in the app can (a
 * damaged or unsupported file, or a file the app no longer holds: the error says what to do). The rule is
 * failureRemedy (electron/documents/errors.ts).
 */
export const FailureRemedy = z.enum(['compress', 'import', 'password']);
export type FailureRemedy = z.infer<typeof FailureRemedy>;

/** Which of a scan's pages OCR reads (shared/ocr.ts OcrPages): all, or a range (first, last); the text-layer pages of
 * a mixed PDF are read whatever the range. */
export const OcrPages = z.union([
  z.literal('all'),
  z
    .tuple([z.number().int().min(1), z.number().int().min(1)])
    .refine(([a, b]) => a <= b, 'the first page comes after the last'),
]);
export type OcrPages = z.infer<typeof OcrPages>;

/**
 * An import waiting for the user's choice before a long OCR (shared/ocr.ts OcrPlan): the document's pages, those
 * without a text layer that OCR would read, those of them not recognised yet (an earlier try kept the others),
 * and the seconds a page takes on this machine (`measured` here by the imports before, else the documented
 * default). documents.chooseOcrPages answers it; cancelling the import's task ends it.
 */
export const OcrChoice = z.object({
  pages: z.number().int(),
  ocrPages: z.array(z.number().int()),
  pending: z.array(z.number().int()),
  secondsPerPage: z.number(),
  measured: z.boolean(),
});
export type OcrChoice = z.infer<typeof OcrChoice>;

export const DocumentSummary = z.object({
  id: Id,
  title: z.string(),
  kind: DocumentKind,
  fileName: z.string(),
  pages: z.number().int(),
  tokens: z.number().int(),
  /** stale: the saved cache was made with another model or other compression settings. */
  status: DocumentStatus,
  error: z.string().nullable(),
  /** The failure's code (an import error's, an engine's; CANCELLED), null unless failed. */
  errorCode: z.string().nullable(),
  /** What can help a failed document; null when nothing in the app can, or not failed. */
  remedy: FailureRemedy.nullable(),
  createdAt: z.string(),
  modelId: Id.nullable(),
  compression: CompressionSettings.nullable(),
  kvBytesFull: z.number().nullable(),
  kvBytesKept: z.number().nullable(),
  /** The context (positions) the document was read into: its tokens plus room for the conversation, up to the
   * model's; null when read before this was recorded. */
  contextTokens: z.number().int().nullable(),
  /** How the document was read, in a sentence: one pass, chunks, or re-based positions (then with the pages
   * that would fit); null when read before this was recorded. */
  readNote: z.string().nullable(),
  /** The pages the last read took in (first, last) when it read a range of them: the cache knows only those,
   * and the others keep their text with no tokens (-1). Null: the whole document. */
  readPages: z.tuple([z.number().int(), z.number().int()]).nullable(),
  /** What the last read kept (null before a read recorded it): the budget it came to in tokens per head (null:
   * nothing compressed), the positions the document takes, and where its kept entries sit: 'own', at their
   * tokens' positions; 'packed', packed by choice (DocumentPositions); 'rebased', re-based because the
   * document is longer than its context (lower quality; a range of pages that fits is the way out). */
  kept: z
    .object({
      perHead: z.number().int().nullable(),
      positions: z.number().int(),
      placement: z.enum(['own', 'packed', 'rebased']),
    })
    .nullable(),
  /** Present while the import waits for the choice of the pages to read by OCR (a long scan). */
  ocrChoice: OcrChoice.optional(),
});
export type DocumentSummary = z.infer<typeof DocumentSummary>;

/** A page (PDF) or paragraph group (other formats) with the token range it became. */
/** How a page without a text layer was read by OCR (electron/documents/ocr.ts): the language, and the mean
 * confidence (0–100) of its words; `unread`: it needs OCR but lay outside the pages chosen at import, so it has no
 * text (confidence 0). */
export const PageOcr = z.object({
  language: z.string(),
  confidence: z.number().min(0).max(100),
  unread: z.literal(true).optional(),
});
export type PageOcr = z.infer<typeof PageOcr>;

/** A word OCR recognised: its baseline's start, advance and size in the page's display points (y down), as a
 * text layer's item has them, and the recogniser's confidence (0–100). */
export const OcrWord = z.object({
  text: z.string(),
  x: z.number(),
  y: z.number(),
  width: z.number(),
  size: z.number(),
  confidence: z.number(),
});
export type OcrWord = z.infer<typeof OcrWord>;

export const DocumentPage = z.object({
  page: z.number().int().min(1),
  text: z.string(),
  tokenStart: z.number().int(),
  tokenEnd: z.number().int(),
  /** Read by OCR (the page has no text layer): how; its words are documents.pageWords'. */
  ocr: PageOcr.optional(),
});
export type DocumentPage = z.infer<typeof DocumentPage>;

/** The engine's compression statistics (docs/compression.md; electron/shared/kv/stats.ts), the retention map as a plain array. */
export { CompressionStats };

/** A passage of a page and how much of the model's cache kept it: the retention map folded onto text. */
export const RetainedPassage = z.object({
  page: z.number().int(),
  /** Character range in the page's text. */
  start: z.number().int(),
  end: z.number().int(),
  /** Mean over the passage's tokens of the fraction of (layer, KV head) slots that kept the token. */
  retention: z.number().min(0).max(1),
});
export type RetainedPassage = z.infer<typeof RetainedPassage>;

/** Which entries one KV head kept of the document, read from the saved cache (documents.keptPositions). */
export const KeptPositions = z.object({
  layer: z.number().int(),
  head: z.number().int(),
  /** Entries the head holds, the observation window included. */
  kept: z.number().int(),
  prefixTokens: z.number().int(),
  /** The observation window: the prefix's last tokens, which every head keeps; and how many of them this head holds. */
  window: z.number().int(),
  inWindow: z.number().int(),
  /** Kept entries of the system prompt and the chat template around the pages. */
  outsidePages: z.number().int(),
  /** Per page read: its tokens and how many of them the head kept. */
  pages: z.array(z.object({ page: z.number().int(), tokens: z.number().int(), kept: z.number().int() })),
  /** Character ranges of a page's text the head kept (runs of kept tokens); window: in the observation window. */
  spans: z.array(
    z.object({ page: z.number().int(), start: z.number().int(), end: z.number().int(), window: z.boolean() }),
  ),
});
export type KeptPositions = z.infer<typeof KeptPositions>;
/**
 * The observation window: the last `tokens` tokens of the read, which every method keeps whole (the scores
 * were computed from them). It starts on `page` at character `start` and runs to the end of the read; the
 * passages' retention leaves it out, so it does not set the scale.
 */
export const KeptWindow = z.object({
  page: z.number().int(),
  start: z.number().int(),
  tokens: z.number().int(),
});
export type KeptWindow = z.infer<typeof KeptWindow>;

/**
 * What a chat over a set of documents takes (docs/compression.md, "Many documents"), before it is opened: the
 * sum of their kept caches, the positions they take at their own spacing, and so whether they keep them or are
 * packed; how many more documents like these would fit, by positions and by memory.
 */
export const SetEstimate = z.object({
  /** The documents' kept caches together, and uncompressed (null where one is not read yet). */
  keptBytes: z.number().nullable(),
  fullBytes: z.number().nullable(),
  /** Positions at their own spacing: the system prompt once, each document's pages and header. */
  positions: z.number().int(),
  contextTokens: z.number().int(),
  /** Positions kept for the conversation. */
  roomTokens: z.number().int(),
  /** 'own': they fit at their own positions with the room; 'packed': only packed (which may not suffice). */
  placement: z.enum(['own', 'packed']),
  /** Memory free now, and how many more documents of their average kept size it would hold. */
  freeBytes: z.number(),
  moreByMemory: z.number().int().nullable(),
  /** How many more documents of their average length fit the context at their own positions, with the room. */
  moreByPositions: z.number().int(),
});
export type SetEstimate = z.infer<typeof SetEstimate>;

export const DocumentDetail = DocumentSummary.extend({
  pageList: z.array(DocumentPage),
  stats: CompressionStats.nullable(),
  passages: z.array(RetainedPassage),
  /** Where the always-kept window lies in the text; null when nothing was compressed. */
  keptWindow: KeptWindow.nullable(),
  /** The imported original is stored (documentFileRoute serves it); false for documents imported before. */
  hasFile: z.boolean(),
  /** A Word document's HTML is stored (documentFileRoute(id, 'html') serves it). */
  hasHtml: z.boolean(),
  /** An image's page is stored (documentFileRoute(id, 'pdf') serves it): the view shows it as a PDF's. */
  hasPdf: z.boolean(),
});
export type DocumentDetail = z.infer<typeof DocumentDetail>;

// ---------------------------------------------------------------------------------------------------------
// Chats

export const MessageStatus = z.enum(['complete', 'streaming', 'interrupted', 'cancelled', 'failed']);

/** A sentence an answer looked at: its character range in its page's text, and its share of the attention the
 * answer paid the document (docs/citations.md). */
export const CitedSentence = z.object({
  start: z.number().int().min(0),
  end: z.number().int().min(0),
  share: z.number().min(0).max(1),
});
export type CitedSentence = z.infer<typeof CitedSentence>;
/** A page an answer looked at, with its share of the attention the answer paid the document and its sentences
 * that took the most, best first. */
export const CitedPage = z.object({
  /** In a chat over a set of documents, the document of the page. */
  documentId: Id.optional(),
  /** 'words': found by the words the answer shares with the page, not by attention (a set whose attention cannot
   * be read: packed); no sentences then. Absent: attention. */
  basis: z.literal('words').optional(),
  page: z.number().int().min(1),
  share: z.number().min(0).max(1),
  sentences: z.array(CitedSentence),
});
export type CitedPage = z.infer<typeof CitedPage>;

export const Message = z.object({
  id: Id,
  chatId: Id,
  role: z.enum(['user', 'assistant']),
  text: z.string(),
  status: MessageStatus,
  createdAt: z.string(),
  /** Answer tokens and their speed (assistant messages). */
  tokens: z.number().int().nullable(),
  tokensPerSecond: z.number().nullable(),
  /** Pages where the answer's evidence was found: ranked by `citations` where there are some, else by the words
   * the answer shares with each page. */
  pageRefs: z.array(z.number().int()),
  /** The pages the model's attention looked at while it wrote the answer, best first; null where none was
   * measured (the OpenAI endpoint, answers stored before, a document read with re-based positions). In a chat over
   * a set whose attention cannot be read (packed), the pages that share the most words with it (basis 'words'). */
  citations: z.array(CitedPage).nullable(),
  error: z.string().nullable(),
  /** An answer regenerated, or a question edited, keeps its earlier versions (a question's with what followed
   * it): which one this is (1 = the first) of how many. The conversation goes on from the version shown. */
  version: z.object({ index: z.number().int().min(1), count: z.number().int().min(1) }),
});
export type Message = z.infer<typeof Message>;

/** A message whose text matches a chat search, with a piece of its text around the match. */
export const ChatSearchHit = z.object({
  chatId: Id,
  documentId: Id,
  chatTitle: z.string(),
  messageId: Id,
  role: z.enum(['user', 'assistant']),
  /** Text around the first match; [matchStart, matchEnd) is the match within it. */
  snippet: z.string(),
  matchStart: z.number().int(),
  matchEnd: z.number().int(),
  createdAt: z.string(),
});
export type ChatSearchHit = z.infer<typeof ChatSearchHit>;

export const ChatExportFormat = z.enum(['markdown', 'json']);
export type ChatExportFormat = z.infer<typeof ChatExportFormat>;

/** How a chat's turns are written for the model (shared/chat-style.ts); a chat's null: by the model (chatStyleFor). */
export const ChatStyle = z.enum(CHAT_STYLES);
export type ChatStyle = z.infer<typeof ChatStyle>;

/** How a chat over a set reads its documents (docs/compression.md, "Many documents"): 'assembled', their saved
 * caches side by side (opens at once; no document attended to another); 'together', read again as one document
 * (later documents attend to earlier ones; a read of the whole set, saved for the chat). */
export const SET_READINGS = ['assembled', 'together'] as const;
export const SetReading = z.enum(SET_READINGS);
export type SetReading = z.infer<typeof SetReading>;

/** One budget over an assembled set (docs/compression.md, "One budget over the set"): the share of the entries its
 * documents' reads chose by score that the set keeps (each head's observation window always stays), chosen over
 * them all by those scores, so that a document the scorer finds less needed keeps less. */
export const SetBudget = z.number().gt(0).max(1);
/** The one budgets the app offers (any SetBudget may be asked for through the API). */
export const SET_BUDGET_CHOICES = [0.5, 0.25] as const;

export const ChatSummary = z.object({
  id: Id,
  /** The first of its documents. */
  documentId: Id,
  /** The documents the chat is over, in the order the model reads them (one, or a set). */
  documentIds: z.array(Id).min(1),
  title: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  messageCount: z.number().int(),
  style: ChatStyle.nullable(),
  /** How a set is read (one document: 'assembled', which is its own cache). */
  reading: SetReading,
  /** An assembled set's one budget (SetBudget); null: each document keeps what its own read kept. */
  setBudget: SetBudget.nullable(),
});
export type ChatSummary = z.infer<typeof ChatSummary>;

/** A document's part of an assembled set's cache. */
export const SetShare = z.object({
  documentId: Id,
  /** [layer][KV head] its entries in the set. */
  entries: z.array(z.array(z.number().int())),
  /** Its entries before the set's one budget (without one, their sum). */
  before: z.number().int(),
});
export type SetShare = z.infer<typeof SetShare>;

/** How full the context is: the compressed document plus the conversation, against the model's context, in
 * positions; and what the compression bought, in memory. */
export const ContextUsage = z.object({
  /** Positions of the system prompt and the chat template around the document. */
  systemTokens: z.number().int(),
  /** Positions of the document itself (fewer than its tokens when it was read with re-based positions). */
  documentTokens: z.number().int(),
  /** The document's kept entries sit at packed (re-based) positions: it takes fewer positions than its tokens. */
  documentPacked: z.boolean(),
  /** Positions the conversation holds, never more than the context leaves it. */
  conversationTokens: z.number().int(),
  contextTokens: z.number().int(),
  /** The document's cache as kept, and as it would be uncompressed (null before it is read). */
  kvBytesKept: z.number().nullable(),
  kvBytesFull: z.number().nullable(),
  /** A set as assembled: each document's kept entries per layer and KV head (the inspector's shares); absent
   * for one document, a set read together, or one not assembled yet. */
  setShares: z.array(SetShare).optional(),
});

// ---------------------------------------------------------------------------------------------------------
// Tasks (long operations: import, prefill, compression, model load, downloads)

/** ocr: the import's recognition of the pages without a text layer (per page, slow: its own progress and time). */
export const TaskKind = z.enum(['import', 'ocr', 'prefill', 'compress', 'save', 'load-model', 'download', 'compare']);
export type TaskKind = z.infer<typeof TaskKind>;

export const TaskProgress = z.object({
  taskId: Id,
  kind: TaskKind,
  documentId: Id.nullable(),
  done: z.number(),
  total: z.number(),
  /** Estimated milliseconds left; null when not yet known. */
  etaMs: z.number().nullable(),
  message: z.string(),
});
export type TaskProgress = z.infer<typeof TaskProgress>;

export const TaskDone = z.object({
  taskId: Id,
  kind: TaskKind,
  documentId: Id.nullable(),
  ok: z.boolean(),
  cancelled: z.boolean(),
  error: z.string().nullable(),
});

// ---------------------------------------------------------------------------------------------------------
// Methods: name -> { params, result }

const Empty = z.object({}).strict();
const Ok = z.object({ ok: z.literal(true) });

/**
 * Largest JSON request (an /api/call body, a WebSocket message, a /v1/chat/completions body). The largest
 * real ones are a 100,000-character question or system prompt (at most ~600 KB escaped) and an OpenAI chat
 * that fills a long context (~4 bytes a token: 1 MiB is 256K tokens); 4 MiB leaves room for both while
 * keeping every body far below what a string or JSON.parse can hold. Documents go through the upload route.
 */
export const MAX_JSON_BODY_BYTES = 4 * 2 ** 20;
/** base64 of a document sent inside a JSON call (desktop IPC fallback, API clients): what fits in one body. */
export const MAX_INLINE_BASE64_CHARS = MAX_JSON_BODY_BYTES - 64 * 1024;

/** The web host's document upload: POST raw bytes (application/octet-stream), the file name URI-encoded in a header. */
export const UPLOAD_ROUTE = '/api/upload';
export const UPLOAD_FILE_NAME_HEADER = 'x-folio-file-name';
/** Present (any value) on an upload that keeps a duplicate (documents.import's keepDuplicate). */
export const UPLOAD_KEEP_DUPLICATE_HEADER = 'x-folio-keep-duplicate';
/**
 * The web host's browser session: GET answers { signedIn } (the caller holds the session cookie or the
 * token), POST { token } signs the browser in (a session cookie) as the token link `folio serve` prints does.
 */
export const SESSION_ROUTE = '/api/session';

/** A PDF's user password (documents.import). */
const Password = z.string().max(1024);

/**
 * A document's stored files: GET, the same path on both transports (the web host's route, and the desktop
 * app's own protocol, app://folio/...), so the renderer names them relative to its page. `file`: the
 * imported original; `html`: a Word document's HTML as mammoth wrote it at import (served as text, for the
 * renderer to sanitise and show).
 */
export const DOCUMENT_FILE_ROUTE = '/api/documents/{id}/{part}';
export const DOCUMENT_FILE_PARTS = ['file', 'html', 'pdf'] as const;
export type DocumentFilePart = (typeof DOCUMENT_FILE_PARTS)[number];
export function documentFileRoute(documentId: string, part: DocumentFilePart = 'file'): string {
  return DOCUMENT_FILE_ROUTE.replace('{id}', encodeURIComponent(documentId)).replace('{part}', part);
}
/** The document and part a request path names under DOCUMENT_FILE_ROUTE, or null when it names none. */
export function parseDocumentFileRoute(pathname: string): { documentId: string; part: DocumentFilePart } | null {
  const m = /^\/api\/documents\/([^/]+)\/([a-z]+)$/.exec(pathname);
  const part = DOCUMENT_FILE_PARTS.find((p) => p === m?.[2]);
  const documentId = m && part ? safeDecode(m[1]) : null;
  return part && documentId !== null && Id.safeParse(documentId).success ? { documentId, part } : null;
}
function safeDecode(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}
/** The media type an original is served with, by kind. */
export const DOCUMENT_FILE_TYPES: Record<z.infer<typeof DocumentKind>, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  markdown: 'text/markdown; charset=utf-8',
  text: 'text/plain; charset=utf-8',
  // PNG or JPEG: the page it was put on (part 'pdf') is what the view shows; the original is served as bytes.
  image: 'application/octet-stream',
};

/** The most tokens the engine generates in one call (native/src/napi/session.cc, Generate: `n`). */
export const MAX_GENERATE_TOKENS = 1 << 24;

/** Where API clients reach this app core over HTTP, and their bearer token; null where nothing is served (desktop). */
export const ServerInfo = z.object({ apiUrl: z.string().nullable(), apiToken: z.string().nullable() });
export type ServerInfo = z.infer<typeof ServerInfo>;

export const methods = {
  'settings.get': { params: Empty, result: Settings },
  'settings.update': { params: SettingsPatch, result: Settings },
  /** Every setting back to its default (the model and the model folders stay); refused values are checked as in update. */
  'settings.reset': { params: Empty, result: Settings },

  'engine.status': { params: Empty, result: EngineStatus },
  /** Retry: starts an engine that crashed too often to restart by itself (or was stopped); no-op otherwise. */
  'engine.restart': { params: Empty, result: EngineStatus },

  'models.list': { params: Empty, result: z.array(ModelEntry) },
  'models.rescan': { params: Empty, result: z.array(ModelEntry) },
  'models.add': { params: z.object({ path: z.string().min(1) }), result: ModelEntry },
  'models.catalog': { params: Empty, result: z.array(CatalogEntry) },
  'models.download': {
    params: z.union([z.object({ url: z.string().url() }), z.object({ catalogId: Id })]),
    result: z.object({ taskId: Id }),
  },
  'models.estimate': {
    params: z.object({
      modelId: Id,
      nCtx: z.number().int().min(64).optional(),
      compression: CompressionSettings.optional(),
    }),
    result: MemoryEstimate,
  },
  /** Loads the model into the engine (after the memory check) and makes it the chat model. */
  'models.select': { params: z.object({ modelId: Id }), result: EngineStatus },

  'documents.list': { params: Empty, result: z.array(DocumentSummary) },
  'documents.get': { params: z.object({ documentId: Id }), result: DocumentDetail },
  /** The languages OCR can read: English (shipped) and the Tesseract data files (<code>.traineddata, or .gz) in
   * the folder named, which the user adds; nothing is ever downloaded. */
  'documents.ocrLanguages': {
    params: Empty,
    result: z.object({
      folder: z.string(),
      available: z.array(z.object({ code: z.string(), name: z.string(), shipped: z.boolean() })),
    }),
  },
  /** The words OCR recognised on a page (none for a page with a text layer): the document view draws them as
   * the scan's text layer. */
  'documents.pageWords': {
    params: z.object({ documentId: Id, page: z.number().int().min(1) }),
    result: z.object({ words: z.array(OcrWord) }),
  },
  /**
   * Imports a file by path (desktop) or by content (browser upload), then compresses it. A file already in
   * the library is refused with DUPLICATE (details: { documentId, title }) before any work: open that one,
   * or call again with keepDuplicate to keep both. A file whose earlier import failed is read again into
   * that document. Third form: reads again the file of a failed import that the app still holds (its
   * remedy is 'import' or 'password'), with the PDF's password where one is needed. A password is used for
   * this read only: never stored or logged.
   */
  'documents.import': {
    params: z.union([
      z.object({
        path: z.string().min(1),
        password: Password.optional(),
        keepDuplicate: z.boolean().optional(),
        ocrPages: OcrPages.optional(),
      }),
      z.object({
        fileName: z.string().min(1).max(1024),
        dataBase64: z
          .string()
          .max(MAX_INLINE_BASE64_CHARS, 'the file is too large to send inline: upload it (POST ' + UPLOAD_ROUTE + ')'),
        password: Password.optional(),
        keepDuplicate: z.boolean().optional(),
        ocrPages: OcrPages.optional(),
      }),
      z.object({ documentId: Id, password: Password.optional(), ocrPages: OcrPages.optional() }),
    ]),
    result: z.object({ documentId: Id, taskId: Id }),
  },
  /** Answers an import waiting before a long OCR (DocumentSummary.ocrChoice): read all its pages, or a range of
   * them. (Cancelling the import's task is the third answer.) */
  'documents.chooseOcrPages': {
    params: z.object({ documentId: Id, pages: OcrPages }),
    result: Ok,
  },
  'documents.rename': {
    params: z.object({ documentId: Id, title: z.string().trim().min(1, 'the title is empty').max(200) }),
    result: DocumentSummary,
  },
  'documents.delete': { params: z.object({ documentId: Id }), result: Ok },
  /** Compresses again with other settings (or the current ones). */
  'documents.recompress': {
    params: z.object({
      documentId: Id,
      compression: CompressionSettings.optional(),
      /** Only these pages, first to last; refused when they do not fit the context with room for the
       * conversation (electron/shared/room.ts). */
      pages: z
        .tuple([z.number().int().min(1), z.number().int().min(1)])
        .refine(([a, b]) => a <= b, 'the first page comes after the last')
        .optional(),
    }),
    result: z.object({ taskId: Id }),
  },
  /** Two methods side by side on the same document and budget, computed on demand (nothing is saved). By
   * default a is the document's method and b its counterpart (compareCounterpart). */
  'documents.compare': {
    params: z.object({
      documentId: Id,
      budget: BudgetValue.optional(),
      a: CompressionMethod.optional(),
      b: CompressionMethod.optional(),
    }),
    // Each run's stats name its method.
    result: z.object({ budget: BudgetValue, a: CompressionStats, b: CompressionStats }),
  },

  /** What a chat over these documents would take (the library's picked documents), and how many more fit. */
  'documents.setEstimate': {
    params: z.object({ documentIds: z.array(Id).min(1).max(MAX_CHAT_DOCUMENTS) }),
    result: SetEstimate,
  },
  /** The positions one KV head of the saved cache kept, folded onto the document's pages. */
  'documents.keptPositions': {
    params: z.object({ documentId: Id, layer: z.number().int().min(0), head: z.number().int().min(0) }),
    result: KeptPositions,
  },

  'tasks.cancel': { params: z.object({ taskId: Id }), result: Ok },

  /** The web host's address and API token for other programs (Settings → API access). */
  'server.info': { params: Empty, result: ServerInfo },

  /** A document's chats that hold messages, and its one empty chat if it has one. */
  'chats.list': { params: z.object({ documentId: Id }), result: z.array(ChatSummary) },
  /** A chat to start with, over the document, or over it and `others` (a set, read in that order): the empty
   * chat over exactly those when there is one (no pile of empty chats), else a new one. Untitled, it takes its
   * title from its first question. */
  'chats.create': {
    params: z.object({
      documentId: Id,
      others: z
        .array(Id)
        .max(MAX_CHAT_DOCUMENTS - 1)
        .optional(),
      title: z.string().max(200).optional(),
      style: ChatStyle.nullable().optional(),
    }),
    result: ChatSummary,
  },
  /** Messages whose text holds `query` (case-insensitive), newest first: in the chats of `documentId`, or in
   * every document's chats when it is absent. */
  'chats.search': {
    params: z.object({
      query: z.string().trim().min(1, 'the search is empty').max(200),
      documentId: Id.optional(),
      limit: z.number().int().min(1).max(200).optional(),
    }),
    result: z.array(ChatSearchHit),
  },
  /** A chat as a file: Markdown to read, or JSON with every field (the versions shown). */
  'chats.export': {
    params: z.object({ chatId: Id, format: ChatExportFormat }),
    result: z.object({ fileName: z.string(), mimeType: z.string(), text: z.string() }),
  },
  /** Shows another version of a regenerated answer, or of an edited question with what followed it then (its
   * branch); the conversation goes on from it. */
  'chats.selectVersion': {
    params: z.object({ chatId: Id, messageId: Id, version: z.number().int().min(1) }),
    result: Message,
  },
  'chats.get': {
    params: z.object({ chatId: Id }),
    result: z.object({ chat: ChatSummary, messages: z.array(Message), usage: ContextUsage }),
  },
  'chats.rename': { params: z.object({ chatId: Id, title: z.string().min(1).max(200) }), result: ChatSummary },
  /** How the chat's turns are written (ChatStyle; null: by the model); the next question uses it. */
  'chats.setStyle': { params: z.object({ chatId: Id, style: ChatStyle.nullable() }), result: ChatSummary },
  /** How a chat over a set reads its documents (SetReading); the next question uses it. */
  'chats.setReading': {
    params: z.object({ chatId: Id, reading: SetReading, setBudget: SetBudget.nullable().optional() }),
    result: ChatSummary,
  },
  'chats.delete': { params: z.object({ chatId: Id }), result: Ok },
  /** Asks a question; the answer streams as chat.token events and ends with a chat.message event. */
  'chats.send': {
    params: z.object({ chatId: Id, text: z.string().min(1).max(100_000) }),
    result: z.object({ user: Message, assistant: Message }),
  },
  'chats.stop': { params: z.object({ chatId: Id }), result: Ok },
  /** Answers the last question again; the answer it replaces stays as an earlier version. */
  'chats.regenerate': { params: z.object({ chatId: Id }), result: z.object({ assistant: Message }) },
  /** Replaces a question with a new version and answers it; the version it replaces keeps everything that
   * followed it (a branch, chats.selectVersion goes back to it). */
  'chats.edit': {
    params: z.object({ chatId: Id, messageId: Id, text: z.string().min(1).max(100_000) }),
    result: z.object({ user: Message, assistant: Message }),
  },
} as const;

export type Methods = typeof methods;
export type MethodName = keyof Methods;
export type Params<M extends MethodName> = z.input<Methods[M]['params']>;
export type Result<M extends MethodName> = z.infer<Methods[M]['result']>;

// ---------------------------------------------------------------------------------------------------------
// Events the core pushes: name -> payload

export const events = {
  'engine.status': EngineStatus,
  'task.progress': TaskProgress,
  'task.done': TaskDone,
  'documents.changed': DocumentSummary,
  'documents.deleted': z.object({ documentId: Id }),
  'models.changed': z.array(ModelEntry),
  /** A piece of a streaming answer: of version `version` of the message (a regenerated answer is a new one). */
  'chat.token': z.object({ chatId: Id, messageId: Id, version: z.number().int().min(1), text: z.string() }),
  /** A message was created or changed (e.g. an answer finished, was stopped or interrupted). */
  'chat.message': Message,
  'settings.changed': Settings,
} as const;

export type Events = typeof events;
export type EventName = keyof Events;
export type EventPayload<E extends EventName> = z.infer<Events[E]>;

// ---------------------------------------------------------------------------------------------------------
// Errors

/** Every failed call carries a stable code and a message for people. */
export const ApiErrorShape = z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() });
export type ApiErrorShape = z.infer<typeof ApiErrorShape>;

export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
  toJSON(): ApiErrorShape {
    return { code: this.code, message: this.message, ...(this.details === undefined ? {} : { details: this.details }) };
  }
}

/** Checks a method call's parameters; throws ApiError BAD_REQUEST naming the problem. */
export function parseParams<M extends MethodName>(method: string, params: unknown): z.infer<Methods[M]['params']> {
  if (!Object.hasOwn(methods, method)) throw new ApiError('UNKNOWN_METHOD', `unknown method '${method}'`);
  const r = methods[method as M].params.safeParse(params ?? {});
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new ApiError(
      'BAD_REQUEST',
      `${method}: ${issue.path.length ? issue.path.join('.') + ': ' : ''}${issue.message}`,
      r.error.issues,
    );
  }
  return r.data as z.infer<Methods[M]['params']>;
}

/** The typed client every UI uses, whatever carries it (Electron preload or the web host). */
export interface FolioApi {
  call<M extends MethodName>(method: M, params: Params<M>): Promise<Result<M>>;
  on<E extends EventName>(event: E, listener: (payload: EventPayload<E>) => void): () => void;
}
