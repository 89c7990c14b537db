"""``rw check`` on the same implementation in three frameworks: PyTorch, NumPy and JAX.

Run by hand (`.venv/bin/python benchmarks/check_frameworks.py`, or `make bench`). Each row is one fresh
process running `rwcheck.check` on one factory of examples/ with the same options (the same
derandomised configurations), so "process" includes starting Python and importing the toolkit and
the framework; "check alone" is the call to ``check`` after the imports, and for JAX includes compiling
each jitted function once per (padded) shape. Prints the machine's load average, then a Markdown table:
factory, protocol, both times (medians of ``--repeats`` interleaved rounds, with the check's range), and
the ratio of the check's median to the PyTorch module's.

The last row runs the JAX port again with JAX's own persistent compilation cache switched on
(``JAX_COMPILATION_CACHE_DIR`` in a temporary directory, ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0``,
warmed by one run before the rounds): what a user who keeps the cache between checks waits for. The
trace and the lowering still run; the XLA compile is read back.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FACTORIES = [
    ("plain_torch.py:model", "PyTorch module (the kit's autograd and step)"),
    ("plain_torch.py:training", "PyTorch training loop"),
    ("plain_numpy.py:model", "NumPy functional (gradients by hand)"),
    ("plain_jax.py:model", "JAX functional (jax.grad, jitted step)"),
]
#: The JAX port once more, with JAX's persistent compilation cache warm (module text).
CACHED = ("plain_jax.py:model", "JAX functional, persistent compilation cache warm")


def _run(target: str, steps: int, examples: int, env: dict | None = None) -> tuple[float, float, str]:
    """(seconds for the process, seconds for ``check`` alone after the imports, "protocol exit-code")."""
    code = (
        "import time; from rwcheck import CheckOptions, check, load_factory\n"
        f"factory = load_factory({str(ROOT / 'examples' / target)!r})\n"
        "start = time.perf_counter()\n"
        f"r = check(factory, CheckOptions(steps={steps}, examples={examples}))\n"
        "print(time.perf_counter() - start, r.protocol, r.exit_code)\n"
    )
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
        env=None if env is None else {**os.environ, **env},
    )
    inner, rest = proc.stdout.strip().split(" ", 1)
    return time.perf_counter() - start, float(inner), rest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--examples", type=int, default=10)
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")
    print(f"rw check, steps={args.steps}, examples={args.examples} per property, one fresh process per run\n")
    print(
        "| factory | implementation | protocol, exit code | process (s) | check alone, median (min–max) (s) "
        "| check vs PyTorch module (medians) |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    rows = [(target, what, None) for target, what in FACTORIES]
    with tempfile.TemporaryDirectory() as cache:
        env = {"JAX_COMPILATION_CACHE_DIR": cache, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
        rows.append((*CACHED, env))
        _run(CACHED[0], args.steps, args.examples, env)  # fills the cache
        runs: list[list[tuple[float, float, str]]] = [[] for _ in rows]
        for _ in range(args.repeats):  # interleaved: every row once per round, so load drifts hit all alike
            for i, (target, _what, extra) in enumerate(rows):
                runs[i].append(_run(target, args.steps, args.examples, extra))
    base = None
    for (target, what, _), row in zip(rows, runs, strict=True):
        inner = sorted(r[1] for r in row)
        median = inner[len(inner) // 2]
        base = median if base is None else base
        process = sorted(r[0] for r in row)[len(inner) // 2]
        print(
            f"| {target} | {what} | {row[0][2]} | {process:.1f} | {median:.2f} ({inner[0]:.2f}–{inner[-1]:.2f}) "
            f"| {median / base:.2f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
