// The API of contract.ts over the web host's WebSocket (/api/ws), for the renderer in a browser and for
// tests. Calls are matched to answers by id; events go to listeners; when the connection drops, pending
// calls fail with DISCONNECTED and the client reconnects with backoff.
import {
  ApiError,
  type EventName,
  type EventPayload,
  type FolioApi,
  type MethodName,
  type Params,
  type Result,
} from './contract.ts';

/** The subset of the browser's WebSocket this client needs (the `ws` package provides it too). */
interface SocketLike {
  readyState: number;
  send(data: string): void;
  close(): void;
  onopen: ((ev: unknown) => void) | null;
  onclose: ((ev: unknown) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
}
/** Node's `ws` also takes headers (the third argument); a browser's WebSocket sends its Origin instead. */
type SocketFactory = new (
  url: string,
  protocols?: string[],
  options?: { headers?: Record<string, string> },
) => SocketLike;

export interface ConnectOptions {
  /** The web host's API token, for clients that are not the app's own pages (tests, scripts; see access.ts). */
  token?: string;
}

export interface WsApi extends FolioApi {
  /** Connected or not; listeners hear every change. */
  readonly connected: boolean;
  onConnection(listener: (connected: boolean) => void): () => void;
  close(): void;
}

export function connectApi(
  url: string,
  Socket: SocketFactory = (globalThis as unknown as { WebSocket: SocketFactory }).WebSocket,
  options: ConnectOptions = {},
): WsApi {
  let ws: SocketLike | null = null;
  let connected = false;
  let closed = false;
  let nextId = 1;
  let backoff = 250;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  const queue: string[] = []; // calls made while (re)connecting
  const listeners = new Map<string, Set<(p: unknown) => void>>();
  const connectionListeners = new Set<(c: boolean) => void>();

  const setConnected = (c: boolean) => {
    if (c === connected) return;
    connected = c;
    for (const l of connectionListeners) l(c);
  };

  const open = () => {
    if (closed) return;
    const s = options.token
      ? new Socket(url, [], { headers: { authorization: `Bearer ${options.token}` } })
      : new Socket(url);
    ws = s;
    s.onopen = () => {
      backoff = 250;
      setConnected(true);
      for (const m of queue.splice(0)) s.send(m);
    };
    s.onmessage = (ev) => {
      let msg: {
        type?: string;
        id?: number;
        result?: unknown;
        error?: { code: string; message: string; details?: unknown };
        event?: string;
        payload?: unknown;
      };
      try {
        msg = JSON.parse(String(ev.data));
      } catch {
        return;
      }
      if (msg.type === 'event' && msg.event) {
        for (const l of listeners.get(msg.event) ?? []) l(msg.payload);
        return;
      }
      const p = msg.id !== undefined ? pending.get(msg.id) : undefined;
      if (!p) return;
      pending.delete(msg.id!);
      if (msg.type === 'result') p.resolve(msg.result);
      else
        p.reject(
          new ApiError(msg.error?.code ?? 'INTERNAL', msg.error?.message ?? 'unknown error', msg.error?.details),
        );
    };
    s.onerror = () => {};
    s.onclose = () => {
      ws = null;
      setConnected(false);
      for (const [, p] of pending) p.reject(new ApiError('DISCONNECTED', 'the connection to Folio was lost'));
      pending.clear();
      if (!closed) {
        setTimeout(open, backoff);
        backoff = Math.min(backoff * 2, 5000);
      }
    };
  };
  open();

  return {
    get connected() {
      return connected;
    },
    call<M extends MethodName>(method: M, params: Params<M>): Promise<Result<M>> {
      if (closed) return Promise.reject(new ApiError('DISCONNECTED', 'the client is closed'));
      const id = nextId++;
      const msg = JSON.stringify({ type: 'call', id, method, params });
      return new Promise<Result<M>>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        if (ws && connected) ws.send(msg);
        else queue.push(msg);
      });
    },
    on<E extends EventName>(event: E, listener: (payload: EventPayload<E>) => void) {
      const set = listeners.get(event) ?? new Set();
      listeners.set(event, set);
      set.add(listener as (p: unknown) => void);
      return () => set.delete(listener as (p: unknown) => void);
    },
    onConnection(listener) {
      connectionListeners.add(listener);
      return () => connectionListeners.delete(listener);
    },
    close() {
      closed = true;
      ws?.close();
    },
  };
}
