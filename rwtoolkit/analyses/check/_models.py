"""Checking an implementation of another model of ``rwtoolkit.models`` (``rw check --model NAME``): the generic exact engine.

For the paper's model (``one_layer``, the default) nothing here is used and nothing changes: the expected
values come from ``rwtoolkit.engines.exact.derive`` through the oracle format (``rwtoolkit.analyses.check._compare``). For any other
registered model (today ``key_query``) they come from the generic exact engine: ``rwtoolkit.models.descend`` in the
exact arithmetic ``rwtoolkit.engines.exact.arithmetic._models.EXACT``, full-batch GD θ ← θ − η ∇L from the model's zero
initialisation on the task's exact population, L = Σ_n π_n ℓ(e_{y_n}ᵀ f_n), with the positional embeddings
P = ``rwtoolkit.models.rational_positions(N, μ)`` (rational entries, PᵀP = μI exactly, M = 4⌈N/4⌉).

What the implementation is handed is the protocol's config (``rwtoolkit.analyses.check.for_model``), as for the
paper's model: ``K``, ``N``, ``M``, ``P`` (that same P as float64, the nearest double of each entry), ``mu``, ``eta``,
``eps``, ``loss``, ``dtype``/``torch_dtype``, the population (``tokens``, ``labels``, ``weights``),
``inputs()`` (X̃ = [X; P] of every input) and ``loss_fn``, plus ``model`` (the name), ``head_dim`` (d) and
``shapes`` (every parameter's name and shape, in order). Use the config's P and its ``shapes``.

Compared at each step t = 0..T, in this order: the parameters by the model's own names (``model.shapes``:
``V``, ``W_K``, ``W_Q`` for key_query), then the model-independent read-outs: the attention S and the
prediction f of every input, the population loss and the population accuracy (the accuracy exactly,
except at exact near-ties in f, as for the paper's model). The tolerance rule is the paper model's
(``rwtoolkit.analyses.check._compare.tolerance``). A read-out the implementation does not provide is not checked.

What a ``key_query`` implementation must expose (d = ``config.head_dim``, D = K + M):

(a) a ``torch.nn.Module`` with parameters ``V`` (K×K), ``W_K`` (d×D) and ``W_Q`` (d×D), and no others,
    all zero as constructed (the zero initialisation), whose ``forward(Xt)`` maps X̃ (n, D, N) to
    f = V X S (n, K) with S = softmax_j((W_K x̃_j)ᵀ (W_Q x̃_N)) over the N columns; an optional
    ``attention(Xt)`` returning S (n, N) adds the attention read-out. The kit trains it exactly as a
    paper-model module: θ ← θ − η ∇θ for every parameter, from autograd of Σ_n π_n ℓ(e_{y_n}ᵀ f_n).
(b) an iterator (the user's own training loop) yielding at t = 0, 1, … a dict with keys ``"V"``,
    ``"W_K"``, ``"W_Q"`` and any of ``"S"``, ``"f"``, ``"loss"``, ``"accuracy"`` (or the tuple
    ``(V, W_K, W_Q)``).

``examples/key_query_torch.py`` is a reference implementation of both, with wrong variants.

Properties: the trajectory rows (one per compared quantity, one hypothesis search) and Lemma C.1 (V(1)),
which holds for every registered model: from zero, f(0) = 0 and the scores are 0, so S(0) is uniform. The
paper model's other statements (W11 = W21 = 0, Theorem 4.1, P only through μ) are reported not checked.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import overload

import numpy as np
import sympy as sp

from rwtoolkit.analyses.check._compare import Divergence, Mismatch, near_tie, tolerance, trajectory_key
from rwtoolkit.analyses.check._config import CheckConfig, exact_start, model_of
from rwtoolkit.analyses.check._settings import check_settings
from rwtoolkit.analyses.check.strategies import exact_loss
from rwtoolkit.engines.exact import EXACT, make_loss
from rwtoolkit.models import Sizes, batch, descend, get_model, rational_positions
from rwtoolkit.runtime import ImplementationError, Readouts, first_difference, model_quantities

__all__ = [
    "ONE_LAYER_ONLY",
    "VALUE_MATRIX_ONLY",
    "ZERO_START_ONLY",
    "ExpectedSteps",
    "compare_model",
    "expected_model_steps",
    "parameter_names",
    "trajectory_statements",
]

#: Properties stated for the paper's merged W only; reported not checked for another model.
ONE_LAYER_ONLY = ("W_first_columns_zero", "theorem_4_1_symmetry", "P_only_through_mu")
#: Properties stated for the zero start; reported not checked for a model checked from ``config.start``.
ZERO_START_ONLY = ("lemma_C1_first_value_step",)
#: Properties of the value matrix V of f = V X S; reported not checked for a model without one.
VALUE_MATRIX_ONLY = ("lemma_C1_first_value_step",)

_EXPECTED: dict[tuple, ExpectedSteps] = {}


def parameter_names(model: str, head_dim: int | None = None) -> tuple[str, ...]:
    """The model's parameter names in the order they are compared (``model.shapes``; names do not depend on sizes)."""
    return tuple(get_model(model, d=head_dim).shapes(Sizes(K=1, M=1, N=1)))


