"""Group passes whose attention has exponential atoms: exact arithmetic on linear forms in the atoms.

From t = 2 on (w(2) ≠ 0) the attention of a rational state is S_j = e_j / D with named atoms
e_j = exp(l_j - l_N) (``rwtoolkit.engines.exact.arithmetic._atoms``) and D = 1 + Σ_j e_j. SymPy builds every product and sum
of such terms as an expression tree, flattening, sorting and comparing the trees at each operation;
that is nearly all the time of the third step. In one pass every group quantity is a product of a few
linear forms in the atoms (Lemma B.1 with ℓ'(z) = -1/(z + ε) or 2(z - 1)):

* D = 1 + Σ_j e_j and P_row = Σ_j V[row, s_j] e_j (sums over the group's positions, with counts);
* S_j = e_j / D, f = P / D, z = P_y / D, and ℓ'(z) = n(z)/d(z) = A D^k / B with A, B the
  homogenised n, d at (P_y, D) (log-loss: A a constant, B ∝ P_y + ε D, k = 1; squared loss:
  A = 2(P_y - D), B = 1, k = -1);
* δ_j = ℓ'(z) S_j (V[y, s_j] - z) = A e_j X_{s_j} D^(k-2) / B with X_s = V[y, s] D - P_y, and
  δ_N = -A P_y D^(k-2) / B.

The coefficients of these forms are computed in FLINT's exact rationals (``fmpq``); each form is
built as a SymPy expression once per group and shared by every sum it enters; population sums
collect the rational coefficient of each distinct product in ``fmpq`` and build one SymPy ``Add``,
with its terms in the order they were collected (SymPy's ``Add`` would sort them by comparing the
trees, which costs more than all the arithmetic).

**Form of the results.** Every value equals the one the SymPy path computes
(``RWSYMBOLIC_ARITHMETIC=sympy``), but the expression trees differ: this path writes each group term
as a rational coefficient times products of expanded linear forms and their inverses, the SymPy path
keeps the nested tree it built (1/(Σ_j r_j e_j/D + ε), ...). Both are rational functions of the same
named atoms (created in the same order, for the same exponents). ``fraction_form`` maps either to
one canonical object that can be compared with ``==``: each term of a sum reduced to lowest terms
with a monic denominator (polynomial gcd in FLINT's ``fmpq_mpoly``), terms over equal denominators,
or over a denominator that divides exactly one of the largest ones, added, then each fraction split
into its polynomial quotient and remainder (the quotients added into one polynomial), with the
symbols and atoms as polynomial variables; other functions (log, Piecewise, comparisons) keep
canonical arguments.
Equal ``fraction_form`` implies equal values (every step is an exact identity).

The pass applies when V and the input probabilities are rational and ℓ' is the ratio of two
polynomials of degree ≤ 1 in z with rational coefficients (log and squared losses); logits (so μ)
may be symbolic, since they enter only through the atoms.
"""

from __future__ import annotations

import sympy as sp
from flint import fmpq

from rwtoolkit.engines.exact.arithmetic._atoms import exp_atom
from rwtoolkit.engines.exact.arithmetic._rational import (
    add_ordered,
    all_rational,
    exact_sum,
    product_ordered,
    to_fmpq,
    to_sympy,
    tree_sum,
)
from rwtoolkit.engines.exact.engine._moments import circulant
from rwtoolkit.engines.exact.engine._population import Loss
from rwtoolkit.engines.exact.engine._uniform import Groups, rational_derivative

#: A linear form in the pass's atoms: atom index (-1 for the constant) -> rational coefficient.
Linear = dict[int, fmpq]
_CONST = -1


def _combo(forms: list[tuple[fmpq, Linear]]) -> Linear:
    """Σ a · form, dropping zero coefficients."""
    out: Linear = {}
    for a, form in forms:
        if a == 0:
            continue
        for i, v in form.items():
            out[i] = out[i] + a * v if i in out else a * v  # (no addition to 0: large numbers)
    return {i: v for i, v in out.items() if v != 0}


