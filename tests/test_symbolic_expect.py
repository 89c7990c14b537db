"""rwtoolkit.engines.exact.engine._groups against plain per-input sums: exact_sum on both arithmetics, the group pass off zero init.

The oracles are independent of the engine: ``fractions.Fraction`` sums, and a per-input evaluation of the
reduced model written out here (logits x_jᵀ w_tok + μ c_j, softmax, f = V X S, z = e_yᵀ f), its loss
differentiated by SymPy for the gradients (docs/theory.md#reduction).
"""

from __future__ import annotations

import functools
import io
import random
import re
import sys
from fractions import Fraction

import mpmath
import pytest
import sympy as sp

import rwtoolkit.engines.exact.engine._derive
import rwtoolkit.engines.exact.engine._groups
from rwtoolkit.engines.exact import derive, derive_estimate
from rwtoolkit.engines.exact.arithmetic._atoms import definition, exp_atom
from rwtoolkit.engines.exact.arithmetic._rational import ARITHMETIC_ENV, exact_sum
from rwtoolkit.engines.exact.engine._derive import make_loss
from rwtoolkit.engines.exact.engine._groups import group_pass
from rwtoolkit.engines.exact.engine._population import Loss, population_inputs, rooted_walks
from rwtoolkit.engines.exact.engine._uniform import uniform_pass
from rwtoolkit.tasks import CircleWalk, lazy_circle_walk, qa_task1, symbol


