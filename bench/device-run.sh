#!/usr/bin/env bash
# device-run.sh: one round of fhjit's checks and benchmarks on the GPU machine
# (Ubuntu 24.04, driver 580, H200, nothing installable: python3 with torch and
# triton, compute-sanitizer from the CUDA toolkit).
#
#   bench/device-run.sh BUILD OUT
#
# BUILD: a build tree made on the development machine (the static-LLVM one of
# scripts/build-device.sh, e.g. dist/device): BUILD/libfhjit.so.0,
# BUILD/test/gpu/fhjit_gpu_test, BUILD/bench/fhjit_bench. OUT: a directory for
# the logs (nine files at most: gpu_test.log, memcheck.log, fhjit_bench.log,
# fhjit_bench.json, compile.json, triton.log, triton.json, run.json,
# summary.txt). The JSON files are the run's raw results: copy them to
# bench/results/<date>-<commit>/ (run.json names the folder; bench/plot.py
# draws them).
#
# FHJIT_DEVICE_TEST_ARGS and FHJIT_DEVICE_BENCH_ARGS add arguments to
# fhjit_gpu_test and fhjit_bench (for example "--max-log2 22", "--log2 21").
#
# Steps, each with a time limit so that the whole stays under 8 minutes:
#   1. GPU tests (examples, random graphs, sizes to 2^26, streams, capture,
#      errors, cache), bit for bit against the interpreter;
#   2. the same under compute-sanitizer memcheck, reduced (--quick);
#   3. fhjit_bench: kernel time vs a copy kernel, compile latency, launch
#      overhead; then compile latency in two fresh processes sharing a disk
#      cache (the second shows warm hits in a new process);
#   4. the Triton baselines of the same graphs (bench/baselines/triton_rns.py).
# The summary table is printed last and kept in OUT/summary.txt. Exit status:
# 0 when every step passed.
set -u
if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD OUT" >&2
  exit 2
fi
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" || exit 2
OUT=$(cd "$2" && pwd)
GPU_TEST=$BUILD/test/gpu/fhjit_gpu_test
BENCH=$BUILD/bench/fhjit_bench
TRITON=$REPO/bench/baselines/triton_rns.py
export LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
START=$(date +%s)
BUDGET=${FHJIT_DEVICE_BUDGET:-470} # seconds for the whole run
STATUS=0
declare -A RESULT SECONDS_OF

for f in "$GPU_TEST" "$BENCH"; do
  [ -x "$f" ] || { echo "missing $f (build with scripts/build-device.sh)" >&2; exit 2; }
done

# Runs a step under `timeout LIMIT` (shortened to what the budget has left),
# its output to LOG; records the exit status and duration.
step() {
  local name=$1 limit=$2 log=$3
  shift 3
  local left=$((BUDGET - ($(date +%s) - START)))
  if [ "$left" -lt 20 ]; then
    RESULT[$name]="skipped (time budget spent)"
    STATUS=1
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$(date +%s)
  echo "== $name (limit ${limit}s): $*" >>"$log"
  timeout --signal=TERM --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  SECONDS_OF[$name]=$(($(date +%s) - t0))
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    RESULT[$name]="TIMEOUT after ${limit}s"
  elif [ $rc -eq 77 ]; then
    RESULT[$name]="SKIPPED (no driver)"
  elif [ $rc -ne 0 ]; then
    RESULT[$name]="FAIL (exit $rc)"
  else
    RESULT[$name]="ok"
  fi
  [ $rc -ne 0 ] && STATUS=1
  return $rc
}

bash "$REPO/bench/run-info.sh" "$BUILD" "$OUT/run.json" bench/device-run.sh "$@"
{
  echo "fhjit device run, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(cat "$BUILD/COMMIT" 2>/dev/null || git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1
} >"$OUT/gpu_test.log"
: >"$OUT/memcheck.log"
: >"$OUT/fhjit_bench.log"
: >"$OUT/triton.log"

# FHJIT_SKIP_TESTS=1: the benchmarks only (bench/session-round.sh runs the
# tests in a call of their own).
if [ "${FHJIT_SKIP_TESTS:-0}" = 1 ]; then
  RESULT["gpu tests"]="skipped (FHJIT_SKIP_TESTS)"
  RESULT[memcheck]="skipped (FHJIT_SKIP_TESTS)"
else
# 1. GPU tests
# shellcheck disable=SC2086 # the extra arguments are words
step "gpu tests" 150 "$OUT/gpu_test.log" "$GPU_TEST" --examples "$REPO/examples" ${FHJIT_DEVICE_TEST_ARGS:-}

# 2. memcheck, reduced
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
if [ -n "$SANITIZER" ]; then
  # API errors are what the error-path group provokes on purpose: not counted.
  step "memcheck" 120 "$OUT/memcheck.log" "$SANITIZER" --tool memcheck --report-api-errors no \
    --error-exitcode 99 "$GPU_TEST" --quick --examples "$REPO/examples"
else
  RESULT[memcheck]="skipped (no compute-sanitizer)"
fi
fi

