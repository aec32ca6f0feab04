#!/usr/bin/env node
// The tables of docs/quality.md from `folio eval --json` reports of one suite: one row per method, one column
// per budget (tokens per head, then ratios, each ascending). Several reports are merged, so a matrix can be
// measured in parts; methods are grouped by scorer, uniform before Ada, flat before pyramid before global.
// niah: the accuracy, in bold where it keeps at least 95% of the full cache's; fidelity: KL(full ‖ method).
//   node scripts/quality-table.mjs REPORT.json [MORE.json ...]
import { readFileSync } from 'node:fs';

const files = process.argv.slice(2);
if (!files.length) {
  console.error('usage: node scripts/quality-table.mjs REPORT.json [MORE.json ...]');
  process.exit(2);
}
const reports = files.map((f) => JSON.parse(readFileSync(f, 'utf8')));
const suite = reports[0].suite;
for (const [i, r] of reports.entries())
  if (r.suite !== suite || r.settings?.question_aware !== reports[0].settings?.question_aware) {
    console.error(
      `${files[i]}: a ${r.suite} report${r.settings?.question_aware ? ' (question-aware)' : ''} does not go with ${files[0]}`,
    );
    process.exit(2);
  }
const all = reports.flatMap((r) => r.rows);
const rows = all.filter((r) => r.method !== 'full');
const full = all.find((r) => r.method === 'full');

const budgets = [...new Set(rows.map((r) => r.budget))].sort((a, b) => (b > 1) - (a > 1) || a - b);
const label = (b) => (b > 1 ? `${b} tok` : `${Math.round(b * 100)}%`);

// [ada-]<scorer>[-pyramid|-global], where pyramidkv is snapkv with the pyramid schedule.
const parts = (m) => {
  const ada = m.startsWith('ada-');
  let rest = ada ? m.slice(4) : m;
  if (rest === 'pyramidkv') rest = 'snapkv-pyramid';
  const [scorer, schedule = 'flat'] = rest.split('-');
  return { scorer, rank: (ada ? 3 : 0) + ['flat', 'pyramid', 'global'].indexOf(schedule) };
};
const methods = [...new Set(rows.map((r) => r.method))];
const scorers = [...new Set(methods.map((m) => parts(m).scorer))];
const key = (m) => scorers.indexOf(parts(m).scorer) * 10 + parts(m).rank;
methods.sort((a, b) => key(a) - key(b));

const cell =
  suite === 'niah'
    ? (r) => {
        const s = r.accuracy.toFixed(2);
        return full && r.accuracy >= 0.95 * full.accuracy ? `**${s}**` : s;
      }
    : (r) => (r.kl < 1e-3 ? r.kl.toExponential(1) : r.kl.toFixed(4));

const lines = [`| method | ${budgets.map(label).join(' | ')} |`, `|---|${budgets.map(() => '---:').join('|')}|`];
if (full && suite === 'niah') lines.push(`| full | ${budgets.map(() => full.accuracy.toFixed(2)).join(' | ')} |`);
for (const method of methods) {
  const of = (b) => rows.find((r) => r.method === method && r.budget === b);
  lines.push(`| ${method} | ${budgets.map((b) => (of(b) ? cell(of(b)) : '')).join(' | ')} |`);
}
console.log(lines.join('\n'));
