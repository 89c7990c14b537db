"""One table of built-in losses (rwtoolkit.tasks.LOSSES): both engines implement every name, with the same ℓ and ℓ'."""

import math

import pytest
import sympy as sp
import torch

from rwtoolkit.engines.exact.engine._derive import make_loss
from rwtoolkit.engines.numeric._losses import LOSS_DERIVATIVES, LOSS_FUNCTIONS
from rwtoolkit.engines.numeric._losses import SampleLoss as NumericLoss
from rwtoolkit.tasks import LOSSES

# ℓ(z), ℓ'(z) at z = 1/3, ε = 1/10, written by hand from each formula.
HAND = {
    "log": (-math.log(1 / 3 + 1 / 10), -1 / (1 / 3 + 1 / 10)),
    "squared": ((1 - 1 / 3) ** 2, -2 * (1 - 1 / 3)),
    "exp": (math.exp(-1 / 3), -math.exp(-1 / 3)),
}


def test_table_lists_exactly_the_hand_checked_losses():
    assert set(LOSSES) == set(HAND)


@pytest.mark.parametrize("name", sorted(HAND))
def test_both_engines_implement_the_same_loss(name):
    value, derivative = HAND[name]
    exact = make_loss(name, sp.Rational(1, 10))
    z = sp.Rational(1, 3)
    assert float(exact.value(z)) == pytest.approx(value, rel=1e-15)
    assert float(exact.derivative(z)) == pytest.approx(derivative, rel=1e-15)
    numeric = NumericLoss(name, 0.1)(torch.tensor([1 / 3], dtype=torch.float64), step=0)
    assert float(numeric[0]) == pytest.approx(value, rel=1e-15)
    closed_form = LOSS_DERIVATIVES[name](torch.tensor([1 / 3], dtype=torch.float64), 0.1)
    assert float(closed_form[0]) == pytest.approx(derivative, rel=1e-15)


@pytest.mark.parametrize("name", sorted(HAND))
def test_closed_form_derivative_equals_autograd_of_the_loss(name):
    """Over z in [-0.05, 3] (inside the log-loss domain z > -ε), to 4 float64 epsilons relative: both
    evaluate one elementary function and at most two roundings apart (measured: at most 1 epsilon)."""
    assert set(LOSS_DERIVATIVES) == set(LOSS_FUNCTIONS)
    z = torch.linspace(-0.05, 3.0, 301, dtype=torch.float64, requires_grad=True)
    LOSS_FUNCTIONS[name](z, 0.1).sum().backward()
    assert z.grad is not None
    closed = LOSS_DERIVATIVES[name](z.detach(), 0.1)
    eps = torch.finfo(torch.float64).eps
    assert torch.all((closed - z.grad).abs() <= 4 * eps * z.grad.abs().clamp(min=1.0))


@pytest.mark.parametrize("engine", ["numeric", "exact"])
def test_both_engines_name_the_same_losses_when_refusing(engine):
    with pytest.raises(ValueError, match=r"^loss='hinge' is not one of log, squared, exp"):
        if engine == "numeric":
            NumericLoss("hinge", 0.1)
        else:
            make_loss("hinge", sp.Rational(1, 10))


@pytest.mark.parametrize(("command", "extra"), [("derive", ("any",)), ("train", ())])
def test_cli_loss_choices_are_the_table(command, extra):
    import argparse
    import importlib

    parser = argparse.ArgumentParser()
    importlib.import_module(f"rwtoolkit.cli.{command}").add_arguments(parser)
    (action,) = [a for a in parser._actions if a.dest == "loss"]
    assert tuple(action.choices) == (*LOSSES, *extra)


def test_the_losses_written_against_the_arithmetic_are_the_tables():
    """``rwtoolkit.models.ArithmeticLoss`` writes exactly the names of the table, and the table's printed
    formulas are its ℓ on a SymPy symbol (what the exact engine reads)."""
    from rwtoolkit.models import BUILT_IN

    assert set(BUILT_IN) == set(LOSSES)
    z, eps = sp.Symbol("z"), sp.Rational(1, 10)
    for name, formula in LOSSES.items():
        assert make_loss(name, eps).value(z) == sp.sympify(formula, locals={"z": z, "eps": eps}), name


@pytest.mark.parametrize("name", sorted(HAND))
def test_every_arithmetic_reads_the_one_loss_definition(name):
    """ℓ and ℓ' at z = 1/3, ε = 1/10 in every arithmetic an engine runs (numpy, torch, arb balls, mpmath, dual
    numbers, exact): the hand values, certified where the arithmetic is."""
    import mpmath
    import numpy as np
    from flint import arb

    from rwtoolkit.engines.balls import ball_arithmetic, to_ball
    from rwtoolkit.engines.exact import EXACT
    from rwtoolkit.engines.exact.engine._hessian import SYMPY
    from rwtoolkit.engines.numeric import TensorLoss
    from rwtoolkit.models import FLOAT64, ArithmeticLoss, DualArithmetic, ObjectArithmetic

    value, derivative = HAND[name]
    third = sp.Rational(1, 3)
    floats = ArithmeticLoss(name, 0.1, FLOAT64)
    assert floats.value(np.array([1 / 3]))[0] == pytest.approx(value, rel=1e-15)
    assert floats.derivative(np.array([1 / 3]))[0] == pytest.approx(derivative, rel=1e-15)
    tensors = TensorLoss(name, 0.1)
    assert float(tensors.derivative(torch.tensor([1 / 3], dtype=torch.float64))[0]) == pytest.approx(
        derivative
    )
    balls = ArithmeticLoss(name, to_ball("1/10"), ball_arithmetic())
    ball_value = balls.value(ball_arithmetic().asarray([third]))[0]
    ball_slope = balls.derivative(ball_arithmetic().asarray([third]))[0]
    assert isinstance(ball_value, arb) and float(ball_value.rad()) < 1e-15
    assert float(ball_value) == pytest.approx(value, rel=1e-15)
    assert float(ball_slope) == pytest.approx(derivative, rel=1e-15)
    with mpmath.workdps(30):
        mp = ObjectArithmetic("mpmath", mpmath.mpf, exp=mpmath.exp, sign=lambda x: None, log=mpmath.log)
        mp_value = ArithmeticLoss(name, mpmath.mpf(1) / 10, mp).value(mp.asarray([mpmath.mpf(1) / 3]))[0]
        assert float(mp_value) == pytest.approx(value, rel=1e-15)
    duals = DualArithmetic(SYMPY, 1)
    x = duals.variable(SYMPY.asarray([third]), SYMPY.asarray([[1]]))
    dual = ArithmeticLoss(name, sp.Rational(1, 10), duals).value(x)
    assert float(dual.value[0]) == pytest.approx(value, rel=1e-15)
    assert float(dual.tangent[0, 0]) == pytest.approx(derivative, rel=1e-15)
    exact = make_loss(name, sp.Rational(1, 10)).elementwise().derivative(EXACT.asarray([third]))[0]
    assert float(sp.sympify(exact)) == pytest.approx(derivative, rel=1e-15)
