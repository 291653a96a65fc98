#!/usr/bin/env bash
# aut-round.sh: the device round for the automorphism's loads: the
# NTT-domain one's vectors (lower_remap.c aut_ntt_group) and the coefficient one
# in a forward NTT's loads (ntt_emit_aut.c, ntt_plan autcol=1 and 2).
# From the repository root on the GPU machine with dist/device carried and
# OUT set:
#   bash bench/aut-round.sh checks   # about 5 minutes
#   bash bench/aut-round.sh autcol   # about 2 minutes
#   bash bench/aut-round.sh bench    # about 5 minutes
#   bash bench/aut-round.sh autvec   # about 8 minutes
# checks: the GPU test's examples, random, section7 and ckks groups, then
# section7 and ckks under compute-sanitizer memcheck and section7 under
# racecheck. bench: the floors, s7_bench over both radices (the
# automorphism alone and fused into a product and into an NTT, against
# that kernel alone, same run; the forward NTT's lines with autcol=1 and 2 too),
# ckks_bench --fused-only: r32 key switch,
# relinearise, rotate(1), 8 hoisted rotations; r62 key switch, rotate(1).
B=dist/device; export LD_LIBRARY_PATH=$PWD/$B FHJIT_CACHE=0
# Logs go to $L and come back as one archive, $OUT/logs.tgz (a call returns
# at most 8 files); the JSON files go to $OUT.
L=$(mktemp -d); trap 'tar -C "$L" -czf "$OUT/logs.tgz" . 2>/dev/null' EXIT
echo "commit $(cat $B/COMMIT) $(date -u +%FT%TZ)"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
T=$B/test/gpu/fhjit_gpu_test
checks() {
  timeout 200 $T --only examples,random,section7,ckks > $L/gpu.log 2>&1; echo "gpu rc $?"; grep -E "^(PASS|FAIL)" $L/gpu.log | tail -6
  timeout 200 $SAN --tool memcheck $T --only section7,ckks --quick > $L/memcheck.log 2>&1; echo "memcheck rc $?"; grep -E "^(PASS|FAIL)|ERROR SUMMARY" $L/memcheck.log | tail -3
  timeout 120 $SAN --tool racecheck $T --only section7 --quick > $L/racecheck.log 2>&1; echo "racecheck rc $?"; grep -E "^(PASS|FAIL)|RACECHECK SUMMARY|ERROR SUMMARY" $L/racecheck.log | tail -3
}
bench() {
  mkdir -p $OUT/s7
  S7_PROGRAMS= bash bench/s7-run.sh $B $OUT/s7 > $L/floors.out 2>&1; echo "floors rc $?"; tail -n 4 $L/floors.out
  timeout 240 $B/bench/s7_bench --floors $OUT/s7/floors.json --json $OUT/s7_bench.json > $L/s7_bench.log 2>&1
  echo "s7_bench rc $?"; grep -iE 'automorphism|FAIL|mismatch' $L/s7_bench.log | head -30
  for r in "r32 0,1,4,5" "r62 0,4"; do set -- $r
    timeout 150 $B/bench/ckks_bench --radix $1 --ops $2 --fused-only --floors $OUT/s7/floors.json \
      --json $OUT/ckks_$1.json > $L/ckks_$1.log 2>&1
    echo "ckks $1 rc $?"; grep -E '^r(32|62)|FAIL|mismatch' $L/ckks_$1.log
  done
}
# autcol: the forward NTT with the coefficient automorphism in its loads
# (ntt_plan autcol=1, both kernels staged, and autcol=2, kernel 1 loading
# directly; ntt_emit_aut.c) on the graphs in $2 (default
# bench/autcol-graphs/: ten graphs, both radices, N = 2^13 .. 2^17, 1 to
# 48 rows, batches, k from 1 to 2N - 1, an epilogue in three), each
# against the interpreter, then three under memcheck and racecheck; each
# with both keys.
autcol() {
  local dir=${2:-bench/autcol-graphs} f m rc
  for m in 1 2; do for f in $dir/*.fh; do
    FHJIT_NTT_PLAN=autcol=$m timeout 60 $B/tools/fhjit-run $f --backend=cuda --check > $L/autcol${m}_$(basename $f).log 2>&1
    rc=$?; echo "autcol=$m $(basename $f) rc $rc $(grep -E 'in total' $L/autcol${m}_$(basename $f).log)"
  done; done
  for m in 1 2; do for tool in memcheck racecheck; do for f in $dir/ac4.fh $dir/ac5.fh $dir/ac7.fh; do
    FHJIT_NTT_PLAN=autcol=$m timeout 100 $SAN --tool $tool $B/tools/fhjit-run $f --backend=cuda --check > $L/${tool}${m}_$(basename $f).log 2>&1
    rc=$?; echo "autcol=$m $tool $(basename $f) rc $rc $(grep -E 'in total|ERROR SUMMARY|RACECHECK SUMMARY' $L/${tool}${m}_$(basename $f).log | tr '\n' ' ')"
  done; done; done
}
# lean: the same by priority within one call of under 10 minutes (a step
# starts only while the call is under its budget, LEAN_S, default 420 s:
# a machine's start counts against the session's device time too): the
# autcol graphs (both keys); s7_bench --aut-only (the automorphism's
# same-run ratios, no floors); ac4 under memcheck and racecheck (both
# keys); the GPU test's section7 group (--quick); section7 under memcheck;
# r32 rotate(1) and 8 hoisted rotations.
lean() {
  local f m rc tool budget=${LEAN_S:-420}
  for m in 1 2; do for f in bench/autcol-graphs/*.fh; do
    FHJIT_NTT_PLAN=autcol=$m timeout 40 $B/tools/fhjit-run $f --backend=cuda --check > $L/autcol${m}_$(basename $f).log 2>&1
    rc=$?; echo "autcol=$m $(basename $f) rc $rc $(grep -E 'in total' $L/autcol${m}_$(basename $f).log)"
  done; done
  echo "t=$SECONDS"
  timeout 120 $B/bench/s7_bench --aut-only --radix r32,r62 --json $OUT/s7_aut.json > $L/s7_bench.log 2>&1
  echo "s7_bench rc $?"; grep -iE 'automorphism|FAIL|mismatch' $L/s7_bench.log | head -30; echo "t=$SECONDS"
  for m in 1 2; do for tool in memcheck racecheck; do f=bench/autcol-graphs/ac4.fh
    ((SECONDS < budget - 60)) || continue
    FHJIT_NTT_PLAN=autcol=$m timeout 60 $SAN --tool $tool $B/tools/fhjit-run $f --backend=cuda --check > $L/${tool}${m}_ac4.log 2>&1
    echo "autcol=$m $tool ac4 rc $? $(grep -E 'in total|ERROR SUMMARY|RACECHECK SUMMARY' $L/${tool}${m}_ac4.log | tr '\n' ' ')"
  done; done
  echo "t=$SECONDS"
  ((SECONDS < budget - 100)) && { timeout 100 $T --only section7 --quick > $L/gpu.log 2>&1; echo "gpu rc $?"; grep -E "^(PASS|FAIL)" $L/gpu.log | tail -3; echo "t=$SECONDS"; }
  ((SECONDS < budget - 120)) && { timeout 120 $SAN --tool memcheck $T --only section7 --quick > $L/memcheck.log 2>&1; echo "memcheck rc $?"; grep -E "^(PASS|FAIL)|ERROR SUMMARY" $L/memcheck.log | tail -3; echo "t=$SECONDS"; }
  ((SECONDS < budget - 60)) && { timeout 60 $B/bench/ckks_bench --radix r32 --ops 4,5 --fused-only --json $OUT/ckks_r32.json > $L/ckks_r32.log 2>&1
    echo "ckks r32 rc $?"; grep -E '^r32|FAIL|mismatch' $L/ckks_r32.log; }
  echo "t=$SECONDS"
}
# autvec: kernel 0's staged load one word a thread (ntt_plan autvec=0)
# beside the vectors, within AUTVEC_S (default 480 s): the autcol graphs
# with autcol=1 (the default), autcol=1,autvec=0 and autcol=2,autvec=0
# against the interpreter; s7_bench --aut-only twice (every form's line,
# same run); ac4 under memcheck and racecheck with both of autcol=1's
# loads; the GPU test's section7 and ckks groups (--quick), section7
# under memcheck.
autvec() {
  local f form tool budget=${AUTVEC_S:-480}
  for form in autcol=1 autcol=1,autvec=0 autcol=2,autvec=0; do for f in bench/autcol-graphs/*.fh; do
    FHJIT_NTT_PLAN=$form timeout 40 $B/tools/fhjit-run $f --backend=cuda --check > $L/$form.$(basename $f).log 2>&1
    echo "$form $(basename $f) rc $? $(grep -E 'in total' $L/$form.$(basename $f).log)"
  done; done
  echo "t=$SECONDS"
  for i in 1 2; do
    timeout 100 $B/bench/s7_bench --aut-only --radix r32,r62 --json $OUT/s7_aut$i.json > $L/s7_aut$i.log 2>&1
    echo "s7_bench $i rc $?"; grep -iE 'automorphism|FAIL|mismatch' $L/s7_aut$i.log | head -30; echo "t=$SECONDS"
  done
  for form in autcol=1 autcol=1,autvec=0; do for tool in memcheck racecheck; do f=bench/autcol-graphs/ac4.fh
    ((SECONDS < budget - 60)) || continue
    FHJIT_NTT_PLAN=$form timeout 60 $SAN --tool $tool $B/tools/fhjit-run $f --backend=cuda --check > $L/$tool.$form.ac4.log 2>&1
    echo "$form $tool ac4 rc $? $(grep -E 'in total|ERROR SUMMARY|RACECHECK SUMMARY' $L/$tool.$form.ac4.log | tr '\n' ' ')"
  done; done
  echo "t=$SECONDS"
  ((SECONDS < budget - 100)) && { timeout 100 $T --only section7,ckks --quick > $L/gpu.log 2>&1; echo "gpu rc $?"; grep -E "^(PASS|FAIL)" $L/gpu.log | tail -3; echo "t=$SECONDS"; }
  ((SECONDS < budget - 110)) && { timeout 110 $SAN --tool memcheck $T --only section7 --quick > $L/memcheck.log 2>&1; echo "memcheck rc $?"; grep -E "^(PASS|FAIL)|ERROR SUMMARY" $L/memcheck.log | tail -3; echo "t=$SECONDS"; }
}
case "$1" in checks) checks ;; bench) bench ;; autcol) autcol "$@" ;; lean) lean ;; autvec) autvec ;;
  *) echo "usage: $0 checks|bench|autcol [dir]|lean|autvec" >&2; exit 2 ;; esac
