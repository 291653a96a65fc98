#!/usr/bin/env bash
# s7-run.sh: issue 16's figures on the GPU machine, in one go: the floors of
# this run (the CUDA baseline's copy bandwidth and product rates,
# bench/baselines/ntt_cuda.cu --floors, built with nvcc), then s7_bench
# (SPEC section 7's ops at N = 2^16 on its benchmark sets, checked against
# the interpreter, beside those floors and the same work as separate
# graphs), then ckks_bench (issue 17's whole CKKS operations the same way).
#
#   bench/s7-run.sh BUILD OUT [s7_bench options...]
#
# S7_PROGRAMS (environment): which of "s7_bench ckks_bench" to run (unset: both;
# empty: neither, the floors only).
# BUILD: a build tree with bench/s7_bench and libfhjit (scripts/build-device.sh);
# OUT: floors.json, s7_bench.json, ckks_bench.json, run.json and the logs. Options after OUT
# go to s7_bench (e.g. --sweep-bconv: the conversion kernel under each
# bconv_plan, docs/section7.md "Tuning").
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD OUT [s7_bench options...]" >&2
  exit 2
fi
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" || exit 2
OUT=$(cd "$2" && pwd)
shift 2
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
STATUS=0
bash "$REPO/bench/run-info.sh" "$BUILD" "$OUT/run.json" bench/s7-run.sh "$BUILD" "$OUT" "$@"
if "$NVCC" -O3 -std=c++17 -arch=sm_90 -o "$OUT/ntt_cuda" "$REPO/bench/baselines/ntt_cuda.cu" \
    >"$OUT/ntt_cuda.build.log" 2>&1; then
  timeout 120 "$OUT/ntt_cuda" --floors --json "$OUT/floors.json" >"$OUT/floors.log" 2>&1 || STATUS=1
else
  echo "nvcc failed (see $OUT/ntt_cuda.build.log)" >"$OUT/floors.log"
  STATUS=1
fi
cat "$OUT/floors.log"
for prog in ${S7_PROGRAMS-s7_bench ckks_bench}; do
  opts=()
  [ "$prog" = s7_bench ] && opts=("$@")
  LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout 400 \
    "$BUILD/bench/$prog" --floors "$OUT/floors.json" --json "$OUT/$prog.json" "${opts[@]}" \
    2>&1 | tee "$OUT/$prog.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || STATUS=1
done
exit $STATUS
