// How EngineClient starts the engine host: an injectable spawn function. Under plain Node (tests, the CLI,
// the web host) the default forks a Node child process with an IPC channel; the Electron shell passes one
// built on utilityProcess.fork instead (sketched below), without the core ever importing 'electron'.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** What EngineClient needs from a running engine process, whatever started it. */
export interface EngineProcess {
  /** The OS process id, once known. */
  readonly pid: number | undefined;
  /** Sends a structured-clonable message (typed arrays and BigInt included) to the host. */
  postMessage(message: unknown): void;
  /** Every message the host sends, already deserialized (for a MessagePort: the event's `data`). */
  onMessage(listener: (message: unknown) => void): void;
  /**
   * Once, when the process is gone and no further message will arrive. `signal`: e.g. 'SIGKILL' where the
   * platform says (a utilityProcess reports only a code).
   */
  onExit(listener: (info: { code: number | null; signal: string | null }) => void): void;
  /** Chunks of the host's stderr, where the spawner captures it (kept for crash reports). */
  onStderr?(listener: (chunk: string) => void): void;
  /** Ends the process hard (SIGKILL where there are signals). */
  kill(): void;
}

export interface SpawnRequest {
  /** Absolute path of the host's entry module (host.ts under tsx, host.js once built). */
  entry: string;
  /** Node flags for the host, e.g. ['--import', <tsx loader>] when the entry is TypeScript. */
  execArgv: string[];
  /** The host's full environment (the parent's, so FOLIO_ADDON is inherited, plus the client's additions). */
  env: NodeJS.ProcessEnv;
}

export type SpawnEngine = (request: SpawnRequest) => EngineProcess;

/*
 * The Electron adapter (electron/shell/engine-process.ts; not part of the core) looks like this:
 *
 *   import { utilityProcess } from 'electron';
 *   const spawnUtility: SpawnEngine = ({ entry, execArgv, env }) => {
 *     const child = utilityProcess.fork(entry, [], { env, execArgv, stdio: ['ignore', 'inherit', 'pipe'], serviceName: 'Folio engine' });
 *     let exited = false;
 *     return {
 *       get pid() { return child.pid; },
 *       postMessage: (m) => child.postMessage(m),
 *       onMessage: (l) => void child.on('message', (m) => l(m)),
 *       onExit: (l) => void child.once('exit', (code) => { exited = true; l({ code, signal: null }); }),
 *       onStderr: (l) => void child.stderr?.on('data', (b) => l(String(b))),
 *       kill: () => { if (!exited) child.kill(); },
 *     };
 *   };
 *   new EngineClient({ spawn: spawnUtility });
 *
 * host.ts notices process.parentPort and speaks MessagePort-style (e.data / postMessage) there.
 */

/** The host's entry and flags: host.ts through tsx's loader when this code itself runs as TypeScript. */
export function defaultHostEntry(): { entry: string; execArgv: string[] } {
  const ts = import.meta.url.endsWith('.ts');
  const entry = fileURLToPath(new URL(ts ? './host.ts' : './host.js', import.meta.url));
  return { entry, execArgv: ts ? ['--import', import.meta.resolve('tsx')] : [] };
}

/** The default: a Node child process with an IPC channel (V8 serialization), stderr captured and echoed. */
export const spawnNodeHost: SpawnEngine = ({ entry, execArgv, env }) => {
  const child = fork(entry, [], {
    execArgv,
    env,
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
  });
  let exitInfo: { code: number | null; signal: string | null } | null = null;
  let closed = false;
  const exitListeners: ((info: { code: number | null; signal: string | null }) => void)[] = [];
  const stderrListeners: ((chunk: string) => void)[] = [];
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    process.stderr.write(chunk);
    for (const l of stderrListeners) l(chunk);
  });
  // 'close' comes after 'exit' once the IPC channel and stdio are drained: no message can follow it.
  child.once('exit', (code, signal) => void (exitInfo = { code, signal }));
  child.once('close', (code, signal) => {
    closed = true;
    const info = exitInfo ?? { code, signal };
    for (const l of exitListeners) l(info);
  });
  // A failed spawn (e.g. ENOENT) emits 'error' and then 'close'; a send on a closing channel emits 'error' too.
  child.on('error', () => {});
  return {
    get pid() {
      return child.pid;
    },
    postMessage(message) {
      if (child.connected) child.send(message as object, (err) => void err);
    },
    onMessage(listener) {
      child.on('message', (m) => listener(m));
    },
    onExit(listener) {
      exitListeners.push(listener);
    },
    onStderr(listener) {
      stderrListeners.push(listener);
    },
    kill() {
      if (!closed) child.kill('SIGKILL');
    },
  };
};
