"""Rational arithmetic of the exact engine on python-flint (``fmpq``), with SymPy objects at the boundary.

SymPy's ``Rational`` is a Python object: every product and sum allocates, sympifies and reduces by a
gcd in Python, and on a step of a large population that is nearly all of the time. FLINT's ``fmpq``
does the same exact arithmetic in C. Two places use it:

* ``rational_sum``: the rational terms of ``exact_sum`` are added as ``fmpq``
  (every step, exponential atoms or not);
* ``uniform_pass``: a whole group pass when every logit equals the query's, so the attention is
  exactly uniform (S_j = 1/N, no exponential appears). From zero initialisation that is every state
  with w(t) = 0, i.e. t = 0 and t = 1 (Lemma C.1's first value step).

For a rational state every value handed back is a SymPy ``Rational`` equal to what SymPy computes
(rationals have one reduced form, so the objects are identical). A state with symbols (symbolic p, or
μ entering through equal logits) is polynomial in them: ``uniform_pass`` hands it to
``rwtoolkit.engines.exact.engine._polynomial_pass`` (FLINT's ``fmpq_mpoly``; equal values, expanded polynomials and sums of
reduced fractions as the expression trees). Passes whose attention has exponential atoms are
``rwtoolkit.engines.exact.engine._atom_pass``' (equal values, another expression tree); ``RWSYMBOLIC_ARITHMETIC=sympy``
forces SymPy everywhere (the reference path, used by the benchmarks and the tests that compare the
two).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import sympy as sp
from flint import fmpq, fmpq_mat

from rwtoolkit.engines.exact.arithmetic._rational import Exact, T, all_rational, to_fmpq, to_sympy, tree_sum
from rwtoolkit.engines.exact.engine._moments import circulant
from rwtoolkit.engines.exact.engine._population import Loss, SummedPopulation


def rational_state(
    V: sp.Matrix, w_tok: Sequence[sp.Expr], c: Sequence[sp.Expr], mu: sp.Expr, probs: Sequence[sp.Expr]
) -> bool:
    """True when a pass's state is for ``uniform_pass`` (rationals; μ rational or c = 0); else its
    symbols make it ``rwtoolkit.engines.exact.engine._polynomial_pass.polynomial_pass``'s.

    >>> zero = [sp.S.Zero] * 2
    >>> rational_state(sp.zeros(2, 2), zero, zero, sp.Symbol("mu"), [sp.Rational(1, 2)])
    True
    >>> rational_state(sp.zeros(2, 2), zero, zero, sp.Symbol("mu"), [sp.Symbol("p")])
    False
    """
    mu_rational = all_rational([mu])
    return all_rational([*V, *w_tok, *c, *probs]) and (mu_rational or all(cj == 0 for cj in c))


@dataclass(frozen=True)
class Groups:
    """The grouping of one exact group pass, shared by its three arithmetics.

    ``rwtoolkit.engines.exact.engine._groups.group_pass`` builds it; its SymPy loop, ``uniform_pass`` and
    ``rwtoolkit.engines.exact.engine._atom_pass.atom_pass`` read it.

    Attributes:
        inputs: the population (tokens, labels, probability values and indices).
        cls: the class of each position j < N (positions with structurally identical c_j share one).
        first: the first input of each group (inputs with equal label and equal token multiset per class).
        inverse: the group of each input.
    """

    inputs: SummedPopulation
    cls: np.ndarray
    first: np.ndarray
    inverse: np.ndarray

    def class_representatives(self, c: Sequence[T]) -> dict[int, T]:
        """c_j of one position of each class (all positions of a class have the same c_j)."""
        return {int(k): c[int(np.flatnonzero(self.cls == k)[0])] for k in np.unique(self.cls)}

    def position_keys(self) -> np.ndarray:
        """The key (group·(N-1) + j)·K + s_j of every (input, position j < N) pair, flat: (n·(N-1),)."""
        inputs, L = self.inputs, self.inputs.N - 1
        return ((self.inverse[:, None] * L + np.arange(L)[None, :]) * inputs.K + inputs.tokens).reshape(-1)

    def position_combos(self, n_p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The distinct (group, position, token, probability value) of the inputs, sorted by group and position.

        Returns gj = group·(N-1) + j, the token s, the probability value's index and the input count of each.
        """
        inputs = self.inputs
        combo, counts = np.unique(
            self.position_keys() * n_p + np.repeat(inputs.prob_index, inputs.N - 1), return_counts=True
        )
        gjs, pi = np.divmod(combo, n_p)
        gj, s = np.divmod(gjs, inputs.K)
        return gj, s, pi, counts

    def group_weights(self, values: Sequence[T], total: Callable[[list[T]], T]) -> list[T]:
        """The exact weight Σ prob of each group, ``values`` the probability values in the caller's arithmetic."""
        weight = exact_weights(self.inverse, self.inputs.prob_index, values, total)
        return [weight[g] for g in range(len(self.first))]


