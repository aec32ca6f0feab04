// Every security setting of the desktop shell, each in one place (Electron's security checklist,
// https://www.electronjs.org/docs/latest/tutorial/security):
//   windowOptions()            the BrowserWindow: context isolation, sandbox, no Node, web security, no webview
//   CONTENT_SECURITY_POLICY    sent as a response header with every file of the app:// protocol (app-protocol.ts)
//   installSecurityHandlers()  navigation and new windows blocked, external links to the OS browser (https and
//                              mailto only), permission requests and checks denied, downloads and webviews refused,
//                              the renderer kept off the network
//   isTrustedSender()          which IPC senders the API answers (ipc.ts)
//   grants.ts                  which files, folders and downloads a call may name: only what the user chose
// The fuses of the packaged app are set by electron-builder (build/electron-builder.yml, electronFuses).
import type {
  BrowserWindowConstructorOptions,
  Event,
  IpcMainInvokeEvent,
  Session,
  WebContents,
  WebFrameMain,
} from 'electron';

import type { ElectronApi } from './electron-api.ts';

/** The renderer is served from app://folio/ (app-protocol.ts), never from a file:// URL or a dev server. */
export const APP_SCHEME = 'app';
export const APP_HOST = 'folio';
export const APP_ORIGIN = `${APP_SCHEME}://${APP_HOST}`;
export const APP_URL = `${APP_ORIGIN}/index.html`;

/**
 * The renderer's Content-Security-Policy. Scripts and styles only from the app's own files (no inline
 * script, no eval, no inline <style>); images and fonts also as data: URLs (Vite inlines small assets);
 * connections only to the app itself: the renderer talks to the core over IPC and needs no network.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self'",
  "media-src 'none'",
  "object-src 'none'",
  "frame-src 'none'",
  "child-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** Headers sent with every response of the app protocol. */
export function securityHeaders(): Record<string, string> {
  return {
    'content-security-policy': CONTENT_SECURITY_POLICY,
    // frame-ancestors 'none' says it for browsers that read CSP; this for those that only know the old header.
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
    'referrer-policy': 'no-referrer',
  };
}

export interface WindowOptionsInput {
  /** Absolute path of the compiled preload (dist/electron/preload.cjs). */
  preload: string;
  /** Saved bounds (window-state.ts); none: the default size, centred. */
  bounds?: { x?: number; y?: number; width: number; height: number };
  /** Developer tools; off in the packaged app. */
  devTools: boolean;
  /** The window icon (Linux; macOS and Windows take the app's). */
  icon?: string;
  /**
   * Spell checking. Off by default: on Windows and Linux Chromium would download its dictionaries from a
   * Google server (and the session refuses network requests); macOS uses the system's spell checker.
   */
  spellcheck?: boolean;
}

export const MIN_WIDTH = 720;
export const MIN_HEIGHT = 480;
export const DEFAULT_WIDTH = 1280;
export const DEFAULT_HEIGHT = 820;

/** The main window's options; every web preference that matters for security is spelled out. */
export function windowOptions(o: WindowOptionsInput): BrowserWindowConstructorOptions {
  return {
    width: o.bounds?.width ?? DEFAULT_WIDTH,
    height: o.bounds?.height ?? DEFAULT_HEIGHT,
    ...(o.bounds?.x !== undefined && o.bounds?.y !== undefined ? { x: o.bounds.x, y: o.bounds.y } : { center: true }),
    minWidth: MIN_WIDTH,
    minHeight: MIN_HEIGHT,
    show: false, // shown on ready-to-show: no white flash
    title: 'Folio',
    backgroundColor: '#1d1b26',
    ...(o.icon ? { icon: o.icon } : {}),
    webPreferences: {
      preload: o.preload,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      experimentalFeatures: false,
      webviewTag: false,
      navigateOnDragDrop: false,
      safeDialogs: true,
      devTools: o.devTools,
      spellcheck: o.spellcheck ?? false,
    },
  };
}

/** True for a URL of the app's own origin (app://folio/...). */
export function isAppUrl(url: string | undefined | null): boolean {
  if (!url) return false;
  try {
    const u = new URL(url);
    return u.protocol === `${APP_SCHEME}:` && u.host === APP_HOST;
  } catch {
    return false;
  }
}

/** A blob: URL made by the app's own page (blob:app://folio/<uuid>). */
export function isOwnBlob(url: string | undefined | null): boolean {
  return !!url && url.startsWith('blob:') && isAppUrl(url.slice('blob:'.length));
}

/** Links that may leave the app, to the OS browser or mail client: https and mailto, nothing else. */
export function isSafeExternalUrl(url: string): boolean {
  try {
    const u = new URL(url);
    if (u.protocol === 'mailto:') return u.pathname.length > 0;
    return u.protocol === 'https:' && u.hostname.length > 0 && u.username === '' && u.password === '';
  } catch {
    return false;
  }
}

