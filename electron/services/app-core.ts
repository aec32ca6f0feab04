// The app core: storage, the engine process and the services, wired to the API contract. The Electron
// shell and the web host both serve `dispatcher`; nothing here imports 'electron'.
import { ApiError, type EngineStatus, type ServerInfo } from '../api/contract.ts';
import { Dispatcher, EventBus, type Handlers } from '../api/dispatcher.ts';
import { EngineClient, type EngineClientOptions } from '../engine/client.ts';
import { openStorage, type Storage, type StorageOptions } from '../storage/index.ts';
import { privateDir, tightenTree } from '../storage/private-files.ts';
import { ChatsService } from './chats-service.ts';
import { DocumentFiles } from './document-files.ts';
import { Documents } from './documents/index.ts';
import { EngineManager } from './engine-manager.ts';
import { ModelsService, type ModelsServiceOptions } from './models-service.ts';
import { OpenAiService } from './openai-service.ts';
import { dataPaths } from './paths.ts';
import { warmParserThread } from '../documents/parser-thread.ts';
import { announceSettingsChanges, SettingsService } from './settings-service.ts';
import { Tasks } from './tasks.ts';

export interface AppCoreOptions {
  /** The library: database, saved caches, downloaded models. */
  dataDir: string;
  engine?: EngineClientOptions;
  storage?: StorageOptions;
  models?: Omit<ModelsServiceOptions, 'downloadDir'>;
  /** A model file to use when none is chosen yet (folio serve --model). */
  model?: string;
  /** How often a long document's read saves where it stands (seconds; default 30). */
  readCheckpointSeconds?: number;
  /** An import stops for the choice of pages when its OCR would take longer than this (seconds; default
   * OCR_ASK_OVER_SECONDS); tests make a short scan ask. */
  ocrAskOverSeconds?: number;
}

export interface AppCore {
  dispatcher: Dispatcher;
  bus: EventBus;
  storage: Storage;
  engine: EngineManager;
  openai: OpenAiService;
  documents: Documents;
  chats: ChatsService;
  models: ModelsService;
  /** What server.info answers: set by whoever serves this core over HTTP (folio serve); the desktop app serves none. */
  setServerInfo(info: ServerInfo): void;
  /** Stops answers, the engine process and the database, in that order. */
  close(): Promise<void>;
}

export async function createAppCore(o: AppCoreOptions): Promise<AppCore> {
  const paths = dataPaths(o.dataDir);
  // The library is the user's alone (private-files.ts); one made by an older build is tightened here.
  privateDir(paths.root);
  tightenTree(paths.root);
  const storage = openStorage(paths.root, o.storage);
  // Answers that were streaming when the app last stopped become 'interrupted'.
  storage.recover();
  const bus = new EventBus();
  const tasks = new Tasks(bus);
  const client = new EngineClient(o.engine);
  const engine = new EngineManager(client, bus, () => storage.settings.get());
  const models = new ModelsService(storage, engine, tasks, bus, { ...o.models, downloadDir: paths.models });
  const documents = new Documents({
    storage,
    engine,
    models,
    tasks,
    bus,
    cacheDir: paths.caches,
    ocrLanguagesDir: paths.ocrLanguages,
    checkpointSeconds: o.readCheckpointSeconds,
    ocrAskOverSeconds: o.ocrAskOverSeconds,
    files: new DocumentFiles(paths.documents),
  });
  const chats = new ChatsService(storage, engine, documents.reader, bus);
  // Sets read together whose chats are gone (deleted with one of their documents) leave their reads behind.
  documents.reader.forgetTogether(new Set(storage.chats.ids()));
  const openai = new OpenAiService(storage, engine, models, documents.reader);
  const settings = new SettingsService(storage, models);
  announceSettingsChanges(storage, documents.library, bus);

  if (o.model) {
    const entry = await models.add(o.model);
    storage.settings.update({ modelId: entry.id });
    openai.preferred = entry.id;
  }
  // Reads cut short when the app last stopped go on from their checkpoints.
  documents.reader.resumeInterrupted();
  // The first import should not wait for a parser thread and pdf.js to load.
  warmParserThread();

  const ok = { ok: true as const };
  let serverInfo: ServerInfo = { apiUrl: null, apiToken: null };
  const handlers: Handlers = {
    'settings.get': () => settings.get(),
    'settings.update': (p) => settings.update(p),
    'settings.reset': () => settings.reset(),
    'engine.status': (): EngineStatus => engine.status(),
    'engine.restart': () => engine.restart(),
    'models.list': () => models.list(),
    'models.rescan': () => models.rescan(),
    'models.add': (p) => models.add(p.path),
    'models.catalog': () => models.catalog(),
    'models.download': (p) => models.download(p),
    'models.estimate': (p) => models.estimate(p),
    'models.select': (p) => models.select(p.modelId),
    'documents.list': () => documents.library.list(),
    'documents.get': (p) => documents.library.get(p.documentId),
    'documents.pageWords': (p) => documents.library.pageWords(p),
    'documents.ocrLanguages': () => documents.library.ocrLanguages(),
    'documents.import': (p) => documents.imports.import(p),
    'documents.chooseOcrPages': (p) => (documents.imports.chooseOcrPages(p), ok),
    'documents.rename': (p) => documents.library.rename(p),
    'documents.delete': async (p) => (await documents.library.delete(p.documentId), ok),
    'documents.recompress': (p) => documents.reader.recompress(p),
    'documents.compare': (p) => documents.inspector.compare(p),
    'documents.keptPositions': (p) => documents.inspector.keptPositions(p),
    'documents.setEstimate': (p) => documents.library.setEstimate(p),
    'tasks.cancel': (p) => (tasks.cancel(p.taskId), ok),
    'server.info': () => serverInfo,
    'chats.list': (p) => chats.list(p.documentId),
    'chats.create': (p) => chats.create(p),
    'chats.get': (p) => chats.get(p.chatId),
    'chats.rename': (p) => chats.rename(p),
    'chats.setStyle': (p) => chats.setStyle(p),
    'chats.setReading': (p) => chats.setReading(p),
    'chats.delete': async (p) => (await chats.delete(p.chatId), ok),
    'chats.send': (p) => chats.send(p),
    'chats.stop': async (p) => {
      storage.chats.require(p.chatId);
      await chats.stop(p.chatId);
      return ok;
    },
    'chats.regenerate': (p) => chats.regenerate(p.chatId),
    'chats.search': (p) => chats.search(p),
    'chats.export': (p) => chats.export(p),
    'chats.selectVersion': (p) => chats.selectVersion(p),
    'chats.edit': (p) => chats.edit(p),
  };
  const dispatcher = new Dispatcher(handlers, bus);

  let closed = false;
  return {
    dispatcher,
    bus,
    storage,
    engine,
    openai,
    documents,
    chats,
    models,
    setServerInfo(info) {
      serverInfo = info;
    },
    async close() {
      if (closed) return;
      closed = true;
      await chats.stopAll();
      await client.stop().catch(() => {});
      await storage.content.close();
      storage.close();
    },
  };
}

export { ApiError };
