"""Uniform-attention group passes whose state is polynomial in the task's symbols (symbolic p), in FLINT.

With a symbolic transition probability p the input probabilities are polynomials in p, and so are
V(1) and every quantity of a pass with uniform attention (S_j = 1/N: t = 0 and t = 1 from zero
initialisation): the group weights w_g, f = S Σ_s T[g, s] V[:, s] and z_g = f_g[y_g]. SymPy multiplies
and adds these as nested expression trees; here they are ``fmpq_mpoly`` polynomials (FLINT's sparse
polynomials with rational coefficients, one variable per symbol), added and multiplied in C.

The loss derivative ℓ'(z) = n(z)/d(z) (log and squared losses, ``rwtoolkit.engines.exact.engine._uniform.rational_derivative``)
is a rational function of z_g, so each gradient entry S Σ_g w_g ℓ'(z_g) x_g (Lemma B.1) is a sum of
rational functions of the symbols. The groups with equal z share ℓ'(z) and are added first; the
entry is written as a polynomial plus Σ_d r_d / d, one fraction per distinct reduced denominator
d = d(z_g), in lowest terms (polynomial gcd) with a monic denominator and, for one symbol, deg r_d <
deg d (the quotients join the polynomial). One common denominator would multiply hundreds of
denominators of degree N - 1 together; the sum of reduced fractions stays as large as the data. For
the squared loss ℓ' is a polynomial and every entry is one polynomial.

The SymPy objects are built from FLINT's terms without SymPy's sorting and recorded as free of
exponential atoms (``rwtoolkit.engines.exact.arithmetic._atoms.record_plain``), so the engine's later scans of the large
sums look them up instead of walking them.

The values equal the SymPy path's (``RWSYMBOLIC_ARITHMETIC=sympy``); the trees differ (expanded
polynomials here, SymPy's nested products there) and compare equal through
``rwtoolkit.engines.exact.engine._atom_pass.fraction_form``. A state that is not polynomial (exponential atoms, 1/p,
undefined functions), a loss whose ℓ' is not a rational function of z with rational coefficients
(exp, abstract, symbolic ε) or logits that are not all equal to the query's leave the pass to SymPy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sympy as sp
from flint import fmpq, fmpq_mpoly

from rwtoolkit.engines.exact.arithmetic._atoms import free_symbols, has_atoms, has_undefined, record_plain
from rwtoolkit.engines.exact.arithmetic._fractions import Canonical, polynomial_context, reduce_fraction
from rwtoolkit.engines.exact.arithmetic._rational import COPRIME, add_ordered, to_sympy, tree_sum
from rwtoolkit.engines.exact.engine._population import Loss
from rwtoolkit.engines.exact.engine._uniform import (
    Groups,
    RationalDerivative,
    derivative_at,
    gradient_fields,
    gradient_rows,
    rational_derivative,
    token_counts,
    uniform_fields,
)


class _Polynomials:
    """SymPy <-> ``fmpq_mpoly`` over a fixed list of symbols, each conversion back made once per polynomial."""

    def __init__(self, symbols: list[sp.Symbol]) -> None:
        self.symbols = symbols
        self.ctx = polynomial_context(symbols)
        self.canonical = Canonical(self.ctx, symbols)
        self._sympy: dict[str, sp.Expr] = {}
        self._powers: dict[tuple[int, ...], tuple[sp.Expr, ...]] = {}
        self._all = frozenset(symbols)

    def of(self, values: Sequence[sp.Expr]) -> list[fmpq_mpoly] | None:
        """``values`` as polynomials, or None when one is not (a denominator, an exponential, ...)."""
        out = []
        for v in values:
            poly = self.canonical.polynomial(v)
            if poly is None:
                return None
            out.append(poly)
        return out

    def constant(self, x: fmpq | int) -> fmpq_mpoly:
        return self.ctx.constant(fmpq(x))

    def sympy(self, poly: fmpq_mpoly | fmpq, cache: bool = True) -> sp.Expr:
        """The SymPy Add of the polynomial's terms, in FLINT's (lex) order, built without SymPy's sorting.

        ``cache``: reuse one object per distinct polynomial (values that repeat, e.g. z of the groups).
        An ``fmpq`` (``tree_sum`` of no terms) is its SymPy Rational.
        """
        if isinstance(poly, fmpq):
            return to_sympy(poly)
        key = str(poly) if cache else ""
        hit = self._sympy.get(key) if cache else None
        if hit is None:
            hit = self._build(poly)
            if cache:
                self._sympy[key] = hit
        return hit

    def _build(self, poly: fmpq_mpoly) -> sp.Expr:
        numbers: list[sp.Expr] = []
        terms: list[sp.Expr] = []
        monomial, coprime = self._monomial, COPRIME
        for exps, c in zip(poly.monoms(), poly.coeffs(), strict=True):
            mono = monomial(exps)
            if not mono:
                numbers.append(to_sympy(c))
            elif c == 1:
                terms.append(mono[0] if len(mono) == 1 else sp.Mul._from_args(mono, True))
            else:
                coef = coprime(int(c.p), int(c.q)) if coprime is not None else to_sympy(c)
                terms.append(sp.Mul._from_args((coef, *mono), True))
        args = numbers + terms  # SymPy keeps the number of a sum first
        if len(args) < 2:
            return args[0] if args else sp.S.Zero
        return record_plain(sp.Add._from_args(args, True), self._used(poly))

    def _monomial(self, exps: tuple[int, ...]) -> tuple[sp.Expr, ...]:
        hit = self._powers.get(exps)
        if hit is None:
            hit = self._powers[exps] = tuple(
                self.symbols[i] if e == 1 else sp.Pow(self.symbols[i], e) for i, e in enumerate(exps) if e
            )
        return hit

    def _used(self, poly: fmpq_mpoly) -> frozenset:
        """The symbols that occur in ``poly``."""
        if len(self.symbols) == 1:
            return frozenset() if poly.is_constant() else self._all
        return frozenset(self.symbols[i] for i, e in enumerate(poly.degrees()) if e > 0)

    def fraction(self, num: fmpq_mpoly, den: fmpq_mpoly, inverse_den: sp.Expr) -> sp.Expr:
        """num / den as lc · (num / lc) · ``inverse_den`` (the shared SymPy 1/den), lc num's leading coefficient."""
        lc = num.leading_coefficient()
        body = self._build(num / lc)
        factors = [to_sympy(lc), body, inverse_den] if lc != 1 else [body, inverse_den]
        return record_plain(sp.Mul._from_args(factors, True), self._used(num) | self._used(den))

    def inverse(self, den: fmpq_mpoly) -> sp.Expr:
        """The SymPy 1/den."""
        return record_plain(sp.Pow(self.sympy(den), -1), self._used(den))


