#!/usr/bin/env bash
# fuzz-long.sh: the long differential fuzz run of issue 20 (random valid
# graphs -> bind -> host JIT, word for word against the interpreter), spread
# over PROCS processes of the standalone fuzz_diff driver with disjoint seed
# ranges; prints each process's summary line and the totals.
#   scripts/fuzz-long.sh BIN PROCS SECONDS BASE_SEED [NTT_PERCENT]
# BIN is a fuzz_diff_run binary (test/fuzz/fuzz_diff.c). For the GPU
# machine's 16 cores, a static one, after scripts/build-device.sh:
#   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Ilib -Itest/unit
#      -Ibuild/device/generated test/fuzz/fuzz_diff.c test/unit/randgraph.c
#      test/unit/testutil.c -o dist/fuzz/fuzz_diff_run -L/usr/lib/llvm-19/lib
#      -Wl,--start-group build/device/lib/libfhjit_*.a
#      -Wl,--end-group $(llvm-config-19 --link-static --libs nvptxcodegen
#      nvptxdesc nvptxinfo orcjit native passes ipo instcombine scalaropts
#      vectorize transformutils analysis core support target)
#      -l:libzstd.so.1 -lz -lstdc++ -lm -lpthread -ldl -Wl,--gc-sections
# (strip it: 43 MB), then carry dist/fuzz to the device alone (with
# dist/device it passes the 64 MiB a call carries).
set -euo pipefail
BIN=$1 PROCS=$2 SECS=$3 BASE=$4 NTT=${5:-5}
LOG=$(mktemp -d)
for p in $(seq 0 $((PROCS - 1))); do
  "$BIN" --seed $((BASE + p * 10000000)) --seconds "$SECS" --ntt "$NTT" --quiet >"$LOG/$p.txt" 2>&1 &
done
wait
cat "$LOG"/*.txt
awk '/^fuzz_diff:/ { for (i = 1; i <= NF; i++) {
       if ($(i+1) == "executions,") e += $i; if ($(i+1) == "reached") j += $i;
       if ($(i+1) == "mismatches,") m += $i; if ($(i+1) == "errors,") x += $i } }
     END { printf "fuzz-long: %d executions, %d reached the JIT, %d mismatches, %d errors\n", e, j, m, x }' "$LOG"/*.txt
