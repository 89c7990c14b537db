"""Exact structure predicates on trajectory states (docs/theory.md#statements), each with a witness when false.

Every predicate compares exact expressions through ``rwtoolkit.engines.exact.arithmetic._decide.is_zero``: equal means the
difference is proved zero by algebra, different means it is far from zero at an evaluation point.
If neither can be shown, the result is ``Check(holds=False, decided=False, ...)`` and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import sympy as sp

from rwtoolkit.engines.exact.arithmetic._atoms import expand_atoms
from rwtoolkit.engines.exact.arithmetic._decide import is_zero
from rwtoolkit.engines.exact.arithmetic._json import exact_string
from rwtoolkit.engines.exact.engine._derive import StepState
from rwtoolkit.io import DECISION_WORDS, Verdict

#: Witness differences up to this many operations are shown as plain SymPy expressions.
_MAX_EXPANDED_OPS = 400


@dataclass(frozen=True)
class Check:
    """An exact yes/no answer: ``holds``, a ``witness`` when it does not hold, and a one-line ``detail``.

    ``decided`` is False when some comparison could be neither proved nor refuted (then holds is False).
    """

    holds: bool
    witness: dict[str, object] | None
    detail: str
    decided: bool = True

    def __bool__(self) -> bool:
        return self.holds


def _equal_pairs(pairs: Sequence[tuple[object, object, sp.Expr, sp.Expr]], what: str) -> Check:
    """Check a == b for every (label_a, label_b, a, b); the first refuted pair is the witness."""
    undecided = None
    for la, lb, a, b in pairs:
        if a is b or a == b:  # structurally identical: equal without any algebra
            continue
        diff = a - b
        verdict = is_zero(diff)
        if verdict is False:
            return Check(False, {"entries": (la, lb), "difference": _shown(diff)}, f"{what}: {la} != {lb}")
        if verdict is None and undecided is None:
            undecided = (la, lb, diff)
    if undecided is not None:
        la, lb, diff = undecided
        return Check(
            False,
            {"entries": (la, lb), "difference": _shown(diff)},
            f"{what}: could not decide whether {la} == {lb}",
            decided=False,
        )
    return Check(True, None, f"{what}: holds exactly")


def _shown(diff: sp.Expr) -> sp.Expr:
    """A witness difference as a plain expression; a large one with named atoms stays in atom form."""
    return expand_atoms(diff) if sp.count_ops(diff) <= _MAX_EXPANDED_OPS else diff


def _matrix(obj: sp.Matrix | StepState) -> sp.Matrix:
    return obj.atom_form("V") if isinstance(obj, StepState) else sp.Matrix(obj)


def is_circulant(V: sp.Matrix | StepState) -> Check:
    """Lemma C.2's form: [V]_{i,j} depends only on (i - j) mod K (checked against column 0).

    >>> import sympy as sp
    >>> bool(is_circulant(sp.Matrix([[1, 2, 3], [3, 1, 2], [2, 3, 1]])))
    True
    >>> is_circulant(sp.Matrix([[1, 2, 3], [3, 1, 2], [2, 4, 1]])).witness
    {'entries': ((2, 1), (1, 0)), 'difference': 1}
    """
    V = _matrix(V)
    K = V.rows
    pairs = [((i, j), ((i - j) % K, 0), V[i, j], V[(i - j) % K, 0]) for i in range(K) for j in range(1, K)]
    return _equal_pairs(pairs, "circulant")


def is_proportional_to_ones(V: sp.Matrix | StepState) -> Check:
    """V = α·1_{K×K} (Theorem 4.1): every entry equals V[0, 0]."""
    V = _matrix(V)
    pairs = [((i, j), (0, 0), V[i, j], V[0, 0]) for i in range(V.rows) for j in range(V.cols)]
    return _equal_pairs(pairs, "proportional to 1_{KxK}")


def is_rank_one(V: sp.Matrix | StepState) -> Check:
    """rank V = 1 exactly: some entry is nonzero and every 2x2 minor through it vanishes."""
    V = _matrix(V)
    pivot = None
    for i in range(V.rows):
        for j in range(V.cols):
            if is_zero(V[i, j]) is False:
                pivot = (i, j)
                break
        if pivot:
            break
    if pivot is None:
        return Check(False, {"rank": "0 or undecided"}, "rank one: no entry is provably nonzero")
    a, b = pivot
    pairs = [
        ((i, j), pivot, V[i, j] * V[a, b], V[i, b] * V[a, j])
        for i in range(V.rows)
        for j in range(V.cols)
        if i != a and j != b
    ]
    check = _equal_pairs(pairs, f"rank one (minors through pivot {pivot})")
    return check


def has_equal_attention(S: StepState | Sequence[Sequence[sp.Expr]]) -> Check:
    """S_1 = … = S_{N-1} for every input (Theorem 4.1); accepts a state or per-input attention lists."""
    if isinstance(S, StepState):
        ev = S.evaluated
        pairs: list[tuple[object, object, sp.Expr, sp.Expr]] = []
        for g, values in enumerate(ev.S_of):
            items = list(values.items())
            pairs += [(("group", g, pr), ("group", g, items[0][0]), v, items[0][1]) for pr, v in items[1:]]
        return _equal_pairs(pairs, "equal attention on positions 1..N-1")
    pairs = []
    for n, row in enumerate(S):
        pairs += [((n, j + 1), (n, 1), row[j], row[0]) for j in range(1, len(row) - 1)]
    return _equal_pairs(pairs, "equal attention on positions 1..N-1 (1-based)")


def is_lemma_d3_form(state: StepState, mu: sp.Expr | None = None) -> Check:
    """Lemma D.3's invariant form in reduced coordinates.

    W(t) = w x̃_Nᵀ/μ with w = [w_tok; Σ_j c_j p_j], so V = α1·1, W12 = α2·1_K p_Nᵀ and
    W22 = (α3 Σ_{i<N} p_i - α4 p_N) p_Nᵀ read: V ∝ 1_{K×K}, w_tok ∝ 1_K (α2 = w_tok/μ), and
    c_1 = … = c_{N-1} (α3 = c_1/μ, α4 = -c_N/μ). ``detail`` reports α1..α4 (μ as given, else "mu").
    """
    V, w, c = state.atom_form("V"), list(state.atom_form("w_tok")), list(state.atom_form("c"))
    for check in (
        is_proportional_to_ones(V),
        _equal_pairs(
            [(("w_tok", k), ("w_tok", 0), w[k], w[0]) for k in range(1, len(w))], "W12 = a2 1 p_N^T"
        ),
        _equal_pairs(
            [(("c", j + 1), ("c", 1), c[j], c[0]) for j in range(1, len(c) - 1)],
            "W22 form (c_1..c_{N-1} equal)",
        ),
    ):
        if not check:
            return check
    m = sp.Symbol("mu", real=True) if mu is None else mu
    alphas = (V[0, 0], w[0] / m, c[0] / m, -c[-1] / m)
    return Check(True, None, "Lemma D.3 form holds: (a1, a2, a3, a4) = " + exact_string(tuple(alphas)))


def explicit_weights(state: StepState, P: sp.Matrix) -> sp.Matrix:
    """W(t) = w x̃_Nᵀ/μ as an explicit (K+M)×(K+M) matrix for positional embeddings P (M×N).

    P must have orthogonal columns of equal squared norm μ (the reduction's premise); any other P is
    refused with a ValueError.

    >>> import sympy as sp
    >>> from rwtoolkit.engines.exact import derive
    >>> from rwtoolkit.tasks import CircleWalk
    >>> state = derive(CircleWalk(3, 2, "1/2"), 1).states[1]
    >>> explicit_weights(state, sp.Matrix([[1, 0], [0, 2]]))
    Traceback (most recent call last):
    ...
    ValueError: P must have orthogonal columns of equal squared norm (P^T P = mu*I); got P^T P = Matrix([[1, 0], [0, 4]])
    """
    W = _explicit_weights(state, P)
    return W.applyfunc(expand_atoms)


def _explicit_weights(state: StepState, P: sp.Matrix) -> sp.Matrix:
    """``explicit_weights`` with named atoms kept (fast to compare on late steps)."""
    V, w_tok, c = state.atom_form("V"), state.atom_form("w_tok"), state.atom_form("c")
    K, N = V.rows, c.rows
    gram = P.T * P
    mu = gram[0, 0]
    if gram != mu * sp.eye(N):
        raise ValueError(
            f"P must have orthogonal columns of equal squared norm (P^T P = mu*I); got P^T P = {gram}"
        )
    w = sp.Matrix.vstack(w_tok, P * c)
    x_query = sp.Matrix.vstack(sp.zeros(K, 1), P[:, N - 1])
    return w * x_query.T / mu


def w_token_columns_zero(obj: StepState | sp.Matrix, K: int | None = None) -> Check:
    """W11 = W21 = 0: the first K columns of W vanish (Lemma B.1 from zero init).

    In the reduced representation this holds by construction: W(t) = w(t) x̃_Nᵀ/μ and the token block
    of x̃_N is x_N = 0. For a state the predicate rebuilds W(t) with the explicit embeddings
    P = √μ·I_N and checks its first K columns entry by entry; for an explicit matrix W give K.
    """
    if isinstance(obj, StepState):
        N = obj.atom_form("c").rows
        mu = sp.Symbol("mu", positive=True)
        W = _explicit_weights(obj, sp.sqrt(mu) * sp.eye(N))
        K = obj.atom_form("V").rows
    else:
        if K is None:
            raise ValueError("give K (the vocabulary size) to check an explicit W")
        W = sp.Matrix(obj)
    pairs = [((i, j), "0", W[i, j], sp.S.Zero) for i in range(W.rows) for j in range(K)]
    return _equal_pairs(pairs, "W11 = W21 = 0")


#: The predicates ``structure_verdicts`` evaluates on every state, by name (Lemmas B.1, C.2, D.3, Theorem 4.1).
PREDICATES: dict[str, Callable[[StepState], Check]] = {
    "w_token_columns_zero": w_token_columns_zero,
    "is_circulant": is_circulant,
    "is_proportional_to_ones": is_proportional_to_ones,
    "is_rank_one": is_rank_one,
    "has_equal_attention": has_equal_attention,
    "is_lemma_d3_form": is_lemma_d3_form,
}


def outcome(check: Check) -> str:
    """ "proved", "refuted" (a witness exists) or "undecided" (neither could be shown; never a pass): the
    one verdict vocabulary as ``DECISION_WORDS`` writes it."""
    if check.holds:
        return DECISION_WORDS.word(Verdict.PROVED)
    return DECISION_WORDS.word(Verdict.REFUTED if check.decided else Verdict.INCONCLUSIVE)


def structure_verdicts(state: StepState) -> dict[str, Check]:
    """Every predicate of ``PREDICATES`` on one state: the exact structure a symmetry argument needs.

    Theorem 4.1 (p = 1, N = rK + 1, any loss) says V(t) stays proportional to 1_{K×K} and the attention
    on positions 1..N-1 stays equal; these verdicts decide that at each step instead of printing the
    expressions.

    Examples
    --------
    >>> from rwtoolkit.tasks import CircleWalk
    >>> from rwtoolkit.engines.exact import derive
    >>> state = derive(CircleWalk(3, 4, 1), steps=2, loss="any", mu=1).states[2]
    >>> {name: outcome(check) for name, check in structure_verdicts(state).items()}["is_proportional_to_ones"]
    'proved'
    """
    return {name: predicate(state) for name, predicate in PREDICATES.items()}
