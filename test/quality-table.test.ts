// scripts/quality-table.mjs: the tables of docs/quality.md, merged from reports measured in parts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../scripts/quality-table.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'folio-quality-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const row = (method: string, budget: number, accuracy: number) => ({ method, budget, accuracy });
const report = (name: string, rows: object[], questionAware = false) => {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify({ suite: 'niah', settings: { question_aware: questionAware }, rows }));
  return file;
};
const table = (...files: string[]) => spawnSync(process.execPath, [script, ...files], { encoding: 'utf8' });

test('reports measured in parts make one table: budgets sorted, methods grouped by scorer, 95% in bold', () => {
  const a = report('a.json', [
    row('full', 1, 0.8),
    row('ada-snapkv-global', 0.1, 0.78),
    row('snapkv', 0.1, 0.4),
    row('ada-kvzip', 0.1, 0.5),
    row('snapkv', 36, 0.2),
  ]);
  const b = report('b.json', [row('pyramidkv', 0.05, 0.3), row('kvzip', 0.1, 0.7), row('ada-snapkv', 0.1, 0.76)]);
  const r = table(a, b);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines[0], '| method | 36 tok | 5% | 10% |');
  assert.equal(lines[2], '| full | 0.80 | 0.80 | 0.80 |');
  assert.deepEqual(
    lines.slice(3).map((l) => l.split(' | ')[0].slice(2)),
    ['snapkv', 'pyramidkv', 'ada-snapkv', 'ada-snapkv-global', 'kvzip', 'ada-kvzip'],
  );
  assert.ok(lines.includes('| snapkv | 0.20 |  | 0.40 |'), r.stdout);
  assert.ok(lines.includes('| ada-snapkv |  |  | **0.76** |'), r.stdout);
  assert.ok(lines.includes('| ada-snapkv-global |  |  | **0.78** |'), r.stdout);
});

test('reports of different settings are not mixed', () => {
  const r = table(report('c.json', [row('full', 1, 0.8)]), report('d.json', [row('full', 1, 0.9)], true));
  assert.equal(r.status, 2);
  assert.match(r.stderr, /d\.json: a niah report \(question-aware\) does not go with/);
});
