#!/usr/bin/env bash
# lower_cost.sh: compile cost against graph size (the tables of
# docs/limits.md). Two families of graphs, each compiled to PTX by
# fhjit-dump (--emit=ptx):
#   chain OPS   OPS pointwise ops (mul, add, sub, add_lazy in turn) on the
#               previous value, r32, one row of n = 4096;
#   nest K      K levels of nested compressed reads: z_k = mul_compressed(c_k,
#               z_{k-1}, cyclic) + mul_compressed(c_k, z_{k-1}, contiguous),
#               n_k = 2^k (the shape of issue 20's report).
# Prints one markdown row per graph: the minimum over RUNS runs of the wall
# time, the CPU time (user + sys) and the peak RSS, and the outcome ("ok", or
# the first words of the error). Not run by the tests.
#   bench/lower_cost.sh TOOLS_DIR [RUNS]       (TOOLS_DIR: e.g. build/rel/tools)
# OPS="100 1000" and NEST="1 8" choose the sizes (either may be empty);
# TIMEOUT bounds each run (seconds, default 600); FHJIT_MAX_VALUES applies
# as to any compile.
set -u
TOOLS=$(cd "$1" && pwd) || exit 2
RUNS=${2:-3}
OPS=${OPS-"100 1000 10000 100000"}
NEST=${NEST-"1 2 4 8 12 16 24 32"}
TMP=$(mktemp -d) || exit 2
trap 'rm -rf "$TMP"' EXIT

gen() { # gen chain OPS | gen nest K  -> writes the graph text to stdout
  python3 - "$1" "$2" <<'EOF'
import sys
kind, size = sys.argv[1], int(sys.argv[2])
out = []
if kind == "chain":
    out.append("graph @chain radix(r32) moduli(268369921) {")
    out.append("  %a = input pt<[], 1, 4096> ntt mont")
    out.append("  %b = input pt<[], 1, 4096> ntt mont")
    prev = "a"
    for i in range(size):
        out.append(f"  %v{i} = {('mul', 'add', 'sub', 'add_lazy')[i % 4]} %{prev}, %b")
        prev = f"v{i}"
else:
    out.append("graph @nest radix(r32) moduli(268369921) {")
    out.append("  %z0 = input pt<[], 1, 1> ntt mont")
    for k in range(1, size + 1):
        out.append(f"  %c{k} = input pt<[], 1, {1 << k}> ntt mont")
        out.append(f"  %x{k} = mul_compressed %c{k}, %z{k - 1} layout(cyclic)")
        out.append(f"  %y{k} = mul_compressed %c{k}, %z{k - 1} layout(contiguous)")
        out.append(f"  %z{k} = add %x{k}, %y{k}")
    prev = f"z{size}"
out.append(f"  output %{prev}")
out.append("}")
print("\n".join(out))
EOF
}

lt() { awk "BEGIN { exit !($1 < $2) }"; }

measure() { # measure chain|nest SIZE
  gen "$1" "$2" >"$TMP/g.fh" || exit 2
  local best_wall="" best_cpu="" best_rss="" outcome=""
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %U %S %M" -o "$TMP/time" timeout "${TIMEOUT:-600}" \
      "$TOOLS/fhjit-dump" "$TMP/g.fh" --emit=ptx -o "$TMP/out.ptx" 2>"$TMP/err"
    local rc=$?
    # (a failing command adds a line before the format's)
    read -r wall user sys rss < <(tail -n 1 "$TMP/time") || continue
    local cpu
    cpu=$(awk "BEGIN { printf \"%.2f\", $user + $sys }")
    if [ $rc -eq 0 ]; then outcome=ok
    elif [ $rc -eq 124 ]; then outcome="timeout (${TIMEOUT:-600} s)"
    elif grep -q "more than [0-9]* values" "$TMP/err"; then
      outcome="refused: $(grep -o "more than [0-9]* values" "$TMP/err")"
    else outcome="error: $(head -c 50 "$TMP/err" | tr '\n' ' ')..."; fi
    { [ -z "$best_wall" ] || lt "$wall" "$best_wall"; } && best_wall=$wall
    { [ -z "$best_cpu" ] || lt "$cpu" "$best_cpu"; } && best_cpu=$cpu
    { [ -z "$best_rss" ] || [ "$rss" -lt "$best_rss" ]; } && best_rss=$rss
    [ $rc -eq 124 ] && break # one timeout is enough
  done
  printf "| %s %s | %s s | %s s | %d MB | %s |\n" "$1" "$2" "$best_wall" "$best_cpu" \
    "$((best_rss / 1024))" "$outcome"
}

echo "| graph | wall (min of $RUNS) | CPU | peak RSS | outcome |"
echo "|---|---|---|---|---|"
for n in $OPS; do measure chain "$n"; done
for k in $NEST; do measure nest "$k"; done
