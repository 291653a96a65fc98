#!/usr/bin/env bash
# check-layers.sh: fails when a lib/ layer reaches one it must not (issue 15's
# layering), by two independent readings:
#   1. includes: every `#include "DIR/..."` in lib/LAYER/ and tools/;
#   2. the link graph: every symbol a layer's static library leaves undefined
#      that another layer's library defines (nm over BUILD/lib/libfhjit_*.a).
# The rules (support <- ir; support <- nvptx, jit; lower <- ir, nvptx, jit;
# runtime <- lower and everything below; tools on the public API only):
#   support  reaches nothing
#   ir       support
#   nvptx    support              (LLVM set-up and PTX; never the IR)
#   jit      support, nvptx       (the host ORC JIT and its thread splitter)
#   lower    support, ir, nvptx, jit
#   runtime  support, ir, nvptx, lower
#   tools    include/fhjit only (and their own files)
#   ./scripts/check-layers.sh [BUILD]   (BUILD: a configured build tree; the
#   link reading is skipped without one)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-}
declare -A ALLOWED=(
  [support]="support"
  [ir]="support ir"
  [nvptx]="support nvptx"
  [jit]="support nvptx jit"
  [lower]="support ir nvptx jit lower"
  [runtime]="support ir nvptx lower runtime"
)
bad=0
allowed() { # layer dir
  local a
  for a in ${ALLOWED[$1]}; do [ "$a" = "$2" ] && return 0; done
  return 1
}

# 1. includes
for dir in lib/*/; do
  layer=$(basename "$dir")
  if [ -z "${ALLOWED[$layer]+x}" ]; then
    echo "check-layers: lib/$layer is not a known layer (add it to the rules)"; bad=1; continue
  fi
  while IFS=: read -r file line text; do
    target=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$text")
    [ "$target" = fhjit ] && continue # the public headers
    allowed "$layer" "$target" && continue
    echo "check-layers: $file:$line: layer '$layer' includes '$target': $text"
    bad=1
  done < <(grep -nE '#include "[a-z_]+/' "$dir"* /dev/null | sed -E 's/^([^:]+):([0-9]+):/\1:\2:/')
done
while IFS=: read -r file line text; do
  echo "check-layers: $file:$line: tools use the public API only: $text"
  bad=1
done < <(grep -nE '#include "(support|ir|lower|nvptx|jit|runtime)/' tools/* /dev/null || true)

# 2. the link graph
if [ -n "$BUILD" ]; then
  declare -A DEFINED_BY
  for lib in "$BUILD"/lib/libfhjit_*.a; do
    [ -f "$lib" ] || continue
    layer=$(basename "$lib" .a); layer=${layer#libfhjit_}
    while read -r sym; do DEFINED_BY[$sym]=$layer; done \
      < <(nm --defined-only -g "$lib" 2>/dev/null | awk 'NF == 3 {print $3}')
  done
  [ ${#DEFINED_BY[@]} -gt 0 ] || { echo "check-layers: no lib/libfhjit_*.a under $BUILD"; exit 1; }
  for lib in "$BUILD"/lib/libfhjit_*.a; do
    layer=$(basename "$lib" .a); layer=${layer#libfhjit_}
    while read -r sym; do
      owner=${DEFINED_BY[$sym]:-}
      [ -z "$owner" ] || [ "$owner" = "$layer" ] && continue
      allowed "$layer" "$owner" && continue
      echo "check-layers: lib/$layer uses $sym from lib/$owner"
      bad=1
    done < <(nm --undefined-only -g "$lib" 2>/dev/null | awk '$1 == "U" {print $2}' | sort -u)
  done
fi
[ $bad -eq 0 ] && echo "check-layers: every layer reaches only downward"
exit $bad
