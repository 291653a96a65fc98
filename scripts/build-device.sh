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
find "$OUT" -type f -perm -u+x -exec strip --strip-unneeded {} + 2>/dev/null || true
# lit configuration and test inputs are not needed there; graphs come from the tree.
du -sh "$OUT"
ldd "$OUT"/libfhjit.so.0 | sed 's/^/  /'
