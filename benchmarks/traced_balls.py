"""The ball engine's cost for the traced nanoGPT-style examples, against its own estimate (issue 41).

Run by hand (`.venv/bin/python benchmarks/traced_balls.py`, or `make bench`). Each row is one fresh process (so the
peak memory is that run's): ``rwtoolkit.engines.balls.ball_model_job`` plans the run (its estimate, at the first
precision the engine tries) and the ball engine ``select`` gives runs it, as ``rw certify --model`` does, on the
population of ``icl_markov_task(2, 5, 1)`` (in-context Markov chains, S = 2, sequence length 4) and of
``binary_markov_task(1/3, 3/5, 5)`` (the binary (p, q) source), from zero and from the model's own start.
Prints the machine's load average, then a Markdown table: model, task, start, steps, the outcome, the precision
that ran, seconds measured and estimated and their ratio (the issue's target: within 3x both ways), peak
resident memory and its estimate, the final loss's enclosure width (2·rad of its ball) and the widest parameter
radius at the last step.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

CODE = """
import json, resource, sys, time
from flint import arb
from rwtoolkit.engines import select
from rwtoolkit.engines.balls import ball_model_job
from rwtoolkit.engines.balls._balls import precision
from rwtoolkit.io import CERTIFIED_WORDS
from rwtoolkit.models import get_model
from rwtoolkit.tasks import binary_markov_task, icl_markov_task
target, task_name, init, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
task = icl_markov_task(2, 5, 1) if task_name == "icl_markov" else binary_markov_task("1/3", "3/5", 5)
model = get_model(target)
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
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({
    "outcome": CERTIFIED_WORDS.word(traj.outcome), "prec": traj.prec, "seconds": seconds, "estimate": job.estimate.seconds,
    "peak": peak, "memory": job.estimate.memory, "step": last.step,
    "loss_width": decimal(2 * arb(last.train_loss.rad())), "widest": decimal(widest.upper()),
}))
"""

#: (example factory, task, start, steps): the Done-when runs (200 steps) and the other examples (fewer).
ROWS = [
    *[("one_layer", task, init, 200) for task in ("icl_markov", "binary_markov") for init in ("own", "zero")],
    *[(name, "icl_markov", "own", 50) for name in ("two_layer", "with_mlp", "with_layer_norm")],
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--steps", type=int, default=None, help="steps of every row (default: 200 / 50 as listed)"
    )
    parser.add_argument("--models", help="comma-separated examples: only their rows (default: every row)")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}\n")
    print(
        "| example | task | start | steps | outcome | bits | seconds | estimate (s) | measured / estimate | "
        "peak memory (MiB) | memory estimate (MiB) | final loss width | widest parameter radius |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, task, init, steps in ROWS:
        if args.models and name not in args.models.split(","):
            continue
        steps = args.steps if args.steps is not None else steps
        proc = subprocess.run(
            [sys.executable, "-c", CODE, f"{EXAMPLES}/nanogpt_attention.py:{name}", task, init, str(steps)],
            capture_output=True,
            text=True,
            timeout=3600,
            check=True,
        )
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"| {name} | {task} | {init} | {steps} | {r['outcome']} | {r['prec']} | {r['seconds']:.1f} | "
            f"{r['estimate']:.1f} | {r['seconds'] / r['estimate']:.2f} | {r['peak'] / 2**20:.0f} | "
            f"{r['memory'] / 2**20:.0f} | {r['loss_width']} | {r['widest']} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
