#!/usr/bin/env node
// The tables of docs/quality.md from a `folio eval --json` report: one row per method, one column per budget,
// in the report's order. niah: the accuracy, in bold where it keeps at least 95% of the full cache's;
// fidelity: KL(full ‖ method).
//   node scripts/quality-table.mjs REPORT.json
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) {
  console.error('usage: node scripts/quality-table.mjs REPORT.json');
  process.exit(2);
}
const report = JSON.parse(readFileSync(file, 'utf8'));
const rows = report.rows.filter((r) => r.method !== 'full');
const budgets = [...new Set(rows.map((r) => r.budget))];
const label = (b) => (b > 1 ? `${b} tok` : `${Math.round(b * 100)}%`);
const full = report.rows.find((r) => r.method === 'full');

const cell =
  report.suite === 'niah'
    ? (r) => {
        const s = r.accuracy.toFixed(2);
        return full && r.accuracy >= 0.95 * full.accuracy ? `**${s}**` : s;
      }
    : (r) => (r.kl < 1e-3 ? r.kl.toExponential(1) : r.kl.toFixed(4));

const lines = [`| method | ${budgets.map(label).join(' | ')} |`, `|---|${budgets.map(() => '---:').join('|')}|`];
if (full && report.suite === 'niah')
  lines.push(`| full | ${budgets.map(() => full.accuracy.toFixed(2)).join(' | ')} |`);
for (const method of [...new Set(rows.map((r) => r.method))]) {
  const of = (b) => rows.find((r) => r.method === method && r.budget === b);
  lines.push(`| ${method} | ${budgets.map((b) => (of(b) ? cell(of(b)) : '')).join(' | ')} |`);
}
console.log(lines.join('\n'));
