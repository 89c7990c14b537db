"""Exact GD steps (rwtoolkit.engines.exact.derive) at the benchmark sizes below, with the no-symmetry baseline.

Run by hand (`.venv/bin/python benchmarks/symbolic_derive.py [--skip-baseline] [--step3-N 8] [--arithmetic-only]`);
prints two Markdown tables of wall-clock seconds. The first: "rotation" uses the circle's rotation
symmetry (walks rooted at node 0) plus grouping by sufficient statistics; "full population" is the
same grouped engine over all K·2^(N-1) walks (the enumeration baseline). V(1) for N = 64 is out of
reach of any enumeration (2^63 walks) and is the closed form's job (rwtoolkit.engines.exact.engine._moments), not
derive's. The second: the same exact steps with python-flint's rationals (the default) against the
pure SymPy path (``RWSYMBOLIC_ARITHMETIC=sympy``), each timed in a fresh process, and their ratio;
the symbolic-p row has polynomials in p for probabilities and V(1) (``rwtoolkit.engines.exact.engine._polynomial_pass``); step 3
is θ(3) in the engine's atom form (exponentials of step 2 as named atoms), at K = 6, N = 12 by
default (the SymPy side then takes several minutes). The two paths return equal values written as
different trees from step 3 on (``rwtoolkit.engines.exact.engine._atom_pass``; compared in tests/test_symbolic_flint.py).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from rwtoolkit.engines.exact import derive
from rwtoolkit.tasks import CircleWalk


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


def _step3(task: CircleWalk) -> float:
    """Seconds for θ(3) = (V(3), w_tok(3), c(3)) in atom form: three steps, the third with exponentials."""
    start = time.perf_counter()
    tr = derive(task, 3, mu="1/2")
    _ = [tr.states[3].atom_form(name) for name in ("V", "w_tok", "c")]
    return time.perf_counter() - start


def _measure(case: str) -> float:
    """Seconds of one arithmetic-comparison case in this process (``--measure``)."""
    if case.startswith("step3:"):
        return _step3(CircleWalk(6, int(case.split(":")[1]), "7/10"))
    if case == "symbolic-p":
        return _v2_w2(CircleWalk(6, 16, "p"), "1/2", rotate=True)
    return _v2_w2(CircleWalk(6, 16, "7/10"), case, rotate=True)


def _in_fresh_process(case: str, arithmetic: str) -> float:
    env = dict(os.environ, RWSYMBOLIC_ARITHMETIC=arithmetic)
    argv = [sys.executable, __file__, "--measure", case]
    return float(subprocess.run(argv, check=True, env=env, capture_output=True, text=True).stdout)


def _arithmetic_table(step3_N: int) -> None:
    cases = [
        ("V(2), w(2), K=6, N=16, p=7/10, mu=1/2", "1/2"),
        ("V(2), w(2), K=6, N=16, p=7/10, mu symbolic", "mu"),
        ("V(2), w(2), K=6, N=16, p symbolic, mu=1/2", "symbolic-p"),
        (f"θ(3) (atom form), K=6, N={step3_N}, p=7/10, mu=1/2", f"step3:{step3_N}"),
    ]
    print()
    print(f"load average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| benchmark (rotation + grouping) | SymPy rationals (s) | python-flint (s) | ratio |")
    print("| --- | --- | --- | --- |")
    for name, case in cases:
        old, new = _in_fresh_process(case, "sympy"), _in_fresh_process(case, "flint")
        print(f"| {name} | {old:.2f} | {new:.2f} | {old / new:.1f}x |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skip-baseline", action="store_true", help="skip the no-symmetry baselines")
    parser.add_argument(
        "--step3-N",
        type=int,
        default=12,
        help="N of the step-3 comparison (default 12; the SymPy side takes several minutes, 8 a few seconds)",
    )
    parser.add_argument(
        "--arithmetic-only", action="store_true", help="print only the second table (python-flint vs SymPy)"
    )
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # one case, in a fresh process
    args = parser.parse_args()
    sys.set_int_max_str_digits(0)
    if args.measure:
        print(_measure(args.measure))
        return
    if args.arithmetic_only:
        _arithmetic_table(args.step3_N)
        return
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
    _arithmetic_table(args.step3_N)


if __name__ == "__main__":
    main()
