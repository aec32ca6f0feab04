// The host's side of the engine-call table (protocol.ts): one loop that takes each request, checks it against
// its row, runs the row's handler and answers, with the progress and token events the handler sends. Nothing
// in it names an operation: host.ts gives it the table and a handler per row (a test gives it a table of its
// own), so an operation is a row and a handler.
import type { z } from 'zod';

import { describeIssue, ErrorCodes, type HostMessage, type MethodTable, RequestMessage } from './protocol.ts';

/** What a handler gets besides its parameters. */
export interface CallContext {
  /** The request's id (what a `cancel` names). */
  id: number;
  /** The row's `cancels`: cancelling stops the operation while it runs. */
  cancellable: boolean;
  progress(done: number, total: number): void;
  token(t: { id: number; text: string }): void;
}

/** A handler per row of a table, typed by the row: its parameters as checked, its result as the row's. */
export type HandlerTable<T extends MethodTable> = {
  [M in keyof T]: (
    params: z.output<T[M]['params']>,
    ctx: CallContext,
  ) => Promise<z.output<T[M]['result']>> | z.output<T[M]['result']>;
};

export interface HostTransport {
  send(message: HostMessage, then?: () => void): void;
  onMessage(listener: (message: unknown) => void): void;
}

export interface ServeOptions<T extends MethodTable> {
  transport: HostTransport;
  methods: T;
  /** null: the engine cannot serve (the addon did not load), and every request is told why. */
  handlers: HandlerTable<T> | null;
  unavailable?: { code: string; message: string } | null;
  /** While true, only `ping` is served. */
  shuttingDown?: () => boolean;
  /** The operation after whose answer the process ends (the host's `shutdown`). */
  exitAfter?: string;
}

/** Serves requests until the process ends; returns the ids of the requests under way (`ping` counts them). */
export function serveRequests<T extends MethodTable>(o: ServeOptions<T>): ReadonlySet<number> {
  const inFlight = new Set<number>();
  const { transport } = o;
  transport.onMessage((raw) => {
    const env = RequestMessage.safeParse(raw);
    if (!env.success) {
      const id = (raw as { id?: unknown } | null)?.id;
      const error = { code: ErrorCodes.BAD_REQUEST, message: `malformed request: ${describeIssue(env.error)}` };
      if (typeof id === 'number' && Number.isInteger(id) && id >= 0)
        transport.send({ type: 'response', id, ok: false, error });
      else transport.send({ type: 'notice', ...error });
      return;
    }
    const { id, method, params } = env.data;
    const fail = (code: string, message: string) =>
      transport.send({ type: 'response', id, ok: false, error: { code, message } });
    if (inFlight.has(id)) return fail(ErrorCodes.BAD_REQUEST, `request id ${id} is already in flight`);
    if (!Object.hasOwn(o.methods, method)) return fail(ErrorCodes.UNKNOWN_METHOD, `unknown method '${method}'`);
    if (!o.handlers) return fail(ErrorCodes.ENGINE_UNAVAILABLE, o.unavailable?.message ?? 'the engine cannot serve');
    if (o.shuttingDown?.() && method !== 'ping') return fail(ErrorCodes.ENGINE_STOPPED, 'the engine is shutting down');
    const row = o.methods[method];
    const parsed = row.params.safeParse(params ?? {});
    if (!parsed.success) return fail(ErrorCodes.BAD_REQUEST, `${method}: ${describeIssue(parsed.error)}`);
    const ctx: CallContext = {
      id,
      cancellable: row.cancels,
      progress: (done, total) => transport.send({ type: 'event', id, event: 'progress', done, total }),
      token: (t) => transport.send({ type: 'event', id, event: 'token', token: { id: t.id, text: t.text } }),
    };
    inFlight.add(id);
    const handler = o.handlers[method] as (p: unknown, c: CallContext) => unknown;
    void (async () => {
      try {
        const result = await handler(parsed.data, ctx);
        inFlight.delete(id);
        if (method === o.exitAfter) transport.send({ type: 'response', id, ok: true, result }, () => process.exit(0));
        else transport.send({ type: 'response', id, ok: true, result });
      } catch (e) {
        inFlight.delete(id);
        transport.send({ type: 'response', id, ok: false, error: errorShape(e) });
      }
    })();
  });
  return inFlight;
}

/** An error as the protocol carries it: its code (INTERNAL when it has none) and message. */
export function errorShape(e: unknown): { code: string; message: string } {
  const err = e as { code?: unknown; message?: unknown } | null;
  const code = err && typeof err.code === 'string' && err.code ? err.code : ErrorCodes.INTERNAL;
  const message = err && typeof err.message === 'string' ? err.message : String(e);
  return { code, message };
}
