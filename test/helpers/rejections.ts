// The errors tests expect a promise to reject with, checked in one place.
import assert from 'node:assert/strict';

import { ImportError } from '../../electron/documents/index.ts';
import { EngineRequestError } from '../../electron/engine/protocol.ts';

/** Asserts that the import fails with `code` and a message matching every pattern. */
export async function importRejection(p: Promise<unknown>, code: string, ...patterns: RegExp[]): Promise<ImportError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ImportError, `expected an ImportError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    for (const re of patterns) assert.match(e.message, re);
    assert.deepEqual(e.toJSON().code, code);
    return e;
  }
  assert.fail(`expected ${code}, but the import succeeded`);
}

/** Resolves with the engine error a promise rejects with (fails if it resolves). */
export async function engineRejection(p: Promise<unknown>): Promise<EngineRequestError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof EngineRequestError, `an EngineRequestError, got ${e}`);
    return e;
  }
  assert.fail('expected a rejection');
}
