// Runs the test suite with node's test runner. Node 20 expands no globs, so the files are listed here:
// every *.test.ts under test/ (not under test/e2e, which has its own runner).
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const files = [];
(function walk(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const p = join(dir, e.name);
    if (e.isDirectory() && e.name !== 'e2e' && e.name !== 'helpers') walk(p);
    else if (e.isFile() && e.name.endsWith('.test.ts')) files.push(relative(root, p));
  }
})(join(root, 'test'));

const filter = process.argv.slice(2);
const selected = filter.length ? files.filter((f) => filter.some((x) => f.includes(x))) : files;
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...selected], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(r.status ?? 1);
