"""The update rules of ``rwtoolkit.models.Optimizer`` (issue 43, item 2): one definition in every engine.

Each rule in float64 is checked against ``torch.optim`` (SGD with momentum and Nesterov, Adam, AdamW), an
independent implementation fed the same gradients (the tape's, at torch's own parameters): the two differ by
rounding only, because each writes the same formula in another order (torch's m ← m + (1 − β₁)(g − m) is
lerp, here β₁ m + (1 − β₁) g; √v̂ is divided after the root): measured 2.5e-15 at most over three steps of
every rule; the tolerance 1e-12 is a few hundred times that. The torch engine runs the same rule in torch
arithmetic; the exact engine runs momentum in rationals, equal to the float64 run; the ball engine's Adam
holds the float64 run; the exact engine refuses Adam in one line naming the ball engine.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rwtoolkit.models import (
    FLOAT64,
    ArithmeticLoss,
    Optimizer,
    batch,
    descend,
    evaluate,
    get_model,
    gradient_steps,
    rational_positions,
)
from rwtoolkit.tasks import CircleWalk

TOL = 1e-12
STEPS = 3
ETA = 0.3


def _float_setup(model_name: str = "key_query", mu: int = 1, **hyper):
    task = CircleWalk(3, 3, "3/10")
    pop = task.population()
    P = FLOAT64.asarray(rational_positions(task.N, mu))
    data = batch(FLOAT64, pop.tokens, pop.labels, FLOAT64.asarray(pop.float_probs()), task.K, P)
    model = get_model(model_name, **hyper)
    return task, model, data, ArithmeticLoss("log", 0.1, FLOAT64)


def _gaussian(model, data, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {k: rng.normal(0, 0.5, size=s) for k, s in model.shapes(data.inputs.sizes).items()}


#: (rule, its hyperparameters here, the torch.optim class, its keyword arguments)
RULES = [
    ("momentum", {"momentum": 0.9}, torch.optim.SGD, {"momentum": 0.9}),
    ("nesterov", {"momentum": 0.9}, torch.optim.SGD, {"momentum": 0.9, "nesterov": True}),
    (
        "momentum",
        {"momentum": 0.5, "weight_decay": 0.1},
        torch.optim.SGD,
        {"momentum": 0.5, "weight_decay": 0.1},
    ),
    ("adam", {}, torch.optim.Adam, {}),
    (
        "adam",
        {"betas": (0.8, 0.99), "eps": 1e-3, "weight_decay": 0.1},
        torch.optim.Adam,
        {"betas": (0.8, 0.99), "eps": 1e-3, "weight_decay": 0.1},
    ),
    ("adamw", {}, torch.optim.AdamW, {}),  # AdamW's default weight decay 1/100, as torch's
    ("adamw", {"weight_decay": 0.5}, torch.optim.AdamW, {"weight_decay": 0.5}),
]


@pytest.mark.parametrize(("rule", "hyper", "torch_optimizer", "torch_kwargs"), RULES)
def test_each_rule_in_float64_equals_torch_optim(rule, hyper, torch_optimizer, torch_kwargs):
    _, model, data, loss = _float_setup()
    start = _gaussian(model, data)
    states = list(gradient_steps(model, FLOAT64, start, data, loss, ETA, STEPS, Optimizer(rule, **hyper)))
    params = {k: torch.tensor(v, requires_grad=True) for k, v in start.items()}
    reference = torch_optimizer(list(params.values()), lr=ETA, **torch_kwargs)
    for t in range(STEPS):
        at = {k: p.detach().numpy().copy() for k, p in params.items()}
        np.testing.assert_allclose(
            np.concatenate([states[t].params[k].ravel() for k in at]),
            np.concatenate([at[k].ravel() for k in at]),
            rtol=0,
            atol=TOL,
        )
        grads = evaluate(model, FLOAT64, at, data, loss).gradient
        for k, p in params.items():
            p.grad = torch.tensor(grads[k])
        reference.step()
    for k, p in params.items():
        np.testing.assert_allclose(states[STEPS].params[k], p.detach().numpy(), rtol=0, atol=TOL)
        assert np.abs(states[STEPS].params[k] - start[k]).max() > 1e-3  # the run moved


def _torch_run(model, data, loss, start, optimizer, steps, schedule=None, plan=None):
    """``optimizer`` (a torch.optim class and keyword arguments) over every parameter, fed the tape's gradients,
    with ``LambdaLR(schedule)`` stepped after each step and, with ``plan``, only the parameters of step t's stage
    given a gradient (torch.optim skips a parameter whose grad is None: its value, buffers and step count)."""
    params = {k: torch.tensor(v, requires_grad=True) for k, v in start.items()}
    cls, kwargs = optimizer
    reference = cls(list(params.values()), lr=ETA, **kwargs)
    scheduler = None if schedule is None else torch.optim.lr_scheduler.LambdaLR(reference, schedule)
    for t in range(steps):
        grads = evaluate(
            model, FLOAT64, {k: p.detach().numpy().copy() for k, p in params.items()}, data, loss
        ).gradient
        for k, p in params.items():
            p.grad = None if plan is not None and k not in plan[t] else torch.tensor(grads[k])
        reference.step()
        if scheduler is not None:
            scheduler.step()
    return {k: p.detach().numpy() for k, p in params.items()}


@pytest.mark.parametrize(
    ("rule", "hyper", "torch_optimizer"),
    [
        (
            "nesterov",
            {"momentum": 0.9, "weight_decay": 0.1},
            (torch.optim.SGD, {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
        ),
        ("adam", {}, (torch.optim.Adam, {})),
        ("adamw", {"weight_decay": 0.5}, (torch.optim.AdamW, {"weight_decay": 0.5})),
    ],
)
def test_a_schedule_and_stages_equal_torch_lambda_lr_and_frozen_parameters(rule, hyper, torch_optimizer):
    """Stages: W_Q alone for 2 steps, then V and W_K for 2, then all for 1 (Adam's step count per parameter)."""
    _, model, data, loss = _float_setup()
    start = _gaussian(model, data)
    stages = [(2, {"W_Q"}), (2, {"V", "W_K"}), (1, {"V", "W_K", "W_Q"})]
    plan = [{"W_Q"}] * 2 + [{"V", "W_K"}] * 2 + [{"V", "W_K", "W_Q"}]
    schedule = lambda t: 1 / (t + 1)  # noqa: E731
    states = descend(
        model,
        FLOAT64,
        start,
        data,
        loss,
        ETA,
        5,
        optimizer=Optimizer(rule, **hyper),
        schedule=schedule,
        stages=stages,
    )
    expected = _torch_run(model, data, loss, start, torch_optimizer, 5, schedule, plan)
    for k, value in expected.items():
        np.testing.assert_allclose(states[5].params[k], value, rtol=0, atol=TOL)
    assert np.array_equal(states[2].params["V"], start["V"])  # frozen in the first stage
    unscheduled = descend(
        model, FLOAT64, start, data, loss, ETA, 5, optimizer=Optimizer(rule, **hyper), stages=stages
    )
    assert np.abs(unscheduled[5].params["V"] - states[5].params["V"]).max() > 1e-6


def test_a_rational_schedule_and_stages_keep_momentum_exact():
    import sympy as sp
    from flint import fmpq

    from rwtoolkit.engines.exact import EXACT, derive_model

    task, model, data, loss = _float_setup("linear_attention", mu=1)
    first = derive_model(task, model, 0, init="gaussian", sigma="1/2").states[0].params
    pop = task.population()
    exact_data = batch(
        EXACT, pop.tokens, pop.labels, pop.exact_probs(), task.K, EXACT.asarray(rational_positions(task.N, 1))
    )
    from rwtoolkit.engines.exact.engine._derive import make_loss

    rule, stages = Optimizer("momentum", momentum="1/2"), [(1, {"V"}), (2, {"V", "W"})]
    schedule = lambda t: f"1/{t + 1}"  # noqa: E731
    exact = descend(
        model,
        EXACT,
        first,
        exact_data,
        make_loss("log", sp.Rational(1, 10)).elementwise(),
        EXACT.asarray(["3/10"])[0],
        STEPS,
        optimizer=rule,
        schedule=schedule,
        stages=stages,
    )
    start = {k: np.vectorize(float)(v).astype(float) for k, v in first.items()}
    floats = descend(
        model, FLOAT64, start, data, loss, ETA, STEPS, optimizer=rule, schedule=schedule, stages=stages
    )
    for t in range(STEPS + 1):
        for k, value in exact[t].params.items():
            assert all(isinstance(x, fmpq) for x in value.flat), (t, k)
            np.testing.assert_allclose(
                np.vectorize(float)(value).astype(float), floats[t].params[k], rtol=0, atol=TOL
            )
    assert all(x == y for x, y in zip(exact[1].params["W"].flat, first["W"].flat, strict=True))


@pytest.mark.parametrize(
    ("schedule", "stages", "message"),
    [
        (lambda t: -1, None, r"schedule\(0\)=-1 is out of range: a learning-rate factor must be >= 0"),
        (lambda t: "x", None, r"schedule\(0\)='x' is not a number"),
        (None, [(1, {"V"})], "stages cover 1 steps; steps=3: they must cover every step"),
        (None, [(3, {"U"})], r"stages\[0\]: 'U' is not a parameter of the model"),
        (None, [(0, {"V"}), (3, {"V"})], r"stages\[0\]: steps=0 must be an integer >= 1"),
        (None, [(3, set())], r"stages\[0\]: no parameters to train"),
    ],
)
def test_a_bad_schedule_or_stage_is_refused_in_one_line(schedule, stages, message):
    _, model, data, loss = _float_setup()
    with pytest.raises(ValueError, match=message) as refused:
        descend(
            model,
            FLOAT64,
            _gaussian(model, data),
            data,
            loss,
            ETA,
            STEPS,
            optimizer=Optimizer("adam"),
            schedule=schedule,
            stages=stages,
        )
    assert "\n" not in str(refused.value)


def test_plain_gd_is_the_old_update_bit_for_bit():
    """The default rule and ``Optimizer("gd")`` give θ − η g exactly, the update before optimizers existed."""
    _, model, data, loss = _float_setup()
    start = _gaussian(model, data)
    default = descend(model, FLOAT64, start, data, loss, ETA, STEPS)
    named = descend(model, FLOAT64, start, data, loss, ETA, STEPS, optimizer=Optimizer("gd"))
    current = dict(start)
    for t in range(STEPS + 1):
        for k in current:
            assert np.array_equal(default[t].params[k], current[k])
            assert np.array_equal(named[t].params[k], current[k])
        grads = evaluate(model, FLOAT64, current, data, loss).gradient
        current = {k: v - ETA * grads[k] for k, v in current.items()}


def test_the_torch_engine_runs_the_same_rule():
    from rwtoolkit.engines.numeric import train_model

    task, model, data, loss = _float_setup()
    rule = Optimizer("adam", betas=("0.8", "0.99"))
    float_run = descend(
        model, FLOAT64, model.zeros(FLOAT64, data.inputs.sizes), data, loss, ETA, STEPS, optimizer=rule
    )
    P = np.asarray(rational_positions(task.N, 1), dtype=float)
    result = train_model(task, model, P, STEPS, eta=ETA, keep_params=True, optimizer=rule)
    for k, value in result.params[STEPS].items():
        np.testing.assert_allclose(value, float_run[STEPS].params[k], rtol=0, atol=TOL)
    assert result.config["optimizer"] == {
        "name": "adam",
        "betas": [0.8, 0.99],
        "eps": 1e-08,
        "weight_decay": 0.0,
    }


def test_momentum_in_exact_arithmetic_is_rational_and_equals_float64():
    """Linear attention has no exponential: momentum's trajectory from a rational start is rational at every
    step (the float64 run starts from the same dyadic rationals, exactly representable)."""
    from flint import fmpq

    from rwtoolkit.engines.exact import derive_model

    task, model, data, loss = _float_setup("linear_attention", mu=1)
    rule = Optimizer("nesterov", momentum="1/2", weight_decay="1/10")
    exact = derive_model(task, model, STEPS, eta="3/10", mu=1, init="gaussian", sigma="1/2", optimizer=rule)
    start = {k: np.vectorize(float)(v).astype(float) for k, v in exact.states[0].params.items()}
    floats = descend(model, FLOAT64, start, data, loss, ETA, STEPS, optimizer=rule)
    for t in range(STEPS + 1):
        for k, value in exact.states[t].params.items():
            assert all(isinstance(x, fmpq) for x in value.flat), (t, k)
            np.testing.assert_allclose(
                np.vectorize(float)(value).astype(float), floats[t].params[k], rtol=0, atol=TOL
            )
    moved = exact.states[STEPS].params["V"] - exact.states[0].params["V"]
    assert max(abs(float(x)) for x in moved.flat) > 1e-3


def test_balls_enclose_the_float64_adam_run():
    """Each ball holds the exact Adam trajectory; the float64 run is within rounding (TOL) of it."""
    from rwtoolkit.engines.balls import ball_model_trajectory

    task, model, data, loss = _float_setup("key_query", d=1)
    rule = Optimizer("adam")
    traj = ball_model_trajectory(task, model, STEPS, eta="3/10", optimizer=rule)
    floats = descend(
        model, FLOAT64, model.zeros(FLOAT64, data.inputs.sizes), data, loss, ETA, STEPS, optimizer=rule
    )
    for record in traj.records:
        for k, balls in record.state.params.items():
            for ball, x in zip(balls.flat, floats[record.step].params[k].flat, strict=True):
                assert ball.is_finite()
                assert abs(float(ball.mid()) - x) <= float(ball.rad()) + TOL, (record.step, k)
                assert float(ball.rad()) < 1e-30


def test_the_exact_engine_refuses_adam_in_one_line_naming_the_ball_engine():
    from rwtoolkit.engines.exact import derive_model, derive_model_job

    task = CircleWalk(3, 3, "1/2")
    model = get_model("key_query", d=1)
    for rule in ("adam", "adamw"):
        with pytest.raises(ValueError, match=f"^{rule}: .*ball engine") as refused:
            derive_model(task, model, 1, optimizer=Optimizer(rule))
        assert "\n" not in str(refused.value)
        with pytest.raises(ValueError, match="ball engine"):
            derive_model_job(task, model, 1, optimizer=Optimizer(rule))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"name": "sgd"}, "optimizer='sgd' is not one of gd, momentum, nesterov, adam, adamw"),
        ({"name": "momentum", "momentum": 1}, r"momentum=1 is out of range: must be in \(0, 1\)"),
        ({"name": "adam", "betas": (0.9, 1)}, r"beta2=1 is out of range: must be in \[0, 1\)"),
        ({"name": "adam", "eps": 0}, "eps=0 is out of range: must be > 0"),
        ({"name": "adamw", "weight_decay": -1}, "weight_decay=-1 is out of range: must be >= 0"),
        ({"name": "gd", "momentum": 0.9}, "momentum is out of place: optimizer gd has no momentum"),
        ({"name": "momentum", "betas": (0.9, 0.9)}, "betas is out of place"),
        ({"name": "adam", "eps": "x"}, "eps='x' is not a number"),
    ],
)
def test_bad_hyperparameters_are_refused_in_one_line(arguments, message):
    with pytest.raises(ValueError, match=message) as refused:
        Optimizer(**arguments)
    assert "\n" not in str(refused.value)


