// The preload of the main window: puts the typed Folio API (contract.ts's FolioApi: call + on) and the
// small desktop part (api/bridge.ts's FolioShell: the open dialog, the path of a dropped file, menu
// events, documents opened from the OS) on `window.folio`, through contextBridge. The renderer gets functions, never ipcRenderer.
// The main process lets the renderer name only paths the user gave (shell/grants.ts): those of the open
// dialog, and those of real Files (dropped, or picked in an <input type=file>) that pathForFile reports to
// it; it takes a File, never a string, since page script cannot make a File whose path the user did not give.
//
// CommonJS (.cts → dist/electron/preload.cjs): a sandboxed preload runs as a plain script whose `require`
// knows only 'electron' and a few Node built-ins, so this file imports nothing else at run time. The names
// of the contract's methods and events are repeated here; the type checks below fail to compile when they
// drift from contract.ts, and test/shell.test.ts compares them at run time. The main process validates
// every call again (Dispatcher.dispatch): this list only keeps the renderer from sending what no one answers.
import { contextBridge, ipcRenderer, webUtils } from 'electron';

import type { EventName, EventPayload, MethodName, Params, Result } from './api/contract.ts';
import type {
  AllEvents,
  AllMethods,
  BridgeError,
  CallChannel,
  CallReply,
  DialogChannel,
  EventChannel,
  FileDialogKind,
  FolioDesktopApi,
  GrantChannel,
  MenuAction,
  OpenedDocument,
  ShellChannel,
  ShellEvent,
} from './api/bridge.ts';

const CALL: CallChannel = 'folio:call';
const EVENT: EventChannel = 'folio:event';
const DIALOG: DialogChannel = 'folio:open-dialog';
const SHELL: ShellChannel = 'folio:shell';
const GRANT: GrantChannel = 'folio:grant-file';

const METHODS = [
  'settings.get',
  'settings.update',
  'settings.reset',
  'engine.status',
  'engine.restart',
  'models.list',
  'models.rescan',
  'models.add',
  'models.catalog',
  'models.download',
  'models.estimate',
  'models.select',
  'documents.list',
  'documents.get',
  'documents.import',
  'documents.delete',
  'documents.recompress',
  'documents.compare',
  'documents.rename',
  'documents.keptPositions',
  'documents.pageWords',
  'documents.ocrLanguages',
  'documents.setEstimate',
  'documents.chooseOcrPages',
  'tasks.cancel',
  'server.info',
  'chats.list',
  'chats.create',
  'chats.get',
  'chats.rename',
  'chats.setStyle',
  'chats.setReading',
  'chats.delete',
  'chats.send',
  'chats.stop',
  'chats.regenerate',
  'chats.edit',
  'chats.search',
  'chats.export',
  'chats.selectVersion',
] as const satisfies AllMethods;

const EVENTS = [
  'engine.status',
  'task.progress',
  'task.done',
  'documents.changed',
  'documents.deleted',
  'models.changed',
  'chat.token',
  'chat.message',
  'settings.changed',
] as const satisfies AllEvents;

const MENU_ACTIONS = ['open-document', 'new-chat', 'settings', 'inspector'] as const satisfies readonly MenuAction[];
const DIALOG_KINDS = ['document', 'model', 'folder'] as const satisfies readonly FileDialogKind[];

// Every name of the contract is listed (the `satisfies` above: no name that is not in it).
type Missing<All, Listed> = [Exclude<All, Listed>] extends [never] ? true : Exclude<All, Listed>;
const allMethodsListed: Missing<MethodName, (typeof METHODS)[number]> = true;
const allEventsListed: Missing<EventName, (typeof EVENTS)[number]> = true;
const allActionsListed: Missing<MenuAction, (typeof MENU_ACTIONS)[number]> = true;
const allDialogKindsListed: Missing<FileDialogKind, (typeof DIALOG_KINDS)[number]> = true;
void [allMethodsListed, allEventsListed, allActionsListed, allDialogKindsListed];

