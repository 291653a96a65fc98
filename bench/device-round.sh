#!/usr/bin/env bash
# device-round.sh: one whole round on the GPU machine, in one command:
# bench/device-run.sh (GPU tests, memcheck, pointwise benchmarks, Triton),
# bench/ntt-run.sh (the CUDA NTT baseline and fhjit's NTT), the NTT schedule
# sweep (ntt_bench --sweep), compute-sanitizer memcheck and racecheck on the
# NTT kernels, and every example through
# fhjit-run --backend=cuda --check. Logs are packed into OUT/logs.tgz (the
# device tool brings back few files); the raw JSON results go to
# OUT/results/ as well (fhjit_bench, compile, triton, ntt_cuda, ntt_bench,
# ntt_sweep and run.json: copy them to bench/results/<date>-<commit>/, the
# folder run.json names; bench/plot.py draws them); the summaries are printed
# last.
#   bench/device-round.sh BUILD OUT
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && OUT=$(cd "$2" && pwd) || exit 2
LOGS=$(mktemp -d /tmp/fhjit-round-XXXXXX)
export LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
STATUS=0

FHJIT_DEVICE_BUDGET=${FHJIT_DEVICE_BUDGET:-300} bash "$REPO/bench/device-run.sh" "$BUILD" "$LOGS/pointwise" \
  >"$LOGS/pointwise.out" 2>&1 || STATUS=1
bash "$REPO/bench/ntt-run.sh" "$BUILD" "$LOGS/ntt" >"$LOGS/ntt.out" 2>&1 || STATUS=1
rm -f "$LOGS/ntt/ntt_cuda"
# Every candidate NTT schedule, checked and timed (ntt_bench --sweep; skip
# with NTT_SWEEP=0; NTT_PLANS='p1;p2' replaces the built-in grid).
if [ "${NTT_SWEEP:-1}" != 0 ]; then
  timeout 240 "$BUILD/bench/ntt_bench" --sweep ${NTT_PLANS:+--plans "$NTT_PLANS"} \
    --json "$LOGS/ntt_sweep.json" >"$LOGS/ntt-sweep.log" 2>&1 || STATUS=1
fi
bash "$REPO/bench/ntt-sanitizers.sh" "$BUILD" "$LOGS" || STATUS=1
for f in "$REPO"/examples/*.fh "$REPO"/examples/ntt/*.fh; do
  [ -f "$f" ] || continue
  echo "== $f" >>"$LOGS/examples-cuda.log"
  timeout 60 "$BUILD/tools/fhjit-run" "$f" --backend=cuda --check >>"$LOGS/examples-cuda.log" 2>&1 || {
    STATUS=1; echo "FAILED: $f" >>"$LOGS/examples-cuda.log"; }
done
tar czf "$OUT/logs.tgz" -C "$LOGS" .
mkdir -p "$OUT/results"
bash "$REPO/bench/run-info.sh" "$BUILD" "$OUT/results/run.json" bench/device-round.sh "$@"
for f in pointwise/fhjit_bench.json pointwise/compile.json pointwise/triton.json \
         ntt/ntt_cuda.json ntt/ntt_bench.json ntt_sweep.json; do
  [ -f "$LOGS/$f" ] && cp "$LOGS/$f" "$OUT/results/"
done

echo "######## pointwise (bench/device-run.sh)"; tail -n 45 "$LOGS/pointwise.out"
echo "######## NTT (bench/ntt-run.sh)"; tail -n 70 "$LOGS/ntt.out"
if [ -f "$LOGS/ntt-sweep.log" ]; then
  echo "######## NTT sweep (ntt_bench --sweep)"
  grep -E "^sweep|^best|MISMATCH|refused|FAILED|all results" "$LOGS/ntt-sweep.log" | tail -n 110
fi
for tool in memcheck racecheck; do
  echo "######## NTT $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/ntt-$tool.log" 2>/dev/null | tail -n 1)"
done
echo "######## examples on the GPU: $(grep -c '0 mismatching elements in total (cuda' "$LOGS/examples-cuda.log") checked clean, $(grep -c FAILED "$LOGS/examples-cuda.log") failed"
grep -E "FAILED|error" "$LOGS/examples-cuda.log" | head -n 10
echo "round status: $STATUS"
exit $STATUS
