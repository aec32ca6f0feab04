// The desktop shell: everything electron/main.ts sets up, as a factory that takes the electron module, so
// a test can hand it a fake one and look at what it installed. The app core (plain TypeScript) does the
// work; the shell only wires it to a window, to IPC and to the OS:
//   - one instance: a second launch focuses the first window and opens its files there
//   - the library in app.getPath('userData') (= <appData>/Folio, as services/paths.ts's defaultDataDir)
//   - the engine host in a utilityProcess (engine-process.ts)
//   - the renderer from app://folio (app-protocol.ts) in a sandboxed, isolated window (security.ts)
//   - the API over IPC (ipc.ts), the menu (menu.ts), the files the OS hands over (open-files.ts)
//   - what the renderer may open or download: grants.ts (the dialogs, drops and OS-opened files recorded
//     here), download-confirmation.ts (the native yes/no before a download by URL)
//   - graceful shutdown: before quitting, the core stops answers, the engine process and the database
import { join } from 'node:path';

import type { BrowserWindow, OpenDialogOptions } from 'electron';

import type { AppCoreOptions } from '../services/app-core.ts';
import { ApiError, type DocumentFilePart } from '../api/contract.ts';
import { createAppProtocolHandler, registerAppScheme, type StoredDocumentFile } from './app-protocol.ts';
import {
  SHELL_CHANNEL,
  type FileDialogKind,
  type MenuAction,
  type OpenedDocument,
  type ShellEvent,
} from '../api/bridge.ts';
import { createDownloadConfirmer } from './download-confirmation.ts';
import type { ElectronApi } from './electron-api.ts';
import { createUtilitySpawn } from './engine-process.ts';
import { Grants } from './grants.ts';
import { installIpc, type BusLike, type DispatcherLike, type InstalledIpc } from './ipc.ts';
import { menuTemplate } from './menu.ts';
import { DOCUMENT_EXTENSIONS, FileOpener, filesFromArgv, MODEL_EXTENSIONS } from './open-files.ts';
import { APP_SCHEME, APP_URL, installSecurityHandlers, windowOptions, type SecurityHandlers } from './security.ts';
import { loadWindowState, restoreBounds, trackWindowState } from './window-state.ts';

/** What the shell needs of the app core (services/app-core.ts's AppCore has it). */
export interface CoreLike {
  dispatcher: DispatcherLike;
  bus: BusLike;
  /** The documents' stored originals, served under the app protocol. */
  documents?: { library: { file(documentId: string, part: DocumentFilePart): StoredDocumentFile | null } };
  close(): Promise<void>;
}

export interface ShellOptions {
  /** The built renderer (dist/renderer), served as app://folio/. */
  rendererDir: string;
  /** The compiled preload (dist/electron/preload.cjs). */
  preloadPath: string;
  /** The compiled engine host (dist/electron/engine/host.js): a utilityProcess runs JavaScript only. */
  hostEntry: string;
  /** The native addon for the engine host (FOLIO_ADDON); null: the host's own default. */
  addonPath: string | null;
  /** Creates the app core (services/app-core.ts's createAppCore). */
  createCore(options: AppCoreOptions): Promise<CoreLike>;
  /** The library; default: <appData>/Folio, or FOLIO_DATA_DIR. It becomes app.getPath('userData'). */
  dataDir?: string;
  /** The launch's command line and working folder (documents named there are opened). */
  argv?: readonly string[];
  cwd?: string;
  platform?: NodeJS.Platform;
  /** Developer tools and the reload entries; default: not in the packaged app. */
  devTools?: boolean;
  /** The window icon (Linux). */
  icon?: string;
  /** How long the core may take to close before the app quits anyway. Default 15 s. */
  shutdownTimeoutMs?: number;
}

export interface Shell {
  /** False when another instance runs: this one hands over its files and quits. */
  primary: boolean;
  /** Settles when the window is up and the core is ready (or failed to start, which quits the app). */
  ready: Promise<void>;
  dataDir: string;
  window(): BrowserWindow | null;
  core(): CoreLike | null;
  /** Installed once the app is ready. */
  security(): SecurityHandlers | null;
  ipc(): InstalledIpc | null;
  files: FileOpener;
  /** The files and folders the renderer may name (chosen, dropped, or opened from the OS). */
  grants: Grants;
  /** Opens the main window, or focuses it when there is one. */
  showWindow(): BrowserWindow;
  /** Sends a shell event to the renderer (kept until the page has loaded). */
  send(event: ShellEvent): void;
  /** Stops the core; the before-quit handler runs it once and then lets the app quit. */
  shutdown(): Promise<void>;
}

