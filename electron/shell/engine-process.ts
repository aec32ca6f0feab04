// The engine host in an Electron utilityProcess: the SpawnEngine of electron/engine/spawn.ts for the
// desktop app. EngineClient (the core) starts the host through it, restarts it the same way after a crash,
// and never imports 'electron'. The host (engine/host.js, compiled) sees process.parentPort and speaks
// MessagePort-style there; messages are structured clones both ways (typed arrays and BigInt included).
import type { ForkOptions, UtilityProcess } from 'electron';

import type { EngineProcess, SpawnEngine } from '../engine/spawn.ts';

type ExitInfo = { code: number | null; signal: string | null };

export interface UtilitySpawnOptions {
  /** The name in app.getAppMetrics() and in 'child-process-gone'. */
  serviceName?: string;
  /** Where the host's stderr is echoed (default: this process's stderr). */
  echo?: (chunk: string) => void;
  /** process.kill, for the hard kill of a host that does not stop (tests replace it). */
  killPid?: (pid: number, signal: NodeJS.Signals) => void;
  platform?: NodeJS.Platform;
}

export function createUtilitySpawn(
  utilityProcess: { fork(modulePath: string, args?: string[], options?: ForkOptions): UtilityProcess },
  opts: UtilitySpawnOptions = {},
): SpawnEngine {
  const echo = opts.echo ?? ((chunk: string) => void process.stderr.write(chunk));
  const killPid = opts.killPid ?? ((pid: number, signal: NodeJS.Signals) => void process.kill(pid, signal));
  const platform = opts.platform ?? process.platform;

  return ({ entry, execArgv, env }) => {
    const child = utilityProcess.fork(entry, [], {
      env,
      execArgv,
      stdio: ['ignore', 'inherit', 'pipe'],
      serviceName: opts.serviceName ?? 'Folio engine',
    });
    let exitInfo: ExitInfo | null = null;
    let lastPid: number | undefined;
    const exitListeners: ((info: ExitInfo) => void)[] = [];
    const stderrListeners: ((chunk: string) => void)[] = [];

    child.once('spawn', () => void (lastPid = child.pid));
    child.stderr?.on('data', (b: Buffer | string) => {
      const chunk = String(b);
      echo(chunk);
      for (const l of stderrListeners) l(chunk);
    });
    // A fatal V8 error: 'exit' follows; keep its location for the crash report.
    child.on('error', (type: string, location: string) => {
      const chunk = `[folio] the engine process hit a ${type} at ${location}\n`;
      for (const l of stderrListeners) l(chunk);
    });
    child.once('exit', (code: number) => {
      // A utilityProcess reports only a code; a crash by signal shows as a non-zero code.
      exitInfo = { code, signal: null };
      for (const l of exitListeners.splice(0)) l(exitInfo);
    });

    const proc: EngineProcess = {
      get pid() {
        return child.pid ?? (exitInfo ? undefined : lastPid);
      },
      postMessage(message) {
        if (!exitInfo) child.postMessage(message);
      },
      onMessage(listener) {
        child.on('message', (m: unknown) => listener(m));
      },
      onExit(listener) {
        if (exitInfo) queueMicrotask(() => listener(exitInfo!));
        else exitListeners.push(listener);
      },
      onStderr(listener) {
        stderrListeners.push(listener);
      },
      kill() {
        if (exitInfo) return;
        // utilityProcess.kill() sends SIGTERM; a host stuck in native code is ended with SIGKILL where
        // there are signals. Electron notices the death either way and emits 'exit'.
        const pid = child.pid ?? lastPid;
        if (platform !== 'win32' && pid !== undefined) {
          try {
            killPid(pid, 'SIGKILL');
            return;
          } catch {
            // gone already, or not ours to signal: fall through
          }
        }
        child.kill();
      },
    };
    return proc;
  };
}
