"""rwtoolkit.engines.exact's python-flint arithmetic (rwtoolkit.engines.exact.engine._uniform) against the pure SymPy path and closed forms.

The SymPy path (``RWSYMBOLIC_ARITHMETIC=sympy``) is the independent reference: it builds every value
with SymPy's own Rational and expression arithmetic, so equal objects on both paths mean the fmpq
arithmetic reproduced SymPy's exact values (rationals have one reduced form: ``==`` is identity of value).
From t = 2 on the values are rational functions of named exponential atoms, written as different trees
by the two paths; they are compared through ``rwtoolkit.engines.exact.engine._atom_pass.fraction_form`` (reduced fractions
over the atoms: equal forms are equal values) and, independently of FLINT, by SymPy's evaluation with
the atoms at rational points.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from flint import fmpq

from rwtoolkit.engines.exact import derive
from rwtoolkit.engines.exact.arithmetic import _rational
from rwtoolkit.engines.exact.arithmetic._atoms import definition, expand_atoms, has_atoms
from rwtoolkit.engines.exact.arithmetic._fractions import fraction_form
from rwtoolkit.engines.exact.arithmetic._rational import (
    ARITHMETIC_ENV,
    descend,
    exact_sum,
    tree_sum,
    use_flint,
)
from rwtoolkit.engines.exact.engine._atom_pass import atom_pass
from rwtoolkit.engines.exact.engine._derive import make_loss
from rwtoolkit.engines.exact.engine._groups import _unique_rows, group_pass
from rwtoolkit.engines.exact.engine._polynomial_pass import polynomial_pass
from rwtoolkit.engines.exact.engine._population import population_inputs
from rwtoolkit.engines.exact.engine._uniform import rational_derivative, uniform_pass
from rwtoolkit.tasks import CircleWalk, lazy_circle_walk, majority_task, qa_task1

_VALUES = ("V", "w_tok", "c", "loss", "accuracy", "mean_attention", "mean_logits", "mean_f")
_PER_INPUT = ("logits", "S", "f", "z")


def _state_values(task, steps, per_input, names=_VALUES, **kw) -> list:
    """(t, name, canonical form) of every value: ``fraction_form`` of the atom form (equal form => equal value)."""
    tr = derive(task, steps, **kw)
    names = names + (_PER_INPUT if per_input else ())
    return [(s.t, name, fraction_form(s.atom_form(name))) for s in tr.states for name in names]


def _both_paths(monkeypatch, task, steps, per_input=True, **kw) -> tuple[list, list]:
    monkeypatch.setenv(ARITHMETIC_ENV, "sympy")
    reference = _state_values(task, steps, per_input, **kw)
    monkeypatch.setenv(ARITHMETIC_ENV, "flint")
    return reference, _state_values(task, steps, per_input, **kw)


def _count_fast_passes(monkeypatch, name="uniform_pass") -> list[bool]:
    """Record, for every call of a fast pass, whether it handled the pass (the comparisons are not vacuous).

    "uniform_pass" counts the uniform-attention passes in FLINT: ``uniform_pass`` for a rational state,
    ``polynomial_pass`` for a state with symbols (``group_pass`` asks exactly one of them).
    """
    taken: list[bool] = []
    originals = {"uniform_pass": uniform_pass, "polynomial_pass": polynomial_pass, "atom_pass": atom_pass}
    for key in ("uniform_pass", "polynomial_pass") if name == "uniform_pass" else (name,):

        def spy(*args, _original=originals[key], **kwargs):
            out = _original(*args, **kwargs)
            taken.append(out is not None)
            return out

        monkeypatch.setattr(f"rwtoolkit.engines.exact.engine._groups.{key}", spy)
    return taken


def _at_rational_atoms(values: list, seed: int) -> list:
    """Every entry with each named atom and symbol replaced by a rational (SymPy's evaluation, no FLINT)."""
    rng = random.Random(seed)
    atoms: dict = {}
    out = []
    for v in values:
        entries = list(v) if isinstance(v, (sp.MatrixBase, list)) else [v]
        for e in entries:
            for a in sorted(e.free_symbols, key=str):
                atoms.setdefault(a, sp.Rational(rng.randint(1, 40), rng.randint(1, 40)))
            out.append(e.xreplace(atoms))
    return out


@pytest.mark.parametrize("loss", ["log", "squared"])
@pytest.mark.parametrize("mu", ["1/2", "mu"])
@pytest.mark.parametrize("rotate", [True, False])
def test_flint_steps_equal_sympy_steps_for_rational_p(monkeypatch, loss, mu, rotate):
    taken = _count_fast_passes(monkeypatch)
    with_atoms = _count_fast_passes(monkeypatch, "atom_pass")
    reference, fast = _both_paths(monkeypatch, CircleWalk(4, 5, "3/10"), 2, loss=loss, mu=mu, rotate=rotate)
    assert fast == reference
    # t = 0 and t = 1 have w = 0 (uniform attention): fmpq; t = 2 has exponentials: linear forms in the atoms
    assert taken == [True, True, False] and with_atoms == [True]


def test_flint_steps_equal_sympy_steps_on_a_finite_task(monkeypatch):
    taken = _count_fast_passes(monkeypatch)
    reference, fast = _both_paths(monkeypatch, qa_task1(), 2, mu=1)
    assert fast == reference
    assert taken[:2] == [True, True]


_SMALL = [
    (3, 4, "2/5", "3/2", "log", True),
    (3, 5, "1/3", "mu", "log", True),
    (4, 5, "7/10", "1/2", "squared", True),
    (4, 4, "1/2", "mu", "log", False),
    (5, 6, "3/10", "1/2", "log", True),
    (5, 5, "2/3", "mu", "squared", True),
    (3, 6, "1/4", "2", "log", False),
]


@pytest.mark.parametrize(("K", "N", "p", "mu", "loss", "rotate"), _SMALL)
def test_third_step_with_exponential_atoms_equals_sympy(monkeypatch, K, N, p, mu, loss, rotate):
    # θ(3) is built from the atoms exp(logits(2)); the step-2 pass runs on linear forms in the atoms.
    with_atoms = _count_fast_passes(monkeypatch, "atom_pass")

    def theta3() -> list:
        tr = derive(CircleWalk(K, N, p), 3, mu=mu, loss=loss, rotate=rotate)
        s2, s3 = tr.states[2], tr.states[3]
        return [s3.atom_form(name) for name in ("V", "w_tok", "c")] + [
            s2.atom_form(name) for name in ("mean_attention", "mean_f", "z")
        ]

    monkeypatch.setenv(ARITHMETIC_ENV, "sympy")
    reference = theta3()
    monkeypatch.setenv(ARITHMETIC_ENV, "flint")
    fast = theta3()
    assert with_atoms == [True]
    assert has_atoms(fast[0][0, 0]) and fast[0][0, 0] != reference[0][0, 0]  # two trees ...
    assert [fraction_form(v) for v in fast] == [fraction_form(v) for v in reference]  # ... one value
    # independent of FLINT: both evaluated by SymPy with the atoms at rational points
    for seed in (1, 2):
        assert _at_rational_atoms(fast, seed) == _at_rational_atoms(reference, seed)


def test_public_values_expand_the_atoms_of_the_fast_path(monkeypatch):
    monkeypatch.setenv(ARITHMETIC_ENV, "flint")
    state = derive(CircleWalk(3, 4, "2/5"), 3, mu="3/2").states[3]
    assert state.V[0, 1].has(sp.exp) and state.V[0, 1] == expand_atoms(state.atom_form("V")[0, 1])


def test_fraction_form_identifies_equal_values_and_separates_different_ones():
    x, y, z = sp.symbols("x y z", positive=True)
    B, D = x + 2 * y + 1, 1 + x + y
    pieces = x / (B * D) + y / B  # the SymPy path's split of a group term
    merged = (x + y * D) / (B * D)  # the same term over one denominator
    assert pieces != merged and fraction_form(pieces) == fraction_form(merged)
    assert fraction_form(pieces) != fraction_form(merged + z / D)
    assert fraction_form(x / D) != fraction_form(y / D)  # same shape, other variable
    assert fraction_form(1 / (x / D + sp.Rational(1, 10))) == fraction_form(10 * D / (10 * x + D))
    assert fraction_form(sp.log(x / D + 1)) == fraction_form(sp.log((2 * x + 1 + y) / D))
    assert fraction_form(sp.log(x / D + 1)) != fraction_form(sp.log((2 * x + y) / D))
    assert fraction_form(sp.Matrix([[x, 1 / D]])) == fraction_form(sp.Matrix([[x, 2 / (2 * D)]]))


def test_descend_is_the_gradient_step():
    x, y = sp.symbols("x y", positive=True)
    g = x / (x + y) + 3 * y / (1 + x) + sp.Rational(5, 7)
    for rate in (sp.Rational(3, 4), sp.Integer(1), sp.Symbol("mu", positive=True)):
        assert fraction_form(descend(sp.Rational(1, 3), rate, g)) == fraction_form(
            sp.Rational(1, 3) - rate * g
        )


@pytest.mark.parametrize("loss", ["exp", "any"])
def test_losses_without_a_rational_derivative_fall_back_to_sympy(monkeypatch, loss):
    taken = _count_fast_passes(monkeypatch)
    with_atoms = _count_fast_passes(monkeypatch, "atom_pass")
    reference, fast = _both_paths(monkeypatch, CircleWalk(3, 4, "1/2"), 2, loss=loss, per_input=False)
    assert fast == reference
    assert not any(taken[:2]) and with_atoms[:2] == [False, False]


def test_symbolic_eps_stays_in_sympy(monkeypatch):
    taken = _count_fast_passes(monkeypatch)
    with_atoms = _count_fast_passes(monkeypatch, "atom_pass")
    names = ("V", "w_tok", "c", "mean_attention")
    reference, fast = _both_paths(
        monkeypatch, CircleWalk(3, 4, "1/3"), 2, eps="eps", per_input=False, names=names
    )
    assert fast == reference
    assert (
        taken == [False] * 3
    )  # ℓ' = -1/(z + eps) is not a rational function of z with rational coefficients
    assert with_atoms == [False] * 3  # V(2) is a function of eps


def _same_value(a, b) -> bool:
    """Equal values, entry by entry: the canonical form of a - b has no term (exact polynomial arithmetic)."""
    if isinstance(a, (sp.MatrixBase, list, tuple)):
        a, b = list(a), list(b)
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    return fraction_form(sp.sympify(a) - sp.sympify(b))[1] == frozenset()


def _entries(value) -> list:
    if isinstance(value, (sp.MatrixBase, list, tuple)):
        return [e for v in value for e in _entries(v)]
    return [sp.sympify(value)]


def _renamed(value, names: dict):
    if isinstance(value, (sp.MatrixBase, list, tuple)):
        return [_renamed(v, names) for v in value]
    return sp.sympify(value).xreplace(names)


def _same_values_up_to_atom_names(fast: list, reference: list) -> bool:
    """Equal values when each named atom exp(a) of ``fast`` is read as the atom of ``reference`` whose
    exponent has a's value (the two paths write equal logits as different trees, hence name them apart)."""
    atoms = [
        {a for v in values for e in _entries(v) for a in e.atoms(sp.Dummy) if definition(a) is not None}
        for values in (fast, reference)
    ]
    names = {}
    for a in atoms[0]:
        same = [b for b in atoms[1] if _same_value(definition(a), definition(b))]
        if len(same) != 1:
            return False
        names[a] = same[0]
    return all(_same_value(_renamed(x, names), y) for x, y in zip(fast, reference, strict=True))


def _values_at(task, names, per_input, **kw) -> list:
    """Every value at t = 0 and t = 1 (the polynomial passes) and θ(2) (built from their gradients)."""
    tr = derive(task, 2, **kw)
    names = names + (_PER_INPUT if per_input else ())
    return [(s.t, name, s.atom_form(name)) for s in tr.states[:2] for name in names] + [
        (2, name, tr.states[2].atom_form(name)) for name in ("V", "w_tok", "c")
    ]


_SYMBOLIC_P = [
    (3, 4, "1/2", "log", True),
    (4, 5, "mu", "log", True),
    (4, 4, "3/2", "squared", False),
    (5, 5, "mu", "squared", True),
    (3, 5, "1/2", "log", False),
    (5, 6, "2", "log", True),
]
_NO_ACCURACY = tuple(n for n in _VALUES if n != "accuracy")


@pytest.mark.parametrize(("K", "N", "mu", "loss", "rotate"), _SYMBOLIC_P)
def test_symbolic_p_steps_equal_sympy_steps(monkeypatch, K, N, mu, loss, rotate):
    # t = 0 and t = 1 (uniform attention, polynomials in p) run in fmpq_mpoly, and θ(2) is built from them.
    taken = _count_fast_passes(monkeypatch)
    task = CircleWalk(K, N, "p")
    kw = {"mu": mu, "loss": loss, "rotate": rotate}
    monkeypatch.setenv(ARITHMETIC_ENV, "sympy")
    reference = _values_at(task, _NO_ACCURACY, K * N <= 20, **kw)
    monkeypatch.setenv(ARITHMETIC_ENV, "flint")
    fast = _values_at(task, _NO_ACCURACY, K * N <= 20, **kw)
    assert taken == [True, True]
    assert [key[:2] for key in fast] == [key[:2] for key in reference]
    assert all(_same_value(a[2], b[2]) for a, b in zip(fast, reference, strict=True))
    # the two writings differ: expanded polynomials and reduced fractions here, SymPy's nested products there
    assert fast[-3][2] != reference[-3][2]


@pytest.mark.parametrize(("K", "N", "rotate"), [(3, 4, True), (4, 4, False)])
def test_symbolic_p_accuracy_agrees_at_rational_points(monkeypatch, K, N, rotate):
    # The accuracy is a Piecewise in p where argmax comparisons involve p; an exact tie of two expanded
    # polynomials is an integer count here. Both agree at every p: compared at rational points.
    monkeypatch.setenv(ARITHMETIC_ENV, "sympy")
    reference = [s.accuracy for s in derive(CircleWalk(K, N, "p"), 1, rotate=rotate).states]
    monkeypatch.setenv(ARITHMETIC_ENV, "flint")
    tr = derive(CircleWalk(K, N, "p"), 1, rotate=rotate)
    fast = [s.accuracy for s in tr.states]
    for value in (sp.Rational(1, 5), sp.Rational(1, 2), sp.Rational(5, 7)):
        at = {tr.task.p: value}
        assert [a.xreplace(at) for a in fast] == [b.xreplace(at) for b in reference]


@pytest.mark.parametrize(("K", "N", "loss", "rotate"), [(3, 4, "log", True), (4, 5, "squared", False)])
def test_symbolic_p_at_a_rational_value_is_the_rational_p_run(monkeypatch, K, N, loss, rotate):
    # Independent of the fraction forms: p = 1/3 substituted into the symbolic θ(2) (SymPy evaluates) is
    # exactly θ(2) of the run with p = 1/3 (the fmpq pass, already compared with SymPy above).
    monkeypatch.setenv(ARITHMETIC_ENV, "flint")
    taken = _count_fast_passes(monkeypatch)
    symbolic = derive(CircleWalk(K, N, "p"), 2, mu="1/2", loss=loss, rotate=rotate)
    rational = derive(CircleWalk(K, N, "1/3"), 2, mu="1/2", loss=loss, rotate=rotate)
    at = {symbolic.task.p: sp.Rational(1, 3)}
    for name in ("V", "w_tok", "c"):
        for t in (1, 2):
            got = [v.xreplace(at) for v in getattr(symbolic.states[t], name)]
            assert got == list(getattr(rational.states[t], name))
            assert all(v.is_Rational for v in got)
    assert taken == [True] * 4  # t = 0, 1 of the symbolic run, then of the rational one


def test_third_step_from_symbolic_p_equals_sympy(monkeypatch):
    # θ(3) is built by SymPy's pass at t = 2 on either arithmetic's θ(2): equal values.
    def theta3() -> list:
        tr = derive(CircleWalk(3, 4, "p"), 3, mu="1/2")
        return [tr.states[3].atom_form(name) for name in ("V", "w_tok", "c")]

    monkeypatch.setenv(ARITHMETIC_ENV, "sympy")
    reference = theta3()
    monkeypatch.setenv(ARITHMETIC_ENV, "flint")
    fast = theta3()
    assert _same_values_up_to_atom_names(fast, reference)


@pytest.mark.parametrize(
    "task",
    [lazy_circle_walk(3, 3, "p", "q"), majority_task(3, "q")],
    ids=["lazy-circle-p-q", "majority-q"],
)
def test_tasks_with_symbolic_probabilities_equal_sympy(monkeypatch, task):
    # two symbols (a multivariate fmpq_mpoly ring), and a task that is not a circle walk
    taken = _count_fast_passes(monkeypatch)
    monkeypatch.setenv(ARITHMETIC_ENV, "sympy")
    reference = _values_at(task, _NO_ACCURACY, True, mu="1/2")
    monkeypatch.setenv(ARITHMETIC_ENV, "flint")
    fast = _values_at(task, _NO_ACCURACY, True, mu="1/2")
    assert taken == [True, True]
    assert all(_same_value(a[2], b[2]) for a, b in zip(fast, reference, strict=True))


def test_symbolic_mu_through_equal_logits_takes_the_polynomial_pass(monkeypatch):
    # c_j = 1/2 for every j, w_tok = 0: every logit is μ/2 with μ a symbol, so S_j = 1/N and the logits
    # are polynomials in μ; V rational, the probabilities polynomials in p.
    taken = _count_fast_passes(monkeypatch)
    mu, eps = sp.Symbol("mu", positive=True), sp.Rational(1, 10)
    task = CircleWalk(3, 4, "p")
    inputs = population_inputs(task.population())
    V = sp.Matrix(3, 3, lambda a, b: sp.Rational(3 * a - 2 * b + 5, 4 + a + b))
    state = (V, [sp.Integer(0)] * 3, [sp.Rational(1, 2)] * 4)
    passes = []
    for arithmetic in ("sympy", "flint"):
        monkeypatch.setenv(ARITHMETIC_ENV, arithmetic)
        passes.append(group_pass(inputs, *state, mu, make_loss("log", eps), True))
    reference, fast = passes
    assert taken == [True]  # the SymPy pass does not call it
    assert fast.mean_logits == [mu / 2] * 4
    for name in ("grad_V", "grad_tok", "grad_c", "mean_logits", "mean_attention", "mean_f", "z"):
        assert _same_value(getattr(fast, name), getattr(reference, name)), name


def test_a_state_that_is_not_polynomial_is_left_to_sympy(monkeypatch):
    # V with 1/p entries: not a polynomial in p, so the pass declines and SymPy computes it.
    taken = _count_fast_passes(monkeypatch)
    task = CircleWalk(3, 3, "p")
    p = task.p
    inputs = population_inputs(task.population())
    state = (sp.Matrix(3, 3, lambda a, b: (a + 1) / (p + b + 1)), [sp.Integer(0)] * 3, [sp.Integer(0)] * 3)
    passes = []
    for arithmetic in ("sympy", "flint"):
        monkeypatch.setenv(ARITHMETIC_ENV, arithmetic)
        passes.append(group_pass(inputs, *state, sp.Integer(1), make_loss("log", sp.Rational(1, 10)), True))
    assert taken == [False]
    assert passes[0].grad_V == passes[1].grad_V


@pytest.mark.parametrize(("K", "N", "p"), [(3, 4, "1/3"), (4, 6, "7/10"), (5, 5, "1/2")])
def test_flint_first_value_step_matches_lemma_c1_closed_form(monkeypatch, K, N, p):
    # Lemma C.1 for the log-loss: V(1) = (η/(εNK)) Σ_{i=1}^{N-1} (Πᵀ)^{N-i}, by SymPy matrix powers.
    monkeypatch.setenv(ARITHMETIC_ENV, "flint")
    eta, eps = sp.Rational(3, 2), sp.Rational(1, 10)
    task = CircleWalk(K, N, p)
    PiT = task.transition_matrix().T
    closed = eta / (eps * N * K) * sum((PiT ** (N - i) for i in range(1, N)), sp.zeros(K, K))
    assert derive(task, 1, eta=eta, eps=eps).states[1].V == closed


def test_tree_sum_equals_fraction_sums():
    rng = random.Random(20251130)
    for n in (0, 1, 2, 3, 17, 200):
        terms = [Fraction(rng.randint(-(10**30), 10**30), rng.randint(1, 10**20)) for _ in range(n)]
        total = tree_sum([fmpq(t.numerator, t.denominator) for t in terms])
        assert (int(total.p), int(total.q)) == (
            sum(terms, Fraction(0)).numerator,
            sum(terms, Fraction(0)).denominator,
        )


def test_exact_sum_is_the_same_object_on_both_paths(monkeypatch):
    x = sp.Symbol("x")
    terms = [sp.Rational(1, 3), x, sp.Rational(-5, 7), sp.Rational(2, 21), 2 * x]
    monkeypatch.setenv(ARITHMETIC_ENV, "sympy")
    reference = exact_sum(terms)
    monkeypatch.setenv(ARITHMETIC_ENV, "flint")
    assert exact_sum(terms) == reference == 3 * x - sp.Rational(2, 7)


def test_rational_derivative_of_the_named_losses():
    z = fmpq(3, 7)
    num, den = rational_derivative(make_loss("log", sp.Rational(1, 10)).derivative).parts(z)
    assert num / den == fmpq(-1) / (z + fmpq(1, 10))
    num, den = rational_derivative(make_loss("squared", sp.Rational(1, 10)).derivative).parts(z)
    assert num / den == -2 * (1 - z)
    for loss in ("exp", "any"):
        assert rational_derivative(make_loss(loss, sp.Rational(1, 10)).derivative) is None
    assert rational_derivative(make_loss("log", sp.Symbol("eps")).derivative) is None


def test_unique_rows_matches_numpy_row_unique():
    rng = np.random.default_rng(7)
    for high in (3, 2**40):  # packed int64 keys; values too large to pack (numpy's row sort)
        key = rng.integers(0, high, size=(300, 5))
        key[::3] = key[1::3]
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        got_first, got_inverse = _unique_rows(key)
        assert got_first.tolist() == first.tolist() and got_inverse.tolist() == inverse.reshape(-1).tolist()


def test_arithmetic_switch(monkeypatch):
    monkeypatch.setenv(ARITHMETIC_ENV, "sympy")
    assert not use_flint()
    monkeypatch.setenv(ARITHMETIC_ENV, "Flint")
    assert use_flint()
    monkeypatch.setenv(ARITHMETIC_ENV, "gmp")
    with pytest.raises(ValueError, match=r"RWSYMBOLIC_ARITHMETIC='gmp' must be 'flint' or 'sympy'"):
        use_flint()
    assert _rational.to_sympy(fmpq(-6, 4)) == sp.Rational(-3, 2)