/** The native open dialog of each kind: what the user picks there becomes a grant (grants.ts). */
const OPEN_DIALOGS: Record<FileDialogKind, OpenDialogOptions> = {
  document: {
    title: 'Open documents',
    properties: ['openFile', 'multiSelections'],
    filters: [{ name: 'Documents', extensions: [...DOCUMENT_EXTENSIONS] }],
  },
  model: {
    title: 'Add a model',
    properties: ['openFile'],
    filters: [{ name: 'GGUF models', extensions: [...MODEL_EXTENSIONS] }],
  },
  folder: { title: 'Choose a folder to search for models', properties: ['openDirectory', 'createDirectory'] },
};

function withTimeout(p: Promise<void>, ms: number, what: string): Promise<void> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      console.error(`folio: ${what} took longer than ${ms} ms; quitting anyway`);
      resolve();
    }, ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Why the core did not start, for people; a native module built for Node instead of Electron says how to fix it. */
export function startupFailureMessage(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  if (/NODE_MODULE_VERSION|was compiled against a different Node\.js version/.test(message)) {
    return (
      `${message}\n\nA native module (better-sqlite3) was built for Node.js, not for Electron. ` +
      'Rebuild it for Electron on a machine with network access: npx @electron/rebuild -f -o better-sqlite3'
    );
  }
  return message;
}

