#!/usr/bin/env bash
# fuzz.sh: fuzzes the .fh parser, printer and binder, then the tools' .npy
# reader, the context's tuning options (each accepted value compiling a
# random graph against the interpreter; fuzz_options.c) and the disk
# cache's reader (fuzz_cache.c), each of those three for a fifth of the
# time (at least 10 s), with libFuzzer.
#   ./scripts/fuzz.sh [BUILD_DIR] [SECONDS]
# BUILD_DIR is configured with CC=clang -DFHJIT_FUZZ=ON when missing. The
# corpora grow in BUILD_DIR/fuzz-corpus (seeds: the examples and lit tests)
# BUILD_DIR/fuzz-corpus-npy (seeds: test/fuzz/npy-seeds),
# BUILD_DIR/fuzz-corpus-options (test/fuzz/option-seeds) and
# BUILD_DIR/fuzz-corpus-cache (test/fuzz/cache-seeds).
# Exits non-zero when the fuzzer finds a crash, a leak or a broken property.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/fuzz}
SECONDS_TO_RUN=${2:-600}
if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DFHJIT_FUZZ=ON -DFHJIT_SANITIZE=ON >/dev/null
fi
ninja -C "$BUILD" fuzz_parse fuzz_npy fuzz_options fuzz_cache
mkdir -p "$BUILD/fuzz-corpus"
"$BUILD/test/fuzz/fuzz_parse" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 \
  -dict=test/fuzz/fh.dict -print_final_stats=1 -artifact_prefix="$BUILD/" \
  "$BUILD/fuzz-corpus" examples test/lit/format test/lit/diag test/lit/examples
NPY_SECONDS=$(( SECONDS_TO_RUN / 5 > 10 ? SECONDS_TO_RUN / 5 : 10 ))
mkdir -p "$BUILD/fuzz-corpus-npy"
"$BUILD/test/fuzz/fuzz_npy" -max_total_time="$NPY_SECONDS" -max_len=512 -print_final_stats=1 \
  -artifact_prefix="$BUILD/" "$BUILD/fuzz-corpus-npy" test/fuzz/npy-seeds
mkdir -p "$BUILD/fuzz-corpus-options"
"$BUILD/test/fuzz/fuzz_options" -max_total_time="$NPY_SECONDS" -max_len=200 -print_final_stats=1 \
  -dict=test/fuzz/options.dict -artifact_prefix="$BUILD/" "$BUILD/fuzz-corpus-options" \
  test/fuzz/option-seeds
mkdir -p "$BUILD/fuzz-corpus-cache"
"$BUILD/test/fuzz/fuzz_cache" -max_total_time="$NPY_SECONDS" -max_len=4096 -print_final_stats=1 \
  -artifact_prefix="$BUILD/" "$BUILD/fuzz-corpus-cache" test/fuzz/cache-seeds
