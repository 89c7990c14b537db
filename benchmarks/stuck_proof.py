"""The cost of proving "stuck for every t": the symmetry search, the fixed subspace, the induction step.

Run by hand (`.venv/bin/python benchmarks/stuck_proof.py`, or `make bench`). For each case of the stuck
certificates (docs/theory.md#invariant-manifolds) and one learning case, prints a Markdown table: the
population size (inputs of non-zero probability), the parameter count of the paper's model at P = √μ·I_N,
the group order, the seconds of `rwtoolkit.tasks.task_symmetries`, of `rwtoolkit.engines.exact.fixed_subspace`, of one
`rwtoolkit.engines.exact.induction_step` on Fix(G), and of the whole `rwtoolkit.engines.exact.stuck_proof` (both routes and the
ball-arithmetic trajectory), best of ``--repeats``, with the verdict. The machine's load average comes
first: the numbers are this machine's, at that load.
"""

from __future__ import annotations

import argparse
import os
import time

from rwtoolkit.engines.exact import fixed_subspace, induction_step, stuck_proof
from rwtoolkit.models import Sizes, get_model
from rwtoolkit.tasks import CircleWalk, first_of_two_task, permutation_task, task_symmetries

CASES = [
    ("Theorem 4.1, K=3 N=4 p=1", CircleWalk(3, 4, 1)),
    ("Theorem 4.1, K=4 N=9 p=1", CircleWalk(4, 9, 1)),
    ("Theorem 4.1, K=6 N=7 p=0", CircleWalk(6, 7, 0)),
    ("K=4 N=7 p=1/2", CircleWalk(4, 7, "1/2")),
    ("first_of_two L=3", first_of_two_task(3)),
    ("permutation 3", permutation_task(3, 1)),
    ("learns: K=3 N=6 p=3/10", CircleWalk(3, 6, "3/10")),
]


def _best(repeats: int, fn, *args) -> tuple[float, object]:
    best, value = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn(*args)
        best = min(best, time.perf_counter() - start)
    return best, value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}\n")
    print(
        "| case | inputs | parameters | order of G | symmetries (s) | Fix(G) (s) | induction step (s) "
        "| stuck_proof (s) | verdict |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    model = get_model("one_layer")
    for name, task in CASES:
        inputs = sum(1 for q in task.population().exact_probs() if q != 0)
        parameters = model.parameter_count(Sizes(K=task.K, M=task.N, N=task.N))
        t_group, group = _best(args.repeats, task_symmetries, task)
        t_fix, fixed = _best(args.repeats, fixed_subspace, model, task, group)
        t_step, _ = _best(args.repeats, induction_step, task, model, fixed)
        t_all, report = _best(args.repeats, stuck_proof, task, model)
        print(
            f"| {name} | {inputs} | {parameters} | {group.order} | {t_group:.3f} | {t_fix:.3f} | {t_step:.3f} "
            f"| {t_all:.3f} | {report['verdict']} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
