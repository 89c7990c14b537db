"""The exact engine's and the ball engine's cost for every registered model on in-context Markov chains.

Run by hand (`.venv/bin/python benchmarks/zoo_models.py`, or `make bench`). Each row is one fresh process
(so the peak memory is that run's): ``rwtoolkit.engines.exact.derive_model`` from zero for ``--steps`` steps, or
``rwtoolkit.engines.balls.ball_model_trajectory`` for ``--ball-steps`` steps, on ``icl_markov_task(S, N, 1)``; the
embedding models (``tied_embedding``, ``untied_embedding``) on ``binary_markov_task(7/10, 3/5, N)``, since
from zero they do not move when the next symbol is uniform, and also ``rwtoolkit.engines.exact.exact_hessian`` at the
zoo's unigram point (engine ``hessian``, no estimate: one reverse pass per parameter). Prints the
machine's load average, then a Markdown table: model, S, N, inputs, engine, steps, seconds, peak resident
memory, and the engine's own estimate beside the measurement (``model_estimate`` / ``ball_estimate``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CODE = """
import json, resource, sys, time
from rwtoolkit.models import get_model
from rwtoolkit.tasks import icl_markov_task
name, S, N, engine, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
model = get_model(name)
if name.endswith("_embedding"):  # on a binary source: from zero they do not move when the labels are uniform
    from rwtoolkit.tasks import binary_markov_task
    task = binary_markov_task("7/10", "3/5", N)
else:
    task = icl_markov_task(S, N, 1)
if engine == "hessian":  # the exact gradient and Hessian at the zoo's unigram point
    from rwtoolkit.engines.exact import exact_hessian
    from rwtoolkit.analyses.zoo._claims import unigram_point
    point, P, _ = unigram_point(task, model)
    estimate = None
    start = time.perf_counter(); exact_hessian(model, task, point, P); seconds = time.perf_counter() - start
elif engine == "exact":
    from rwtoolkit.engines.exact import derive_model, model_estimate
    estimate = model_estimate(task, model, steps, "zero", 1)
    start = time.perf_counter(); derive_model(task, model, steps); seconds = time.perf_counter() - start
else:
    from rwtoolkit.engines.balls import ball_estimate, ball_model_trajectory
    estimate = ball_estimate(task, model, steps)
    start = time.perf_counter(); bits = ball_model_trajectory(task, model, steps, keep=lambda t: False).prec
    seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"inputs": task.population().size, "seconds": seconds, "peak": peak, "estimate": estimate}))
"""

ROWS = [
    *[
        (m, 2, N, "exact")
        for m in ("one_layer", "key_query", "multi_head", "linear_attention")
        for N in (4, 6)
    ],
    *[("learned_positions", 2, N, "exact") for N in (4, 6)],
    *[
        (m, 2, N, e)
        for m in ("tied_embedding", "untied_embedding")
        for N in (4, 6)
        for e in ("exact", "hessian")
    ],
    *[("two_layer", S, N, "exact") for S, N in ((2, 4), (2, 5), (2, 6), (3, 4), (3, 5))],
    *[("two_layer", 2, N, "balls") for N in (4, 5, 6)],
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--ball-steps", type=int, default=100)
    parser.add_argument("--models", help="comma-separated models: only their rows (default: every row)")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}\n")
    print("| model | S | N | inputs | engine | steps | seconds | estimate (s) | peak memory (MiB) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for model, S, N, engine in ROWS:
        if args.models and model not in args.models.split(","):
            continue
        steps = {"exact": args.steps, "balls": args.ball_steps, "hessian": 0}[engine]
        proc = subprocess.run(
            [sys.executable, "-c", CODE, model, str(S), str(N), engine, str(steps)],
            capture_output=True,
            text=True,
            timeout=3600,
            check=True,
        )
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        estimate = "—" if r["estimate"] is None else f"{r['estimate']:.2f}"
        print(
            f"| {model} | {S} | {N} | {r['inputs']} | {engine} | {steps if engine != 'hessian' else '—'} | "
            f"{r['seconds']:.2f} | {estimate} | {r['peak'] / 2**20:.0f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
