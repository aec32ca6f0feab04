#!/bin/sh
# Builds ggml-quant-oracle against ggml and regenerates test/data/ggml-quant/*.bin (committed; this is not
# part of Folio's build). The files in the repository were made from ggml-org/ggml commit d99724f
# (2026-08-21), configured and built as:
#   cmake -S GGML_SRC -B GGML_SRC/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
#     -DBUILD_SHARED_LIBS=ON -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF -DGGML_OPENMP=OFF \
#     -DGGML_CPU_REPACK=OFF -DGGML_LLAMAFILE=OFF
#   cmake --build GGML_SRC/build --target ggml-cpu
# Usage: native/tools/oracle/build.sh GGML_SRC   (GGML_SRC/include, GGML_SRC/build/src/libggml*.so)
set -e
SRC=${1:?usage: build.sh GGML_SRC}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
LIB="$SRC/build/src"
OUT=$(mktemp -d)
cc -O1 -std=gnu11 -I"$SRC/include" "$HERE/ggml-quant-oracle.c" -L"$LIB" -lggml-cpu -lggml-base -lm \
  -Wl,-rpath,"$LIB" -o "$OUT/ggml-quant-oracle"
mkdir -p "$REPO/test/data/ggml-quant"
"$OUT/ggml-quant-oracle" "$REPO/test/data/ggml-quant"
rm -rf "$OUT"
