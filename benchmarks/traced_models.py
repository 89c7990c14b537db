"""The traced nanoGPT-style examples in the engines: tracing time, the exact engine's and the ball engine's cost
per step, each against its own estimate (issue 41).

Run by hand (`.venv/bin/python benchmarks/traced_models.py`, or `make bench`; ``--part`` runs one table). Every
row is one fresh process, as ``rw derive --model`` and ``rw certify --model`` would run it, on the population of
``icl_markov_task(2, 5, 1)`` (in-context Markov chains, S = 2, sequence length 4) or of
``binary_markov_task(1/3, 3/5, 5)`` (the binary (p, q) source). Prints the machine's load average at the start
and at the end, and three Markdown tables:

* ``tracing``: the examples' factories (``examples/nanogpt_attention.py`` through ``torch.export``,
  ``examples/nanogpt_attention_jax.py`` through its jaxpr) traced onto the tape at S = 2, L = 4, the first trace
  of a fresh process (what ``rw`` pays once per run), after importing the example (and torch or JAX). No
  estimate covers it: tracing happens before every estimate, which counts the traced program's multiply-adds
  (``rwtoolkit.models.forward_operations``).
* ``exact``: ``rwtoolkit.engines.exact.derive_model`` (``rw derive --model``'s engine) from ``--init zero``,
  ``gaussian`` (the declared dyadic start: i.i.d. N(0, 1/100²) entries rounded to multiples of 2^-20, seed 0)
  and ``own`` (the module's float64 start as dyadic rationals), for 0, 1 and the most steps whose estimate
  (``rwtoolkit.engines.exact.model_job_estimate``, without the interpreter's start, which the measurement
  does not include) is within ``--exact-seconds`` (default 60: the minute of the issue), at most
  ``--exact-steps`` (default 40: from zero the examples stay at 0 and thousands of steps fit); a row whose
  estimate is above the budget is listed, not run. The seconds per step are the difference to the 0-step row over the steps,
  measured and estimated alike (not compared where the measured difference is below ``NOISE``, 0.1 s, the
  processes' jitter). The last column is ``rw derive``'s own command for the most steps that fit,
  run as a user runs it (interpreter, imports and tracing included) with ``--max-seconds`` of the budget.
* ``balls``: ``rwtoolkit.engines.balls.ball_model_job`` plans the run (its estimate, at the first precision the
  engine tries) and the ball engine ``select`` gives runs it, as ``rw certify --model`` does: one_layer 200
  steps from zero and its own start on both tasks, the JAX port's one_layer 200 steps from its own start,
  two_layer, with_mlp and with_layer_norm 50 steps; the outcome, the precision that ran, seconds measured and
  estimated, their ratio and the seconds per step, peak resident memory and its estimate, the final loss's
  enclosure width (2·rad of its ball) and the widest parameter radius at the last step.

The issue's target for every estimate: within 3x both ways.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TORCH, JAX = f"{EXAMPLES}/nanogpt_attention.py", f"{EXAMPLES}/nanogpt_attention_jax.py"

#: The child's common start: the example imported (``get_model``), the task built, the program traced.
SETUP = """
import json, resource, sys, time
t0 = time.perf_counter()
from rwtoolkit.models import Sizes, get_model
from rwtoolkit.tasks import binary_markov_task, icl_markov_task
target, task_name = sys.argv[1], sys.argv[2]
task = icl_markov_task(2, 5, 1) if task_name == "icl_markov" else binary_markov_task("1/3", "3/5", 5)
model = get_model(target)
t1 = time.perf_counter()
sizes = Sizes(K=2, M=8, N=5)
model.program(sizes)
t2 = time.perf_counter()
def report(**values):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"import": t1 - t0, "trace": t2 - t1, "peak": peak, **values}))
"""

TRACE = """
from rwtoolkit.models import forward_operations
report(operations=forward_operations(model, sizes))
"""

EXACT = """
from rwtoolkit.engines.exact import START_ESTIMATE, derive_model, model_job_estimate
init, steps = sys.argv[3], int(sys.argv[4])
start = time.perf_counter()
traj = derive_model(task, model, steps, init=init)
seconds = time.perf_counter() - start
report(seconds=seconds, estimate=model_job_estimate(task, model, steps, init).seconds - START_ESTIMATE.seconds)
"""

BALLS = """
from flint import arb
from rwtoolkit.engines import select
from rwtoolkit.engines.balls import ball_model_job
from rwtoolkit.engines.balls._balls import precision
from rwtoolkit.io import CERTIFIED_WORDS
init, steps = sys.argv[3], int(sys.argv[4])
job = ball_model_job(task, model, steps, init=init)
start = time.perf_counter()
traj = select(model, "balls", init).load()(task, model, steps, keep=lambda t: False, **job.arguments)
seconds = time.perf_counter() - start
last = traj.records[-1]
with precision(traj.prec):
    widest = arb(0)
    for value in last.state.params.values():
        for x in value.ravel():
            widest = widest.max(arb(x.rad()))
