// folio bench-set: what a chat over a set of stored documents costs (issue 41; a benchmark, never a test).
//   - opening a chat over 1, 5 and 10 stored documents: their saved caches placed side by side in a new session
//     (appendSaved, as chat-set.ts does), in ms, and the bytes of the files loaded;
//   - the memory of the assembled session against the sum of the documents' kept caches;
//   - decode speed over the assembled set against one document of about the same kept size (the set's text
//     read as one document and compressed at the same budget), side by side.
// The documents are read and saved once, up front (that is the import's cost, not the chat's). Without --model it
// uses the 1B Q4_K_M file of `folio bench` (bench-models/, made if missing).
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadAddon } from '../../engine/binding.ts';
import { type Command, type Values, budgetValue, int, mib, print, str, UsageError } from '../args.ts';
import { benchDocumentFlags, defaultModel, document, median } from './bench-kv.ts';

interface OpenRow {
  documents: number;
  median_ms: number;
  runs_ms: number[];
  bytes_loaded: number;
  kv_bytes: number;
  kept_bytes_sum: number;
  positions: number;
}

export const benchSet: Command = {
  summary: 'a chat over stored documents: opening it over 1, 5 and 10, its memory, decoding over the set',
  usage:
    'folio bench-set [--model M] [--doc-tokens 1024] [--sets 1,5,10] [--budget 0.2] [--gen-tokens 32] [--repeats 3]\n' +
    '                [--threads N] [--json]',
  options: { ...benchDocumentFlags, sets: { type: 'string' } },
  async run(v: Values) {
    const threads = int(v, 'threads', 0);
    const docTokens = int(v, 'doc-tokens', 1024, 64);
    const budget = budgetValue(str(v, 'budget') ?? '0.2');
    const genTokens = int(v, 'gen-tokens', 32, 1);
    const repeats = int(v, 'repeats', 3, 1);
    const sets = (str(v, 'sets') ?? '1,5,10').split(',').map((x) => {
      const n = Number(x);
      if (!Number.isInteger(n) || n < 1) throw new UsageError(`--sets: '${x}' is not a number of documents`);
      return n;
    });
    const most = Math.max(...sets);
    const path = str(v, 'model') ?? defaultModel();
    const model = await loadAddon().loadModel(path);
    const log = (s: string) => {
      if (!v.json) process.stderr.write(s + '\n');
    };
    const nCtx = most * docTokens + 64;
    const dir = mkdtempSync(join(tmpdir(), 'folio-bench-set-'));
    try {
      // The stored documents: each its own text (another stretch of the pseudo-random ids), read and saved once.
      const text = document(model, most * docTokens + 1);
      const docs: { path: string; bytes: number; kept: number }[] = [];
      for (let i = 0; i < most; i++) {
        const tokens = new Int32Array(docTokens);
        tokens[0] = text[0];
        tokens.set(text.subarray(1 + i * (docTokens - 1), 1 + (i + 1) * (docTokens - 1)), 1);
        const s = model.createSession({ nCtx: docTokens + 64, nThreads: threads });
        const r = await s.compress(tokens, { method: 'ada-snapkv', budget });
        const file = join(dir, `${i}.folio-kv`);
        await s.save(file);
        s.dispose();
        docs.push({ path: file, bytes: statSync(file).size, kept: r.stats.kvBytesKept });
        log(`  document ${i + 1}: ${docTokens} tokens, kept ${mib(r.stats.kvBytesKept)}`);
      }
      log(`${path}: ${most} documents of ${docTokens} tokens at budget ${budget}, backend ${model.info().backend}`);

      /** A chat's session over the first n documents: the first whole, each next after its BOS, then closed as
       * the app closes a set (reselect keeping all: it counts them and gives back the room appending reserved
       * ahead); and each one's positions ([from, to) pairs back to back). */
      const spans: number[] = [];
      const assemble = async (n: number) => {
        const s = model.createSession({ nCtx, nThreads: threads });
        spans.length = 0;
        for (let i = 0; i < n; i++) {
          const start = s.nPast;
          spans.push(start, (await s.appendSaved(docs[i].path, { from: i === 0 ? 0 : 1 })).nPast);
        }
        s.reselect(spans, { keep: 1 });
        return s;
      };
      const open: OpenRow[] = [];
      for (const n of sets) {
        const runs: number[] = [];
        let kvBytes = 0,
          positions = 0;
        for (let r = 0; r < repeats; r++) {
          const t0 = performance.now();
          const s = await assemble(n);
          runs.push(performance.now() - t0);
          kvBytes = s.memory().bytesUsed;
          positions = s.nPast;
          s.dispose();
        }
        const row: OpenRow = {
          documents: n,
          median_ms: median(runs),
          runs_ms: runs,
          bytes_loaded: docs.slice(0, n).reduce((a, d) => a + d.bytes, 0),
          kv_bytes: kvBytes,
          kept_bytes_sum: docs.slice(0, n).reduce((a, d) => a + d.kept, 0),
          positions,
        };
        open.push(row);
        log(
          `  open over ${n}: ${row.median_ms.toFixed(0)} ms, ${mib(row.bytes_loaded)} loaded, cache ${mib(row.kv_bytes)} (kept caches ${mib(row.kept_bytes_sum)})`,
        );
      }

      // One budget over the largest set (half of what the reads chose, Ada within each layer): how long the
      // re-selection takes, and the cache after it.
      const reselectRuns: number[] = [];
      let reselectBytes = 0;
      for (let r = 0; r < repeats; r++) {
        const s = await assemble(most);
        const t0 = performance.now();
        s.reselect(spans, { keep: 0.5, alpha: 0.2 });
        reselectRuns.push(performance.now() - t0);
        reselectBytes = s.memory().bytesUsed;
        s.dispose();
      }
      const oneBudget = { keep: 0.5, median_ms: median(reselectRuns), runs_ms: reselectRuns, kv_bytes: reselectBytes };
      log(`  one budget over ${most}: ${oneBudget.median_ms.toFixed(0)} ms, cache ${mib(reselectBytes)}`);

      // Decode over the assembled set and over one document of about its kept size, interleaved.
      const one = model.createSession({ nCtx, nThreads: threads });
      const oneStats = (
        await one.compress(text.subarray(0, most * (docTokens - 1) + 1), { method: 'ada-snapkv', budget })
      ).stats;
      await one.save(join(dir, 'one.folio-kv'));
      one.dispose();
      const rates = { set: [] as number[], one: [] as number[] };
      for (let r = 0; r < repeats; r++) {
        const set = await assemble(most);
        await set.prefill(text.subarray(1, 2));
        rates.set.push((await set.generate({ n: genTokens, temperature: 0 })).tokensPerSecond);
        set.dispose();
        const single = (await model.loadSession(join(dir, 'one.folio-kv'), { nCtx, nThreads: threads })).session;
        await single.prefill(text.subarray(1, 2));
        rates.one.push((await single.generate({ n: genTokens, temperature: 0 })).tokensPerSecond);
        single.dispose();
      }
      const decode = {
        set_tokens_per_s: median(rates.set),
        one_tokens_per_s: median(rates.one),
        set_kept_bytes: open.find((o) => o.documents === most)?.kv_bytes ?? 0,
        one_kept_bytes: oneStats.kvBytesKept,
      };
      const info = model.info();
      model.dispose();
      print(
        v,
        {
          model: path,
          name: info.name,
          backend: info.backend,
          threads,
          doc_tokens: docTokens,
          budget,
          open,
          one_budget: oneBudget,
          decode,
        },
        open
          .map(
            (o) =>
              `open a chat over ${o.documents} stored ${o.documents === 1 ? 'document' : 'documents'}: ${o.median_ms.toFixed(0)} ms ` +
              `(median of ${repeats}), ${mib(o.bytes_loaded)} loaded; the session's cache ${mib(o.kv_bytes)}, the kept caches' sum ${mib(o.kept_bytes_sum)}\n`,
          )
          .join('') +
          `one budget over the ${most} (keep half of what the reads chose): ${oneBudget.median_ms.toFixed(0)} ms, the cache ` +
          `${mib(open.find((o) => o.documents === most)?.kv_bytes ?? 0)} → ${mib(oneBudget.kv_bytes)}\n` +
          `decode over the ${most} documents assembled: ${decode.set_tokens_per_s.toFixed(1)} t/s (cache ${mib(decode.set_kept_bytes)}); ` +
          `over one document of ${most * (docTokens - 1) + 1} tokens at the same budget: ${decode.one_tokens_per_s.toFixed(1)} t/s (cache ${mib(decode.one_kept_bytes)})\n`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
