"""The public conformance kit ``rwtoolkit.analyses.check``: protocol errors, not-checked read-outs, the closed forms it uses,
its tolerance, its report and the ``rw check`` usage errors (exit 2, one line, before any work)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rwtoolkit.analyses.check import (
    CheckOptions,
    ImplementationError,
    Mismatch,
    assert_matches_exact,
    build_config,
    check,
    exact_trajectory,
    first_value_step_closed_form,
    probe,
    run,
    tolerance,
)
from rwtoolkit.analyses.check._compare import MARGIN, ExpectedSteps, expected_steps, scaled_error
from rwtoolkit.analyses.check.strategies import check_configs
from rwtoolkit.cli.main import main
from rwtoolkit.engines import GENERIC
from rwtoolkit.io import load_schema
from rwtoolkit.tasks import CircleWalk, FiniteTask

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
from plain_torch import OneLayerTransformer, model, training  # noqa: E402

RW = [sys.executable, "-c", "import sys; from rwtoolkit.cli.main import main; sys.exit(main())"]
SMALL = build_config(CircleWalk(3, 3, "3/10"), mu=2, eta="3/2", eps="1/10", embedding="sine", M=5)


def zeros_loop(config):
    while True:
        yield torch.zeros(config.K, config.K), torch.zeros(config.K + config.M, config.K + config.M)


# ------------------------------------------------------------------------------------------------
# the protocol
# ------------------------------------------------------------------------------------------------
class _ExtraParameter(OneLayerTransformer):
    def __init__(self, K, M, dtype):
        super().__init__(K, M, dtype)
        self.bias = torch.nn.Parameter(torch.zeros(K, dtype=dtype))


def _bad_V_shape(config):
    net = model(config)
    net.V = torch.nn.Parameter(torch.zeros(config.K, config.K + 1, dtype=torch.float64))
    return net


def _nan_output(config):
    class NaNModel(OneLayerTransformer):
        def forward(self, Xt):
            return super().forward(Xt) + float("nan")

    return NaNModel(config.K, config.M, config.torch_dtype)


def _short_loop(config):
    yield torch.zeros(config.K, config.K), torch.zeros(config.K + config.M, config.K + config.M)


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda config: 42, r"^the factory returned int: expected a torch.nn.Module"),
        (_bad_V_shape, r"parameter V has shape \(3, 4\), expected \(3, 3\)"),
        (
            lambda config: _ExtraParameter(config.K, config.M, config.torch_dtype),
            r"parameters other than V and W: bias",
        ),
        (_nan_output, r"non-finite f at t=0"),
        (_short_loop, r"training loop stopped after 1 states; 2 are needed"),
        (
            lambda config: iter([["V", "W"]] * 3),
            r"state 0 of the training loop is list, expected \(V, W\) or a dict",
        ),
        (lambda config: (1 / 0 for _ in range(3)), r"raised ZeroDivisionError: division by zero"),
    ],
    ids=["not-a-model", "V-shape", "extra-parameter", "nan-output", "short-loop", "bad-state", "crash"],
)
def test_probe_refuses_what_breaks_the_protocol_in_one_line(factory, message) -> None:
    with pytest.raises(ImplementationError, match=message) as caught:
        probe(factory)
    assert "\n" not in str(caught.value)


def test_read_outs_a_loop_does_not_yield_are_not_checked_never_passed() -> None:
    report = check(zeros_loop, CheckOptions(steps=1, examples=2))
    status = {r.id: r.status for r in report.results}
    assert status["S"] == status["f"] == status["loss"] == status["accuracy"] == "not checked"
    assert status["V"] == "fail" and report.exit_code == 1


def test_the_module_protocol_gives_every_read_out() -> None:
    readouts = run(model, SMALL, 2)
    assert all(readouts.provided(q) for q in ("V", "W_xN", "S", "f", "loss", "accuracy"))
    assert readouts.protocol == "module"


def test_an_implementation_with_random_init_fails_at_t0() -> None:
    def noisy(config):
        net = model(config)
        with torch.no_grad():
            net.V.add_(1e-3)
        return net

    with pytest.raises(Mismatch) as caught:
        assert_matches_exact(noisy, SMALL, 1)
    assert (caught.value.divergence.quantity, caught.value.divergence.step) == ("V", 0)


# ------------------------------------------------------------------------------------------------
# the oracles the kit uses
# ------------------------------------------------------------------------------------------------
def test_expected_values_are_the_nearest_doubles_of_the_exact_trajectory() -> None:
    """CircleWalk(3, 3, 1/2), μ = η = 1, ε = 1/10, by hand: f(0) = 0, so L(0) = -log(1/10), the smallest
    argmax is token 0 and the accuracy 1/3 (labels uniform); V(1) = (η/(εNK)) (Πᵀ + Πᵀ²) is 5/9 on the
    diagonal and 5/6 off it (Π = (shift + shift⁻¹)/2); w(1) = 0 (the logits' gradient vanishes at uniform
    attention and V = 0), so W x̃_N(1) = 0 and S(1) = 1/3."""
    config = build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10", embedding="sine", M=4)
    expected = expected_steps(config, 1)
    assert tuple(expected[0]) == ("V", "W_xN", "S", "f", "loss", "accuracy")
    assert expected[0]["loss"] == float(sp.log(10).evalf(30)) and expected.accuracy_compared(0)
    assert expected[0]["accuracy"] == 1 / 3 and not expected[0]["f"].any()
    V1 = np.full((3, 3), 5 / 6)
    np.fill_diagonal(V1, 5 / 9)
    assert np.array_equal(expected[1]["V"], V1)
    assert not expected[1]["W_xN"].any() and expected[1]["W_xN"].shape == (7,)
    assert np.array_equal(expected[1]["S"], np.full((12, 3), 1 / 3))


@pytest.mark.parametrize(
    "config",
    [
        build_config(CircleWalk(3, 3, "3/10"), mu=2, eta="3/2", eps="1/10", embedding="random", M=5),
        build_config(FiniteTask([[0, 1], [1, 1]], [1, 0], ["1/3", "2/3"], K=2), mu=1, eta=2, eps="1/2"),
    ],
    ids=["circle", "finite"],
)
def test_the_check_reads_the_same_doubles_from_either_exact_engine(config) -> None:
    """The reference the check compares with is the same whichever exact engine runs the paper's model:
    the reduced engine ``select`` gives, or the generic engine (its full W read through Lemma B.1's reduced
    coordinates at the exact P), every read-out and accuracy decision bit for bit."""
    reduced, generic = ExpectedSteps(config, 2), ExpectedSteps(config, 2, engine=GENERIC["exact"])
    assert reduced.trajectory.reduced is not None and generic.trajectory.reduced is None
    for t in range(3):
        assert reduced.accuracy_compared(t) == generic.accuracy_compared(t)
        for q in reduced.quantities:
            assert reduced[t][q].tobytes() == generic[t][q].tobytes(), (t, q)


@settings(max_examples=10)
@given(data=st.data())
def test_lemma_c1_closed_form_equals_the_exact_engine(data) -> None:
    """V(1) by Lemma C.1 (transition matrix powers, or the population sum) = derive's V(1), exactly."""
    config = data.draw(check_configs(task="any", loss_names=("log", "squared", "exp")))
    assert first_value_step_closed_form(config) == exact_trajectory(config, 1).states[1].V