def _symbols(values: Sequence[sp.Expr]) -> list[sp.Symbol] | None:
    """The symbols of ``values`` sorted by name, or None when some value has exponential atoms or undefined functions."""
    found: set[sp.Symbol] = set()
    for v in values:
        if has_atoms(v) or has_undefined(v):
            return None
        found |= free_symbols(v)
    return sorted(found, key=lambda s: (s.name, str(s.assumptions0)))


def polynomial_pass(
    groups: Groups,
    V: sp.Matrix,
    w_tok: list[sp.Expr],
    c: list[sp.Expr],
    mu: sp.Expr,
    loss: Loss,
    gradients: bool,
) -> dict[str, object] | None:
    """The fields of ``rwtoolkit.engines.exact.engine._groups.GroupPass`` with polynomial entries in ``fmpq_mpoly``, or None.

    Applicable when V, w_tok, c, μ (where c ≠ 0) and the input probabilities are polynomials with
    rational coefficients in the state's symbols, every logit x_jᵀ w_tok + μ c_j equals the query's
    μ c_N (S_j = 1/N exactly), and ℓ' is a rational function of z with rational coefficients. The
    formulas are ``rwtoolkit.engines.exact.engine._uniform.uniform_pass``'s (Lemma B.1 with e_j = 1); the gradient entries
    are sums of reduced fractions, one per distinct denominator (module docstring).

    >>> from rwtoolkit.engines.exact import derive
    >>> from rwtoolkit.tasks import CircleWalk
    >>> V1 = derive(CircleWalk(3, 3, "p"), 1, mu=1).states[1].V  # the pass at t = 0, in fmpq_mpoly
    >>> V1[0, 0]  # Lemma C.1: (η/(εNK)) [(Πᵀ)² + Πᵀ]_00 = (10/9) 2p(1 - p)
    -20*p**2/9 + 20*p/9
    """
    inputs, first = groups.inputs, groups.first
    K, N, L = inputs.K, inputs.N, inputs.N - 1
    deriv = rational_derivative(loss.derivative) if gradients else None
    if gradients and deriv is None:
        return None
    uses_mu = any(cj != 0 for cj in c)
    symbols = _symbols([*V, *w_tok, *c, *inputs.prob_values, *([mu] if uses_mu else [])])
    if symbols is None:
        return None
    ring = _Polynomials(symbols)
    # the logits first (cheap): a state whose attention is not uniform is refused before V is converted
    logit_parts = ring.of([*w_tok, *c, *([mu] if uses_mu else [])])
    if logit_parts is None:
        return None
    tokp, cp = logit_parts[:K], logit_parts[K : K + N]
    mup = logit_parts[-1] if uses_mu else ring.constant(0)
    query = mup * cp[N - 1]
    class_rep = groups.class_representatives(cp)
    if any(tokp[s] + mup * ck != query for ck in class_rep.values() for s in range(K)):
        return None  # attention not uniform: exponentials appear, SymPy takes over
    polys = ring.of([*V, *inputs.prob_values])
    if polys is None:
        return None
    Vp = [[polys[a * K + b] for b in range(K)] for a in range(K)]
    probs = polys[K * K :]

    n_groups, S = len(first), fmpq(1, N)
    wq = groups.group_weights(probs, tree_sum)
    rows, ys, T = token_counts(groups)
    # f = S Σ_s T[g, s] V[:, s], one vector per distinct token count                      (G, K)
    f_of: dict[tuple[int, ...], list[fmpq_mpoly]] = {}
    for counts in map(tuple, T):
        if counts not in f_of:
            f_of[counts] = [
                tree_sum([t * Vp[row][s] for s, t in enumerate(counts) if t]) * S for row in range(K)
            ]
    fq = [f_of[tuple(counts)] for counts in T]
    zq = [fq[g][ys[g]] for g in range(n_groups)]
    rot = K if inputs.rotation else 1
    total_weight = tree_sum(wq)
    weight_of: dict[tuple[int, ...], list[fmpq_mpoly]] = {}  # Σ w_g per distinct token count
    for g, counts in enumerate(map(tuple, T)):
        weight_of.setdefault(counts, []).append(wq[g])
    if inputs.rotation:  # Σ_r R^r v0 = (Σ_k v0_k) 1_K
        mean_f = [tree_sum([tree_sum(ws) * tree_sum(f_of[k]) for k, ws in weight_of.items()])] * K
    else:
        mean_f = [tree_sum([tree_sum(ws) * f_of[k][row] for k, ws in weight_of.items()]) for row in range(K)]

    grad = _gradients(groups, ring, deriv, loss, Vp, probs, wq, zq, ys, T) if deriv is not None else {}
    if grad is None:
        return None  # z outside ℓ's domain: SymPy's path reports it

    S_sp, logit_sp = to_sympy(S), ring.sympy(query)
    out: dict[str, object] = uniform_fields(groups, rows, ys, logit_sp, S_sp)
    out.update(
        {
            "f": [[ring.sympy(x) for x in f] for f in fq],
            "z": [ring.sympy(z) for z in zq],
            "weight": [ring.sympy(w) for w in wq],
            "loss_fn": loss,
            "mean_attention": [ring.sympy(total_weight * S * rot)] * N,
            "mean_logits": [ring.sympy(total_weight * query * rot)] * L + [logit_sp],
            "mean_f": [ring.sympy(x) for x in mean_f],
        }
    )
    out.update(grad)
    return out


