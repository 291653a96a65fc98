#!/usr/bin/env bash
# run-example.sh: the README's main job. Installs what fhjit needs, builds it,
# then compiles and runs an example graph (default: the ciphertext tensor
# product) on the GPU when a CUDA driver and device are present, otherwise on
# the host path, and checks every output against the reference interpreter.
#   ./scripts/run-example.sh [GRAPH.fh]
set -euo pipefail
cd "$(dirname "$0")/.."
GRAPH=${1:-examples/tensor_product.fh}

./scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DFHJIT_TESTS=OFF >/dev/null
ninja -C build/release -j "$(nproc)" fhjit-dump fhjit-run

echo "== $GRAPH, canonical text =="
build/release/tools/fhjit-dump "$GRAPH" --emit=graph
echo "== PTX for sm_90 (first lines) =="
mkdir -p build/release/example-out
build/release/tools/fhjit-dump "$GRAPH" --emit=ptx --arch=sm_90 -o build/release/example-out/kernel.ptx
head -n 25 build/release/example-out/kernel.ptx
echo "== run and check against the interpreter =="
build/release/tools/fhjit-run "$GRAPH" --check --out-dir build/release/example-out