# 3. fhjit_bench, then compile latency in two fresh processes
# shellcheck disable=SC2086
step "fhjit_bench" 110 "$OUT/fhjit_bench.log" "$BENCH" --json "$OUT/fhjit_bench.json" ${FHJIT_DEVICE_BENCH_ARGS:-}
CACHE=$(mktemp -d /tmp/fhjit-device-cache-XXXXXX)
step "compile, new process (cold)" 30 "$OUT/fhjit_bench.log" "$BENCH" --compile-only --cache-dir "$CACHE"
step "compile, new process (warm)" 30 "$OUT/fhjit_bench.log" "$BENCH" --compile-only --cache-dir "$CACHE" \
  --json "$OUT/compile.json"
rm -rf "$CACHE"

# 4. Triton baselines
if python3 -c 'import torch, triton' >/dev/null 2>&1; then
  step "triton baselines" 110 "$OUT/triton.log" env PYTHONUNBUFFERED=1 python3 "$TRITON" \
    --json "$OUT/triton.json"
else
  RESULT["triton baselines"]="skipped (no torch/triton)"
  python3 -c 'import torch, triton' >>"$OUT/triton.log" 2>&1
fi

# ------------------------------------------------------------------ summary
{
  echo
  echo "== fhjit device run: $(($(date +%s) - START)) s in all, logs in $OUT"
  for name in "gpu tests" "memcheck" "fhjit_bench" "compile, new process (cold)" \
              "compile, new process (warm)" "triton baselines"; do
    line=${RESULT[$name]:-not run}
    case $name in
      "gpu tests") extra=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$OUT/gpu_test.log" | tail -n 1) ;;
      memcheck) extra=$(grep -E 'ERROR SUMMARY|passed, [0-9]+ failed' "$OUT/memcheck.log" | tail -n 2 | tr '\n' ' ') ;;
      *) extra= ;;
    esac
    printf '%-30s %-28s %5ss  %s\n' "$name" "$line" "${SECONDS_OF[$name]:--}" "$extra"
  done
  grep -E '^(PASS|FAIL) ' "$OUT/gpu_test.log" | sed 's/^/  gpu: /'
  python3 - "$OUT" <<'EOF'
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f).get("results", [])
    except Exception:
        return []
fh, tr, cp = load("fhjit_bench.json"), load("triton.json"), load("compile.json")
tk = {(r["graph"], r["radix"], r["log2"]): r for r in tr if r.get("kind") == "kernel"}
rows = [r for r in fh if r.get("kind") == "kernel"]
if rows:
    print("\nkernel time, median per launch (graph replays, rotating buffers); ratio = bandwidth / copy of the same run")
    print(f"{'graph':18s} {'radix':5s} {'size':5s} {'fhjit us':>9s} {'ratio':>6s} {'exact':>5s}   {'triton us':>9s} {'ratio':>6s} {'exact':>5s}   {'fhjit speed-up':>14s}")
    for r in rows:
        t = tk.get((r["graph"], r["radix"], r["log2"]))
        ex = {1: "yes", 0: "NO", -1: "-"}[r["exact"]]
        line = f"{r['graph']:18s} {r['radix']:5s} 2^{r['log2']:<3d} {r['us']:9.2f} {r['ratio']:6.3f} {ex:>5s}"
        if t:
            line += f"   {t['us']:9.2f} {t['ratio']:6.3f} {('yes' if t['exact'] else 'NO'):>5s}   {t['us'] / r['us']:13.2f}x"
        print(line)
    copies = [r for r in fh if r.get("kind") == "copy"]
    tcopies = [r for r in tr if r.get("kind") == "copy"]
    for c in copies:
        t = next((x for x in tcopies if x["log2"] == c["log2"]), None)
        print(f"copy 2^{c['log2']}: fhjit's PTX copy {c['GBps']:.0f} GB/s" +
              (f", torch copy {t['GBps']:.0f} GB/s" if t else ""))
comp = [r for r in fh if r.get("kind") == "compile"]
newp = {(r["graph"], r["radix"]): r for r in cp if r.get("kind") == "compile_process"}
if comp:
    print("\ncompile latency, graph -> loaded module (median ms): cold = no disk cache; warm = disk hit, new context / new process")
    for r in comp:
        p = newp.get((r["graph"], r["radix"]))
        np_ = f"{p['ms']:8.3f} ({p['source']})" if p else "-"
        print(f"  {r['graph']:18s} {r['radix']}  cold {r['cold_ms']:8.3f} (LLVM {r['lower_ms']:.3f}, link {r['link_ms']:.3f})  warm {r['warm_ms']:7.3f}  new process {np_}")
tc = [r for r in tr if r.get("kind") == "kernel" and r.get("first_call_compiled")]
if tc:
    print("  triton first call (empty cache): " + ", ".join(f"{r['graph']}/{r['radix']} {r['first_call_ms']:.0f} ms" for r in tc))
for r in fh:
    if r.get("kind") == "launch":
        print(f"launch overhead, {r['variant']}: {r['host_us']:.2f} us per launch on the host")
EOF
  echo "overall: $([ $STATUS -eq 0 ] && echo PASS || echo FAIL)"
} | tee "$OUT/summary.txt"
exit $STATUS
