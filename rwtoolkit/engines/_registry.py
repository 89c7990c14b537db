"""The one engine entry point: which engine runs gradient descent of a (model, arithmetic, start).

Every arithmetic has one generic engine, the loop ``rwtoolkit.models.gradient_steps`` run in it, which takes
any model of record from any start. The paper's model keeps hand-tuned engines: each is registered here as a
``Specialisation`` of one arithmetic's generic engine, for the models and starts it covers, with the tests
that pin it equal to the generic path. ``select`` is how every consumer (rw derive, rw train, rw sweep,
rw certify, rw check, the oracle writer) chooses, so a command has one path: it asks for an engine and reads
the trajectory it returns, whichever engine ran.

A specialisation takes the same arguments as its generic engine and returns the same trajectory type, so a
caller never branches on which one was selected
(docs/guide/architecture.md#gradient-descent-the-generic-path-and-its-specialisations).

>>> select("one_layer", "exact", "zero").name
'reduced exact engine'
>>> select("key_query", "exact", "zero").name
'generic exact engine'
>>> select("one_layer", "exact", "gaussian").name
'generic exact engine'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rwtoolkit.models import Model

#: The arithmetics an engine runs in: exact rationals (SymPy, python-flint), torch floats, arb balls.
ARITHMETICS = ("exact", "torch", "balls")
#: The starts an engine is registered for: ``zero`` is θ(0) = 0; ``any`` is every start (zero included).
STARTS = ("zero", "any")


@dataclass(frozen=True)
class Engine:
    """One engine: its name, its arithmetic, the models and starts it runs, and the function that runs it.

    ``models`` None means every model of record (the generic engine); ``function`` is ``"module:attribute"``,
    imported only when the engine is loaded (so selecting loads neither torch nor SymPy); ``pinned_by`` names
    the tests that pin a specialisation equal to the generic engine of its arithmetic; ``estimate``, where
    set, is ``"module:attribute"`` of the function that plans a run before any work (refusing what the engine
    cannot do, estimating time, memory and files), with one signature for an arithmetic's engines.
    """

    name: str
    arithmetic: str
    function: str
    models: tuple[str, ...] | None = None
    starts: tuple[str, ...] = ("any",)
    many: bool = False
    pinned_by: tuple[str, ...] = ()
    estimate: str | None = None

    @property
    def generic(self) -> bool:
        return self.models is None

    def covers(self, model: str, arithmetic: str, start: str, many: bool = False) -> bool:
        """Whether this engine runs ``model`` in ``arithmetic`` from ``start`` (``many``: a batch of runs)."""
        return (
            self.arithmetic == arithmetic
            and (self.models is None or model in self.models)
            and ("any" in self.starts or start in self.starts)
            and (many or not self.many)
        )

    def load(self) -> Callable[..., Any]:
        """The function that runs this engine (its module imported now)."""
        return _load(self.function)

    def load_estimate(self) -> Callable[..., Any]:
        """The function that plans a run of this engine before any work (its module imported now)."""
        if self.estimate is None:
            raise ValueError(f"the {self.name} registers no estimate")
        return _load(self.estimate)


def _load(function: str) -> Callable[..., Any]:
    """The attribute of ``"module:attribute"``, its module imported now."""
    module, _, attribute = function.partition(":")
    return getattr(importlib.import_module(module), attribute)


#: The generic engine of each arithmetic: any model of record, any start.
GENERIC: dict[str, Engine] = {
    "exact": Engine(
        "generic exact engine",
        "exact",
        "rwtoolkit.engines.exact:derive_model",
        estimate="rwtoolkit.engines.exact:derive_model_job",
    ),
    "torch": Engine("generic torch engine", "torch", "rwtoolkit.engines.numeric:train_model_runs"),
    "balls": Engine(
        "generic ball engine",
        "balls",
        "rwtoolkit.engines.balls:ball_model_trajectory",
        estimate="rwtoolkit.engines.balls:ball_model_job",
    ),
}

#: The hand-tuned engines of the paper's model, most specific first; each pinned equal to its generic engine.
SPECIALISATIONS: tuple[Engine, ...] = (
    Engine(
        "reduced exact engine",
        "exact",
        "rwtoolkit.engines.exact:derive",
        models=("one_layer",),
        starts=("zero",),
        pinned_by=(
            "tests/test_models.py::test_reduced_gradient_equals_full_model_gradient_exactly",
            "tests/test_models.py::test_reduced_trajectory_equals_full_model_on_its_rational_steps",
        ),
        estimate="rwtoolkit.engines.exact:derive_job",
    ),
    Engine(
        "batched torch engine",
        "torch",
        "rwtoolkit.engines.numeric:train_batched",  # torch: engine(runs, progress=False) -> [TrainResult]
        models=("one_layer",),
        many=True,
        pinned_by=("tests/test_fast_paths.py::test_batched_engine_equals_the_full_model",),
    ),
    Engine(
        "reduced torch engine (FastModel)",
        "torch",
        "rwtoolkit.engines.numeric:train_runs",
        models=("one_layer", "normalized_attention", "relu_head"),
        pinned_by=(
            "tests/test_fast_paths.py::test_reduced_torch_model_equals_the_full_model",
            "tests/test_normalized_attention.py::test_the_model_trains_as_the_fast_path_with_normalised_inputs",
            "tests/test_relu_head.py::test_the_model_trains_as_the_fast_path_with_a_relu_read_out",
        ),
    ),
    Engine(
        "reduced ball engine",
        "balls",
        "rwtoolkit.engines.balls:run_trajectory",
        models=("one_layer",),
        starts=("zero",),
        pinned_by=("tests/test_fast_paths.py::test_certified_engine_encloses_the_full_model",),
    ),
)


def select(
    model: str | Model, arithmetic: str, start: str, *, many: bool = False, specialise: bool = True
) -> Engine:
    """The engine that runs gradient descent of ``model`` in ``arithmetic`` from ``start``.

    The first registered specialisation covering (model, arithmetic, start) (``many``: a batch of runs of one
    shape, as rw sweep trains them), else the arithmetic's generic engine; ``specialise=False`` always gives
    the generic engine (the path every specialisation is pinned against). ``model`` is a registered name or a
    model: a model that is not the registered class of its name (a sequence model, a model of your own) gets
    the generic engine.
    """
    if arithmetic not in GENERIC:
        raise ValueError(f"arithmetic={arithmetic!r} is not one of {', '.join(ARITHMETICS)}")
    if not isinstance(model, str):
        model = _registered_name(model)
        if model is None:
            return GENERIC[arithmetic]
    if specialise:
        for engine in SPECIALISATIONS:
            if engine.covers(model, arithmetic, start, many):
                return engine
    return GENERIC[arithmetic]


def _registered_name(model: Model) -> str | None:
    """``model``'s registered name where its class is the one registered under it, else None (no import: the
    registry names each class by ``"module:Class"``)."""
    from rwtoolkit.models import REGISTRY

    entry = REGISTRY.get(model.name)
    cls = type(model)
    return (
        model.name if entry is not None and entry.target == f"{cls.__module__}:{cls.__qualname__}" else None
    )
