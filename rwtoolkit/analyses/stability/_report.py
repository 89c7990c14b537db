"""The one stability report: whichever linearisation is selected, one builder from the estimate to the JSON.

``rw stability`` asks whether a stuck task's invariant manifold attracts gradient descent. The linearisation is
chosen by (model, arithmetic, start) (``rwtoolkit.analyses.stability._views.select_linearisation``): Lemma D.3's
reduced GD map for the paper's model (``_lemma.ReducedView``), the generic off-manifold linearisation for any
other model of record (``_generic.ModelView``). ``stability_report`` builds the report of either: the refusals
and the estimate before any work, one block of ``results`` per μ, the headline verdict the first block's, and
the view's own fields where it has them. Schema ``rwtoolkit/schemas/stability.schema.json`` (one for both; the
fields of one view are required there when the report is that view's).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rwtoolkit.analyses.stability._escape import DEFAULT_THRESHOLD, UNIT_ROUNDOFF
from rwtoolkit.analyses.stability._views import StabilityView, options, view_of
from rwtoolkit.models import DEFAULT_MODEL, Model, get_model

if TYPE_CHECKING:
    from rwtoolkit.tasks import CircleWalk, FiniteTask

#: The longest run a report linearises and trains, and its time budget in seconds (every view refuses beyond).
MAX_STEPS = 2000
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


def duration_text(seconds: float) -> str:
    """An estimate's time as written in a message: seconds below an hour, else hours.

    >>> duration_text(99.7), duration_text(7200)
    ('100 s', '2.0 h')
    """
    return f"{seconds:.0f} s" if seconds < 3600 else f"{seconds / 3600:.1f} h"


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


def check_stability_args(
    task: object,
    steps: int,
    sigmas: Sequence[float],
    seeds: int,
    threshold: float,
    mus: Sequence[float] = (1.0,),
    dtypes: Sequence[str] = ("float64",),
    sums: str = "auto",
    measure: bool = True,
    *,
    model: Model | str = DEFAULT_MODEL,
    manifold: str = "auto",
    eta: float = 1.0,
    eps: float = 0.1,
) -> StabilityView:
    """The selected linearisation's view of ``task`` for ``model``: every refusal, in one line, before any work.

    ``sums`` and ``measure`` are the reduced view's options (``--sum``, ``--predict-only``), ``manifold`` the
    generic one's (``--manifold``); each view refuses the other's. ``view_report`` then builds the report.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> check_stability_args(CircleWalk(3, 4, 1), 10, [1e-3], 1, 1e-3, model="key_query").runs
    1
    """
    model = get_model(model) if isinstance(model, str) else model
    opts = options(steps, eta, eps, mus, sigmas, seeds, threshold, dtypes, sums, measure, manifold)
    return view_of(task, model, opts)


def view_report(view: StabilityView, progress: bool = False) -> dict[str, Any]:
    """The report of a view made by ``check_stability_args`` (``stability_report`` has the text).

    ``progress``: a bar over the GD steps (the linearisation's and every measured run's) when stderr is a
    terminal, and the estimated time on stderr first when it is 10 s or more.
    """
    from tqdm import tqdm

    opts = view.opts
    seconds = view.prepare()
    if progress:
        say_estimate(seconds, len(opts.mus), opts.steps, view.runs)
    bar = tqdm(  # one unit per GD step: the linearisation's and every measured run's
        total=len(opts.mus) * opts.steps * (1 + view.runs),
        desc="rw stability",
        unit="step",
        disable=not (progress and sys.stderr.isatty()),
    )
    results = [view.per_mu(m, bar.update) for m in opts.mus]
    bar.close()
    return {
        **view.head(),
        "task": task_info(view.task),
        "config": {**opts.config(), **view.config()},
        **view.body(),
        "verdict": results[0]["verdict"],
        "results": results,
    }


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
    *,
    model: Model | str = DEFAULT_MODEL,
    manifold: str = "auto",
) -> dict[str, Any]:
    """Manifold, linearisation, verdict and escape tables of a stuck task (schema ``stability.schema.json``).

    ``model``: the paper's (default) runs Lemma D.3's reduced GD map, any other model of record the generic
    off-manifold linearisation (``select_linearisation``). ``mus``: the μ values (one block of ``results``
    each; default ``[mu]``); the headline ``verdict`` is that of the first. The paper's model only: ``sums``
    "plain" (Hessians over every input, around the manifold the exact trajectory finds), "orbits" (over the
    orbits of the task's symmetry group, around its fixed subspace Fix(G): ``orbit_sums``) or "auto" (orbits
    above ``ORBITS_ABOVE`` inputs); ``measure`` False leaves out the measured escape runs (they train off the
    manifold, so they sum over every input), keeping the predictions. Other models only: ``manifold`` zero,
    symmetry or auto (zero when a parameter stays exactly zero, else symmetry). ``progress``: see
    ``view_report``.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> r = stability_report(CircleWalk(3, 4, 1), steps=4, sigmas=[1e-3], seeds=1)
    >>> r["verdict"]["kind"], len(r["results"][0]["steps"]), r["results"][0]["escape"]["gaussian"][0]["predicted"]
    ('neutral', 4, 1)
    >>> r = stability_report(CircleWalk(3, 4, 1), steps=3, sigmas=[1e-3], seeds=1, model="key_query")
    >>> r["model"], r["manifold"]["parameters"], r["verdict"]["kind"]
    ({'name': 'key_query', 'd': 2}, ['W_K', 'W_Q'], 'unstable')
    """
    mu_list = [float(mu)] if mus is None else [float(m) for m in mus]
    view = check_stability_args(
        task,
        steps,
        sigmas,
        seeds,
        threshold,
        mu_list,
        dtypes,
        sums,
        measure,
        model=model,
        manifold=manifold,
        eta=eta,
        eps=eps,
    )
    return view_report(view, progress)
