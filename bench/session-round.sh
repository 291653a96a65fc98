#!/usr/bin/env bash
# session-round.sh: a session's GPU round in two device calls, each well
# inside the device tool's 10-minute limit.
#
#   bench/session-round.sh checks BUILD OUT
#     Every correctness check at once (they share the GPU; nothing is
#     timed): the GPU tests, the same under compute-sanitizer memcheck, the
#     NTT kernels under memcheck and racecheck (bench/ntt-sanitizers.sh),
#     the section 7 kernels under racecheck, the cluster NTT under
#     memcheck, racecheck and synccheck, also with rows in turn (GPU test
#     groups include ckks, cluster and cluster_rows), every example through fhjit-run --backend=cuda --check, graphs that
#     differ only in name through one disk cache (issue 20), randgraph's
#     random graphs (BUILD/random-graphs, from scripts/build-device.sh)
#     through fhjit-run --backend=cuda --check (also with ntt_plan one=3:
#     their NTTs as two kernels), 40 of them under memcheck,
#     and the Python
#     package's pytest suite on torch tensors. Logs: OUT/logs.tgz; the
#     summary is printed last.
#   bench/session-round.sh random BUILD OUT
#     The random graphs of checks alone (BUILD/random-graphs; a larger
#     corpus: RG_COUNT, RG_MIX_COUNT and RG_SEED of scripts/build-device.sh).
#   bench/session-round.sh s7bench BUILD OUT
#     bench/s7-run.sh alone (SPEC section 7's ops, issue 16, and the whole
#     CKKS operations, issue 17).
#   bench/session-round.sh ckksbench BUILD OUT
#     bench/s7-run.sh with ckks_bench only.
#   bench/session-round.sh s7sweep BUILD OUT
#     bench/s7-run.sh --sweep-bconv --sweep-aut: the conversion kernel under
#     each bconv_plan and the coefficient-domain automorphism under pw_plan
#     A=0/1 (docs/section7.md "Tuning the conversion kernel"), every plan
#     checked against the interpreter.
#   bench/session-round.sh bench BUILD OUT
#     The benchmarks, one after another with the GPU to themselves:
#     bench/device-run.sh without its test steps (fhjit_bench, compile
#     latency, Triton), bench/ntt-run.sh (the CUDA baseline and fhjit's NTT),
#     ntt_bench --cluster (the cluster schedule beside the two kernels) and
#     bench/python_launch.py. Raw JSON: OUT/results/ (for
#     bench/results/<date>-<commit>/), logs: OUT/logs.tgz.
#   bench/session-round.sh followup BUILD OUT
#     After a change of defaults: the section 7 and CKKS GPU tests and their
#     sanitizers, s7-run.sh, a cluster-shape sweep, mixfuse=1, and the r62
#     key switch's kernels under ncu (run_followup).
#   bench/session-round.sh ksab BUILD OUT
#     The key switch with its batched NTTs against ntt_plan digitfwd=0,
#     both radices, its kernels under ncu, and the cluster NTT's exchange
#     plans (run_ksab).
#   AB_PLAN=... bench/session-round.sh ab BUILD OUT
#     ckks_bench and s7_bench with the defaults and under that ntt_plan
#     (the old path), both radices, and the r62 key switch under ncu
#     (run_ab).
#   CKKS_AB="r62:PLAN r32:PLAN ..." bench/session-round.sh ckksab BUILD OUT
#     ckks_bench --fused-only per radix named: the defaults, then under each
#     PLAN given for it (run_ckksab; CKKS_OPS: --ops, default every op).
#   PROFILE="r32:0:10:full r32:5:53 ..." bench/session-round.sh profile BUILD OUT
#     ckks_bench --fused-only --ops OP --radix R under ncu, the first COUNT
#     launches (one execution of the graph), kernel times (OUT/ncu_R_OP.csv)
#     or with `full` every ncu section (OUT/ncu_R_OP_full.csv, --page
#     details): where a CKKS operation's time goes (run_profile). An entry
#     ntt:RADIX:LOG2:ROWS:SCHEDULE profiles ntt_bench's transforms (every
#     section) under FHJIT_NTT_SCHEDULE=SCHEDULE (cluster, two_kernel).
set -u
MODE=${1:-}
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${2:-}" 2>/dev/null && pwd) || { echo "usage: $0 checks|bench BUILD OUT" >&2; exit 2; }
mkdir -p "${3:-}" && OUT=$(cd "$3" && pwd) || exit 2
LOGS=$(mktemp -d /tmp/fhjit-session-XXXXXX)
export LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
echo "session round ($MODE), commit $(cat "$BUILD/COMMIT" 2>/dev/null), $(date -u +%FT%TZ)"

