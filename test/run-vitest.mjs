// Runs the renderer's component and unit tests (vitest + jsdom, renderer/vitest.config.ts) and prints one
// plain summary line, `vitest: N passed, N failed, N skipped`, from vitest's JSON report; exits non-zero
// when a test failed or vitest itself did. Extra arguments go to vitest (e.g. a file filter).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'folio-vitest-'));
const report = join(dir, 'vitest.json');
const vitest = join(root, 'node_modules/vitest/vitest.mjs');

const r = spawnSync(
  process.execPath,
  [
    vitest,
    'run',
    '--config',
    'renderer/vitest.config.ts',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${report}`,
    ...process.argv.slice(2),
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, FORCE_COLOR: process.env.FORCE_COLOR ?? '0' } },
);

let code = r.status ?? 1;
if (existsSync(report)) {
  const j = JSON.parse(readFileSync(report, 'utf8'));
  const skipped = (j.numPendingTests ?? 0) + (j.numTodoTests ?? 0);
  console.log(`vitest: ${j.numPassedTests} passed, ${j.numFailedTests} failed, ${skipped} skipped`);
  if (j.numFailedTests > 0 || j.numFailedTestSuites > 0) code = code || 1;
} else {
  console.log('vitest: 0 passed, 0 failed, 0 skipped (no report: vitest did not run)');
  code = code || 1;
}
rmSync(dir, { recursive: true, force: true });
process.exit(code);
