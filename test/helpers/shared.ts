// Where tests find the shared models and llama.cpp's reference outputs. One setting, FOLIO_TEST_MODELS
// (default ../shared/models, relative to the repository root); the reference outputs sit beside it in
// ../reference. Tests that need a missing file skip with a message saying what is needed and where it
// comes from, and everything else still runs.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));

export function sharedModelsDir(): string {
  return resolve(repoRoot, process.env.FOLIO_TEST_MODELS ?? '../shared/models');
}

export function sharedReferenceDir(): string {
  return join(dirname(sharedModelsDir()), 'reference');
}

/** Path of a file under the shared models folder. */
export function sharedModel(name: string): string {
  return join(sharedModelsDir(), name);
}

/** Path of a file under the shared reference folder. */
export function sharedReference(name: string): string {
  return join(sharedReferenceDir(), name);
}

/**
 * For node:test's `skip` option: false when every path exists, otherwise a message naming the missing
 * file and where it comes from.
 */
export function missing(...paths: string[]): string | false {
  const absent = paths.filter((p) => !existsSync(p));
  if (absent.length === 0) return false;
  return (
    `needs ${absent.join(', ')}: the shared test models and llama.cpp reference outputs ` +
    `(see ../shared/models/README.md and ../shared/reference/README.md); set FOLIO_TEST_MODELS to the models folder`
  );
}