@pytest.mark.parametrize("arithmetic", ["sympy", "flint"])
def test_exact_sum_equals_fraction_sums_with_and_without_other_terms(monkeypatch, arithmetic):
    """Rational terms summed exactly (0, 1, 2, 3, 5 and 8 of them, an odd count pairs one term over), symbols kept."""
    monkeypatch.setenv(ARITHMETIC_ENV, arithmetic)
    rng = random.Random(12)
    x, y = sp.symbols("x y")
    for n in (0, 1, 2, 3, 5, 8):
        fracs = [Fraction(rng.randint(-(10**12), 10**12), rng.randint(1, 10**9)) for _ in range(n)]
        terms = [sp.Rational(f.numerator, f.denominator) for f in fracs]
        total = sum(fracs, Fraction(0))
        expected = sp.Rational(total.numerator, total.denominator)
        assert exact_sum(terms) == expected, (arithmetic, n)
        mixed = [x, *terms[: n // 2], 3 * y, *terms[n // 2 :]]
        assert sp.expand(exact_sum(mixed) - (expected + x + 3 * y)) == 0, (arithmetic, n)
    assert exact_sum([x]) == x and exact_sum([x, y]) == x + y
    assert exact_sum([sp.Rational(1, 2), x]) == x + sp.Rational(1, 2)


# --- the group pass against a per-input evaluation of the reduced model -------------------------

#: Both sides at 60 digits; values are O(1)-O(10), so 1e-40 leaves 19 digits of margin for the
#: central differences below (error ~ h² = 1e-50) while a formula error shows at O(1e-3).
_DIGITS, _TOL = 60, mpmath.mpf("1e-40")


def _log_loss(eps: sp.Expr) -> Loss:
    """ℓ(z) = -log(z + ε) and ℓ'(z) = -1/(z + ε), written out here (not rwtoolkit.engines.exact's make_loss)."""
    return Loss("log", lambda z: -sp.log(z + eps), lambda z: -1 / (z + eps))


def _mpf(x, memo: dict | None = None) -> mpmath.mpf:
    """An exact real value in mpmath at the working precision: each distinct subexpression evaluated once.

    Named exponential atoms evaluate as exp of their exponent; SymPy's evalf of the expanded nested
    exponentials is orders of magnitude slower on late steps.
    """
    memo = {} if memo is None else memo
    x = sp.sympify(x)
    if x in memo:
        return memo[x]
    if x.is_Rational:
        value = mpmath.mpf(int(x.p)) / int(x.q)
    elif definition(x) is not None:
        value = mpmath.exp(_mpf(definition(x), memo))
    elif isinstance(x, sp.exp):
        value = mpmath.exp(_mpf(x.args[0], memo))
    elif isinstance(x, sp.log):
        value = mpmath.log(_mpf(x.args[0], memo))
    elif x.is_Add:
        value = mpmath.fsum(_mpf(a, memo) for a in x.args)
    elif x.is_Mul:
        value = mpmath.fprod(_mpf(a, memo) for a in x.args)
    elif x.is_Pow:
        value = _mpf(x.base, memo) ** _mpf(x.exp, memo)
    else:
        raise TypeError(f"no numeric value for {x!r}")
    memo[x] = value
    return value


class _Reduced:
    """The reduced model per input, as the paper writes it, in 60-digit floats (mpmath, not the engine).

    logit_j = w_tok[s_j] + μ c_j (j < N), logit_N = μ c_N; S = softmax(logits); f = Σ_{j<N} S_j V[:, s_j];
    z = f[y]; L = Σ_inputs prob ℓ(z). Gradients by central differences of L (step 1e-25).
    """

    def __init__(self, pop, mu, eps) -> None:
        self.pop, self.K, self.N = pop, pop.K, pop.N
        self.mu, self.eps = _mpf(mu), _mpf(eps)
        self.probs = [_mpf(q) for q in pop.exact_probs()]

    def evaluate(self, theta: list) -> tuple:
        """Per input logits, S, f and the loss at θ = (V row-major, w_tok, c)."""
        K, N = self.K, self.N
        V, w, c = theta[: K * K], theta[K * K : K * K + K], theta[K * K + K :]
        logits, S, f, loss = [], [], [], mpmath.mpf(0)
        for row, y, q in zip(self.pop.tokens.tolist(), self.pop.labels.tolist(), self.probs, strict=True):
            lg = [w[s] + self.mu * c[j] for j, s in enumerate(row)] + [self.mu * c[N - 1]]
            e = [mpmath.exp(x) for x in lg]
            att = [x / mpmath.fsum(e) for x in e]
            fx = [mpmath.fsum(att[j] * V[k * K + s] for j, s in enumerate(row)) for k in range(K)]
            logits.append(lg)
            S.append(att)
            f.append(fx)
            loss += q * -mpmath.log(fx[y] + self.eps)
        return logits, S, f, loss

    def gradient(self, theta: list) -> list:
        """∂L/∂θ_n = (L(θ + h e_n) - L(θ - h e_n)) / 2h + O(h²): h = 1e-25 at 100 digits (rounding 1e-75)."""
        out = []
        with mpmath.workdps(100):
            h = mpmath.mpf("1e-25")
            for n in range(len(theta)):
                up, down = list(theta), list(theta)
                up[n] += h
                down[n] -= h
                out.append((self.evaluate(up)[3] - self.evaluate(down)[3]) / (2 * h))
        return out


def _close(got, want) -> bool:
    return abs(_mpf(got) - want) < _TOL


def _check_pass(gp, inputs, ref: _Reduced, theta: list, gradients: bool) -> None:
    """Every field of a group pass against the per-input reference (full population for the means)."""
    pop, K, N, L = ref.pop, ref.K, ref.N, ref.N - 1
    logits, S, f, loss = ref.evaluate(theta)
    probs = pop.exact_probs()
    # per input of the summed set (the first inputs.size inputs of the population, rooted or whole)
    for i in range(inputs.size):
        g = int(gp.inverse[i])
        assert gp.labels[g] == int(pop.labels[i])
        pairs = [(int(gp.cls[j]), int(pop.tokens[i, j])) for j in range(L)]
        for j, pr in enumerate(pairs):
            assert _close(gp.logit_of[g][pr], logits[i][j]) and _close(gp.S_of[g][pr], S[i][j])
        assert _close(gp.logit_query, logits[i][N - 1]) and _close(gp.S_query[g], S[i][N - 1])
        assert all(_close(gp.f[g][k], f[i][k]) for k in range(K))
        assert _close(gp.z[g], f[i][int(pop.labels[i])])
    for g in range(len(gp.labels)):  # the weight of a group: the probability of its summed inputs
        assert gp.weight[g] == sum(probs[i] for i in range(inputs.size) if int(gp.inverse[i]) == g)
    # population means over the whole population
    q = ref.probs
    for j in range(N):
        assert _close(gp.mean_attention[j], mpmath.fsum(a * b[j] for a, b in zip(q, S, strict=True)))
        assert _close(gp.mean_logits[j], mpmath.fsum(a * b[j] for a, b in zip(q, logits, strict=True)))
    assert all(
        _close(gp.mean_f[k], mpmath.fsum(a * b[k] for a, b in zip(q, f, strict=True))) for k in range(K)
    )
    assert _close(gp.loss, loss)
    correct = sp.Integer(0)
    for prob, fx, y in zip(probs, f, pop.labels.tolist(), strict=True):
        top = max(fx)
        assert sorted(fx)[-2] < top - mpmath.mpf("1e-20")  # no near tie: the smallest argmax is clear
        correct += prob * int(fx.index(top) == y)
    assert gp.accuracy == correct
    if not gradients:
        assert gp.grad_V is None and gp.grad_tok is None and gp.grad_c is None
        return
    grad = ref.gradient(theta)
    assert all(_close(gp.grad_V[n], grad[n]) for n in range(K * K))
    assert all(_close(gp.grad_tok[k], grad[K * K + k]) for k in range(K))
    assert all(_close(gp.grad_c[j], grad[K * K + K + j] / ref.mu) for j in range(N))  # ∂L/∂c_j = μ E[δ_j]


def _state(K: int, N: int, rotation: bool):
    """A rational state with unequal logits and V > 0 (z > 0 > -ε): V circulant and w_tok ∝ 1 under rotation.

    c_2 = c_3 puts positions 2 and 3 into one class: walks 0 1 2 and 0 2 1 with the same label share a group.
    """
    R = sp.Rational
    if rotation:
        V = sp.Matrix(K, K, lambda a, b: [R(3, 5), R(1, 4), R(7, 6), R(1, 3)][(a - b) % K])
        w_tok = [R(2, 7)] * K
    else:
        V = sp.Matrix(K, K, lambda a, b: R(3 * a - 2 * b + 5, 4 + a + b))
        w_tok = [R(1, 2), R(-1, 3), R(1, 5), R(0)][:K]
    c = [R(1, 3), R(-1, 2), R(-1, 2), R(3, 4)][: N - 1] + [R(1, 5)]
    return V, w_tok, c


@pytest.mark.parametrize("gradients", [True, False])
@pytest.mark.parametrize("rotation", [True, False])
def test_group_pass_equals_per_input_sums_of_the_reduced_model(gradients, rotation):
    """CircleWalk(3, 4, 1/3), μ = 3/2, log-loss: every field of a pass at a state with unequal attention."""
    task, mu, eps = CircleWalk(3, 4, "1/3"), sp.Rational(3, 2), sp.Rational(1, 10)
    inputs = rooted_walks(task) if rotation else population_inputs(task.population())
    V, w_tok, c = _state(3, 4, rotation)
    gp = group_pass(inputs, V, w_tok, c, mu, _log_loss(eps), gradients)
    assert gp.rotation is rotation and len(gp.labels) < inputs.size  # inputs do share groups
    with mpmath.workdps(_DIGITS):
        ref = _Reduced(task.population(), mu, eps)
        _check_pass(gp, inputs, ref, [_mpf(x) for x in [*V, *w_tok, *c]], gradients)


# --- derive: the steps, the losses and the per-input values -------------------------------------


def _reference_descent(task, steps: int, eta, mu, eps) -> list[list]:
    """θ(0..steps) of GD from zero on the reduced model at 60 digits: V -= η ∂L/∂V, w_tok -= ημ ∂L/∂w_tok, c -= η ∂L/∂c.

    The full model's W moves by -η ∇_W L, and w = W x̃_N with ‖x̃_N‖² = μ, so w_tok moves by -ημ ∂L/∂w_tok;
    logit_j depends on c_j through μ c_j, so c = w_pos's coordinates move by -ημ E[δ_j] = -η ∂L/∂c_j.
    """
    ref = _Reduced(task.population(), mu, eps)
    K, N = task.K, task.N
    eta_f, mu_f = _mpf(eta), _mpf(mu)
    theta = [mpmath.mpf(0)] * (K * K + K + N)
    history = [list(theta)]
    for _ in range(steps):
        grad = ref.gradient(theta)
        scale = [eta_f] * (K * K) + [eta_f * mu_f] * K + [eta_f] * N
        theta = [x - s * g for x, s, g in zip(theta, scale, grad, strict=True)]
        history.append(list(theta))
    return history


@pytest.mark.parametrize("rotate", [True, False])
def test_derive_steps_equal_gradient_descent_on_the_reduced_model(rotate):
    """CircleWalk(3, 3, 2/5), η = 7/10, μ = 3/2, ε = 1/10: θ(t), the means and the per-input values, t <= 3."""
    task, eta, mu, eps = CircleWalk(3, 3, "2/5"), sp.Rational(7, 10), sp.Rational(3, 2), sp.Rational(1, 10)
    tr = derive(task, 3, eta=eta, eps=eps, mu=mu, rotate=rotate)
    assert (tr.K, tr.N, tr.population_size, tr.inputs.rotation) == (3, 3, 12, rotate)
    assert [s.t for s in tr.states] == [0, 1, 2, 3]
    pop = task.population()
    with mpmath.workdps(_DIGITS):
        ref = _Reduced(pop, mu, eps)
        for state, theta in zip(tr.states, _reference_descent(task, 3, eta, mu, eps), strict=True):
            values = [*state.V, *state.w_tok, *state.c]
            assert all(_close(v, x) for v, x in zip(values, theta, strict=True)), state.t
            if state.t < 2:
                continue
            # t = 2 through the plain values, t = 3 through the atom form (its expansion is slow in SymPy)
            value = functools.partial(getattr, state) if state.t == 2 else state.atom_form
            logits, S, f, loss = ref.evaluate(theta)
            assert _close(value("loss"), loss)
            q = ref.probs
            assert all(
                _close(value("mean_attention")[j], mpmath.fsum(a * b[j] for a, b in zip(q, S, strict=True)))
                and _close(
                    value("mean_logits")[j], mpmath.fsum(a * b[j] for a, b in zip(q, logits, strict=True))
                )
                for j in range(3)
            )
            assert all(
                _close(value("mean_f")[k], mpmath.fsum(a * b[k] for a, b in zip(q, f, strict=True)))
                for k in range(3)
            )
            assert value("accuracy") == sum(
                (
                    prob * int(fx.index(max(fx)) == y)
                    for prob, fx, y in zip(pop.exact_probs(), f, pop.labels.tolist(), strict=True)
                ),
                sp.Integer(0),
            )  # the smallest argmax (ties have measure zero here: f's entries differ by more than 1e-20)
            assert all(sorted(fx)[-2] < max(fx) - mpmath.mpf("1e-20") for fx in f)
            # per input, in the order of task.population() (all K rotations of the rooted walks)
            rows = [value(name) for name in ("logits", "S", "f", "z")]
            assert [len(r) for r in rows] == [pop.size] * 4
            for i in range(pop.size):
                assert all(_close(rows[0][i][j], logits[i][j]) for j in range(3))
                assert all(_close(rows[1][i][j], S[i][j]) for j in range(3))
                assert rows[2][i].shape == (3, 1) and all(_close(rows[2][i][k], f[i][k]) for k in range(3))
                assert _close(rows[3][i], f[i][int(pop.labels[i])])
    assert any(x != 0 for x in tr.states[2].c) and any(x != 0 for x in tr.states[2].w_tok)


def _root_sum(n: int) -> sp.Expr:
    """-(√2 + √3 + √5 + ...) over the first n primes: 3n SymPy operations, no atoms."""
    return -sp.Add(*[sp.sqrt(sp.prime(i)) for i in range(1, n + 1)])


def test_the_log_loss_is_minus_log_z_plus_eps_and_refuses_z_at_or_below_minus_eps():
    """ℓ = -log(z + ε), ℓ' = -1/(z + ε); z + ε <= 0 is refused by both, named exactly or as its nearest double."""
    eps = sp.Rational(1, 10)
    loss = make_loss("log", eps)
    assert loss.name == "log"
    assert loss.value(sp.Rational(9, 10)) == 0  # -log(1), evaluated
    assert loss.value(sp.Rational(2, 5)) == sp.log(2) and loss.derivative(sp.Rational(2, 5)) == -2
    z = sp.Symbol("z")
    assert loss.value(z) == -sp.log(z + eps) and loss.derivative(z) == -1 / (
        z + eps
    )  # sign unknown: no check
    head = "the log-loss -log(z + eps) is undefined at "
    for bad, shown in [(-eps, "z = -1/10"), (sp.Integer(-1), "z = -1")]:  # z + ε = 0 is refused too
        for fn in (loss.value, loss.derivative):
            with pytest.raises(ValueError, match=f"^{re.escape(head + shown)} \\(z \\+ eps <= 0\\)$"):
                fn(bad)
    # 40 operations or more without atoms: shown as the nearest double; 39: shown exactly
    for z, ops in [(_root_sum(13) - sp.sqrt(2), 40), (_root_sum(14), 42)]:
        assert sp.count_ops(z) == ops
        shown = f"z ≈ {float(sp.N(z, 50)):.17g}"
        with pytest.raises(ValueError, match=f"^{re.escape(head + shown)} \\(z \\+ eps <= 0\\)$"):
            loss.value(z)
    short = _root_sum(13)
    assert sp.count_ops(short) == 39
    with pytest.raises(ValueError, match=f"^{re.escape(head + 'z = ' + str(short))} \\(z \\+ eps <= 0\\)$"):
        loss.value(short)
    long = _root_sum(14)
    # with exponential atoms the exact form is shown, however long (expanded: exp, not the atom's name)
    atom = exp_atom(sp.Rational(1, 3))
    with pytest.raises(
        ValueError, match=f"^{re.escape(head + 'z = ' + str(long - sp.exp(sp.Rational(1, 3))))} "
    ):
        loss.value(long - atom)


def test_named_abstract_and_callable_losses():
    """squared (1 - z)², exp e^{-z}, "any" (ell, dell), a callable named by its __name__ or "custom"."""
    z, third = sp.Symbol("z"), sp.Rational(1, 3)
    squared, exp = make_loss("squared", sp.Rational(1, 10)), make_loss("exp", sp.Rational(1, 10))
    assert (squared.name, squared.value(third), squared.derivative(third)) == (
        "squared",
        sp.Rational(4, 9),
        -sp.Rational(4, 3),
    )
    assert (exp.name, exp.value(third), exp.derivative(third)) == ("exp", sp.exp(-third), -sp.exp(-third))
    anyloss = make_loss("any", sp.Rational(1, 10))
    assert anyloss.name == "any"
    assert anyloss.value(z) == sp.Function("ell")(z) and anyloss.derivative(z) == sp.Function("dell")(z)

    def cubic(v):
        return v**3 - 2 * v

    named = make_loss(cubic, sp.Rational(1, 10))
    assert (named.name, named.value(third), named.derivative(third)) == (
        "cubic",
        -sp.Rational(17, 27),
        -sp.Rational(5, 3),
    )
    assert make_loss(lambda v: v**2, 1).name == "<lambda>"
    a = sp.Symbol("a")  # a loss with a parameter: differentiated in z only
    assert make_loss(lambda v: a * v**2, 1).derivative(third) == 2 * a / 3
    unnamed = make_loss(functools.partial(lambda v, a: a * v**2, a=3), 1)
    assert (unnamed.name, unnamed.value(third), unnamed.derivative(third)) == ("custom", third, 2)
    with pytest.raises(
        ValueError, match=r"^loss='hinge' is not one of log, squared, exp, any \(or a callable\)$"
    ):
        make_loss("hinge", 1)


def test_derive_refuses_non_positive_rates_and_other_tasks_with_their_values():
    task = CircleWalk(3, 3, "1/2")
    for kw, message in [
        ({"eta": 0}, "eta=0 must be > 0"),
        ({"eta": "-1/2"}, "eta=-1/2 must be > 0"),
        ({"mu": 0}, "mu=0 must be > 0"),
        ({"mu": -2}, "mu=-2 must be > 0"),
        ({"eps": "-1/10"}, "eps=-1/10 must be > 0"),
        ({"eta": True}, "eta=True is not a number"),
        ({"eps": True}, "eps=True is not a number"),
        ({"mu": True}, "mu=True is not a number"),
    ]:
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            derive(task, 1, **kw)
    for steps, message in [
        (1.5, "steps=1.5 must be an integer >= 0"),
        (-1, "steps=-1 is out of range: steps must be >= 0"),
    ]:
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            derive(task, steps)
    message = "task='walk' must be a CircleWalk or a FiniteTask (e.g. qa_task1())"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        derive("walk", 1)
    symbolic = derive(task, 1, eta="eta", mu="mu", eps="eps")  # symbols are positive: accepted
    assert (symbolic.eta, symbolic.mu, symbolic.eps) == (symbol("eta"), symbol("mu"), symbol("eps"))
    rational = derive(task, 0, eta="7/10", mu="3/2", eps="1/20")
    assert (rational.eta, rational.mu, rational.eps) == (
        sp.Rational(7, 10),
        sp.Rational(3, 2),
        sp.Rational(1, 20),
    )
    assert len(derive(task, 0).states) == 1


def test_derive_sums_over_the_whole_population_of_a_finite_task_and_without_rotation():
    finite = derive(qa_task1(), 1, mu=1)
    assert finite.inputs.rotation is False and finite.inputs.size == qa_task1().population().size
    walk = derive(CircleWalk(3, 3, "1/2"), 1, rotate=False)
    assert walk.inputs.rotation is False and walk.inputs.size == 12


def test_derive_estimate_is_twice_as_large_from_two_steps_with_symbolic_probabilities():
    """Rational functions of p inside the atoms from t = 2: measured 0.6x to 1.6x (docs/guide/exact.md)."""
    rational, symbolic = derive_estimate(CircleWalk(4, 5, "1"), 2), derive_estimate(CircleWalk(4, 5, "p"), 2)
    assert (symbolic - 0.5) == pytest.approx((rational - 0.5) * 2, rel=1e-12)  # 0.5 s: the start
    assert derive_estimate(CircleWalk(4, 5, "p"), 1) == derive_estimate(CircleWalk(4, 5, "1"), 1)
    lazy = lazy_circle_walk(3, 3, "1/2", "q")  # a finite task whose probabilities hold the symbol q
    plain = lazy_circle_walk(3, 3, "1/2", "1/3")
    assert (derive_estimate(lazy, 2) - 0.5) == pytest.approx((derive_estimate(plain, 2) - 0.5) * 2, rel=1e-12)


def test_derive_estimate_is_the_documented_cost_model():
    """rwtoolkit.engines.exact.engine._cost by hand: G = 2^(N-1) rooted walks (or the whole population), 0.5 s to start,
    0.04 s per uniform step plus 3e-6 s (t = 0) and 6e-6 s (t = 1) per summed input, 5e-5 s per input·term
    at t = 2, (1.2e-3 + 2.5e-3) s per input for the loss and accuracy from t = 2, 3e-4·G²·(t - 2) s per pass
    from t = 3 and 0.3 of the last one."""
    walk = CircleWalk(5, 6, "3/10")
    G, terms, readouts = 32, 11, (1.2e-3 + 2.5e-3) * 32
    t0, t1 = 0.04 + 3e-6 * G, 0.04 + 6e-6 * G
    t2 = 5e-5 * G * terms + readouts
    t3 = 3e-4 * G * G * 1 + readouts
    t4 = 3e-4 * G * G * 2 * 1.3 + readouts
    assert derive_estimate(walk, 4) == pytest.approx(0.5 + t0 + t1 + t2 + t3 + t4, rel=1e-12)  # 2.06 s
    assert derive_estimate(walk, 0) == pytest.approx(0.5 + t0, rel=1e-12)
    G = 160  # without rotation: the whole population
    assert derive_estimate(walk, 2, rotate=False) == pytest.approx(
        0.58 + 9e-6 * G + 5e-5 * G * terms + (1.2e-3 + 2.5e-3) * G, rel=1e-12
    )
    qa = qa_task1()
    G = qa.population().size
    assert derive_estimate(qa, 2) == pytest.approx(
        0.58 + 9e-6 * G + 5e-5 * G * (qa.N + qa.K) + 3.7e-3 * G, rel=1e-12
    )
    # 2^22 rooted walks are at the limit (N = 23), 2^23 are refused with the enumeration limit
    assert derive_estimate(CircleWalk(3, 23, "1/2"), 0) == pytest.approx(0.54 + 3e-6 * 2**22, rel=1e-12)
    with pytest.raises(
        ValueError, match=r"^CircleWalk\(K=3, N=24\): exact expectations enumerate 2\^\(N-1\)"
    ):
        derive_estimate(CircleWalk(3, 24, "1/2"), 0)
    # without rotation the whole population is counted, and refused by its own (smaller) limit
    with pytest.raises(ValueError, match=r"^CircleWalk\(K=3, N=24\): the exact population has K\*2\^\(N-1\)"):
        derive_estimate(CircleWalk(3, 24, "1/2"), 0, rotate=False)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("progress", "terminal", "shown"), [(True, True, True), (False, True, False), (True, False, False)]
)
def test_the_progress_bar_counts_steps_only_when_asked_and_on_a_terminal(
    monkeypatch, progress, terminal, shown
):
    err = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    derive(CircleWalk(3, 3, "1/2"), 2, progress=progress)
    text = err.getvalue()
    if not shown:
        assert text == ""
        return
    counts = re.findall(r"\rrw derive: +\d+%\|[# ]*\| (\d)/2 \[", text)  # tqdm may skip a redraw
    assert counts[0] == "0" and counts[-1] == "2" and set(counts) <= {"0", "1", "2"}  # one step per update
    assert re.search(r"\| 2/2 \[[^]]*(step/s|s/step)\]\n$", text)  # in steps, closed at the end


def test_step_state_names_its_values_and_prints_its_parameters():
    """repr from V(1) of Lemma C.1 (K = N = 3, p = 1/2, η = μ = 1, ε = 1/10): V(1) = (10/9)(Πᵀ + (Πᵀ)²)."""
    task = CircleWalk(3, 3, "1/2")
    PiT = task.transition_matrix().T
    V1 = sp.Rational(10, 9) * (PiT + PiT**2)
    state = derive(task, 1, mu=1).states[1]
    assert state.V == V1
    assert repr(state) == f"StepState(t=1, V={V1.tolist()}, w_tok=[0, 0, 0], c=[0, 0, 0])"
    with pytest.raises(AttributeError, match=r"^StepState has no value 'bogus'$"):
        state.atom_form("bogus")
    assert state.evaluated is state.evaluated  # evaluated once


def test_derive_estimate_enumerates_no_walks_below_the_limit(monkeypatch):
    """The estimate is called before any work: it asks for the rooted walks only to refuse N with 2^(N-1) > 2²²."""
    calls = []

    def spy(task):
        calls.append(task.N)
        return rooted_walks(task)

    monkeypatch.setattr(rwtoolkit.engines.exact.engine._derive, "rooted_walks", spy)
    for N in (3, 22, 23):  # 2^22 rooted walks at N = 23: at the limit, not enumerated
        derive_estimate(CircleWalk(3, N, "1/2"), 1)
    derive_estimate(CircleWalk(3, 5, "1/2"), 1, rotate=False)
    assert calls == []
    with pytest.raises(ValueError, match=r"enumerate 2\^\(N-1\)"):
        derive_estimate(CircleWalk(3, 24, "1/2"), 1)
    assert calls == [24]


def test_a_uniform_state_with_equal_nonzero_c_takes_the_fmpq_pass_with_the_sympy_values(monkeypatch):
    """c_j = 1/2 for every j and w_tok = 0: every logit is μ/2, so S_j = 1/N and the fmpq pass applies (μ rational)."""
    taken = []

    def spy(*args, **kwargs):
        out = uniform_pass(*args, **kwargs)
        taken.append(out is not None)
        return out

    task, mu, eps = CircleWalk(3, 4, "1/3"), sp.Rational(3, 2), sp.Rational(1, 10)
    V, _, _ = _state(3, 4, rotation=False)
    state = (V, [sp.Integer(0)] * 3, [sp.Rational(1, 2)] * 4)
    inputs = population_inputs(task.population())
    monkeypatch.setattr(rwtoolkit.engines.exact.engine._groups, "uniform_pass", spy)
    monkeypatch.setenv(ARITHMETIC_ENV, "sympy")
    reference = group_pass(inputs, *state, mu, _log_loss(eps), True)
    monkeypatch.setenv(ARITHMETIC_ENV, "flint")
    fast = group_pass(inputs, *state, mu, _log_loss(eps), True)
    assert taken == [True]  # the SymPy pass does not call it; the flint pass takes it
    assert fast.mean_logits == reference.mean_logits == [mu / 2] * 4
    assert (fast.grad_V, fast.grad_tok, fast.grad_c) == (
        reference.grad_V,
        reference.grad_tok,
        reference.grad_c,
    )


def test_derive_defaults(monkeypatch):
    """η = 1, ε = 1/10, μ the symbol "mu", the log-loss, rotation on, no progress bar even on a terminal."""
    err = _Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    tr = derive(CircleWalk(3, 3, "1/2"), 1)
    assert (tr.eta, tr.eps, tr.mu, tr.ell.name, tr.inputs.rotation) == (
        1,
        sp.Rational(1, 10),
        symbol("mu"),
        "log",
        True,
    )
    assert err.getvalue() == ""


def test_the_term_by_term_step_is_taken_only_by_the_flint_arithmetic_on_exponential_atoms(monkeypatch):
    """``descend`` (fmpq scaling of each term) updates θ only where python-flint is on and the gradient has atoms.

    From zero init the first two gradients are rational (S is uniform until w_tok and c move, which they
    do only after V(1) ≠ 0), the third has exponential atoms: 9 + 3 + 3 coordinates at K = N = 3. The
    SymPy arithmetic, the reference the flint path is compared with, never calls it.
    """
    calls: list[int] = []
    descend = rwtoolkit.engines.exact.engine._derive.descend

    def spy(x, rate, g):
        calls.append(1)
        return descend(x, rate, g)

    monkeypatch.setattr(rwtoolkit.engines.exact.engine._derive, "descend", spy)
    for arithmetic, expected in [("sympy", 0), ("flint", 15)]:
        calls.clear()
        monkeypatch.setenv(ARITHMETIC_ENV, arithmetic)
        derive(CircleWalk(3, 3, "2/5"), 3, eta="7/10", mu="3/2")
        assert len(calls) == expected, arithmetic
