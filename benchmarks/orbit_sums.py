"""Orbit-summed against plain population sums: the exact engine and the stability linearisation.

Run by hand (`.venv/bin/python benchmarks/orbit_sums.py`, or `make bench`). The tasks are the stuck
circle walks K = 4, p = 1/2, N odd, whose symmetry group grows fast with N (docs/theory.md#orbit-sums).
Prints the machine's load average, then one Markdown table per engine, best of ``--repeats``:

* exact engine: ``rwtoolkit.engines.exact.derive`` for ``--derive-steps`` steps, the final loss and accuracy, summed
  over every input (``rotate=False``) and over the orbits (``orbits=True``, the symmetry search included);
* stability: ``rwtoolkit.analyses.stability.linearise`` for ``--stability-steps`` steps on the manifold Fix(G), plain and
  orbit-summed (the orbit decomposition included).

Plain sums stop where their estimate passes ``--plain-seconds``; the orbit sums go on to N = 19, 10⁶ inputs.
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial

from rwtoolkit.analyses.stability import active_coordinates, linearise, orbit_sums
from rwtoolkit.engines.exact import derive
from rwtoolkit.tasks import CircleWalk

#: Seconds per (input · step) of the plain exact engine and per (input · step · coordinate) of the plain
#: linearisation on this machine, to skip plain runs that would exceed --plain-seconds.
DERIVE_PER_INPUT_STEP, HESSIAN_PER_UNIT = 1e-5, 1.5e-7


def _best(repeats: int, fn) -> tuple[float, object]:
    best, value = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def _derive(task: CircleWalk, steps: int, orbits: bool):
    tr = derive(task, steps, mu=1, rotate=False, orbits=orbits)
    return tr.states[-1].loss, tr.states[-1].accuracy, tr.states[0]._inputs.size


def _linearise_orbits(task: CircleWalk, steps: int):
    sums = orbit_sums(task, active_coordinates(task))  # the decomposition is part of the orbit route's cost
    return linearise(task, steps, sums=sums).log_sigma_Phi[-1], len(sums.orbits)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--derive-steps", type=int, default=3)
    parser.add_argument("--stability-steps", type=int, default=20)
    parser.add_argument("--plain-seconds", type=float, default=120.0)
    parser.add_argument("--largest-N", type=int, default=19)
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}\n")
    sizes = range(9, args.largest_N + 1, 2)

    print(f"exact engine, {args.derive_steps} steps (loss and accuracy of the last state)\n")
    print("| N | inputs | orbits | plain (s) | orbit sums (s) | ratio | accuracy |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for N in sizes:
        task = CircleWalk(4, N, "1/2")
        n = task.population_size()
        t_orbit, (loss, accuracy, m) = _best(args.repeats, partial(_derive, task, args.derive_steps, True))
        if n * args.derive_steps * DERIVE_PER_INPUT_STEP <= args.plain_seconds:
            t_plain, _ = _best(args.repeats, partial(_derive, task, args.derive_steps, False))
            plain, ratio = f"{t_plain:.2f}", f"{t_plain / t_orbit:.1f}"
        else:
            plain, ratio = "(skipped: estimate above --plain-seconds)", ""
        print(f"| {N} | {n} | {m} | {plain} | {t_orbit:.2f} | {ratio} | {accuracy} |", flush=True)

    print(f"\nstability linearisation, {args.stability_steps} steps around Fix(G)\n")
    print("| N | inputs | summed terms | plain (s) | orbit sums (s) | ratio | ln σ_max(Φ_T) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for N in sizes:
        task = CircleWalk(4, N, "1/2")
        n = task.population_size()
        dim = active_coordinates(task).dim
        t_orbit, (growth, m) = _best(args.repeats, partial(_linearise_orbits, task, args.stability_steps))
        if n * dim * N * args.stability_steps * HESSIAN_PER_UNIT <= args.plain_seconds:
            manifold = orbit_sums(task, active_coordinates(task)).manifold()  # the same Fix(G), not timed
            t_plain, _ = _best(args.repeats, partial(linearise, task, args.stability_steps, coords=manifold))
            plain, ratio = f"{t_plain:.2f}", f"{t_plain / t_orbit:.1f}"
        else:
            plain, ratio = "(skipped: estimate above --plain-seconds)", ""
        print(f"| {N} | {n} | {m} | {plain} | {t_orbit:.2f} | {ratio} | {growth:.6f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