def trajectory_statements(model: str, head_dim: int | None, readouts: dict[str, str]) -> dict[str, str]:
    """The trajectory rows of the report for ``model``: its parameters, then the read-outs of ``readouts``
    (the paper model's statements of S, f, loss, accuracy)."""
    start = "zero" if check_settings(model).init == "zero" else "config.start"
    rows = {
        name: f"{name}(t) equals the exact trajectory of rwtoolkit.models.descend ({model}, from {start}), t = 0..T"
        for name in parameter_names(model, head_dim)
    }
    return {**rows, **{q: readouts[q] for q in ("S", "f", "loss", "accuracy")}}


class ExpectedSteps(Sequence[Mapping[str, np.ndarray]]):
    """The exact read-outs of one config at t = 0..T, each converted to float64 when first read.

    The trajectory itself (``rwtoolkit.models.descend`` in exact arithmetic) is computed once; a read-out (a parameter,
    S, f, the loss) becomes a float64 array only when a comparison reads it, and the accuracy's exact argmax
    decisions are made only for a step whose accuracy is compared (``accuracy_compared``): a comparison that
    stops at a first divergence, or an implementation that reports no S or no accuracy, never pays for the
    rest. ``expected[t][q]`` is step t's read-out q.
    """

    def __init__(self, config: CheckConfig, steps: int) -> None:
        model = model_of(config)
        pop = config.task.population()
        P = EXACT.asarray(rational_positions(config.N, config.mu))
        self._population = batch(EXACT, pop.tokens, pop.labels, pop.exact_probs(), config.K, P)
        lossfn = make_loss(exact_loss(config.loss), sp.Rational(config.eps.numerator, config.eps.denominator))
        eta = sp.Rational(config.eta.numerator, config.eta.denominator)
        self._states = descend(
            model, EXACT, exact_start(config), self._population, lossfn.elementwise(), eta, steps
        )
        self._near = near_tie(config.dtype)
        #: What each step holds: the parameters by name, then S, f, loss, accuracy.
        self.quantities = model_quantities(config.shapes)
        self._rows = [_Row(self, t) for t in range(len(self._states))]
        self._compared: dict[int, bool] = {}

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, t: int) -> Mapping[str, np.ndarray]: ...
    @overload
    def __getitem__(self, t: slice) -> Sequence[Mapping[str, np.ndarray]]: ...
    def __getitem__(self, t: int | slice) -> Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]]:
        return self._rows[t]

    def accuracy_compared(self, t: int) -> bool:
        """Whether step t's accuracy is compared: no exact near-tie in f (``near_tie``) and every argmax decided.

        Decided on first call; the exact accuracy is computed only when no near-tie rules it out."""
        if t not in self._compared:
            state = self._states[t]
            compared = not self._near([list(f) for f in state.f])
            if compared:
                value = state.accuracy(self._population, EXACT)
                compared = value is not None
                if compared:
                    self._rows[t].converted["accuracy"] = EXACT.to_float(
                        np.asarray(value, dtype=object)
                    ).reshape(())
            self._compared[t] = compared
        return self._compared[t]

    def not_compared(self) -> list[int]:
        """The steps found so far whose accuracy is not compared."""
        return sorted(t for t, compared in self._compared.items() if not compared)

    def convert(self, t: int, q: str) -> np.ndarray:
        """Step t's read-out q (a parameter name, S, f, loss or accuracy) as float64."""
        state = self._states[t]
        if q in state.params:
            return EXACT.to_float(state.params[q])
        if q in ("S", "f"):
            return EXACT.to_float(getattr(state, q))
        if q == "loss":
            return EXACT.to_float(np.asarray(state.loss, dtype=object)).reshape(())
        if q == "accuracy":
            if not self.accuracy_compared(t):
                return np.array(np.nan)
            return self._rows[t].converted["accuracy"]
        raise KeyError(q)


