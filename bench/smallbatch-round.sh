#!/usr/bin/env bash
# smallbatch-round.sh: the device round for NTT plans of small batches
# (lib/lower/ntt_plan.c batch_plans): the transforms a rescale (2 rows: the
# last row of both components), a moddown's P rows and HMult's inverse of
# P and the last Q row run, each a few rows, so their kernels fill a part
# of the GPU and their time is latency. From the repository root on the
# GPU machine with dist/device carried and OUT set:
#   bash bench/smallbatch-round.sh sweep    # about 3 minutes
#   bash bench/smallbatch-round.sh r62      # about 6 minutes
#   bash bench/smallbatch-round.sh confirm  # about 4 minutes
# sweep: ntt_bench --sweep over candidate plans at N = 2^16 (r32 2 and 4
# rows, r62 2 and 10 rows), every plan checked against the interpreter;
# the cluster schedule beside the two kernels at 2 rows; rescale of both
# radices (ckks_bench --fused-only); s7_bench --aut-only twice (issue 16's
# same-run ratios, repeated). r62: the sweep of r62 2^16 at 2 to 32 rows
# over 4 and 2 words a thread (the batch plan "e=2" of 1 to 16 rows against
# the size's e=3), the graphs of bench/smallbatch-graphs/ against the
# interpreter, alone and under memcheck and racecheck, then ckks_bench
# r62 key switch, HMult + relin + rescale and rescale by default and with
# ntt_plan rowplans=0 (the batch plans off), same run. confirm: the GPU test's groups, memcheck,
# rescale and the r32 operations with a key switch.
B=dist/device; export LD_LIBRARY_PATH=$PWD/$B FHJIT_CACHE=0
L=$(mktemp -d); trap 'tar -C "$L" -czf "$OUT/logs.tgz" . 2>/dev/null' EXIT
echo "commit $(cat $B/COMMIT) $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null)"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
T=$B/test/gpu/fhjit_gpu_test
R32_PLANS='e=3;e=2;e=1;e=3,c_col=4;e=2,c_col=4;e=2,c_col=3;e=3,c_col=3;e=2,t=8;e=3,t=8;e=2,t=6;e=2,n1=8;e=3,n1=8;e=2,n1=6;e=2,tws=0;e=2,minb=0'
R62_PLANS='e=2;e=1;e=2,c_col=3;e=2,c_col=2;e=1,c_col=3;e=2,t=8;e=2,t=6;e=2,n1=7;e=2,n1=8;c_col=3;c_col=2;t=8;e=2,c_col=3,t=8;e=2,shoup=0'
sweep() {
  for r in "r32 2 $R32_PLANS" "r32 4 $R32_PLANS" "r62 2 $R62_PLANS" "r62 10 $R62_PLANS"; do set -- $r
    timeout 120 $B/bench/ntt_bench --sweep --log2 16 --rows $2 --radix $1 --plans "$3" \
      --json $OUT/sweep_$1_$2.json > $L/sweep_$1_$2.log 2>&1
    echo "sweep $1 rows $2 rc $?"; grep -E '^(sweep|best)|mismatch|FAIL' $L/sweep_$1_$2.log
    echo "t=$SECONDS"
  done
  timeout 100 $B/bench/ntt_bench --cluster --log2 16 --rows 2 --radix r32,r62 > $L/cluster.log 2>&1
  echo "cluster rc $?"; grep -vE '^\(|^fhjit' $L/cluster.log | tail -8; echo "t=$SECONDS"
  rescale
  for i in 1 2; do
    ((SECONDS < ${BUDGET:-480} - 90)) || continue
    timeout 120 $B/bench/s7_bench --aut-only --radix r32,r62 --json $OUT/s7_aut$i.json > $L/s7_aut$i.log 2>&1
    echo "s7_bench $i rc $?"; grep -iE 'automorphism|FAIL|mismatch' $L/s7_aut$i.log | head -20; echo "t=$SECONDS"
  done
}
rescale() {
  for r in r32 r62; do
    timeout 110 $B/bench/ckks_bench --radix $r --ops 3 --fused-only --json $OUT/rescale_$r.json > $L/rescale_$r.log 2>&1
    echo "rescale $r rc $?"; grep -E '^r(32|62)|FAIL|mismatch' $L/rescale_$r.log; echo "t=$SECONDS"
  done
}
R62_ROWS_PLANS='e=3;e=2;e=2,c_col=3;e=2,c_col=2;e=2,t=8;e=2,t=6;e=2,n1=7;e=2,n1=8;e=2,c_col=3,t=8;e=2,shoup=0;e=2,tws=1;e=1;e=1,c_col=3;e=1,t=8;e_col=2,e_chunk=1;e_col=1,e_chunk=2'
r62() {
  local f tool r
  for r in 2 4 10 12 16 24 32; do
    timeout 60 $B/bench/ntt_bench --sweep --log2 16 --rows $r --radix r62 --plans "$R62_ROWS_PLANS" \
      > $L/sweep_r62_$r.log 2>&1
    echo "sweep r62 rows $r rc $?"; grep -E '^(sweep|best)|mismatch|FAIL' $L/sweep_r62_$r.log
  done
  echo "t=$SECONDS"
  for f in bench/smallbatch-graphs/*.fh; do
    timeout 60 $B/tools/fhjit-run $f --backend=cuda --check > $L/run_$(basename $f).log 2>&1
    echo "$(basename $f) rc $? $(grep -E 'in total' $L/run_$(basename $f).log)"
    for tool in memcheck racecheck; do
      timeout 100 $SAN --tool $tool $B/tools/fhjit-run $f --backend=cuda --check > $L/${tool}_$(basename $f).log 2>&1
      echo "$(basename $f) $tool rc $? $(grep -E 'in total|ERROR SUMMARY|RACECHECK SUMMARY' $L/${tool}_$(basename $f).log | tr '\n' ' ')"
    done
  done
  echo "t=$SECONDS"
  local i=0 plan
  for plan in "" rowplans=0 ""; do
    i=$((i + 1))
    ((SECONDS < ${BUDGET:-540} - 130)) || continue
    FHJIT_NTT_PLAN=$plan timeout 130 $B/bench/ckks_bench --radix r62 --ops 0,2,3 --fused-only \
      --json $OUT/ckks_r62_$i.json > $L/ckks_r62_$i.log 2>&1
    echo "ckks r62 [${plan:-default}] rc $?"; grep -E '^r62|FAIL|mismatch' $L/ckks_r62_$i.log
    echo "t=$SECONDS"
  done
}
confirm() {
  rescale
  timeout 150 $B/bench/ckks_bench --radix r32 --ops 0,1,2,4 --fused-only --json $OUT/ckks_r32.json > $L/ckks_r32.log 2>&1
  echo "ckks r32 rc $?"; grep -E '^r(32|62)|FAIL|mismatch' $L/ckks_r32.log; echo "t=$SECONDS"
  timeout 150 $T --only examples,random,section7,ckks,ntt > $L/gpu.log 2>&1; echo "gpu rc $?"; grep -E "^(PASS|FAIL)" $L/gpu.log | tail -6
  echo "t=$SECONDS"
  timeout 150 $SAN --tool memcheck $T --only section7,ckks --quick > $L/memcheck.log 2>&1; echo "memcheck rc $?"; grep -E "^(PASS|FAIL)|ERROR SUMMARY" $L/memcheck.log | tail -3
  echo "t=$SECONDS"
}
"${1:-sweep}"
