// EngineClient: the app core's handle on the engine process (host.ts). It starts the host (a Node child
// process by default; the Electron shell injects a utilityProcess-based spawn, see spawn.ts), sends
// protocol.ts requests and returns promises, routes progress and token events to callbacks, cancels through
// AbortSignal, and watches the process: when it dies every pending request rejects with ENGINE_CRASHED, a
// 'crash' event says what was lost, and a new process is started after a pause that doubles with each crash
// (at most maxRestarts within restartWindowMs: a crash loop ends in 'crashed' with the last error, and the
// next start() — a user's Retry, or choosing a model — starts afresh); once it is up a 'restart' event
// repeats which models and sessions the caller must reload or restore. Models and sessions are plain ids
// handed out by the host; they die with it.
import {
  EngineRequestError,
  ErrorCodes,
  HostMessage,
  methods,
  PROTOCOL_VERSION,
  describeIssue,
  type BackendOffer,
  type EngineMethod,
  type EngineParams,
  type EngineResult,
  type MethodTable,
  type NoticeMessage,
} from './protocol.ts';
import type { ComputeBackend, EngineState } from '../shared/compute-backends.ts';
import { defaultHostEntry, spawnNodeHost, type EngineProcess, type SpawnEngine } from './spawn.ts';

export { EngineRequestError, ErrorCodes, TEST_HOOKS_ENV } from './protocol.ts';
export type { EngineProcess, SpawnEngine, SpawnRequest } from './spawn.ts';

export type { EngineState };

/** What EngineStatus needs from the engine (the service adds the chat model's id). */
export interface EngineClientStatus {
  state: EngineState;
  /** Why it is in this state, for people (a crash, a failed start); null when all is well. */
  message: string | null;
  /** How many times the engine process was restarted after dying. */
  restarts: number;
  /** Crashed, and a new process comes by itself (false once the restart limit is reached: down until start()). */
  willRestart: boolean;
  /** The compute backend the host reported, e.g. "cpu (avx2)"; '' before the first start. */
  backend: string;
  /** Why that backend (no CUDA library, no driver, which GPU); '' before the first start. */
  backendReason: string;
  pid: number | null;
}

/** Models and sessions that lived in a process that died: reload the models, restore the sessions. */
export interface LostHandles {
  models: { modelId: string; path: string }[];
  sessions: { sessionId: string; modelId: string }[];
}

export interface CrashEvent {
  /** Exit code and signal as the platform reports them. */
  code: number | null;
  signal: string | null;
  message: string;
  lost: LostHandles;
  /** Whether a new process is being started (false once restarts exceed the cap). */
  willRestart: boolean;
  /** The end of what the host wrote to stderr (an abort message, a sanitizer report...). */
  stderrTail: string;
}

export interface RestartEvent {
  restarts: number;
  /** What the caller must reload (models) and restore (sessions, e.g. from their saved files). */
  lost: LostHandles;
}

/** What the host said about itself when it started. */
export interface HostInfo {
  pid: number;
  transport: 'node-ipc' | 'electron-parent-port';
  addonPath: string;
  napiVersion: number;
  backend: string;
  /** The GPU the engine computes on and its memory when the host started; null on the CPU. */
  gpu: { name: string; freeBytes: number; totalBytes: number } | null;
  /** Each backend by name as the host offers it (sessions asking for it by name run there). */
  backends: Record<ComputeBackend, BackendOffer>;
  testHooks: boolean;
}

export interface StopResult {
  /** The host disposed everything and exited by itself (false: it was killed, or was not running). */
  graceful: boolean;
  disposedSessions: number;
  disposedModels: number;
}

export interface EngineClientEvents {
  status: EngineClientStatus;
  crash: CrashEvent;
  restart: RestartEvent;
  /** A message from the host that concerned no request (e.g. it got a malformed one). */
  notice: NoticeMessage;
}

export interface RequestOptions {
  /**
   * Aborting sends `cancel` for the request: a queued operation rejects with CANCELLED, a running prefill or
   * compression rejects with CANCELLED, a running generation stops and resolves with stopReason 'cancelled'.
   * Requests the engine cannot interrupt (loading, saving, tokenizing) complete as usual. A request that
   * has not been sent yet (aborted before, or while the engine starts) rejects with CANCELLED at once.
   */
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
  onToken?: (token: { id: number; text: string }) => void;
}

