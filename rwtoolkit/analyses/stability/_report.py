"""The stability report: manifold, verdict, per-step growth, predicted vs measured escape, selected solutions.

JSON (schema ``stability.schema.json``) and PNG. One linearisation per μ (the manifold and the trajectory
depend on it); per μ the Gaussian-init table covers every σ, dtype and seed, and the rounding table both
dtypes and both Gram choices.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

from tqdm import tqdm

from rwtoolkit.analyses.stability._escape import (
    DEFAULT_THRESHOLD,
    UNIT_ROUNDOFF,
    Escape,
    Selection,
    finite_or_none,
    measure_escape,
    predict_escape,
    selection_distribution,
)
from rwtoolkit.analyses.stability._linear import Linearisation, linearise, unstable_directions, verdict
from rwtoolkit.analyses.stability._orbits import OrbitSums, orbit_sums
from rwtoolkit.analyses.stability._reduced import (
    active_coordinates,
    find_manifold,
    population_arrays,
    population_task,
)
from rwtoolkit.tasks import CircleWalk, FiniteTask

#: Largest reduced dimension the report accepts (one dim×dim Hessian per step), and the longest run.
MAX_DIM = 300
MAX_STEPS = 2000
#: Population sums: "plain" over every input, "orbits" over the orbits of the task's symmetry group
#: (``rwtoolkit.analyses.stability.orbit_sums``); "auto" takes orbits above ``ORBITS_ABOVE`` inputs.
SUMS = ("auto", "plain", "orbits")
ORBITS_ABOVE = 4096
#: Cost model of a report, measured on this project's 2-core CI machine (benchmarks/orbit_sums.py):
#: seconds per (reduced coordinate · summed input · position) of one step's Hessian, bytes of jacrev's
#: intermediates per the same unit, seconds per (input · position) of one step of a measured escape run,
#: seconds per input of the orbit decomposition, and the budgets above which a report is refused.
HESSIAN_SECONDS, HESSIAN_BYTES, TRAIN_SECONDS, ORBIT_SECONDS = 1.5e-7, 80, 1.5e-7, 3e-5
#: The fixed cost of a step, whatever the size: seconds per linearised step (two jacrev passes, the SVDs)
#: and per step of a measured escape run (``rwtoolkit.engines.numeric.train`` on one torch thread). Measured with
#: ``linearise`` and ``measure_escape`` at K = 3, N = 4 (12 inputs·positions: the size terms above are
#: 1e-5 of these), 200 steps, on the 2-core machine: 5 to 6 ms and 1.4 to 2.6 ms.
STEP_SECONDS, RUN_STEP_SECONDS = 6e-3, 2.5e-3
MAX_SECONDS = 1800.0
#: The sweep grids of ``rw stability --grid``: "quick" is the default run, "full" covers σ from 1e-2 to
#: 1e-12, μ ∈ {1, √M, M/2} at the paper's M = 1000 and both dtypes.
GRIDS: dict[str, dict[str, Any]] = {
    "quick": {"sigmas": (1e-2, 1e-4, 1e-6, 1e-8), "mus": (1.0,), "dtypes": ("float64",), "seeds": 2},
    "full": {
        "sigmas": (1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12),
        "mus": (1.0, math.sqrt(1000.0), 500.0),
        "dtypes": ("float32", "float64"),
        "seeds": 5,
    },
}


def task_info(task: CircleWalk | FiniteTask) -> dict[str, Any]:
    """The task's name and sizes (and p for a circle walk) as written in the report."""
    return task.describe()


def check_stuck_task(task: object) -> CircleWalk | FiniteTask:
    """``task`` if it is a task with numeric probabilities whose signal C vanishes, else a one-line ValueError.

    C = 0 is what makes the first step uninformative (docs/theory.md#signal); the exact trajectory then
    stays on a symmetric manifold that ``find_manifold`` finds.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> check_stuck_task(CircleWalk(3, 5, 1))
    Traceback (most recent call last):
    ValueError: circle walk K=3, N=5, p=1: the signal C is not zero (C = 0 needs p in {0, 1} and N = rK+1, or K = 4, p = 1/2 and N odd), so the exact trajectory is not stuck
    """
    from rwtoolkit.engines.exact import signal_matrix

    if not isinstance(task, (CircleWalk, FiniteTask)):
        raise ValueError(f"task={task!r} is not a circle walk or a finite task")  # noqa: TRY004 - usage error
    if task.symbols:
        raise ValueError("p is a symbol (give --p): rw stability needs a number p (0, 1, or 1/2 at K = 4)")
    population_arrays(task)  # symbolic probabilities are refused here, with a one-line message
    if not signal_matrix(task).is_zero_matrix:
        if isinstance(task, CircleWalk):
            raise ValueError(
                f"circle walk K={task.K}, N={task.N}, p={task.p}: the signal C is not zero (C = 0 needs p in "
                "{0, 1} and N = rK+1, or K = 4, p = 1/2 and N odd), so the exact trajectory is not stuck"
            )
        raise ValueError(
            f"task {task.name!r}: the signal C is not zero, so the exact trajectory is not stuck "
            "(rw explore shows C and the verdict)"
        )
    return task


