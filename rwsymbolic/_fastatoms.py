"""Group passes whose attention has exponential atoms: exact arithmetic on linear forms in the atoms.

From t = 2 on (w(2) ≠ 0) the attention of a rational state is S_j = e_j / D with named atoms
e_j = exp(l_j - l_N) (``rwsymbolic._atoms``) and D = 1 + Σ_j e_j. SymPy builds every product and sum
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

from typing import TYPE_CHECKING

import sympy as sp
from flint import fmpq, fmpq_mpoly, fmpq_mpoly_ctx

from rwsymbolic._atoms import exp_atom
from rwsymbolic._circle_linear import _circulant
from rwsymbolic._fastq import (
    Groups,
    _all_rational,
    exact_sum,
    rational_derivative,
    to_fmpq,
    to_sympy,
    tree_sum,
)

if TYPE_CHECKING:  # _expect imports this module; the types only
    from rwsymbolic._expect import Loss

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
        parts = [_product(coef * scale, factors) for factors, coef in self.products.items() if coef != 0]
        for factors, form in self.linear.items():
            form = {i: v for i, v in form.items() if v != 0}
            if form:
                parts.append(_product(fmpq(scale), (_linear_sympy(form, atoms), *factors)))
        return _add(parts)


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
    return _add(terms)


def _product(coef: fmpq, factors: tuple[sp.Expr, ...]) -> sp.Expr:
    """coef · Π factors as one SymPy Mul, the factors' own products spliced in, without sorting."""
    out: list[sp.Expr] = []
    for f in factors:
        if f.is_Number:
            coef *= to_fmpq(f)
        elif f.is_Mul:
            head = f.args[0]
            if head.is_Number:
                coef *= to_fmpq(head)
                out.extend(f.args[1:])
            else:
                out.extend(f.args)
        elif f is not sp.S.One:
            out.append(f)
    if coef == 0:
        return sp.S.Zero
    if len(set(out)) != len(out):  # a repeated factor: SymPy's Mul collects it into a power
        return sp.Mul(to_sympy(coef), *out)
    return _mul([to_sympy(coef), *out] if coef != 1 else out)


def _mul(factors: list[sp.Expr]) -> sp.Expr:
    """SymPy's Mul of distinct non-number factors and at most one leading number, in the given order."""
    factors = [f for f in factors if f is not sp.S.One]
    if len(factors) < 2:
        return factors[0] if factors else sp.S.One
    if factors[0] is sp.S.Zero:
        return sp.S.Zero
    return sp.Mul._from_args(factors, True)


def _add(terms: list[sp.Expr]) -> sp.Expr:
    """SymPy's Add of ``terms`` (no two alike) in the given order, the rational part first.

    ``sp.Add`` would sort the terms by comparing their trees, which on the sums of a step costs more
    than all of the arithmetic; the order does not change the value, and it is deterministic.
    """
    numbers = [t for t in terms if t.is_Number]
    rest: list[sp.Expr] = []
    for t in terms:
        if t.is_Add:
            numbers.extend(a for a in t.args if a.is_Number)
            rest.extend(a for a in t.args if not a.is_Number)
        elif not t.is_Number:
            rest.append(t)
    head = sp.Add(*numbers) if numbers else sp.S.Zero
    args = ([head] if head is not sp.S.Zero else []) + rest
    if len(args) < 2:
        return args[0] if args else sp.S.Zero
    return sp.Add._from_args(args, True)