class _Sum:
    """Σ coefficient · Π factors over distinct SymPy factor tuples (coefficients in ``fmpq``).

    ``linear`` holds, per tuple of factors, a linear form that multiplies them (the numerators of a
    shared denominator, added coefficient by coefficient).
    """

    def __init__(self) -> None:
        self.products: dict[tuple[sp.Expr, ...], fmpq] = {}
        self.linear: dict[tuple[sp.Expr, ...], Linear] = {}

    def add(self, coef: fmpq, factors: tuple[sp.Expr, ...]) -> None:
        self.products[factors] = self.products.get(factors, fmpq(0)) + coef

    def add_linear(self, coef: fmpq, form: Linear, factors: tuple[sp.Expr, ...]) -> None:
        acc = self.linear.setdefault(factors, {})
        for i, v in form.items():
            acc[i] = acc.get(i, fmpq(0)) + coef * v

    def merge(self, other: _Sum) -> None:
        for factors, coef in other.products.items():
            self.add(coef, factors)
        for factors, form in other.linear.items():
            self.add_linear(fmpq(1), form, factors)

    def sympy(self, atoms: list[sp.Expr], scale: int = 1) -> sp.Expr:
        parts = [
            product_ordered(coef * scale, factors) for factors, coef in self.products.items() if coef != 0
        ]
        for factors, form in self.linear.items():
            form = {i: v for i, v in form.items() if v != 0}
            if form:
                parts.append(product_ordered(fmpq(scale), (_linear_sympy(form, atoms), *factors)))
        return add_ordered(parts)


def _total(sums: list[_Sum]) -> _Sum:
    out = _Sum()
    for s in sums:
        out.merge(s)
    return out


def _linear_sympy(form: Linear, atoms: list[sp.Expr]) -> sp.Expr:
    """Σ coef · atom (+ constant) as a SymPy Add, terms in index order, constant first."""
    terms: list[sp.Expr] = []
    for i, v in sorted(form.items()):
        if i == _CONST:
            terms.append(to_sympy(v))
        else:
            terms.append(atoms[i] if v == 1 else sp.Mul._from_args((to_sympy(v), atoms[i]), True))
    return add_ordered(terms)