def decimal(x):  # an arb radius as text: below the float64 range too (radii of 2^-1000 and less)
    if x.is_zero():
        return "0"
    with precision(64):
        e = float((x.log() / arb(10).log()).mid())
    k = int(e // 1)
    return f"{10 ** (e - k):.1f}e{k}"
report(
    outcome=CERTIFIED_WORDS.word(traj.outcome), prec=traj.prec, seconds=seconds, estimate=job.estimate.seconds,
    memory=job.estimate.memory, step=last.step, loss_width=decimal(2 * arb(last.train_loss.rad())),
    widest=decimal(widest.upper()),
)
"""

#: The tasks of the issue's Done-when: in-context Markov chains (S = 2, N = 5) and the binary (p, q) source.
TASKS = ("icl_markov", "binary_markov")
#: The spec files ``rw derive --spec`` reads for them.
SPECS = {
    "icl_markov": {"task": {"family": "icl_markov", "params": {"S": 2, "N": 5}}},
    "binary_markov": {"task": {"family": "binary_markov", "params": {"p": "1/3", "q": "3/5", "N": 5}}},
}
#: (file, factory, tracer) of the tracing table.
TRACED = [
    (TORCH, "one_layer", "torch.export"),
    (TORCH, "two_layer", "torch.export"),
    (JAX, "one_layer", "jaxpr"),
]
#: Seconds below which a difference of two runs is the processes' jitter (measured 0.02-0.08 s for 0 steps).
NOISE = 0.1
#: Starts of the exact table.
EXACT_INITS = ("zero", "gaussian", "own")
#: (file, factory, task, start, steps) of the ball table: the Done-when runs (200 steps) and the other examples.
BALL_ROWS = [
    *[(TORCH, "one_layer", task, init, 200) for task in TASKS for init in ("own", "zero")],
    (JAX, "one_layer", "icl_markov", "own", 200),
    *[(TORCH, name, "icl_markov", "own", 50) for name in ("two_layer", "with_mlp", "with_layer_norm")],
]


def label(path: str, name: str) -> str:
    """How a row names an example: ``one_layer``, or ``jax one_layer`` for the JAX port."""
    return f"jax {name}" if path == JAX else name


def child(code: str, *argv: str, timeout: float = 3600) -> dict:
    """Run ``SETUP + code`` in a fresh interpreter with ``argv``; the JSON line it reports."""
    proc = subprocess.run(
        [sys.executable, "-c", SETUP + code, *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def print_load(when: str) -> None:
    load = os.getloadavg()
    print(
        f"{os.cpu_count()} CPUs, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} {when}\n",
        flush=True,
    )


def tracing_table() -> None:
    print("| example | tracer | import (s) | tracing (s) | multiply-adds of one forward pass |")
    print("| --- | --- | --- | --- | --- |")
    for path, name, tracer in TRACED:
        r = child(TRACE, f"{path}:{name}", "icl_markov")
        print(
            f"| {label(path, name)} | {tracer} | {r['import']:.2f} | {r['trace']:.2f} | {r['operations']} |",
            flush=True,
        )
    print()


def most_exact_steps(target: str, task_name: str, init: str, budget: float, upto: int) -> list[float]:
    """The exact engine's estimates (seconds, the interpreter's start left out) of 0..``upto`` steps, stopping
    after the first above ``budget``."""
    code = (
        "from rwtoolkit.engines.exact import START_ESTIMATE, model_job_estimate\n"
        "out = []\n"
        f"for k in range({upto} + 1):\n"
        "    out.append(model_job_estimate(task, model, k, sys.argv[3]).seconds - START_ESTIMATE.seconds)\n"
        f"    if out[-1] > {budget}:\n"
        "        break\n"
        "report(estimates=out)\n"
    )
    return list(child(code, target, task_name, init)["estimates"])


def rw_derive(target: str, task_name: str, init: str, steps: int, budget: float) -> tuple[str, float, int]:
    """``rw derive``'s command for ``steps`` steps with ``--max-seconds`` of the budget: (command, wall seconds,
    exit status)."""
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / f"{task_name}.json"
        spec.write_text(json.dumps(SPECS[task_name]))
        argv = [
            *("--model", target, "--spec", str(spec), "--init", init),
            *("--steps", str(steps), "--max-seconds", str(int(budget))),
        ]
        start = time.perf_counter()
        proc = subprocess.run(
            [str(Path(sys.executable).parent / "rw"), "derive", *argv],
            capture_output=True,
            text=True,
            timeout=3600,
            check=False,
        )
        seconds = time.perf_counter() - start
    shown = " ".join(argv).replace(str(spec), f"{task_name}.json").replace(f"{EXAMPLES}/", "examples/")
    return f"rw derive {shown}", seconds, proc.returncode


def exact_table(
    models: set[str] | None,
    tasks: set[str] | None,
    starts: set[str] | None,
    budget: float,
    upto: int,
    cli: bool = True,
) -> None:
    print(
        "| example | task | start | steps | seconds | estimate (s) | measured / estimate | "
        "s per step | estimate per step | per step: measured / estimate | rw derive in a budget |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for path, name, _ in TRACED:
        if models and label(path, name) not in models:
            continue
        target = f"{path}:{name}"
        for task in TASKS:
            for init in EXACT_INITS:
                if (tasks and task not in tasks) or (starts and init not in starts):
                    continue
                estimates = most_exact_steps(target, task, init, budget, upto)
                fits = max((k for k, e in enumerate(estimates) if e <= budget), default=-1)
                rows = sorted({0, 1, max(fits, 0)})
                base: dict | None = None
                for k in rows:
                    cells = [label(path, name), task, init, str(k)]
                    if k >= len(estimates) or estimates[k] > budget:
                        shown = f"> {budget:.0f}" if k >= len(estimates) else f"{estimates[k]:.3g}"
                        print("| " + " | ".join(cells) + f" | not run | {shown} | | | | | |", flush=True)
                        continue
                    r = child(EXACT, target, task, init, str(k))
                    cells += [
                        f"{r['seconds']:.2f}",
                        f"{r['estimate']:.2f}",
                        f"{r['seconds'] / r['estimate']:.2f}",
                    ]
                    if k == 0 or base is None:
                        base = r
                        cells += ["", "", ""]
                    else:
                        step, est = (
                            (r["seconds"] - base["seconds"]) / k,
                            (r["estimate"] - base["estimate"]) / k,
                        )
                        if step * k < NOISE:  # the processes' jitter, not a step's cost
                            cells += [f"< {NOISE / k:.2g}", f"{est:.2g}", ""]
                        else:
                            cells += [f"{step:.3g}", f"{est:.3g}", f"{step / est:.2f}" if est > 0 else ""]
                    if cli and k == fits and fits >= 0:
                        command, seconds, code = rw_derive(target, task, init, k, budget)
                        cells.append(f"`{command}`: {seconds:.1f} s, exit {code}")
                    else:
                        cells.append("")
                    print("| " + " | ".join(cells) + " |", flush=True)
    print()


def ball_table(models: set[str] | None, steps: int | None) -> None:
    print(
        "| example | task | start | steps | outcome | bits | seconds | estimate (s) | measured / estimate | "
        "s per step | peak memory (MiB) | memory estimate (MiB) | final loss width | widest parameter radius |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for path, name, task, init, default in BALL_ROWS:
        if models and label(path, name) not in models:
            continue
        k = steps if steps is not None else default
        r = child(BALLS, f"{path}:{name}", task, init, str(k))
        print(
            f"| {label(path, name)} | {task} | {init} | {k} | {r['outcome']} | {r['prec']} | {r['seconds']:.1f} | "
            f"{r['estimate']:.1f} | {r['seconds'] / r['estimate']:.2f} | {r['seconds'] / max(k, 1):.3f} | "
            f"{r['peak'] / 2**20:.0f} | {r['memory'] / 2**20:.0f} | {r['loss_width']} | {r['widest']} |",
            flush=True,
        )
    print()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--part",
        choices=("tracing", "exact", "balls", "all"),
        default="all",
        help="which table (default all)",
    )
    parser.add_argument(
        "--models",
        help="comma-separated examples (one_layer, two_layer, 'jax one_layer', ...): only their rows (default all)",
    )
    parser.add_argument(
        "--exact-seconds",
        type=float,
        default=60.0,
        help="the exact table runs the rows whose estimate is within this many seconds (default 60)",
    )
    parser.add_argument(
        "--exact-steps",
        type=int,
        default=40,
        help="the exact table looks for the most steps up to this (default 40)",
    )
    parser.add_argument(
        "--tasks", help="comma-separated tasks of the exact table (default: icl_markov,binary_markov)"
    )
    parser.add_argument(
        "--starts", help="comma-separated starts of the exact table (default: zero,gaussian,own)"
    )
    parser.add_argument(
        "--cli",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run rw derive's command for the most steps that fit (default: yes)",
    )
    parser.add_argument("--steps", type=int, default=None, help="steps of every ball row (default: 200 / 50)")
    args = parser.parse_args()
    models = set(args.models.split(",")) if args.models else None
    print_load("at the start")
    if args.part in ("tracing", "all"):
        tracing_table()
    if args.part in ("exact", "all"):
        tasks = set(args.tasks.split(",")) if args.tasks else None
        starts = set(args.starts.split(",")) if args.starts else None
        exact_table(models, tasks, starts, args.exact_seconds, args.exact_steps, args.cli)
    if args.part in ("balls", "all"):
        ball_table(models, args.steps)
    print_load("at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
