"""Exact population expectations of one gradient-descent step, grouped by sufficient statistics.

The engine sums over a ``SummedPopulation``: either a task's whole population, or, for circle walks, only
the walks that start at node 0 (``rotation=True``). The second is exact because the population and
zero initialisation are invariant under the rotation s -> s+1 (mod K), so every iterate is too:
V(t) is circulant and the token part of w(t) is a multiple of 1_K. The full-population gradient is
then the rotation average Σ_r R^r G0 R^-r of the rooted one (docs/theory.md#reduction; tested against enumeration).

Within a step, an input enters only through its label y and the multiset of (position class, token)
pairs, where positions with identical c_j form one class (their logits differ only through the token).
Inputs with the same statistic share S, f, z and ℓ'(z), so each group is evaluated once; the only
per-position quantity, E[δ_j] for the positional coefficients, needs the group's position-token
weights, which numpy counts exactly (integers times the task's exact probabilities).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp
from sympy.functions.elementary.piecewise import ExprCondPair

from rwtoolkit.engines.exact.arithmetic._atoms import exp_atom, free_symbols, has_undefined
from rwtoolkit.engines.exact.arithmetic._decide import sign
from rwtoolkit.engines.exact.arithmetic._rational import exact_sum, use_flint
from rwtoolkit.engines.exact.engine._atom_pass import atom_pass
from rwtoolkit.engines.exact.engine._moments import circulant
from rwtoolkit.engines.exact.engine._polynomial_pass import polynomial_pass
from rwtoolkit.engines.exact.engine._population import Loss, SummedPopulation
from rwtoolkit.engines.exact.engine._uniform import Groups, exact_weights, rational_state, uniform_pass

#: Largest exact work of one step, in (group x position) terms; beyond it we refuse with the estimate.
MAX_WORK = 4_000_000
#: Largest label group Λ the accuracy of orbit sums averages over (|Λ| ≤ K!; ``_orbits``).
MAX_LABEL_GROUP = 100_000


@dataclass
class GroupPass:
    """Everything one pass over the groups yields for the state θ(t) (rooted coordinates if rotation)."""

    inverse: np.ndarray  # (n,) group of each input
    cls: np.ndarray  # (N-1,) position class of positions 1..N-1
    labels: list[int]  # per group
    logit_of: list[dict[tuple[int, int], sp.Expr]]  # per group: (class, token) -> logit
    logit_query: sp.Expr  # logit of the query slot N (shared)
    S_of: list[dict[tuple[int, int], sp.Expr]]  # per group: (class, token) -> attention
    S_query: list[sp.Expr]  # per group: attention on slot N
    f: list[list[sp.Expr]]  # per group: f (K entries)
    z: list[sp.Expr]  # per group: e_yᵀ f
    weight: list[sp.Expr]  # per group: total exact probability of its inputs
    rotation: bool
    loss_fn: Loss
    mean_attention: list[sp.Expr]  # N entries, full population
    mean_logits: list[sp.Expr]  # N entries, full population
    mean_f: list[sp.Expr]  # K entries, full population
    grad_V: sp.Matrix | None = None  # E[∇_V ℓ], full population
    grad_tok: list[sp.Expr] | None = None  # E[Σ_{j<N} δ_j e_{s_j}]
    grad_c: list[sp.Expr] | None = None  # E[δ_j], j = 1..N
    #: With orbit sums: the label group Λ the accuracy averages each representative over (``_orbits``).
    label_group: tuple[tuple[int, ...], ...] | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def loss(self) -> sp.Expr:
        """E[ℓ(z)] over the full population (computed on first use)."""
        if "loss" not in self._cache:
            rot = len(self.f[0]) if self.rotation else 1
            self._cache["loss"] = rot * exact_sum(
                [w * self.loss_fn.value(z) for w, z in zip(self.weight, self.z)]
            )
        return self._cache["loss"]

    @property
    def accuracy(self) -> sp.Expr:
        """P(smallest argmax of f = y) over the full population (computed on first use)."""
        if "accuracy" not in self._cache:
            K = len(self.f[0])
            if self.label_group == ():
                raise ValueError(
                    "accuracy with orbit sums averages over the label group, which has more than "
                    f"{MAX_LABEL_GROUP} elements here; use derive(..., orbits=False)"
                )
            if self.label_group is not None:  # orbit sums: the mean over Λ of each orbit's indicators
                perms, scale = self.label_group, sp.Rational(1, len(self.label_group))
            else:  # the input itself, or its K rotations (rooted walks)
                perms = tuple(tuple((k + r) % K for k in range(K)) for r in range(K if self.rotation else 1))
                scale = sp.Integer(1)
            terms = [w * _correct_fraction(f, y, perms) for w, f, y in zip(self.weight, self.f, self.labels)]
            self._cache["accuracy"] = scale * exact_sum(terms)
        return self._cache["accuracy"]


def _position_classes(c: list[sp.Expr]) -> np.ndarray:
    """Class id per position 1..N-1: positions with structurally identical c_j share a class."""
    ids: dict[sp.Expr, int] = {}
    return np.array([ids.setdefault(cj, len(ids)) for cj in c[:-1]], dtype=np.int64)


def _unique_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, axis=0)``'s first index of each distinct row and each row's index among them.

    Rows of small non-negative integers are packed into one int64 per row, most significant column
    first (the same lexicographic order, so the same groups in the same order): sorting integers is
    many times faster than numpy's row sort.

    >>> first, inverse = _unique_rows(np.array([[1, 0], [0, 2], [1, 0]]))
    >>> first.tolist(), inverse.tolist()
    ([1, 0], [1, 0, 1])
    """
    base = int(key.max()) + 1 if key.size else 1
    if key.min(initial=0) >= 0 and base ** key.shape[1] < 2**62:
        packed = np.zeros(key.shape[0], dtype=np.int64)
        for col in key.T.astype(np.int64):
            packed = packed * base + col
        _, first, inverse = np.unique(packed, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def group_pass(
    inputs: SummedPopulation,
    V: sp.Matrix,
    w_tok: list[sp.Expr],
    c: list[sp.Expr],
    mu: sp.Expr,
    loss: Loss,
    gradients: bool,
) -> GroupPass:
    """Evaluate θ = (V, w_tok, c) on every group and, if asked, the exact population gradients."""
    L, K, N = inputs.N - 1, inputs.K, inputs.N
    cls = _position_classes(c)
    order = np.argsort(cls, kind="stable")
    bounds = np.flatnonzero(np.diff(cls[order])) + 1
    blocks = np.split(inputs.tokens[:, order], bounds, axis=1)
    key = np.concatenate([inputs.labels[:, None]] + [np.sort(b, axis=1) for b in blocks], axis=1)
    first, inverse = _unique_rows(key)
    n_groups = len(first)
    work = n_groups * (L + K) * (3 if gradients else 1)
    if work > MAX_WORK:
        raise ValueError(
            f"this step needs about {work:.3g} exact group-position terms ({n_groups} distinct inputs "
            f"x (N-1+K) = {L + K}), above the limit {MAX_WORK:.3g}: use fewer steps, smaller K or N, "
            "or rwtoolkit.engines.numeric"
        )
    groups = Groups(inputs, cls, first, inverse)
    if use_flint():  # a rational state with uniform attention: the whole pass in fmpq (same values)
        if rational_state(V, w_tok, c, mu, inputs.prob_values):
            fast = uniform_pass(groups, V, w_tok, c, mu, loss, gradients)
        else:  # symbols in the state (symbolic p, μ with c ≠ 0): polynomials in the symbols
            fast = polynomial_pass(groups, V, w_tok, c, mu, loss, gradients)
        if fast is None:  # exponential atoms: polynomials in the atoms (same values, another tree)
            fast = atom_pass(groups, V, w_tok, c, mu, loss, gradients)
        if fast is not None:
            return GroupPass(**fast)  # type: ignore[arg-type]
    weight = groups.group_weights(inputs.prob_values, exact_sum)
    # (group, position, token) -> exact weight: the position-token marginal of each group.
    pos_weight = exact_weights(
        groups.position_keys(), np.repeat(inputs.prob_index, L), inputs.prob_values, exact_sum
    )

    logit_query = mu * c[N - 1]
    class_rep = groups.class_representatives(c)
    labels, logit_of, S_of, S_query, fs, zs, weights = [], [], [], [], [], [], []
    gV: list[list[list[sp.Expr]]] = [[[] for _ in range(K)] for _ in range(K)]
    g_tok: list[list[sp.Expr]] = [[] for _ in range(K)]
    delta_of: list[dict[tuple[int, int], sp.Expr]] = []
    delta_query: list[sp.Expr] = []
    mean_f_terms: list[list[sp.Expr]] = [[] for _ in range(K)]
    for g, i in enumerate(first.tolist()):
        y = int(inputs.labels[i])
        counts: dict[tuple[int, int], int] = {}
        for j in range(L):
            pair = (int(cls[j]), int(inputs.tokens[i, j]))
            counts[pair] = counts.get(pair, 0) + 1
        logits = {pr: w_tok[pr[1]] + mu * class_rep[pr[0]] for pr in counts}
        # S_j = exp(l_j - l_N) / (1 + Σ_k exp(l_k - l_N)): exact, and exactly 1/N when logits agree.
        e = {pr: exp_atom(lg - logit_query) for pr, lg in logits.items()}
        denom = 1 + exact_sum([cnt * e[pr] for pr, cnt in counts.items()])
        S = {pr: e[pr] / denom for pr in counts}
        sq = 1 / denom
        # f = V X S = Σ_j S_j V[:, s_j]                               (K,)
        f = [exact_sum([cnt * S[pr] * V[row, pr[1]] for pr, cnt in counts.items()]) for row in range(K)]
        z = f[y]
        wg = weight[g]
        labels.append(y)
        logit_of.append(logits)
        S_of.append(S)
        S_query.append(sq)
        fs.append(f)
        zs.append(z)
        weights.append(wg)
        for row in range(K):
            mean_f_terms[row].append(wg * f[row])
        if gradients:
            gz = loss.derivative(z)
            # δ_j = ℓ'(z) S_j (a_j - z), a_j = V[y, s_j], a_N = 0           (Lemma B.1)
            delta = {pr: gz * S[pr] * (V[y, pr[1]] - z) for pr in counts}
            delta_of.append(delta)
            delta_query.append(-gz * sq * z)
            for pr, cnt in counts.items():
                gV[y][pr[1]].append(wg * gz * cnt * S[pr])
                g_tok[pr[1]].append(wg * cnt * delta[pr])
        else:
            delta_of.append({})
            delta_query.append(sp.S.Zero)

    mean_att_terms: list[list[sp.Expr]] = [[] for _ in range(N)]
    mean_logit_terms: list[list[sp.Expr]] = [[] for _ in range(N)]
    grad_c_terms: list[list[sp.Expr]] = [[] for _ in range(N)]
    for code, wgt in pos_weight.items():
        s = code % K
        g, j = divmod(code // K, L)
        pr = (int(cls[j]), s)
        mean_att_terms[j].append(wgt * S_of[g][pr])
        mean_logit_terms[j].append(wgt * logit_of[g][pr])
        if gradients:
            grad_c_terms[j].append(wgt * delta_of[g][pr])
    for g in range(n_groups):
        mean_att_terms[N - 1].append(weights[g] * S_query[g])
        if gradients:
            grad_c_terms[N - 1].append(weights[g] * delta_query[g])

    rot = K if inputs.rotation else 1
    out = GroupPass(
        inverse=inverse,
        cls=cls,
        labels=labels,
        logit_of=logit_of,
        logit_query=logit_query,
        S_of=S_of,
        S_query=S_query,
        f=fs,
        z=zs,
        weight=weights,
        rotation=inputs.rotation,
        loss_fn=loss,
        mean_attention=[rot * exact_sum(t) for t in mean_att_terms],
        mean_logits=[rot * exact_sum(t) for t in mean_logit_terms[:-1]] + [logit_query],
        mean_f=_symmetrise_vector([exact_sum(t) for t in mean_f_terms])
        if inputs.rotation
        else [exact_sum(t) for t in mean_f_terms],
    )
    if gradients:
        G = sp.Matrix(K, K, lambda a, b: exact_sum(gV[a][b]))
        tok = [exact_sum(t) for t in g_tok]
        out.grad_V = _symmetrise_matrix(G) if inputs.rotation else G
        out.grad_tok = _symmetrise_vector(tok) if inputs.rotation else tok
        out.grad_c = [rot * exact_sum(t) for t in grad_c_terms]
    return out


def _symmetrise_matrix(G0: sp.Matrix) -> sp.Matrix:
    """Σ_r R^r G0 R^-r: entry (i, j) depends only on (i - j) mod K (the rotation average of G0)."""
    K = G0.rows
    return circulant([exact_sum([G0[(i + d) % K, i] for i in range(K)]) for d in range(K)], transpose=True)


def _symmetrise_vector(v0: list[sp.Expr]) -> list[sp.Expr]:
    """Σ_r R^r v0 = (Σ_k v0_k) 1_K."""
    total = exact_sum(v0)
    return [total] * len(v0)


def argmax_set(f: list[sp.Expr]) -> list[int] | None:
    """Indices of the maximal entries of f, decided exactly; None if some comparison is undecided."""
    if all(v == f[0] for v in f):
        return list(range(len(f)))  # identical expressions: an exact tie, whatever the symbols are
    if any(free_symbols(v) or has_undefined(v) for v in f):
        return None  # comparisons of expressions in symbols are not numbers: no exact ranking
    best = [0]
    for k in range(1, len(f)):
        s = sign(f[k] - f[best[0]])
        if s is None:
            return None
        if s > 0:
            best = [k]
        elif s == 0:
            best.append(k)
    return best


def _correct_fraction(f: list[sp.Expr], y: int, perms: tuple[tuple[int, ...], ...]) -> sp.Expr:
    """Σ over the label permutations λ in ``perms`` of 1{smallest argmax of λ·f = λ(y)}, (λ·f)_{λ(k)} = f_k.

    The relabelled input has scores λ·f and label λ(y): the input's rotations r (λ(k) = k + r) for the
    rooted walks, the label group for orbit sums, the identity alone otherwise. Ties go to the smallest
    label, which no relabelling preserves, so each λ is checked. Undecidable comparisons (symbols,
    abstract loss) give an exact Piecewise expression instead of a number.
    """
    best = argmax_set(f)
    if best is not None:
        return sp.Integer(sum(1 for lam in perms if min(lam[b] for b in best) == lam[y]))
    total = []
    for lam in perms:
        label = lam[y]
        inverse = {v: k for k, v in enumerate(lam)}
        conds = []
        for k in range(len(lam)):
            if k == label:
                continue
            other = f[inverse[k]]
            rel = sp.StrictGreaterThan if k < label else sp.GreaterThan
            conds.append(rel(f[y], other, evaluate=False))
        total.append(_indicator(conds))
    return exact_sum(total)


def _indicator(conds: list[sp.Basic]) -> sp.Expr:
    """Piecewise((1, c_1 & c_2 & ...), (0, True)), built without SymPy's condition canonicalisation.

    The conditions compare large exact expressions; canonicalising them costs minutes and changes
    nothing, so the objects are assembled directly (they print and parse back as usual).
    """
    both = sp.Basic.__new__(sp.And, *conds) if len(conds) > 1 else conds[0]
    pairs = (
        sp.Basic.__new__(ExprCondPair, sp.S.One, both),
        sp.Basic.__new__(ExprCondPair, sp.S.Zero, sp.true),
    )
    return sp.Basic.__new__(sp.Piecewise, *pairs)