export function createShell(electron: ElectronApi, o: ShellOptions): Shell {
  const { app, BrowserWindow, dialog, ipcMain, Menu, protocol, screen, session, shell } = electron;
  const platform = o.platform ?? process.platform;
  const argv = o.argv ?? process.argv;
  const cwd = o.cwd ?? process.cwd();

  // The library is Electron's userData folder: set before anything (the single-instance lock included) uses it.
  app.setName('Folio');
  const dataDir = o.dataDir ?? process.env.FOLIO_DATA_DIR ?? join(app.getPath('appData'), 'Folio');
  app.setPath('userData', dataDir);
  const devTools = o.devTools ?? !app.isPackaged;

  let window: BrowserWindow | null = null;
  let loaded = false;
  let core: CoreLike | null = null;
  let security: SecurityHandlers | null = null;
  let ipc: InstalledIpc | null = null;
  let stopping = false;
  let shutdownPromise: Promise<void> | null = null;
  let quitAllowed = false;
  let saveWindowState: (() => void) | null = null;
  let unsubscribeEvents: (() => void) | null = null;
  const outbox: ShellEvent[] = [];

  const send = (event: ShellEvent) => {
    if (window && !window.isDestroyed() && loaded) window.webContents.send(SHELL_CHANNEL, event);
    else outbox.push(event);
  };
  const files = new FileOpener((document: OpenedDocument) => send({ type: 'document-opened', document }));
  const grants = new Grants();

  let resolveCore!: (c: CoreLike) => void;
  let rejectCore!: (e: Error) => void;
  const corePromise = new Promise<CoreLike>((res, rej) => {
    resolveCore = res;
    rejectCore = rej;
  });
  corePromise.catch(() => {});

  const result: Shell = {
    primary: true,
    ready: Promise.resolve(),
    dataDir,
    window: () => window,
    core: () => core,
    security: () => security,
    ipc: () => ipc,
    files,
    grants,
    showWindow,
    send,
    shutdown,
  };

  if (!app.requestSingleInstanceLock()) {
    // The first instance gets our argv in 'second-instance' and opens the files there.
    app.quit();
    return { ...result, primary: false };
  }

  registerAppScheme(protocol);
  app.enableSandbox();

  function showWindow(): BrowserWindow {
    if (window && !window.isDestroyed()) {
      if (window.isMinimized()) window.restore();
      window.show();
      window.focus();
      return window;
    }
    const displays = screen.getAllDisplays().map((d) => d.workArea);
    const state = restoreBounds(loadWindowState(dataDir), displays);
    const win = new BrowserWindow(
      windowOptions({
        preload: o.preloadPath,
        bounds: state.bounds,
        devTools,
        icon: o.icon,
        spellcheck: platform === 'darwin',
      }),
    );
    window = win;
    loaded = false;
    if (state.maximized) win.maximize();
    saveWindowState = trackWindowState(win, dataDir).save;
    win.once('ready-to-show', () => win.show());
    win.webContents.on('did-start-loading', () => void (loaded = false));
    win.webContents.on('did-finish-load', () => {
      loaded = true;
      for (const e of outbox.splice(0)) win.webContents.send(SHELL_CHANNEL, e);
    });
    win.webContents.on('render-process-gone', (_e, details) =>
      console.error(`folio: the window's renderer is gone (${details.reason}, exit code ${details.exitCode})`),
    );
    win.on('closed', () => {
      if (window === win) {
        window = null;
        loaded = false;
      }
    });
    void win.loadURL(APP_URL).catch((e: Error) => console.error(`folio: could not load ${APP_URL}: ${e.message}`));
    return win;
  }

  const menuAction = (action: MenuAction) => {
    showWindow();
    send({ type: 'menu', action });
  };

  // ipc.ts records what the user picked as a grant.
  const openDialog = async (kind: FileDialogKind): Promise<string[]> => {
    const options = OPEN_DIALOGS[kind];
    const r =
      window && !window.isDestroyed()
        ? await dialog.showOpenDialog(window, options)
        : await dialog.showOpenDialog(options);
    return r.canceled ? [] : r.filePaths;
  };
  const confirmDownload = createDownloadConfirmer((options) =>
    window && !window.isDestroyed() ? dialog.showMessageBox(window, options) : dialog.showMessageBox(options),
  );

  // Files the OS hands over are the user's choice too: the renderer may import them again (e.g. a retry).
  const openFiles = (paths: readonly string[]) => {
    if (paths.length === 0) return;
    grants.grantFiles(paths);
    void files.open(paths);
  };

  // macOS: files dropped on the Dock icon or opened from Finder, possibly before 'ready'.
  app.on('open-file', (event, path) => {
    event.preventDefault();
    openFiles([path]);
    if (app.isReady()) showWindow();
  });
  // Another launch: focus our window, open its files.
  app.on('second-instance', (_event, otherArgv, workingDirectory) => {
    if (app.isReady()) showWindow();
    openFiles(filesFromArgv(otherArgv, workingDirectory));
  });
  openFiles(filesFromArgv(argv, cwd));

  app.on('window-all-closed', () => {
    if (platform !== 'darwin') app.quit();
  });
  app.on('activate', () => {
    if (app.isReady() && !window) showWindow();
  });
  app.on('before-quit', (event) => {
    if (quitAllowed) return;
    event.preventDefault();
    void shutdown().finally(() => {
      quitAllowed = true;
      app.quit();
    });
  });

  function shutdown(): Promise<void> {
    shutdownPromise ??= (async () => {
      stopping = true;
      saveWindowState?.();
      unsubscribeEvents?.();
      // A core still starting is waited for, then closed.
      const c = core ?? (await corePromise.catch(() => null));
      if (c)
        await withTimeout(
          c.close().catch((e: Error) => console.error(`folio: closing the core failed: ${e.message}`)),
          o.shutdownTimeoutMs ?? 15_000,
          'closing the core',
        );
      ipc?.dispose();
    })();
    return shutdownPromise;
  }

  result.ready = app.whenReady().then(async () => {
    protocol.handle(
      APP_SCHEME,
      createAppProtocolHandler(o.rendererDir, (id, part) => core?.documents?.library.file(id, part) ?? null),
    );
    security = installSecurityHandlers(electron, session.defaultSession);
    ipc = installIpc({
      ipcMain,
      window: () => window,
      dispatcher: () =>
        (stopping ? Promise.reject(new ApiError('SHUTTING_DOWN', 'Folio is quitting')) : corePromise).then(
          (c) => c.dispatcher,
        ),
      openDialog,
      grants,
      confirmDownload,
    });
    Menu.setApplicationMenu(
      Menu.buildFromTemplate(
        menuTemplate({
          platform,
          appName: 'Folio',
          action: menuAction,
          openLibraryFolder: () => void shell.openPath(dataDir),
          devTools,
        }),
      ),
    );
    showWindow();

    try {
      const c = await o.createCore({
        dataDir,
        engine: {
          spawn: createUtilitySpawn(electron.utilityProcess),
          entry: { entry: o.hostEntry, execArgv: [] },
          env: o.addonPath ? { FOLIO_ADDON: o.addonPath } : {},
        },
      });
      if (stopping) {
        await c.close();
        return;
      }
      core = c;
      unsubscribeEvents = ipc.forwardEvents(c.bus);
      resolveCore(c);
      await files.ready(c.dispatcher);
    } catch (e) {
      rejectCore(e as Error);
      const message = startupFailureMessage(e);
      console.error(`folio: the app core did not start: ${message}`);
      dialog.showErrorBox('Folio could not start', message);
      quitAllowed = true;
      app.quit();
    }
  });
  return result;
}