export interface EngineClientOptions {
  /** How to start the host; default: a Node child process (spawnNodeHost). */
  spawn?: SpawnEngine;
  /** Variables added to the host's environment (it inherits this process's, FOLIO_ADDON included). */
  env?: Record<string, string | undefined>;
  /** The host's entry module and Node flags; default: host.ts under tsx, or host.js once built. */
  entry?: { entry: string; execArgv: string[] };
  /** A host that has not said hello by then is killed (and counts as a crash). Default 30 s. */
  startTimeoutMs?: number;
  /** stop(): a host that has not exited by then is killed. Default 5 s. */
  stopTimeoutMs?: number;
  /** At most this many automatic restarts within restartWindowMs; then it stays crashed until start(). Default 3. */
  maxRestarts?: number;
  /** Default 60 s. */
  restartWindowMs?: number;
  /** Pause before the first restart; it doubles with each further crash within the window. Default 250 ms. */
  restartDelayMs?: number;
  /** The engine-call table (protocol.ts; a test may add rows of its own). */
  methods?: MethodTable;
}

const STDERR_TAIL = 8192;

interface Pending {
  method: string;
  resolve(value: unknown): void;
  reject(error: Error): void;
  onProgress?: RequestOptions['onProgress'];
  onToken?: RequestOptions['onToken'];
  cleanup(): void;
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
  reject(e: Error): void;
}

function deferred(): Deferred {
  let resolve!: () => void, reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {}); // a start nobody waits for must not become an unhandled rejection
  return { promise, resolve, reject };
}

function cancelledError(method: string): EngineRequestError {
  return new EngineRequestError(ErrorCodes.CANCELLED, `${method}: cancelled`, method);
}

/** How a process ended, for people: "killed by signal SIGSEGV", "exit code 134". */
function describeExit(info: { code: number | null; signal: string | null }): string {
  return info.signal ? `killed by signal ${info.signal}` : `exit code ${info.code}`;
}

function describeWindow(ms: number): string {
  return ms === 60_000 ? 'a minute' : `${Math.round(ms / 100) / 10} s`;
}

type Listener<T> = (payload: T) => void;

export class EngineClient {
  private readonly spawnFn: SpawnEngine;
  /** The engine-call table this client speaks. */
  private readonly table: MethodTable;
  private readonly opts: Required<Omit<EngineClientOptions, 'spawn' | 'env' | 'entry' | 'methods'>> &
    Pick<EngineClientOptions, 'env' | 'entry'>;
  private readonly listeners = new Map<keyof EngineClientEvents, Set<Listener<never>>>();

  private st: EngineClientStatus = {
    state: 'stopped',
    message: null,
    restarts: 0,
    willRestart: false,
    backend: '',
    backendReason: '',
    pid: null,
  };
  private proc: EngineProcess | null = null;
  /** Bumped for every process; messages and exits of older ones are ignored. */
  private gen = 0;
  private helloReceived = false;
  /** Settles when the host is ready, or when it definitively is not (unavailable, stopped). */
  private ready: Deferred | null = null;
  private unavailable: EngineRequestError | null = null;
  private startTimer: NodeJS.Timeout | null = null;
  private restartTimer: NodeJS.Timeout | null = null;
  private crashTimes: number[] = [];
  private lostOnCrash: LostHandles | null = null;
  private stopping: { exited: Promise<void>; done(): void; result: Promise<StopResult> } | null = null;
  private hello: HostInfo | null = null;
  private stderrTail = '';

  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly models = new Map<string, string>();
  private readonly sessions = new Map<string, string>();
  private readonly killOnExit = () => this.proc?.kill();

  constructor(options: EngineClientOptions = {}) {
    this.spawnFn = options.spawn ?? spawnNodeHost;
    this.table = options.methods ?? methods;
    this.opts = {
      env: options.env,
      entry: options.entry,
      startTimeoutMs: options.startTimeoutMs ?? 30_000,
      stopTimeoutMs: options.stopTimeoutMs ?? 5_000,
      maxRestarts: options.maxRestarts ?? 3,
      restartWindowMs: options.restartWindowMs ?? 60_000,
      restartDelayMs: options.restartDelayMs ?? 250,
    };
  }

