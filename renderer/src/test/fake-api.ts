// An in-memory FolioApi for component tests: calls go to handlers (a test replaces the ones it needs),
// every call is recorded, and the test pushes events as the core would.
import type {
  ChatSummary,
  CompressionStats,
  DocumentDetail,
  DocumentSummary,
  EngineStatus,
  EventName,
  EventPayload,
  Message,
  MethodName,
  ModelEntry,
  Params,
  Result,
  Settings,
} from '../../../electron/api/contract.ts';
import { ApiError } from '../../../electron/api/contract.ts';
import type { FolioShell, MenuAction, OpenedDocument } from '../../../electron/api/bridge.ts';
import type { FolioBridge } from '../api/client.ts';

type ContextUsage = Result<'chats.get'>['usage'];

type Handler<M extends MethodName> = (params: Params<M>) => Result<M> | Promise<Result<M>>;
export type Handlers = { [M in MethodName]?: Handler<M> };

export interface FakeApi extends FolioBridge {
  calls: { method: MethodName; params: unknown }[];
  handlers: Handlers;
  emit<E extends EventName>(event: E, payload: EventPayload<E>): void;
  callsOf(method: MethodName): unknown[];
}

export const settings = (over: Partial<Settings> = {}): Settings => ({
  modelId: 'm1',
  compression: { method: 'ada-snapkv', budget: 0.3, alpha: 0.2, window: 32, kernel: 7 },
  sampling: { temperature: 0, topK: 40, topP: 0.95, minP: 0.05, repeatPenalty: 1.1, maxTokens: 64, seed: null },
  systemPrompt: '',
  nCtx: null,
  conversationRoom: null,
  threads: null,
  kvType: 'f16',
  kvTypeV: null,
  kvRotate: true,
  backend: 'auto',
  theme: 'light',
  modelFolders: [],
  ocrLanguages: ['eng'],
  ...over,
});

export const engine = (over: Partial<EngineStatus> = {}): EngineStatus => ({
  state: 'ready',
  modelId: 'm1',
  backend: 'cpu (avx2)',
  backendReason: 'no CUDA backend in this build',
  message: null,
  restarts: 0,
  willRestart: false,
  ...over,
});

export const model = (over: Partial<ModelEntry> = {}): ModelEntry => ({
  id: 'm1',
  path: '/models/tiny.gguf',
  name: 'tiny',
  source: 'added',
  fileBytes: 1_200_000,
  architecture: 'llama',
  quantization: 'Q8_0',
  contextLength: 512,
  chatTemplate: true,
  parameters: 260_000,
  layers: 5,
  kvHeads: 4,
  supported: true,
  unsupportedReason: null,
  error: null,
  ...over,
});

export const doc = (over: Partial<DocumentSummary> = {}): DocumentSummary => ({
  id: 'd1',
  title: 'Lily and the kite',
  kind: 'text',
  fileName: 'lily.txt',
  pages: 1,
  tokens: 375,
  status: 'ready',
  error: null,
  errorCode: null,
  remedy: null,
  createdAt: '2026-01-01T00:00:00.000Z',
  modelId: 'm1',
  compression: settings().compression,
  kvBytesFull: 240_000,
  kvBytesKept: 72_000,
  contextTokens: 512,
  readNote: 'Read in one pass, then compressed.',
  readPages: null,
  kept: { perHead: 112, positions: 375, placement: 'own' },
  ...over,
});

/** Statistics of a small model: `kept[layer][head]` tokens kept. */
export function stats(
  kept: number[][] = [
    [183, 108, 76, 85],
    [102, 133, 121, 96],
    [61, 73, 132, 186],
  ],
): CompressionStats {
  return {
    method: 'ada-snapkv',
    prefixTokens: 375,
    window: 32,
    kernel: 7,
    alpha: 0.2,
    kvType: 'f16',
    compressed: true,
    reason: null,
    budget: 113,
    budgetSelectable: 81,
    budgetClamped: false,
    kvBytesFull: 240_000,
    kvBytesKept: 72_000,
    msPrefill: 30,
    msCompress: 3,
    chunks: 1,
    chunkTokens: 375,
    kvBytesPeak: 110_000,
    kvBytesBound: 0,
    positions: 375,
    rebased: false,
    layers: kept.map((heads, l) => ({
      budget: 113,
      slidingWindow: 0,
      bytesFull: 48_000,
      bytesKept: 14_400,
      epsOverC: 0.1 * (l + 1),
      attnL1: null,
      msScore: 0.5,
      msSelect: 0.04,
      msCompact: 0.05,
      heads: heads.map((k, h) => ({
        kept: k,
        retainedMass: 0.9 + 0.02 * h - 0.01 * l,
        concentration: 0.05 + 0.05 * h + 0.02 * l,
      })),
    })),
    tokenRetention: [],
  };
}

export const detail = (over: Partial<DocumentDetail> = {}): DocumentDetail => ({
  ...doc(),
  pageList: [
    { page: 1, text: 'Once upon a time, there was a girl. She had a kite. The end.', tokenStart: 0, tokenEnd: 20 },
    { page: 2, text: 'Page two has more words.', tokenStart: 20, tokenEnd: 30 },
  ],
  stats: stats(),
  passages: [
    { page: 1, start: 0, end: 35, retention: 0.2 },
    { page: 1, start: 36, end: 51, retention: 0.9 },
    { page: 2, start: 0, end: 24, retention: 0.5 },
  ],
  keptWindow: null,
  hasFile: false,
  hasHtml: false,
  hasPdf: false,
  ...over,
});

