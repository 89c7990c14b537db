"""Run every benchmark in ``benchmarks/`` and keep its output with the machine and the date.

``make bench`` calls this. Each ``benchmarks/<name>.py`` runs in its own process (its output is shown
as it runs); ``benchmarks/results/<name>.json`` then holds ``benchmark``, ``date`` (UTC), ``seconds``,
``machine`` (CPUs, platform, Python/torch/sympy versions, load average at start) and ``output`` (what
the benchmark printed, a Markdown table). The documentation's Benchmarks page renders these files;
they are not committed (every machine measures its own). Exit code 1 if a benchmark fails.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rwtoolkit.io import write_json_atomic  # noqa: E402 - after the sys.path line above, so a clone without an install runs it


def machine() -> dict:
    """What the numbers depend on: CPU count, platform, library versions, load at the start."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "torch": version("torch"),
        "sympy": version("sympy"),
        "load_average": None if load is None else [round(x, 2) for x in load],
    }


def main() -> int:
    results = ROOT / "benchmarks" / "results"
    status = 0
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        info = machine()
        date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, str(script)], check=False, capture_output=True, text=True, cwd=ROOT
        )
        seconds = time.perf_counter() - start
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr)
        if proc.returncode != 0:
            print(f"run_benchmarks: {script.name} failed with exit code {proc.returncode}", file=sys.stderr)
            status = 1
            continue
        record = {
            "benchmark": script.name,
            "date": date,
            "seconds": seconds,
            "machine": info,
            "output": proc.stdout,
        }
        write_json_atomic(record, results / f"{script.stem}.json")
    return status


if __name__ == "__main__":
    sys.exit(main())
