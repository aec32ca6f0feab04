// The API contract over Electron IPC: one invoke channel for every call, one push channel for every event.
// A call is answered only when it comes from the main frame of our window showing app://folio
// (security.ts, isTrustedSender); its method and parameters are validated by the contract (unknown methods
// and malformed parameters are ApiErrors), then checked against what the user granted (grants.ts: paths
// from the open dialog or a drop, downloads the user confirmed). Answers are CallReply data, since IPC keeps
// nothing of an Error but its message.
import type { IpcMainInvokeEvent } from 'electron';

import type { ApiErrorShape, EventName } from '../api/contract.ts';
import { toApiError } from '../api/dispatcher.ts';
import {
  CALL_CHANNEL,
  DIALOG_CHANNEL,
  EVENT_CHANNEL,
  FILE_DIALOG_KINDS,
  GRANT_CHANNEL,
  type CallReply,
  type FileDialogKind,
} from '../api/bridge.ts';
import type { ElectronApi } from './electron-api.ts';
import { authorizeCall, type DispatcherLike, isGrantablePath, type Grants } from './grants.ts';

export type { DispatcherLike } from './grants.ts';
import { isTrustedSender, type TrustedWindow } from './security.ts';

export interface BusLike {
  subscribe(listener: (event: EventName, payload: unknown) => void): () => void;
}

export interface IpcOptions {
  ipcMain: ElectronApi['ipcMain'];
  /** The window whose renderer may call; null while there is none. */
  window(): (TrustedWindow & { webContents: { send(channel: string, ...args: unknown[]): void } }) | null;
  /** The core's dispatcher once it is up (calls made before wait for it; a core that failed rejects). */
  dispatcher(): Promise<DispatcherLike>;
  /** The native open dialog (shell.ts); the chosen paths. */
  openDialog(kind: FileDialogKind): Promise<string[]>;
  /** What the user handed over: the dialog's and the drops' paths are recorded here. */
  grants: Grants;
  /** The native confirmation of a download by URL (download-confirmation.ts); true: go ahead. */
  confirmDownload(url: string): Promise<boolean>;
}

const FORBIDDEN: ApiErrorShape = { code: 'FORBIDDEN', message: 'this frame may not use the Folio API' };

function errorReply(e: unknown): CallReply {
  const err = toApiError(e).toJSON();
  // Details (e.g. zod issues) are plain data; anything else would fail to cross IPC.
  try {
    structuredClone(err.details);
  } catch {
    delete err.details;
  }
  return { ok: false, error: err };
}

/** Checks the shape of a call message: `{ method: string, params?: unknown }` and nothing else. */
export function parseCallMessage(message: unknown): { method: string; params: unknown } | null {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return null;
  const m = message as Record<string, unknown>;
  if (typeof m.method !== 'string' || m.method.length === 0 || m.method.length > 64) return null;
  for (const k of Object.keys(m)) if (k !== 'method' && k !== 'params') return null;
  return { method: m.method, params: m.params };
}

export interface InstalledIpc {
  /** The 'folio:call' handler (for tests: call it with a fake event). */
  call(event: IpcMainInvokeEvent, message: unknown): Promise<CallReply>;
  /** The 'folio:open-dialog' handler. */
  dialog(event: IpcMainInvokeEvent, kind: unknown): Promise<string[]>;
  /** The 'folio:grant-file' handler. */
  grantFile(event: IpcMainInvokeEvent, path: unknown): boolean;
  /** Forwards the bus's events to the window; returns the unsubscribe function. */
  forwardEvents(bus: BusLike): () => void;
  dispose(): void;
}

export function installIpc(o: IpcOptions): InstalledIpc {
  const call = async (event: IpcMainInvokeEvent, message: unknown): Promise<CallReply> => {
    if (!isTrustedSender(event, o.window())) {
      console.warn(`folio: refused an API call from ${event.senderFrame?.url ?? 'a frame that is gone'}`);
      return { ok: false, error: FORBIDDEN };
    }
    const parsed = parseCallMessage(message);
    if (!parsed)
      return { ok: false, error: { code: 'BAD_REQUEST', message: 'a call is { method: string, params: object }' } };
    try {
      const dispatcher = await o.dispatcher();
      const params = await authorizeCall(parsed.method, parsed.params, {
        grants: o.grants,
        dispatcher,
        confirmDownload: o.confirmDownload,
      });
      return { ok: true, result: await dispatcher.dispatch(parsed.method, params) };
    } catch (e) {
      return errorReply(e);
    }
  };
  const dialog = async (event: IpcMainInvokeEvent, kind: unknown): Promise<string[]> => {
    if (!isTrustedSender(event, o.window())) throw new Error(FORBIDDEN.message);
    if (kind !== undefined && !(FILE_DIALOG_KINDS as readonly unknown[]).includes(kind))
      throw new Error('openFileDialog: kind is "document", "model" or "folder"');
    const k = (kind ?? 'document') as FileDialogKind;
    const paths = await o.openDialog(k);
    if (k === 'folder') o.grants.grantFolders(paths);
    else o.grants.grantFiles(paths);
    return paths;
  };
  // Only the preload sends here, with webUtils.getPathForFile of a real File: page script has no
  // ipcRenderer, and cannot make a File with a path the user did not give.
  const grantFile = (event: IpcMainInvokeEvent, path: unknown): boolean => {
    if (!isTrustedSender(event, o.window())) throw new Error(FORBIDDEN.message);
    if (!isGrantablePath(path)) throw new Error('grantFile: an absolute path');
    o.grants.grantFiles([path]);
    return true;
  };
  o.ipcMain.handle(CALL_CHANNEL, call);
  o.ipcMain.handle(DIALOG_CHANNEL, dialog);
  o.ipcMain.handle(GRANT_CHANNEL, grantFile);

  return {
    call,
    dialog,
    grantFile,
    forwardEvents(bus) {
      return bus.subscribe((event, payload) => {
        const w = o.window();
        if (w && !w.isDestroyed()) w.webContents.send(EVENT_CHANNEL, { event, payload });
      });
    },
    dispose() {
      o.ipcMain.removeHandler(CALL_CHANNEL);
      o.ipcMain.removeHandler(DIALOG_CHANNEL);
      o.ipcMain.removeHandler(GRANT_CHANNEL);
    },
  };
}
