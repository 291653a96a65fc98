#!/usr/bin/env bash
# ntt-round.sh: the NTT part of a GPU round, in one command (shorter than
# device-round.sh, which adds the pointwise benchmarks and Triton): the GPU
# tests, bench/ntt-run.sh (the CUDA baseline, its floors and fhjit's table),
# a sweep of the given plans at N = 2^12 .. 2^17 (NTT_LOGS; r62 x 32 rows, r32 x 64),
# compute-sanitizer memcheck and racecheck on the NTT kernels, and the NTT
# example through fhjit-run --check. Logs packed into OUT/logs.tgz; the raw
# JSON results (ntt_cuda, ntt_bench, ntt_sweep_r62, ntt_sweep_r32, run.json)
# also in OUT/results/, for bench/results/<date>-<commit>/ and bench/plot.py.
#   bench/ntt-round.sh BUILD OUT ['PLAN;PLAN;...' for r62] ['PLAN;...' for r32]
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && OUT=$(cd "$2" && pwd) || exit 2
P62=${3:-}
P32=${4:-}
LOGS=$(mktemp -d /tmp/fhjit-ntt-round-XXXXXX)
export LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
STATUS=0
echo "commit $(cat "$BUILD/COMMIT" 2>/dev/null)"
timeout 200 "$BUILD/test/gpu/fhjit_gpu_test" >"$LOGS/gpu_test.log" 2>&1 || STATUS=1
bash "$REPO/bench/ntt-run.sh" "$BUILD" "$LOGS/ntt" >"$LOGS/ntt.out" 2>&1 || STATUS=1
rm -f "$LOGS/ntt/ntt_cuda"
if [ -n "$P62" ]; then
  timeout 150 "$BUILD/bench/ntt_bench" --sweep --radix r62 --rows 32 --log2 ${NTT_LOGS:-12,14,16,17} --plans "$P62" \
    --json "$LOGS/ntt_sweep_r62.json" >"$LOGS/sweep-r62.log" 2>&1 || STATUS=1
fi
if [ -n "$P32" ]; then
  timeout 150 "$BUILD/bench/ntt_bench" --sweep --radix r32 --rows 64 --log2 ${NTT_LOGS:-12,14,16,17} --plans "$P32" \
    --json "$LOGS/ntt_sweep_r32.json" >"$LOGS/sweep-r32.log" 2>&1 || STATUS=1
fi
bash "$REPO/bench/ntt-sanitizers.sh" "$BUILD" "$LOGS" || STATUS=1
for f in "$REPO"/examples/ntt/*.fh; do
  timeout 60 "$BUILD/tools/fhjit-run" "$f" --backend=cuda --check >>"$LOGS/examples-cuda.log" 2>&1 || {
    STATUS=1; echo "FAILED: $f" >>"$LOGS/examples-cuda.log"; }
done
tar czf "$OUT/logs.tgz" -C "$LOGS" .
mkdir -p "$OUT/results"
bash "$REPO/bench/run-info.sh" "$BUILD" "$OUT/results/run.json" bench/ntt-round.sh "$@"
for f in ntt/ntt_cuda.json ntt/ntt_bench.json ntt_sweep_r62.json ntt_sweep_r32.json; do
  [ -f "$LOGS/$f" ] && cp "$LOGS/$f" "$OUT/results/"
done
echo "######## GPU tests: $(tail -n 2 "$LOGS/gpu_test.log" | tr '\n' ' ')"
echo "######## NTT (bench/ntt-run.sh)"; tail -n 60 "$LOGS/ntt.out"
for r in r62 r32; do
  [ -f "$LOGS/sweep-$r.log" ] && { echo "######## sweep $r"; grep -E "^sweep|^best|MISMATCH|refused|FAILED" "$LOGS/sweep-$r.log"; }
done
for tool in memcheck racecheck; do
  echo "######## NTT $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/ntt-$tool.log" 2>/dev/null | tail -n 1)"
done
echo "######## NTT example on the GPU: $(grep -c '0 mismatching elements in total (cuda' "$LOGS/examples-cuda.log") clean, $(grep -c FAILED "$LOGS/examples-cuda.log") failed"
echo "round status: $STATUS"
exit $STATUS
