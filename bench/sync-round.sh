#!/usr/bin/env bash
# sync-round.sh: the device round that checks and measures the counts
# between kernels (ipsync and convsync, mixsteps_ipsync.c; off by default
# until this has run). From the repository root on the GPU machine with
# dist/device carried and OUT set:
#   bash bench/sync-round.sh checks   # about 6 minutes
#   bash bench/sync-round.sh bench    # about 5 minutes
# checks: the GPU test's ipfuse group (its ipsync=1 and convsync=1 plans
# run again on the home stream and another, s7_repeat), ckks and section7
# under ipsync=1,convsync=1, memcheck and synccheck of the ipfuse group.
# bench: ckks_bench A/B, r32 key switch, relinearise, HMult + relin +
# rescale, rotate(1), 8 hoisted rotations: the default, ipsync=1,
# convsync=1 and both, two rounds; r62 key switch and HMult with ipfuse=1
# (without which r62 has no reduce kernel) with and without both.
B=dist/device; export LD_LIBRARY_PATH=$PWD/$B FHJIT_CACHE=0
echo "commit $(cat $B/COMMIT)"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
BOTH=ipsync=1,convsync=1
checks() {
  timeout 240 $B/test/gpu/fhjit_gpu_test --only ipfuse > $OUT/gpu_ipfuse.log 2>&1; echo "gpu ipfuse rc $?"; grep -E "PASS|FAIL" $OUT/gpu_ipfuse.log | tail -6
  FHJIT_NTT_PLAN=$BOTH timeout 100 $B/test/gpu/fhjit_gpu_test --only ckks,section7 --quick > $OUT/gpu_ckks.log 2>&1; echo "gpu ckks,section7 $BOTH rc $?"; grep -E "PASS|FAIL" $OUT/gpu_ckks.log | tail -4
  timeout 150 $SAN --tool memcheck $B/test/gpu/fhjit_gpu_test --only ipfuse --quick > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; grep -E "PASS|FAIL|ERROR SUMMARY" $OUT/memcheck.log | tail -3
  timeout 80 $SAN --tool synccheck $B/test/gpu/fhjit_gpu_test --only ipfuse --quick > $OUT/synccheck.log 2>&1; echo "synccheck rc $?"; grep -E "PASS|FAIL|ERROR SUMMARY" $OUT/synccheck.log | tail -3
}
ab() { echo "== $1 ${2:-default}"; FHJIT_NTT_PLAN=$2 timeout 100 $B/bench/ckks_bench --fused-only --radix $1 --ops $3 2>&1 | grep -E "^r(32|62) |FAILED|checked" | sed 's/| floors.*//'; }
bench() {
  for rep in 1 2; do for p in "" ipsync=1 convsync=1 $BOTH; do ab r32 "$p" 0,1,2,4; done; done
  ab r32 "" 5; ab r32 $BOTH 5
  ab r62 ipfuse=1,$BOTH 0,2; ab r62 ipfuse=1 0,2
}
case "$1" in checks) checks ;; bench) bench ;; *) echo "usage: $0 checks|bench" >&2; exit 2 ;; esac