class _Row(Mapping[str, np.ndarray]):
    """Step t of ``ExpectedSteps``: read-outs converted on first access."""

    def __init__(self, steps: ExpectedSteps, t: int) -> None:
        self._steps, self._t = steps, t
        self.converted: dict[str, np.ndarray] = {}

    def __getitem__(self, q: str) -> np.ndarray:
        if q not in self.converted:
            self.converted[q] = self._steps.convert(self._t, q)
        return self.converted[q]

    def __iter__(self) -> Iterator[str]:
        return iter(self._steps.quantities)

    def __len__(self) -> int:
        return len(self._steps.quantities)


def expected_model_steps(config: CheckConfig, steps: int) -> ExpectedSteps:
    """The exact read-outs of ``config.model`` at t = 0..steps (parameters by name, S, f, loss, accuracy), each
    converted to float64 when first read, with ``accuracy_compared(t)`` (False at an exact near-tie in f, or an
    undecided argmax).

    Memoised: hypothesis replays configurations while shrinking.
    """
    key = trajectory_key(config, steps)
    if key not in _EXPECTED:
        if len(_EXPECTED) > 256:
            _EXPECTED.clear()
        _EXPECTED[key] = ExpectedSteps(config, steps)
    return _EXPECTED[key]


def compare_model(
    readouts: Readouts, config: CheckConfig, steps: int, rtol: float | None = None
) -> list[str]:
    """Raise ``Mismatch`` at the first (step, quantity) outside the tolerance, in the order t = 0, 1, … and the
    model's parameters, S, f, loss, accuracy; else return notes (accuracies not compared).

    Only what is compared is computed: the read-outs the implementation provides, up to the first divergence;
    the accuracy of a step (its exact argmax decisions) only when every other quantity of that step matched.
    """
    if readouts.P is not None:
        raise ImplementationError(
            f"the implementation reports its own P; --model {config.model} sees P itself (not only PᵀP = μI), "
            "so it is checked with the config's P only"
        )
    limit = tolerance(config, steps).rtol if rtol is None else rtol
    expected = expected_model_steps(config, steps)
    quantities = model_quantities(config.shapes)
    others = tuple(q for q in quantities if q != "accuracy")
    diff = first_difference(readouts, expected, limit, frozenset(), others)
    if readouts.provided("accuracy"):
        # the accuracy is the last quantity of a step: compared at the steps before the first divergence
        reached = expected[: len(expected) if diff is None else diff.step]
        skip = frozenset(t for t in range(len(reached)) if not expected.accuracy_compared(t))
        diff = first_difference(readouts, reached, limit, skip, ("accuracy",)) or diff
    if diff is not None:
        raise Mismatch(Divergence.of(diff, config))
    if not readouts.provided("accuracy"):
        return []
    return [f"accuracy at t={t} not compared: an exact near-tie in f" for t in expected.not_compared()]
