// The pieces of KV compression (docs/compression.md) one by one, on small cases worked out by hand, and their
// properties over random scores.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { loadAddon, type EngineError } from '../electron/engine/binding.ts';

const { kv } = loadAddon();
const f32 = (a: number[]) => Float32Array.from(a);
const close = (a: ArrayLike<number>, b: number[], tol = 1e-6) => {
  assert.equal(a.length, b.length);
  for (let i = 0; i < b.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol, `[${i}] ${a[i]} vs ${b[i]}`);
};

test('max-pooling: stride 1, padding that never wins', () => {
  const x = f32([1, 3, 2, 0, 5, 0, 0, 0]);
  close(kv.maxPool(x, 1), [1, 3, 2, 0, 5, 0, 0, 0]);
  close(kv.maxPool(x, 3), [3, 3, 3, 5, 5, 5, 0, 0]);
  close(kv.maxPool(x, 7), [3, 5, 5, 5, 5, 5, 5, 5]);
  // all negative: zero padding would win at the edges, -inf padding does not
  close(kv.maxPool(f32([-1, -2, -3]), 3), [-1, -1, -2]);
  close(kv.maxPool(f32([-4]), 7), [-4]);
});

test('window scores: softmax over all keys, causal inside the window, window mean, GQA mean, then pooling', () => {
  // 2 query heads sharing 1 KV head, head_dim 1, 4 keys k = 0, 1, 2, 3, a window of 2 queries.
  // Head 0 has q = 0: uniform attention. Head 1 has q = ln 2: weights 2^k.
  const ln2 = Math.log(2);
  const qw = f32([0, ln2, 0, ln2]); // [window query i][head h]
  const keys = [f32([0, 1, 2, 3])];
  const r = kv.windowScores(qw, keys, { nHead: 2, nHeadKv: 1, headDim: 1, L: 4, w: 2, kernel: 1 });
  // Query 0 sits at position 2 and sees keys 0..2; query 1 at position 3 sees all four.
  const head0 = [(1 / 3 + 1 / 4) / 2, (1 / 3 + 1 / 4) / 2, (1 / 3 + 1 / 4) / 2, (0 + 1 / 4) / 2];
  const head1 = [(1 / 7 + 1 / 15) / 2, (2 / 7 + 2 / 15) / 2, (4 / 7 + 4 / 15) / 2, (0 + 8 / 15) / 2];
  const mean = head0.map((v, j) => (v + head1[j]) / 2);
  close(r.attn[0], mean);
  close(r.score[0], mean.slice(0, 2)); // only the prefix tokens before the window are scored
  assert.ok(Math.abs(r.attn[0].reduce((a, b) => a + b, 0) - 1) < 1e-6, 'Ā is a distribution');
  // The group mean is taken before pooling: pooled(mean) is not the mean of the pooled heads.
  const pooled = kv.windowScores(qw, keys, { nHead: 2, nHeadKv: 1, headDim: 1, L: 4, w: 2, kernel: 3 });
  close(pooled.score[0], [Math.max(mean[0], mean[1]), Math.max(mean[0], mean[1])]);
});

test('window scores: the scale is 1/sqrt(head_dim) and each KV head reads its own keys', () => {
  // head_dim 4, q = (1,1,1,1), keys (t,t,t,t): logit = 4t/2 = 2t. Two KV heads, one query head each.
  const qw = f32([1, 1, 1, 1, 0, 0, 0, 0]); // one window query: head 0 = ones, head 1 = zeros
  const k = (ts: number[]) => f32(ts.flatMap((t) => [t, t, t, t]));
  const r = kv.windowScores(qw, [k([0, 1, 0]), k([5, 5, 5])], {
    nHead: 2,
    nHeadKv: 2,
    headDim: 4,
    L: 3,
    w: 1,
    kernel: 1,
  });
  const z = 1 + Math.exp(2) + 1;
  close(r.attn[0], [1 / z, Math.exp(2) / z, 1 / z]);
  close(r.attn[1], [1 / 3, 1 / 3, 1 / 3]);
});

