// A real app core for tests, and waiting for one of its tasks to finish.
import type { EventPayload } from '../../electron/api/contract.ts';
import { createAppCore, type AppCore, type AppCoreOptions } from '../../electron/services/app-core.ts';

/** An app core on `dataDir` with `model` as its model (and `o`, for what a test sets otherwise). */
export function testCore(dataDir: string, model: string, o: Partial<AppCoreOptions> = {}): Promise<AppCore> {
  // Discovery off: tests never scan the machine for models, they use only the one given.
  return createAppCore({ dataDir, model, models: { discovery: { knownPlaces: false, systemWide: false } }, ...o });
}

/** The task.done event of the task `taskId` on `core`'s bus. */
export function taskDone(core: AppCore, taskId: string): Promise<EventPayload<'task.done'>> {
  return new Promise((resolve) => {
    const off = core.bus.subscribe((event, payload) => {
      if (event === 'task.done' && (payload as EventPayload<'task.done'>).taskId === taskId) {
        off();
        resolve(payload as EventPayload<'task.done'>);
      }
    });
  });
}