def test_the_reduced_torch_engines_refuse_another_rule():
    from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train_runs

    task = CircleWalk(3, 4, "1/2")
    cfg = TrainConfig(steps=1, population=True, optimizer=Optimizer("momentum"))
    with pytest.raises(
        ValueError, match="optimizer=momentum: the reduced engines of the paper's model run plain GD"
    ):
        train_runs([(task, ModelConfig(K=3, N=4, M=5), cfg)])


# --- the command line ----------------------------------------------------------------------------------


def test_the_flags_offer_the_rules_of_the_models_layer():
    from rwtoolkit.cli._optim import OPTIMIZER_CHOICES
    from rwtoolkit.models import OPTIMIZERS

    assert OPTIMIZER_CHOICES == OPTIMIZERS


def test_rw_train_runs_the_rule_and_records_it(tmp_path):
    import json

    from rwtoolkit.cli.main import main
    from rwtoolkit.engines.numeric import positional_embeddings, train_model

    argv = [
        "train",
        "--model",
        "key_query",
        "--K",
        "3",
        "--N",
        "3",
        "--M",
        "4",
        "--population",
        "--steps",
        "3",
    ]
    rule = ["--optimizer", "adamw", "--betas", "0.8,0.99", "--adam-eps", "1e-6", "--weight-decay", "0.1"]
    assert main([*argv, *rule, "--eta", "0.1", "--out", str(tmp_path / "run")]) == 0
    data = json.loads((tmp_path / "run" / "metrics.json").read_text())
    described = {"name": "adamw", "betas": [0.8, 0.99], "eps": 1e-06, "weight_decay": 0.1}
    assert data["config"]["optimizer"] == described
    task = CircleWalk(3, 3, "1/2")
    P = positional_embeddings("sine", 4, 3, None, 0)
    optimizer = Optimizer("adamw", betas=("0.8", "0.99"), eps="1e-6", weight_decay="0.1")
    expected = train_model(task, get_model("key_query"), P, 3, eta=0.1, optimizer=optimizer)
    assert data["final"] == json.loads(json.dumps(expected.final))
    plain = train_model(task, get_model("key_query"), P, 3, eta=0.1)
    assert data["final"]["V"] != json.loads(json.dumps(plain.final))["V"]


