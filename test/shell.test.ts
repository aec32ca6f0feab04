// The desktop shell (electron/main.ts, electron/preload.cts, electron/shell/) and its packaging, without
// Electron: its binary cannot run here, so `electron` is replaced by a fake that records what the shell
// installs (nothing here imports 'electron' for real, which would start a download). Checked:
//   - the build: tsconfig.electron.json type-checks against Electron's real type definitions and emits
//     runnable JS (ES modules, the preload as CommonJS, the pdf.js worker copied)
//   - security: each window option, the CSP header of the app protocol (and its path-traversal refusals),
//     navigation / new-window / permission handlers installed and denying, IPC from an unexpected frame or
//     origin refused, malformed calls refused
//   - the preload, run as Electron runs a sandboxed preload: exactly FolioApi (call + on) and the shell part
//   - the engine host in a utilityProcess: the adapter, a host that dies and is restarted, and the compiled
//     host speaking the parentPort transport
//   - grants: the renderer imports, adds and searches only what the user chose (open dialog, drop, OS) and
//     downloads by URL only after the main process's confirmation dialog
//   - files from argv, open-file and second-instance; window state; the menu; shutdown
//   - the compiled core under plain Node (no tsx), with the native addon (FOLIO_ADDON)
//   - build/electron-builder.yml: what it unpacks, its fuses, that every path it names exists, and a
//     `--dir` package made with a fake Electron binary (fuses flipped, the addon outside the asar)
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { compileFunction } from 'node:vm';

import { events as contractEvents, methods as contractMethods, type EventName } from '../electron/api/contract.ts';
import { Dispatcher, EventBus, type Handlers } from '../electron/api/dispatcher.ts';
import type { Settings } from '../electron/api/contract.ts';
import { DEFAULT_SETTINGS } from '../electron/storage/settings.ts';
import { EngineClient } from '../electron/engine/client.ts';
import { PROTOCOL_VERSION } from '../electron/engine/protocol.ts';
import { createAppProtocolHandler, resolveAppPath } from '../electron/shell/app-protocol.ts';
import {
  CALL_CHANNEL,
  DIALOG_CHANNEL,
  EVENT_CHANNEL,
  GRANT_CHANNEL,
  MENU_ACTIONS,
  SHELL_CHANNEL,
  type CallReply,
} from '../electron/api/bridge.ts';
import { MAX_DOWNLOAD_URL_CHARS } from '../electron/shell/download-confirmation.ts';
import { NOT_GRANTED_DOCUMENT, NOT_GRANTED_FOLDER, NOT_GRANTED_MODEL } from '../electron/shell/grants.ts';
import type { ElectronApi } from '../electron/shell/electron-api.ts';
import { createUtilitySpawn } from '../electron/shell/engine-process.ts';
import { parseCallMessage } from '../electron/shell/ipc.ts';
import { shellLocations, unpackedPath } from '../electron/shell/locations.ts';
import { ACCELERATORS, menuTemplate } from '../electron/shell/menu.ts';
import { DOCUMENT_EXTENSIONS, filesFromArgv } from '../electron/shell/open-files.ts';
import { createShell, startupFailureMessage, type CoreLike, type ShellOptions } from '../electron/shell/shell.ts';
import {
  APP_URL,
  CONTENT_SECURITY_POLICY,
  isAppUrl,
  isSafeExternalUrl,
  isTrustedSender,
  permissionAllowed,
  windowOptions,
} from '../electron/shell/security.ts';
import {
  isVisibleOn,
  loadWindowState,
  restoreBounds,
  saveWindowState,
  windowStatePath,
} from '../electron/shell/window-state.ts';
import { repoRoot } from './helpers/shared.ts';

const scratch = mkdtempSync(join(tmpdir(), 'folio-shell-'));
mkdirSync(join(repoRoot, 'dist'), { recursive: true });
// The build goes inside the repository (dist/.shell-test-*) so that its imports find node_modules.
const outRoot = mkdtempSync(join(repoRoot, 'dist', '.shell-test-'));
const out = join(outRoot, 'electron');
process.on('exit', () => {
  rmSync(scratch, { recursive: true, force: true });
  rmSync(outRoot, { recursive: true, force: true });
});

const addon = process.env.FOLIO_ADDON ?? join(repoRoot, 'native/build/Release/folio.node');
const noAddon = existsSync(addon)
  ? false
  : `needs the native addon (${addon}): npm run build:native, or set FOLIO_ADDON`;
const env = { ...process.env, ELECTRON_SKIP_BINARY_DOWNLOAD: '1' };
const tick = () => new Promise((r) => setTimeout(r, 0));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

// -----------------------------------------------------------------------------------------------------------
// The build: one tsc run of tsconfig.electron.json (into dist/.shell-test-*/electron), used by the tests below

let build: { status: number | null; output: string };
before(() => {
  const tsc = join(repoRoot, 'node_modules/typescript/bin/tsc');
  const r = spawnSync(
    process.execPath,
    [tsc, '-p', 'tsconfig.electron.json', '--outDir', out, '--sourceMap', 'false'],
    { cwd: repoRoot, env, encoding: 'utf8' },
  );
  build = { status: r.status, output: `${r.stdout}${r.stderr}` };
});