def test_lemma_c1_closed_form_by_hand() -> None:
    """K = 3, N = 2, p = 1/2: V(1) = (η/(εNK)) Πᵀ with Πᵀ = ½ off the diagonal (hand calculation)."""
    config = build_config(CircleWalk(3, 2, "1/2"), mu=1, eta=1, eps="1/10")
    half = sp.Rational(5, 6)  # 1/(0.1·2·3) · 1/2
    assert first_value_step_closed_form(config) == sp.Matrix(
        [[0, half, half], [half, 0, half], [half, half, 0]]
    )


def test_finite_task_closed_form_by_hand() -> None:
    """One input (tokens 0, 1; label 1), squared loss: V(1) = η·2/N·e_1 (e_0 + e_1)ᵀ with N = 3."""
    config = build_config(FiniteTask([[0, 1]], [1], [1], K=2), mu=1, eta=1, eps="1/2", loss="squared")
    assert first_value_step_closed_form(config) == sp.Matrix([[0, 0], [sp.Rational(2, 3), sp.Rational(2, 3)]])


def test_plain_example_error_is_far_inside_the_tolerance() -> None:
    """Measured error of examples/plain_torch.py, both dtypes, large logits: below 1/16 of the kit's rtol."""
    for dtype in ("float64", "float32"):
        config = build_config(
            CircleWalk(4, 5, "3/10"), mu=10, eta=2, eps="1/10", embedding="random", M=9, dtype=dtype
        )
        expected_all = expected_steps(config, 2)
        rtol = tolerance(config, 2).rtol
        for factory in (model, training):
            readouts = run(factory, config, 2)
            for t in range(3):
                expected = expected_all[t]
                for q in ("V", "W_xN", "S", "f", "loss"):
                    error, _ = scaled_error(readouts.values[q][t], expected[q])
                    assert error <= rtol / 16, (dtype, factory.__name__, q, t, error, rtol)


