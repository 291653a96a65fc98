#!/usr/bin/env bash
# ntt-profile.sh: fhjit's NTT kernels under the microscope, on the GPU
# machine: their SASS (fhjit-dump PTX through ptxas, cuobjdump) beside the
# CUDA baseline's (its product-rate kernel is the floor), and Nsight Compute
# on N = 2^16 (r62 x 32 rows, r32 x 64 rows): stall reasons per issued
# instruction, pipe utilisation, and per-instruction SASS with warp-stall
# samples. Logs go to OUT (packed into OUT/profile.tgz).
#   bench/ntt-profile.sh BUILD OUT [PLAN ...]
# Each PLAN (FHJIT_NTT_PLAN syntax) adds a SASS dump and a profile of that plan.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && OUT=$(cd "$2" && pwd) || exit 2
shift 2
LOGS=$(mktemp -d /tmp/fhjit-profile-XXXXXX)
export LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CUDA=$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")
NCU=$(command -v ncu || ls "$CUDA"/ncu /usr/local/cuda*/bin/ncu 2>/dev/null | head -n 1)
PLANS=("" "$@")

graph() { # radix log rows
  cat <<G
graph @p radix($1) {
  %x = input pt<[], $3, $((1 << $2))> coef mont
  %tf = input twiddles<$3, $((1 << $2))>
  %f = ntt_fwd %x, %tf mode(mont)
  output %f
}
G
}

# SASS and instruction mix, per plan and radix
for pi in "${!PLANS[@]}"; do
  for spec in "r62 16 32" "r32 16 64"; do
    set -- $spec
    tag="$1-n$2-p$pi"
    graph "$1" "$2" "$3" >"$LOGS/$tag.fh"
    FHJIT_NTT_PLAN="${PLANS[$pi]}" "$BUILD/tools/fhjit-dump" --emit=ptx "$LOGS/$tag.fh" >"$LOGS/$tag.ptx" 2>&1
    "$CUDA/ptxas" -arch=sm_90 -v -o "$LOGS/$tag.cubin" "$LOGS/$tag.ptx" >"$LOGS/$tag.ptxas" 2>&1
    "$CUDA/cuobjdump" -sass "$LOGS/$tag.cubin" >"$LOGS/$tag.sass" 2>&1
    echo "== $tag plan '${PLANS[$pi]}': $(grep -o 'Used [0-9]* registers' "$LOGS/$tag.ptxas" | tr '\n' ' ')"
    # opcode histogram per kernel (first word after the address)
    awk '/Function :/{k=$3} /\/\*[0-9a-f]{4}\*\//{ for(i=1;i<=NF;i++) if ($i ~ /^\/\*[0-9a-f]+\*\/$/) { op=$(i+1); if (op ~ /^@/) op=$(i+2); sub(/\..*/,"",op); n[k" "op]++; t[k]++; break } }
         END { for (x in n) print x, n[x]; for (k in t) print k, "TOTAL", t[k] }' "$LOGS/$tag.sass" |
      sort -k1,1 -k3,3nr | awk '{ if ($1 != last) { printf "\n  %s:", $1; last=$1 } printf " %s %s", $2, $3 } END { print "" }'
  done
done

# The baseline's kernels
"$CUDA/nvcc" -O3 -std=c++17 -arch=sm_90 -cubin -o "$LOGS/ntt_cuda.cubin" "$REPO/bench/baselines/ntt_cuda.cu" \
  >"$LOGS/ntt_cuda.build.log" 2>&1 && "$CUDA/cuobjdump" -sass "$LOGS/ntt_cuda.cubin" >"$LOGS/ntt_cuda.sass" 2>&1
echo "== baseline product kernels (SASS lines): $(grep -c '' "$LOGS/ntt_cuda.sass" 2>/dev/null)"

# Nsight Compute
if [ -n "$NCU" ]; then
  METRICS='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active$,regex:sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active$,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum'
  for pi in "${!PLANS[@]}"; do
    for spec in "r62 32" "r32 64"; do
      set -- $spec
      tag="$1-p$pi"
      FHJIT_NTT_PLAN="${PLANS[$pi]}" timeout 120 "$NCU" --clock-control none -k regex:fhjit_ntt -c 2 \
        --metrics "$METRICS" "$BUILD/bench/ntt_bench" --log2 16 --radix "$1" --rows "$2" --no-keyswitch \
        --reps 1 >"$LOGS/ncu-$tag.log" 2>&1
      echo "== ncu $tag plan '${PLANS[$pi]}'"
      grep -E "fhjit_ntt.*\(|duration|stalled_(barrier|long_scoreboard|short_scoreboard|wait|math_pipe|mio_throttle|not_selected|lg_throttle|dispatch|no_instruction|selected)|pipe_(alu|fma|fmaheavy|lsu|uniform)_cycles|inst_executed.sum|issue_active|warps_active|bank_conflicts|op_shared" "$LOGS/ncu-$tag.log" |
        sed -e 's/smsp__average_warps_issue_stalled_/stall_/' -e 's/_per_issue_active.ratio//' -e 's/  */ /g'
    done
  done
  # per-instruction SASS with stall samples, default plan, both radices
  for spec in "r62 32" "r32 64"; do
    set -- $spec
    timeout 150 "$NCU" --clock-control none -k regex:fhjit_ntt -c 2 --set full --import-source no \
      --page source --print-source sass --csv "$BUILD/bench/ntt_bench" --log2 16 --radix "$1" --rows "$2" \
      --no-keyswitch --reps 1 >"$LOGS/ncu-source-$1.csv" 2>&1
    echo "== source page $1: $(wc -l <"$LOGS/ncu-source-$1.csv") lines"
  done
fi
tar czf "$OUT/profile.tgz" -C "$LOGS" .
