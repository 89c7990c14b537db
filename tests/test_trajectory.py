"""One trajectory type across arithmetics: every engine's result is a ``rwtoolkit.engines.Trajectory``, and the
same gradient descent read through it agrees across the exact, ball and torch arithmetics.

The oracle is the exact engine's rational trajectory (the source of truth, pinned against the paper's
reduction and the model of record in tests/test_models.py); the balls must contain it and torch's float64
must round it. The task is the K = 3 circle walk with N = 3 from zero, 2 steps: every value of θ(0..2) is
rational (S(0) = S(1) uniform, Lemma C.1), so containment in a ball is decided exactly.
"""

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from flint import arb, ctx, fmpq

from rwtoolkit.engines import GENERIC, SPECIALISATIONS, Engine, Trajectory, select
from rwtoolkit.engines.exact import nearest_double
from rwtoolkit.engines.numeric import ModelConfig, TrainConfig
from rwtoolkit.models import get_model, rational_positions
from rwtoolkit.tasks import CircleWalk

STEPS = 2
TASK = CircleWalk(3, 3, "3/10")
MODEL = get_model("one_layer")
#: The positions every generic engine reads (the exact and ball engines' own, rational_positions(N, μ = 1)).
P = rational_positions(TASK.N, Fraction(1))
#: float64 rounds each operation to within 2^-53 ≈ 1.1e-16 relative; two steps of GD on this task are a few
#: hundred operations on values of size at most ~10, so the accumulated error stays near 1e-14: 1e-12 is a
#: 100x margin and still far below any difference a wrong gradient would make (the steps move θ by ~1e-1).
TORCH_TOLERANCE = 1e-12


def run(engine: Engine) -> Trajectory:
    """Gradient descent of one_layer from zero on TASK for STEPS steps (η = 1, ε = 1/10, μ = 1, the log-loss)
    by ``engine``, called in its arithmetic's one signature."""
    function = engine.load()
    if engine.arithmetic == "exact":
        return function(TASK, model=MODEL, steps=STEPS, eta=1, eps="1/10", mu=1, loss="log", init="zero")
    if engine.arithmetic == "balls":
        return function(TASK, MODEL, STEPS, 1, "1/10", 1)
    model = ModelConfig(K=TASK.K, N=TASK.N, M=P.shape[0], pos=np.asarray(P, dtype=float), mu=1.0)
    cfg = TrainConfig(steps=STEPS, eta=1.0, eps=0.1, population=True, record_params=not engine.many)
    [result] = function([(TASK, model, cfg)], progress=False)
    return result


def engine(name: str) -> Engine:
    return next(e for e in (*GENERIC.values(), *SPECIALISATIONS) if e.name == name)


@pytest.fixture(scope="module")
def trajectories() -> dict[str, Trajectory]:
    return {e.name: run(e) for e in (*GENERIC.values(), *SPECIALISATIONS)}


@pytest.fixture(autouse=True)
def exact_balls():
    """Compare at 1024 bits, so that arb(q) of each exact rational is (nearly) a point, not a 53-bit ball."""
    previous, ctx.prec = ctx.prec, 1024
    yield
    ctx.prec = previous


def entries(value: object) -> list:
    """The entries of a value (SymPy Matrix, nested list, numpy array or scalar), row-major."""
    return list(np.asarray(value, dtype=object).ravel())


def exact_rational(x: object) -> Fraction:
    x = sp.sympify(x)
    assert x.is_Rational, f"{x} is not rational: the oracle needs θ(t) rational"
    return Fraction(int(x.p), int(x.q))


def assert_agrees(exact: list[Fraction], other: list, arithmetic: str, where: str) -> None:
    """Each ball contains its exact rational (its midpoint within its radius of it); each float64 rounds it
    to within TORCH_TOLERANCE."""
    assert len(exact) == len(other), where
    for i, (q, y) in enumerate(zip(exact, other, strict=True)):
        if arithmetic == "balls":
            assert y.contains(arb(fmpq(q.numerator, q.denominator))), f"{where}[{i}]: {y} misses {q}"
            assert abs(float(y.mid()) - float(q)) <= float(y.rad()), f"{where}[{i}]"
        else:
            assert abs(float(y) - float(q)) <= TORCH_TOLERANCE * max(1.0, abs(float(q))), f"{where}[{i}]"


