// What the preload puts on `window.folio` in the desktop app, and the IPC channels it uses. The API part
// is exactly contract.ts's FolioApi (the web host's client has the same shape); `shell` adds what only
// the desktop has: the native file dialog and the application menu. The renderer imports these types;
// the main process imports the channel names. preload.cts cannot import anything at run time (a
// sandboxed preload may only require 'electron'), so it repeats the names, checked against these types.
import type { ApiErrorShape, EventName, FolioApi, MethodName } from './contract.ts';

/** Renderer → main, invoke: `{ method, params }` → CallReply. */
export const CALL_CHANNEL = 'folio:call';
/** Main → renderer: `{ event, payload }` for every event of the contract. */
export const EVENT_CHANNEL = 'folio:event';
/** Renderer → main, invoke: a FileDialogKind → the chosen paths (empty when cancelled), granted (grants.ts). */
export const DIALOG_CHANNEL = 'folio:open-dialog';
/** Renderer → main, invoke: the path of a File the user dropped or picked (the preload's pathForFile) → true. */
export const GRANT_CHANNEL = 'folio:grant-file';
/** Main → renderer: a ShellEvent (menu actions, documents opened from the OS). */
export const SHELL_CHANNEL = 'folio:shell';

export type CallChannel = typeof CALL_CHANNEL;
export type EventChannel = typeof EVENT_CHANNEL;
export type DialogChannel = typeof DIALOG_CHANNEL;
export type GrantChannel = typeof GRANT_CHANNEL;
export type ShellChannel = typeof SHELL_CHANNEL;

/** What the main process answers to a call: IPC would drop an Error's code, so errors travel as data. */
export type CallReply = { ok: true; result: unknown } | { ok: false; error: ApiErrorShape };

/** A failed call, as the renderer receives it (a plain object: contextBridge keeps no Error properties). */
export interface BridgeError extends ApiErrorShape {
  name: 'ApiError';
}

/** The application menu's Folio actions; the renderer acts on them (e.g. shows its settings view). */
export const MENU_ACTIONS = ['open-document', 'new-chat', 'settings', 'inspector'] as const;
export type MenuAction = (typeof MENU_ACTIONS)[number];

/** What the open dialog picks: documents (several), one GGUF model, or one folder to search for models. */
export const FILE_DIALOG_KINDS = ['document', 'model', 'folder'] as const;
export type FileDialogKind = (typeof FILE_DIALOG_KINDS)[number];

/** A file the OS (or the command line) asked Folio to open: imported by the main process. */
export type OpenedDocument =
  | { path: string; ok: true; documentId: string; taskId: string }
  | { path: string; ok: false; error: ApiErrorShape };

export type ShellEvent = { type: 'menu'; action: MenuAction } | { type: 'document-opened'; document: OpenedDocument };

export interface FolioShell {
  /** 'darwin', 'win32' or 'linux' (e.g. to leave room for the macOS traffic lights). */
  readonly platform: string;
  /**
   * The native open dialog: documents (.pdf, .docx, .md, .txt), a GGUF model or a folder of models. The
   * chosen paths, [] when cancelled; the renderer may then import, add or search them (and nothing else).
   */
  openFileDialog(kind?: FileDialogKind): Promise<string[]>;
  /**
   * The path of a File the user dropped on the window or picked in an <input type=file> ('' when it has
   * none), once the main process has recorded that the user gave it: then it may be imported by path.
   */
  pathForFile(file: File): Promise<string>;
  /** An application menu action (Open document…, New chat, Settings, Inspector). Returns the unsubscribe function. */
  onMenu(listener: (action: MenuAction) => void): () => void;
  /** A document opened from the OS (Finder, Explorer, the command line) was imported (or failed to be). */
  onDocumentOpened(listener: (document: OpenedDocument) => void): () => void;
}

/** `window.folio` in the desktop app. */
export interface FolioDesktopApi extends FolioApi {
  shell: FolioShell;
}

// The lists preload.cts repeats, typed so that a missing or extra name is a compile error there.
export type AllMethods = readonly MethodName[];
export type AllEvents = readonly EventName[];
