#!/usr/bin/env bash
# run-info.sh: writes run.json, the description of one device run that its
# JSON results keep beside them (bench/results/<date>-<commit>/): the commit
# of the build, the UTC date, the GPU and driver, and the command.
#   bench/run-info.sh BUILD OUT.json COMMAND...
# BUILD/COMMIT (scripts/build-device.sh) names the commit, else git.
set -u
if [ $# -lt 3 ]; then
  echo "usage: $0 BUILD OUT.json COMMAND..." >&2
  exit 2
fi
BUILD=$1 FILE=$2
shift 2
REPO=$(cd "$(dirname "$0")/.." && pwd)
COMMIT=$(cat "$BUILD/COMMIT" 2>/dev/null || git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
python3 - "$FILE" "$COMMIT" "${GPU:-unknown}" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" <<'PY'
import json, sys
out, commit, gpu, date, command = sys.argv[1:6]
parts = [p.strip() for p in gpu.split(",")]
info = {"commit": commit, "date": date, "gpu": parts[0],
        "driver": parts[1] if len(parts) > 1 else "", "memory": parts[2] if len(parts) > 2 else "",
        "command": command, "folder": "%s-%s" % (date[:10], commit)}
with open(out, "w") as f:
    json.dump(info, f, indent=1)
    f.write("\n")
PY
