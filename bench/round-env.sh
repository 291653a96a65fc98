# round-env.sh: the common start of a device round script (sourced, from
# the repository root on the GPU machine, dist/device carried, OUT set):
# B the build, R fhjit-run, T the GPU test, SAN compute-sanitizer; logs go
# to $L and come back as $OUT/logs.tgz (a call returns at most 8 files);
# the first line says the commit, the time and the GPU.
B=dist/device; export LD_LIBRARY_PATH=$PWD/$B FHJIT_CACHE=0
L=$(mktemp -d); trap 'tar -C "$L" -czf "$OUT/logs.tgz" . 2>/dev/null' EXIT
echo "commit $(cat $B/COMMIT) $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader)"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
T=$B/test/gpu/fhjit_gpu_test R=$B/tools/fhjit-run
