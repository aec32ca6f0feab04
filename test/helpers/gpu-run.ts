// Runs test/helpers/gpu-run-child.ts (one model on a GPU library, logits and greedy tokens as JSON) in a
// process of its own, for settings a GPU library reads once per process (its largest allocation).
import { spawnSync } from 'node:child_process';

import { repoRoot } from './shared.ts';

export interface GpuRun {
  status: number | null;
  stderr: string;
  /** The child's report when it succeeded: backend, device, logits at every position, greedy tokens. */
  out: {
    backend: string;
    device: { maxAllocationBytes: number } & Record<string, unknown>;
    logits: number[];
    tokens: number[];
  } | null;
}

/** `model` on the GPU library `library` (FOLIO_GPU_LIBRARY), with `env` added to the child's environment. */
export function runOnGpu(library: string, model: string, env: Record<string, string> = {}): GpuRun {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/helpers/gpu-run-child.ts', model], {
    cwd: repoRoot,
    env: { ...process.env, FOLIO_GPU_LIBRARY: library, ...env },
    encoding: 'utf8',
    timeout: 300_000,
  });
  return { status: r.status, stderr: r.stderr, out: r.status === 0 ? JSON.parse(r.stdout) : null };
}
