#!/usr/bin/env bash
# cluster-ncu.sh: where the cluster schedule's one kernel spends its time
# (issue 19; docs/ntt-cluster.md, "Measured"): Nsight Compute's full set on
# the forward NTT of N = 2^16 under ntt_schedule=cluster, r32 x 48 rows
# (C = 2) and r62 x 32 (C = 8), beside the same transform's two kernels;
# then the per-instruction warp-stall samples of the cluster kernel (the
# source page, SASS), so the barrier waits, the exchange's remote accesses
# and the global loads each get their share. On the GPU machine with
# dist/device carried: OUT=out bash bench/cluster-ncu.sh
# Clocks not locked; caches flushed before each kernel (ncu's default).
set -u
. bench/round-env.sh
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -n 1)
[ -n "$NCU" ] || { echo "cluster-ncu.sh: no ncu on this machine" >&2; exit 2; }
G=bench/ncu-graphs
for cfg in r32:$G/ncu_r32_48_plain.fh r62:$G/ncu_r62_32_plain.fh; do
  rad=${cfg%%:*} f=${cfg#*:}
  for sched in cluster two_kernel; do
    rep=$L/$rad.$sched
    FHJIT_NTT_SCHEDULE=$sched timeout 200 "$NCU" --clock-control none --set full --import-source no \
      -k regex:fhjit_ntt -c 2 -f -o "$rep" $R "$f" --backend=cuda --check > "$rep.log" 2>&1
    echo "== $rad $sched rc $? $(grep -E 'in total' "$rep.log")"
    "$NCU" -i "$rep.ncu-rep" --page details > "$rep.details.txt" 2>&1
    grep -E "^  fhjit_ntt|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Memory Throughput|DRAM Throughput|Executed Ipc A|Block Limit|Waves Per SM|Cluster Size|L1/TEX Hit|L2 Hit|Max Bandwidth|Issue Slots Busy|No Eligible|One or More" "$rep.details.txt" | head -60
    if [ $sched = cluster ]; then
      "$NCU" -i "$rep.ncu-rep" --page source --csv --print-source sass > "$rep.sass.csv" 2> "$rep.sass.err"
      echo "source page rc $? ($(wc -l < "$rep.sass.csv") lines)"
      python3 - "$rep.sass.csv" <<'PY' | head -45
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='')))
hdr = next((i for i, r in enumerate(rows) if any('Source' == c or 'Address' in c for c in r)), None)
if hdr is None: print('no header'); sys.exit()
h = rows[hdr]; data = rows[hdr + 1:]
def col(name):
    for i, c in enumerate(h):
        if c.startswith(name): return i
    return None
src = col('Source'); smp = col('Warp Stall Sampling (All'); 
if smp is None: smp = col('Warp Stall Sampling')
if src is None or smp is None: print('columns:', h[:40]); sys.exit()
def num(x):
    try: return float(x.replace(',', ''))
    except ValueError: return 0.0
tot = sum(num(r[smp]) for r in data if len(r) > smp) or 1
# samples per opcode family, then the top instructions
fam = {}
for r in data:
    if len(r) <= smp: continue
    op = r[src].split()[0] if r[src].split() else '?'
    if op.startswith('@'): op = r[src].split()[1] if len(r[src].split()) > 1 else op
    fam[op.split('.')[0]] = fam.get(op.split('.')[0], 0) + num(r[smp])
print('samples by opcode:', ', '.join(f'{k} {100*v/tot:.1f}%' for k, v in sorted(fam.items(), key=lambda x: -x[1])[:14]))
top = sorted((r for r in data if len(r) > smp), key=lambda r: -num(r[smp]))[:25]
for r in top: print(f'{100*num(r[smp])/tot:5.1f}%  {r[src][:90]}')
PY
    fi
  done
done
echo "t=$SECONDS"
