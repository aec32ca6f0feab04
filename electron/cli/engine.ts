// The engine as the commands that read documents use it: in a process of its own behind EngineManager, as the
// app runs it, with the session settings the flags give (--ctx 0 and --threads 0 mean the defaults, as null
// does in the app's settings). `run` gets the manager; the engine process is stopped after it, whatever happens.
import { EventBus } from '../api/dispatcher.ts';
import { EngineClient } from '../engine/client.ts';
import { EngineManager } from '../services/engine-manager.ts';
import type { sessionOptions } from './args.ts';

export async function withEngine<T>(
  flags: ReturnType<typeof sessionOptions>,
  run: (engine: EngineManager) => Promise<T>,
): Promise<T> {
  const client = new EngineClient();
  const engine = new EngineManager(client, new EventBus(), () => ({
    nCtx: flags.nCtx || null,
    threads: flags.nThreads || null,
    kvType: flags.kvType,
    kvTypeV: flags.kvTypeV,
    kvRotate: flags.kvRotate,
    backend: flags.backend,
  }));
  try {
    return await run(engine);
  } finally {
    await client.stop();
  }
}
