"""What a certified run of 10⁴ steps costs, measured piece by piece (issue 43, item 1: not reached yet).

Run by hand (`.venv/bin/python benchmarks/long_certified.py`, or `make bench`). The job of the issue:
examples/nanogpt_attention.py's two_layer (P = 168 parameters) on in-context Markov chains (S = 2, N = 7:
sequence length 6, 128 sequences) from its own start, cross-entropy at every position, plain GD at lr 3/10.
Prints the machine's load average and one Markdown table of:

* the stepwise ball engine (``rw certify --model``, arb balls; ``automatic_precision`` starts at
  256 + 6·steps bits): seconds per step of a 3-step run and its estimate for 10⁴ steps
  (``ball_model_job``; its precision grows 6 bits a step, to 60256 bits at 10⁴);
* one evaluation with its gradient in float64 (``FLOAT64``) and in float64 balls (``FLOAT_BALLS``): the
  step of a float run and of an a-posteriori bound's local error;
* the Hessian (``rwtoolkit.models.hessian``, forward over reverse) in float64 and in float balls: what a
  bound on the GD map's Jacobian costs per evaluation;
* the dependency factor of the float-ball Hessian over a box: its widest radius over the box's radius
  (radius 1e-12 and 1e-9); a Jacobian bound over the steps of a window is as wide as this times the window's
  spread;
* the extreme eigenvalues of the float64 Hessian at the start, and 1 + η·max(0, −λ_min): the factor by which
  any enclosure of the trajectory must widen a step there (the GD map's own Lipschitz constant in the 2-norm),
  in bits a step.
"""

from __future__ import annotations

import math
import os
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODEL = f"{ROOT}/examples/nanogpt_attention.py:two_layer"
ETA = Fraction(3, 10)


def _best(fn, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    from rwtoolkit.engines import select
    from rwtoolkit.engines.balls import FLOAT_BALLS, FloatBalls, ball_model_job
    from rwtoolkit.models import (
        FLOAT64,
        CrossEntropy,
        batch,
        evaluate,
        get_model,
        hessian,
        rational_positions,
    )
    from rwtoolkit.tasks import icl_markov_task

    print(f"load average at the start: {os.getloadavg()}", file=sys.stderr)
    task, model = icl_markov_task(2, 7, 1), get_model(MODEL)
    pop, loss = task.population(), CrossEntropy("lm")

    def setup(ar):
        P = ar.asarray(rational_positions(pop.N, Fraction(1)))
        data = batch(ar, pop.tokens, pop.labels, [Fraction(q) for q in pop.exact_probs()], pop.K, P)
        return data, dict(model.own_start(ar, data.inputs.sizes, "zero"))

    rows: list[tuple[str, str]] = []
    job = ball_model_job(task, model, 3, init="own", eta=ETA)
    engine = select(model, "balls", "own").load()
    start = time.perf_counter()
    engine(task, model, 3, keep=lambda t: False, **job.arguments)
    rows.append(
        ("stepwise ball engine, s / step (3 steps, 274 bits)", f"{(time.perf_counter() - start) / 3:.3f}")
    )
    try:
        ball_model_job(task, model, 10_000, init="own", eta=ETA)
        rows.append(("stepwise ball engine, 10⁴ steps", "accepted"))
    except ValueError as why:
        rows.append(("stepwise ball engine, 10⁴ steps", f"refused: {why}"))

    d64, p64 = setup(FLOAT64)
    dfb, pfb = setup(FLOAT_BALLS)
    f64 = _best(lambda: evaluate(model, FLOAT64, p64, d64, loss), 10)
    ffb = _best(lambda: evaluate(model, FLOAT_BALLS, pfb, dfb, loss), 10)
    rows.append(("evaluation + gradient, float64 (ms)", f"{1000 * f64:.1f}"))
    rows.append(("evaluation + gradient, float balls (ms)", f"{1000 * ffb:.1f} ({ffb / f64:.1f}x)"))
    H = hessian(model, FLOAT64, p64, d64, loss, chunk=42)
    h64 = _best(lambda: hessian(model, FLOAT64, p64, d64, loss, chunk=42), 2)
    hfb = _best(lambda: hessian(model, FLOAT_BALLS, pfb, dfb, loss, chunk=42), 2)
    rows.append(("Hessian (P = 168), float64 (s)", f"{h64:.2f}"))
    rows.append(("Hessian (P = 168), float balls at a point (s)", f"{hfb:.2f}"))
    for width in (1e-12, 1e-9):
        box = {k: FloatBalls(v.mid, np.full(v.shape, width)) for k, v in pfb.items()}
        Hb = hessian(model, FLOAT_BALLS, box, dfb, loss, chunk=42)
        rows.append(
            (
                f"float-ball Hessian over a box of radius {width:g}: widest radius / {width:g}",
                f"{float(Hb.rad.max()) / width:.3g}",
            )
        )
    w = np.linalg.eigvalsh((H + H.T) / 2)
    growth = 1 + float(ETA) * max(0.0, -float(w[0]))
    rows.append(("Hessian eigenvalues at the start: min, max", f"{w[0]:.3f}, {w[-1]:.3f}"))
    rows.append(
        (
            "‖I − ηH‖₂ at the start (η = 3/10): bits lost a step",
            f"{max(growth, abs(1 - float(ETA) * w[-1])):.3f}: {math.log2(growth):.2f}",
        )
    )
    print("| quantity | value |")
    print("| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")
    print(f"load average at the end: {os.getloadavg()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
