#!/usr/bin/env bash
# The CUDA backend's one-shot check on a machine with an NVIDIA GPU (and CUDA, CMake, Ninja; no Node
# needed): builds libfolio-cuda and the checks, runs the GPU backend's op tests (backend-ops), the end
# to end check against the CPU and llama.cpp's greedy tokens (gpu-check e2e), and the benchmark on 1B- and
# 8B-shaped random models (gpu-check bench). Planned to finish in under 8 minutes on an H200.
#
#   native/tools/gpu-check.sh prepare [DIR]   here, where ../shared is: copies stories260K and the
#                                             reference's tokens into DIR (default .gpu-data, which git
#                                             ignores through .git/info/exclude), to carry along
#   native/tools/gpu-check.sh run [DIR]       there, from the repository root; logs go to $OUT if set
set -uo pipefail
mode=${1:-run}
data=${2:-.gpu-data}
root=$(cd "$(dirname "$0")/../.." && pwd)

if [ "$mode" = prepare ]; then
  shared=${FOLIO_TEST_MODELS:-$root/../shared/models}
  ref=$(dirname "$shared")/reference/stories260K
  mkdir -p "$data"
  cp "$shared/stories260K.gguf" "$data/"
  grep -qx '/.gpu-data/' "$root/.git/info/exclude" 2>/dev/null || echo '/.gpu-data/' >>"$root/.git/info/exclude"
  # "name: prompt ids" then "name greedy: llama.cpp's greedy ids", for each reference case
  node -e '
    const fs = require("fs"), path = require("path"), dir = process.argv[1];
    const index = JSON.parse(fs.readFileSync(path.join(dir, "index.json"), "utf8"));
    for (const c of index.cases) {
      const r = JSON.parse(fs.readFileSync(path.join(dir, c.file), "utf8"));
      console.log(`${r.name}: ${r.tokens.join(" ")}`);
      console.log(`${r.name} greedy: ${r.greedy.tokens.join(" ")}`);
    }' "$ref" >"$data/expect.txt"
  echo "prepared $data: $(ls "$data" | tr '\n' ' ')"
  exit 0
fi

scratch=$(mktemp -d -t folio-gpu-check.XXXXXX)  # the build and the benchmark models
out=${OUT:-$scratch/out}
mkdir -p "$out"
build=$scratch/build
status=0
step() { echo; echo "=== $* ($(date +%T))"; }

step "build libfolio-cuda (sm_90 + PTX) and the checks"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
cmake -S "$root/native" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFOLIO_CUDA=ON -DFOLIO_CUDA_ARCHS=90 >"$out/cmake.log" 2>&1 &&
  cmake --build "$build" -j "$(nproc)" --target folio-cuda backend-ops gpu-check make-random-model 2>&1 | tee "$out/build.log" | tail -5
if [ ! -f "$build/libfolio-cuda.so" ]; then echo "build failed"; tail -40 "$out/build.log"; exit 1; fi
export FOLIO_GPU_LIBRARY="$build/libfolio-cuda.so"

if "$build/gpu-check" e2e --model /dev/null | grep -q '^gpu-check: SKIP'; then
  "$build/gpu-check" e2e --model /dev/null
  echo "no usable GPU here: the build is all this machine can check"
  exit 2
fi

step "op tests: every GPU operation against the references on random inputs (backend-ops --backend gpu)"
timeout 120 "$build/backend-ops" --backend gpu 2>&1 | tee "$out/backend-ops.log" | grep -v '  OK$' | tail -60 || status=1
grep -q ' 0 failed' "$out/backend-ops.log" || status=1

step "end to end: stories260K on the GPU against the CPU and llama.cpp"
timeout 120 "$build/gpu-check" e2e --model "$data/stories260K.gguf" --expect "$data/expect.txt" 2>&1 | tee "$out/e2e.log" || status=1
grep -q 'e2e: 0 failed' "$out/e2e.log" || status=1

step "benchmark: 1B shape, Q4_K_M"
"$build/make-random-model" --out "$scratch/llama-1b-q4_k_m.gguf" --shape 1b --type q4_k_m --threads "$(nproc)" >>"$out/make-models.log" 2>&1 &&
  timeout 150 "$build/gpu-check" bench --model "$scratch/llama-1b-q4_k_m.gguf" --long 16384 2>&1 | tee "$out/bench-1b.log"

step "benchmark: 8B shape, Q4_K_M"
"$build/make-random-model" --out "$scratch/llama-8b-q4_k_m.gguf" --shape 8b --type q4_k_m --threads "$(nproc)" >>"$out/make-models.log" 2>&1 &&
  timeout 150 "$build/gpu-check" bench --model "$scratch/llama-8b-q4_k_m.gguf" --long 4096 --repeats 2 2>&1 | tee "$out/bench-8b.log"

step "memory checks: compute-sanitizer over the op suite's non-matmul ops (where the runtime allows it)"
if command -v compute-sanitizer >/dev/null; then
  timeout 150 compute-sanitizer --tool memcheck --print-limit 20 "$build/backend-ops" --backend gpu \
    --op get_rows,rms_norm,rope,swiglu,add,add_bias,kv,attention,window_scores,topk_per_head,top_tokens \
    >"$out/memcheck.log" 2>&1
  grep -E 'ERROR SUMMARY|Invalid|out of bounds|backend-ops: [0-9]+ passed' "$out/memcheck.log" | head -20
else
  echo "compute-sanitizer is not on the PATH"
fi

step "done: $([ $status = 0 ] && echo PASSED || echo FAILED)"
exit $status
