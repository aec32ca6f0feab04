// The bounded GGUF metadata fuzzer of `npm test` (issue 14 item 6): 20,000 structured mutants (types,
// lengths, counts, offsets; test/helpers/gguf-mutator.ts) of two generated models and stories260K, each put
// through readGguf, loadModel + info() + tokenize, openVocab and the TS header reader + summary in a child
// process with capped memory (test/helpers/gguf-fuzz-run.ts). None may crash, hang, take over 2 s, allocate
// past the cap, fail without an error code, or leave the engine and the models page disagreeing on a
// wrong-typed key. About a minute on two cores; `npm run fuzz` runs long ones (docs/fuzzing.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';

import { runGgufFuzz } from './helpers/gguf-fuzz-run.ts';

const MUTANTS = Number(process.env.FOLIO_GGUF_FUZZ_MUTANTS ?? 20_000);

test(`${MUTANTS} GGUF mutants: no crash, hang, unbounded allocation or disagreement`, {
  timeout: 600_000,
}, async (t) => {
  const report = await runGgufFuzz({ iterations: MUTANTS, seed: 14, chunk: MUTANTS });
  t.diagnostic(
    `${report.mutants} mutants of ${report.corpus.join(', ')} in ${report.seconds.toFixed(1)} s, ` +
      `peak RSS ${(report.peakRssBytes / 2 ** 20).toFixed(0)} MiB, slowest ${report.slowestMs.toFixed(0)} ms`,
  );
  const shown = report.failures
    .slice(0, 5)
    .map((f) => `mutant ${f.index} (${f.ops.join('; ')}), kept as ${f.kept}: ${f.failures.join(' | ')}`);
  assert.equal(
    report.failures.length,
    0,
    `${report.failures.length} failures (${report.crashes} crashes, ${report.hangs} hangs):\n${shown.join('\n')}`,
  );
  rmSync(report.keepDir, { recursive: true, force: true });
  assert.equal(report.mutants, MUTANTS);
  // the mutants reach every stage: refused while parsing, refused for a wrong-typed key, and loaded
  assert.ok((report.classes['read:GGUF_BAD_LENGTH'] ?? 0) > 0);
  assert.ok((report.classes['load:GGUF_TYPE'] ?? 0) > MUTANTS / 20, JSON.stringify(report.classes));
  assert.ok((report.classes['load:GGUF_VALUE'] ?? 0) > MUTANTS / 100, JSON.stringify(report.classes));
  assert.ok((report.classes['load:ok'] ?? 0) > MUTANTS / 50, JSON.stringify(report.classes));
  assert.ok(report.peakRssBytes < 1 << 30);
});