/** Permissions the app's own page may have: writing to the clipboard (the "copy" buttons). Nothing else. */
export const GRANTED_PERMISSIONS: ReadonlySet<string> = new Set(['clipboard-sanitized-write']);

/** The permission decision: only GRANTED_PERMISSIONS, only for the app's own main frame. */
export function permissionAllowed(
  permission: string,
  requestingUrl: string | undefined,
  isMainFrame: boolean,
): boolean {
  return GRANTED_PERMISSIONS.has(permission) && isMainFrame && isAppUrl(requestingUrl);
}

export interface SecurityHandlers {
  /** The handler given to setWindowOpenHandler: always denies, opens safe links in the OS browser. */
  windowOpen(details: { url: string }): { action: 'deny' };
  /** will-navigate / will-frame-navigate / will-redirect: always prevented; safe links go to the OS browser. */
  navigate(event: { preventDefault(): void; url?: string }, url?: string): void;
  /** setPermissionRequestHandler's handler. */
  permissionRequest(
    webContents: unknown,
    permission: string,
    callback: (granted: boolean) => void,
    details: { requestingUrl?: string; isMainFrame?: boolean },
  ): void;
  /** setPermissionCheckHandler's handler. */
  permissionCheck(
    webContents: unknown,
    permission: string,
    requestingOrigin: string,
    details: { requestingUrl?: string; isMainFrame?: boolean },
  ): boolean;
  /** Every web contents created (windows, and anything a future change adds) gets the handlers. */
  webContentsCreated(event: Event, contents: WebContents): void;
}

/**
 * Installs the handlers on the app and the session. Returns them, so a test can call each. `openExternal`:
 * shell.openExternal (only ever called with a URL isSafeExternalUrl accepted).
 */
export function installSecurityHandlers(
  electron: Pick<ElectronApi, 'app' | 'shell'>,
  session: Session,
): SecurityHandlers {
  const openExternal = (url: string) => {
    if (isSafeExternalUrl(url))
      electron.shell.openExternal(url).catch((e: Error) => console.error(`folio: could not open ${url}: ${e.message}`));
  };
  const handlers: SecurityHandlers = {
    windowOpen({ url }) {
      openExternal(url);
      return { action: 'deny' };
    },
    navigate(event, url) {
      event.preventDefault();
      const target = event.url ?? url;
      if (target && !isAppUrl(target)) openExternal(target);
    },
    permissionRequest(_wc, permission, callback, details) {
      callback(permissionAllowed(permission, details?.requestingUrl, details?.isMainFrame ?? false));
    },
    permissionCheck(_wc, permission, requestingOrigin, details) {
      return permissionAllowed(permission, details?.requestingUrl ?? requestingOrigin, details?.isMainFrame ?? false);
    },
    webContentsCreated(_event, contents) {
      contents.setWindowOpenHandler(handlers.windowOpen);
      contents.on('will-navigate', (e) => handlers.navigate(e));
      contents.on('will-frame-navigate', (e) => handlers.navigate(e));
      contents.on('will-redirect', (e) => handlers.navigate(e));
      contents.on('will-attach-webview', (e) => e.preventDefault());
    },
  };

  electron.app.on('web-contents-created', handlers.webContentsCreated);
  session.setPermissionRequestHandler(handlers.permissionRequest);
  session.setPermissionCheckHandler(handlers.permissionCheck);
  session.setDevicePermissionHandler(() => false);
  session.setDisplayMediaRequestHandler((_request, callback) => callback(null));
  // The renderer downloads nothing from anywhere (models are downloaded by the core, not through the session),
  // only files it made itself: a chat's export, a blob: URL of the app's own page, which Electron asks where
  // to save.
  session.on('will-download', (e, item) => {
    if (!isOwnBlob(item?.getURL?.())) e.preventDefault();
  });
  // A second wall behind the CSP: the renderer's session makes no network request at all.
  session.webRequest.onBeforeRequest(
    { urls: ['http://*/*', 'https://*/*', 'ws://*/*', 'wss://*/*', 'ftp://*/*'] },
    (_details, callback) => callback({ cancel: true }),
  );
  return handlers;
}

/** The window whose renderer the API serves. */
export interface TrustedWindow {
  isDestroyed(): boolean;
  webContents: { mainFrame: WebFrameMain };
}

/**
 * Whether an IPC message may be answered: sent by the main frame of our own window (not a subframe, not
 * another window), whose document comes from the app's origin.
 */
export function isTrustedSender(
  event: Pick<IpcMainInvokeEvent, 'sender' | 'senderFrame'>,
  window: TrustedWindow | null,
): boolean {
  if (!window || window.isDestroyed()) return false;
  const frame = event.senderFrame;
  if (!frame) return false; // the frame navigated away or was destroyed
  if (event.sender !== (window.webContents as unknown)) return false;
  const main = window.webContents.mainFrame;
  const isMain = frame === main || (frame.processId === main.processId && frame.routingId === main.routingId);
  if (!isMain || frame.parent !== null) return false;
  return isAppUrl(frame.url);
}
