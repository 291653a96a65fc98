#!/usr/bin/env bash
# install-deps.sh: installs exactly the Debian packages fhjit needs to build
# and test (idempotent: installs only what is missing). Run as root or with sudo.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  llvm-19-dev      # LLVM-C API, NVPTX backend, ORC JIT (CMake package too)
  llvm-19-tools    # lit and FileCheck for the test suite
  libzstd-dev zlib1g-dev  # needed by LLVM's CMake files and static links
  check libsubunit-dev    # unit tests (Check through pkg-config)
  clang           # libFuzzer target (optional build, -DFHJIT_FUZZ=ON)
  python3
  python3-numpy python3-pytest  # the Python package's tests (scripts/test.sh)
  python3-setuptools python3-wheel python3-pip  # pip install ./python, offline (test_packaging)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