# The same graph under a long and a short name, through one fresh disk cache:
# each must match the interpreter, whichever compiled first.
names_through_cache() {
  local cache dir=$LOGS/names rc=0 name f
  local q=1152921504606584833,1152921504598720513
  cache=$(mktemp -d /tmp/fhjit-names-cache-XXXXXX)
  chmod 700 "$cache"
  mkdir -p "$dir"
  for name in "$(head -c 200 /dev/zero | tr '\0' b)" s "$(head -c 51 /dev/zero | tr '\0' a)" s; do
    f=$dir/g${#name}.fh
    sed "s/@NAME/@$name/" "$REPO/test/lit/ntt/Inputs/epi_names.fh" >"$f"
    FHJIT_CACHE_DIR=$cache timeout 60 "$BUILD/tools/fhjit-run" "$f" --backend=cuda --check \
      --moduli $q >>"$dir/names.log" 2>&1 || { rc=1; echo "FAILED: @$name" >>"$dir/names.log"; }
  done
  return $rc
}

examples_on_gpu() {
  local rc=0
  for f in "$REPO"/examples/*.fh "$REPO"/examples/ntt/*.fh "$REPO"/examples/s7/*.fh \
           "$REPO"/examples/ckks/*.fh; do
    [ -f "$f" ] || continue
    echo "== $f" >>"$LOGS/examples-cuda.log"
    timeout 60 "$BUILD/tools/fhjit-run" "$f" --backend=cuda --check >>"$LOGS/examples-cuda.log" 2>&1 ||
      { rc=1; echo "FAILED: $f" >>"$LOGS/examples-cuda.log"; }
  done
  return $rc
}

# The cluster NTT (issue 19) under the three sanitizers its barriers and
# distributed shared memory need (docs/ntt-cluster.md).
cluster_sanitizers() {
  local rc=0 nb=$BUILD/bench/ntt_bench
  timeout 300 "$SAN" --tool memcheck --error-exitcode 99 "$nb" --cluster --quick --log2 14,16,17 \
    --rows 2 >"$LOGS/cluster-memcheck.log" 2>&1 || rc=1
  timeout 300 "$SAN" --tool racecheck --error-exitcode 99 "$nb" --cluster --racecheck \
    >"$LOGS/cluster-racecheck.log" 2>&1 || rc=1
  timeout 300 "$SAN" --tool synccheck --error-exitcode 99 "$nb" --cluster --racecheck \
    >"$LOGS/cluster-synccheck.log" 2>&1 || rc=1
  # several rows per cluster in turn, the next row's copies ahead
  # (rows_cluster; 3 rows: the last cluster has one); racecheck and
  # synccheck at ntt_bench --racecheck's tiny sizes (racecheck took more
  # than 120 s at 2^16: H100, 2026-12-06)
  local t
  FHJIT_NTT_PLAN=rows_cluster=1,cluster=3 timeout 120 "$SAN" --tool memcheck --error-exitcode 99 "$nb" \
    --cluster --quick --log2 14,16 --rows 3 --no-keyswitch >"$LOGS/cluster-rows-memcheck.log" 2>&1 || rc=1
  for t in racecheck synccheck; do
    FHJIT_NTT_PLAN=rows_cluster=1,cluster=3 timeout 120 "$SAN" --tool $t --error-exitcode 99 "$nb" \
      --cluster --racecheck >"$LOGS/cluster-rows-$t.log" 2>&1 || rc=1
  done
  return $rc
}

# randgraph's random graphs (emitted by scripts/build-device.sh into
# BUILD/random-graphs, with the examples under random plans and the lit
# regression graphs) through fhjit-run --backend=cuda --check, then about 40
# of them again under memcheck and 30 with NTTs (two kernels) under racecheck.
random_graphs_on_gpu() {
  local src=$BUILD/random-graphs rc=0 run=$REPO/scripts/random-graphs-run.sh
  [ -d "$src" ] || { echo "no $src: scripts/build-device.sh emits it"; return 1; }
  mkdir -p "$LOGS/random-graphs" "$LOGS/random-memcheck"
  cp "$src"/*.fh "$LOGS/random-graphs/"
  bash "$run" --backend cuda --jobs "${RG_JOBS:-6}" "$LOGS/random-graphs" "$BUILD/tools/fhjit-run" || rc=1
  # again with their NTTs on the two-kernel schedule (n is 16..64, where the
  # one-kernel plan is the default), so random prologues and epilogues meet
  # the column and chunk kernels and their dependent launches too
  mkdir -p "$LOGS/random-two-kernel" && cp "$src"/*.fh "$LOGS/random-two-kernel/"
  FHJIT_NTT_PLAN=one=3 bash "$run" --backend cuda --jobs "${RG_JOBS:-6}" "$LOGS/random-two-kernel" \
    "$BUILD/tools/fhjit-run" >"$LOGS/random-two-kernel.txt" || rc=1
  sed 's/^random graphs on cuda/random graphs (ntt_plan one=3) on cuda/' "$LOGS/random-two-kernel.txt"
  [ -n "$SAN" ] || return $rc
  # about 40 spread over the corpus (random graphs, plan copies of the
  # examples), and every lit regression graph
  ls "$src"/*.fh | awk -v n="$(ls "$src"/*.fh | wc -l)" 'NR % int(n / 40 + 1) == 1' |
    xargs cp -t "$LOGS/random-memcheck/"
  ls "$src"/*.fh | grep -v -E '/(rg[0-9]+|[a-z0-9]+_.*_p[0-9]+)\.fh$' | xargs -r cp -t "$LOGS/random-memcheck/"
  bash "$run" --backend cuda --jobs 4 --wrap "$SAN --tool memcheck --error-exitcode 99" \
    "$LOGS/random-memcheck" "$BUILD/tools/fhjit-run" || rc=1
  # racecheck on 30 graphs with NTTs, on the two-kernel schedule: shared
  # memory and barriers around random fused prologues and epilogues
  mkdir -p "$LOGS/random-racecheck"
  grep -l -E 'ntt_(fwd|inv)' "$src"/rg*.fh | head -n 30 | xargs -r cp -t "$LOGS/random-racecheck/"
  FHJIT_NTT_PLAN=one=3 bash "$run" --backend cuda --jobs 4 \
    --wrap "$SAN --tool racecheck --racecheck-report all --error-exitcode 99" \
    "$LOGS/random-racecheck" "$BUILD/tools/fhjit-run" >"$LOGS/random-racecheck.txt" || rc=1
  sed 's/^random graphs on cuda under/random graphs (ntt_plan one=3) on cuda under/' "$LOGS/random-racecheck.txt"
  return $rc
}

python_gpu_tests() {
  FHJIT_LIBRARY="$BUILD/libfhjit.so" PYTHONPATH="$REPO/python" PYTHONUNBUFFERED=1 \
    timeout 300 python3 -m pytest -q -p no:cacheprovider "$REPO/python/tests" -rs
}

run_checks() {
  local pids=() names=() i rc status=0
  start() { names+=("$1"); shift; ("$@") >"$LOGS/${names[-1]}.log" 2>&1 & pids+=($!); }
  # four processes: the ipfuse and cluster groups alone took the suite past
  # one 300 s limit (6b82a4c), and together past another beside the
  # sanitizers (edacf51 on an H100: cluster alone 117 s, CPU-bound;
  # cluster_rows 115 s, 2026-12-06)
  start gpu_test timeout 300 "$BUILD/test/gpu/fhjit_gpu_test" --examples "$REPO/examples" \
    --skip ipfuse,cluster,cluster_rows
  start gpu_test2 timeout 300 "$BUILD/test/gpu/fhjit_gpu_test" --only ipfuse
  start gpu_test3 timeout 300 "$BUILD/test/gpu/fhjit_gpu_test" --only cluster
  start gpu_test4 timeout 300 "$BUILD/test/gpu/fhjit_gpu_test" --only cluster_rows
  if [ -n "$SAN" ]; then
    start memcheck timeout 400 "$SAN" --tool memcheck --report-api-errors no --error-exitcode 99 \
      "$BUILD/test/gpu/fhjit_gpu_test" --quick --examples "$REPO/examples"
    start ntt_sanitizers bash "$REPO/bench/ntt-sanitizers.sh" "$BUILD" "$LOGS"
    start s7_racecheck timeout 400 "$SAN" --tool racecheck --racecheck-report all --error-exitcode 99 \
      "$BUILD/test/gpu/fhjit_gpu_test" --quick --only section7
    start cluster_sanitizers cluster_sanitizers
  fi
  start examples examples_on_gpu
  start names names_through_cache
  start python python_gpu_tests
  start random_graphs random_graphs_on_gpu
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"; rc=$?
    [ $rc -ne 0 ] && status=1
    printf '%-16s exit %s\n' "${names[$i]}" "$rc" >>"$LOGS/summary.txt"
  done
  {
    echo "######## exits"; cat "$LOGS/summary.txt"
    echo "######## GPU tests: $(cat "$LOGS"/gpu_test*.log | awk '/^[0-9]+ passed, [0-9]+ failed/ {p += $1; f += $3; n++} END {printf "%d passed, %d failed (%d of 4 processes done)", p, f, n}')"
    grep -hE '^(PASS|FAIL) ' "$LOGS"/gpu_test*.log | sed 's/^/  /'
    echo "######## memcheck (GPU tests): $(grep -E 'ERROR SUMMARY' "$LOGS/memcheck.log" | tail -n 1) / $(grep -E 'passed, [0-9]+ failed' "$LOGS/memcheck.log" | tail -n 1)"
    echo "######## section 7 racecheck: $(grep -E 'RACECHECK SUMMARY' "$LOGS/s7_racecheck.log" | tail -n 1) / $(grep -E 'passed, [0-9]+ failed' "$LOGS/s7_racecheck.log" | tail -n 1)"
    for tool in memcheck racecheck; do
      echo "######## NTT $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/ntt-$tool.log" 2>/dev/null | tail -n 1)"
    done
    for tool in memcheck racecheck synccheck; do
      echo "######## cluster NTT $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/cluster-$tool.log" 2>/dev/null | tail -n 1)"
      echo "######## cluster NTT rows in turn $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|match the interpreter' "$LOGS/cluster-rows-$tool.log" 2>/dev/null | tr '\n' ' ')"
    done
    echo "######## examples on the GPU: $(grep -c '0 mismatching elements in total (cuda' "$LOGS/examples-cuda.log") clean, $(grep -c FAILED "$LOGS/examples-cuda.log") failed"
    echo "######## names through one cache: $(grep -c '0 mismatching elements in total (cuda' "$LOGS/names/names.log" 2>/dev/null) clean, $(grep -c FAILED "$LOGS/names/names.log" 2>/dev/null) failed"
    echo "######## $(grep -E '^random graphs on cuda: ' "$LOGS/random_graphs.log" | head -n 1)"
    echo "######## $(grep -E '^random graphs on cuda under' "$LOGS/random_graphs.log" | head -n 1)"
    echo "######## $(grep -E '^random graphs \(ntt_plan one=3\) on cuda: ' "$LOGS/random_graphs.log" | head -n 1)"
    echo "######## $(grep -E '^random graphs \(ntt_plan one=3\) on cuda under' "$LOGS/random_graphs.log" | head -n 1)"
    grep -A6 '^FAILED: ' "$LOGS/random_graphs.log" | head -n 30
    echo "######## python: $(tail -n 1 "$LOGS/python.log")"
    grep -E 'FAILED|Error' "$LOGS/python.log" | head -n 10
  } | tee "$OUT/summary.txt"
  return $status
}

run_bench() {
  local status=0
  mkdir -p "$OUT/results"
  FHJIT_SKIP_TESTS=1 bash "$REPO/bench/device-run.sh" "$BUILD" "$LOGS/pointwise" >"$LOGS/pointwise.out" 2>&1 || status=1
  bash "$REPO/bench/ntt-run.sh" "$BUILD" "$LOGS/ntt" >"$LOGS/ntt.out" 2>&1 || status=1
  rm -f "$LOGS/ntt/ntt_cuda"
  timeout 300 "$BUILD/bench/ntt_bench" --cluster --json "$LOGS/ntt_cluster.json" \
    >"$LOGS/ntt_cluster.log" 2>&1 || status=1
  FHJIT_LIBRARY="$BUILD/libfhjit.so" PYTHONPATH="$REPO/python" timeout 240 python3 \
    "$REPO/bench/python_launch.py" --json "$LOGS/python_launch.json" \
    --c-bench "$BUILD/bench/fhjit_bench" >"$LOGS/python_launch.log" 2>&1 || status=1
  for f in pointwise/run.json pointwise/fhjit_bench.json pointwise/compile.json \
           pointwise/triton.json ntt/ntt_cuda.json ntt/ntt_bench.json python_launch.json \
           ntt_cluster.json; do
    [ -f "$LOGS/$f" ] && cp "$LOGS/$f" "$OUT/results/"
  done
  echo "######## pointwise (bench/device-run.sh)"; tail -n 40 "$LOGS/pointwise.out"
  echo "######## NTT (bench/ntt-run.sh)"; tail -n 60 "$LOGS/ntt.out"
  echo "######## cluster NTT beside two kernels (ntt_bench --cluster)"; tail -n 30 "$LOGS/ntt_cluster.log"
  echo "######## Python launch overhead"; tail -n 15 "$LOGS/python_launch.log"
  return $status
}

run_s7_sweep() {
  local rc=0
  S7_PROGRAMS=s7_bench bash "$REPO/bench/s7-run.sh" "$BUILD" "$LOGS/s7" --sweep-bconv --sweep-aut \
    >"$LOGS/s7.out" 2>&1 || rc=1
  mkdir -p "$OUT/results"
  for f in s7/run.json s7/floors.json s7/s7_bench.json; do
    [ -f "$LOGS/$f" ] && cp "$LOGS/$f" "$OUT/results/sweep_$(basename "$f")"
  done
  echo "######## section 7 sweep (bench/s7-run.sh --sweep-bconv --sweep-aut)"; cat "$LOGS/s7.out"
  return $rc
}

run_s7_bench() {
  mkdir -p "$OUT/results"
  bash "$REPO/bench/s7-run.sh" "$BUILD" "$LOGS/s7" >"$LOGS/s7.out" 2>&1
  local status=$?
  for f in s7/run.json s7/floors.json s7/s7_bench.json s7/ckks_bench.json; do
    [ -f "$LOGS/$f" ] && cp "$LOGS/$f" "$OUT/results/"
  done
  echo "######## section 7 and CKKS (bench/s7-run.sh)"; tail -n 60 "$LOGS/s7.out"
  return $status
}

# A follow-up round after defaults changed: the groups a change touches
# (section 7, CKKS, cluster) and their sanitizers, the section 7 and CKKS
# figures, a sweep of the cluster schedule's block shape
# (ntt_plan t_cluster / e_cluster at N = 2^16), the r62 key switch with
# the inner product fused regardless of bytes (ntt_plan mixfuse=1), and
# the r62 key switch's kernels one by one under ncu (OUT/ks_kernels.csv).
run_followup() {
  local status=0 plan
  mkdir -p "$OUT/results"
  {
    timeout 200 "$BUILD/test/gpu/fhjit_gpu_test" --only section7 || status=1
    timeout 200 "$BUILD/test/gpu/fhjit_gpu_test" --only ckks || status=1
    if [ -n "$SAN" ]; then
      timeout 200 "$SAN" --tool racecheck --racecheck-report all --error-exitcode 99 \
        "$BUILD/test/gpu/fhjit_gpu_test" --quick --only section7 || status=1
      timeout 200 "$SAN" --tool memcheck --error-exitcode 99 \
        "$BUILD/test/gpu/fhjit_gpu_test" --quick --only ckks || status=1
    fi
  } >"$LOGS/followup-tests.log" 2>&1
  bash "$REPO/bench/s7-run.sh" "$BUILD" "$LOGS/s7" >"$LOGS/s7.out" 2>&1 || status=1
  for f in s7/run.json s7/floors.json s7/s7_bench.json s7/ckks_bench.json; do
    [ -f "$LOGS/$f" ] && cp "$LOGS/$f" "$OUT/results/"
  done
  for plan in t_cluster=8 t_cluster=7 t_cluster=8,e_cluster=2 t_cluster=10,e_cluster=2; do
    echo "== ntt_plan $plan" >>"$LOGS/cluster-sweep.log"
    FHJIT_NTT_PLAN=$plan timeout 60 "$BUILD/bench/ntt_bench" --cluster --log2 16 \
      >>"$LOGS/cluster-sweep.log" 2>&1 || status=1
  done
  FHJIT_NTT_PLAN=mixfuse=1 timeout 120 "$BUILD/bench/ckks_bench" --radix r62 \
    --floors "$LOGS/s7/floors.json" >"$LOGS/mixfuse.log" 2>&1 || status=1
  if command -v ncu >/dev/null; then
    timeout 150 ncu --clock-control none --launch-count 45 --csv \
      --metrics gpu__time_duration.sum "$BUILD/bench/ckks_bench" --radix r62 \
      >"$LOGS/ks_kernels.csv" 2>"$LOGS/ncu.err" || status=1
    cp "$LOGS/ks_kernels.csv" "$OUT/" 2>/dev/null
  fi
  echo "######## tests"; grep -E '^(PASS|FAIL) |SUMMARY' "$LOGS/followup-tests.log"
  echo "######## section 7 and CKKS"; grep -E '^r(32|62)|target|hoisted' "$LOGS/s7.out"
  echo "######## cluster sweep"; grep -E '^==|N=2\^16' "$LOGS/cluster-sweep.log"
  echo "######## r62 CKKS with mixfuse=1"; grep -E '^r62' "$LOGS/mixfuse.log"
  echo "######## ncu: $(grep -c gpu__time_duration "$LOGS/ks_kernels.csv" 2>/dev/null) kernels"; tail -n 3 "$LOGS/ncu.err" 2>/dev/null
  return $status
}

# The key switch's batched NTTs (shared inverse, one forward for all digits)
# against digitfwd=0, both radices, the key switch's kernels one by one
# under ncu (OUT/ks_r62.csv, OUT/ks_r32.csv) and the cluster NTT's exchange
# plans at N = 2^16 (OUT/cluster_plans.log).
run_ksab() {
  local status=0 r
  mkdir -p "$OUT/results"
  S7_PROGRAMS=ckks_bench bash "$REPO/bench/s7-run.sh" "$BUILD" "$LOGS/s7" >"$LOGS/s7.out" 2>&1 || status=1
  for f in s7/run.json s7/floors.json s7/ckks_bench.json; do
    [ -f "$LOGS/$f" ] && cp "$LOGS/$f" "$OUT/results/"
  done
  for r in r62 r32; do
    FHJIT_NTT_PLAN=digitfwd=0 timeout 120 "$BUILD/bench/ckks_bench" --radix $r \
      --floors "$LOGS/s7/floors.json" --json "$OUT/results/ckks_digitfwd0_$r.json" \
      >"$LOGS/digitfwd0_$r.log" 2>&1 || status=1
  done
  if command -v ncu >/dev/null; then
    timeout 90 ncu --clock-control none --launch-count 17 --kill yes --csv \
      --metrics gpu__time_duration.sum "$BUILD/bench/ckks_bench" --radix r62 \
      >"$OUT/ks_r62.csv" 2>"$LOGS/ncu62.err"
    timeout 90 ncu --clock-control none --launch-count 13 --kill yes --csv \
      --metrics gpu__time_duration.sum "$BUILD/bench/ckks_bench" --radix r32 \
      >"$OUT/ks_r32.csv" 2>"$LOGS/ncu32.err"
  fi
  FHJIT_NTT_SCHEDULE=cluster timeout 150 "$BUILD/bench/ntt_bench" --sweep \
    --plans ';xvec=0;u_cluster=0;cluster=1;cluster=2;cluster=3' --log2 16 \
    >"$OUT/cluster_plans.log" 2>&1 || status=1
  echo "######## CKKS, defaults"; grep -E '^r(32|62)|target|hoisted' "$LOGS/s7.out"
  for r in r62 r32; do
    echo "######## CKKS $r, digitfwd=0"; grep -E '^r(32|62)|hoisted' "$LOGS/digitfwd0_$r.log"
  done
  echo "######## ncu r62: $(grep -c gpu__time_duration "$OUT/ks_r62.csv" 2>/dev/null) kernels, r32: $(grep -c gpu__time_duration "$OUT/ks_r32.csv" 2>/dev/null)"
  echo "######## cluster plans"; tail -n 30 "$OUT/cluster_plans.log"
  return $status
}

# A change of defaults against the old path in one round: the floors, then
# ckks_bench and s7_bench with the defaults (both radices) and under
# FHJIT_NTT_PLAN=$AB_PLAN (r62 and r32), and the r62 key switch's kernels
# under ncu (OUT/ncu_keyswitch_r62.csv). AB_PLAN (environment) is required;
# AB_PROGRAMS picks the programs (default "ckks_bench s7_bench").
run_ab() {
  local status=0 r prog
  [ -n "${AB_PLAN:-}" ] || { echo "ab: set AB_PLAN to the ntt_plan of the old path" >&2; return 2; }
  mkdir -p "$OUT/results" "$LOGS/ab"
  S7_PROGRAMS= bash "$REPO/bench/s7-run.sh" "$BUILD" "$LOGS/ab" >"$LOGS/ab/floors.out" 2>&1 || status=1
  cp "$LOGS/ab/floors.json" "$LOGS/ab/run.json" "$OUT/results/" 2>/dev/null
  for prog in ${AB_PROGRAMS:-ckks_bench s7_bench}; do
    for r in r62 r32; do
      timeout 150 "$BUILD/bench/$prog" --radix $r --floors "$LOGS/ab/floors.json" \
        --json "$OUT/results/${prog}_$r.json" >"$LOGS/ab/${prog}_$r.log" 2>&1 || status=1
      FHJIT_NTT_PLAN=$AB_PLAN timeout 150 "$BUILD/bench/$prog" --radix $r --floors "$LOGS/ab/floors.json" \
        --json "$OUT/results/${prog}_${r}_old.json" >"$LOGS/ab/${prog}_${r}_old.log" 2>&1 || status=1
      echo "######## $prog $r: defaults, then $AB_PLAN"
      grep -E '^r(32|62)' "$LOGS/ab/${prog}_$r.log"; grep -E '^r(32|62)' "$LOGS/ab/${prog}_${r}_old.log"
    done
  done
  if command -v ncu >/dev/null; then
    timeout 90 ncu --clock-control none --launch-count 16 --kill yes --csv \
      --metrics gpu__time_duration.sum,dram__bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
      "$BUILD/bench/ckks_bench" --radix r62 >"$OUT/ncu_keyswitch_r62.csv" 2>"$LOGS/ab/ncu.err"
    echo "######## ncu r62: $(grep -c gpu__time_duration "$OUT/ncu_keyswitch_r62.csv") rows"
  fi
  return $status
}

run_ckksab() {
  local status=0 r pair plan tag
  [ -n "${CKKS_AB:-}" ] || { echo "ckksab: set CKKS_AB to radix:plan pairs" >&2; return 2; }
  mkdir -p "$OUT/results" "$LOGS/ckksab"
  S7_PROGRAMS= bash "$REPO/bench/s7-run.sh" "$BUILD" "$LOGS/ckksab" >"$LOGS/ckksab/floors.out" 2>&1 || status=1
  cp "$LOGS/ckksab/floors.json" "$LOGS/ckksab/run.json" "$OUT/results/" 2>/dev/null
  local ops=(); [ -n "${CKKS_OPS:-}" ] && ops=(--ops "$CKKS_OPS")
  for r in r62 r32; do
    case " $CKKS_AB" in *" $r:"*) ;; *) continue ;; esac
    for pair in "$r:" $CKKS_AB; do
      [ "${pair%%:*}" = "$r" ] || continue
      plan=${pair#*:}
      tag=${plan:-default}; tag=${tag//[^a-z0-9_]/_}
      FHJIT_NTT_PLAN=$plan timeout 200 "$BUILD/bench/ckks_bench" --radix $r --fused-only "${ops[@]}" \
        --floors "$LOGS/ckksab/floors.json" --json "$OUT/results/ckks_bench_${r}_$tag.json" \
        >"$LOGS/ckksab/${r}_$tag.log" 2>&1 || status=1
      echo "######## ckks_bench $r ${plan:-(defaults)}"
      grep -E '^r(32|62)|FAILED' "$LOGS/ckksab/${r}_$tag.log"
    done
  done
  return $status
}

# ckks_bench under ncu, one entry of PROFILE (R:OP:COUNT[:full]) at a time.
run_profile() {
  local status=0 e r op n set f
  command -v ncu >/dev/null || { echo "no ncu"; return 1; }
  for e in ${PROFILE:?PROFILE=R:OP:COUNT[:full] ...}; do
    IFS=: read -r r op n set <<<"$e"
    if [ "$r" = ntt ]; then # ntt:RADIX:LOG2:ROWS:SCHEDULE, forward and inverse
      f=$OUT/ncu_ntt_${op}_${n}_${set#*:}.csv
      FHJIT_NTT_SCHEDULE=${set#*:} timeout 150 ncu --clock-control none -k regex:fhjit_ntt \
        --launch-count 4 --kill yes --set full --csv --page details "$BUILD/bench/ntt_bench" \
        --sweep --plans '' --radix "$op" --log2 "$n" --rows "${set%%:*}" \
        >"$f" 2>"$LOGS/ncu_ntt_$op.err" || status=1
    elif [ "$set" = full ]; then
      f=$OUT/ncu_${r}_${op}_full.csv
      timeout 240 ncu --clock-control none --launch-count "$n" --kill yes --set full \
        --csv --page details "$BUILD/bench/ckks_bench" --radix "$r" --fused-only --ops "$op" \
        >"$f" 2>"$LOGS/ncu_${r}_$op.err" || status=1
    else
      f=$OUT/ncu_${r}_${op}.csv
      timeout 150 ncu --clock-control none --launch-count "$n" --kill yes --csv \
        --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,dram__bytes.sum \
        "$BUILD/bench/ckks_bench" --radix "$r" --fused-only --ops "$op" \
        >"$f" 2>"$LOGS/ncu_${r}_$op.err" || status=1
    fi
    echo "######## ncu $e: $(grep -c '"' "$f") rows"; tail -n 2 "$LOGS/ncu_${r}_$op.err"
  done
  return $status
}

case $MODE in
  checks) run_checks; STATUS=$? ;;
  random) random_graphs_on_gpu >"$LOGS/random_graphs.log" 2>&1; STATUS=$?
          grep -E '^random graphs|^FAILED' "$LOGS/random_graphs.log" | tee "$OUT/summary.txt" ;;
  bench) run_bench; STATUS=$?; run_s7_bench || STATUS=1 ;;
  s7bench) run_s7_bench; STATUS=$? ;;
  ckksbench) S7_PROGRAMS=ckks_bench run_s7_bench; STATUS=$? ;;
  s7sweep) run_s7_sweep; STATUS=$? ;;
  followup) run_followup; STATUS=$? ;;
  ksab) run_ksab; STATUS=$? ;;
  ab) run_ab; STATUS=$? ;;
  ckksab) run_ckksab; STATUS=$? ;;
  profile) run_profile; STATUS=$? ;;
  *) echo "usage: $0 checks|random|bench|s7bench|ckksbench|s7sweep|followup|ksab|ab|ckksab|profile BUILD OUT" >&2; exit 2 ;;
esac
if [ -d "$OUT/results" ]; then
  python3 "$REPO/bench/check-results.py" "$OUT/results" || STATUS=1
fi
tar czf "$OUT/logs.tgz" -C "$LOGS" . 2>/dev/null
echo "round status: $STATUS"
exit $STATUS