@pytest.mark.parametrize(
    ("command", "argv", "line"),
    [
        (
            "train",
            ["--optimizer", "adam"],
            "--optimizer adam trains on the generic engine, on the exact population only: add --population",
        ),  # fmt: skip
        (
            "train",
            ["--population", "--optimizer", "adam", "--rotate"],
            "--rotate is an option of the paper "
            "model's reduced engines, which run plain GD; drop it for --optimizer adam",
        ),  # fmt: skip
        (
            "train",
            ["--population", "--optimizer", "adam", "--momentum", "0.9"],
            "--momentum is out of place: --optimizer adam has none (it applies to momentum, nesterov)",
        ),  # fmt: skip
        (
            "train",
            ["--population", "--optimizer", "adam", "--betas", "0.9"],
            "--betas=0.9 must be two numbers beta1,beta2, e.g. 0.9,0.999",
        ),  # fmt: skip
        (
            "train",
            ["--population", "--optimizer", "nesterov", "--momentum", "1"],
            "--optimizer nesterov: momentum=1 is out of range: must be in (0, 1)",
        ),  # fmt: skip
        (
            "derive",
            ["--p", "1/2", "--optimizer", "adam"],
            "adam: √v is irrational in general; the exact "
            'arithmetic cannot run it; use the ball engine (rw certify --model, or rwtoolkit.engines.select(model, "balls"))',
        ),  # fmt: skip
        (
            "derive",
            ["--p", "1/2", "--optimizer", "adam", "--json", "OUT"],
            "adam: √v is irrational in general; the exact "
            'arithmetic cannot run it; use the ball engine (rw certify --model, or rwtoolkit.engines.select(model, "balls"))',
        ),  # fmt: skip
        (
            "derive",
            ["--p", "1/2", "--optimizer", "momentum", "--verdict"],
            "--optimizer momentum: --verdict applies to plain GD (the verdicts are of the paper's reduced "
            "coordinates); drop it, or --optimizer",
        ),  # fmt: skip
        (
            "certify",
            ["--p", "1/2", "--optimizer", "adam"],
            "--optimizer applies with --model (the generic ball "
            "engine runs the update rules); the paper's certification (one_layer) runs plain GD: drop --optimizer",
        ),  # fmt: skip
        (
            "certify",
            ["--model", "key_query", "--p", "1/2", "--adam-eps", "0", "--optimizer", "adam"],
            "--optimizer adam: eps=0 is out of range: must be > 0",
        ),  # fmt: skip
    ],
)
def test_bad_optimizer_flags_are_one_line_and_exit_2_before_any_work(tmp_path, capsys, command, argv, line):
    from rwtoolkit.cli.main import main

    out = tmp_path / "out"
    argv = [str(out) if a == "OUT" else a for a in argv]
    where = [] if command == "derive" else ["--out", str(out)]
    assert main([command, "--K", "3", "--N", "3", "--steps", "1", *argv, *where]) == 2
    assert capsys.readouterr().err == f"rw {command}: error: {line}\n"
    assert not out.exists()