  // -------------------------------------------------------------------------------------------------------
  // Status and events

  status(): EngineClientStatus {
    return { ...this.st };
  }

  /** Subscribes; returns the unsubscribe function. */
  on<E extends keyof EngineClientEvents>(event: E, listener: Listener<EngineClientEvents[E]>): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener as Listener<never>);
    return () => void set.delete(listener as Listener<never>);
  }

  private emit<E extends keyof EngineClientEvents>(event: E, payload: EngineClientEvents[E]): void {
    for (const l of [...(this.listeners.get(event) ?? [])]) {
      try {
        (l as Listener<EngineClientEvents[E]>)(payload);
      } catch (e) {
        console.error(`EngineClient: a '${event}' listener threw`, e);
      }
    }
  }

  private setStatus(patch: Partial<EngineClientStatus>): void {
    const next = { ...this.st, ...patch };
    if (
      next.state === this.st.state &&
      next.message === this.st.message &&
      next.restarts === this.st.restarts &&
      next.willRestart === this.st.willRestart &&
      next.backend === this.st.backend &&
      next.backendReason === this.st.backendReason &&
      next.pid === this.st.pid
    )
      return;
    this.st = next;
    this.emit('status', this.status());
  }

  private updateBusy(): void {
    if (!this.proc || !this.helloReceived || (this.st.state !== 'ready' && this.st.state !== 'busy')) return;
    const busy = [...this.pending.values()].some((p) => this.table[p.method]?.long);
    this.setStatus({ state: busy ? 'busy' : 'ready' });
  }

  /** What the running host reported at start; null before the first start. */
  hostInfo(): HostInfo | null {
    return this.hello ? { ...this.hello } : null;
  }

  /** Models and sessions the current process holds (as far as this client made them). */
  handles(): LostHandles {
    return {
      models: [...this.models].map(([modelId, path]) => ({ modelId, path })),
      sessions: [...this.sessions].map(([sessionId, modelId]) => ({ sessionId, modelId })),
    };
  }

  // -------------------------------------------------------------------------------------------------------
  // Process lifecycle

  /**
   * Starts the host; resolves when it is ready. Requests start a stopped host too, but only start() brings
   * back one that crashed past the restart limit (it resets the count): a user's action, never a loop.
   * While an automatic restart is pending it waits for that one.
   */
  start(): Promise<void> {
    if (this.stopping) return this.stopping.exited.then(() => this.start());
    if (this.unavailable && this.proc) return Promise.reject(this.unavailable);
    if (this.proc || this.restartTimer) return this.ready?.promise ?? Promise.resolve();
    this.crashTimes = [];
    this.unavailable = null;
    const ready = (this.ready = deferred());
    this.spawnHost(false);
    return ready.promise;
  }

  private spawnHost(restart: boolean): void {
    const gen = ++this.gen;
    this.helloReceived = false;
    this.stderrTail = '';
    const { entry, execArgv } = this.opts.entry ?? defaultHostEntry();
    let proc: EngineProcess;
    try {
      proc = this.spawnFn({ entry, execArgv, env: { ...process.env, ...this.opts.env } });
    } catch (e) {
      this.giveUp(`the engine process did not start: ${(e as Error).message}`);
      return;
    }
    this.proc = proc;
    process.once('exit', this.killOnExit);
    this.setStatus({
      state: 'starting',
      willRestart: false,
      pid: proc.pid ?? null,
      restarts: this.st.restarts + (restart ? 1 : 0),
    });
    proc.onMessage((m) => {
      if (gen !== this.gen) return;
      try {
        this.onMessage(m);
      } catch (e) {
        console.error('EngineClient: failed to handle a message from the engine', e);
      }
    });
    proc.onExit((info) => {
      if (gen === this.gen) this.onExit(info);
    });
    proc.onStderr?.((chunk) => {
      if (gen === this.gen) this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL);
    });
    this.startTimer = setTimeout(() => {
      if (gen !== this.gen || this.helloReceived) return;
      this.stderrTail += `\n[folio] the engine process did not start within ${this.opts.startTimeoutMs} ms\n`;
      proc.kill();
    }, this.opts.startTimeoutMs);
  }

  /** No engine for now: the state stays crashed with `message` until start() is called. */
  private giveUp(message: string): void {
    this.unavailable = new EngineRequestError(ErrorCodes.ENGINE_UNAVAILABLE, message);
    this.setStatus({ state: 'crashed', message, willRestart: false, pid: null });
    this.ready?.reject(this.unavailable);
    this.ready = null;
  }

  private onMessage(raw: unknown): void {
    const parsed = HostMessage.safeParse(raw);
    if (!parsed.success) {
      const id = (raw as { id?: unknown } | null)?.id;
      const message = `the engine sent a malformed message: ${describeIssue(parsed.error)}`;
      const p = typeof id === 'number' ? this.pending.get(id) : undefined;
      if (p)
        this.settle(
          id as number,
          new EngineRequestError(ErrorCodes.PROTOCOL_ERROR, `${p.method}: ${message}`, p.method),
        );
      else this.emit('notice', { type: 'notice', code: ErrorCodes.PROTOCOL_ERROR, message });
      return;
    }
    const m = parsed.data;
    switch (m.type) {
      case 'hello': {
        if (this.startTimer) clearTimeout(this.startTimer);
        this.startTimer = null;
        this.helloReceived = true;
        if (!m.ok || m.protocol !== PROTOCOL_VERSION) {
          this.giveUp(
            m.ok ? `the engine speaks protocol ${m.protocol}, this client ${PROTOCOL_VERSION}` : m.error.message,
          );
          this.proc?.kill();
          return;
        }
        this.hello = {
          pid: m.pid,
          transport: m.transport,
          addonPath: m.addonPath,
          napiVersion: m.napiVersion,
          backend: m.backend,
          gpu: m.gpu,
          backends: m.backends as Record<ComputeBackend, BackendOffer>,
          testHooks: m.testHooks,
        };
        this.setStatus({
          state: 'ready',
          message: null,
          willRestart: false,
          backend: m.backend,
          backendReason: m.backendReason,
          pid: m.pid,
        });
        this.ready?.resolve();
        this.ready = null;
        if (this.lostOnCrash) {
          const lost = this.lostOnCrash;
          this.lostOnCrash = null;
          this.emit('restart', { restarts: this.st.restarts, lost });
        }
        this.updateBusy();
        return;
      }
      case 'notice':
        this.emit('notice', m);
        return;
      case 'event': {
        const p = this.pending.get(m.id);
        if (!p) return;
        try {
          if (m.event === 'progress') p.onProgress?.(m.done, m.total);
          else p.onToken?.(m.token);
        } catch (e) {
          console.error(`EngineClient: an ${m.event} callback of ${p.method} threw`, e);
        }
        return;
      }
      case 'response': {
        const p = this.pending.get(m.id);
        if (!p) return;
        if (!m.ok) {
          this.settle(m.id, new EngineRequestError(m.error.code, m.error.message, p.method));
          return;
        }
        const spec = Object.hasOwn(this.table, p.method) ? this.table[p.method] : null;
        const r = spec ? spec.result.safeParse(m.result) : { success: true as const, data: m.result };
        if (!r.success) {
          this.settle(
            m.id,
            new EngineRequestError(
              ErrorCodes.PROTOCOL_ERROR,
              `${p.method}: the engine's result does not match the protocol: ${describeIssue(r.error)}`,
              p.method,
            ),
          );
          return;
        }
        this.track(p.method, r.data);
        this.settle(m.id, null, r.data);
        return;
      }
    }
  }

  private settle(id: number, error: Error | null, value?: unknown): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    p.cleanup();
    if (error) p.reject(error);
    else p.resolve(value);
    this.updateBusy();
  }

  /** The handles a result made (the table's `handles`), kept to say what a crash loses. */
  private track(method: string, result: unknown): void {
    const r = result as Record<string, unknown>;
    const handles = this.table[method]?.handles;
    if (handles === 'makesModel') this.models.set(r.modelId as string, (r.info as { path: string }).path);
    else if (handles === 'makesSession') this.sessions.set(r.sessionId as string, r.modelId as string);
  }

  /** The handles a request disposes, forgotten as it is sent. */
  private untrack(method: string, params: unknown): void {
    const p = params as Record<string, unknown>;
    const handles = this.table[method]?.handles;
    if (handles === 'disposesSession') this.sessions.delete(p.sessionId as string);
    else if (handles === 'disposesModel') {
      this.models.delete(p.modelId as string);
      for (const [s, m] of this.sessions) if (m === p.modelId) this.sessions.delete(s);
    }
  }

  private rejectAll(code: string, message: string): void {
    for (const [id, p] of [...this.pending])
      this.settle(id, new EngineRequestError(code, `${p.method}: ${message}`, p.method));
  }

  private onExit(info: { code: number | null; signal: string | null }): void {
    if (this.startTimer) clearTimeout(this.startTimer);
    this.startTimer = null;
    process.removeListener('exit', this.killOnExit);
    this.proc = null;
    const lost = this.handles();
    this.models.clear();
    this.sessions.clear();

    if (this.stopping) {
      this.setStatus({ state: 'stopped', message: null, willRestart: false, pid: null });
      this.rejectAll(ErrorCodes.ENGINE_STOPPED, 'the engine was stopped');
      this.ready?.reject(new EngineRequestError(ErrorCodes.ENGINE_STOPPED, 'the engine was stopped'));
      this.ready = null;
      this.stopping.done();
      return;
    }
    if (this.unavailable) {
      this.rejectAll(ErrorCodes.ENGINE_UNAVAILABLE, this.unavailable.message);
      return;
    }

    const lastLine = this.stderrTail.trim().split('\n').pop() ?? '';
    const cause = `${describeExit(info)}${lastLine ? `: ${lastLine}` : ''}`;
    const died = `the engine process died (${cause})`;
    const now = Date.now();
    this.crashTimes = [...this.crashTimes.filter((t) => now - t < this.opts.restartWindowMs), now];
    const crashes = this.crashTimes.length;
    const willRestart = crashes <= this.opts.maxRestarts;
    const message = willRestart
      ? died
      : `the engine stopped unexpectedly ${crashes === 1 ? 'once' : `${crashes} times`} in ${describeWindow(this.opts.restartWindowMs)} ` +
        `(last: ${cause}), so it is not restarted by itself: retry, or choose a model, to start it again`;
    // Lost handles accumulate over crashes that happen before a restart gets ready.
    const pendingLost = this.lostOnCrash ?? { models: [], sessions: [] };
    this.lostOnCrash = {
      models: [...pendingLost.models, ...lost.models],
      sessions: [...pendingLost.sessions, ...lost.sessions],
    };
    this.setStatus({ state: 'crashed', message, willRestart, pid: null });
    this.rejectAll(ErrorCodes.ENGINE_CRASHED, died);
    this.emit('crash', {
      code: info.code,
      signal: info.signal,
      message,
      lost,
      willRestart,
      stderrTail: this.stderrTail,
    });
    if (!willRestart) {
      this.giveUp(message);
      return;
    }
    this.ready ??= deferred();
    // A crash loop backs off: each crash within the window doubles the pause.
    const delay = this.opts.restartDelayMs * 2 ** (crashes - 1);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      this.spawnHost(true);
    }, delay);
  }

  /**
   * Disposes every session and model in the host and ends it; a host that does not exit within
   * stopTimeoutMs is killed. Pending requests reject with ENGINE_STOPPED (or CANCELLED, when the host
   * cancelled them while shutting down).
   */
  stop(): Promise<StopResult> {
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
      this.restartTimer = null;
    }
    if (this.stopping) return this.stopping.result;
    const proc = this.proc;
    if (!proc) {
      this.ready?.reject(new EngineRequestError(ErrorCodes.ENGINE_STOPPED, 'the engine was stopped'));
      this.ready = null;
      this.unavailable = null;
      this.lostOnCrash = null;
      this.setStatus({ state: 'stopped', message: null, willRestart: false, pid: null });
      return Promise.resolve({ graceful: false, disposedSessions: 0, disposedModels: 0 });
    }
    let done!: () => void;
    const exited = new Promise<void>((r) => (done = r));
    let answer: EngineResult<'shutdown'> | null = null;
    const killer = setTimeout(() => proc.kill(), this.opts.stopTimeoutMs);
    const result = exited.then((): StopResult => {
      clearTimeout(killer);
      this.stopping = null;
      this.unavailable = null;
      this.lostOnCrash = null;
      return {
        graceful: answer !== null,
        disposedSessions: answer?.disposedSessions ?? 0,
        disposedModels: answer?.disposedModels ?? 0,
      };
    });
    this.stopping = { exited, done, result };
    if (this.helloReceived && !this.unavailable) {
      this.post('shutdown', {}, {}).then(
        (r) => void (answer = r as EngineResult<'shutdown'>),
        () => {},
      );
    } else {
      proc.kill();
    }
    return result;
  }

  // -------------------------------------------------------------------------------------------------------
  // Requests

  /** Waits until a host is ready, starting one if none runs. */
  private async whenReady(method: string, signal?: AbortSignal): Promise<void> {
    if (this.stopping)
      throw new EngineRequestError(ErrorCodes.ENGINE_STOPPED, `${method}: the engine is stopping`, method);
    if (this.proc && this.helloReceived && (this.st.state === 'ready' || this.st.state === 'busy')) return;
    if (this.unavailable)
      throw new EngineRequestError(ErrorCodes.ENGINE_UNAVAILABLE, `${method}: ${this.unavailable.message}`, method);
    const ready = this.ready ? this.ready.promise : this.start();
    if (!signal) return ready;
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(cancelledError(method));
      signal.addEventListener('abort', onAbort, { once: true });
      ready.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  /**
   * Sends a request; `params` as given (already validated, or deliberately not). While the host is ready
   * the request leaves synchronously, so requests reach it in the order they were made.
   */
  private post(method: string, params: unknown, opts: RequestOptions): Promise<unknown> {
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(cancelledError(method));
    const ready =
      this.proc && this.helloReceived && !this.stopping && (this.st.state === 'ready' || this.st.state === 'busy');
    if (ready || method === 'shutdown') return this.send(method, params, opts);
    return this.whenReady(method, signal).then(() => {
      if (signal?.aborted) throw cancelledError(method);
      return this.send(method, params, opts);
    });
  }

  private send(method: string, params: unknown, opts: RequestOptions): Promise<unknown> {
    const { signal } = opts;
    const proc = this.proc;
    if (!proc)
      return Promise.reject(
        new EngineRequestError(ErrorCodes.ENGINE_UNAVAILABLE, `${method}: the engine is not running`, method),
      );
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      let cleanup = () => {};
      if (signal) {
        const onAbort = () => {
          if (this.pending.has(id)) this.post('cancel', { requestId: id }, {}).catch(() => {});
        };
        signal.addEventListener('abort', onAbort, { once: true });
        cleanup = () => signal.removeEventListener('abort', onAbort);
      }
      this.pending.set(id, { method, resolve, reject, onProgress: opts.onProgress, onToken: opts.onToken, cleanup });
      this.untrack(method, params);
      this.updateBusy();
      proc.postMessage({ type: 'request', id, method, params });
    });
  }

  /**
   * Any operation of the engine-call table (protocol.ts), its parameters checked here first (BAD_REQUEST) and
   * its result on arrival; `opts` take its events and its cancellation.
   */
  call<M extends EngineMethod>(
    method: M,
    params: EngineParams<M>,
    opts: RequestOptions = {},
  ): Promise<EngineResult<M>> {
    return this.callUnchecked(method, params, opts, true) as Promise<EngineResult<M>>;
  }

  /** Sends whatever it is given (checked only with `check`: tests of the host's own validation send bad ones). */
  callUnchecked(method: string, params: unknown, opts: RequestOptions = {}, check = false): Promise<unknown> {
    const row = Object.hasOwn(this.table, method) ? this.table[method] : null;
    if (check) {
      const r = row?.params.safeParse(params);
      if (!r?.success)
        return Promise.reject(
          new EngineRequestError(
            row ? ErrorCodes.BAD_REQUEST : ErrorCodes.UNKNOWN_METHOD,
            `${method}: ${r ? describeIssue(r.error) : 'not an operation of the engine-call table'}`,
            method,
          ),
        );
    }
    return this.post(method, params, opts);
  }

  /** Posts a raw message to the host (for tests: a malformed envelope). */
  postRaw(message: unknown): void {
    this.proc?.postMessage(message);
  }
}