def atom_pass(
    groups: Groups,
    V: sp.Matrix,
    w_tok: list[sp.Expr],
    c: list[sp.Expr],
    mu: sp.Expr,
    loss: Loss,
    gradients: bool,
) -> dict[str, object] | None:
    """The fields of ``rwtoolkit.engines.exact.engine._groups.GroupPass`` with the atoms' linear forms in ``fmpq``, or None.

    Applicable when V and the input probabilities are rational and (with gradients) ℓ' = n(z)/d(z)
    with n, d of degree ≤ 1 and rational coefficients. Values equal the SymPy path's (see the module
    docstring for the form of the expressions).
    """
    inputs, cls, first = groups.inputs, groups.cls, groups.first
    K, N, L = inputs.K, inputs.N, inputs.N - 1
    if not (all_rational(list(V)) and all_rational(inputs.prob_values)):
        return None
    deriv = rational_derivative(loss.derivative) if gradients else None
    if gradients and (deriv is None or len(deriv.num) > 2 or len(deriv.den) > 2):
        return None

    logit_query = mu * c[N - 1]
    class_rep = groups.class_representatives(c)
    rows = inputs.tokens[first].tolist()  # (G, L) tokens of each group's first input
    ys = inputs.labels[first].tolist()
    cls_l = cls.tolist()
    # (class, token) pairs of each group with counts, and the atoms in the order the SymPy path names them
    counts_of: list[dict[tuple[int, int], int]] = []
    logit: dict[tuple[int, int], sp.Expr] = {}
    atom: dict[tuple[int, int], sp.Expr] = {}
    for r in rows:
        counts: dict[tuple[int, int], int] = {}
        for k, s in zip(cls_l, r):
            counts[(k, s)] = counts.get((k, s), 0) + 1
        counts_of.append(counts)
        for pr in counts:
            if pr not in logit:
                logit[pr] = w_tok[pr[1]] + mu * class_rep[pr[0]]
                atom[pr] = exp_atom(logit[pr] - logit_query)
    atoms = list(dict.fromkeys(a for a in atom.values() if a != 1))
    if not atoms:
        return None  # uniform attention: rwtoolkit.engines.exact.engine._uniform.uniform_pass's case
    index = {a: i for i, a in enumerate(atoms)}
    key_of = {pr: index.get(a, _CONST) for pr, a in atom.items()}

    Vq = [[to_fmpq(V[a, b]) for b in range(K)] for a in range(K)]
    Vdiff = [[[Vq[a][b] - Vq[a][b2] for b2 in range(K)] for b in range(K)] for a in range(K)]
    probs = [to_fmpq(v) for v in inputs.prob_values]
    n_groups, n_p = len(first), len(probs)
    wq = groups.group_weights(probs, tree_sum)
    # position weights: (group, position, token) -> Σ prob (integer counts per probability value)
    pos_weight: dict[int, dict[tuple[int, int], fmpq]] = {}  # group -> (position, token) -> weight
    for gj, s, pi, cnt in zip(*(a.tolist() for a in groups.position_combos(n_p)), strict=True):
        g, j = divmod(gj, L)
        row = pos_weight.setdefault(g, {})
        row[(j, s)] = row.get((j, s), fmpq(0)) + cnt * probs[pi]

    rot = K if inputs.rotation else 1
    mean_f = [_Sum() for _ in range(K)]
    mean_att = [_Sum() for _ in range(N)]
    mean_logit_terms: list[dict[tuple[int, int], fmpq]] = [{} for _ in range(L)]
    gV = [[_Sum() for _ in range(K)] for _ in range(K)]
    g_tok = [_Sum() for _ in range(K)]
    g_c = [_Sum() for _ in range(N)]
    mean_E: dict[tuple[sp.Expr, ...], dict[int, Linear]] = {}  # denominator -> token -> Σ_g w_g E_s
    S_of, S_query, fs, zs, logit_of = [], [], [], [], []
    one: Linear = {_CONST: fmpq(1)}
    for g in range(n_groups):
        counts, y, w = counts_of[g], ys[g], wq[g]
        # E[s] = Σ_{pairs with token s} count · e                                   (K linear forms)
        E: dict[int, Linear] = {}
        for pr, cnt in counts.items():
            form = E.setdefault(pr[1], {})
            form[key_of[pr]] = form.get(key_of[pr], fmpq(0)) + cnt
        D = _combo([(fmpq(1), one)] + [(fmpq(1), Es) for Es in E.values()])
        P = [_combo([(Vq[row][s], Es) for s, Es in E.items()]) for row in range(K)]
        D_sym = _linear_sympy(D, atoms)
        Dinv = sp.Pow(D_sym, -1)
        P_sym = [_linear_sympy(Pr, atoms) if Pr else sp.S.Zero for Pr in P]
        S_of.append({pr: product_ordered(fmpq(1), (atom[pr], Dinv)) for pr in counts})
        S_query.append(Dinv)
        f = [product_ordered(fmpq(1), (Pr, Dinv)) for Pr in P_sym]
        fs.append(f)
        zs.append(f[y])
        logit_of.append({pr: logit[pr] for pr in counts})
        # Σ_g w_g P_row = Σ_s V[row, s] Σ_g w_g E_s: the small sums first, V once at the end
        acc = mean_E.setdefault((Dinv,), {})
        for s_, Es in E.items():
            form = acc.setdefault(s_, {})
            for i, v in Es.items():
                form[i] = form[i] + w * v if i in form else w * v
        mean_att[N - 1].add(w, (Dinv,))
        for (j, s), pw in pos_weight[g].items():
            pr = (cls_l[j], s)
            mean_att[j].add(pw, (atom[pr], Dinv))
            mean_logit_terms[j][pr] = mean_logit_terms[j].get(pr, fmpq(0)) + pw
        if not gradients:
            continue
        assert deriv is not None
        # ℓ'(P/D) = A D^k / B: A, B homogenised numerator and denominator (degree ≤ 1)
        A = _homogeneous(deriv.num, P[y], D)
        B = _homogeneous(deriv.den, P[y], D)
        k_pow = len(deriv.den) - len(deriv.num)
        _check_domain(loss, A, B, f[y])
        a_coef, A_fac = _scalar_or_factor(A, atoms)
        b_coef, B_fac = _scalar_or_factor(B, atoms)
        coef0 = a_coef / b_coef
        B_inv = () if B_fac is None else (sp.Pow(B_fac, -1),)
        A_f = () if A_fac is None else (A_fac,)

        f1 = _over(A_f, B_inv, D_sym, k_pow - 1)
        f2 = _over(A_f, B_inv, D_sym, k_pow - 2)
        # X_s = V[y, s] D - P_y; a pair with token s' has coefficient count · (V[y, s] - V[y, s'])
        tokens = set(E) | {s_ for _, s_ in pos_weight[g]}
        X = {
            s_: _combo([(Vdiff[y][s_][s2], Es2) for s2, Es2 in E.items()] + [(Vq[y][s_], one)])
            for s_ in tokens
        }
        X_sym = {s_: _linear_sympy(form, atoms) if form else sp.S.Zero for s_, form in X.items()}
        for s, Es in E.items():
            Es_sym = _linear_sympy(Es, atoms)
            gV[y][s].add(coef0 * w, (Es_sym, *f1))  # ℓ'(z) S_j summed over the positions with token s
            if not inputs.rotation:
                g_tok[s].add(coef0 * w, (Es_sym, X_sym[s], *f2))  # Σ_j δ_j e_{s_j}
        for (j, s), pw in pos_weight[g].items():
            g_c[j].add(coef0 * pw, (atom[(cls_l[j], s)], X_sym[s], *f2))
        g_c[N - 1].add(-coef0 * w, (P_sym[y], *f2))  # δ_N = -ℓ'(z) S_N z

    for key, by_token in mean_E.items():
        for row in range(K):
            mean_f[row].add_linear(fmpq(1), _combo([(Vq[row][s], Es) for s, Es in by_token.items()]), key)
    mean_logits = [
        rot * exact_sum([to_sympy(pw) * logit[pr] for pr, pw in terms.items()]) for terms in mean_logit_terms
    ]
    out: dict[str, object] = {
        "inverse": groups.inverse,
        "cls": cls,
        "labels": ys,
        "logit_of": logit_of,
        "logit_query": logit_query,
        "S_of": S_of,
        "S_query": S_query,
        "f": fs,
        "z": zs,
        "weight": [to_sympy(w) for w in wq],
        "rotation": inputs.rotation,
        "loss_fn": loss,
        "mean_attention": [m.sympy(atoms, rot) for m in mean_att],
        "mean_logits": mean_logits + [logit_query],
        "mean_f": [_total(mean_f).sympy(atoms)] * K if inputs.rotation else [m.sympy(atoms) for m in mean_f],
    }
    if gradients:
        if inputs.rotation:  # Σ_r R^r G0 R^-r: entry (i, j) is the sum of G0's diagonal i - j (mod K)
            diag = [_total([gV[(i + d) % K][i] for i in range(K)]).sympy(atoms) for d in range(K)]
            out["grad_V"] = circulant(diag, transpose=True)
            # Σ_s Σ_{j<N} δ_j e_{s_j} summed over tokens is Σ_{j<N} δ_j = -δ_N (Σ_j S_j (a_j - z) = -S_N (0 - z))
            total = _Sum()
            for factors_, coef in g_c[N - 1].products.items():
                total.add(-coef, factors_)
            out["grad_tok"] = [total.sympy(atoms)] * K
        else:
            out["grad_V"] = sp.Matrix(K, K, lambda i, j: gV[i][j].sympy(atoms))
            out["grad_tok"] = [t.sympy(atoms) for t in g_tok]
        out["grad_c"] = [t.sympy(atoms, rot) for t in g_c]
    return out


