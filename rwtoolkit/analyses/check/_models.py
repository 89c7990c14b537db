"""Checking an implementation of another model of ``rwtoolkit.models`` (``rw check --model NAME``): what it is
handed, what it must expose, and the rows of its report.

Every model, the paper's included, is compared by one path (``rwtoolkit.analyses.check._compare``): the exact
engine ``rwtoolkit.engines.select(model, "exact", start)`` gives, read through the one interface of an exact
trajectory. For any model but the paper's that is the generic exact engine ``rwtoolkit.engines.exact.derive_model``:
``rwtoolkit.models.descend`` in the exact arithmetic ``rwtoolkit.engines.exact.EXACT``, full-batch GD
θ ← θ − η ∇L from the model's start (zero, or its fixed dyadic start, ``check_settings(model).init``) on the
task's exact population, L = Σ_n π_n ℓ(e_{y_n}ᵀ f_n), with the positional embeddings
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

from rwtoolkit.analyses.check._settings import check_settings
from rwtoolkit.models import Sizes, get_model

__all__ = [
    "ONE_LAYER_ONLY",
    "VALUE_MATRIX_ONLY",
    "ZERO_START_ONLY",
    "parameter_names",
    "trajectory_statements",
]

#: Properties stated for the paper's merged W only; reported not checked for another model.
ONE_LAYER_ONLY = ("W_first_columns_zero", "theorem_4_1_symmetry", "P_only_through_mu")
#: Properties stated for the zero start; reported not checked for a model checked from ``config.start``.
ZERO_START_ONLY = ("lemma_C1_first_value_step",)
#: Properties of the value matrix V of f = V X S; reported not checked for a model without one.
VALUE_MATRIX_ONLY = ("lemma_C1_first_value_step",)


def parameter_names(model: str, head_dim: int | None = None) -> tuple[str, ...]:
    """The model's parameter names in the order they are compared (``model.shapes``; names do not depend on sizes)."""
    return tuple(get_model(model, d=head_dim).shapes(Sizes(K=1, M=1, N=1)))


def trajectory_statements(
    model: str, head_dim: int | None, readouts: dict[str, str], objective: str | None = None
) -> dict[str, str]:
    """The trajectory rows of the report for ``model``: its parameters, then the read-outs of ``readouts``
    (the paper model's statements of S, f, loss, accuracy); for a sequence model (``objective`` set) its
    parameters, its token logits and its objective, against the reference ``rw check`` chose."""
    init = check_settings(model).init
    if objective is not None:
        where = f"{model}, from its own start, objective {objective}"
        names = tuple(get_model(model).shapes(Sizes(K=2, M=0, N=3)))
        rows = {
            name: f"{name}(t) equals the reference trajectory of rwtoolkit.models.descend ({where}), t = 0..T"
            for name in names
        }
        return {
            **rows,
            "token_logits": "the next-token logits of every sequence at every position equal the reference's",
            "loss": f"the population objective ({objective}, each sequence weighted by its exact probability) "
            "equals the reference's",
        }
    start = "zero" if init == "zero" else "config.start"
    rows = {
        name: f"{name}(t) equals the exact trajectory of rwtoolkit.models.descend ({model}, from {start}), t = 0..T"
        for name in parameter_names(model, head_dim)
    }
    return {**rows, **{q: readouts[q] for q in ("S", "f", "loss", "accuracy")}}
