#!/usr/bin/env bash
# test.sh: the README's test command. On a fresh Debian 12 machine it
# installs the packages fhjit needs, builds, and runs every test: unit tests
# (Check), lit + FileCheck tests (PTX checked with ptxas when the CUDA toolkit
# is present), the Python package's pytest suite (its GPU path against the
# fake libcuda), then the unit and lit suites again under ASan + UBSan, and a
# short smoke run of the parser fuzz target. GPU tests skip without a driver.
# Exits non-zero on any failure, and when no test ran.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=${JOBS:-$(nproc)}

./scripts/install-deps.sh

configure_build() { # dir, extra cmake args...
  local dir=$1; shift
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
  ninja -C "$dir" -j "$JOBS"
}

run_ctest() { # dir, label description
  ctest --test-dir "$1" --output-on-failure --no-tests=error -j "$JOBS"
}

mkdir -p build
echo "== build (Debug, -Wall -Wextra -Werror) =="
configure_build build/debug -DCMAKE_C_FLAGS=-Werror
echo "== layering (scripts/check-layers.sh: includes and the per-layer archives) =="
./scripts/check-layers.sh build/debug
echo "== tests =="
FHJIT_TEST_SAMPLE=0 run_ctest build/debug # every case (the ASan stage samples)

echo "== Python package (pytest; the GPU path against the fake libcuda) =="
# Debian's interpreter (python3-numpy, python3-pytest), the package from the
# tree, the library just built; a cache directory of its own, since the fake
# driver's "cubins" must never reach a real driver's cache. Not under ASan:
# loading an ASan library through ctypes needs LD_PRELOAD (docs/python.md).
rc=0
FHJIT_LIBRARY="$ROOT/build/debug/libfhjit.so" PYTHONPATH="$ROOT/python" \
  FHJIT_LIBCUDA="$ROOT/build/debug/test/unit/fake_cuda/libfake_cuda.so" \
  FHJIT_CACHE_DIR="$ROOT/build/pytest-fhjit-cache" \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider "$ROOT/python/tests" || rc=$?
if [ "$rc" -ne 0 ]; then
  [ "$rc" -eq 5 ] && echo "pytest: no test ran"
  exit 1
fi

echo "== install; build and run examples/embed against the installed package =="
cmake --install build/debug --prefix "$ROOT/build/prefix" >/dev/null
cmake -S examples/embed -B build/embed-cmake -G Ninja -DCMAKE_PREFIX_PATH="$ROOT/build/prefix" >/dev/null
ninja -C build/embed-cmake
build/embed-cmake/embed
PKG_CONFIG_PATH="$ROOT/build/prefix/lib/pkgconfig" \
  cc -std=c11 -Wall -Wextra -Werror examples/embed/embed.c -o build/embed-pkgconfig \
  $(PKG_CONFIG_PATH="$ROOT/build/prefix/lib/pkgconfig" pkg-config --cflags --libs fhjit) \
  -Wl,-rpath,"$ROOT/build/prefix/lib"
build/embed-pkgconfig

echo "== build (ASan + UBSan) =="
# -O1 as ASan's documentation advises: the Debug stage above already ran
# these tests at -O0.
configure_build build/asan -DFHJIT_SANITIZE=ON -DCMAKE_C_FLAGS=-O1
echo "== tests under ASan + UBSan =="
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
# Check's test cases in one process, not a fork each: forking an ASan
# process copies its shadow mappings and runs LeakSanitizer once per child,
# which took 4x the test's own time (test_bconv 350 s forked, 83 s not).
# Leaks are still checked, once at each test program's exit.
export CK_FORK=no
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The heaviest loop tests run a fixed sample of their cases here
# (FHJIT_TEST_SAMPLE, test/unit/testutil.h; docs/testing.md): under ASan
# they take 2-8x their Debug time, and this stage (1858 s) kept CI past its
# 45 minutes on 2 cores. The sampled cases still cover each radix and each
# fusion and plan form of those tests; the Debug stage ran every case.
# test_random_graphs' host-vs-interpreter graphs: 150 here, the first 150
# of the 3000 the Debug stage ran. Under ASan a graph costs several times
# its Debug time, and this stage is there to run the code paths once under
# the sanitizers: 150 graphs of up to 40 ops each still reach every section
# 3 op and view many times over (its reindex and limb-mixing graphs keep
# their own ASan counts).
FHJIT_TEST_SAMPLE=1 FHJIT_RANDOM_GRAPHS=${FHJIT_RANDOM_GRAPHS_ASAN:-150} run_ctest build/asan

if command -v clang >/dev/null; then
  echo "== fuzz target smoke run (60 s) =="
  ./scripts/fuzz.sh build/fuzz 60
fi
echo "== all tests passed =="