def _over(
    A_f: tuple[sp.Expr, ...], B_inv: tuple[sp.Expr, ...], D_sym: sp.Expr, e: int
) -> tuple[sp.Expr, ...]:
    """The factors of A D^e / B besides its rational coefficient."""
    if e == 0:
        return (*A_f, *B_inv)
    return (*A_f, *B_inv, D_sym if e == 1 else sp.Pow(D_sym, e))


def _homogeneous(coeffs: list[fmpq], P: Linear, D: Linear) -> Linear:
    """n(P/D) · D^deg n for n of degree ≤ 1 (coefficients highest degree first): c0 P + c1 D or c0."""
    if len(coeffs) == 1:
        return {_CONST: coeffs[0]} if coeffs[0] != 0 else {}
    return _combo([(coeffs[0], P), (coeffs[1], D)])


def _scalar_or_factor(form: Linear, atoms: list[sp.Expr]) -> tuple[fmpq, sp.Expr | None]:
    """(c, None) for a constant form c, else (1, the form as SymPy)."""
    if set(form) <= {_CONST}:
        return form.get(_CONST, fmpq(0)), None
    return fmpq(1), _linear_sympy(form, atoms)


def _check_domain(loss: Loss, A: Linear, B: Linear, z: sp.Expr) -> None:
    """Refuse z outside ℓ's domain as the SymPy path does (the log-loss needs z + ε > 0).

    With positive atoms and D > 0, ℓ'(z) = -1/(z + ε) = A D / B is negative exactly when z + ε > 0;
    when A is a constant and every coefficient of A·B is negative that holds without evaluation,
    otherwise SymPy's own check decides (and raises outside the domain).
    """
    if loss.name != "log":
        return
    if not B or set(A) != {_CONST} or not all(A[_CONST] * b < 0 for b in B.values()):
        loss.derivative(z)
