"""Which linearisation ``rw stability`` runs for a (model, arithmetic, start), and what every one provides.

The generic linearisation (``rwtoolkit.analyses.stability._generic.ModelView``) takes any model of record: the
GD map F(θ) = θ − η∇L(θ) of its full parameters, linearised around an invariant manifold (zero or symmetric)
along the float64 trajectory from zero. The paper's model keeps one registered specialisation of it, Lemma
D.3's reduced GD map G(θ) = θ − η D ∇L(θ) in θ = (V, w_tok, c) (``rwtoolkit.analyses.stability._lemma.ReducedView``),
pinned equal to the full model's step by the tests it names. ``select_linearisation`` chooses between them as
``rwtoolkit.engines.select`` chooses an engine (the same ``rwtoolkit.engines.Engine`` records), and the one report
builder, ``rwtoolkit.analyses.stability.stability_report``, reads whichever it selected through the
:class:`StabilityView` protocol: one path from the estimate to the files, one schema
(``rwtoolkit/schemas/stability.schema.json``), the reduced view writing the fields only it has (its dimensions,
population, Lemma D.3 quantities per step, the rounding escape table, the unstable directions).

>>> select_linearisation("one_layer", "torch", "zero").name
"Lemma D.3's reduced GD map"
>>> select_linearisation("key_query", "torch", "zero").name
'generic off-manifold linearisation'
>>> select_linearisation("one_layer", "torch", "zero", specialise=False).generic
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rwtoolkit.engines import ARITHMETICS, Engine

if TYPE_CHECKING:
    from rwtoolkit.models import Model
    from rwtoolkit.tasks import CircleWalk, FiniteTask

#: The generic linearisation: any model of record, in torch float64, from zero.
GENERIC_LINEARISATION = Engine(
    "generic off-manifold linearisation", "torch", "rwtoolkit.analyses.stability._generic:ModelView"
)
#: The registered specialisations of it, most specific first; each pinned equal to the full model's GD step.
LINEARISATIONS: tuple[Engine, ...] = (
    Engine(
        "Lemma D.3's reduced GD map",
        "torch",
        "rwtoolkit.analyses.stability._lemma:ReducedView",
        models=("one_layer",),
        starts=("zero",),
        pinned_by=(
            "tests/test_fast_paths_reference.py::test_stability_linearisation_trajectory_is_the_full_model",
            "tests/test_fast_paths_reference.py::test_stability_reduced_gd_map_equals_the_full_step_off_the_manifold",
        ),
    ),
)


def select_linearisation(
    model: str, arithmetic: str = "torch", start: str = "zero", *, specialise: bool = True
) -> Engine:
    """The linearisation ``rw stability`` runs for ``model`` in ``arithmetic`` from ``start``.

    The first registered specialisation covering (model, arithmetic, start), else the generic one (which runs
    in torch only); ``specialise=False`` always gives the generic one.
    """
    if arithmetic not in ARITHMETICS:
        raise ValueError(f"arithmetic={arithmetic!r} is not one of {', '.join(ARITHMETICS)}")
    if specialise:
        for view in LINEARISATIONS:
            if view.covers(model, arithmetic, start):
                return view
    if arithmetic != GENERIC_LINEARISATION.arithmetic:
        raise ValueError(f"rw stability linearises in torch float64, not in the {arithmetic} arithmetic")
    return GENERIC_LINEARISATION


@dataclass(frozen=True)
class StabilityOptions:
    """The settings of one report: run length, GD settings, the μ values, the escape grid and the view's options.

    ``sums`` and ``measure`` are options of the reduced view (``--sum``, ``--predict-only``), ``manifold`` of the
    generic one (``--manifold``); a view refuses the other's options when they differ from their defaults.
    """

    steps: int
    eta: float
    eps: float
    mus: tuple[float, ...]
    sigmas: tuple[float, ...]
    seeds: int
    threshold: float
    dtypes: tuple[str, ...]
    sums: str = "auto"
    measure: bool = True
    manifold: str = "auto"

    def config(self) -> dict[str, Any]:
        """The settings every report's ``config`` writes (a view adds its own after them)."""
        return {
            "steps": self.steps,
            "eta": self.eta,
            "mus": list(self.mus),
            "eps": self.eps,
            "sigmas": [float(s) for s in self.sigmas],
            "dtypes": list(self.dtypes),
            "seeds": self.seeds,
            "threshold": self.threshold,
        }


def options(
    steps: int,
    eta: float,
    eps: float,
    mus: Sequence[float],
    sigmas: Sequence[float],
    seeds: int,
    threshold: float,
    dtypes: Sequence[str],
    sums: str = "auto",
    measure: bool = True,
    manifold: str = "auto",
) -> StabilityOptions:
    """``StabilityOptions`` from the arguments as given (μ as floats, the lists as tuples)."""
    return StabilityOptions(
        steps,
        eta,
        eps,
        tuple(float(m) for m in mus),
        tuple(sigmas),
        seeds,
        threshold,
        tuple(dtypes),
        sums,
        measure,
        manifold,
    )


class StabilityView(Protocol):
    """What the report builder reads of a linearisation (the generic one or a specialisation).

    Made from (task, model, options) with every refusal (bad option, a report estimated too large) raised as a
    one-line ValueError before any work; then ``prepare`` does what the estimate needs (the reduced view's orbit
    decomposition) and returns the estimated seconds, ``per_mu`` computes one block of ``results``, and
    ``head``, ``config`` and ``body`` give the view's own top-level fields: before ``task``, at the end of
    ``config``, and between ``config`` and ``verdict``.
    """

    task: CircleWalk | FiniteTask
    opts: StabilityOptions
    runs: int

    def prepare(self) -> float: ...

    def per_mu(self, mu: float, tick: Callable[..., object] | None) -> dict[str, Any]: ...

    def head(self) -> dict[str, Any]: ...

    def config(self) -> dict[str, Any]: ...

    def body(self) -> dict[str, Any]: ...


def view_of(task: object, model: Model, opts: StabilityOptions) -> StabilityView:
    """The selected linearisation's view of ``task`` (its refusals raised here, before any work)."""
    factory: Callable[[object, Model, StabilityOptions], StabilityView] = select_linearisation(
        model.name, "torch", "zero"
    ).load()
    return factory(task, model, opts)
