"""Checking an implementation of another model of ``rwmodels`` (``rw check --model NAME``): the generic exact engine.

For the paper's model (``one_layer``, the default) nothing here is used and nothing changes: the expected
values come from ``rwsymbolic.derive`` through the oracle format (``rwcheck._compare``). For any other
registered model (today ``key_query``) they come from the generic exact engine: ``rwmodels.descend`` in the
exact arithmetic ``rwsymbolic.arithmetic._models.EXACT``, full-batch GD θ ← θ − η ∇L from the model's zero
initialisation on the task's exact population, L = Σ_n π_n ℓ(e_{y_n}ᵀ f_n), with the positional embeddings
P = ``rwmodels.rational_positions(N, μ)`` (rational entries, PᵀP = μI exactly, M = 4⌈N/4⌉).

What the implementation is handed is the protocol's config (``CheckConfig.for_model``), as for the paper's
model: ``K``, ``N``, ``M``, ``P`` (that same P as float64, the nearest double of each entry), ``mu``, ``eta``,
``eps``, ``loss``, ``dtype``/``torch_dtype``, the population (``tokens``, ``labels``, ``weights``),
``inputs()`` (X̃ = [X; P] of every input) and ``loss_fn``, plus ``model`` (the name), ``head_dim`` (d) and
``shapes`` (every parameter's name and shape, in order). Use the config's P and its ``shapes``.

Compared at each step t = 0..T, in this order: the parameters by the model's own names (``model.shapes``:
``V``, ``W_K``, ``W_Q`` for key_query), then the model-independent read-outs: the attention S and the
prediction f of every input, the population loss and the population accuracy (the accuracy exactly,
except at exact near-ties in f, as for the paper's model). The tolerance rule is the paper model's
(``rwcheck._compare.tolerance``). A read-out the implementation does not provide is not checked.

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

import numpy as np
import sympy as sp

from rwcheck._compare import Divergence, Mismatch, near_tie, tolerance, trajectory_key
from rwcheck._config import CheckConfig
from rwcheck._runtime import ImplementationError, Readouts, first_difference, model_quantities
from rwcheck.strategies import exact_loss
from rwmodels import batch, descend, get_model, rational_positions
from rwsymbolic import EXACT, make_loss

__all__ = [
    "ONE_LAYER_ONLY",
    "VALUE_MATRIX_ONLY",
    "ZERO_START_ONLY",
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

_EXPECTED: dict[tuple, tuple[list[dict[str, np.ndarray]], frozenset[int]]] = {}


def parameter_names(model: str, head_dim: int | None = None) -> tuple[str, ...]:
    """The model's parameter names in the order they are compared (``model.shapes``; names do not depend on sizes)."""
    return tuple(get_model(model, d=head_dim).shapes(1, 1))


def trajectory_statements(model: str, head_dim: int | None, readouts: dict[str, str]) -> dict[str, str]:
    """The trajectory rows of the report for ``model``: its parameters, then the read-outs of ``readouts``
    (the paper model's statements of S, f, loss, accuracy)."""
    start = "zero" if get_model(model, d=head_dim).CHECK_INIT == "zero" else "config.start"
    rows = {
        name: f"{name}(t) equals the exact trajectory of rwmodels.descend ({model}, from {start}), t = 0..T"
        for name in parameter_names(model, head_dim)
    }
    return {**rows, **{q: readouts[q] for q in ("S", "f", "loss", "accuracy")}}


def expected_model_steps(
    config: CheckConfig, steps: int
) -> tuple[list[dict[str, np.ndarray]], frozenset[int]]:
    """The exact read-outs of ``config.model`` at t = 0..steps as float64 arrays (parameters by name, S, f,
    loss, accuracy), and the steps whose accuracy is not compared (an exact near-tie in f, or undecided).

    Memoised: hypothesis replays configurations while shrinking.
    """
    key = trajectory_key(config, steps)
    if key in _EXPECTED:
        return _EXPECTED[key]
    model = config.model_spec
    pop = config.task.population()
    P = EXACT.asarray(rational_positions(config.N, config.mu))
    population = batch(EXACT, pop.tokens, pop.labels, pop.exact_probs(), config.K, P)
    lossfn = make_loss(exact_loss(config.loss), sp.Rational(config.eps.numerator, config.eps.denominator))
    eta = sp.Rational(config.eta.numerator, config.eta.denominator)
    start = config.exact_start()
    states = descend(model, EXACT, start, population, lossfn.elementwise(), eta, steps)
    near = near_tie(config.dtype)
    expected: list[dict[str, np.ndarray]] = []
    skip: set[int] = set()
    for t, state in enumerate(states):
        row = {name: EXACT.to_float(value) for name, value in state.params.items()}
        row["S"] = EXACT.to_float(state.S)
        row["f"] = EXACT.to_float(state.f)
        row["loss"] = EXACT.to_float(np.asarray(state.loss, dtype=object)).reshape(())
        acc = state.accuracy(population, EXACT)
        if acc is None or near([list(f) for f in state.f]):
            skip.add(t)
            row["accuracy"] = np.array(np.nan)
        else:
            row["accuracy"] = EXACT.to_float(np.asarray(acc, dtype=object)).reshape(())
        expected.append(row)
    if len(_EXPECTED) > 256:
        _EXPECTED.clear()
    _EXPECTED[key] = (expected, frozenset(skip))
    return _EXPECTED[key]


def compare_model(
    readouts: Readouts, config: CheckConfig, steps: int, rtol: float | None = None
) -> list[str]:
    """Raise ``Mismatch`` at the first (step, quantity) outside the tolerance, in the order t = 0, 1, … and the
    model's parameters, S, f, loss, accuracy; else return notes (accuracies not compared)."""
    if readouts.P is not None:
        raise ImplementationError(
            f"the implementation reports its own P; --model {config.model} sees P itself (not only PᵀP = μI), "
            "so it is checked with the config's P only"
        )
    limit = tolerance(config, steps).rtol if rtol is None else rtol
    expected, skip = expected_model_steps(config, steps)
    diff = first_difference(readouts, expected, limit, skip, model_quantities(config.shapes))
    if diff is not None:
        raise Mismatch(Divergence.of(diff, config))
    if not readouts.provided("accuracy"):
        return []
    return [f"accuracy at t={t} not compared: an exact near-tie in f" for t in sorted(skip)]