test('top tokens: the best by score, ties to the lower index, returned in position order', () => {
  assert.deepEqual(kv.topTokens(f32([0.5, 0.9, 0.5, 0.1, 0.9]), 3), [0, 1, 4]);
  assert.deepEqual(kv.topTokens(f32([1, 1, 1, 1]), 2), [0, 1]);
  assert.deepEqual(kv.topTokens(f32([3, 2, 1]), 0), []);
  assert.deepEqual(kv.topTokens(f32([3, 2, 1]), 3), [0, 1, 2]);
});

test('ada allocation: global top-k counts, the alpha blend, exact largest-remainder rounding', () => {
  // Each head wins 2 of the global top 4.
  assert.deepEqual(kv.adaCaps([f32([0.9, 0.8, 0.1, 0]), f32([0.5, 0.4, 0.3, 0.2])], 2, 0.2), [2, 2]);
  // Head 0 wins all 4 of the global top 4.
  const skewed = [f32([0.9, 0.8, 0.7, 0.6]), f32([0.1, 0.1, 0.1, 0.1])];
  assert.deepEqual(kv.adaCaps(skewed, 2, 0), [4, 0]);
  assert.deepEqual(kv.adaCaps(skewed, 2, 0.2), [4, 0]); // floor(0.2·2) = 0: the safeguard gives nothing
  assert.deepEqual(kv.adaCaps(skewed, 2, 0.5), [3, 1]); // floor(0.5·2) = 1 each, the other 2 go to head 0
  assert.deepEqual(kv.adaCaps(skewed, 2, 1), [2, 2]); // alpha 1 is uniform
  // Three heads win 5, 3 and 1 of the top 9; b = 3, alpha 0.5: floor(1.5) = 1 each, the remaining
  // 3·(3 − 1) = 6 split 6·5/9 = 3.33, 6·3/9 = 2, 6·1/9 = 0.67 -> floors 3, 2, 0 and the missing one goes
  // to the largest remainder (head 2): caps 1+3, 1+2, 1+1.
  const three = [f32([10, 9, 8, 7, 6]), f32([5.5, 5.4, 5.3, 0, 0]), f32([5.2, 0, 0, 0, 0])];
  assert.deepEqual(kv.adaCaps(three, 3, 0.5), [4, 3, 2]);
  assert.deepEqual(kv.adaCaps(three, 3, 0), [5, 3, 1]);
  // Equal scores across heads: the lower token index wins, then the lower head.
  assert.deepEqual(kv.adaCaps([f32([1, 0, 0]), f32([1, 1, 0])], 1, 0), [1, 1]);
  assert.deepEqual(kv.adaCaps([f32([0, 1, 0]), f32([1, 0, 0])], 1, 0), [1, 1]);
  assert.deepEqual(kv.adaCaps([f32([1, 1, 1]), f32([1, 1, 1])], 1, 0), [1, 1]);
  // top 3 of (score, index, head): (1, 0, h0), (1, 0, h1), (1, 1, h0)
  assert.deepEqual(kv.adaCaps([f32([1, 1]), f32([1, 0]), f32([0, 0])], 1, 0), [2, 1, 0]);
});

test('pyramid schedule: linear from 2b − b/beta down to b/beta, exact total, capped by the prefix', () => {
  // mn = 100/20 = 5, mx = 195; the exact line is 195, 147.5, 100, 52.5, 5: the two halves go by largest
  // remainder to the earlier layer, so the total is exactly 5·100 (the public code's floored step gives
  // 195, 148, 101, 54, 7 = 505).
  assert.deepEqual(kv.pyramidSchedule(100, 1000, 5, 20), [195, 148, 100, 52, 5]);
  // When the step divides evenly the public formula is reproduced: mn = 4, mx = 124, step 40.
  assert.deepEqual(kv.pyramidSchedule(64, 1000, 4, 16), [124, 84, 44, 4]);
  // mx = 195 exceeds the 150 selectable tokens: mx = 150, mn = 2·100 − 150 = 50.
  assert.deepEqual(kv.pyramidSchedule(100, 150, 3, 20), [150, 100, 50]);
  assert.deepEqual(kv.pyramidSchedule(100, 1000, 1, 20), [100]);
  for (const [b, sel, layers, beta] of [
    [7, 50, 6, 20],
    [333, 400, 32, 20],
    [1, 10, 5, 20],
    [50, 60, 7, 3],
  ]) {
    const s = kv.pyramidSchedule(b, sel, layers, beta);
    assert.equal(
      s.reduce((a, x) => a + x, 0),
      layers * b,
      `Σ for ${[b, sel, layers, beta]}`,
    );
    assert.ok(
      s.every((x, i) => x >= 0 && x <= sel && (i === 0 || x <= s[i - 1])),
      `monotone within [0, ${sel}]: ${s}`,
    );
  }
});

