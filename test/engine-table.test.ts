// The engine-call table (issue 39): every engine operation is declared once, in protocol.ts's `methods`, and
// the client's `call`, the host's dispatch (serve.ts) and the engine manager are derived from it. So an
// operation is a row and a handler, nothing else: this test adds one, `echo`, to a table of its own, serves it
// with the host's own loop in this process, and calls it through an unchanged EngineClient: its parameters are
// checked, its progress events arrive, the engine is busy while it runs (a long row), and nothing in the
// client or the manager is written per operation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';

import { EngineClient, type EngineProcess } from '../electron/engine/client.ts';
import { COMPUTE_BACKENDS } from '../electron/shared/compute-backends.ts';
import { type HostMessage, type MethodRow, methods, PROTOCOL_VERSION } from '../electron/engine/protocol.ts';
import { type HandlerTable, serveRequests } from '../electron/engine/serve.ts';
import { EngineManager } from '../electron/services/engine-manager.ts';

const echo = {
  params: z.strictObject({ text: z.string(), times: z.number().int().min(1).max(4) }),
  result: z.object({ echoed: z.string() }),
  events: 'progress',
  long: true,
  cancels: false,
} as const satisfies MethodRow;
const table = { ...methods, echo };

/** A host in this process: the host's own serving loop over `table`, with `handlers`, behind an EngineProcess. */
function inProcessHost(handlers: Partial<HandlerTable<typeof table>>): () => EngineProcess {
  return () => {
    let toClient: (m: unknown) => void = () => {};
    let toHost: (m: unknown) => void = () => {};
    let exited: ((info: { code: number | null; signal: string | null }) => void) | null = null;
    serveRequests({
      transport: {
        send: (m: HostMessage, then) => {
          setImmediate(() => toClient(structuredClone(m)));
          then?.();
        },
        onMessage: (l) => (toHost = l),
      },
      methods: table,
      handlers: handlers as HandlerTable<typeof table>,
    });
    const offer = { available: true, label: 'cpu (test)', reason: 'a test', gpu: null };
    return {
      pid: process.pid,
      postMessage: (m) => setImmediate(() => toHost(structuredClone(m))),
      onMessage: (l) => {
        toClient = l;
        setImmediate(() =>
          l({
            type: 'hello',
            ok: true,
            protocol: PROTOCOL_VERSION,
            pid: process.pid,
            transport: 'node-ipc',
            addonPath: '(in process)',
            napiVersion: 8,
            backend: 'cpu (test)',
            backendReason: 'a test',
            gpu: null,
            backends: Object.fromEntries(COMPUTE_BACKENDS.map((b) => [b, offer])),
            testHooks: false,
          }),
        );
      },
      onExit: (l) => (exited = l),
      kill: () => exited?.({ code: null, signal: 'SIGKILL' }),
    };
  };
}

test('an operation added to the table is served and called with no other code', async () => {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const client = new EngineClient({
    methods: table,
    spawn: inProcessHost({
      echo: async ({ text, times }, ctx) => {
        ctx.progress(1, 2);
        await released;
        ctx.progress(2, 2);
        return { echoed: text.repeat(times) };
      },
    }),
  });
  const states: string[] = [];
  client.on('status', (s) => states.push(s.state));
  const progress: [number, number][] = [];
  const answer = client.callUnchecked(
    'echo',
    { text: 'ab', times: 3 },
    { onProgress: (d, t) => progress.push([d, t]) },
    true,
  );
  while (progress.length === 0) await new Promise((r) => setTimeout(r, 5));
  assert.equal(client.status().state, 'busy', 'a long row makes the engine busy while it runs');
  release();
  assert.deepEqual(await answer, { echoed: 'ababab' });
  assert.deepEqual(progress, [
    [1, 2],
    [2, 2],
  ]);
  assert.equal(client.status().state, 'ready');
  assert.ok(states.includes('busy'));
  // Its parameters are the row's: refused before anything is sent; an operation no row names is unknown.
  await assert.rejects(client.callUnchecked('echo', { text: 'ab', times: 9 }, {}, true), { code: 'BAD_REQUEST' });
  await assert.rejects(client.callUnchecked('nope', {}, {}, true), { code: 'UNKNOWN_METHOD' });
  // Sent unchecked, the host's loop checks it against the same row.
  await assert.rejects(client.callUnchecked('echo', { text: 1 }), { code: 'BAD_REQUEST' });
  await client.stop();
});

test('nothing in the client or the engine manager is written per operation', () => {
  const own = (o: object) => Object.getOwnPropertyNames(o).filter((n) => n !== 'constructor');
  const operations = Object.keys(methods);
  assert.deepEqual(
    own(EngineClient.prototype).filter((n) => operations.includes(n)),
    [],
    'the client has only the generic call',
  );
  // The manager adds something to these (the sessions' options and the GPU the settings chose; a disposal that
  // may find the session gone already); every other operation goes through its generic call.
  assert.deepEqual(
    own(EngineManager.prototype)
      .filter((n) => operations.includes(n))
      .sort(),
    ['createSession', 'disposeSession', 'loadSession'],
  );
  for (const [name, row] of Object.entries(methods)) {
    assert.ok(typeof row.long === 'boolean' && typeof row.cancels === 'boolean', name);
    if (row.cancels) assert.ok(row.long, `${name}: what cancelling can stop is long`);
  }
});
