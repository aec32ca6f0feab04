#!/usr/bin/env bash
# Builds the oracle (oracle.cc) against a built ik_llama.cpp and writes test/data/oracle/<case>.json for
# every case of test/helpers/oracle-cases.ts: the reference engine's logits and greedy tokens on the same
# random-weight models the test writes. Run from anywhere:
#   native/tools/oracle/make-dumps.sh IK_LLAMA_DIR    (a checkout of ik_llama.cpp built in IK_LLAMA_DIR/build;
#   docs/benchmarks.md, "Against the fastest CPU engine", says how)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
ik="${1:?usage: make-dumps.sh IK_LLAMA_DIR (an ik_llama.cpp checkout built in IK_LLAMA_DIR/build)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

libllama="$(find "$ik/build" -name libllama.so | head -1)"
libggml="$(find "$ik/build" -name libggml.so | head -1)"
[ -n "$libllama" ] && [ -n "$libggml" ] || { echo "no libllama.so / libggml.so under $ik/build" >&2; exit 1; }
g++ -std=c++17 -O2 -I"$ik/include" -I"$ik/ggml/include" "$here/oracle.cc" -o "$work/oracle" \
  "$libllama" "$libggml" -Wl,-rpath,"$(dirname "$libllama")":"$(dirname "$libggml")"
(cd "$ik" && git rev-parse HEAD 2>/dev/null || echo unknown) > "$work/ik-commit"

mkdir -p "$root/test/data/oracle"
cd "$root"
node --import tsx "$here/write-models.ts" "$work" | while read -r name path n_ctx n_greedy positions tokens; do
  sha="$(sha256sum "$path" | cut -d' ' -f1)"
  "$work/oracle" "$path" "$n_ctx" "$n_greedy" "$positions" "$tokens" 2>"$work/$name.log" > "$work/$name.json" ||
    { cat "$work/$name.log" >&2; exit 1; }
  # the file's name without the temporary folder, the engine's commit and the model file's hash added
  sed "s|\"model\": \"$work/|\"model\": \"|; s|^{|{\n  \"engine\": \"ik_llama.cpp $(cat "$work/ik-commit")\",\n  \"model_sha256\": \"$sha\",|" \
    "$work/$name.json" > "test/data/oracle/$name.json"
  echo "wrote test/data/oracle/$name.json"
done