def atom_pass(
    groups: Groups,
    V: sp.Matrix,
    w_tok: list[sp.Expr],
    c: list[sp.Expr],
    mu: sp.Expr,
    loss: Loss,
    gradients: bool,
) -> dict[str, object] | None:
    """The fields of ``rwsymbolic._expect.GroupPass`` with the atoms' linear forms in ``fmpq``, or None.

    Applicable when V and the input probabilities are rational and (with gradients) ℓ' = n(z)/d(z)
    with n, d of degree ≤ 1 and rational coefficients. Values equal the SymPy path's (see the module
    docstring for the form of the expressions).
    """
    inputs, cls, first = groups.inputs, groups.cls, groups.first
    K, N, L = inputs.K, inputs.N, inputs.N - 1
    if not (_all_rational(list(V)) and _all_rational(inputs.prob_values)):
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
        return None  # uniform attention: rwsymbolic._fastq.uniform_pass's case
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
        S_of.append({pr: _product(fmpq(1), (atom[pr], Dinv)) for pr in counts})
        S_query.append(Dinv)
        f = [_product(fmpq(1), (Pr, Dinv)) for Pr in P_sym]
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
            out["grad_V"] = _circulant(diag, transpose=True)
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


def descend(x: sp.Expr, rate: sp.Expr, g: sp.Expr) -> sp.Expr:
    """x - rate·g, one coordinate of a gradient step; for a rational rate and a sum g each term of g is
    scaled on its own (SymPy would distribute the rate and sort the sum's terms again).

    >>> a, b = sp.symbols("a b", positive=True)
    >>> step = descend(sp.Rational(1, 2), sp.Rational(3, 2), a / (a + b) + 2 * b + 1)
    >>> sp.simplify(step - (sp.Rational(1, 2) - sp.Rational(3, 2) * (a / (a + b) + 2 * b + 1)))
    0
    """
    if not (rate.is_Rational and g.is_Add and x.is_Rational):
        return x - rate * g
    return _add([x, *(_product(-to_fmpq(rate), (t,)) for t in g.args)])


def fraction_form(expr: object) -> object:
    """A canonical, comparable form of an exact expression in symbols and named atoms (see module docstring).

    Sums become a frozenset of reduced fractions (numerator, monic denominator) over the expression's
    symbols, one per distinct denominator; matrices and lists are mapped entry by entry. Equal forms
    mean equal values; the two arithmetic paths of the engine give equal forms.

    >>> x, y = sp.symbols("x y", positive=True)
    >>> a = 1 / (x / (1 + y) + sp.Rational(1, 10)) + y
    >>> b = (10 + 10 * y) / (10 * x + 1 + y) + y
    >>> a == b, fraction_form(a) == fraction_form(b), fraction_form(a) == fraction_form(b + 1)
    (False, True, False)
    >>> fraction_form(x) == fraction_form(y)
    False
    """
    if isinstance(expr, sp.MatrixBase):
        return ("Matrix", expr.shape, tuple(fraction_form(v) for v in expr))
    if isinstance(expr, (list, tuple)):
        return tuple(fraction_form(v) for v in expr)
    if isinstance(expr, dict):
        return tuple(sorted((k, fraction_form(v)) for k, v in expr.items()))
    expr = sp.sympify(expr)
    symbols = sorted(expr.free_symbols, key=lambda s: (s.name, getattr(s, "dummy_index", 0) or 0))
    ctx = polynomial_context(symbols)
    return tuple(symbols), _Canonical(ctx, symbols).freeze(expr)  # the variables name the polynomials


def polynomial_context(symbols: list[sp.Symbol]) -> fmpq_mpoly_ctx:
    """FLINT's ring of polynomials with rational coefficients in ``symbols`` (lex order, generic names).

    The names are positional (y{n}_0, y{n}_1, ...): two SymPy symbols with one name but different
    assumptions stay two variables.

    >>> polynomial_context(list(sp.symbols("p mu"))).names()
    ('y2_0', 'y2_1')
    """
    return fmpq_mpoly_ctx.get((f"y{len(symbols)}_", max(len(symbols), 1)), "lex")


