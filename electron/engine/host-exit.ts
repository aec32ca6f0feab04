// How the engine host ends: at once, and never after the process that started it.
//
// At once: Node's process.exit() (and the exit after an uncaught exception) joins the libuv thread pool
// before the process ends, and a native generation running there waits up to a second per token for
// acknowledgements that a closing event loop never sends; an orphaned host mid-generation lived for
// minutes that way. endAtOnce() makes every exit of the host an immediate one (native exitNow: _Exit).
//
// Never after its parent: a host whose parent was killed holds its models (hundreds of MB to GB) and keeps
// computing for nobody, so it leaves as soon as it learns the parent is gone, by whichever comes first:
// - the IPC channel's 'disconnect' (Node child processes; host.ts listens for it);
// - on Linux, for a Node child process, a parent-death signal (prctl PR_SET_PDEATHSIG, SIGKILL): immediate,
//   even while the host's event loop is blocked in a long synchronous call;
// - a watchdog every PARENT_WATCH_MS that sees the parent pid change (reparented to init or a subreaper) or
//   vanish: it covers macOS and Electron's utilityProcess, whose parentPort has no 'disconnect'.
import { writeSync } from 'node:fs';
import { constants } from 'node:os';

import type { FolioAddon } from './binding.ts';

/** How often the watchdog looks at the parent. */
export const PARENT_WATCH_MS = 500;
/** Test only (honoured with the test hooks on): no parent-death signal, so that the watchdog alone is tested. */
export const TEST_NO_DEATH_SIGNAL_ENV = 'FOLIO_ENGINE_TEST_NO_DEATH_SIGNAL';

/** What the native addon offers for this (native/src/napi/process.cc). */
export type ProcessControl = Pick<FolioAddon, 'setParentDeathSignal' | 'exitNow'>;

/** Ends this process at once, without waiting for native work on other threads. */
export function exitNow(control: ProcessControl | null, code = 0): never {
  if (control) control.exitNow(code);
  // No addon (it did not load): no native job can hold up the exit.
  process.exit(code);
}

/**
 * From now on every exit is immediate once the addon is loaded: process.exit() from anywhere, and an uncaught
 * exception (its stack is written to stderr first, synchronously: Node's own report would come after the exit).
 */
export function endAtOnce(control: () => ProcessControl | null): void {
  process.on('uncaughtExceptionMonitor', (e) => {
    if (!control()) return; // Node reports it itself: the exit below is not taken over
    try {
      // The stack, then a summary as the last line (the client's crash message quotes the last line).
      const err = e instanceof Error ? e : new Error(String(e));
      writeSync(2, `${err.stack}\nfolio engine host: ended by an uncaught ${err.name}: ${err.message}\n`);
    } catch {
      // stderr is gone with the parent: nobody to tell
    }
  });
  process.on('exit', (code) => {
    const c = control();
    if (c) exitNow(c, code); // without an addon the usual exit is just as quick
  });
}

function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH'; // EPERM: it exists, it is just not ours to signal
  }
}

export interface ParentWatchOptions {
  control: ProcessControl | null;
  /** Whether to ask for the parent-death signal (where the platform has one). */
  deathSignal: boolean;
  /** Called once when the parent is found gone (it should not return: see exitNow). */
  onGone(): void;
  intervalMs?: number;
}

/** Starts watching; returns whether the parent-death signal is armed. The watchdog keeps no loop alive. */
export function watchParent(o: ParentWatchOptions): boolean {
  const parent = process.ppid;
  let armed = false;
  if (o.deathSignal && o.control) {
    try {
      armed = o.control.setParentDeathSignal(constants.signals.SIGKILL);
    } catch {
      armed = false;
    }
  }
  let reported = false;
  const check = () => {
    if (reported) return;
    if (process.ppid === parent && !isGone(parent)) return;
    reported = true;
    clearInterval(timer);
    o.onGone();
  };
  const timer = setInterval(check, o.intervalMs ?? PARENT_WATCH_MS);
  timer.unref();
  // The parent may have died before the signal was armed: the signal would then never come.
  check();
  return armed;
}
