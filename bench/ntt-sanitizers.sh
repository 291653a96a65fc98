#!/usr/bin/env bash
# ntt-sanitizers.sh: compute-sanitizer on fhjit's NTT kernels (GPU machine),
# shared by device-round.sh and ntt-round.sh: memcheck on every size
# (ntt_bench --quick), racecheck on tiny sizes with every plan of the sweep's
# grid (ntt_bench --racecheck --sweep). Logs: LOGS/ntt-memcheck.log,
# LOGS/ntt-racecheck.log. Exit status 1 when a tool reports an error; 0 with
# a "skipped" log where no compute-sanitizer is installed.
#   bench/ntt-sanitizers.sh BUILD LOGS
BUILD=$1
LOGS=$2
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
[ -n "$SAN" ] || { echo "skipped: no compute-sanitizer" | tee "$LOGS/ntt-memcheck.log" >"$LOGS/ntt-racecheck.log"; exit 0; }
STATUS=0
timeout 150 "$SAN" --tool memcheck --error-exitcode 99 "$BUILD/bench/ntt_bench" --quick \
  >"$LOGS/ntt-memcheck.log" 2>&1 || STATUS=1
timeout 150 "$SAN" --tool racecheck --error-exitcode 99 "$BUILD/bench/ntt_bench" --racecheck --sweep \
  >"$LOGS/ntt-racecheck.log" 2>&1 || STATUS=1
exit $STATUS