def test_tolerance_grows_with_dtype_and_logit_scale() -> None:
    f64 = tolerance(SMALL, 2)
    f32 = tolerance(replace(SMALL, dtype="float32"), 2)
    unit64 = 2.0**-53
    assert f64.rtol == MARGIN * unit64 * (1 + 4 * 1.5 * 2)
    assert f32.rtol / f64.rtol == 2.0**29
    assert "float64" in f64.reason and "μ²ηT" in f64.reason


def test_scaled_error_treats_nan_as_the_worst_and_equal_infinities_as_equal() -> None:
    assert scaled_error(np.array([1.0, np.nan]), np.array([1.0, 2.0]))[0] == np.inf
    assert scaled_error(np.array([np.inf]), np.array([np.inf]))[0] == 0.0
    assert scaled_error(np.array([3.0, 1.0]), np.array([1.0, 1.0])) == (2.0 / 1.0, (0,))


# ------------------------------------------------------------------------------------------------
# options and usage errors
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"steps": 5}, r"^steps=5 is out of range"),
        ({"examples": 0}, r"^examples=0 is out of range"),
        ({"dtype": "float16"}, r"^dtype='float16' is not one of"),
        ({"task": "qa"}, r"^task='qa' is not one of"),
        ({"steps": 4, "model": "relu_head"}, r"^steps=4 is out of range for model='relu_head': .* 0\.\.3$"),
    ],
    ids=["steps", "examples", "dtype", "task", "steps-from-a-dyadic-start"],
)
def test_check_options_are_validated(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        CheckOptions(**kwargs)


def test_check_config_build_is_validated() -> None:
    with pytest.raises(ValueError, match=r"^eta=0 must be > 0"):
        build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=0, eps="1/10")
    with pytest.raises(ValueError, match=r"^loss='hinge' is not one of log, squared, exp"):
        build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10", loss="hinge")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no_such_module_xyz:f"], "importing no_such_module_xyz raised ModuleNotFoundError"),
        (["examples/plain_torch.py:nothing"], "has no callable nothing"),
        (["examples/missing.py:model"], "the file examples/missing.py does not exist"),
        (["examples/plain_torch.py"], "is not MODULE:FACTORY"),
        (["examples/plain_torch.py:model", "--steps", "9"], "steps=9 is out of range"),
        (["examples/plain_torch.py:model", "--examples", "x"], "--examples='x' is not an integer"),
        (
            ["examples/plain_torch.py:model", "--json", "pyproject.toml/r.json"],
            "pyproject.toml is a file, not a folder",
        ),
        (["examples/plain_torch.py:OneLayerTransformer"], "OneLayerTransformer.__init__() missing"),
    ],
    ids=["module", "attribute", "file", "no-colon", "steps", "examples", "json-folder", "wrong-signature"],
)
def test_rw_check_bad_usage_is_one_line_and_exit_2(args, message, capsys, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["check", *args]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("rw check: error: ") and message in err
    assert err.count("\n") == 1 and out == ""


def test_rw_check_bad_usage_through_the_console_command() -> None:
    proc = subprocess.run(
        [*RW, "check", "no_such_module_xyz:f"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert (
        proc.stderr
        == "rw check: error: 'no_such_module_xyz:f': importing no_such_module_xyz raised ModuleNotFoundError: No module named 'no_such_module_xyz'\n"
    )


def test_rwcheck_does_not_import_pytest() -> None:
    code = "import sys, rwtoolkit.analyses.check, rwtoolkit.analyses.check.strategies, rwtoolkit.cli.check; assert 'pytest' not in sys.modules"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_report_schema_is_valid_and_rejects_a_nan() -> None:
    import jsonschema

    schema = load_schema("report")
    jsonschema.Draft202012Validator.check_schema(schema)
    report = check(zeros_loop, CheckOptions(steps=1, examples=1)).to_json()
    jsonschema.validate(report, schema)
    report["properties"][0]["failure"]["got"] = "NaN"  # only "nan", "inf", "-inf" or numbers
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report, schema)