/** A chat's context usage over doc(): its 375-token prefix is 24 positions of system prompt and template and
 * 351 of the document, in the 512 positions it was read into; the cache as doc() reports it. */
export const usage = (over: Partial<ContextUsage> = {}): ContextUsage => ({
  systemTokens: 24,
  documentTokens: 351,
  documentPacked: false,
  conversationTokens: 0,
  contextTokens: 512,
  kvBytesKept: 72_000,
  kvBytesFull: 240_000,
  ...over,
});

/** A document read with re-based positions: six 100-token pages after a 30-token prompt, 630 tokens in the 512
 * positions of stories260K's context, read in chunks. With the default room (128) pages 1 to 3 fit. */
export const rebasedDetail = (over: Partial<DocumentDetail> = {}): DocumentDetail =>
  detail({
    id: 'd1',
    title: 'Six stories',
    kind: 'pdf',
    fileName: 'six-stories.pdf',
    pages: 6,
    tokens: 630,
    contextTokens: 512,
    readNote:
      "The document (630 tokens with the system prompt, and 128 kept for the conversation) does not fit the model's " +
      'context of 512: it was read in chunks with re-based positions, which answers less accurately than a document ' +
      'that fits. Compressing a range of pages that fits avoids that. Pages 1 to 3 fit.',
    pageList: Array.from({ length: 6 }, (_, i) => ({
      page: i + 1,
      text: `Story ${i + 1}. Once upon a time there was a little bird.`,
      tokenStart: 30 + 100 * i,
      tokenEnd: 130 + 100 * i,
    })),
    stats: {
      ...stats(),
      prefixTokens: 630,
      chunks: 3,
      chunkTokens: 224,
      kvBytesPeak: 150_000,
      kvBytesBound: 160_000,
      positions: 380,
      rebased: true,
    },
    kept: { perHead: 96, positions: 380, placement: 'rebased' },
    passages: [],
    ...over,
  });

export const chat = (over: Partial<ChatSummary> = {}): ChatSummary => ({
  id: 'c1',
  title: 'Chat 1',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  messageCount: 0,
  style: null,
  reading: 'assembled',
  setBudget: null,
  ...over,
  documentId: over.documentId ?? over.documentIds?.[0] ?? 'd1',
  documentIds: over.documentIds ?? [over.documentId ?? 'd1'],
});

export const message = (over: Partial<Message> = {}): Message => ({
  id: 'x',
  chatId: 'c1',
  role: 'assistant',
  text: '',
  status: 'complete',
  createdAt: '2026-01-01T00:00:00.000Z',
  tokens: null,
  tokensPerSecond: null,
  pageRefs: [],
  citations: null,
  error: null,
  version: { index: 1, count: 1 },
  ...over,
});

export function createFakeApi(handlers: Handlers = {}, extras: Partial<FolioBridge> = {}): FakeApi {
  const listeners = new Map<string, Set<(p: unknown) => void>>();
  const defaults: Handlers = {
    'settings.get': () => settings(),
    'engine.status': () => engine(),
    'documents.list': () => [],
    'documents.ocrLanguages': () => ({
      folder: '/library/ocr-languages',
      available: [{ code: 'eng', name: 'English', shipped: true }],
    }),
    'models.list': () => [model()],
    'models.catalog': () => [],
    'chats.list': () => [],
    'tasks.cancel': () => ({ ok: true }),
  };
  const api: FakeApi = {
    calls: [],
    handlers: { ...defaults, ...handlers },
    async call<M extends MethodName>(method: M, params: Params<M>): Promise<Result<M>> {
      api.calls.push({ method, params });
      const h = api.handlers[method] as Handler<M> | undefined;
      if (!h) throw new ApiError('UNKNOWN_METHOD', `the fake API has no handler for ${method}`);
      return h(params);
    },
    on<E extends EventName>(event: E, listener: (payload: EventPayload<E>) => void) {
      const set = listeners.get(event) ?? new Set();
      listeners.set(event, set);
      set.add(listener as (p: unknown) => void);
      return () => set.delete(listener as (p: unknown) => void);
    },
    emit(event, payload) {
      for (const l of listeners.get(event) ?? []) l(payload);
    },
    callsOf(method) {
      return api.calls.filter((c) => c.method === method).map((c) => c.params);
    },
    ...extras,
  };
  return api;
}

/** The desktop shell's part of window.folio, with hooks for a test to fire menu actions and opened documents. */
export function fakeShell(
  over: Partial<FolioShell> = {},
): FolioShell & { menu(action: MenuAction): void; opened(d: OpenedDocument): void } {
  const menu = new Set<(a: MenuAction) => void>();
  const opened = new Set<(d: OpenedDocument) => void>();
  return {
    platform: 'linux',
    openFileDialog: async () => [],
    pathForFile: async () => '',
    onMenu: (l) => (menu.add(l), () => void menu.delete(l)),
    onDocumentOpened: (l) => (opened.add(l), () => void opened.delete(l)),
    menu: (a) => menu.forEach((l) => l(a)),
    opened: (d) => opened.forEach((l) => l(d)),
    ...over,
  };
}
