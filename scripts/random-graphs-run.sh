#!/usr/bin/env bash
# random-graphs-run.sh: runs a directory of random graphs (.fh, written by
# rg_emit from randgraph's generator) through fhjit-run --check on one
# backend, each against the reference interpreter, and says how many came
# out clean. This is how randgraph's corpus reaches the GPU machine, where
# randgraph itself does not build: emit here, carry the files, run there.
#
#   random-graphs-run.sh [--emit RG_EMIT [--count N] [--seed S] [--ntt P]
#                        [--emit-arg ARG ...]] [--backend B]
#                        [--jobs J] [--wrap "CMD ..."] DIR FHJIT_RUN
#
# --emit: first (re)write DIR with RG_EMIT (N graphs from seed S, P % of
#   them with NTTs; each --emit-arg is passed on, e.g. --copies 2 --copy F);
# --wrap: a command each run goes under (compute-sanitizer ...): then a run
#   is clean only when the wrapper's summary says 0 errors too.
# A graph whose first line is `// ntt_plan: KEYS` (rg_emit --plans) runs
# under FHJIT_NTT_PLAN with those keys after the environment's.
# Each graph's output is kept in DIR/NAME.log. Exit 0 when every graph was
# clean, 1 when one failed or none ran, 2 on bad usage.
set -uo pipefail

emit_args=() emit="" count=100 seed=1 ntt=40 backend=cuda jobs=4 wrap=""
while [[ $# -gt 2 ]]; do
  case "$1" in
    --emit) emit=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --ntt) ntt=$2; shift 2 ;;
    --emit-arg) emit_args+=("$2"); shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --wrap) wrap=$2; shift 2 ;;
    *) echo "random-graphs-run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $# -eq 2 ]] || { echo "usage: random-graphs-run.sh [options] DIR FHJIT_RUN" >&2; exit 2; }
dir=$1 run=$2

if [[ -n $emit ]]; then
  rm -rf "$dir" && mkdir -p "$dir" || exit 1
  "$emit" --seed "$seed" --count "$count" --ntt "$ntt" "${emit_args[@]}" "$dir" || exit 1
fi

# One graph: its own seed for fhjit-run's inputs (from the file's name), the
# verdict as the log's last line.
one() {
  local f=$1 log=${1%.fh}.log s plan
  s=$(basename "$f" .fh | tr -cd 0-9)
  # a plan on the file's first line (rg_emit --plans) goes after the
  # environment's, so its keys win
  plan=$(sed -n '1s|^// ntt_plan: ||p' "$f")
  plan=${FHJIT_NTT_PLAN:+$FHJIT_NTT_PLAN${plan:+,}}$plan
  FHJIT_NTT_PLAN=$plan timeout 300 $WRAP "$RUN" "$f" --backend="$BACKEND" --check \
    --seed "${s:-1}" >"$log" 2>&1
  local rc=$?
  if [[ $rc -eq 0 ]] && grep -q "0 mismatching elements in total" "$log" &&
     { [[ -z $WRAP ]] || grep -Eq "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards" "$log"; }; then
    echo "CLEAN" >>"$log"
  else
    echo "FAILED (exit $rc)" >>"$log"
  fi
}
export -f one
export RUN=$run BACKEND=$backend WRAP=$wrap

shopt -s nullglob
files=("$dir"/*.fh)
[[ ${#files[@]} -gt 0 ]] || { echo "random-graphs-run.sh: no .fh files in $dir" >&2; exit 1; }
printf '%s\0' "${files[@]}" | xargs -0 -n 1 -P "$jobs" bash -c 'one "$0"'

clean=0 failed=0
for f in "${files[@]}"; do
  if [[ $(tail -n 1 "${f%.fh}.log") == CLEAN ]]; then
    clean=$((clean + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: $f"
    tail -n 6 "${f%.fh}.log" | sed 's/^/  /'
  fi
done
echo "random graphs on $backend${wrap:+ under ${wrap%% *}}: $clean clean, $failed failed"
[[ $failed -eq 0 ]]