def exact_weights(
    index: np.ndarray, prob_index: np.ndarray, values: Sequence[T], total: Callable[[list[T]], T]
) -> dict[int, T]:
    """Exact Σ prob over the inputs of each key, in the arithmetic of ``values`` and ``total``.

    The inputs are counted per (key, probability value) in integers, then each key's terms
    count · value are summed once by ``total`` (SymPy's ``exact_sum`` or FLINT's ``tree_sum``).

    >>> exact_weights(np.array([0, 1, 0]), np.array([0, 0, 1]), [fmpq(1, 2), fmpq(1, 4)], tree_sum)
    {0: 3/4, 1: 1/2}
    """
    n_p = len(values)
    combo, counts = np.unique(index * n_p + prob_index, return_counts=True)
    terms: dict[int, list[T]] = {}
    for code, cnt in zip(combo.tolist(), counts.tolist(), strict=True):
        terms.setdefault(code // n_p, []).append(cnt * values[code % n_p])
    return {key: total(key_terms) for key, key_terms in terms.items()}


class RationalDerivative:
    """ℓ' as a rational function num(z)/den(z) with rational coefficients, evaluated in ``fmpq``."""

    def __init__(self, num: list[fmpq], den: list[fmpq]) -> None:
        self.num, self.den = num, den  # coefficients, highest degree first

    @staticmethod
    def _horner(coeffs: list[fmpq], z: Exact) -> Exact:
        acc = z * 0
        for a in coeffs:
            acc = acc * z + a
        return acc

    def parts(self, z: Exact) -> tuple[Exact, Exact]:
        """(num(z), den(z)) for a rational or a polynomial z."""
        return self._horner(self.num, z), self._horner(self.den, z)


_DERIVATIVES: dict[int, tuple[Callable, RationalDerivative | None]] = {}


def rational_derivative(derivative: Callable[[sp.Expr], sp.Expr]) -> RationalDerivative | None:
    """ℓ' as a rational function of z with rational coefficients, or None (exp-loss, abstract loss).

    >>> d = rational_derivative(lambda z: -1 / (z + sp.Rational(1, 10)))
    >>> num, den = d.parts(fmpq(2, 5))
    >>> num / den
    -2
    >>> rational_derivative(lambda z: -sp.exp(-z)) is None
    True
    """
    hit = _DERIVATIVES.get(id(derivative))
    if hit is not None and hit[0] is derivative:
        return hit[1]
    z = sp.Dummy("z")
    out: RationalDerivative | None = None
    try:
        num, den = sp.fraction(sp.cancel(sp.sympify(derivative(z))))
        pn, pd = sp.Poly(num, z, domain=sp.QQ), sp.Poly(den, z, domain=sp.QQ)
        out = RationalDerivative([to_fmpq(a) for a in pn.all_coeffs()], [to_fmpq(a) for a in pd.all_coeffs()])
    except (sp.PolynomialError, sp.CoercionFailed, TypeError, ValueError):
        out = None
    if len(_DERIVATIVES) > 256:  # one entry per loss object made by derive: keep the cache small
        _DERIVATIVES.clear()
    _DERIVATIVES[id(derivative)] = (derivative, out)
    return out


def uniform_pass(
    groups: Groups,
    V: sp.Matrix,
    w_tok: list[sp.Expr],
    c: list[sp.Expr],
    mu: sp.Expr,
    loss: Loss,
    gradients: bool,
) -> dict[str, object] | None:
    """The fields of ``rwtoolkit.engines.exact.engine._groups.GroupPass`` computed in ``fmpq``, or None when not applicable.

    Applicable when V, w_tok, c and the input probabilities are rational, μ is rational or c = 0, every
    logit x_jᵀ w_tok + μ c_j equals the query's μ c_N (so S_j = 1/N exactly), and ℓ' is a rational
    function of z (log and squared losses). A state with symbols is ``rwtoolkit.engines.exact.engine._polynomial_pass.polynomial_pass``'s
    (``rational_state`` tells them apart; the same conditions, polynomials for rationals). The same formulas as ``group_pass`` with e_j = 1:
    f = Σ_j S_j V[:, s_j], δ_j = ℓ'(z) S_j (a_j - z), δ_N = -ℓ'(z) S_N z (Lemma B.1).
    """
    inputs, first = groups.inputs, groups.first
    K, N, L = inputs.K, inputs.N, inputs.N - 1
    if not rational_state(V, w_tok, c, mu, inputs.prob_values):
        return None  # symbols: rwtoolkit.engines.exact.engine._polynomial_pass.polynomial_pass (group_pass routes them there)
    mu_q = to_fmpq(mu) if all_rational([mu]) else None
    Vq = [[to_fmpq(V[a, b]) for b in range(K)] for a in range(K)]
    tok_q = [to_fmpq(w) for w in w_tok]
    cq = [to_fmpq(x) for x in c]
    mu_c = (lambda x: mu_q * x) if mu_q is not None else (lambda x: fmpq(0))
    query = mu_c(cq[N - 1])
    class_rep = groups.class_representatives(cq)
    logit_pair = {(k, s): tok_q[s] + mu_c(ck) for k, ck in class_rep.items() for s in range(K)}
    if any(v != query for v in logit_pair.values()):
        return None  # attention not uniform: exponentials appear, SymPy's atoms take over
    deriv = rational_derivative(loss.derivative) if gradients else None
    if gradients and deriv is None:
        return None

    probs = [to_fmpq(v) for v in inputs.prob_values]
    n_groups, n_p = len(first), len(probs)
    wq = groups.group_weights(probs, tree_sum)
    rows, ys, T = token_counts(groups)
    S = fmpq(1, N)
    # f = V X S = S Σ_s T[g, s] V[:, s]                                                   (G, K)
    F = (
        fmpq_mat(n_groups, K, [t for row in T for t in row])
        * fmpq_mat(K, K, [v for r in Vq for v in r]).transpose()
    )
    F = F * S
    fq = [[F[g, row] for row in range(K)] for g in range(n_groups)]
    zq = [fq[g][ys[g]] for g in range(n_groups)]
    if inputs.rotation:  # Σ_r R^r v0 = (Σ_k v0_k) 1_K
        mean_f = [to_sympy(tree_sum([wq[g] * x for g in range(n_groups) for x in fq[g]]))] * K
    else:
        mean_f = [to_sympy(tree_sum([wq[g] * fq[g][row] for g in range(n_groups)])) for row in range(K)]
    total_weight = tree_sum(wq)
    rot = K if inputs.rotation else 1
    mean_att = [total_weight * S] * N  # Σ over (group, token) of the position weights is the total
    mean_logit = [total_weight * query] * (N - 1)
    grad: dict[str, object] = {}
    if gradients:
        assert deriv is not None
        gzq = []
        for z in zq:
            gz = derivative_at(deriv, loss, z)
            if gz is None:
                return None
            gzq.append(gz)
        # Every gradient entry is S Σ_g ℓ'(z_g) x_g with small rationals x_g: the rows of X (one per
        # entry, one column per group) times the column ℓ'(z), a single FLINT product that puts the
        # large denominators of ℓ'(z) over one common denominator once for all entries.
        r_tok, r_c, r_q = gradient_rows(K, L, inputs.rotation)
        X = [[fmpq(0)] * n_groups for _ in range(r_q + 1)]  # (entries, G)
        for g in range(n_groups):
            y, w, z = ys[g], wq[g], zq[g]
            X[r_q][g] = -w * z  # δ_N = -ℓ'(z) S z
            for s, t in enumerate(T[g]):
                if t:
                    # E[∇_V ℓ]: gV[y, s] = S Σ_{g: y_g = y} w_g ℓ'(z_g) T[g, s]
                    X[(y - s) % K if inputs.rotation else y * K + s][g] += t * w
                    # Σ_j δ_j e_{s_j}: S Σ_g w_g ℓ'(z_g) T[g, s] (V[y_g, s] - z_g)
                    X[r_tok + (0 if inputs.rotation else s)][g] += t * w * (Vq[y][s] - z)
        # E[δ_j] = S Σ_{inputs} prob ℓ'(z) (V[y, s_j] - z), counted per (group, position, token, prob).
        # Per (group, position) the sum Σ_{s, prob} count · prob · D[g, s], D[g, s] = V[y_g, s] - z_g, is
        # taken in Python integers over one common denominator (numerators as NumPy object arrays, so
        # the tens of thousands of terms are added without an fmpq per term), then one fmpq per entry.
        gj, s_of, pi, counts = groups.position_combos(n_p)
        D = [[Vq[ys[g]][s] - zq[g] for s in range(K)] for g in range(n_groups)]
        den_p = math.lcm(*(int(x.q) for x in probs))
        den_D = math.lcm(*(int(x.q) for row in D for x in row))
        num_p = np.array([int(x.p) * (den_p // int(x.q)) for x in probs], dtype=object)
        num_D = np.empty((n_groups, K), dtype=object)
        num_D[:, :] = [[int(x.p) * (den_D // int(x.q)) for x in row] for row in D]
        terms = counts.astype(object) * num_p[pi] * num_D[gj // L, s_of]
        starts = np.flatnonzero(np.r_[True, gj[1:] != gj[:-1]])  # sorted by (g, j)
        den = den_p * den_D
        for key, total in zip(gj[starts].tolist(), np.add.reduceat(terms, starts).tolist()):
            g, j = divmod(key, L)
            X[r_c + j][g] += fmpq(total, den)
        Xm = fmpq_mat(r_q + 1, n_groups, [x for row in X for x in row])
        R = Xm * fmpq_mat(n_groups, 1, gzq) * S
        entries = [to_sympy(R[i, 0]) for i in range(r_c)] + [
            to_sympy(rot * R[i, 0]) for i in range(r_c, r_q + 1)
        ]
        grad = gradient_fields(entries, K, inputs.rotation)

    def vector(v: list[fmpq], scale: int) -> list[sp.Expr]:
        return [to_sympy(scale * x) for x in v]

    out = uniform_fields(groups, rows, ys, to_sympy(query), to_sympy(S))
    out.update(
        {
            "f": [vector(f, 1) for f in fq],
            "z": [to_sympy(z) for z in zq],
            "weight": [to_sympy(w) for w in wq],
            "loss_fn": loss,
            "mean_attention": vector(mean_att, rot),
            "mean_logits": vector(mean_logit, rot) + [to_sympy(query)],
            "mean_f": mean_f,
        }
    )
    out.update(grad)
    return out


def derivative_at(deriv: RationalDerivative, loss: Loss, z: fmpq) -> fmpq | None:
    """ℓ'(z) at a rational z, or None outside ℓ's domain (a pole, or for the log-loss ℓ'(z) = -1/(z + ε)
    ≥ 0, i.e. z + ε ≤ 0), after SymPy's own check there, which raises with SymPy's message.

    >>> from rwtoolkit.engines.exact.engine._derive import make_loss
    >>> loss = make_loss("log", sp.Rational(1, 10))
    >>> derivative_at(rational_derivative(loss.derivative), loss, fmpq(2, 5))
    -2
    """
    num, den = deriv.parts(z)
    if den != 0:
        gz = num / den
        if not (loss.name == "log" and gz >= 0):
            return gz
    loss.derivative(to_sympy(z))
    return None


def gradient_rows(K: int, L: int, rotation: bool) -> tuple[int, int, int]:
    """The first rows (r_tok, r_c, r_q) of Σ_j δ_j e_{s_j}, E[δ_j] and δ_N among a uniform pass's gradient
    entries: first E[∇_V ℓ] (its K diagonals under rotation, else its K·K entries), then Σ_j δ_j e_{s_j}
    (1 entry under rotation, else K), E[δ_j] (L = N - 1 entries) and δ_N (1); r_q + 1 entries in all.

    >>> gradient_rows(3, 4, True), gradient_rows(3, 4, False)
    ((3, 4, 8), (9, 12, 16))
    """
    r_tok = K if rotation else K * K
    r_c = r_tok + (1 if rotation else K)
    return r_tok, r_c, r_c + L


def gradient_fields(entries: Sequence[sp.Expr], K: int, rotation: bool) -> dict[str, object]:
    """``GroupPass``'s grad_V, grad_tok and grad_c from the entries laid out as in ``gradient_rows``.

    Under rotation the sum over the K rotations Σ_r R^r G0 R^-r has entry (i, j) equal to the sum of G0's
    diagonal i - j (mod K), and every token entry equal; ``entries`` from r_c on are the E[δ_j] and δ_N
    already summed over the rotations.
    """
    r_tok, r_c, _ = gradient_rows(K, 0, rotation)
    if rotation:
        return {
            "grad_V": circulant(list(entries[:K]), transpose=True),
            "grad_tok": [entries[r_tok]] * K,
            "grad_c": list(entries[r_c:]),
        }
    return {
        "grad_V": sp.Matrix(K, K, lambda i, j: entries[i * K + j]),
        "grad_tok": list(entries[r_tok:r_c]),
        "grad_c": list(entries[r_c:]),
    }


def token_counts(groups: Groups) -> tuple[np.ndarray, list[int], list[list[int]]]:
    """The tokens (G, N-1) and label of each group's first input, and T[g, s] = #{j < N: s_j = s} (G, K).

    >>> from rwtoolkit.tasks import CircleWalk
    >>> from rwtoolkit.engines.exact.engine._population import rooted_walks
    >>> inputs = rooted_walks(CircleWalk(3, 3, "1/2"))  # walks 0 2 1, 0 1 0, 0 2 0, 0 1 2: one group each
    >>> rows, ys, T = token_counts(Groups(inputs, np.zeros(2, dtype=np.int64), np.arange(4), np.arange(4)))
    >>> rows.tolist(), ys, T
    ([[0, 2], [0, 1], [0, 2], [0, 1]], [1, 0, 0, 2], [[1, 0, 1], [1, 1, 0], [1, 0, 1], [1, 1, 0]])
    """
    inputs, first = groups.inputs, groups.first
    n_groups, K = len(first), inputs.K
    rows = inputs.tokens[first]  # (G, L) tokens of each group's first input
    T = np.bincount((np.arange(n_groups)[:, None] * K + rows).reshape(-1), minlength=n_groups * K)
    return rows, inputs.labels[first].tolist(), T.reshape(n_groups, K).tolist()


def uniform_fields(
    groups: Groups, rows: np.ndarray, ys: list[int], logit: sp.Expr, S: sp.Expr
) -> dict[str, object]:
    """The fields of a uniform-attention pass that do not depend on V: every logit ``logit``, every S_j = ``S``."""
    cls_l = groups.cls.tolist()
    pairs_of = [dict.fromkeys(zip(cls_l, r)) for r in rows.tolist()]  # (class, token) keys in position order
    return {
        "inverse": groups.inverse,
        "cls": groups.cls,
        "labels": ys,
        "logit_of": [dict.fromkeys(pairs, logit) for pairs in pairs_of],
        "logit_query": logit,
        "S_of": [dict.fromkeys(pairs, S) for pairs in pairs_of],
        "S_query": [S] * len(ys),
        "rotation": groups.inputs.rotation,
    }