def population_route(task: CircleWalk | FiniteTask, sums: str) -> str:
    """ "plain" or "orbits": ``sums`` resolved ("auto": orbits above ``ORBITS_ABOVE`` inputs)."""
    if sums not in SUMS:
        raise ValueError(f"sums={sums!r} must be one of {', '.join(SUMS)}")
    if sums != "auto":
        return sums
    return "orbits" if population_task(task).population_size() > ORBITS_ABOVE else "plain"


def duration_text(seconds: float) -> str:
    """An estimate's time as written in a message: seconds below an hour, else hours.

    >>> duration_text(99.7), duration_text(7200)
    ('100 s', '2.0 h')
    """
    return f"{seconds:.0f} s" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def report_estimate(
    task: CircleWalk | FiniteTask,
    steps: int,
    runs: int,
    mus: int,
    route: str,
    summed: int | None = None,
    dim: int | None = None,
) -> tuple[float, float]:
    """(seconds, bytes) of a report: Hessians over ``summed`` inputs (all n on the plain route; the
    orbit representatives, once known, on the orbit route), ``runs`` measured escape runs over all n,
    and the orbit decomposition; ``mus`` linearisations; ``dim`` the reduced coordinates when the caller
    has them (else read from the population). Constants: module text (measured)."""
    n = population_task(task).population_size()
    m = n if summed is None else summed
    dim = active_coordinates(task).dim if dim is None else dim
    unit = dim * m * task.N
    per_run_step = RUN_STEP_SECONDS + TRAIN_SECONDS * n * task.N
    seconds = mus * steps * (STEP_SECONDS + HESSIAN_SECONDS * unit + runs * per_run_step)
    if route == "orbits":
        seconds += ORBIT_SECONDS * n
    return seconds, float(HESSIAN_BYTES * unit)


def check_estimate(
    task: CircleWalk | FiniteTask,
    steps: int,
    runs: int,
    mus: int,
    route: str,
    summed: int | None = None,
    dim: int | None = None,
) -> None:
    """A one-line ValueError with the estimate and what to change when a report would not fit."""
    from rwtoolkit.io import check_memory

    seconds, memory = report_estimate(task, steps, runs, mus, route, summed, dim)
    n = population_task(task).population_size()
    over = f"{n} inputs" if summed is None else f"{summed} orbit representatives of {n} inputs"
    if seconds > MAX_SECONDS:
        hint = (
            "use --predict-only (no measured escape runs), fewer --steps, --sigmas or --seeds"
            if runs
            else "use fewer --steps or --mus"
        )
        if route == "plain":
            hint += ", or --sum orbits (Hessians over the orbits of the task's symmetry group)"
        raise ValueError(
            f"rw stability: about {duration_text(seconds)} ({route} sums over {over}, {runs} measured runs, "
            f"{steps} steps, {mus} mu), above {MAX_SECONDS:.0f} s: {hint}"
        )
    check_memory(
        int(memory),
        f"rw stability: one step's Hessian ({route} sums over {over})",
        "use --sum orbits or a smaller N",
    )


def check_report_args(
    task: object,
    steps: int,
    sigmas: Sequence[float],
    seeds: int,
    threshold: float,
    mus: Sequence[float] = (1.0,),
    dtypes: Sequence[str] = ("float64",),
    sums: str = "auto",
    measure: bool = True,
) -> CircleWalk | FiniteTask:
    """One-line ValueErrors for every bad argument and for a report estimated too large, before any
    work; returns the checked task.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> check_report_args(CircleWalk(3, 4, 1), steps=10, sigmas=[1e-3], seeds=1, threshold=1e-3).N
    4
    """
    route = population_route(task, sums) if isinstance(task, (CircleWalk, FiniteTask)) else "plain"
    check_run_options(steps, sigmas, seeds, threshold, mus, dtypes)
    runs = _runs(sigmas, seeds, dtypes) if measure else 0
    if isinstance(task, (CircleWalk, FiniteTask)):
        # the estimate at one coordinate is a lower bound: refuse a report too large even then before the
        # stuck-task check and the active coordinates, which enumerate the population (seconds at 10⁶ inputs)
        check_estimate(task, steps, runs, len(mus), route, summed=1 if route == "orbits" else None, dim=1)
    checked = check_stuck_task(task)
    dim = active_coordinates(checked).dim
    if dim > MAX_DIM:
        raise ValueError(
            f"{dim} reduced coordinates is above {MAX_DIM}: each step builds a {dim}x{dim} Hessian; "
            "use a smaller K or N"
        )
    # the orbit route's Hessians sum over at most n representatives: estimated again once they are known
    check_estimate(checked, steps, runs, len(mus), route, summed=1 if route == "orbits" else None, dim=dim)
    return checked


