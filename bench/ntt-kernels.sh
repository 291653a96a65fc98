#!/usr/bin/env bash
# ntt-kernels.sh: per-kernel figures of a forward NTT's kernels under
# several plans, on the GPU machine (Nsight Compute, clocks not locked,
# caches flushed before each kernel as ncu does by default): duration, DRAM
# throughput, FMA/ALU pipe and issue utilisation, warps resident, registers
# and waves. Where ntt_bench --sweep gives a plan's total, this says which
# of its kernels the time goes to and what bounds it.
#   bench/ntt-kernels.sh BUILD OUT RADIX LOG2N ROWS [PLAN ...]
# (no PLAN: the default plan only; "" in the list is the default too).
# NTT_STEADY=1: the kernels of a forward launch in the middle of the timed
# batches instead (ncu -s 100, caches not flushed: what the L2 holds from
# the launches before, as when the batches are timed; the kernels still run
# one at a time, without the overlap of their programmatic launches).
set -u
BUILD=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && OUT=$(cd "$2" && pwd) || exit 2
RADIX=$3 LOGN=$4 ROWS=$5
shift 5
[ $# -gt 0 ] || set -- ""
export LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CUDA=$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")
NCU=$(command -v ncu || ls "$CUDA"/ncu /usr/local/cuda*/bin/ncu 2>/dev/null | head -n 1)
[ -n "$NCU" ] || { echo "ntt-kernels.sh: no ncu on this machine" >&2; exit 2; }
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
METRICS=$METRICS,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active
METRICS=$METRICS,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active
METRICS=$METRICS,smsp__issue_active.avg.pct_of_peak_sustained_active
METRICS=$METRICS,sm__warps_active.avg.pct_of_peak_sustained_active
METRICS=$METRICS,launch__registers_per_thread,launch__waves_per_multiprocessor,launch__block_size
METRICS=$METRICS,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
for s in long_scoreboard short_scoreboard barrier wait math_pipe_throttle mio_throttle lg_throttle \
         not_selected dispatch_stall no_instruction selected; do
  METRICS=$METRICS,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
done
STEADY=
[ "${NTT_STEADY:-0}" = 1 ] && STEADY="-s 100 --cache-control none"
METRICS=$METRICS,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,lts__t_sector_hit_rate.pct
METRICS=$METRICS,dram__bytes_read.sum,dram__bytes_write.sum
i=0
for plan in "$@"; do
  log="$OUT/ncu-$RADIX-n$LOGN-p$i.log"
  # the first two fhjit_ntt launches: the forward transform's checked run
  # (NTT_STEADY: two from the middle of its timed batches)
  FHJIT_NTT_PLAN="$plan" timeout 120 "$NCU" --clock-control none -k regex:fhjit_ntt -c 2 $STEADY \
    --metrics "$METRICS" "$BUILD/bench/ntt_bench" --log2 "$LOGN" --radix "$RADIX" --rows "$ROWS" \
    --no-keyswitch --reps 1 >"$log" 2>&1
  echo "== $RADIX N=2^$LOGN x $ROWS plan '${plan:-default}'"
  awk '/fhjit_ntt[0-9a-z_]*/ && /\(/ { match($0, /fhjit_ntt[0-9a-z_]*/); k = substr($0, RSTART, RLENGTH) }
       /gpu__time_duration.sum|dram__throughput|dram__bytes|hit_rate|pipe_fma|pipe_alu|issue_active|warps_active|registers_per|waves_per|block_size|inst_executed.sum|bank_conflicts|issue_stalled/ {
         name = $1; sub(/\.avg\.pct_of_peak_sustained_(active|elapsed)/, "%", name); sub(/^(sm__|smsp__|gpu__|dram__|launch__|l1tex__)/, "", name)
         sub(/average_warps_issue_stalled_/, "stall_", name); sub(/_per_issue_active.ratio/, "", name)
         v[k] = v[k] sprintf(" %s=%s", name, $NF) }
       END { for (k in v) print "  " k ":" v[k] }' "$log" | sort
  i=$((i + 1))
done
