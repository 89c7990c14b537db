"""``rw check`` and ``rw check --emit``: the estimate each prints before its work against the measurement.

Run by hand (`.venv/bin/python benchmarks/check_cost.py`; `--quick` for the smaller cases only). Each command
runs as a user would run it (the installed ``rw`` in a subprocess, start-up and printing included); its peak
memory is the child's maximum resident set (``getrusage``), its output the bytes of the folder it wrote. The
estimate is the one the command prints before any work: ``rw check`` prints it on stderr
(``rwtoolkit.analyses.check.estimate_check``); for ``--emit`` it is ``rwtoolkit.analyses.check.estimate_fixtures`` of the same configurations,
computed here.

Table 1, ``rw check --emit DIR --configs FILE --steps T``: one configuration per row, varying what the
estimate reads (K, N, the population, M and the embedding, the steps), and the eight built-in configurations.
Table 2, ``rw check FACTORY --model NAME --steps T --examples E``: the reference implementations of
``examples/`` for the paper's model and the other models, varying the steps, the examples, H and d.

The target (issue 39): every ratio estimate / measurement within [1/3, 3]; the exit code is 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_MEASURE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, "
    "done.returncode)\n"
    "sys.stderr.write(done.stderr)\n"
)

#: Table 1: (label, the configuration's family parameters, M or None, embedding, steps, quick).
EMIT = [
    ("M = 10^6 (sine)", {"K": 3, "N": 4, "p": "1/2"}, 10**6, "sine", 2, True),
    ("M = 10^7 (random)", {"K": 3, "N": 4, "p": "1/2"}, 10**7, "random", 1, False),
    ("M = 4·10^7 (sine)", {"K": 3, "N": 4, "p": "1/2"}, 4 * 10**7, "sine", 0, False),
    ("3·2^16 inputs", {"K": 3, "N": 17, "p": "3/10"}, None, "sine", 0, True),
    ("3·2^18 inputs", {"K": 3, "N": 19, "p": "3/10"}, None, "sine", 1, False),
    ("K = 5, N = 10, t = 2", {"K": 5, "N": 10, "p": "3/10"}, None, "sine", 2, True),
    ("K = 4, N = 6, t = 4", {"K": 4, "N": 6, "p": "3/10"}, None, "sine", 4, True),
    ("K = 5, N = 6, t = 3", {"K": 5, "N": 6, "p": "1/3"}, 12, "random", 3, False),
]
#: Table 2: (implementation, options, quick).
CHECK = [
    ("plain_numpy.py:model", ["--steps", "0"], True),
    ("plain_torch.py:model", ["--steps", "2"], True),
    ("plain_torch.py:training", ["--steps", "4", "--examples", "20"], False),
    ("key_query_torch.py:model", ["--model", "key_query", "--head-dim", "1", "--steps", "2"], True),
    ("key_query_torch.py:model", ["--model", "key_query", "--head-dim", "4", "--steps", "4"], False),
    ("multi_head_torch.py:model", ["--model", "multi_head", "--heads", "1", "--steps", "2"], True),
    ("multi_head_torch.py:model", ["--model", "multi_head", "--heads", "3", "--steps", "3"], False),
    ("learned_positions_torch.py:model", ["--model", "learned_positions", "--steps", "3"], False),
    ("learned_positions_torch.py:model", ["--model", "learned_positions", "--steps", "2", "--examples", "20"], True),
    ("two_layer_torch.py:model", ["--model", "two_layer", "--task", "finite", "--steps", "3", "--examples", "3"], False),
    ("tied_embedding_torch.py:tied", ["--model", "tied_embedding", "--steps", "2", "--examples", "5"], False),
    ("linear_attention_torch.py:model", ["--model", "linear_attention", "--steps", "2", "--examples", "3"], False),
]  # fmt: skip


def _rw() -> str:
    return shutil.which("rw") or f"{sys.prefix}/bin/rw"


def _run(argv: list[str]) -> tuple[float, int, str]:
    out = subprocess.run([sys.executable, "-c", _MEASURE, *argv], capture_output=True, text=True, check=True)
    seconds, rss, code = out.stdout.split()
    if int(code) != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}: {out.stderr.strip()}")
    return float(seconds), int(rss), out.stderr


def _mb(n: float) -> str:
    return f"{n / 2**20:.3g} MiB"


def _ratio(est: float, measured: float) -> tuple[str, bool]:
    r = est / measured
    return f"{r:.2f}", 1 / 3 <= r <= 3


def table_emit(quick: bool, folder: Path) -> bool:
    from rwtoolkit.analyses.check import DEFAULT_SPECS, FixtureSpec, estimate_fixtures

    print(
        "| configuration | steps | seconds est / meas | memory est / meas | files est / meas | ratios | within 3x |"
    )
    print("|---|---:|---:|---:|---:|---|:---:|")
    ok = True
    rows = [(label, params, M, kind, steps) for label, params, M, kind, steps, q in EMIT if q or not quick]
    rows.append(("the 8 built-in configurations", None, None, None, 2))
    for i, (label, params, M, kind, steps) in enumerate(rows):
        if params is None:
            specs, extra = list(DEFAULT_SPECS), []
        else:
            entry = {
                "family": "circle",
                "params": params,
                "mu": 2,
                "eta": 1,
                "eps": "1/10",
                "embedding": kind,
            }
            if M is not None:
                entry["M"] = M
            (folder / f"c{i}.json").write_text(json.dumps([entry]))
            specs = [FixtureSpec("circle", params, "2", "1", "1/10", embedding=str(kind), M=M)]
            extra = ["--configs", str(folder / f"c{i}.json")]
        est = estimate_fixtures(specs, steps)
        out = folder / f"out{i}"
        argv = [_rw(), "check", "--emit", str(out), *extra, "--steps", str(steps), "--max-seconds", "100000"]
        seconds, rss, _ = _run(argv)
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        shutil.rmtree(out)
        ratios = [_ratio(est.seconds, seconds), _ratio(est.memory, rss), _ratio(est.file_bytes, size)]
        within = all(w for _, w in ratios)
        ok &= within
        print(
            f"| {label} | {steps} | {est.seconds:.3g} / {seconds:.3g} | {_mb(est.memory)} / {_mb(rss)} | "
            f"{_mb(est.file_bytes)} / {_mb(size)} | {', '.join(r for r, _ in ratios)} | {'yes' if within else 'NO'} |",
            flush=True,
        )
    return ok


def _printed(stderr: str) -> tuple[float, float]:
    """The seconds and bytes of the estimate ``rw check`` printed (``rw check: estimated ~X s, ~Y MiB ...``)."""
    found = re.search(
        r"rw check: estimated ~([0-9.e+-]+) s, ~([0-9.]+) (B|KiB|MiB|GiB|TiB) of memory", stderr
    )
    if found is None:
        raise SystemExit(f"no estimate printed: {stderr.strip()[:300]}")
    unit = 1024 ** ("B", "KiB", "MiB", "GiB", "TiB").index(found.group(3))
    return float(found.group(1)), float(found.group(2)) * unit


def table_check(quick: bool) -> bool:
    print("\n| rw check | seconds est / meas | memory est / meas | ratios | within 3x |")
    print("|---|---:|---:|---|:---:|")
    ok = True
    for target, options, q in CHECK:
        if quick and not q:
            continue
        module, factory = target.split(":")
        argv = [
            _rw(),
            "check",
            f"{ROOT / 'examples' / module}:{factory}",
            *options,
            "--max-seconds",
            "100000",
        ]
        seconds, rss, stderr = _run(argv)
        est_seconds, est_memory = _printed(stderr)  # what the command printed before its work
        ratios = [_ratio(est_seconds, seconds), _ratio(est_memory, rss)]
        within = all(w for _, w in ratios)
        ok &= within
        print(
            f"| `{target} {' '.join(options)}` | {est_seconds:.3g} / {seconds:.3g} | {_mb(est_memory)} / "
            f"{_mb(rss)} | {', '.join(r for r, _ in ratios)} | {'yes' if within else 'NO'} |",
            flush=True,
        )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="only the smaller cases")
    parser.add_argument("--emit-only", action="store_true", help="only table 1")
    parser.add_argument("--check-only", action="store_true", help="only table 2")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    load = os.getloadavg()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, load average "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}\n"
    )
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        if not args.check_only:
            ok &= table_emit(args.quick, Path(tmp))
        if not args.emit_only:
            ok &= table_check(args.quick)
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")
    print(json.dumps({"targets_met": ok}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
