// Child process of test/engine-parent-death.test.ts: a stand-in for `folio serve` that starts an engine
// host, brings it to the state the test names, prints {"hostPid": …} on one line and then waits to be
// killed. Modes: idle (a model loaded, nothing running), generate (a long generation streaming tokens),
// hang (the host's event loop blocked, as by a long synchronous native call). `parent-port` as the third
// argument runs the host the way Electron's utilityProcess does (process.parentPort, no 'disconnect').
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { EngineClient, TEST_HOOKS_ENV } from '../../electron/engine/client.ts';
import { spawnNodeHost, type SpawnEngine } from '../../electron/engine/spawn.ts';

const [modelPath, mode, transport, scratch] = process.argv.slice(2);

/** The host behind a parentPort-like object made of the IPC channel (as in engine-host.test.ts). */
function parentPortSpawn(dir: string): SpawnEngine {
  const shim = join(dir, `parent-port-shim-${process.pid}.mjs`);
  writeFileSync(
    shim,
    [
      "import { EventEmitter } from 'node:events';",
      "import { pathToFileURL } from 'node:url';",
      'const send = process.send.bind(process);',
      'const port = new EventEmitter();',
      'port.postMessage = (m) => { if (process.connected) send(m); };',
      "process.on('message', (m) => port.emit('message', { data: m, ports: [] }));",
      'process.parentPort = port;',
      'process.send = undefined;',
      'await import(pathToFileURL(process.env.FOLIO_SHIM_HOST).href);',
    ].join('\n'),
  );
  return (req) => spawnNodeHost({ ...req, entry: shim, env: { ...req.env, FOLIO_SHIM_HOST: req.entry } });
}

const client = new EngineClient({
  env: { [TEST_HOOKS_ENV]: '1', FOLIO_ENGINE_TEST_NO_DEATH_SIGNAL: process.env.FOLIO_ENGINE_TEST_NO_DEATH_SIGNAL },
  spawn: transport === 'parent-port' ? parentPortSpawn(scratch) : undefined,
});
await client.start();
const hostPid = client.status().pid!;
const ready = () => console.log(JSON.stringify({ hostPid, mode, transport }));

const { modelId } = await client.call('loadModel', { path: modelPath });
if (mode === 'idle') {
  ready();
} else if (mode === 'hang') {
  void client.call('testHang', { ms: 120_000 }).catch(() => {});
  // The request is on its way; the host blocks as soon as it reads it.
  setTimeout(ready, 300);
} else {
  const { sessionId } = await client.call('createSession', { modelId, options: { nCtx: 4096, nThreads: 1 } });
  await client.call('prefill', { sessionId, tokens: [1, 5, 6, 7] });
  let seen = 0;
  void client
    .call('generate', { sessionId, n: 4000, temperature: 0 }, { onToken: () => void (++seen === 3 && ready()) })
    .catch(() => {});
}
setInterval(() => {}, 60_000); // wait for the kill