def _runs(sigmas: Sequence[float], seeds: int, dtypes: Sequence[str]) -> int:
    """Measured escape runs per μ: every σ, dtype and seed, plus both Gram choices per rounding dtype."""
    return len(sigmas) * seeds * len(dtypes) + 2 * len(UNIT_ROUNDOFF)


def check_run_options(
    steps: int,
    sigmas: Sequence[float],
    seeds: int,
    threshold: float,
    mus: Sequence[float],
    dtypes: Sequence[str],
) -> None:
    """One line naming the option out of its range: the run length, init scales, seeds, threshold, μ, dtypes."""
    if not 2 <= steps <= MAX_STEPS:
        raise ValueError(f"steps={steps} must be in [2, {MAX_STEPS}]")
    if not sigmas or any(not (0 < s < 1) for s in sigmas):
        raise ValueError(f"sigmas={list(sigmas)} must be a non-empty list of numbers in (0, 1)")
    if not 1 <= seeds <= 20:
        raise ValueError(f"seeds={seeds} must be in [1, 20]")
    if not 0 < threshold < 1:
        raise ValueError(f"threshold={threshold} must be in (0, 1)")
    if not mus or any(not (math.isfinite(m) and 0 < m <= 1e4) for m in mus):
        raise ValueError(f"mus={list(mus)} must be a non-empty list of numbers in (0, 10000]")
    if not dtypes or any(d not in UNIT_ROUNDOFF for d in dtypes):
        raise ValueError(f"dtypes={list(dtypes)} must be a non-empty list of {', '.join(UNIT_ROUNDOFF)}")


def _selection_json(s: Selection | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        "attended_position": s.attended_position,
        "attention": s.attention,
        "v_pattern": s.v_pattern,
        "accuracy": s.accuracy,
    }


def _verdict_json(lin: Linearisation, mu: float) -> dict[str, Any]:
    v = verdict(lin)
    return {"kind": v.kind, "rate": v.rate, "tolerance": v.tolerance, "line": v.line(), "mu": mu}


def _per_mu(
    task: CircleWalk | FiniteTask,
    steps: int,
    eta: float,
    mu: float,
    eps: float,
    sigmas: Sequence[float],
    seeds: int,
    threshold: float,
    dtypes: Sequence[str],
    sums: OrbitSums | None = None,
    measure: bool = True,
    tick: Callable[..., object] | None = None,
) -> tuple[Linearisation, dict[str, Any]]:
    coords = sums.manifold() if sums is not None else find_manifold(task, eta, mu, eps)
    lin = linearise(task, steps, eta, mu, eps, coords=coords, sums=sums, tick=tick)
    per_step = [
        {
            "t": t,
            "sigma_J": lin.sigma_J[t],
            "sigma_C": lin.sigma_C[t],
            "radius_C": lin.radius_C[t],
            "log_sigma_Phi": lin.log_sigma_Phi[t],
            "growth": lin.growth[t],
            "leak": lin.leak[t],
        }
        for t in range(steps)
    ]
    gaussian = []
    for s in sigmas:
        predicted = predict_escape(lin, sigma=s, threshold=threshold).step
        for dtype in dtypes:
            runs: list[Escape] = []
            for k in range(seeds if measure else 0):
                runs.append(measure_escape(lin, sigma=s, dtype=dtype, seed=k, threshold=threshold))
                if tick is not None:
                    tick(steps)
            gaussian.append(
                {
                    "sigma": s,
                    "dtype": dtype,
                    "predicted": predicted,
                    "measured": [r.step for r in runs],
                    "selection": [_selection_json(r.selection) for r in runs],
                    "selected": selection_distribution(runs),
                }
            )
    rounding = []
    for dtype in UNIT_ROUNDOFF:
        predicted_round = predict_escape(lin, dtype=dtype, threshold=threshold).step
        for gram in ("ideal", "computed"):
            m = measure_escape(lin, dtype=dtype, threshold=threshold, gram=gram) if measure else None
            if m is not None and tick is not None:
                tick(steps)
            rounding.append(
                {
                    "dtype": dtype,
                    "gram": gram,
                    "predicted": predicted_round,
                    "measured": None if m is None else m.step,
                    "measured_final_rho": None if m is None else finite_or_none(m.rho[-1]),
                    "selection": None if m is None else _selection_json(m.selection),
                }
            )
    block = {
        "mu": mu,
        "verdict": _verdict_json(lin, mu),
        "max_leak": max(lin.leak),
        "unstable_directions": unstable_directions(lin),
        "steps": per_step,
        "escape": {"quantity": "v_residual", "gaussian": gaussian, "rounding": rounding},
    }
    return lin, block


