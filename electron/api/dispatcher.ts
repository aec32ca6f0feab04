// Turns the app core's handlers into the API of contract.ts: every call's parameters are validated,
// errors become ApiErrors with a code, and results are checked against their schemas so a handler can
// never send the UI something the contract does not allow. Both transports (Electron IPC and the web
// host) call `dispatch`.
import {
  ApiError,
  events,
  methods,
  parseParams,
  type EventName,
  type EventPayload,
  type MethodName,
  type Params,
  type Result,
} from './contract.ts';

export type Handlers = { [M in MethodName]: (params: Params<M>) => Promise<Result<M>> | Result<M> };

type Listener = (event: EventName, payload: unknown) => void;

/** Where the core publishes events; transports subscribe. */
export class EventBus {
  private listeners = new Set<Listener>();

  emit<E extends EventName>(event: E, payload: EventPayload<E>): void {
    // Events are checked too: a malformed event is a bug in the core, reported where it happens.
    const r = events[event].safeParse(payload);
    if (!r.success) throw new Error(`event ${event} does not match the contract: ${r.error.issues[0]?.message}`);
    for (const l of this.listeners) {
      try {
        l(event, r.data);
      } catch {
        // one broken listener (e.g. a closed socket) must not stop the others
      }
    }
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** Errors the handlers throw: ApiErrors pass through, engine errors keep their code, anything else is INTERNAL. */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  const err = e as { code?: unknown; message?: unknown };
  const code = typeof err?.code === 'string' && /^[A-Z][A-Z0-9_]*$/.test(err.code) ? err.code : 'INTERNAL';
  const message = typeof err?.message === 'string' ? err.message : String(e);
  return new ApiError(code, message);
}

export class Dispatcher {
  constructor(
    private readonly handlers: Handlers,
    readonly bus: EventBus,
  ) {}

  /** Validates, runs and checks one call. Always resolves to a result or rejects with an ApiError. */
  async dispatch(method: string, params: unknown): Promise<unknown> {
    const parsed = parseParams(method, params);
    const handler = this.handlers[method as MethodName] as (p: unknown) => Promise<unknown> | unknown;
    let result: unknown;
    try {
      result = await handler(parsed);
    } catch (e) {
      throw toApiError(e);
    }
    const checked = methods[method as MethodName].result.safeParse(result);
    if (!checked.success) {
      throw new ApiError(
        'INTERNAL',
        `${method} produced a result outside the contract: ${checked.error.issues[0]?.path.join('.')}: ${checked.error.issues[0]?.message}`,
      );
    }
    return checked.data;
  }
}
