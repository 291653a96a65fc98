#!/usr/bin/env bash
# pwperf-run.sh: the pointwise tuning round on the GPU machine: fhjit_bench
# --sweep (each benchmark graph under a grid of FHJIT_PW_PLAN plans, against
# the default copy kernel and a copy kernel cut like the plan, bit for bit
# against the interpreter at 2^21) and the host launch overhead (batched
# host time per call beside the driver's own cuLaunchKernel), then the GPU
# tests under a plan with inexact grids. About three minutes.
#   bench/pwperf-run.sh BUILD OUT     (BUILD: dist/device of scripts/build-device.sh)
set -u
BUILD=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && OUT=$(cd "$2" && pwd) || exit 2
export LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "commit $(cat "$BUILD/COMMIT" 2>/dev/null || echo '?')" >"$OUT/sweep.log"
timeout --signal=TERM --kill-after=10 ${FHJIT_SWEEP_LIMIT:-300} "$BUILD/bench/fhjit_bench" --sweep \
  --log2 ${FHJIT_SWEEP_LOG2:-21,26} --json "$OUT/sweep.json" >>"$OUT/sweep.log" 2>&1
rc=$?
# GPU tests (examples, random graphs) bit for bit under a plan whose grids
# are not exact (U=3, T=96: the checked path of each of the U bodies)
FHJIT_PW_PLAN=V=2,U=3,T=96 timeout --signal=TERM --kill-after=10 120 "$BUILD/test/gpu/fhjit_gpu_test" \
  --quick --examples "$(dirname "$0")/../examples" >"$OUT/gpu_test_plan.log" 2>&1 || rc=1
echo "gpu tests under FHJIT_PW_PLAN=V=2,U=3,T=96: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$OUT/gpu_test_plan.log" | tail -n 1)"
grep -E "^FAIL" "$OUT/gpu_test_plan.log" | head -n 10
grep -E "^commit|^sweep|copy plan|BEST|WRONG|host launch|^  (cuLaunch|fhjit_cuda|  without)" "$OUT/sweep.log"
grep -q WRONG "$OUT/sweep.log" && rc=1
echo "pwperf round status: $rc"
exit $rc