describe('build: tsconfig.electron.json', () => {
  test('type-checks main, preload, shell and the core against the real electron type definitions', () => {
    assert.equal(build.output.trim(), '', `tsc reported:\n${build.output}`);
    assert.equal(build.status, 0);
    const cfg = readFileSync(join(repoRoot, 'tsconfig.electron.json'), 'utf8');
    for (const f of [
      'electron/main.ts',
      'electron/preload.cts',
      'electron/shell/**/*.ts',
      'electron/engine/**/*.ts',
      'electron/documents/**/*.ts',
    ])
      assert.ok(cfg.includes(`"${f}"`), `tsconfig.electron.json includes ${f}`);
  });

  test('emits runnable JS: ES modules with .js imports, a CommonJS preload, the engine host, the pdf.js worker', () => {
    for (const f of [
      'main.js',
      'preload.cjs',
      'shell/shell.js',
      'services/app-core.js',
      'engine/host.js',
      'engine/tokenizer-worker.js',
      'engine/client.js',
      'documents/pdf.js',
      'documents/parse-worker.js',
      'web/server.js',
    ])
      assert.ok(existsSync(join(out, f)), `${f} is emitted`);
    const main = readFileSync(join(out, 'main.js'), 'utf8');
    assert.match(main, /from "\.\/shell\/shell\.js"/);
    assert.match(main, /import\("\.\/services\/app-core\.js"\)/);
    assert.doesNotMatch(main, /\.ts["']/, 'no .ts import is left');
    const preload = readFileSync(join(out, 'preload.cjs'), 'utf8');
    assert.match(preload, /require\("electron"\)/);
    assert.doesNotMatch(preload, /^\s*(import|export)\s/m, 'the preload is CommonJS');
    const requires = [...preload.matchAll(/require\(["']([^"']+)["']\)/g)].map((m) => m[1]);
    assert.deepEqual([...new Set(requires)], ['electron'], 'a sandboxed preload may require electron only');
    // package.json's main and the shell's idea of where things are agree with the build.
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { main: string; type: string };
    assert.equal(pkg.main, 'dist/electron/main.js');
    assert.equal(pkg.type, 'module');
    const where = shellLocations(pathToFileURL(join(repoRoot, 'dist/electron/main.js')).href, repoRoot);
    assert.equal(where.preloadPath, join(repoRoot, 'dist/electron/preload.cjs'));
    assert.equal(where.hostEntry, join(repoRoot, 'dist/electron/engine/host.js'));
    assert.equal(where.rendererDir, join(repoRoot, 'dist/renderer'));
    assert.equal(where.addonPath, join(repoRoot, 'native/build/Release/folio.node'));
  });
});

// -----------------------------------------------------------------------------------------------------------
// A fake electron module

interface FakeFrame {
  url: string;
  processId: number;
  routingId: number;
  parent: FakeFrame | null;
}

class FakeWebContents extends EventEmitter {
  sent: { channel: string; args: unknown[] }[] = [];
  mainFrame: FakeFrame = { url: '', processId: 7, routingId: 1, parent: null };
  windowOpenHandler: ((d: { url: string }) => { action: string }) | null = null;
  send(channel: string, ...args: unknown[]) {
    this.sent.push({ channel, args });
  }
  setWindowOpenHandler(h: (d: { url: string }) => { action: string }) {
    this.windowOpenHandler = h;
  }
  /** Fires a webContents event the way Electron does: an event object first. */
  fire(name: string, details: Record<string, unknown> = {}) {
    const e = {
      defaultPrevented: false,
      preventDefault() {
        this.defaultPrevented = true;
      },
      ...details,
    };
    this.emit(name, e);
    return e;
  }
}

function fakeElectron(o: { lock?: boolean; appData: string }) {
  const calls = {
    quit: 0,
    openExternal: [] as string[],
    openPath: [] as string[],
    errorBoxes: [] as { title: string; message: string }[],
    privileged: [] as unknown[],
    sandbox: 0,
    menu: null as unknown,
    dialogs: [] as unknown[],
    /** What the next open dialog answers (the user's choice). */
    openDialogResult: { canceled: false, filePaths: ['/docs/a.pdf'] } as { canceled: boolean; filePaths: string[] },
    /** Every message box shown: [window?, options]; answered by `messageBoxAnswer`. */
    messageBoxes: [] as unknown[][],
    messageBoxAnswer: async (): Promise<{ response: number }> => ({ response: 1 }),
  };
  const paths: Record<string, string> = { appData: o.appData };
  let readyResolve!: () => void;
  const readyPromise = new Promise<void>((r) => (readyResolve = r));
  let isReady = false;
  const app = Object.assign(new EventEmitter(), {
    name: 'folio',
    isPackaged: false,
    setName(n: string) {
      app.name = n;
    },
    getPath: (n: string) => paths[n] ?? join(o.appData, n),
    setPath: (n: string, p: string) => void (paths[n] = p),
    getAppPath: () => repoRoot,
    requestSingleInstanceLock: () => o.lock ?? true,
    enableSandbox: () => void calls.sandbox++,
    whenReady: () => readyPromise,
    isReady: () => isReady,
    quit() {
      calls.quit++;
      const e = {
        defaultPrevented: false,
        preventDefault() {
          this.defaultPrevented = true;
        },
      };
      app.emit('before-quit', e);
      if (!e.defaultPrevented) app.emit('will-quit');
    },
  });
  const windows: FakeWindow[] = [];
  class FakeWindow extends EventEmitter {
    webContents = new FakeWebContents();
    destroyed = false;
    minimized = false;
    maximized = false;
    shown = 0;
    focused = 0;
    loaded: string[] = [];
    constructor(readonly options: Electron.BrowserWindowConstructorOptions) {
      super();
      windows.push(this);
      app.emit('web-contents-created', {}, this.webContents);
    }
    loadURL(url: string) {
      this.loaded.push(url);
      this.webContents.mainFrame.url = url;
      return Promise.resolve();
    }
    isDestroyed() {
      return this.destroyed;
    }
    isMinimized() {
      return this.minimized;
    }
    isMaximized() {
      return this.maximized;
    }
    isFullScreen() {
      return false;
    }
    restore() {
      this.minimized = false;
    }
    maximize() {
      this.maximized = true;
    }
    show() {
      this.shown++;
    }
    focus() {
      this.focused++;
    }
    getNormalBounds() {
      return { x: 40, y: 50, width: 1000, height: 700 };
    }
    close() {
      this.emit('close');
      this.destroyed = true;
      this.emit('closed');
    }
  }
  const ipcHandlers = new Map<string, (event: unknown, ...args: unknown[]) => unknown>();
  const protocolHandlers = new Map<string, (req: Request) => Promise<Response>>();
  const ses = Object.assign(new EventEmitter(), {
    permissionRequest: null as null | ((...a: unknown[]) => void),
    permissionCheck: null as null | ((...a: unknown[]) => boolean),
    devicePermission: null as null | ((...a: unknown[]) => boolean),
    displayMedia: null as null | ((...a: unknown[]) => void),
    beforeRequest: null as null | {
      filter: { urls: string[] };
      handler: (d: unknown, cb: (r: { cancel?: boolean }) => void) => void;
    },
    setPermissionRequestHandler(h: (...a: unknown[]) => void) {
      ses.permissionRequest = h;
    },
    setPermissionCheckHandler(h: (...a: unknown[]) => boolean) {
      ses.permissionCheck = h;
    },
    setDevicePermissionHandler(h: (...a: unknown[]) => boolean) {
      ses.devicePermission = h;
    },
    setDisplayMediaRequestHandler(h: (...a: unknown[]) => void) {
      ses.displayMedia = h;
    },
    webRequest: {
      onBeforeRequest(
        filter: { urls: string[] },
        handler: (d: unknown, cb: (r: { cancel?: boolean }) => void) => void,
      ) {
        ses.beforeRequest = { filter, handler };
      },
    },
  });
  const forks: FakeUtilityChild[] = [];
  const electron = {
    app,
    BrowserWindow: FakeWindow,
    screen: { getAllDisplays: () => [{ workArea: { x: 0, y: 0, width: 1920, height: 1080 } }] },
    session: { defaultSession: ses },
    protocol: {
      registerSchemesAsPrivileged: (s: unknown[]) => void calls.privileged.push(...s),
      handle: (scheme: string, h: (req: Request) => Promise<Response>) => void protocolHandlers.set(scheme, h),
    },
    ipcMain: {
      handle: (ch: string, h: (event: unknown, ...args: unknown[]) => unknown) => {
        if (ipcHandlers.has(ch)) throw new Error(`a second handler for ${ch}`);
        ipcHandlers.set(ch, h);
      },
      removeHandler: (ch: string) => void ipcHandlers.delete(ch),
    },
    Menu: {
      buildFromTemplate: (template: unknown) => ({ template }),
      setApplicationMenu: (m: unknown) => void (calls.menu = m),
    },
    dialog: {
      showOpenDialog: async (...args: unknown[]) => {
        calls.dialogs.push(args);
        return calls.openDialogResult;
      },
      showMessageBox: (...args: unknown[]) => {
        calls.messageBoxes.push(args);
        return calls.messageBoxAnswer();
      },
      showErrorBox: (title: string, message: string) => void calls.errorBoxes.push({ title, message }),
    },
    shell: {
      openExternal: async (url: string) => void calls.openExternal.push(url),
      openPath: async (p: string) => (calls.openPath.push(p), ''),
    },
    utilityProcess: {
      fork: (...a: unknown[]) => {
        const c = new FakeUtilityChild(a);
        forks.push(c);
        return c;
      },
    },
  };
  return {
    electron: electron as unknown as ElectronApi,
    app,
    windows,
    ipcHandlers,
    protocolHandlers,
    session: ses,
    calls,
    forks,
    ready() {
      isReady = true;
      readyResolve();
    },
  };
}

/** A utilityProcess child that does what the test tells it. */
class FakeUtilityChild extends EventEmitter {
  pid: number | undefined = undefined;
  stderr = new EventEmitter();
  posted: unknown[] = [];
  killed = 0;
  constructor(readonly forkArgs: unknown[]) {
    super();
  }
  spawn(pid: number) {
    this.pid = pid;
    this.emit('spawn');
  }
  postMessage(m: unknown) {
    this.posted.push(m);
  }
  say(m: unknown) {
    this.emit('message', m);
  }
  exit(code: number) {
    this.pid = undefined;
    this.emit('exit', code);
  }
  kill() {
    this.killed++;
    return true;
  }
}

/** A fake core: the real Dispatcher and EventBus over stub handlers, so validation is the real one. */
function fakeCore() {
  const bus = new EventBus();
  const imported: string[] = [];
  const addedModels: string[] = [];
  const downloads: unknown[] = [];
  const settings: Settings = { ...DEFAULT_SETTINGS, modelFolders: [] };
  let closed = 0;
  const handlers = {
    'tasks.cancel': () => ({ ok: true as const }),
    'documents.import': (p: { path?: string; fileName?: string }) => {
      if (p.path?.includes('broken')) throw Object.assign(new Error('the file is damaged'), { code: 'CORRUPT' });
      imported.push(p.path ?? `upload:${p.fileName}`);
      return { documentId: `doc-${imported.length}`, taskId: `task-${imported.length}` };
    },
    'models.add': (p: { path: string }) => {
      addedModels.push(p.path);
      return {
        id: `m${addedModels.length}`,
        path: p.path,
        name: 'm',
        source: 'added',
        fileBytes: 1,
        architecture: 'llama',
        quantization: null,
        contextLength: null,
        chatTemplate: null,
        parameters: null,
        layers: null,
        kvHeads: null,
        supported: true,
        unsupportedReason: null,
        error: null,
      };
    },
    'models.download': (p: unknown) => (downloads.push(p), { taskId: `dl-${downloads.length}` }),
    'settings.get': () => settings,
    'settings.update': (p: Partial<Settings>) => Object.assign(settings, p),
  } as unknown as Handlers;
  const core: CoreLike & {
    bus: EventBus;
    imported: string[];
    addedModels: string[];
    downloads: unknown[];
    settings: Settings;
    closed(): number;
  } = {
    dispatcher: new Dispatcher(handlers, bus),
    bus,
    imported,
    addedModels,
    downloads,
    settings,
    closed: () => closed,
    async close() {
      closed++;
    },
  };
  return core;
}

function shellOptions(dir: string, over: Partial<ShellOptions> = {}): ShellOptions {
  return {
    rendererDir: join(dir, 'renderer'),
    preloadPath: join(dir, 'preload.cjs'),
    hostEntry: join(dir, 'engine/host.js'),
    addonPath: '/opt/folio/resources/app.asar.unpacked/native/build/Release/folio.node',
    dataDir: join(dir, 'library'),
    argv: ['/opt/folio/folio'],
    cwd: dir,
    platform: 'linux',
    createCore: async () => fakeCore(),
    ...over,
  };
}

/** A shell on a fake electron, the app made ready, the core up. */
async function startShell(over: Partial<ShellOptions> = {}, fakeOpts: { lock?: boolean } = {}) {
  const dir = mkdtempSync(join(scratch, 'shell-'));
  const fake = fakeElectron({ appData: join(dir, 'appData'), ...fakeOpts });
  let core: ReturnType<typeof fakeCore> | null = null;
  const shell = createShell(
    fake.electron,
    shellOptions(dir, {
      createCore: async () => (core = fakeCore()),
      ...over,
    }),
  );
  return {
    dir,
    fake,
    shell,
    core: () => core!,
    start: async () => {
      fake.ready();
      await shell.ready;
    },
  };
}

/** An IPC event as Electron makes it, from the given frame of the given contents. */
function ipcEvent(sender: FakeWebContents, frame: FakeFrame | null) {
  return { sender, senderFrame: frame } as unknown as Electron.IpcMainInvokeEvent;
}

// -----------------------------------------------------------------------------------------------------------
// Security

describe('security: the window', () => {
  test('every web preference of the security checklist is set', () => {
    const o = windowOptions({ preload: '/app/preload.cjs', devTools: false });
    const w = o.webPreferences!;
    assert.equal(w.contextIsolation, true);
    assert.equal(w.sandbox, true);
    assert.equal(w.nodeIntegration, false);
    assert.equal(w.nodeIntegrationInWorker, false);
    assert.equal(w.nodeIntegrationInSubFrames, false);
    assert.equal(w.webSecurity, true);
    assert.equal(w.allowRunningInsecureContent, false);
    assert.equal(w.experimentalFeatures, false);
    assert.equal(w.webviewTag, false);
    assert.equal(w.navigateOnDragDrop, false);
    assert.equal(w.devTools, false);
    assert.equal(w.spellcheck, false, 'no dictionary download from the network');
    assert.equal(w.preload, '/app/preload.cjs');
    assert.equal(o.show, false);
  });

  test('the shell opens its window with those options, on app://folio, the app sandboxed', async () => {
    const s = await startShell();
    await s.start();
    const [win] = s.fake.windows;
    assert.ok(win);
    assert.deepEqual(
      win.options.webPreferences,
      windowOptions({ preload: shellOptions(s.dir).preloadPath, devTools: true }).webPreferences,
    );
    assert.deepEqual(win.loaded, [APP_URL]);
    assert.equal(APP_URL, 'app://folio/index.html');
    assert.equal(s.fake.calls.sandbox, 1, 'app.enableSandbox()');
    assert.deepEqual(s.fake.calls.privileged, [
      { scheme: 'app', privileges: { standard: true, secure: true, supportFetchAPI: true, codeCache: true } },
    ]);
    win.emit('ready-to-show');
    assert.equal(win.shown, 1);
    await s.shell.shutdown();
  });
});

describe('security: the app protocol and its Content-Security-Policy', () => {
  const root = join(scratch, 'renderer');
  mkdirSync(join(root, 'assets'), { recursive: true });
  writeFileSync(join(root, 'index.html'), '<!doctype html><script type="module" src="/assets/app.js"></script>');
  writeFileSync(join(root, 'assets/app.js'), 'console.log(1)');
  writeFileSync(join(scratch, 'secret.txt'), 'secret');
  symlinkSync(join(scratch, 'secret.txt'), join(root, 'assets/link.txt'));
  const handler = createAppProtocolHandler(root);
  const get = (url: string, method = 'GET') => handler(new Request(url, { method }));

  test('the policy: self only, no eval, no inline script, no network', () => {
    const d = new Map(
      CONTENT_SECURITY_POLICY.split(';')
        .map((s) => s.trim().split(/\s+/))
        .map(([k, ...v]) => [k, v]),
    );
    assert.deepEqual(d.get('default-src'), ["'self'"]);
    assert.deepEqual(d.get('script-src'), ["'self'"]);
    assert.deepEqual(d.get('connect-src'), ["'self'"]);
    assert.deepEqual(d.get('object-src'), ["'none'"]);
    assert.deepEqual(d.get('frame-ancestors'), ["'none'"]);
    assert.deepEqual(d.get('base-uri'), ["'none'"]);
    assert.doesNotMatch(CONTENT_SECURITY_POLICY, /unsafe-eval|unsafe-inline|wasm-unsafe-eval|\*|https?:/);
  });

  test('every response carries it as a header, the 404 and 403 ones too', async () => {
    for (const [url, status] of [
      ['app://folio/index.html', 200],
      ['app://folio/', 200],
      ['app://folio/assets/app.js', 200],
      ['app://folio/assets/nope.js', 404],
      ['app://folio/..%2fsecret.txt', 403],
    ] as const) {
      const r = await get(url);
      assert.equal(r.status, status, url);
      assert.equal(r.headers.get('content-security-policy'), CONTENT_SECURITY_POLICY, url);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(r.headers.get('x-frame-options'), 'DENY', 'no framing, for engines that ignore frame-ancestors');
    }
    const js = await get('app://folio/assets/app.js');
    assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(await js.text(), 'console.log(1)');
  });

  test('client-side routes get index.html; other hosts and methods are refused', async () => {
    const r = await get('app://folio/chat/42');
    assert.equal(r.status, 200);
    assert.match(await r.text(), /<script type="module"/);
    assert.equal((await get('app://evil/index.html')).status, 404);
    assert.equal((await get('app://folio/index.html', 'POST')).status, 405);
  });

  test('path traversal is refused: .., encoded dots and separators, backslashes, absolute paths, links out of the folder', async () => {
    for (const p of [
      '/%2e%2e/secret.txt',
      '/..%2fsecret.txt',
      '/assets/%2e%2e/%2e%2e/secret.txt',
      '/%2e%2e%5csecret.txt',
      '/..\\secret.txt',
      '/%00index.html',
      '/C:/Windows/win.ini',
      '/%E0%A4%A',
    ])
      assert.equal(resolveAppPath(root, p), null, p);
    assert.equal(
      resolveAppPath(root, '/%2fetc%2fpasswd'),
      join(root, 'etc/passwd'),
      'a leading encoded slash stays inside',
    );
    assert.equal(resolveAppPath(root, '/assets/app.js'), join(root, 'assets/app.js'));
    for (const url of [
      'app://folio/%2e%2e/secret.txt',
      'app://folio/assets/%2e%2e%2f%2e%2e%2fsecret.txt',
      'app://folio/%5c..%5csecret.txt',
      'app://folio/assets/link.txt',
    ]) {
      const r = await get(url);
      assert.ok(r.status === 403 || r.status === 404, `${url}: ${r.status}`);
      assert.notEqual(await r.text(), 'secret', url);
    }
    // The URL parser itself folds plain ../ segments back into the folder.
    const folded = await get('app://folio/../../secret.txt');
    assert.notEqual(await folded.text(), 'secret');
  });
});

describe('security: navigation, new windows, permissions, network', () => {
  test('the handlers are installed on every web contents and deny', async () => {
    const s = await startShell();
    await s.start();
    const wc = s.fake.windows[0].webContents;
    for (const e of ['will-navigate', 'will-frame-navigate', 'will-redirect', 'will-attach-webview'])
      assert.equal(wc.listenerCount(e), 1, e);

    // New windows: always denied; https and mailto links go to the OS browser, nothing else does.
    for (const url of [
      'https://example.org/paper.pdf',
      'mailto:someone@example.org',
      'http://example.org/',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'app://folio/index.html',
      'smb://host/share',
      'https://user:pw@example.org/',
    ])
      assert.deepEqual(wc.windowOpenHandler!({ url }), { action: 'deny' }, url);
    assert.deepEqual(s.fake.calls.openExternal, ['https://example.org/paper.pdf', 'mailto:someone@example.org']);

    // Navigation: always prevented, in every frame and on redirects.
    s.fake.calls.openExternal.length = 0;
    for (const name of ['will-navigate', 'will-frame-navigate', 'will-redirect'])
      for (const url of [
        'app://folio/other.html',
        'https://example.org/',
        'file:///etc/passwd',
        'http://localhost:5173/',
      ])
        assert.equal(wc.fire(name, { url }).defaultPrevented, true, `${name} ${url}`);
    assert.deepEqual(s.fake.calls.openExternal, [
      'https://example.org/',
      'https://example.org/',
      'https://example.org/',
    ]);
    assert.equal(wc.fire('will-attach-webview').defaultPrevented, true);

    // Permissions: requests and checks denied, devices and screen capture too.
    const ses = s.fake.session;
    const ask = (permission: string, requestingUrl: string, isMainFrame = true) =>
      new Promise<boolean>((r) => ses.permissionRequest!(wc, permission, r, { requestingUrl, isMainFrame }));
    for (const p of [
      'media',
      'geolocation',
      'notifications',
      'openExternal',
      'fullscreen',
      'clipboard-read',
      'midi',
      'hid',
      'serial',
      'usb',
      'unknown',
    ])
      assert.equal(await ask(p, 'app://folio/index.html'), false, p);
    assert.equal(
      await ask('clipboard-sanitized-write', 'app://folio/index.html'),
      true,
      'copy buttons may write the clipboard',
    );
    assert.equal(await ask('clipboard-sanitized-write', 'https://evil.example/'), false);
    assert.equal(await ask('clipboard-sanitized-write', 'app://folio/index.html', false), false, 'not from a subframe');
    for (const p of ['media', 'geolocation', 'notifications', 'clipboard-read'])
      assert.equal(
        ses.permissionCheck!(wc, p, 'app://folio', { requestingUrl: 'app://folio/index.html', isMainFrame: true }),
        false,
        p,
      );
    assert.equal(ses.devicePermission!({}), false);
    let streams: unknown = 'unset';
    ses.displayMedia!({}, (s2: unknown) => (streams = s2));
    assert.equal(streams, null);
    const download = {
      defaultPrevented: false,
      preventDefault() {
        this.defaultPrevented = true;
      },
    };
    ses.emit('will-download', download);
    assert.equal(download.defaultPrevented, true);
    // Only a file the app's page made itself (a chat's export) is saved.
    const save = (url: string) => {
      const d = { ...download, defaultPrevented: false };
      ses.emit('will-download', d, { getURL: () => url });
      return !d.defaultPrevented;
    };
    assert.equal(save('blob:app://folio/0b6f5a4e-9c1d-4f7e-8f59-0c2a8d1b9e11'), true);
    for (const u of ['blob:https://evil.example/x', 'https://example.org/model.gguf', 'app://folio/index.html'])
      assert.equal(save(u), false, u);

    // The renderer's session makes no network request.
    assert.ok(ses.beforeRequest);
    for (const u of ['http://*/*', 'https://*/*', 'ws://*/*', 'wss://*/*'])
      assert.ok(ses.beforeRequest.filter.urls.includes(u), u);
    let verdict: { cancel?: boolean } = {};
    ses.beforeRequest.handler({ url: 'https://example.org/' }, (r) => (verdict = r));
    assert.equal(verdict.cancel, true);
    await s.shell.shutdown();
  });

  test('the URL rules', () => {
    assert.equal(isAppUrl('app://folio/index.html'), true);
    for (const u of [
      'app://folio.evil/index.html',
      'app://other/',
      'file:///app/index.html',
      'https://folio/',
      'not a url',
      '',
      null,
    ])
      assert.equal(isAppUrl(u), false, String(u));
    assert.equal(isSafeExternalUrl('https://arxiv.org/abs/2407.11550'), true);
    for (const u of [
      'http://arxiv.org/',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'data:text/html,x',
      'vbscript:x',
      'ms-msdt:x',
      'https://a:b@x.org/',
    ])
      assert.equal(isSafeExternalUrl(u), false, u);
    assert.equal(permissionAllowed('clipboard-sanitized-write', 'app://folio/', true), true);
    assert.equal(permissionAllowed('media', 'app://folio/', true), false);
  });
});

describe('security: IPC', () => {
  test('a call is answered only from the main frame of our window showing app://folio', async () => {
    const s = await startShell();
    await s.start();
    const win = s.fake.windows[0];
    const wc = win.webContents;
    const call = s.fake.ipcHandlers.get(CALL_CHANNEL)!;
    assert.ok(call, "ipcMain.handle('folio:call')");
    const good = { method: 'tasks.cancel', params: { taskId: 't1' } };

    assert.deepEqual(await call(ipcEvent(wc, wc.mainFrame), good), { ok: true, result: { ok: true } });

    const subframe: FakeFrame = { url: 'app://folio/index.html', processId: 7, routingId: 2, parent: wc.mainFrame };
    const foreign: FakeFrame = { url: 'https://evil.example/', processId: 7, routingId: 1, parent: null };
    const other = new FakeWebContents();
    other.mainFrame.url = 'app://folio/index.html';
    for (const [what, event] of [
      ['a subframe', ipcEvent(wc, subframe)],
      ['another origin in the main frame', ipcEvent(wc, { ...wc.mainFrame, url: 'https://evil.example/' })],
      ['a file:// page', ipcEvent(wc, { ...wc.mainFrame, url: 'file:///index.html' })],
      ['a frame that is gone', ipcEvent(wc, null)],
      ['another web contents', ipcEvent(other, other.mainFrame)],
      ['a frame of another process', ipcEvent(wc, { ...foreign, url: 'app://folio/index.html', processId: 8 })],
    ] as const) {
      const r = (await call(event, good)) as CallReply;
      assert.equal(r.ok, false, what);
      assert.equal(!r.ok && r.error.code, 'FORBIDDEN', what);
    }
    assert.equal(isTrustedSender(ipcEvent(wc, wc.mainFrame), null), false, 'no window, no caller');
    win.destroyed = true;
    assert.equal(((await call(ipcEvent(wc, wc.mainFrame), good)) as CallReply).ok, false, 'a destroyed window');
    await s.shell.shutdown();
  });

  test('malformed messages are refused; the dispatcher validates methods and parameters', async () => {
    const s = await startShell();
    await s.start();
    const wc = s.fake.windows[0].webContents;
    const call = (m: unknown) =>
      s.fake.ipcHandlers.get(CALL_CHANNEL)!(ipcEvent(wc, wc.mainFrame), m) as Promise<CallReply>;
    const code = async (m: unknown) => {
      const r = await call(m);
      return r.ok ? 'ok' : r.error.code;
    };
    for (const m of [
      null,
      undefined,
      'tasks.cancel',
      42,
      [],
      ['tasks.cancel', {}],
      { method: 5 },
      { method: '' },
      { params: {} },
      { method: 'tasks.cancel', params: {}, extra: 1 },
      { method: 'x'.repeat(65) },
    ])
      assert.equal(await code(m), 'BAD_REQUEST', JSON.stringify(m));
    assert.equal(await code({ method: 'nope.nope', params: {} }), 'UNKNOWN_METHOD');
    assert.equal(await code({ method: 'constructor', params: {} }), 'UNKNOWN_METHOD');
    assert.equal(await code({ method: '__proto__', params: {} }), 'UNKNOWN_METHOD');
    const bad = await call({ method: 'tasks.cancel', params: { taskId: 7 } });
    assert.equal(bad.ok, false);
    assert.equal(!bad.ok && bad.error.code, 'BAD_REQUEST');
    assert.match(!bad.ok ? bad.error.message : '', /taskId/);
    assert.ok(!bad.ok && Array.isArray(bad.error.details), 'zod issues travel as data');
    s.shell.grants.grantFiles(['/x/broken.pdf']);
    assert.equal(
      await code({ method: 'documents.import', params: { path: '/x/broken.pdf' } }),
      'CORRUPT',
      'handler errors keep their code',
    );
    assert.deepEqual(parseCallMessage({ method: 'a.b' }), { method: 'a.b', params: undefined });
    await s.shell.shutdown();
  });

  test('events of the bus reach the window on folio:event; the open dialog answers only our window', async () => {
    const s = await startShell();
    await s.start();
    const wc = s.fake.windows[0].webContents;
    s.core().bus.emit('documents.deleted', { documentId: 'd1' });
    assert.deepEqual(wc.sent.find((m) => m.channel === EVENT_CHANNEL)?.args, [
      { event: 'documents.deleted', payload: { documentId: 'd1' } },
    ]);

    const dialog = s.fake.ipcHandlers.get(DIALOG_CHANNEL)!;
    assert.deepEqual(await dialog(ipcEvent(wc, wc.mainFrame), 'document'), ['/docs/a.pdf']);
    const [, options] = s.fake.calls.dialogs[0] as [
      unknown,
      { filters: { extensions: string[] }[]; properties: string[] },
    ];
    assert.deepEqual(options.filters[0].extensions, ['pdf', 'docx', 'md', 'markdown', 'txt', 'png', 'jpg', 'jpeg']);
    assert.ok(options.properties.includes('multiSelections'));
    await dialog(ipcEvent(wc, wc.mainFrame), 'model');
    const [, modelOptions] = s.fake.calls.dialogs[1] as [unknown, { filters: { extensions: string[] }[] }];
    assert.deepEqual(modelOptions.filters[0].extensions, ['gguf']);
    await assert.rejects(
      () => Promise.resolve(dialog(ipcEvent(wc, { ...wc.mainFrame, url: 'https://evil.example/' }), 'document')),
      /may not use/,
    );
    await assert.rejects(
      () => Promise.resolve(dialog(ipcEvent(wc, wc.mainFrame), '../../etc')),
      /document", "model" or "folder/,
    );
    await s.shell.shutdown();
  });
});

// -----------------------------------------------------------------------------------------------------------
// Grants: the renderer may name only files and folders the user gave, and download by URL only after the
// user said yes in a native dialog (issue 14, item 12)

describe('grants: what the renderer may open, add, search and download', () => {
  /** A started shell, with a `call` as the window's renderer makes it. */
  async function started() {
    const s = await startShell();
    await s.start();
    const wc = s.fake.windows[0].webContents;
    const call = async (method: string, params: unknown) =>
      (await s.fake.ipcHandlers.get(CALL_CHANNEL)!(ipcEvent(wc, wc.mainFrame), { method, params })) as CallReply;
    const dialog = (kind: string) =>
      s.fake.ipcHandlers.get(DIALOG_CHANNEL)!(ipcEvent(wc, wc.mainFrame), kind) as Promise<string[]>;
    const refused = (r: CallReply) => (r.ok ? null : r.error);
    return { ...s, wc, call, dialog, refused };
  }

  test('documents.import by path: FORBIDDEN until the user chose the file in the open dialog; nothing imported before', async () => {
    const s = await started();
    for (const params of [
      { path: '/etc/passwd' },
      // The contract's union makes this an import by path (it strips the other keys): still a path import.
      { path: '/etc/passwd', fileName: 'notes.txt', dataBase64: '' },
      { path: '/home/me/.ssh/id_ed25519' },
    ]) {
      const err = s.refused(await s.call('documents.import', params));
      assert.equal(err?.code, 'FORBIDDEN', JSON.stringify(params));
      assert.equal(err?.message, NOT_GRANTED_DOCUMENT);
    }
    assert.deepEqual(s.core().imported, [], 'nothing was read');

    // A cancelled dialog grants nothing.
    s.fake.calls.openDialogResult = { canceled: true, filePaths: ['/etc/passwd'] };
    assert.deepEqual(await s.dialog('document'), []);
    assert.equal(s.refused(await s.call('documents.import', { path: '/etc/passwd' }))?.code, 'FORBIDDEN');

    // The user picks it: now it may be imported, exactly that path and no other spelling of a neighbour.
    s.fake.calls.openDialogResult = { canceled: false, filePaths: ['/etc/passwd', '/home/me/paper.pdf'] };
    assert.deepEqual(await s.dialog('document'), ['/etc/passwd', '/home/me/paper.pdf']);
    assert.deepEqual(await s.call('documents.import', { path: '/etc/passwd' }), {
      ok: true,
      result: { documentId: 'doc-1', taskId: 'task-1' },
    });
    assert.equal((await s.call('documents.import', { path: '/home/me/paper.pdf' })).ok, true);
    for (const path of [
      '/home/me/paper.pdf/../.ssh/id_ed25519',
      '/etc/../etc/shadow',
      'paper.pdf',
      '/home/me/paper.pdf\0',
    ])
      assert.equal(s.refused(await s.call('documents.import', { path }))?.code, 'FORBIDDEN', path);
    assert.deepEqual(s.core().imported, ['/etc/passwd', '/home/me/paper.pdf']);

    // An upload by content reads nothing on disk: it needs no grant.
    assert.equal((await s.call('documents.import', { fileName: 'pasted.txt', dataBase64: 'aGk=' })).ok, true);
    assert.equal(s.core().imported.at(-1), 'upload:pasted.txt');
    await s.shell.shutdown();
  });

  test('a file dropped on the window: the preload grants it from the File (webUtils), then it may be imported', async () => {
    const s = await started();
    const p = loadPreload();
    // The preload's IPC goes to the shell's real handlers, as sent by our window's main frame.
    p.setReply(async (channel, arg) => s.fake.ipcHandlers.get(channel)!(ipcEvent(s.wc, s.wc.mainFrame), arg));
    const api = p.exposed[0].api as Api;
    await assert.rejects(
      () => api.call('documents.import', { path: '/home/me/dropped.pdf' }),
      (e: { code?: string }) => e.code === 'FORBIDDEN',
    );

    const path = await api.shell.pathForFile({ path: '/home/me/dropped.pdf' }); // what webUtils says of a real dropped File
    assert.equal(path, '/home/me/dropped.pdf');
    assert.deepEqual(await api.call('documents.import', { path }), { documentId: 'doc-1', taskId: 'task-1' });
    assert.deepEqual(s.core().imported, ['/home/me/dropped.pdf']);

    // A File made by script has no path: nothing is granted, nothing else becomes importable.
    assert.equal(await api.shell.pathForFile({ path: '' }), '');
    assert.equal(await api.shell.pathForFile('/etc/passwd'), '', 'a string is no File');
    await assert.rejects(
      () => api.call('documents.import', { path: '/etc/passwd' }),
      (e: { code?: string }) => e.code === 'FORBIDDEN',
    );

    // The grant channel itself answers only our window's main frame, and only absolute paths.
    const grant = s.fake.ipcHandlers.get(GRANT_CHANNEL)!;
    assert.throws(
      () => grant(ipcEvent(s.wc, { ...s.wc.mainFrame, url: 'https://evil.example/' }), '/etc/passwd'),
      /may not use/,
    );
    for (const bad of ['relative.pdf', '', 42, null, '/x\0y', `/${'a'.repeat(40_000)}`])
      assert.throws(() => grant(ipcEvent(s.wc, s.wc.mainFrame), bad), /absolute path/, String(bad).slice(0, 20));
    assert.equal(s.shell.grants.hasFile('/etc/passwd'), false);
    await s.shell.shutdown();
  });

  test('models.download by URL: the main process asks, with the URL and its host; Cancel downloads nothing, Download proceeds', async () => {
    const s = await started();
    const url = 'https://huggingface.co/org/repo/resolve/main/model-Q4_K_M.gguf';
    s.fake.calls.messageBoxAnswer = async () => ({ response: 1 }); // Cancel
    const no = s.refused(await s.call('models.download', { url }));
    assert.equal(no?.code, 'CANCELLED');
    assert.deepEqual(s.core().downloads, [], 'no download started');
    assert.equal(s.fake.calls.messageBoxes.length, 1);
    const [parent, options] = s.fake.calls.messageBoxes[0] as [unknown, Electron.MessageBoxOptions];
    assert.equal(parent, s.fake.windows[0], 'modal to our window');
    assert.match(options.message, /huggingface\.co/);
    assert.ok(options.detail?.includes(url), 'the whole URL is shown');
    assert.deepEqual(options.buttons, ['Download', 'Cancel']);
    assert.equal(options.cancelId, 1);
    assert.equal(options.defaultId, 1, 'Enter does not download');

    s.fake.calls.messageBoxAnswer = async () => ({ response: 0 }); // Download
    assert.deepEqual(await s.call('models.download', { url }), { ok: true, result: { taskId: 'dl-1' } });
    assert.deepEqual(s.core().downloads, [{ url }]);

    // The host is shown as the URL parser spells it: punycode, not look-alike letters.
    await s.call('models.download', { url: 'https://hսggingface.co/x/y/resolve/main/m.gguf' });
    assert.match(
      (s.fake.calls.messageBoxes.at(-1) as [unknown, Electron.MessageBoxOptions])[1].message,
      /xn--hggingface-/,
    );

    // A catalog entry is Folio's own list: no question.
    const shown = s.fake.calls.messageBoxes.length;
    assert.equal((await s.call('models.download', { catalogId: 'qwen2.5-0.5b-instruct-q4' })).ok, true);
    assert.equal(s.fake.calls.messageBoxes.length, shown);

    // One question at a time: a page calling in a loop gets BUSY, not a stack of dialogs; an absurd URL no dialog.
    let answer!: (r: { response: number }) => void;
    s.fake.calls.messageBoxAnswer = () => new Promise((r) => (answer = r));
    const first = s.call('models.download', { url });
    await until(() => s.fake.calls.messageBoxes.length === shown + 1, 'the dialog');
    assert.equal(s.refused(await s.call('models.download', { url }))?.code, 'BUSY');
    answer({ response: 1 });
    assert.equal(s.refused(await first)?.code, 'CANCELLED');
    assert.equal(
      s.refused(
        await s.call('models.download', { url: `https://huggingface.co/${'a'.repeat(MAX_DOWNLOAD_URL_CHARS)}.gguf` }),
      )?.code,
      'BAD_REQUEST',
    );
    assert.equal(s.fake.calls.messageBoxes.length, shown + 1);
    assert.equal(s.core().downloads.length, 3);
    await s.shell.shutdown();
  });

  test('models.add: only a file chosen in the model dialog', async () => {
    const s = await started();
    const err = s.refused(await s.call('models.add', { path: '/models/evil.gguf' }));
    assert.equal(err?.code, 'FORBIDDEN');
    assert.equal(err?.message, NOT_GRANTED_MODEL);
    assert.deepEqual(s.core().addedModels, []);
    s.fake.calls.openDialogResult = { canceled: false, filePaths: ['/models/qwen.gguf'] };
    assert.deepEqual(await s.dialog('model'), ['/models/qwen.gguf']);
    assert.equal((await s.call('models.add', { path: '/models/qwen.gguf' })).ok, true);
    assert.deepEqual(s.core().addedModels, ['/models/qwen.gguf']);
    await s.shell.shutdown();
  });

  test('settings.update {modelFolders}: a new folder only when chosen in the folder dialog; stored ones may stay or go', async () => {
    const s = await started();
    const err = s.refused(await s.call('settings.update', { modelFolders: ['/etc'] }));
    assert.equal(err?.code, 'FORBIDDEN');
    assert.equal(err?.message, NOT_GRANTED_FOLDER);
    assert.deepEqual(s.core().settings.modelFolders, [], 'the settings are unchanged');

    s.fake.calls.openDialogResult = { canceled: false, filePaths: ['/data/models'] };
    assert.deepEqual(await s.dialog('folder'), ['/data/models']);
    const [, options] = s.fake.calls.dialogs.at(-1) as [unknown, Electron.OpenDialogOptions];
    assert.ok(options.properties?.includes('openDirectory'), 'a folder dialog');
    assert.equal((await s.call('settings.update', { modelFolders: ['/data/models'] })).ok, true);
    assert.deepEqual(s.core().settings.modelFolders, ['/data/models']);

    // The stored folder may stay while another is refused; removing needs no grant; other settings neither.
    assert.equal(
      s.refused(await s.call('settings.update', { modelFolders: ['/data/models', '/home/me'] }))?.code,
      'FORBIDDEN',
    );
    assert.deepEqual(s.core().settings.modelFolders, ['/data/models']);
    assert.equal((await s.call('settings.update', { theme: 'dark' })).ok, true);
    assert.equal((await s.call('settings.update', { modelFolders: [] })).ok, true);
    assert.deepEqual(s.core().settings.modelFolders, []);

    // A folder grant is no file grant, and a file grant no folder grant.
    assert.equal(s.refused(await s.call('documents.import', { path: '/data/models' }))?.code, 'FORBIDDEN');
    s.fake.calls.openDialogResult = { canceled: false, filePaths: ['/home/me/a.pdf'] };
    await s.dialog('document');
    assert.equal(s.refused(await s.call('settings.update', { modelFolders: ['/home/me/a.pdf'] }))?.code, 'FORBIDDEN');
    await s.shell.shutdown();
  });
});

// -----------------------------------------------------------------------------------------------------------
// The preload, run the way Electron runs a sandboxed preload

/** Runs the compiled preload on a fake ipcRenderer and webUtils (whose File is `{ path }`: '' for one made by script). */
function loadPreload() {
  const src = readFileSync(join(out, 'preload.cjs'), 'utf8');
  const exposed: { key: string; api: unknown }[] = [];
  const invoked: { channel: string; arg: unknown }[] = [];
  const ipcListeners = new Map<string, ((event: unknown, message: unknown) => void)[]>();
  let reply: (channel: string, arg: unknown) => Promise<unknown> = async () => ({ ok: true, result: 42 });
  const ipcRenderer = {
    invoke: (channel: string, arg: unknown) => (invoked.push({ channel, arg }), reply(channel, arg)),
    on: (channel: string, l: (event: unknown, message: unknown) => void) =>
      void ipcListeners.set(channel, [...(ipcListeners.get(channel) ?? []), l]),
    send: () => assert.fail('the preload sends nothing fire-and-forget'),
  };
  const required: string[] = [];
  const preloadRequire = (name: string) => {
    required.push(name);
    if (name === 'electron') {
      return {
        contextBridge: { exposeInMainWorld: (key: string, api: unknown) => exposed.push({ key, api }) },
        ipcRenderer,
        webUtils: {
          getPathForFile: (f: { path?: string }) => {
            if (typeof f?.path !== 'string') throw new TypeError('not a File');
            return f.path;
          },
        },
      };
    }
    throw new Error(`module not found: ${name}`);
  };
  // Electron's sandboxed preload wrapper: (require, process, exports, module, ...globals).
  const fn = compileFunction(src, ['require', 'process', 'exports', 'module', 'Buffer', 'global']);
  const exports = {};
  fn(preloadRequire, { platform: 'darwin' }, exports, { exports }, undefined, {});
  return {
    exposed,
    invoked,
    required,
    ipcRenderer,
    setReply: (r: typeof reply) => void (reply = r),
    fire: (channel: string, message: unknown) => {
      for (const l of ipcListeners.get(channel) ?? []) l({ sender: 'ipc-event' }, message);
    },
  };
}
type Api = {
  call(method: string, params?: unknown): Promise<unknown>;
  on(event: string, l: (...a: unknown[]) => void): () => void;
  shell: {
    platform: string;
    openFileDialog(kind?: string): Promise<string[]>;
    pathForFile(f: unknown): Promise<string>;
    onMenu(l: (...a: unknown[]) => void): () => void;
    onDocumentOpened(l: (...a: unknown[]) => void): () => void;
  };
};

describe('preload', () => {
  test('exposes exactly { call, on, shell } as window.folio, requiring nothing but electron', () => {
    const p = loadPreload();
    assert.deepEqual(p.required, ['electron']);
    assert.equal(p.exposed.length, 1);
    assert.equal(p.exposed[0].key, 'folio');
    const api = p.exposed[0].api as Api;
    assert.deepEqual(Object.keys(api).sort(), ['call', 'on', 'shell']);
    assert.deepEqual(Object.keys(api.shell).sort(), [
      'onDocumentOpened',
      'onMenu',
      'openFileDialog',
      'pathForFile',
      'platform',
    ]);
    assert.equal(api.shell.platform, 'darwin');
    // No raw ipcRenderer (nor any of its functions) anywhere in what the renderer gets.
    const seen = new Set<unknown>();
    const walk = (v: unknown) => {
      if (v === null || (typeof v !== 'object' && typeof v !== 'function') || seen.has(v)) return;
      seen.add(v);
      assert.notEqual(v, p.ipcRenderer);
      for (const f of Object.values(p.ipcRenderer)) assert.notEqual(v, f);
      for (const k of Object.keys(v as object)) walk((v as Record<string, unknown>)[k]);
    };
    walk(api);
  });

  test("calls: the contract's methods go to folio:call, anything else is refused before IPC", async () => {
    const p = loadPreload();
    const api = p.exposed[0].api as Api;
    for (const method of Object.keys(contractMethods)) assert.equal(await api.call(method, { a: 1 }), 42, method);
    assert.deepEqual(
      p.invoked.map((i) => i.channel),
      Object.keys(contractMethods).map(() => CALL_CHANNEL),
    );
    assert.deepEqual(
      p.invoked.map((i) => (i.arg as { method: string }).method),
      Object.keys(contractMethods),
    );
    assert.deepEqual(p.invoked[0].arg, { method: Object.keys(contractMethods)[0], params: { a: 1 } });
    p.invoked.length = 0;
    for (const m of ['settings.delete', 'constructor', '__proto__', 'toString', 'hasOwnProperty', '', 42, null])
      await assert.rejects(
        () => api.call(m as string, {}),
        (e: { code?: string; name?: string }) => e.code === 'UNKNOWN_METHOD' && e.name === 'ApiError',
        String(m),
      );
    assert.equal(p.invoked.length, 0);
  });

  test('errors arrive as { name, code, message, details }; a failed invoke as IPC_FAILED', async () => {
    const p = loadPreload();
    const api = p.exposed[0].api as Api;
    p.setReply(async () => ({
      ok: false,
      error: { code: 'NO_MODEL', message: 'choose a model first', details: { why: 1 } },
    }));
    await assert.rejects(
      () => api.call('chats.send', { chatId: 'c', text: 'hi' }),
      (e) => {
        assert.deepEqual(e, {
          name: 'ApiError',
          code: 'NO_MODEL',
          message: 'choose a model first',
          details: { why: 1 },
        });
        return true;
      },
    );
    p.setReply(async () => {
      throw new Error("No handler registered for 'folio:call'");
    });
    await assert.rejects(
      () => api.call('settings.get', {}),
      (e: { code?: string }) => e.code === 'IPC_FAILED',
    );
  });

  test("events: the contract's events only; listeners get the payload, never the IPC event", () => {
    const p = loadPreload();
    const api = p.exposed[0].api as Api;
    for (const e of Object.keys(contractEvents)) api.on(e, () => {})();
    for (const e of ['nope', 'constructor', '__proto__', ''])
      assert.throws(() => api.on(e, () => {}), /unknown event/, e);
    assert.throws(() => api.on('chat.token', 'not a function' as never), /must be a function/);
    const got: unknown[][] = [];
    const off = api.on('chat.token' satisfies EventName, (...args) => got.push(args));
    p.fire(EVENT_CHANNEL, { event: 'chat.token', payload: { chatId: 'c', messageId: 'm', text: 'Hi' } });
    p.fire(EVENT_CHANNEL, { event: 'chat.message', payload: {} });
    p.fire(EVENT_CHANNEL, null);
    off();
    p.fire(EVENT_CHANNEL, { event: 'chat.token', payload: { chatId: 'c', messageId: 'm', text: 'again' } });
    assert.deepEqual(got, [[{ chatId: 'c', messageId: 'm', text: 'Hi' }]]);
  });

  test('the shell part: the open dialog, paths of dropped files, menu actions, documents opened from the OS', async () => {
    const p = loadPreload();
    const api = p.exposed[0].api as Api;
    p.setReply(async () => ['/a.pdf']);
    assert.deepEqual(await api.shell.openFileDialog(), ['/a.pdf']);
    assert.deepEqual(await api.shell.openFileDialog('model'), ['/a.pdf']);
    assert.deepEqual(
      p.invoked.map((i) => [i.channel, i.arg]),
      [
        [DIALOG_CHANNEL, 'document'],
        [DIALOG_CHANNEL, 'model'],
      ],
    );
    await assert.rejects(() => api.shell.openFileDialog('/etc'), /document", "model" or "folder/);
    p.invoked.length = 0;
    p.setReply(async () => true);
    assert.equal(await api.shell.pathForFile({ path: '/dropped/paper.pdf' }), '/dropped/paper.pdf');
    assert.deepEqual(
      p.invoked,
      [{ channel: GRANT_CHANNEL, arg: '/dropped/paper.pdf' }],
      'the main process is told the user gave it',
    );
    assert.equal(await api.shell.pathForFile('not a file'), '');
    assert.equal(await api.shell.pathForFile({ path: '' }), '', 'a File made by script has no path');
    assert.equal(p.invoked.length, 1, 'and grants nothing');
    const actions: unknown[] = [];
    const opened: unknown[] = [];
    const off = api.shell.onMenu((a) => actions.push(a));
    api.shell.onDocumentOpened((d) => opened.push(d));
    for (const action of MENU_ACTIONS) p.fire(SHELL_CHANNEL, { type: 'menu', action });
    p.fire(SHELL_CHANNEL, { type: 'menu', action: 'format-disk' });
    p.fire(SHELL_CHANNEL, {
      type: 'document-opened',
      document: { path: '/a.pdf', ok: true, documentId: 'd', taskId: 't' },
    });
    off();
    p.fire(SHELL_CHANNEL, { type: 'menu', action: 'settings' });
    assert.deepEqual(actions, [...MENU_ACTIONS]);
    assert.deepEqual(opened, [{ path: '/a.pdf', ok: true, documentId: 'd', taskId: 't' }]);
  });
});

// -----------------------------------------------------------------------------------------------------------
// The engine host in a utilityProcess

describe('engine host: the utilityProcess adapter', () => {
  const hello = (pid: number) => ({
    type: 'hello',
    ok: true,
    protocol: PROTOCOL_VERSION,
    pid,
    transport: 'electron-parent-port',
    addonPath: '/x/folio.node',
    napiVersion: 8,
    backend: 'cpu (test)',
    backendReason: 'no GPU in this test',
    gpu: null,
    backends: {
      cpu: { available: true, label: 'cpu (test)', reason: 'the CPU', gpu: null },
      cuda: { available: false, label: 'cuda (unavailable)', reason: 'no GPU in this test', gpu: null },
      vulkan: { available: false, label: 'vulkan (unavailable)', reason: 'no GPU in this test', gpu: null },
    },
    testHooks: false,
  });

  test('forks the compiled host with the environment, relays messages and stderr, and kills hard', () => {
    const forks: FakeUtilityChild[] = [];
    const killed: [number, string][] = [];
    const echoed: string[] = [];
    const spawn = createUtilitySpawn(
      {
        fork: ((...a: unknown[]) => {
          const c = new FakeUtilityChild(a);
          forks.push(c);
          return c;
        }) as never,
      },
      {
        echo: (c) => echoed.push(c),
        killPid: (pid, sig) => void killed.push([pid, sig]),
        platform: 'linux',
      },
    );
    const proc = spawn({
      entry: '/app/dist/electron/engine/host.js',
      execArgv: [],
      env: { FOLIO_ADDON: '/a/folio.node' },
    });
    const [child] = forks;
    assert.deepEqual(child.forkArgs, [
      '/app/dist/electron/engine/host.js',
      [],
      {
        env: { FOLIO_ADDON: '/a/folio.node' },
        execArgv: [],
        stdio: ['ignore', 'inherit', 'pipe'],
        serviceName: 'Folio engine',
      },
    ]);
    const messages: unknown[] = [];
    const stderr: string[] = [];
    const exits: unknown[] = [];
    proc.onMessage((m) => messages.push(m));
    proc.onStderr!((c) => stderr.push(c));
    proc.onExit((i) => exits.push(i));
    assert.equal(proc.pid, undefined);
    child.spawn(4242);
    assert.equal(proc.pid, 4242);
    proc.postMessage({ type: 'request', id: 1, method: 'ping', params: {}, tokens: new Int32Array([1, 2]) });
    assert.deepEqual(child.posted, [
      { type: 'request', id: 1, method: 'ping', params: {}, tokens: new Int32Array([1, 2]) },
    ]);
    child.say({ type: 'notice', code: 'X', message: 'y' });
    child.stderr.emit('data', Buffer.from('boom\n'));
    child.emit('error', 'FatalError', 'host.js:1', '{}');
    assert.deepEqual(messages, [{ type: 'notice', code: 'X', message: 'y' }]);
    assert.deepEqual(echoed, ['boom\n']);
    assert.match(stderr.join(''), /boom\n\[folio\] the engine process hit a FatalError at host\.js:1/);
    proc.kill();
    assert.deepEqual(killed, [[4242, 'SIGKILL']], "SIGKILL, not utilityProcess.kill()'s SIGTERM");
    child.exit(9);
    assert.deepEqual(exits, [{ code: 9, signal: null }]);
    proc.kill();
    proc.postMessage({ late: true });
    assert.equal(killed.length, 1, 'no kill after exit');
    assert.equal(child.posted.length, 1, 'no message after exit');

    // Windows has no signals: utilityProcess.kill() ends the process.
    const win = createUtilitySpawn(
      {
        fork: ((...a: unknown[]) => {
          const c = new FakeUtilityChild(a);
          forks.push(c);
          return c;
        }) as never,
      },
      { platform: 'win32', killPid: () => assert.fail('no signals on Windows') },
    );
    const p2 = win({ entry: 'h.js', execArgv: [], env: {} });
    forks[1].spawn(7);
    p2.kill();
    assert.equal(forks[1].killed, 1);
  });

  test('a host that dies is restarted through the adapter; the core is told what was lost', async () => {
    const forks: FakeUtilityChild[] = [];
    const client = new EngineClient({
      spawn: createUtilitySpawn(
        {
          fork: ((...a: unknown[]) => {
            const c = new FakeUtilityChild(a);
            forks.push(c);
            return c;
          }) as never,
        },
        { echo: () => {}, killPid: () => {} },
      ),
      entry: { entry: '/app/dist/electron/engine/host.js', execArgv: [] },
      env: { FOLIO_ADDON: '/app/app.asar.unpacked/native/build/Release/folio.node' },
      restartDelayMs: 5,
    });
    const crashes: { code: number | null; willRestart: boolean; stderrTail: string }[] = [];
    const restarts: unknown[] = [];
    client.on('crash', (c) => crashes.push(c));
    client.on('restart', (r) => restarts.push(r));
    const started = client.start();
    forks[0].spawn(100);
    forks[0].say(hello(100));
    await started;
    assert.equal(client.status().state, 'ready');
    assert.equal(client.hostInfo()?.transport, 'electron-parent-port');

    // A request in flight when the host dies rejects with ENGINE_CRASHED.
    const pending = client.call('ping', {});
    await tick();
    assert.equal((forks[0].posted.at(-1) as { method: string }).method, 'ping');
    forks[0].stderr.emit('data', 'Segmentation fault in matmul\n');
    forks[0].exit(139);
    await assert.rejects(pending, (e: { code?: string }) => e.code === 'ENGINE_CRASHED');
    assert.equal(crashes.length, 1);
    assert.equal(crashes[0].code, 139);
    assert.equal(crashes[0].willRestart, true);
    assert.match(crashes[0].stderrTail, /Segmentation fault/);
    assert.equal(client.status().state, 'crashed');

    await until(() => forks.length === 2, 'the restart');
    const [entry, args, opts] = forks[1].forkArgs as [
      string,
      string[],
      { env: Record<string, string>; execArgv: string[] },
    ];
    assert.equal(entry, '/app/dist/electron/engine/host.js');
    assert.deepEqual(args, []);
    assert.deepEqual(opts.execArgv, []);
    assert.equal(opts.env.FOLIO_ADDON, '/app/app.asar.unpacked/native/build/Release/folio.node');
    forks[1].spawn(101);
    forks[1].say(hello(101));
    await until(() => restarts.length === 1, 'the restart event');
    assert.equal(client.status().state, 'ready');
    assert.equal(client.status().restarts, 1);
    assert.equal(client.status().pid, 101);

    // stop(): the host is asked to shut down and exits by itself.
    const stopped = client.stop();
    await tick();
    const shutdown = forks[1].posted.at(-1) as { id: number; method: string };
    assert.equal(shutdown.method, 'shutdown');
    forks[1].say({ type: 'response', id: shutdown.id, ok: true, result: { disposedSessions: 0, disposedModels: 0 } });
    forks[1].exit(0);
    assert.equal((await stopped).graceful, true);
  });

  test('the compiled host speaks the parentPort transport, answers, crashes and is restarted', {
    skip: noAddon,
  }, async () => {
    // A utilityProcess stand-in: a plain Node child (no tsx) whose process.parentPort is a shim over its IPC
    // channel, as Electron's is: 'message' events carry { data }, postMessage sends.
    const shim = join(scratch, 'parent-port-shim.mjs');
    writeFileSync(
      shim,
      [
        "import { EventEmitter } from 'node:events';",
        'const port = new EventEmitter();',
        'port.postMessage = (m) => process.send(m);',
        'port.start = () => {};',
        "process.on('message', (m) => port.emit('message', { data: m }));",
        "Object.defineProperty(process, 'parentPort', { value: port });",
      ].join('\n'),
    );
    const children: ChildProcess[] = [];
    const utilityProcess = {
      fork(modulePath: string, args: string[], o: { env: NodeJS.ProcessEnv; execArgv: string[] }) {
        const child = fork(modulePath, args, {
          env: o.env,
          execArgv: ['--import', pathToFileURL(shim).href, ...o.execArgv],
          serialization: 'advanced',
          stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
        });
        children.push(child);
        const u = Object.assign(new EventEmitter(), {
          get pid() {
            return child.pid;
          },
          stderr: child.stderr,
          postMessage: (m: unknown) => {
            if (child.connected) child.send(m as object);
          },
          kill: () => child.kill(),
        });
        child.on('spawn', () => u.emit('spawn'));
        child.on('message', (m) => u.emit('message', m));
        child.on('exit', (code, signal) => u.emit('exit', code ?? (signal ? 128 : 0)));
        return u;
      },
    };
    const { createUtilitySpawn: compiledSpawn } = (await import(
      pathToFileURL(join(out, 'shell/engine-process.js')).href
    )) as typeof import('../electron/shell/engine-process.ts');
    const { EngineClient: CompiledClient } = (await import(
      pathToFileURL(join(out, 'engine/client.js')).href
    )) as typeof import('../electron/engine/client.ts');
    const client = new CompiledClient({
      spawn: compiledSpawn(utilityProcess as never, { echo: () => {} }),
      entry: { entry: join(out, 'engine/host.js'), execArgv: [] },
      env: { FOLIO_ADDON: addon, FOLIO_ENGINE_TEST_HOOKS: '1' },
      restartDelayMs: 10,
    });
    try {
      const pong = await client.call('ping', {});
      assert.equal(client.hostInfo()?.transport, 'electron-parent-port');
      assert.equal(client.hostInfo()?.addonPath, addon);
      assert.equal(pong.models, 0);
      const restarted = new Promise((r) => client.on('restart', r));
      await assert.rejects(client.call('testCrash', {}), (e: { code?: string }) => e.code === 'ENGINE_CRASHED');
      await restarted;
      const again = await client.call('ping', {});
      assert.notEqual(again.pid, pong.pid);
      assert.equal(client.status().restarts, 1);
      assert.equal((await client.stop()).graceful, true);
    } finally {
      for (const c of children) c.kill('SIGKILL');
    }
  });
});

// -----------------------------------------------------------------------------------------------------------
// Files from the OS, window state, the menu, single instance, startup and shutdown

describe('opening files', () => {
  test('filesFromArgv: document files only, relative to the working folder, switches skipped', () => {
    const have = new Set([
      '/docs/a.pdf',
      '/home/me/notes.md',
      '/home/me/b.docx',
      '/home/me/-dash.txt',
      '/x/README.TXT',
    ]);
    const exists = (p: string) => have.has(p);
    assert.deepEqual(
      filesFromArgv(
        [
          '/opt/Folio/folio',
          '--no-sandbox',
          '/docs/a.pdf',
          'notes.md',
          '--flag=x.pdf',
          'missing.pdf',
          'model.gguf',
          '.',
          'b.docx',
          '--',
          '-dash.txt',
        ],
        '/home/me',
        exists,
      ),
      ['/docs/a.pdf', '/home/me/notes.md', '/home/me/b.docx', '/home/me/-dash.txt'],
    );
    assert.deepEqual(filesFromArgv(['electron', '.', '/x/README.TXT', '/x/README.TXT'], '/', exists), [
      '/x/README.TXT',
    ]);
    assert.deepEqual([...DOCUMENT_EXTENSIONS], ['pdf', 'docx', 'md', 'markdown', 'txt', 'png', 'jpg', 'jpeg']);
  });

  test('argv at launch, open-file before ready, second-instance: imported once the core is up, the renderer told', async () => {
    const dir = mkdtempSync(join(scratch, 'files-'));
    for (const f of ['first.pdf', 'later.md', 'third.docx', 'broken.txt']) writeFileSync(join(dir, f), 'x');
    const s = await startShell({ argv: ['/opt/Folio/folio', join(dir, 'first.pdf')], cwd: dir });
    // macOS may send open-file before the app is ready.
    const early = {
      defaultPrevented: false,
      preventDefault() {
        this.defaultPrevented = true;
      },
    };
    s.fake.app.emit('open-file', early, join(dir, 'later.md'));
    assert.equal(early.defaultPrevented, true);
    assert.deepEqual(s.shell.files.pending(), [join(dir, 'first.pdf'), join(dir, 'later.md')]);
    await s.start();
    assert.deepEqual(s.core().imported, [join(dir, 'first.pdf'), join(dir, 'later.md')]);

    // The page has not loaded yet: the notices wait for it.
    const win = s.fake.windows[0];
    assert.equal(win.webContents.sent.filter((m) => m.channel === SHELL_CHANNEL).length, 0);
    win.webContents.emit('did-finish-load');
    const notices = () => win.webContents.sent.filter((m) => m.channel === SHELL_CHANNEL).map((m) => m.args[0]);
    assert.deepEqual(notices(), [
      {
        type: 'document-opened',
        document: { path: join(dir, 'first.pdf'), ok: true, documentId: 'doc-1', taskId: 'task-1' },
      },
      {
        type: 'document-opened',
        document: { path: join(dir, 'later.md'), ok: true, documentId: 'doc-2', taskId: 'task-2' },
      },
    ]);

    // A second launch with files: our window comes to the front and opens them.
    win.minimized = true;
    s.fake.app.emit(
      'second-instance',
      {},
      ['/opt/Folio/folio', '--some-switch', 'third.docx', 'broken.txt', 'nope.pdf'],
      dir,
      null,
    );
    await until(() => s.core().imported.length === 3 && notices().length === 4, "the second launch's files");
    assert.equal(win.minimized, false);
    assert.ok(win.focused >= 1);
    assert.equal(s.fake.windows.length, 1, 'no second window');
    const byPath = (a: unknown, b: unknown) =>
      (a as { document: { path: string } }).document.path < (b as { document: { path: string } }).document.path
        ? -1
        : 1;
    assert.deepEqual(notices().slice(2).sort(byPath), [
      {
        type: 'document-opened',
        document: {
          path: join(dir, 'broken.txt'),
          ok: false,
          error: { code: 'CORRUPT', message: 'the file is damaged' },
        },
      },
      {
        type: 'document-opened',
        document: { path: join(dir, 'third.docx'), ok: true, documentId: 'doc-3', taskId: 'task-3' },
      },
    ]);

    // open-file once running: imported at once, the window shown.
    s.fake.app.emit('open-file', { preventDefault() {} }, join(dir, 'first.pdf'));
    await until(() => s.core().imported.length === 4, 'open-file while running');

    // What the OS handed over is the user's choice: the renderer may import it by path too (a retry);
    // a name on the command line that is no file is not.
    const wc = win.webContents;
    const importByPath = async (path: string) =>
      (await s.fake.ipcHandlers.get(CALL_CHANNEL)!(ipcEvent(wc, wc.mainFrame), {
        method: 'documents.import',
        params: { path },
      })) as CallReply;
    assert.equal((await importByPath(join(dir, 'third.docx'))).ok, true);
    const nope = await importByPath(join(dir, 'nope.pdf'));
    assert.equal(!nope.ok && nope.error.code, 'FORBIDDEN');
    await s.shell.shutdown();
  });

  test('a second instance hands over and quits', async () => {
    const s = await startShell({}, { lock: false });
    assert.equal(s.shell.primary, false);
    assert.equal(s.fake.calls.quit, 1);
    assert.equal(s.fake.app.listenerCount('before-quit'), 0);
    assert.equal(s.fake.app.listenerCount('open-file'), 0);
    assert.equal(s.fake.calls.privileged.length, 0);
  });
});

describe('window state', () => {
  const displays = [
    { x: 0, y: 0, width: 1920, height: 1080 },
    { x: 1920, y: 0, width: 1280, height: 1024 },
  ];

  test('restored only where it is visible; otherwise the size, centred', () => {
    assert.deepEqual(restoreBounds(null, displays), { bounds: { width: 1280, height: 820 }, maximized: false });
    const onSecond = { x: 2000, y: 100, width: 1000, height: 800, maximized: false };
    assert.deepEqual(restoreBounds(onSecond, displays).bounds, { x: 2000, y: 100, width: 1000, height: 800 });
    // The second monitor was unplugged.
    assert.deepEqual(restoreBounds(onSecond, displays.slice(0, 1)), {
      bounds: { width: 1000, height: 800 },
      maximized: false,
    });
    // Above the top edge, or with only a sliver of title bar on screen.
    assert.equal(isVisibleOn({ x: 100, y: -200, width: 800, height: 600 }, displays), false);
    assert.equal(isVisibleOn({ x: 3180, y: 100, width: 800, height: 600 }, displays), false);
    assert.equal(isVisibleOn({ x: 3080, y: 100, width: 800, height: 600 }, displays), true);
    // Larger than any display now: shrunk; smaller than the minimum: grown.
    assert.deepEqual(restoreBounds({ x: 0, y: 0, width: 5000, height: 3000, maximized: true }, displays.slice(0, 1)), {
      bounds: { x: 0, y: 0, width: 1920, height: 1080 },
      maximized: true,
    });
    assert.deepEqual(restoreBounds({ width: 10, height: 10, maximized: false }, displays).bounds, {
      width: 720,
      height: 480,
    });
  });

  test('saved in the library folder; a damaged file is ignored', () => {
    const dir = mkdtempSync(join(scratch, 'ws-'));
    assert.equal(loadWindowState(dir), null);
    saveWindowState(dir, { x: 1, y: 2, width: 900, height: 700, maximized: true });
    assert.deepEqual(loadWindowState(dir), { x: 1, y: 2, width: 900, height: 700, maximized: true });
    writeFileSync(windowStatePath(dir), '{ not json');
    assert.equal(loadWindowState(dir), null);
    writeFileSync(windowStatePath(dir), JSON.stringify({ width: 'wide', height: 5 }));
    assert.equal(loadWindowState(dir), null);
  });

  test('the shell opens the window where it was and saves it on close', async () => {
    const s = await startShell();
    const dataDir = s.shell.dataDir;
    saveWindowState(dataDir, { x: 300, y: 200, width: 1100, height: 750, maximized: true });
    await s.start();
    const win = s.fake.windows[0];
    assert.equal(win.options.x, 300);
    assert.equal(win.options.y, 200);
    assert.equal(win.options.width, 1100);
    assert.equal(win.maximized, true);
    win.maximized = false;
    win.close();
    assert.deepEqual(loadWindowState(dataDir), { x: 40, y: 50, width: 1000, height: 700, maximized: false });
    assert.equal(s.shell.window(), null);
    // Linux: the last window closed quits the app (through the graceful shutdown).
    s.fake.app.emit('window-all-closed');
    assert.equal(s.fake.calls.quit, 1);
    await until(() => s.core().closed() === 1, 'the core closed');
  });
});

describe('the application menu', () => {
  const roles = (items: Electron.MenuItemConstructorOptions[]): string[] =>
    items.flatMap((i) => [...(i.role ? [String(i.role)] : []), ...(Array.isArray(i.submenu) ? roles(i.submenu) : [])]);
  const ids = (items: Electron.MenuItemConstructorOptions[]): string[] =>
    items.flatMap((i) => [...(i.id ? [i.id] : []), ...(Array.isArray(i.submenu) ? ids(i.submenu) : [])]);

  test("macOS: the app menu's roles, Edit, View, Window, Help, and Folio's actions", () => {
    const sent: string[] = [];
    const t = menuTemplate({
      platform: 'darwin',
      appName: 'Folio',
      action: (a) => sent.push(a),
      openLibraryFolder: () => {},
      devTools: false,
    });
    assert.equal(t[0].label, 'Folio');
    for (const r of [
      'about',
      'services',
      'hide',
      'hideOthers',
      'unhide',
      'quit',
      'editMenu',
      'windowMenu',
      'help',
      'close',
      'togglefullscreen',
      'zoomIn',
    ])
      assert.ok(roles(t).includes(r), r);
    assert.ok(!roles(t).includes('toggleDevTools'), 'no developer tools in the packaged app');
    assert.deepEqual(ids(t).sort(), ['inspector', 'new-chat', 'open-document', 'settings']);
    const walk = (items: Electron.MenuItemConstructorOptions[]) =>
      items.forEach((i) => {
        if (i.id) {
          assert.equal(i.accelerator, ACCELERATORS[i.id as keyof typeof ACCELERATORS]);
          (i.click as () => void)();
        }
        if (Array.isArray(i.submenu)) walk(i.submenu);
      });
    walk(t);
    assert.deepEqual(sent.sort(), ['inspector', 'new-chat', 'open-document', 'settings']);
  });

  test('Windows and Linux: no app menu, Settings and Quit under File; developer tools when unpackaged', () => {
    const t = menuTemplate({
      platform: 'win32',
      appName: 'Folio',
      action: () => {},
      openLibraryFolder: () => {},
      devTools: true,
    });
    assert.deepEqual(
      t.map((m) => m.label),
      ['File', 'Edit', 'View', 'Window', 'Help'],
    );
    const file = t[0].submenu as Electron.MenuItemConstructorOptions[];
    assert.ok(file.some((i) => i.id === 'settings'));
    assert.ok(file.some((i) => i.role === 'quit'));
    assert.ok(roles(t).includes('toggleDevTools'));
    assert.ok(roles(t).includes('about'));
  });

  test('the shell installs it; a menu action reaches the renderer (a window is opened first)', async () => {
    const s = await startShell({ platform: 'darwin' });
    await s.start();
    const menu = s.fake.calls.menu as { template: Electron.MenuItemConstructorOptions[] };
    assert.ok(menu);
    const win = s.fake.windows[0];
    win.webContents.emit('did-finish-load');
    const file = menu.template.find((m) => m.label === 'File')!.submenu as Electron.MenuItemConstructorOptions[];
    (file.find((i) => i.id === 'open-document')!.click as () => void)();
    assert.deepEqual(
      win.webContents.sent.filter((m) => m.channel === SHELL_CHANNEL).map((m) => m.args[0]),
      [{ type: 'menu', action: 'open-document' }],
    );
    // macOS: closing the window keeps the app; the next menu action opens a new one.
    win.close();
    s.fake.app.emit('window-all-closed');
    assert.equal(s.fake.calls.quit, 0);
    (file.find((i) => i.id === 'new-chat')!.click as () => void)();
    assert.equal(s.fake.windows.length, 2);
    s.fake.windows[1].webContents.emit('did-finish-load');
    assert.deepEqual(
      s.fake.windows[1].webContents.sent.map((m) => m.args[0]),
      [{ type: 'menu', action: 'new-chat' }],
    );
    const help = menu.template.find((m) => m.label === 'Help')!.submenu as Electron.MenuItemConstructorOptions[];
    (help[0].click as () => void)();
    assert.deepEqual(s.fake.calls.openPath, [s.shell.dataDir]);
    await s.shell.shutdown();
  });
});

describe('startup and shutdown', () => {
  test('the library is <appData>/Folio = userData; the engine host is the compiled entry in a utilityProcess with FOLIO_ADDON', async () => {
    let coreOptions: Parameters<ShellOptions['createCore']>[0] | null = null;
    const dir = mkdtempSync(join(scratch, 'lib-'));
    const fake = fakeElectron({ appData: join(dir, 'appData') });
    const shell = createShell(fake.electron, {
      ...shellOptions(dir),
      dataDir: undefined,
      createCore: async (o) => ((coreOptions = o), fakeCore()),
    });
    assert.equal(fake.app.name, 'Folio');
    assert.equal(fake.app.getPath('userData'), join(dir, 'appData', 'Folio'));
    assert.equal(shell.dataDir, join(dir, 'appData', 'Folio'));
    fake.ready();
    await shell.ready;
    assert.ok(coreOptions);
    const o = coreOptions as Parameters<ShellOptions['createCore']>[0];
    assert.equal(o.dataDir, join(dir, 'appData', 'Folio'));
    assert.deepEqual(o.engine?.entry, { entry: join(dir, 'engine/host.js'), execArgv: [] });
    assert.deepEqual(o.engine?.env, {
      FOLIO_ADDON: '/opt/folio/resources/app.asar.unpacked/native/build/Release/folio.node',
    });
    assert.equal(typeof o.engine?.spawn, 'function');
    o.engine!.spawn!({ entry: 'h.js', execArgv: [], env: {} });
    assert.equal(fake.forks.length, 1, 'the spawn forks a utilityProcess');
    await shell.shutdown();
  });

  test('quitting: before-quit waits for the core to close (answers, engine, database), then lets the app quit', async () => {
    const s = await startShell();
    await s.start();
    let release!: () => void;
    const core = s.core();
    const closing = new Promise<void>((r) => (release = r));
    core.close = async () => {
      await closing;
    };
    let willQuit = 0;
    s.fake.app.on('will-quit', () => willQuit++);
    s.fake.app.quit();
    assert.equal(willQuit, 0, 'held back while the core closes');
    // Calls made meanwhile are refused.
    const wc = s.fake.windows[0].webContents;
    const r = (await s.fake.ipcHandlers.get(CALL_CHANNEL)!(ipcEvent(wc, wc.mainFrame), {
      method: 'tasks.cancel',
      params: { taskId: 't' },
    })) as CallReply;
    assert.equal(!r.ok && r.error.code, 'SHUTTING_DOWN');
    release();
    await until(() => willQuit === 1, 'the quit');
    assert.equal(s.fake.calls.quit, 2);
    assert.equal(s.fake.ipcHandlers.size, 0, 'IPC handlers removed');
  });

  test('a core that cannot start: an error box saying how to fix a native module built for Node, then quit', async () => {
    const e = new Error(
      "The module 'better_sqlite3.node' was compiled against a different Node.js version using NODE_MODULE_VERSION 115. This version of Node.js requires NODE_MODULE_VERSION 150.",
    );
    const s = await startShell({
      createCore: async () => {
        throw e;
      },
    });
    await s.start();
    assert.equal(s.fake.calls.errorBoxes.length, 1);
    assert.match(s.fake.calls.errorBoxes[0].message, /@electron\/rebuild/);
    assert.equal(s.fake.calls.quit, 1);
    assert.equal(startupFailureMessage(new Error('disk full')), 'disk full');
    const wc = s.fake.windows[0].webContents;
    const r = (await s.fake.ipcHandlers.get(CALL_CHANNEL)?.(ipcEvent(wc, wc.mainFrame), {
      method: 'tasks.cancel',
      params: { taskId: 't' },
    })) as CallReply | undefined;
    assert.ok(!r?.ok);
  });
});

// -----------------------------------------------------------------------------------------------------------
// The compiled output under plain Node

describe('smoke: the compiled core under Node (no tsx)', () => {
  test('creates a core on a temp library, answers calls, imports a PDF through the copied pdf.js worker, runs the compiled engine host', {
    skip: noAddon,
    timeout: 120_000,
  }, () => {
    const dataDir = mkdtempSync(join(scratch, 'smoke-'));
    const script = `
      const out = ${JSON.stringify(pathToFileURL(out + '/').href)};
      const { createAppCore } = await import(out + 'services/app-core.js');
      const core = await createAppCore({ dataDir: ${JSON.stringify(dataDir)} });
      const settings = await core.dispatcher.dispatch('settings.get', {});
      const docs = await core.dispatcher.dispatch('documents.list', {});
      const status = await core.dispatcher.dispatch('engine.status', {});
      let bad = null;
      try { await core.dispatcher.dispatch('chats.get', { chatId: '' }); } catch (e) { bad = e.code; }
      await core.close();

      const { PDFDocument, StandardFonts } = await import('pdf-lib');
      const pdf = await PDFDocument.create();
      const font = await pdf.embedFont(StandardFonts.Helvetica);
      pdf.addPage().drawText('Folio reads this page.', { x: 50, y: 700, size: 14, font });
      const { importDocument } = await import(out + 'documents/index.js');
      const doc = await importDocument({ fileName: 'smoke.pdf', bytes: await pdf.save() });

      const { EngineClient } = await import(out + 'engine/client.js');
      const client = new EngineClient();
      const pong = await client.call('ping', {});
      const info = client.hostInfo();
      await client.stop();
      console.log(JSON.stringify({ theme: settings.theme, docs: docs.length, state: status.state, bad, kind: doc.kind, text: doc.pages[0].text, pong, info }));
    `;
    // A file, not --eval: worker threads inherit the process's flags.
    const file = join(outRoot, 'smoke.mjs');
    writeFileSync(file, script);
    const noTsx = { ...env, FOLIO_ADDON: addon, NODE_OPTIONS: '' };
    const r = spawnSync(process.execPath, [file], { cwd: repoRoot, env: noTsx, encoding: 'utf8', timeout: 100_000 });
    assert.equal(r.status, 0, r.stderr);
    const res = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
      theme: string;
      docs: number;
      state: string;
      bad: string;
      kind: string;
      text: string;
      pong: { pid: number };
      info: { transport: string; addonPath: string };
    };
    assert.equal(res.docs, 0);
    assert.ok(['system', 'light', 'dark'].includes(res.theme));
    assert.equal(res.state, 'stopped');
    assert.equal(res.bad, 'BAD_REQUEST');
    assert.equal(res.kind, 'pdf');
    assert.match(res.text, /Folio reads this page/);
    assert.ok(res.pong.pid > 0);
    assert.equal(res.info.transport, 'node-ipc');
    assert.equal(res.info.addonPath, addon);
    assert.ok(
      readdirSync(dataDir).some((f) => /\.(db|sqlite3?)$/.test(f)),
      'the database is in the library folder',
    );
  });
});

// -----------------------------------------------------------------------------------------------------------
// Packaging

type BuilderConfig = {
  appId: string;
  productName: string;
  asar: boolean;
  asarUnpack: string[];
  files: string[];
  npmRebuild: boolean;
  directories: { output: string; buildResources: string };
  electronFuses: Record<string, boolean>;
  fileAssociations: { ext: string | string[] }[];
  mac: {
    icon: string;
    hardenedRuntime: boolean;
    entitlements: string;
    entitlementsInherit: string;
    target: { target: string; arch: string[] }[];
  };
  win: { icon: string; target: { target: string }[] };
  linux: { icon: string; target: { target: string }[] };
};

describe('packaging: build/electron-builder.yml', () => {
  const yaml = createRequire(import.meta.url)('js-yaml') as { load(s: string): unknown };
  const cfg = yaml.load(readFileSync(join(repoRoot, 'build/electron-builder.yml'), 'utf8')) as BuilderConfig;

  test('unpacks the addon, pdf.js and its worker; no rebuild; the fuses; the targets', () => {
    assert.equal(cfg.productName, 'Folio');
    assert.match(cfg.appId, /^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+$/);
    assert.equal(cfg.asar, true);
    for (const p of [
      'native/build/Release/folio.node',
      'native/build/Release/*folio-cuda.{so,dll}',
      'native/build/Release/*folio-vulkan.{so,dll,dylib}',
      'native/build/Release/libMoltenVK.dylib',
      'node_modules/pdfjs-dist/**/*',
    ])
      assert.ok(cfg.asarUnpack.includes(p), `asarUnpack: ${p}`);
    assert.equal(cfg.npmRebuild, false);
    assert.deepEqual(cfg.electronFuses, {
      runAsNode: false,
      enableCookieEncryption: true,
      enableNodeOptionsEnvironmentVariable: false,
      enableNodeCliInspectArguments: false,
      enableEmbeddedAsarIntegrityValidation: true,
      onlyLoadAppFromAsar: true,
      grantFileProtocolExtraPrivileges: false,
      loadBrowserProcessSpecificV8Snapshot: false,
    });
    assert.equal(cfg.mac.hardenedRuntime, true);
    assert.deepEqual(cfg.mac.target, [{ target: 'dmg', arch: ['arm64', 'x64'] }]);
    assert.deepEqual(
      cfg.win.target.map((t) => t.target),
      ['nsis'],
    );
    assert.deepEqual(
      cfg.linux.target.map((t) => t.target),
      ['AppImage', 'deb'],
    );
    assert.deepEqual(cfg.fileAssociations.flatMap((a) => a.ext).sort(), [...DOCUMENT_EXTENSIONS].sort());
    assert.notEqual(cfg.directories.output, 'dist', 'installers must not land in the build output');
    // The shell looks for the addon where asarUnpack puts it.
    assert.equal(
      unpackedPath('/opt/Folio/resources/app.asar/native/build/Release/folio.node'),
      '/opt/Folio/resources/app.asar.unpacked/native/build/Release/folio.node',
    );
  });

  test('every path it names exists, or is what the build makes', () => {
    for (const p of [
      cfg.mac.icon,
      cfg.win.icon,
      cfg.mac.entitlements,
      cfg.mac.entitlementsInherit,
      cfg.linux.icon,
      cfg.directories.buildResources,
    ])
      assert.ok(existsSync(join(repoRoot, p)), p);
    for (const s of [16, 32, 48, 64, 128, 256, 512, 1024])
      assert.ok(existsSync(join(repoRoot, cfg.linux.icon, `${s}x${s}.png`)), `${s}x${s}.png`);
    const ent = readFileSync(join(repoRoot, cfg.mac.entitlements), 'utf8');
    assert.match(ent, /com\.apple\.security\.cs\.allow-jit<\/key>\s*<true\/>/);
    assert.deepEqual(
      [...ent.matchAll(/<key>([^<]+)<\/key>/g)].map((m) => m[1]),
      ['com.apple.security.cs.allow-jit'],
      'JIT only',
    );
    // Included files: sources that exist, or outputs of `npm run build` / `npm install`.
    const made: Record<string, () => boolean> = {
      'dist/electron/**/*': () => existsSync(join(out, 'main.js')) && existsSync(join(out, 'preload.cjs')), // tsc, checked above on the same config
      'dist/renderer/**/*': () => /vite build/.test(readFileSync(join(repoRoot, 'package.json'), 'utf8')),
      'native/build/Release/folio.node': () =>
        /cmake-js compile -d native -O native\/build/.test(readFileSync(join(repoRoot, 'package.json'), 'utf8')) &&
        existsSync(join(repoRoot, 'native/CMakeLists.txt')),
      'native/build/Release/*folio-cuda.{so,dll}': () =>
        /add_library\(folio-cuda SHARED/.test(readFileSync(join(repoRoot, 'native/CMakeLists.txt'), 'utf8')),
      'native/build/Release/*folio-vulkan.{so,dll,dylib}': () =>
        /add_library\(folio-vulkan SHARED/.test(readFileSync(join(repoRoot, 'native/CMakeLists.txt'), 'utf8')),
      'native/build/Release/libMoltenVK.dylib': () =>
        /libMoltenVK\.dylib/.test(readFileSync(join(repoRoot, 'native/CMakeLists.txt'), 'utf8')),
    };
    for (const f of cfg.files.filter((f) => !f.startsWith('!'))) {
      if (made[f]) assert.ok(made[f](), `${f} is made by the build`);
      else assert.ok(existsSync(join(repoRoot, f)), f);
    }
    for (const p of cfg.asarUnpack.filter((p) => !p.includes('*') || p.startsWith('node_modules/')))
      assert.ok(
        existsSync(join(repoRoot, p.replace(/\/\*\*.*$/, ''))) ||
          made[p] !== undefined ||
          p.startsWith('dist/') ||
          p.startsWith('native/build'),
        p,
      );
    assert.ok(existsSync(join(repoRoot, 'node_modules/pdfjs-dist/legacy/build/pdf.mjs')));
  });

  test('`electron-builder --dir` with a fake Electron: the app in the asar, the addon and pdf.js outside it, the fuses flipped', {
    skip: noAddon,
    timeout: 180_000,
  }, () => {
    // A throwaway project: package.json, the config and icons, the compiled app, a stand-in renderer, the addon.
    const proj = mkdtempSync(join(scratch, 'pack-'));
    cpSync(join(repoRoot, 'package.json'), join(proj, 'package.json'));
    cpSync(join(repoRoot, 'build'), join(proj, 'build'), { recursive: true });
    cpSync(join(repoRoot, 'assets'), join(proj, 'assets'), { recursive: true });
    cpSync(out, join(proj, 'dist/electron'), { recursive: true });
    mkdirSync(join(proj, 'dist/renderer'), { recursive: true });
    writeFileSync(join(proj, 'dist/renderer/index.html'), '<!doctype html><title>Folio</title>');
    mkdirSync(join(proj, 'native/build/Release'), { recursive: true });
    cpSync(addon, join(proj, 'native/build/Release/folio.node'));
    // The Vulkan backend where this build has one (dlopen'ed from beside the addon, so unpacked too).
    const vulkan = join(dirname(addon), 'libfolio-vulkan.so');
    if (existsSync(vulkan)) cpSync(vulkan, join(proj, 'native/build/Release/libfolio-vulkan.so'));
    symlinkSync(join(repoRoot, 'node_modules'), join(proj, 'node_modules'));
    // An "Electron" whose only Electron part is the fuse wire (sentinel, version 1, 8 fuses, Electron's defaults).
    const electronDist = join(proj, 'electron-dist');
    mkdirSync(electronDist);
    writeFileSync(join(electronDist, 'electron'), '#!/bin/sh\n# dL7pKGdnNz796PbbjQWNKmHXBZaB9tsX\x01\x0810110001\n', {
      mode: 0o755,
    });
    writeFileSync(join(electronDist, 'version'), '45.5.0');

    const bin = join(repoRoot, 'node_modules/electron-builder/cli.js');
    const r = spawnSync(
      process.execPath,
      [bin, '--config', 'build/electron-builder.yml', '--dir', '--linux', `-c.electronDist=${electronDist}`],
      { cwd: proj, env, encoding: 'utf8', timeout: 170_000 },
    );
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const resources = join(proj, 'out/linux-unpacked/resources');
    const asar = readFileSync(join(resources, 'app.asar'));
    const header = JSON.parse(asar.subarray(16, 16 + asar.readUInt32LE(12)).toString()) as {
      files: Record<string, unknown>;
    };
    const entries = new Map<string, { unpacked?: boolean }>();
    (function walk(node: { files?: Record<string, unknown> }, prefix: string) {
      for (const [k, v] of Object.entries(node.files ?? {})) {
        const p = prefix ? `${prefix}/${k}` : k;
        if ((v as { files?: unknown }).files) walk(v as { files: Record<string, unknown> }, p);
        else entries.set(p, v as { unpacked?: boolean });
      }
    })(header, '');
    for (const f of [
      'package.json',
      'dist/electron/main.js',
      'dist/electron/preload.cjs',
      'dist/electron/engine/host.js',
      'dist/electron/services/app-core.js',
      'dist/electron/documents/parse-worker.js',
      'dist/renderer/index.html',
      'node_modules/zod/package.json',
    ])
      assert.equal(entries.get(f)?.unpacked, undefined, `${f} is in the asar`);
    for (const f of [
      'native/build/Release/folio.node',
      ...(existsSync(vulkan) ? ['native/build/Release/libfolio-vulkan.so'] : []),
      'node_modules/pdfjs-dist/legacy/build/pdf.mjs',
      'node_modules/better-sqlite3/build/Release/better_sqlite3.node',
    ]) {
      assert.equal(entries.get(f)?.unpacked, true, `${f} is unpacked`);
      assert.ok(existsSync(join(resources, 'app.asar.unpacked', f)), `${f} exists in app.asar.unpacked`);
    }
    for (const f of entries.keys()) {
      assert.doesNotMatch(f, /^(electron|native\/src|test|renderer|build)\//, `${f} does not belong in the package`);
      if (!f.startsWith('node_modules/')) assert.doesNotMatch(f, /\.(ts|cts|mts|map)$/, `${f}: no sources or maps`);
      assert.doesNotMatch(
        f,
        /^node_modules\/(react|react-dom|typescript|vite|vitest|electron|electron-builder|tsx|esbuild|cmake-js|@types)\//,
        `${f}: not a runtime dependency`,
      );
    }
    const fuses = readFileSync(join(proj, 'out/linux-unpacked/folio'), 'latin1');
    const at = fuses.indexOf('dL7pKGdnNz796PbbjQWNKmHXBZaB9tsX') + 32;
    // runAsNode 0, cookie encryption 1, NODE_OPTIONS 0, --inspect 0, asar integrity 1, only app.asar 1, browser snapshot 0, file:// privileges 0
    assert.equal(fuses.slice(at + 2, at + 10), '01001100');
  });
});
