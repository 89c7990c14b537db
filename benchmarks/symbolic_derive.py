"""Exact GD steps (rwsymbolic.derive) at the benchmark sizes below, with the no-symmetry baseline.

Run by hand (`.venv/bin/python benchmarks/symbolic_derive.py [--skip-baseline]`); prints a Markdown
table of wall-clock seconds. "rotation" uses the circle's rotation symmetry (walks rooted at node 0)
plus grouping by sufficient statistics; "full population" is the same grouped engine over all
K·2^(N-1) walks (the enumeration baseline). V(1) for N = 64 is out of reach of any enumeration
(2^63 walks) and is the closed form's job (rwsymbolic._circle_linear), not derive's.
"""

from __future__ import annotations

import argparse
import sys
import time

from rwsymbolic import derive
from rwtasks import CircleWalk


def _v2_w2(task: CircleWalk, mu: str, rotate: bool) -> float:
    """Seconds for V(2) and w(2) = (w_tok(2), c(2)): two steps, no outputs at t = 2."""
    start = time.perf_counter()
    tr = derive(task, 2, mu=mu, rotate=rotate)
    _ = tr.states[2].V, tr.states[2].w_tok, tr.states[2].c
    return time.perf_counter() - start


def _whole_step2(task: CircleWalk, rotate: bool) -> float:
    """Seconds for θ(0..2) and every output (loss, accuracy, means, per-input logits/S/f) at t = 0..2."""
    start = time.perf_counter()
    tr = derive(task, 2, rotate=rotate)
    for s in tr.states:
        _ = s.loss, s.accuracy, s.mean_attention, s.mean_f, s.logits, s.S, s.f
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skip-baseline", action="store_true", help="skip the no-symmetry baselines")
    args = parser.parse_args()
    sys.set_int_max_str_digits(0)
    rows = []
    big = CircleWalk(6, 16, "7/10")
    for mu in ("1/2", "mu"):
        base = None if args.skip_baseline else _v2_w2(big, mu, rotate=False)
        rows.append((f"V(2), w(2), K=6, N=16, p=7/10, mu={mu} (target 60 s)", _v2_w2(big, mu, True), base))
    small = CircleWalk(5, 6, "p")
    base = None if args.skip_baseline else _whole_step2(small, rotate=False)
    rows.append(
        (
            "whole step-2 trajectory, K=5, N=6, symbolic p and mu (target 120 s)",
            _whole_step2(small, True),
            base,
        )
    )
    print("| benchmark | rotation + grouping (s) | full population (s) |")
    print("| --- | --- | --- |")
    for name, fast, slow in rows:
        print(f"| {name} | {fast:.1f} | {'-' if slow is None else f'{slow:.1f}'} |")


if __name__ == "__main__":
    main()
