#!/usr/bin/env python3
"""check-results.py: every raw result file under the given folders (default
bench/results) parses as JSON, so the figures RESULTS.md quotes can be read
back by bench/plot.py and by anyone else. Exits 1 naming each file that
does not, and where.

    bench/check-results.py [DIR ...]
"""
import json
import pathlib
import sys


def main(argv):
    roots = [pathlib.Path(a) for a in argv] or [pathlib.Path(__file__).parent / "results"]
    files = sorted(p for r in roots for p in ([r] if r.is_file() else r.rglob("*.json")))
    bad = 0
    for path in files:
        try:
            json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError) as err:
            print(f"{path}: not valid JSON: {err}")
            bad += 1
    print(f"{len(files)} result files, {bad} not valid JSON")
    return 1 if bad or not files else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
