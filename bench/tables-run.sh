#!/usr/bin/env bash
# tables-run.sh: bench/RESULTS.md's NTT, section 7 and CKKS tables in one
# run on the GPU machine (sourced by a round script after
# bench/round-env.sh: B, L and OUT set): the NTT table with the fused
# key-switch chain (bench/ntt-run.sh), the floors (bench/s7-run.sh), then
# ckks_bench --fused-only and s7_bench against those floors, both radices,
# every result checked against the interpreter. About 260 s on an H200.
# The JSON goes to $OUT, the logs to $L.
bash bench/ntt-run.sh $B $L/ntt >$L/ntt.out 2>&1; echo "ntt rc $? t=$SECONDS"
cp $L/ntt/ntt_cuda.json $L/ntt/ntt_bench.json $L/ntt/run.json "$OUT/" 2>/dev/null
grep -E '^\| *(fwd|inv|r32|r62)|floor|chain|fused|FAIL|mismatch' $L/ntt.out | head -60
S7_PROGRAMS= bash bench/s7-run.sh $B $L/s7 >$L/floors.out 2>&1; echo "floors rc $? t=$SECONDS"
cp $L/s7/floors.json "$OUT/"; tail -n 8 $L/floors.out
for r in r32 r62; do
  timeout 150 $B/bench/ckks_bench --radix $r --fused-only --floors "$OUT/floors.json" \
    --json "$OUT/ckks_$r.json" >$L/ckks_$r.log 2>&1
  echo "ckks $r rc $? t=$SECONDS"
  grep -E '^r(32|62)|FAIL|mismatch' $L/ckks_$r.log
done
timeout 200 $B/bench/s7_bench --floors "$OUT/floors.json" --json "$OUT/s7_bench.json" >$L/s7_bench.log 2>&1
echo "s7_bench rc $? t=$SECONDS"
grep -iE 'FAIL|mismatch' $L/s7_bench.log | head; tail -n 30 $L/s7_bench.log