class _Canonical:
    """Maps SymPy expressions to Σ_{opaque o} Σ_Q N_Q/Q · o (reduced fractions, monic Q)."""

    def __init__(self, ctx: fmpq_mpoly_ctx, symbols: list[sp.Symbol]) -> None:
        self.ctx = ctx
        gens = ctx.gens()
        self.var = {s: gens[i] for i, s in enumerate(symbols)}
        self.one = ctx.from_dict({(0,) * ctx.nvars(): 1})

    def freeze(self, expr: sp.Basic) -> object:
        return _frozen(self.value(expr))

    def polynomial(self, expr: sp.Basic) -> fmpq_mpoly | None:
        """``expr`` as one polynomial in the symbols, or None when it is not a polynomial."""
        try:
            value = self.value(expr)
        except (ValueError, ZeroDivisionError):
            return None
        if set(value) - {()}:
            return None  # an opaque function (exp, log, ...)
        fractions = list(value.get((), {}).values())
        if not fractions:
            return self.ctx.from_dict({})
        if len(fractions) > 1 or not fractions[0][1].is_one():
            return None  # a denominator in the symbols
        return fractions[0][0]

    # a value: {opaque key: {str(Q): (N, Q)}}; opaque key () is the plain rational part
    def value(self, expr: sp.Basic) -> dict:
        if expr.is_Rational:
            return {(): self._fractions(self.one * to_fmpq(expr), self.one)} if expr != 0 else {}
        if expr in self.var:
            return {(): self._fractions(self.var[expr], self.one)}
        if isinstance(expr, sp.Add):
            out: dict = {}
            for a in expr.args:
                _add_into(out, self.value(a))
            return out
        if isinstance(expr, sp.Mul):
            acc: dict = {(): self._fractions(self.one, self.one)}
            for a in expr.args:
                acc = self._mul(acc, self.value(a))
            return acc
        if isinstance(expr, sp.Pow) and expr.exp.is_Integer:
            base = self.value(expr.base)
            n = int(expr.exp)
            if n < 0:
                base = self._invert(base)
                n = -n
            acc = {(): self._fractions(self.one, self.one)}
            for _ in range(n):
                acc = self._mul(acc, base)
            return acc
        # any other function: kept, with canonical arguments, as an opaque factor
        args = [self._single(a) for a in expr.args]
        numbers = [a for a in args if isinstance(a, tuple) and len(a) == 3 and a[2] is not None]
        if isinstance(expr, sp.Function) and args and len(numbers) == len(args):
            # arguments that are numbers in value (p + (1 - p) = 1): SymPy's value of the function there
            at_numbers = expr.func(*(a[2] for a in numbers))
            if at_numbers != expr:
                return self.value(at_numbers)
        key = (type(expr).__name__, tuple(a[:2] if isinstance(a, tuple) and len(a) == 3 else a for a in args))
        return {key: self._fractions(self.one, self.one)}

    def _single(self, arg: sp.Basic) -> object:
        """An argument of an opaque function as one reduced fraction (n, q, the SymPy number n/q when
        constant) or its own opaque form."""
        if not isinstance(arg, sp.Expr) or arg.is_Relational:
            if isinstance(arg, sp.Basic) and arg.args:
                return (type(arg).__name__, tuple(self._single(a) for a in arg.args))
            return str(arg)
        value = self.value(arg)
        if set(value) - {()}:
            return _frozen(value)
        n, q = self._combine(value.get((), {}))
        number = None
        if n.is_constant() and q.is_constant():
            constant = n.to_dict().get((0,) * self.ctx.nvars(), fmpq(0)) / q.leading_coefficient()
            number = to_sympy(constant)
        return (str(n), str(q), number)

    def _fractions(self, n: fmpq_mpoly, q: fmpq_mpoly) -> dict:
        n, q = _reduce(n, q)
        return {str(q): (n, q)} if not n.is_zero() else {}

    def _combine(self, fr: dict) -> tuple[fmpq_mpoly, fmpq_mpoly]:
        n, q = self.ctx.from_dict({}), self.one
        for a, b in fr.values():
            n, q = _reduce(n * b + a * q, q * b)
        return n, q

    def _invert(self, value: dict) -> dict:
        if set(value) - {()}:
            raise ValueError("fraction_form: 1/x for x with opaque factors is not supported")
        n, q = self._combine(value.get((), {}))
        if n.is_zero():
            raise ZeroDivisionError("fraction_form: division by zero")
        return {(): self._fractions(q, n)}

    def _mul(self, a: dict, b: dict) -> dict:
        out: dict = {}
        for oa, fa in a.items():
            for ob, fb in b.items():
                if oa and ob:
                    key = tuple(sorted((oa, ob), key=str))
                else:
                    key = oa or ob
                part: dict = {}
                for na, qa in fa.values():
                    for nb, qb in fb.values():
                        _add_fraction(part, *_reduce(na * nb, qa * qb))
                _add_into(out, {key: part})
        return out