def stability_report(
    task: CircleWalk | FiniteTask,
    steps: int = 200,
    eta: float = 1.0,
    mu: float = 1.0,
    eps: float = 0.1,
    sigmas: Sequence[float] = GRIDS["quick"]["sigmas"],
    seeds: int = 2,
    threshold: float = DEFAULT_THRESHOLD,
    mus: Sequence[float] | None = None,
    dtypes: Sequence[str] = ("float64",),
    sums: str = "auto",
    measure: bool = True,
    progress: bool = False,
) -> dict:
    """Manifold, linearisation, verdict and escape tables of a stuck task (schema ``stability.schema.json``).

    ``mus``: the μ values (one block of ``results`` each; default ``[mu]``); the headline ``verdict`` is
    that of the first. ``sums``: "plain" (Hessians over every input, around the manifold the exact
    trajectory finds), "orbits" (over the orbits of the task's symmetry group, around its fixed subspace
    Fix(G): ``orbit_sums``) or "auto" (orbits above ``ORBITS_ABOVE`` inputs). ``measure``: False leaves
    out the measured escape runs (they train off the manifold, so they sum over every input), keeping
    the predictions. ``progress``: a bar over the GD steps (the linearisation's and every measured run's)
    when stderr is a terminal, and the estimated time on stderr first when it is 10 s or more.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> r = stability_report(CircleWalk(3, 4, 1), steps=4, sigmas=[1e-3], seeds=1)
    >>> r["verdict"]["kind"], len(r["results"][0]["steps"]), r["results"][0]["escape"]["gaussian"][0]["predicted"]
    ('neutral', 4, 1)
    """
    mu_list = [float(mu)] if mus is None else [float(m) for m in mus]
    checked = check_report_args(task, steps, sigmas, seeds, threshold, mu_list, dtypes, sums, measure)
    route = population_route(checked, sums)
    runs = _runs(sigmas, seeds, dtypes) if measure else 0
    active = active_coordinates(checked)
    orbits = orbit_sums(checked, active) if route == "orbits" else None
    summed, dim = (len(orbits.orbits), orbits.coords.dim) if orbits is not None else (None, active.dim)
    if orbits is not None:
        check_estimate(checked, steps, runs, len(mu_list), route, summed=summed, dim=dim)
    if progress:
        say_estimate(
            report_estimate(checked, steps, runs, len(mu_list), route, summed, dim)[0],
            len(mu_list),
            steps,
            runs,
        )
    results, first = [], None
    bar = tqdm(  # one unit per GD step: the linearisation's and every measured run's
        total=len(mu_list) * steps * (1 + runs),
        desc="rw stability",
        unit="step",
        disable=not (progress and sys.stderr.isatty()),
    )
    for m in mu_list:
        lin, block = _per_mu(
            task, steps, eta, m, eps, sigmas, seeds, threshold, dtypes, orbits, measure, bar.update
        )
        first = first or lin
        results.append(block)
    bar.close()
    assert first is not None
    coords = first.coords
    return {
        "task": task_info(task),
        "config": {
            "steps": steps,
            "eta": eta,
            "mus": mu_list,
            "eps": eps,
            "sigmas": [float(s) for s in sigmas],
            "dtypes": list(dtypes),
            "seeds": seeds,
            "threshold": threshold,
            "sums": route,
            "measured": measure,
        },
        "dimensions": {"reduced": coords.dim, "normal": int(first.basis.shape[1])},
        "manifold": {"source": coords.source, "classes": coords.classes_named()},
        "population": _population_json(checked, orbits),
        "verdict": results[0]["verdict"],
        "results": results,
    }


#: A report estimated to take at least this long says so on stderr before it starts (with ``progress``).
SAY_ESTIMATE_ABOVE = 10.0


def say_estimate(seconds: float, mus: int, steps: int, runs: int) -> None:
    """One line on stderr with a long report's estimated time, before the work (``progress`` only)."""
    if seconds >= SAY_ESTIMATE_ABOVE:
        measured = f" and {runs} measured runs of {steps} steps" if runs else ""
        print(
            f"rw stability: about {duration_text(seconds)} estimated ({mus} mu x {steps} linearised steps{measured})",
            file=sys.stderr,
        )


def _population_json(task: CircleWalk | FiniteTask, sums: OrbitSums | None) -> dict[str, Any]:
    """The inputs summed over: all of them, or one representative per orbit of the group (its JSON)."""
    n = population_task(task).population_size()
    if sums is None:
        return {"inputs": n, "summed": n}
    return {"inputs": n, "summed": len(sums.orbits), "group": sums.orbits.group.to_json()}
