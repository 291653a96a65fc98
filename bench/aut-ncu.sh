#!/usr/bin/env bash
# aut-ncu.sh: per-kernel Nsight Compute figures of a forward NTT that reads
# a coefficient automorphism (bench/ncu-graphs/ncu_r32_48.fh, r32 N = 2^16
# x 48 rows, k = 125) under each form of its loads, beside the same NTT
# alone (ncu_r32_48_plain.fh): which kernel the automorphism's cost is in,
# and what bounds it (issue, shared-memory bank conflicts, stalls). On the
# GPU machine with dist/device carried:
#   OUT=out bash bench/aut-ncu.sh [FORM ...]   (default: autcol=1 autcol=1,autvec=1 autcol=2)
#   OUT=out bash bench/aut-ncu.sh inv          (the NTT-domain automorphism in
#                                               an inverse NTT, its default plan)
# Clocks not locked, caches flushed before each kernel (ncu's default),
# the two kernels of the graph's one launch (fhjit-run --backend=cuda).
set -u
B=dist/device
export LD_LIBRARY_PATH=$PWD/$B FHJIT_CACHE=0
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -n 1)
[ -n "$NCU" ] || { echo "aut-ncu.sh: no ncu on this machine" >&2; exit 2; }
[ $# -gt 0 ] || set -- autcol=1 autcol=1,autvec=1 autcol=2
M=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
M=$M,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,launch__registers_per_thread,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
for s in long_scoreboard short_scoreboard barrier mio_throttle lg_throttle math_pipe_throttle; do
  M=$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
done
run() { # name, graph, plan
  local log rc
  log="$OUT/ncu_$(echo "$1" | tr '=,' '__').log" # plain names: a call returns no others
  FHJIT_NTT_PLAN="$3" timeout 150 "$NCU" --clock-control none -k regex:fhjit_ntt -c 2 --metrics "$M" \
    $B/tools/fhjit-run "$2" --backend=cuda --check > "$log" 2>&1
  rc=$?
  echo "== $1 (rc $rc) $(grep -E 'in total' "$log")"
  awk '/fhjit_ntt[0-9a-z_]*/ && /\(/ { match($0, /fhjit_ntt[0-9a-z_]*/); k = substr($0, RSTART, RLENGTH) }
       /gpu__time|inst_executed|issue_active|bank_conflicts|dram__bytes|warps_active|registers_per|t_sectors|issue_stalled/ {
         name = $1; sub(/\.avg\.pct_of_peak_sustained_(active|elapsed)/, "%", name)
         sub(/^(sm__|smsp__|gpu__|dram__|launch__|l1tex__)/, "", name); sub(/average_warps_issue_stalled_/, "stall_", name)
         sub(/_per_issue_active.ratio/, "", name); sub(/data_bank_conflicts_pipe_lsu_mem_shared_op_/, "bank_", name)
         v[k] = v[k] sprintf(" %s=%s", name, $NF) }
       END { for (k in v) print "  " k ":" v[k] }' "$log" | sort
}
if [ "$1" = inv ]; then
  run inv_plain bench/ncu-graphs/ncu_r32_48_inv_plain.fh ""
  run inv_aut bench/ncu-graphs/ncu_r32_48_inv.fh ""
  exit 0
fi
run plain bench/ncu-graphs/ncu_r32_48_plain.fh ""
for f in "$@"; do run "$f" bench/ncu-graphs/ncu_r32_48.fh "$f"; done