def assert_loss_agrees(exact: object, other: object, arithmetic: str, where: str) -> None:
    """The loss L(t) = Σ w ℓ(z) holds logarithms (and exponentials from t = 2): its exact value's nearest
    double d (``nearest_double``, certified) is within the ball's radius plus d's rounding (2^-53 |d|) of the
    ball's midpoint; the float64 is within TORCH_TOLERANCE of d."""
    d = nearest_double(exact)
    assert d is not None, where
    if arithmetic == "balls":
        assert abs(float(other.mid()) - d) <= float(other.rad()) + 2.0**-53 * abs(d), (
            f"{where}: {other} vs {d}"
        )
    else:
        assert abs(float(other) - d) <= TORCH_TOLERANCE * max(1.0, abs(d)), where


def test_every_engine_returns_one_trajectory_type(trajectories):
    for e in (*GENERIC.values(), *SPECIALISATIONS):
        traj = trajectories[e.name]
        assert isinstance(traj, Trajectory), e.name
        assert traj.arithmetic == e.arithmetic, e.name
        assert traj.model.describe() == MODEL.describe(), e.name
        assert traj.times == (tuple(range(STEPS + 1)) if not e.many else traj.times), e.name
        assert traj.times[-1] == STEPS and traj.parameter_names, e.name
        assert (traj.reduced is None) == e.generic, e.name
        if not e.generic:
            assert traj.reduced is traj, e.name


def test_the_generic_engines_agree_on_every_parameter_across_arithmetics(trajectories):
    exact = trajectories[GENERIC["exact"].name]
    assert exact.parameter_names == ("V", "W")
    for arithmetic in ("balls", "torch"):
        other = trajectories[GENERIC[arithmetic].name]
        assert other.parameter_names == exact.parameter_names, arithmetic
        assert other.times == exact.times, arithmetic
        for t in exact.times:
            for name in exact.parameter_names:
                want = [exact_rational(x) for x in entries(exact.value(t, name))]
                assert_agrees(want, entries(other.value(t, name)), arithmetic, f"{arithmetic} {name}({t})")
            assert_loss_agrees(exact.loss(t), other.loss(t), arithmetic, f"{arithmetic} L({t})")


def torch_reduced(traj: Trajectory, t: int, name: str) -> list:
    """V, w_tok, c of the reduced torch engines, which keep V and w = W x̃_N: w_tok = w's first K entries,
    c_j = p_jᵀ w_pos / μ (docs/theory.md#reduction; μ = 1)."""
    if name == "V":
        return entries(traj.value(t, "V"))
    w = traj.value(t, "w")
    if name == "w_tok":
        return list(w[: TASK.K])
    return list(np.asarray(P, dtype=float).T @ w[TASK.K :])


def test_the_specialised_engines_agree_on_every_parameter_across_arithmetics(trajectories):
    exact = trajectories[select("one_layer", "exact", "zero").name]
    balls = trajectories[select("one_layer", "balls", "zero").name]
    assert exact.parameter_names == balls.parameter_names == ("V", "w_tok", "c")
    assert exact.times == balls.times
    for t in exact.times:
        for name in exact.parameter_names:
            want = [exact_rational(x) for x in entries(exact.value(t, name))]
            assert_agrees(want, entries(balls.value(t, name)), "balls", f"balls {name}({t})")
        assert_loss_agrees(exact.loss(t), balls.loss(t), "balls", f"balls L({t})")
    fast = trajectories[select("one_layer", "torch", "zero").name]
    batched = trajectories[select("one_layer", "torch", "zero", many=True).name]
    assert fast.parameter_names == ("V", "w") and batched.parameter_names == ("V",)
    for t in exact.times:
        for name in exact.parameter_names:
            want = [exact_rational(x) for x in entries(exact.value(t, name))]
            assert_agrees(want, torch_reduced(fast, t, name), "torch", f"FastModel {name}({t})")
        assert_loss_agrees(exact.loss(t), fast.loss(t), "torch", f"FastModel L({t})")
        assert_loss_agrees(exact.loss(t), batched.loss(t), "torch", f"batched L({t})")
    want = [exact_rational(x) for x in entries(exact.value(STEPS, "V"))]
    assert_agrees(
        want, entries(batched.value(STEPS, "V")), "torch", f"batched V({STEPS})"
    )  # its final θ alone


def test_a_torch_parameter_not_kept_at_a_step_is_refused_naming_record_params(trajectories):
    batched = trajectories[select("one_layer", "torch", "zero", many=True).name]
    with pytest.raises(ValueError, match="record_params"):
        batched.value(0, "V")
    with pytest.raises(ValueError, match="no parameter or read-out 'Q'"):
        batched.value(STEPS, "Q")
