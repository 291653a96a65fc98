#!/usr/bin/env bash
# build-device.sh: builds the self-contained tree that runs on the GPU
# machine (Ubuntu 24.04, no LLVM there): LLVM 19 linked statically into one
# stripped libfhjit.so, plus the tools, GPU tests and benchmarks, which find
# the library through $ORIGIN rpaths. Output: dist/device (small enough to be
# carried to the device, under 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=build/device
OUT=dist/device

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFHJIT_LLVM_STATIC=ON >/dev/null
ninja -C "$BUILD" -j "$(nproc)"

rm -rf "$OUT"
mkdir -p "$OUT"
# Keep the build tree's relative layout so the $ORIGIN/.. rpaths hold.
(cd "$BUILD" && find . -maxdepth 3 -type f -perm -u+x ! -name '*.sh' ! -path './CMakeFiles/*' \
   ! -name 'test_*' -print0 | xargs -0 -I{} cp --parents {} "$ROOT/$OUT/")
cp -P "$BUILD"/libfhjit.so* "$OUT/"
# The commit the build came from (the device gets no .git).
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!dist' || echo -dirty)" >"$OUT/COMMIT"
# randgraph's random graphs as text for session-round.sh's checks (the
# static build cannot make rg_emit: it is a unit-test program), 300 of
# pointwise ops, NTTs and re-indexing and 200 with limb-mixing ops, half
# of them under random ntt_plan keys, the CKKS and section 7 examples under
# four random plans each, and the lit graphs that run through fhjit-run
# --check as they are (regressions). The seed changes by the day; each
# random graph's file name carries its seed.
RG_EMIT=${RG_EMIT:-build/debug/test/rg_emit}
if [ -x "$RG_EMIT" ]; then
  mkdir -p "$OUT/random-graphs"
  copies=()
  for f in examples/ckks/*.fh examples/s7/*.fh examples/ntt/*.fh examples/keyswitch_3digits.fh; do
    copies+=(--copy "$f")
  done
  seed=${RG_SEED:-$(( $(date +%s) / 86400 * 1000 ))}
  "$RG_EMIT" --seed "$seed" --count "${RG_COUNT:-300}" --copies 4 "${copies[@]}" \
    "$OUT/random-graphs" | sed 's/^/  /'
  # and graphs with SPEC 7's limb-mixing ops (bconv, rescale, modup,
  # moddown, key switches on a chain Q ++ P), seeds 500000 further on
  "$RG_EMIT" --seed "$((seed + 500000))" --count "${RG_MIX_COUNT:-200}" --mix 25 \
    "$OUT/random-graphs" | sed 's/^/  /'
  grep -lE 'RUN: %fhjit-run %s --check( *\|.*)?$' -r test/lit --include='*.fh' |
    xargs -r cp -t "$OUT/random-graphs"
else
  echo "  (no $RG_EMIT: no random graphs for the GPU checks; build the Debug tree first)"
fi
find "$OUT" -type f -perm -u+x -exec strip --strip-unneeded {} + 2>/dev/null || true
# lit configuration and test inputs are not needed there; graphs come from the tree.
du -sh "$OUT"
ldd "$OUT"/libfhjit.so.0 | sed 's/^/  /'