def _gradients(
    groups: Groups,
    ring: _Polynomials,
    deriv: RationalDerivative,
    loss: Loss,
    Vp: list[list[fmpq_mpoly]],
    probs: list[fmpq_mpoly],
    wq: list[fmpq_mpoly],
    zq: list[fmpq_mpoly],
    ys: list[int],
    T: list[list[int]],
) -> dict[str, object] | None:
    """E[∇_V ℓ], E[Σ_j δ_j e_{s_j}] and E[δ] as sums of reduced fractions, one per distinct denominator.

    Every entry is S Σ_g ℓ'(z_g) x_g with x_g a sum of (integer count · probability value) · b, the
    factor b being V[y_g, s] - z_g (Σ_j δ_j e_{s_j} and E[δ_j]), 1 (E[∇_V ℓ]) or -z_g (δ_N). The
    groups with equal z share ℓ'(z) = n/d: their counts are added first (integers, per factor and
    probability value), then each class's polynomial is multiplied by n once, and the classes with
    equal reduced d are added into one numerator.
    """
    inputs, K, N, L = groups.inputs, groups.inputs.K, groups.inputs.N, groups.inputs.N - 1
    n_p, S = len(probs), fmpq(1, N)
    # the distinct z (classes u) and, for each, ℓ'(z) = n/d in lowest terms with d monic
    z_index: dict[str, int] = {}
    u_of = [z_index.setdefault(str(z), len(z_index)) for z in zq]
    z_of = {u: zq[g] for g, u in enumerate(u_of)}
    nd = []
    for u in range(len(z_index)):
        z = z_of[u]
        if z.is_constant() and derivative_at(deriv, loss, _constant_term(z)) is None:
            return None  # a number outside ℓ's domain, checked as SymPy checks it
        nd.append(reduce_fraction(*deriv.parts(z)))

    r_tok, r_c, r_q = gradient_rows(K, L, inputs.rotation)
    # factor codes b = y·K + s for V[y, s] - z, ONE for 1, MINUS_Z for -z
    ONE, MINUS_Z = K * K, K * K + 1
    U = len(z_index)
    u_arr, y_arr, T_arr = (np.asarray(x, dtype=np.int64) for x in (u_of, ys, T))  # T: (G, K)

    def code(entry: np.ndarray | int, g: np.ndarray, b: np.ndarray | int, pi: np.ndarray) -> np.ndarray:
        return ((entry * U + u_arr[g]) * (K * K + 2) + b) * n_p + pi

    codes: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    # the inputs counted per (group, probability value)
    gp, gp_count = np.unique(groups.inverse * n_p + inputs.prob_index, return_counts=True)
    g_of, pi_of = np.divmod(gp, n_p)
    codes.append(code(r_q, g_of, MINUS_Z, pi_of))  # δ_N = -ℓ'(z) S z
    counts.append(gp_count)
    for s in range(K):
        t = T_arr[g_of, s]
        sel = t > 0
        g, pi, cnt = g_of[sel], pi_of[sel], gp_count[sel] * t[sel]
        y = y_arr[g]
        # E[∇_V ℓ]: gV[y, s] = S Σ_g w_g ℓ'(z_g) T[g, s]
        codes.append(code((y - s) % K if inputs.rotation else y * K + s, g, ONE, pi))
        counts.append(cnt)
        # Σ_j δ_j e_{s_j} = S Σ_g w_g ℓ'(z_g) T[g, s] (V[y_g, s] - z_g)
        codes.append(code(r_tok + (0 if inputs.rotation else s), g, y * K + s, pi))
        counts.append(cnt)
    # E[δ_j] = S Σ_{inputs} prob ℓ'(z) (V[y, s_j] - z), counted per (group, position, token, prob)
    gj, s_j, pi, cnt = groups.position_combos(n_p)
    g, j = np.divmod(gj, L)
    codes.append(code(r_c + j, g, y_arr[g] * K + s_j, pi))
    counts.append(cnt)
    uniq, inv = np.unique(np.concatenate(codes), return_inverse=True)
    sums = np.zeros(len(uniq), dtype=np.int64)
    np.add.at(sums, inv.reshape(-1), np.concatenate(counts))
    rest, pis = np.divmod(uniq, n_p)  # sorted: the terms of one (entry, u, b) are adjacent

    # A[entry, u] = Σ_b (Σ_pi count · prob) · b
    acc: dict[tuple[int, int], list[fmpq_mpoly]] = {}
    starts = np.flatnonzero(np.r_[True, rest[1:] != rest[:-1]]).tolist() + [len(rest)]
    rest_l, pis_l, sums_l = rest.tolist(), pis.tolist(), sums.tolist()
    for a, b_end in zip(starts[:-1], starts[1:], strict=True):
        eu, b = divmod(rest_l[a], K * K + 2)
        entry, u = divmod(eu, U)
        weight = tree_sum([sums_l[i] * probs[pis_l[i]] for i in range(a, b_end)])
        if b == ONE:
            term = weight
        elif b == MINUS_Z:
            term = -weight * z_of[u]
        else:
            term = weight * (Vp[b // K][b % K] - z_of[u])
        acc.setdefault((entry, u), []).append(term)

    # numerators per (entry, reduced denominator): Σ_u n_u A[entry, u]
    den_index: dict[str, int] = {}
    dens: list[fmpq_mpoly] = []
    for _, d in nd:
        if den_index.setdefault(str(d), len(dens)) == len(dens):
            dens.append(d)
    d_of = [den_index[str(d)] for _, d in nd]
    numer: dict[tuple[int, int], list[fmpq_mpoly]] = {}
    for (entry, u), terms in acc.items():
        numer.setdefault((entry, d_of[u]), []).append(nd[u][0] * tree_sum(terms))
    rot = K if inputs.rotation else 1
    inverse = [None if d.is_one() else ring.inverse(d) for d in dens]
    univariate = ring.ctx.nvars() == 1
    fractions: list[list[sp.Expr]] = [[] for _ in range(r_q + 1)]
    whole: list[list[fmpq_mpoly]] = [[] for _ in range(r_q + 1)]  # polynomial parts
    for (entry, di), terms in sorted(numer.items()):
        d = dens[di]
        num = tree_sum(terms) * (S * (rot if entry >= r_c else 1))  # E[δ] sums over the K rotations
        if d.is_one():
            whole[entry].append(num)
            continue
        if univariate:  # num/d = q + r/d with deg r < deg d: the quotients join the polynomial part
            q, num = divmod(num, d)
            whole[entry].append(q)
        num, den = reduce_fraction(num, d)
        if num.is_zero():
            continue
        if den.is_one():  # the numerator is a multiple of the denominator
            whole[entry].append(num)
            continue
        inv = (
            inverse[di] if str(den) == str(d) else ring.inverse(den)
        )  # a cancelled factor: a new denominator
        assert inv is not None
        fractions[entry].append(ring.fraction(num, den, inv))
    values = [add_ordered([ring.sympy(tree_sum(w)), *f]) for w, f in zip(whole, fractions, strict=True)]
    return gradient_fields(values, K, inputs.rotation)


def _constant_term(poly: fmpq_mpoly) -> fmpq:
    """The constant coefficient of a polynomial."""
    return poly.to_dict().get((0,) * poly.context().nvars(), fmpq(0))
