"""``rw check`` on the same implementation in three frameworks: PyTorch, NumPy and JAX.

Run by hand (`.venv/bin/python benchmarks/check_frameworks.py`, or `make bench`). Each row is one fresh
process running `rwtoolkit.analyses.check.check` on one factory of examples/ with the same options (the same
derandomised configurations), so "process" includes starting Python and importing the toolkit and
the framework; "first check" is the first call to ``check`` after the imports, and for JAX includes
compiling each jitted function once per (padded) shape; "again" is a second ``check`` in the same
process (what the pytest plugin's later tests, a notebook or a second factory of the same module see:
JAX's compiled program is kept in memory); "JAX compile" sums JAX's own timings of tracing, lowering
and the XLA compile over both checks (its monitoring events). Prints the machine's load average, then a Markdown table:
factory, protocol, the times (medians of ``--repeats`` interleaved rounds, with the first check's
range), and the ratios of both checks' medians to the PyTorch module's.

The last row runs the JAX port again with JAX's own persistent compilation cache switched on
(``JAX_COMPILATION_CACHE_DIR`` in a temporary directory, ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0``,
warmed by one run before the rounds): what a user who keeps the cache between checks waits for. The
trace and the lowering still run; the XLA compile is read back.

A second table times what a user waits for: the command ``rw check examples/<factory>`` as a whole
process (starting Python, the imports, one check, the report), the same rounds interleaved with the
first table's, with the median of the ratios to the PyTorch module's command taken round by round
(pairing keeps a ratio meaningful while the machine's speed drifts) and their range.
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
#: JAX's monitoring events for the three stages of a jitted function's compile (jax/_src/dispatch.py).
_COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


def _run(
    target: str, steps: int, examples: int, env: dict | None = None
) -> tuple[float, float, float, float, str]:
    """(seconds for the process, for the first ``check`` after the imports, for a second one in the same
    process, JAX's tracing, lowering and XLA compile in both (0 without JAX), "protocol exit-code")."""
    code = (
        "import sys, time; from rwtoolkit.analyses.check import CheckOptions, check, load_factory\n"
        f"factory = load_factory({str(ROOT / 'examples' / target)!r})\n"
        "compile_s = [0.0]\n"
        "if 'jax' in sys.modules:\n"
        "    import jax.monitoring\n"
        f"    events = {_COMPILE_EVENTS!r}\n"
        "    def listen(event, duration, **kwargs):\n"
        "        if event in events:\n"
        "            compile_s[0] += duration\n"
        "    jax.monitoring.register_event_duration_secs_listener(listen)\n"
        "times = []\n"
        "for _ in range(2):\n"
        "    start = time.perf_counter()\n"
        f"    r = check(factory, CheckOptions(steps={steps}, examples={examples}))\n"
        "    times.append(time.perf_counter() - start)\n"
        "print(*times, compile_s[0], r.protocol, r.exit_code)\n"
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
    first, again, compiling, rest = proc.stdout.strip().split(" ", 3)
    return time.perf_counter() - start, float(first), float(again), float(compiling), rest


def _command(target: str, steps: int, examples: int) -> float:
    """Seconds of the command ``rw check examples/<target>`` (exit code 0 required)."""
    rw = Path(sys.executable).parent / "rw"
    args = [
        str(rw),
        "check",
        str(ROOT / "examples" / target),
        "--steps",
        str(steps),
        "--examples",
        str(examples),
    ]
    start = time.perf_counter()
    subprocess.run(args, capture_output=True, timeout=1800, check=True)
    return time.perf_counter() - start


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
        "| factory | implementation | protocol, exit code | process (s) | first check, median (min–max) (s) "
        "| again (s) | JAX compile (s) | first, again vs PyTorch module (medians) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    rows: list[tuple[str, str, dict | None]] = [(target, what, None) for target, what in FACTORIES]
    with tempfile.TemporaryDirectory() as cache:
        env = {"JAX_COMPILATION_CACHE_DIR": cache, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
        rows.append((*CACHED, env))
        _run(CACHED[0], args.steps, args.examples, env)  # fills the cache
        runs: list[list[tuple[float, float, float, float, str]]] = [[] for _ in rows]
        commands: list[list[float]] = [[] for _ in FACTORIES]
        for _ in range(args.repeats):  # interleaved: every row once per round, so load drifts hit all alike
            for i, (target, _what, extra) in enumerate(rows):
                runs[i].append(_run(target, args.steps, args.examples, extra))
            for i, (target, _what) in enumerate(FACTORIES):
                commands[i].append(_command(target, args.steps, args.examples))
    base: tuple[float, float] | None = None
    for (target, what, _), row in zip(rows, runs, strict=True):
        first = sorted(r[1] for r in row)
        middle = len(first) // 2
        median, again = first[middle], sorted(r[2] for r in row)[middle]
        base = (median, again) if base is None else base
        process = sorted(r[0] for r in row)[middle]
        compiling = sorted(r[3] for r in row)[middle]
        print(
            f"| {target} | {what} | {row[0][4]} | {process:.1f} | {median:.2f} ({first[0]:.2f}–{first[-1]:.2f}) "
            f"| {again:.2f} | {compiling:.2f} | {median / base[0]:.2f}, {again / base[1]:.2f} |",
            flush=True,
        )
    print(
        "\n| the command | implementation | wall, median (min–max) (s) | vs PyTorch module, median (min–max) |"
    )
    print("| --- | --- | --- | --- |")
    for (target, what), walls in zip(FACTORIES, commands, strict=True):
        ratios = sorted(w / b for w, b in zip(walls, commands[0], strict=True))
        ordered = sorted(walls)
        middle = len(ordered) // 2
        print(
            f"| rw check {target} | {what} | {ordered[middle]:.2f} ({ordered[0]:.2f}–{ordered[-1]:.2f}) "
            f"| {ratios[middle]:.2f} ({ratios[0]:.2f}–{ratios[-1]:.2f}) |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