test('budgets: ratios, tokens, the clamp and the cases where nothing is compressed', () => {
  assert.deepEqual(kv.resolveBudget({ method: 'snapkv', budget: 0.5 }, 100), {
    compress: true,
    reason: '',
    B: 50,
    b: 18,
    clamped: false,
  });
  assert.deepEqual(kv.resolveBudget({ method: 'snapkv', budget: 0.2 }, 100), {
    compress: true,
    reason: '',
    B: 33,
    b: 1,
    clamped: true,
  });
  assert.deepEqual(kv.resolveBudget({ method: 'snapkv', budget: 40 }, 100), {
    compress: true,
    reason: '',
    B: 40,
    b: 8,
    clamped: false,
  });
  assert.equal(kv.resolveBudget({ method: 'snapkv', budget: 0.5 }, 32).reason, 'prefix within the window');
  assert.equal(kv.resolveBudget({ method: 'snapkv', budget: 200 }, 100).reason, 'budget covers the prefix');
  assert.equal(kv.resolveBudget({ method: 'snapkv', budget: 1 }, 100).reason, 'budget covers the prefix');
  assert.equal(kv.resolveBudget({ method: 'full', budget: 0.1 }, 100).reason, 'full');
  assert.deepEqual(kv.resolveBudget({ method: 'streaming', budget: 8, window: 4 }, 100), {
    compress: true,
    reason: '',
    B: 8,
    b: 4,
    clamped: false,
  });
  assert.throws(
    () => kv.resolveBudget({ method: 'snapkv', budget: 32 }, 100),
    (e: EngineError) => e.code === 'BUDGET_TOO_SMALL' && /window of 32/.test(e.message),
  );
  assert.throws(
    () => kv.resolveBudget({ method: 'h2o' as never, budget: 0.5 }, 100),
    (e: EngineError) => e.code === 'INVALID_METHOD' && /ada-snapkv/.test(e.message),
  );
});

// A small seeded generator for the property tests.
function rng(seed: number) {
  return () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

test("properties over random scores: exact totals, alpha 1 = uniform, alpha 0 retains at least uniform's mass", () => {
  const rand = rng(42);
  for (let trial = 0; trial < 300; trial++) {
    const H = 1 + Math.floor(rand() * 8),
      n = 1 + Math.floor(rand() * 60),
      b = Math.floor(rand() * (n + 1));
    // Attention-like scores: some heads concentrated (a few large values), some spread out; some ties.
    const scores = Array.from({ length: H }, () => {
      const sharp = rand() < 0.5;
      return Float32Array.from({ length: n }, () => (rand() < 0.1 ? 0.25 : sharp ? rand() ** 8 : rand()));
    });
    const alpha = [0, 0.2, 0.5, 1, rand()][trial % 5];
    const caps = kv.adaCaps(scores, b, alpha);
    assert.equal(
      caps.reduce((a, c) => a + c, 0),
      H * b,
      'Σ caps = Hk·b',
    );
    assert.ok(
      caps.every((c) => c >= 0 && c <= n),
      'every cap within the head',
    );
    assert.ok(
      caps.every((c) => c >= Math.floor(alpha * b + 1e-9)),
      'the safeguard floor holds',
    );
    if (alpha === 1) assert.deepEqual(caps, new Array(H).fill(b));
    const mass = (cap: (h: number) => number) =>
      scores.reduce((sum, s, h) => sum + kv.topTokens(s, cap(h)).reduce((a, j) => a + s[j], 0), 0);
    if (alpha === 0)
      assert.ok(mass((h) => caps[h]) >= mass(() => b) - 1e-6, "Theorem 3.3: ada keeps at least uniform's mass");
    for (let h = 0; h < H; h++) {
      const kept = kv.topTokens(scores[h], caps[h]);
      assert.equal(kept.length, caps[h]);
      assert.ok(
        kept.every((j, i) => i === 0 || j > kept[i - 1]),
        'kept tokens in position order',
      );
    }
  }
});
