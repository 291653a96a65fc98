#!/usr/bin/env bash
# device-round.sh: one whole round on the GPU machine, in one command:
# bench/device-run.sh (GPU tests, memcheck, pointwise benchmarks, Triton),
# bench/ntt-run.sh (the CUDA NTT baseline and fhjit's NTT), compute-sanitizer
# memcheck and racecheck on the NTT kernels, and every example through
# fhjit-run --backend=cuda --check. Logs are packed into OUT/logs.tgz (the
# device tool brings back few files); the summaries are printed last.
#   bench/device-round.sh BUILD OUT
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && OUT=$(cd "$2" && pwd) || exit 2
LOGS=$(mktemp -d /tmp/fhjit-round-XXXXXX)
export LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
STATUS=0
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)

FHJIT_DEVICE_BUDGET=${FHJIT_DEVICE_BUDGET:-300} bash "$REPO/bench/device-run.sh" "$BUILD" "$LOGS/pointwise" \
  >"$LOGS/pointwise.out" 2>&1 || STATUS=1
bash "$REPO/bench/ntt-run.sh" "$BUILD" "$LOGS/ntt" >"$LOGS/ntt.out" 2>&1 || STATUS=1
rm -f "$LOGS/ntt/ntt_cuda"
if [ -n "$SAN" ]; then
  for tool in memcheck racecheck; do
    timeout 120 "$SAN" --tool $tool --error-exitcode 99 "$BUILD/bench/ntt_bench" --quick \
      >"$LOGS/ntt-$tool.log" 2>&1 || STATUS=1
  done
fi
for f in "$REPO"/examples/*.fh "$REPO"/examples/ntt/*.fh; do
  [ -f "$f" ] || continue
  echo "== $f" >>"$LOGS/examples-cuda.log"
  timeout 60 "$BUILD/tools/fhjit-run" "$f" --backend=cuda --check >>"$LOGS/examples-cuda.log" 2>&1 || {
    STATUS=1; echo "FAILED: $f" >>"$LOGS/examples-cuda.log"; }
done
tar czf "$OUT/logs.tgz" -C "$LOGS" .

echo "######## pointwise (bench/device-run.sh)"; tail -n 45 "$LOGS/pointwise.out"
echo "######## NTT (bench/ntt-run.sh)"; tail -n 70 "$LOGS/ntt.out"
for tool in memcheck racecheck; do
  echo "######## NTT $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/ntt-$tool.log" 2>/dev/null | tail -n 1)"
done
echo "######## examples on the GPU: $(grep -c '0 mismatching elements in total (cuda' "$LOGS/examples-cuda.log") checked clean, $(grep -c FAILED "$LOGS/examples-cuda.log") failed"
grep -E "FAILED|error" "$LOGS/examples-cuda.log" | head -n 10
echo "round status: $STATUS"
exit $STATUS
