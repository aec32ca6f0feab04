// The engine's status (EngineStatus events: crashed, restarting, ready) and, in a browser, whether the
// connection to the web host is up.
import { create } from 'zustand';

import type { EngineStatus } from '../../../electron/api/contract.ts';

export interface EngineState {
  status: EngineStatus | null;
  /** null: not applicable (the desktop app has no connection to lose). */
  connected: boolean | null;
  /** Whether the connection was ever up (before that, a missing connection is "connecting", not "lost"). */
  everConnected: boolean;
  /** Set when a lost connection came back (the banner says so for a moment). */
  restoredAt: number | null;
}

export const useEngine = create<EngineState>()(() => ({
  status: null,
  connected: null,
  everConnected: false,
  restoredAt: null,
}));

export function setEngineStatus(status: EngineStatus): void {
  useEngine.setState({ status });
}

export function setConnected(connected: boolean): void {
  const s = useEngine.getState();
  const restored = connected && s.connected === false && s.everConnected;
  useEngine.setState({
    connected,
    everConnected: s.everConnected || connected,
    restoredAt: restored ? Date.now() : s.restoredAt,
  });
}
