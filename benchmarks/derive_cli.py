"""``rw derive --steps 4`` through the console command: exact loss, accuracy and attention on screen.

Run by hand (`.venv/bin/python benchmarks/derive_cli.py`); runs the command as a user would (a
subprocess of the installed ``rw``, so start-up and printing count) and prints one Markdown row per
configuration: wall-clock seconds and the target. The targets: K=5, N=6, p=3/10 within 30 s on two
cores, and every K, N <= 7 at t = 4 within a minute (seconds each on an idle machine).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time

#: (K, N, p, target seconds)
CASES = [(5, 6, "3/10", 30.0), (3, 4, "3/10", 30.0), (7, 5, "3/10", 60.0), (7, 7, "3/10", 60.0)]


def _seconds(K: int, N: int, p: str, steps: int) -> float:
    rw = shutil.which("rw") or f"{sys.prefix}/bin/rw"
    argv = [rw, "derive", "--K", str(K), "--N", str(N), "--p", p, "--steps", str(steps), "--mu", "1"]
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=4, help="GD steps T (default 4)")
    parser.add_argument("--quick", action="store_true", help="only the K=5, N=6 case")
    args = parser.parse_args()
    print("| command | seconds | target (s) | met |")
    print("|---|---:|---:|:---:|")
    failed = False
    for K, N, p, target in CASES[:1] if args.quick else CASES:
        seconds = _seconds(K, N, p, args.steps)
        met = seconds < target
        failed |= not met
        print(
            f"| rw derive --K {K} --N {N} --p {p} --steps {args.steps} --mu 1 | {seconds:.1f} | {target:.0f} "
            f"| {'yes' if met else 'no'} |",
            flush=True,
        )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
