// How the UI reaches the app core. In the desktop app the preload exposes the contract's FolioApi as
// window.folio (plus a few things only a desktop shell can offer, such as the path of a dropped file); in a
// browser the UI connects to the web host that served it, over its WebSocket (/api/ws). Everything else in
// the renderer calls api() and never knows which one it got.
import type { FolioApi } from '../../../electron/api/contract.ts';
import { connectApi, type WsApi } from '../../../electron/api/ws-client.ts';
import type { FolioDesktopApi, FolioShell } from '../../../electron/api/bridge.ts';

/**
 * The API as the renderer holds it: the contract's FolioApi, plus, in the desktop app only, the shell's
 * native file dialog, the path of a dropped file, menu actions and documents opened from the OS.
 */
export interface FolioBridge extends FolioApi {
  shell?: FolioShell;
}

declare global {
  interface Window {
    folio?: FolioDesktopApi;
  }
}

let current: FolioBridge | null = null;

export function setApi(api: FolioBridge | null): void {
  current = api;
}

export function api(): FolioBridge {
  if (!current) throw new Error('the API is not connected yet');
  return current;
}

export function hasApi(): boolean {
  return current !== null;
}

/** window.folio when present (Electron), else the web host of this page over WebSocket. */
export function resolveApi(win: Window = window): { api: FolioBridge; ws: WsApi | null } {
  if (win.folio) return { api: win.folio, ws: null };
  const proto = win.location.protocol === 'https:' ? 'wss:' : 'ws:';
  const ws = connectApi(`${proto}//${win.location.host}/api/ws`);
  return { api: ws, ws };
}

/** A failed call's message for people (ApiError carries code + message). */
export function errorMessage(e: unknown): string {
  if (e && typeof e === 'object' && 'message' in e && typeof (e as { message: unknown }).message === 'string')
    return (e as Error).message;
  return String(e);
}

export function errorCode(e: unknown): string | undefined {
  return e && typeof e === 'object' && 'code' in e ? String((e as { code: unknown }).code) : undefined;
}