const methodSet: ReadonlySet<string> = new Set(METHODS);
const eventSet: ReadonlySet<string> = new Set(EVENTS);
const actionSet: ReadonlySet<string> = new Set(MENU_ACTIONS);
const dialogKindSet: ReadonlySet<string> = new Set(DIALOG_KINDS);

function bridgeError(code: string, message: string, details?: unknown): BridgeError {
  return { name: 'ApiError', code, message, ...(details === undefined ? {} : { details }) };
}

// One IPC listener per channel; the renderer's listeners are kept here and never see the IPC event.
const eventListeners = new Map<string, Set<(payload: unknown) => void>>();
const menuListeners = new Set<(action: MenuAction) => void>();
const openedListeners = new Set<(document: OpenedDocument) => void>();

function safely<T>(listener: (value: T) => void, value: T): void {
  try {
    listener(value);
  } catch (e) {
    console.error('folio: a listener threw', e);
  }
}

ipcRenderer.on(EVENT, (_event, message: { event?: unknown; payload?: unknown } | null) => {
  if (!message || typeof message.event !== 'string') return;
  for (const l of [...(eventListeners.get(message.event) ?? [])]) safely(l, message.payload);
});

ipcRenderer.on(SHELL, (_event, message: ShellEvent | null) => {
  if (!message) return;
  if (message.type === 'menu' && actionSet.has(message.action))
    for (const l of [...menuListeners]) safely(l, message.action);
  else if (message.type === 'document-opened' && message.document)
    for (const l of [...openedListeners]) safely(l, message.document);
});

function subscribe<T>(set: Set<(value: T) => void>, listener: unknown): () => void {
  if (typeof listener !== 'function') throw new TypeError('folio: a listener must be a function');
  const l = listener as (value: T) => void;
  set.add(l);
  return () => void set.delete(l);
}

const api: FolioDesktopApi = {
  async call<M extends MethodName>(method: M, params: Params<M>): Promise<Result<M>> {
    if (typeof method !== 'string' || !methodSet.has(method))
      throw bridgeError('UNKNOWN_METHOD', `unknown method '${String(method)}'`);
    let reply: CallReply;
    try {
      reply = (await ipcRenderer.invoke(CALL, { method, params })) as CallReply;
    } catch (e) {
      throw bridgeError('IPC_FAILED', e instanceof Error ? e.message : String(e));
    }
    if (!reply || typeof reply !== 'object') throw bridgeError('INTERNAL', 'the main process sent no answer');
    if (reply.ok) return reply.result as Result<M>;
    throw bridgeError(reply.error.code, reply.error.message, reply.error.details);
  },

  on<E extends EventName>(event: E, listener: (payload: EventPayload<E>) => void): () => void {
    if (typeof event !== 'string' || !eventSet.has(event))
      throw new TypeError(`folio: unknown event '${String(event)}'`);
    let set = eventListeners.get(event);
    if (!set) eventListeners.set(event, (set = new Set()));
    return subscribe(set, listener);
  },

  shell: {
    platform: process.platform,
    async openFileDialog(kind: FileDialogKind = 'document'): Promise<string[]> {
      if (typeof kind !== 'string' || !dialogKindSet.has(kind))
        throw new TypeError('folio: openFileDialog takes "document", "model" or "folder"');
      return (await ipcRenderer.invoke(DIALOG, kind)) as string[];
    },
    async pathForFile(file: File): Promise<string> {
      let path: string;
      try {
        path = webUtils.getPathForFile(file);
      } catch {
        return ''; // not a File
      }
      if (!path) return ''; // a File made by script, or one without a file on disk
      await ipcRenderer.invoke(GRANT, path);
      return path;
    },
    onMenu: (listener) => subscribe(menuListeners, listener),
    onDocumentOpened: (listener) => subscribe(openedListeners, listener),
  },
};

contextBridge.exposeInMainWorld('folio', api);
