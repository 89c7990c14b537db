"""Lemma D.3's reduced GD map as ``rw stability``'s view: the paper's model in θ = (V, w_tok, c).

The registered specialisation of the generic linearisation for ``one_layer`` from zero
(``rwtoolkit.analyses.stability._views``). The one report builder (``stability_report``) reads it through
``ReducedView``; what only this view has is written here: the reduced and normal dimensions, the population
summed over (every input, or one representative per orbit of the task's symmetry group), the manifold's classes
of coordinates, per step the Lemma D.3 quantities σ_max(J_t), σ_max(C_t), the spectral radius of C_t and the
leak, the unstable directions of Φ_T, and the escape tables of V's relative distance from the manifold
(Gaussian starts, and rounding in both dtypes with both Gram choices). One linearisation per μ (the manifold
and the trajectory depend on it); per μ the Gaussian-init table covers every σ, dtype and seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rwtoolkit.analyses.stability._escape import (
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
from rwtoolkit.analyses.stability._report import MAX_SECONDS, check_run_options, duration_text
from rwtoolkit.analyses.stability._views import StabilityOptions
from rwtoolkit.models import DEFAULT_MODEL, Model
from rwtoolkit.tasks import CircleWalk, FiniteTask

#: Largest reduced dimension the report accepts (one dim×dim Hessian per step).
MAX_DIM = 300
#: Population sums: "plain" over every input, "orbits" over the orbits of the task's symmetry group
#: (``rwtoolkit.analyses.stability.orbit_sums``); "auto" takes orbits above ``ORBITS_ABOVE`` inputs.
SUMS = ("auto", "plain", "orbits")
ORBITS_ABOVE = 4096
#: Cost model of a report, measured on this project's 2-core CI machine (benchmarks/orbit_sums.py):
#: seconds per (reduced coordinate · summed input · position) of one step's Hessian, bytes of jacrev's
#: intermediates per the same unit, seconds per (input · position) of one step of a measured escape run,
#: seconds per input of the orbit decomposition (the time budget is ``MAX_SECONDS``).
HESSIAN_SECONDS, HESSIAN_BYTES, TRAIN_SECONDS, ORBIT_SECONDS = 1.5e-7, 80, 1.5e-7, 3e-5
#: The fixed cost of a step, whatever the size: seconds per linearised step (two jacrev passes, the SVDs)
#: and per step of a measured escape run (``rwtoolkit.engines.numeric.train`` on one torch thread). Measured with
#: ``linearise`` and ``measure_escape`` at K = 3, N = 4 (12 inputs·positions: the size terms above are
#: 1e-5 of these), 200 steps, on the 2-core machine: 5 to 6 ms and 1.4 to 2.6 ms.
STEP_SECONDS, RUN_STEP_SECONDS = 6e-3, 2.5e-3


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
    mu: float,
    opts: StabilityOptions,
    sums: OrbitSums | None = None,
    tick: Callable[..., object] | None = None,
) -> tuple[Linearisation, dict[str, Any]]:
    """The linearisation at ``mu`` and its block of ``results`` (``sums``: the orbit route's decomposition)."""
    steps, eta, eps, threshold, measure = opts.steps, opts.eta, opts.eps, opts.threshold, opts.measure
    sigmas, seeds, dtypes = opts.sigmas, opts.seeds, opts.dtypes
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


class ReducedView:
    """Lemma D.3's reduced GD map of ``model`` (the paper's) on ``task``: a ``StabilityView``.

    Made with every refusal raised first (``--manifold`` is the generic view's option; ``--sum``'s choices;
    ``check_report_args``); ``prepare`` takes the orbit decomposition on the orbit route and estimates again.
    """

    def __init__(self, task: object, model: Model, opts: StabilityOptions) -> None:
        if opts.manifold != "auto":
            raise ValueError(
                f"--manifold {opts.manifold} applies with --model (another model than {DEFAULT_MODEL}); "
                "the paper's model is linearised around the manifold its exact trajectory stays on"
            )
        if opts.sums not in SUMS:
            raise ValueError(f"--sum={opts.sums!r} must be one of {', '.join(SUMS)}")
        self.model, self.opts = model, opts
        self.task = check_report_args(
            task,
            opts.steps,
            opts.sigmas,
            opts.seeds,
            opts.threshold,
            opts.mus,
            opts.dtypes,
            opts.sums,
            opts.measure,
        )
        self.route = population_route(self.task, opts.sums)
        self.runs = _runs(opts.sigmas, opts.seeds, opts.dtypes) if opts.measure else 0
        self.orbits: OrbitSums | None = None
        self.first: Linearisation | None = None

    def prepare(self) -> float:
        """The orbit decomposition (orbit route; estimated again over its representatives), and the seconds."""
        o, active = self.opts, active_coordinates(self.task)
        self.orbits = orbit_sums(self.task, active) if self.route == "orbits" else None
        summed, dim = (
            (len(self.orbits.orbits), self.orbits.coords.dim)
            if self.orbits is not None
            else (None, active.dim)
        )
        if self.orbits is not None:
            check_estimate(self.task, o.steps, self.runs, len(o.mus), self.route, summed=summed, dim=dim)
        return report_estimate(self.task, o.steps, self.runs, len(o.mus), self.route, summed, dim)[0]

    def per_mu(self, mu: float, tick: Callable[..., object] | None) -> dict[str, Any]:
        lin, block = _per_mu(self.task, mu, self.opts, self.orbits, tick)
        self.first = self.first or lin
        return block

    def head(self) -> dict[str, Any]:
        return {}

    def config(self) -> dict[str, Any]:
        return {"sums": self.route, "measured": self.opts.measure}

    def body(self) -> dict[str, Any]:
        """The reduced and normal dimensions, the manifold's classes, the population summed over."""
        if self.first is None:
            raise ValueError("the reduced view has no linearisation yet: per_mu makes one per mu")
        coords = self.first.coords
        return {
            "dimensions": {"reduced": coords.dim, "normal": int(self.first.basis.shape[1])},
            "manifold": {"source": coords.source, "classes": coords.classes_named()},
            "population": _population_json(self.task, self.orbits),
        }


def _population_json(task: CircleWalk | FiniteTask, sums: OrbitSums | None) -> dict[str, Any]:
    """The inputs summed over: all of them, or one representative per orbit of the group (its JSON)."""
    n = population_task(task).population_size()
    if sums is None:
        return {"inputs": n, "summed": n}
    return {"inputs": n, "summed": len(sums.orbits), "group": sums.orbits.group.to_json()}
