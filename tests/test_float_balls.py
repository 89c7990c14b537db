"""The float64 ball arithmetic (rwtoolkit.engines.balls._float_balls): every output ball contains the exact value.

Oracles are independent of the code under test: exact rationals (``fractions``) for + − × ÷, sums and matrix
products at points of the input balls (their ends and midpoints), flint ``arb`` at 300 bits for exp, log, sqrt and
the softmaxes, and the arb ball engine (``ball_arithmetic`` at 256 bits) for whole evaluations of the traced
examples.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from flint import arb, fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from rwtoolkit.engines.balls import Undecided, ball_arithmetic, precision
from rwtoolkit.engines.balls._float_balls import (
    EXP_RELATIVE,
    FLOAT_BALLS,
    LOG_RELATIVE,
    FloatBalls,
    U,
    from_arb,
    hull,
    norm2_upper,
    point,
    to_arb,
    widest_radius,
)
from rwtoolkit.models import CrossEntropy, batch, evaluate, get_model, gradient_steps, rational_positions
from rwtoolkit.tasks import binary_markov_task
from tests.conftest import scaled

ar = FLOAT_BALLS


# oracles ------------------------------------------------------------------------------------------------
def _frac(x: arb) -> Fraction:
    """The exact rational of an exact arb (a lower() or upper())."""
    man, exp = x.man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def _arb(q: Fraction) -> arb:
    return arb(fmpq(q.numerator, q.denominator))


def _ends(b: FloatBalls, index: tuple[int, ...]) -> tuple[Fraction, Fraction] | None:
    m, r = float(b.mid[index]), float(b.rad[index])
    if not math.isfinite(r):
        return None
    return Fraction(m) - Fraction(r), Fraction(m) + Fraction(r)


def _holds(b: FloatBalls, index: tuple[int, ...], exact: Fraction | arb) -> bool:
    """Whether ball ``index`` of ``b`` contains ``exact`` (a rational, or every real of a 300-bit arb)."""
    ends = _ends(b, index)
    if ends is None:
        return True
    lo, hi = ends
    if isinstance(exact, Fraction):
        return lo <= exact <= hi
    return lo <= _frac(exact.lower()) and _frac(exact.upper()) <= hi


def _points(b: FloatBalls, pick: np.ndarray) -> np.ndarray:
    """Exact rationals in the balls: mid − rad, mid or mid + rad entry by entry (``pick`` −1, 0, 1)."""
    out = np.empty(b.shape, dtype=object)
    for index in np.ndindex(*b.shape):
        out[index] = Fraction(float(b.mid[index])) + int(pick[index]) * Fraction(float(b.rad[index]))
    return out


# strategies ---------------------------------------------------------------------------------------------
_mids = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.0, -1.0, 0.1, 1 / 3]),
    st.floats(-1e-300, 1e-300, allow_nan=False),
)


@st.composite
def _balls(draw: st.DrawFn, shape: tuple[int, ...]) -> FloatBalls:
    n = math.prod(shape)
    mids = draw(st.lists(_mids, min_size=n, max_size=n))
    rads = []
    for m in mids:
        kind = draw(st.sampled_from(["zero", "zero", "relative", "wide"]))
        if kind == "zero":
            rads.append(0.0)
        elif kind == "relative":
            rads.append(abs(m) * draw(st.floats(0, 1)) * 2.0 ** -draw(st.integers(0, 200)))
        else:
            rads.append(draw(st.floats(0, 10)))
    return FloatBalls(np.array(mids).reshape(shape), np.array(rads).reshape(shape))


_picks = st.lists(st.sampled_from([-1, 0, 1]), min_size=64, max_size=64).map(np.array)


# primitives: exact rationals ----------------------------------------------------------------------------
@settings(max_examples=scaled(60))
@given(_balls((2, 3)), _balls((2, 3)), _picks)
def test_add_sub_mul_contain_the_exact_value_at_points_of_the_balls(
    a: FloatBalls, b: FloatBalls, pick: np.ndarray
) -> None:
    x, y = _points(a, pick[:6].reshape(2, 3)), _points(b, pick[6:12].reshape(2, 3))
    for out, exact in ((a + b, x + y), (a - b, x - y), (a * b, x * y), (b - a, y - x)):
        for index in np.ndindex(2, 3):
            assert _holds(out, index, exact[index]), (index, out, exact[index])


@settings(max_examples=scaled(60))
@given(_balls((4,)), _balls((4,)), _picks)
def test_division_contains_the_exact_quotient_or_is_the_whole_line(
    a: FloatBalls, b: FloatBalls, pick: np.ndarray
) -> None:
    x, y = _points(a, pick[:4]), _points(b, pick[4:8])
    q = a / b
    for i in range(4):
        if y[i] != 0:
            assert _holds(q, (i,), x[i] / y[i])
        else:
            assert q.rad[i] == math.inf
    c = 3 / b
    for i in range(4):
        if y[i] != 0:
            assert _holds(c, (i,), 3 / y[i])


@settings(max_examples=scaled(60))
@given(_balls((3, 5)), _balls((5, 2)), _picks)
def test_matmul_and_sum_contain_the_exact_value_at_points_of_the_balls(
    a: FloatBalls, b: FloatBalls, pick: np.ndarray
) -> None:
    x, y = _points(a, pick[:15].reshape(3, 5)), _points(b, pick[15:25].reshape(5, 2))
    prod = a @ b
    exact = x @ y
    for index in np.ndindex(3, 2):
        assert _holds(prod, index, exact[index])
    left = a.mid @ b  # a float array on the left: numpy defers to FloatBalls
    exact_left = np.vectorize(Fraction, otypes=[object])(a.mid) @ y
    for index in np.ndindex(3, 2):
        assert _holds(left, index, exact_left[index])
    total = ar.sum(a, 1)
    for i in range(3):
        assert _holds(total, (i,), sum(x[i], Fraction(0)))


def test_inexact_float_results_get_a_radius() -> None:
    # dropping the rounding term of a sum, a product, a matrix product or a sum over an axis fails here
    a, b = point([0.1]), point([0.2])
    s = a + b
    assert s.rad[0] > 0 and _holds(s, (0,), Fraction(0.1) + Fraction(0.2))
    p = point([0.1]) * point([0.3])
    assert p.rad[0] > 0 and _holds(p, (0,), Fraction(0.1) * Fraction(0.3))
    m = point([[1.0, 2.0**-60]]) @ point([[1.0], [1.0]])
    assert m.rad[0, 0] > 0 and _holds(m, (0, 0), 1 + Fraction(2) ** -60)
    t = ar.sum(point([1.0, 2.0**-60, 2.0**-61]), 0)
    assert t.rad > 0 and _holds(t, (), 1 + Fraction(3, 2**61))
    q = point([1.0]) / point([3.0])
    assert q.rad[0] > 0 and _holds(q, (0,), Fraction(1, 3))
    # exact float results may keep radius 0 where nothing rounds: negation, |x|, indexing
    assert (-point([0.1])).rad[0] == 0 and abs(point([-0.1])).mid[0] == 0.1 and float(point([[2.5]])) == 2.5


def test_rationals_become_their_nearest_float_with_a_covering_radius() -> None:
    x = ar.asarray([Fraction(1, 3), "1/2", 7, fmpq(2, 3), Fraction(10**400 + 1, 10**400)])
    assert x.rad[1] == 0 and x.rad[2] == 0 and x.mid[1] == 0.5
    for i, q in enumerate([Fraction(1, 3), Fraction(1, 2), Fraction(7), Fraction(2, 3)]):
        assert _holds(x, (i,), q)
    assert x.rad[0] > 0 and x.rad[0] <= 2 * U * (1 / 3)
    assert _holds(x, (4,), Fraction(10**400 + 1, 10**400))


# elementary functions: arb at 300 bits or more --------------------------------------------------------------------
def _check_elementwise(out: FloatBalls, inputs: FloatBalls, pick: np.ndarray, fn: str) -> None:
    x = _points(inputs, pick)
    for index in np.ndindex(*inputs.shape):
        if fn == "log" and x[index] <= 0:
            continue
        if fn == "sqrt" and x[index] < 0:
            continue
        # arb at 300 bits, more where its enclosure is wider than the ball (a radius of 1e-249 around exp(0) = 1
        # needs ~830 bits; 4000 resolve any float radius): the ball must contain every real of the arb enclosure
        for bits in (300, 1200, 4000):
            with precision(bits):  # lower() and upper() round at the working precision: decide inside
                if _holds(out, index, getattr(_arb(x[index]), fn)()):
                    break
        else:
            raise AssertionError((fn, index, x[index], out.mid[index], out.rad[index]))


@settings(max_examples=scaled(60))
@given(_balls((6,)), _picks)
def test_exp_log_sqrt_contain_arb_at_points_of_the_balls(a: FloatBalls, pick: np.ndarray) -> None:
    small = FloatBalls(np.clip(a.mid, -700, 700), np.minimum(a.rad, 5.0))  # exp of 1e300 is the whole line
    _check_elementwise(ar.exp(small), small, pick[:6], "exp")
    _check_elementwise(ar.log(a), a, pick[6:12], "log")
    _check_elementwise(ar.sqrt(a), a, pick[12:18], "sqrt")


def test_exp_and_log_are_tight_and_contain_arb_over_a_wide_range() -> None:
    rng = np.random.default_rng(7)
    xs = np.concatenate(
        [
            np.linspace(-745.5, 709.7, 1500),
            rng.uniform(-1, 1, 300),
            rng.uniform(-1e-8, 1e-8, 100),
            np.array([0.0, -0.0, 5e-324, 1e-300, math.log(2), -math.log(2) / 2, 709.78, -745.1]),
        ]
    )
    e = ar.exp(point(xs))
    ys = np.concatenate(
        [
            np.exp(np.linspace(-744, 709, 1000)),
            1 + rng.uniform(-1e-3, 1e-3, 300),
            np.array(
                [
                    5e-324,
                    2.2250738585072014e-308,
                    1.0,
                    1 + 2**-52,
                    1 - 2**-53,
                    2.0,
                    0.5,
                    1.7976931348623157e308,
                ]
            ),
        ]
    )
    lg = ar.log(point(ys))
    with precision(300):
        for i, x in enumerate(xs):
            assert _holds(e, (i,), _arb(Fraction(float(x))).exp())
        for i, y in enumerate(ys):
            assert _holds(lg, (i,), _arb(Fraction(float(y))).log())
    normal = (xs > -708) & (xs < 709)
    # measured 2026-12-04 on 10^5 points: relative radius of exp ≤ 2.1e-15, of log ≤ 1.2e-15 (log 1 = 0 exact)
    assert (e.rad[normal] / e.mid[normal]).max() < 1e-14
    nonzero = lg.mid != 0
    assert (lg.rad[nonzero] / np.abs(lg.mid[nonzero])).max() < 1e-14
    assert EXP_RELATIVE < 10 * U and LOG_RELATIVE <= 8 * U
    assert ar.exp(point([0.0])).rad[0] == 0 and ar.log(point([1.0])).rad[0] == 0


@settings(max_examples=scaled(40))
@given(_balls((2, 4)), _picks)
def test_softmax_and_log_softmax_contain_arb(a: FloatBalls, pick: np.ndarray) -> None:
    a = FloatBalls(np.clip(a.mid, -50, 50), np.minimum(a.rad, 2.0))
    x = _points(a, pick[:8].reshape(2, 4))
    keep = np.array([[True, False, True, True], [True, True, False, False]])
    s, ls, ms = ar.softmax(a), ar.log_softmax(a), ar.masked_softmax(a, keep)
    assert np.all(ms.mid[~keep] == 0) and np.all(ms.rad[~keep] == 0)
    with precision(300):
        for n in range(2):
            exps = [_arb(q).exp() for q in x[n]]
            total = sum(exps, arb(0))
            kept = sum((e for e, k in zip(exps, keep[n], strict=True) if k), arb(0))
            for j in range(4):
                assert _holds(s, (n, j), exps[j] / total)
                assert _holds(ls, (n, j), _arb(x[n, j]) - total.log())
                if keep[n, j]:
                    assert _holds(ms, (n, j), exps[j] / kept)


# conversions and helpers ----------------------------------------------------------------------------------
def test_arb_conversions_keep_the_enclosure() -> None:
    with precision(300):
        third = arb(1) / 3
        values = np.array([third, arb(2).exp(), arb("1e-320 +/- 1e-330"), arb(0), arb(-5, 1)], dtype=object)
        b = from_arb(values)
        for i, v in enumerate(values):
            assert _holds(b, (i,), v)
        back = to_arb(b)
        for i, v in enumerate(values):
            assert back[i].contains(v)
    assert b.rad[3] == 0


def test_hull_point_widest_radius_and_norm2_upper() -> None:
    h = hull(np.array([1.0, -3.0]), np.array([2.0, 5.0]))
    for i, (lo, hi) in enumerate([(1, 2), (-3, 5)]):
        assert _holds(h, (i,), Fraction(lo)) and _holds(h, (i,), Fraction(hi))
    assert widest_radius(h) >= 4 and point([1.5]).rad[0] == 0
    with pytest.raises(ValueError, match=r"hull: lo must be <= hi entrywise, entry \(1,\)"):
        hull(np.array([0.0, 2.0]), np.array([1.0, 1.0]))
    rng = np.random.default_rng(3)
    for v in (rng.uniform(0, 1, 50) * 10.0 ** rng.integers(-320, 300, 50), np.array([3.0, 4.0]), np.zeros(3)):
        bound = norm2_upper(FloatBalls(np.zeros(v.shape), v))
        exact = sum((Fraction(float(t)) ** 2 for t in v), Fraction(0))
        assert exact <= Fraction(bound) ** 2 <= exact * Fraction(1000001, 1000000) ** 2 + Fraction(1, 10**600)
    assert norm2_upper(np.array([3.0, 4.0])) >= 5.0


def test_relu_sign_and_predict_decide_only_what_the_balls_decide() -> None:
    on = ar.positive(FloatBalls(np.array([2.0, 0.0, -1.0]), np.array([1.0, 0.0, 0.5])))
    assert on.mid.tolist() == [1.0, 0.0, 0.0] and not on.rad.any()
    with pytest.raises(Undecided, match=r"straddles 0 \(entry \(0, 1\)"):
        ar.positive(FloatBalls(np.array([[1.0, 1e-30]]), np.array([[0.0, 1e-29]])))
    assert ar.sign(point(-2.0)) == -1 and ar.sign(point(0.0)) == 0 and ar.sign(FloatBalls(0.0, 1.0)) is None
    f = FloatBalls(np.array([[0.1, 0.7, 0.2], [0.5, 0.5, 0.0]]), np.full((2, 3), 1e-3))
    assert ar.predict(f) is None
    assert ar.predict(f[:1]).tolist() == [1]


def test_gelu_is_refused_naming_the_arb_ball_engine() -> None:
    from rwtoolkit.models import Tape

    with pytest.raises(ValueError, match="ball_arithmetic"):
        Tape(ar).gelu(point([0.5]))


# whole evaluations: the arb ball engine at 256 bits ---------------------------------------------------------
#: The largest radius of each gradient over its largest |entry| (and the loss's relative radius), measured
#: 2026-12-04 on binary_markov (1/3, 3/5) N = 3 from each example's own start: at most 8.4e-12 (one_layer),
#: 1.1e-10 (two_layer), 2.1e-12 (with_mlp), the loss below 8.1e-14; the pin is 9x the largest.
NORMWISE_RELATIVE_RADIUS = 1e-9


def _evaluation(arithmetic: object, model: object, task: object) -> object:
    pop = task.population()  # type: ignore[attr-defined]
    P = arithmetic.asarray(rational_positions(pop.N, Fraction(1)))  # type: ignore[attr-defined]
    data = batch(arithmetic, pop.tokens, pop.labels, [Fraction(q) for q in pop.exact_probs()], pop.K, P)  # type: ignore[arg-type]
    params = dict(model.own_start(arithmetic, data.inputs.sizes, "own"))  # type: ignore[attr-defined]
    return evaluate(model, arithmetic, params, data, CrossEntropy("lm")), params, data  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["one_layer", "two_layer", "with_mlp"])
def test_evaluate_of_the_traced_examples_contains_the_arb_engine(name: str) -> None:
    model = get_model(f"examples/nanogpt_attention.py:{name}")
    task = binary_markov_task("1/3", "3/5", 3)
    ours, params, data = _evaluation(ar, model, task)
    with precision(256):
        theirs, _, _ = _evaluation(ball_arithmetic(), model, task)
    assert _holds(ours.loss, (), theirs.loss)
    assert float(ours.loss.rad) <= NORMWISE_RELATIVE_RADIUS * abs(float(ours.loss.mid))
    for key, g in ours.gradient.items():
        for index in np.ndindex(*g.shape):
            assert _holds(g, index, theirs.gradient[key][index]), (key, index)
        assert g.rad.max() <= NORMWISE_RELATIVE_RADIUS * np.abs(g.mid).max(), key
    steps = list(gradient_steps(model, ar, params, data, CrossEntropy("lm"), Fraction(1, 2), 2))
    assert len(steps) == 3 and float(steps[-1].loss.mid) < float(steps[0].loss.mid)
