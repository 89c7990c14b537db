"""``rw derive --json``: oracle size, peak memory and time, and the up-front estimate against the measurement.

Run by hand (`.venv/bin/python benchmarks/oracle_cost.py`, or `--quick` for the first table only).
Each command runs as a user would run it (the installed ``rw`` in a subprocess, start-up and printing
included); its peak memory is the child's maximum resident set (``getrusage``).

Table 1, K = 5, N = 6, p = 3/10, μ = 7/2, 4 steps, in interleaved rounds (median of ``--rounds``):
``rw derive`` without ``--json``, with ``--json --no-per-input`` and with ``--json --per-input``.
Targets (issue 22): the header under 50 MB and the job under 2 GB of memory without per-input values,
the per-input file within 4x of that header, the whole ``--json`` job within 3x of the run without it.

Table 2: ``rwtoolkit.engines.exact.job_estimate`` against the measured seconds, peak memory and bytes written, over
circle walks of several sizes and step counts; the target is every ratio within [1/3, 3].
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_MEASURE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, done.returncode)\n"
)
#: (K, N, steps) of table 2: every stage of the cost model (t = 2 with many inputs, t >= 3 quadratic).
GRID = [
    (5, 6, 4),
    (5, 6, 8),
    (3, 4, 8),
    (7, 5, 6),
    (4, 7, 5),
    (5, 8, 4),
    (4, 9, 3),
    (3, 10, 3),
    (4, 11, 2),
    (6, 12, 2),
]


def _rw() -> str:
    return shutil.which("rw") or f"{sys.prefix}/bin/rw"


def _run(argv: list[str]) -> tuple[float, int]:
    out = subprocess.run([sys.executable, "-c", _MEASURE, *argv], capture_output=True, text=True, check=True)
    seconds, rss, code = out.stdout.split()
    if int(code) != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}")
    return float(seconds), int(rss)


def _derive(K: int, N: int, steps: int, extra: list[str]) -> list[str]:
    base = [
        _rw(),
        "derive",
        "--K",
        str(K),
        "--N",
        str(N),
        "--p",
        "3/10",
        "--mu",
        "7/2",
        "--steps",
        str(steps),
    ]
    return base + ["--max-seconds", "100000"] + extra


def _sizes(header: Path) -> tuple[int, int]:
    columns = header.with_name(header.name[: -len(".json")] + ".inputs.npz")
    return header.stat().st_size, columns.stat().st_size if columns.exists() else 0


def _mb(n: float) -> str:
    return f"{n / 1e6:.3g} MB"


def table_issue_case(rounds: int, folder: Path) -> bool:
    cases = {
        "rw derive (no --json)": [],
        "rw derive --json --no-per-input": ["--json", str(folder / "a.json"), "--no-per-input"],
        "rw derive --json --per-input": ["--json", str(folder / "b.json"), "--per-input"],
    }
    runs: dict[str, list[tuple[float, int]]] = {name: [] for name in cases}
    for _ in range(rounds):  # interleaved: A, B, C, A, B, C, ...
        for name, extra in cases.items():
            runs[name].append(_run(_derive(5, 6, 4, extra)))
    sizes = {
        "rw derive --json --no-per-input": _sizes(folder / "a.json"),
        "rw derive --json --per-input": _sizes(folder / "b.json"),
    }
    print("K = 5, N = 6, p = 3/10, μ = 7/2, 4 steps; median of", rounds, "interleaved rounds\n")
    print("| command | seconds (median) | peak memory | header | per-input file |")
    print("|---|---:|---:|---:|---:|")
    median = {n: (statistics.median(s for s, _ in r), max(m for _, m in r)) for n, r in runs.items()}
    for name in cases:
        header, columns = sizes.get(name, (0, 0))
        print(
            f"| `{name}` | {median[name][0]:.2f} | {_mb(median[name][1])} | {_mb(header) if header else '—'} | "
            f"{_mb(columns) if columns else '—'} |"
        )
    plain = median["rw derive (no --json)"][0]
    header_only = sizes["rw derive --json --no-per-input"][0]
    with_inputs = sum(sizes["rw derive --json --per-input"])
    checks = [
        ("header without per-input values < 50 MB", header_only < 50e6),
        ("memory without per-input values < 2 GB", median["rw derive --json --no-per-input"][1] < 2e9),
        (
            "per-input file within 4x of the header alone",
            sizes["rw derive --json --per-input"][1] <= 4 * header_only,
        ),
        (
            "the whole --json job within 3x of the run without --json",
            max(median[n][0] for n in cases if "--json" in n) <= 3 * plain,
        ),
    ]
    print(f"\nheader + per-input file: {_mb(with_inputs)}")
    for text, met in checks:
        print(f"- {text}: {'met' if met else 'NOT met'}")
    return all(met for _, met in checks)


def table_estimates(folder: Path) -> bool:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from rwtoolkit.engines.exact import job_estimate
    from rwtoolkit.tasks import CircleWalk

    print(
        "\n| K | N | steps | inputs | seconds est / meas | memory est / meas | bytes est / meas | within 3x |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|:---:|")
    ok = True
    for K, N, steps in GRID:
        est = job_estimate(CircleWalk(K, N, "3/10"), steps)
        header = folder / f"g{K}_{N}_{steps}.json"
        seconds, rss = _run(_derive(K, N, steps, ["--json", str(header)]))
        size = sum(_sizes(header))
        ratios = [est.seconds / seconds, est.memory / rss, est.file_bytes / size]
        within = all(1 / 3 <= r <= 3 for r in ratios)
        ok &= within
        print(
            f"| {K} | {N} | {steps} | {K * 2 ** (N - 1)} | {est.seconds:.3g} / {seconds:.3g} | "
            f"{_mb(est.memory)} / {_mb(rss)} | {_mb(est.file_bytes)} / {_mb(size)} | {'yes' if within else 'NO'} |",
            flush=True,
        )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="only the first table")
    parser.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds of the first table (default 3)"
    )
    args = parser.parse_args()
    load = os.getloadavg()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, load average "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        ok = table_issue_case(args.rounds, Path(tmp))
        if not args.quick:
            ok &= table_estimates(Path(tmp))
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")
    print(json.dumps({"targets_met": ok}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
