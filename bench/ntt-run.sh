#!/usr/bin/env bash
# ntt-run.sh: the NTT comparison on the GPU machine, in one go: builds the
# hand-written CUDA baseline with nvcc (bench/baselines/ntt_cuda.cu: its own
# check against the SPEC loops, the product-rate and copy floors, the NTT
# table) and runs it, then fhjit's ntt_bench (same table, results checked
# against the interpreter). Both tables are printed last.
#
#   bench/ntt-run.sh BUILD OUT
#
# BUILD: a build tree with bench/ntt_bench and libfhjit (scripts/build-device.sh);
# OUT: a directory for ntt_cuda (the binary), ntt_cuda.log, ntt_bench.log, and
# the raw results ntt_cuda.json, ntt_bench.json and run.json (for
# bench/results/<date>-<commit>/ and bench/plot.py).
set -u
if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD OUT" >&2
  exit 2
fi
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" || exit 2
OUT=$(cd "$2" && pwd)
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
STATUS=0
bash "$REPO/bench/run-info.sh" "$BUILD" "$OUT/run.json" bench/ntt-run.sh "$@"
if "$NVCC" -O3 -std=c++17 -arch=sm_90 -o "$OUT/ntt_cuda" "$REPO/bench/baselines/ntt_cuda.cu" \
    >"$OUT/ntt_cuda.build.log" 2>&1; then
  timeout 300 "$OUT/ntt_cuda" --json "$OUT/ntt_cuda.json" >"$OUT/ntt_cuda.log" 2>&1 || STATUS=1
else
  echo "nvcc failed (see $OUT/ntt_cuda.build.log)" >"$OUT/ntt_cuda.log"
  STATUS=1
fi
LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout 300 \
  "$BUILD/bench/ntt_bench" --json "$OUT/ntt_bench.json" >"$OUT/ntt_bench.log" 2>&1 || STATUS=1
echo "== CUDA baseline (bench/baselines/ntt_cuda.cu)"
cat "$OUT/ntt_cuda.log"
echo "== fhjit (bench/ntt_bench.c)"
cat "$OUT/ntt_bench.log"
exit $STATUS