def _frozen(value: dict) -> frozenset:
    return frozenset(
        (o, frozenset((str(n), str(q)) for n, q in _proper(_merge_divisors(fr)).values()))
        for o, fr in value.items()
        if fr
    )


def _proper(fr: dict) -> dict:
    """Each fraction n/q as its quotient and remainder by q (lex order), the quotients added into one polynomial.

    A sum can carry its polynomial part on its own or inside a fraction (n/q + P = (n + P q)/q); the
    remainder of n by q (no term divisible by q's leading term) is one for both writings.
    """
    out: dict = {}
    whole = []
    for n, q in fr.values():
        if q.is_one():
            whole.append(n)
            continue
        quotient, remainder = divmod(n, q)
        whole.append(quotient)
        if not remainder.is_zero():
            out[str(q)] = (remainder, q)
    if whole:
        total = sum(whole[1:], whole[0])
        if not total.is_zero():
            one = total.context().constant(1)
            out[str(one)] = (total, one)
    return out


def _merge_divisors(fr: dict) -> dict:
    """Each fraction whose denominator divides exactly one maximal denominator of the sum is added into it.

    A group's term can be written over B·D or split into pieces over B and over B·D (the SymPy path
    distributes some products): this merge makes the two writings one. Repeated until nothing merges.
    """
    fr = dict(fr)
    while True:
        items = list(fr.items())
        maximal = [(k, q) for k, (_, q) in items if not any(k2 != k and q2 % q == 0 for k2, (_, q2) in items)]
        moved = False
        for k, (n, q) in items:
            if any(k == km for km, _ in maximal):
                continue
            targets = [(km, qm) for km, qm in maximal if qm % q == 0]
            if len(targets) == 1 and k in fr:
                km, qm = targets[0]
                del fr[k]
                _add_fraction(fr, n * (qm / q), qm)
                moved = True
        if not moved:
            return fr


def _add_fraction(fr: dict, n: fmpq_mpoly, q: fmpq_mpoly) -> None:
    """Add n/q (reduced, monic q) into a {str(Q): (N, Q)} map, re-reducing and merging until stable."""
    while not n.is_zero():
        key = str(q)
        hit = fr.pop(key, None)
        if hit is None:
            fr[key] = (n, q)
            return
        n2, q2 = _reduce(hit[0] + n, q)
        if str(q2) == key:
            if not n2.is_zero():
                fr[key] = (n2, q2)
            return
        n, q = n2, q2  # the sum cancelled a factor: merge it with its new denominator


def _add_into(out: dict, value: dict) -> None:
    for o, fr in value.items():
        target = out.setdefault(o, {})
        for n, q in fr.values():
            _add_fraction(target, n, q)
        if not target:
            del out[o]


def _reduce(n: fmpq_mpoly, q: fmpq_mpoly) -> tuple[fmpq_mpoly, fmpq_mpoly]:
    """n/q in lowest terms with q monic (leading coefficient 1 in lex order)."""
    if n.is_zero():
        return n, n + 1  # 0 = 0/1
    g = n.gcd(q)
    if not g.is_one():
        n, q = n / g, q / g
    lc = q.leading_coefficient()
    if lc != 1:
        n, q = n / lc, q / lc
    return n, q
