"""Start-up time of the `rw` command: `rw --help`, a subcommand's --help and an argument error.

Run by hand (`make bench` or `.venv/bin/python benchmarks/cli_startup.py`). Each case runs the
console script in a fresh process; prints a Markdown table of the best and median wall-clock time
over repeats and exits 1 when the best `rw --help` exceeds the target of 0.5 s (torch and SymPy
are loaded only when a command runs, so help and argument errors need neither).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.5
CASES = {
    "rw --help": ["--help"],
    "rw train --help": ["train", "--help"],
    "rw reproduce --help": ["reproduce", "--help"],
    "rw train --K x (argument error)": ["train", "--K", "x", "--out", "unused"],
}


def _seconds(argv: list[str], repeats: int) -> list[float]:
    rw = Path(sys.executable).with_name("rw")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([str(rw), *argv], capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"| command | best (s) | median (s) |  (target for `rw --help`: < {TARGET_S} s)")
    print("| --- | --- | --- |")
    best_help = None
    for name, argv in CASES.items():
        times = _seconds(argv, args.repeats)
        print(f"| {name} | {min(times):.3f} | {statistics.median(times):.3f} |")
        if argv == ["--help"]:
            best_help = min(times)
    assert best_help is not None
    if best_help >= TARGET_S:
        print(f"rw --help took {best_help:.3f} s, above the target of {TARGET_S} s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
