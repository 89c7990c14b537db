"""Schedules and stages on the command line (issue 43, item 2): ``--schedule step:EVERY:FACTOR | warmup:W |
cosine:T`` and ``--stages 'GLOBS=STEPS,...'`` read by the one definition (``rwtoolkit.models.Schedule``,
``parse_stages``, ``glob_stages``, ``stage_plan``) and run by the engines through ``gradient_steps``.

Each run is checked against an independent reading: the Python API's ``descend`` in float64 with the schedule
written by hand as a lambda and the stages as sets of names (within 1e-12: torch and NumPy round apart), and the
parameters a staged run never trains against the start, bit for bit. Bad input is one line naming the flag, exit
2, before any file. The models: key_query (registered; circle walk K = 3, N = 3, M = 4, Gaussian start) and
examples/nanogpt_attention.py:one_layer (in-context Markov chains S = 2, N = 4, its own start).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from rwtoolkit.cli.main import main
from rwtoolkit.engines.numeric import _model_train, positional_embeddings
from rwtoolkit.models import (
    FLOAT64,
    ArithmeticLoss,
    CrossEntropy,
    Optimizer,
    Schedule,
    batch,
    descend,
    get_model,
    rational_positions,
)
from rwtoolkit.tasks import CircleWalk, icl_markov_task

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NANO = f"{EXAMPLES}/nanogpt_attention.py:one_layer"
BLOCK = [
    "blocks.0.attn.query.weight",
    "blocks.0.attn.key.weight",
    "blocks.0.attn.value.weight",
    "blocks.0.attn.proj.weight",
]


def _spec(tmp_path: Path) -> str:
    spec = tmp_path / "icl.json"
    spec.write_text(json.dumps({"task": {"family": "icl_markov", "params": {"S": 2, "N": 4}}}))
    return str(spec)


def _train(tmp_path: Path) -> list[str]:
    """``rw train`` of NANO from its own start, 6 steps of population GD (the options under test appended)."""
    return [
        "train",
        "--model",
        NANO,
        "--spec",
        _spec(tmp_path),
        "--init",
        "own",
        "--population",
        "--steps",
        "6",
    ]


def _final(out: Path) -> dict[str, np.ndarray]:
    final = json.loads((out / "metrics.json").read_text())["final"]
    return {k: np.asarray(v) for k, v in final.items() if k != "attention_profile"}


def _python_api_nano(steps, eta, optimizer, schedule, stages):
    """descend in float64 on one_layer's population cross-entropy from its own start."""
    model, task = get_model(NANO), icl_markov_task(2, 4, 1)
    pop = task.population()
    P = positional_embeddings("sine", 1000, 4, None, 0)  # rw train's default --pos, which one_layer ignores
    data = batch(FLOAT64, pop.tokens, pop.labels, np.asarray(pop.float_probs()), task.K, P)
    start = _model_train.initial_model_parameters(model, data.inputs.sizes, "own", 0.0, 0)
    states = descend(
        model, FLOAT64, start, data, CrossEntropy("lm"), eta, steps, optimizer=optimizer, schedule=schedule,
        stages=stages,
    )  # fmt: skip
    return start, states[-1].params


@pytest.mark.parametrize(
    ("flags", "schedule", "stages"),
    [
        (
            ["--optimizer", "momentum", "--schedule", "step:2:1/2", "--stages", "blocks.0.*=3,*=3"],
            lambda t: Fraction(1, 2) ** (t // 2),
            [(3, set(BLOCK)), (3, {"wte.weight", "wpe.weight", "lm_head.weight", *BLOCK})],
        ),
        (
            ["--optimizer", "adam", "--schedule", "warmup:4", "--stages", "wte.*|lm_head.*=6"],
            lambda t: Fraction(min(t + 1, 4), 4),
            [(6, {"wte.weight", "lm_head.weight"})],
        ),
        (
            ["--schedule", "cosine:5"],
            lambda t: (1 + math.cos(math.pi * min(t, 5) / 5)) / 2,
            None,
        ),
    ],
)
def test_rw_train_of_one_layer_with_a_schedule_and_stages_equals_the_python_api(
    tmp_path, flags, schedule, stages
):
    argv = [
        "train",
        "--model",
        NANO,
        "--spec",
        _spec(tmp_path),
        "--init",
        "own",
        "--population",
        "--eta",
        "0.3",
    ]
    assert main([*argv, "--steps", "6", *flags, "--out", str(tmp_path / "out")]) == 0
    got = _final(tmp_path / "out")
    rule = Optimizer(flags[1]) if flags[0] == "--optimizer" else Optimizer()
    start, want = _python_api_nano(6, 0.3, rule, schedule, stages)
    for name, value in want.items():
        assert np.abs(got[name] - value).max() < 1e-12, name
    trained = set().union(*(names for _, names in stages)) if stages else set(start)
    for name in set(start) - trained:  # never in a stage: the start's bits
        assert np.array_equal(got[name], start[name]), name
    for name in trained:
        assert not np.array_equal(got[name], start[name]), name
    config = json.loads((tmp_path / "out" / "metrics.json").read_text())["config"]
    assert config["schedule"] == flags[flags.index("--schedule") + 1]


def test_rw_train_of_key_query_in_stages_leaves_the_frozen_parameters_bit_identical(tmp_path):
    argv = "train --model key_query --K 3 --N 3 --M 4 --population --init gaussian --sigma 0.5 --eta 0.5 --steps 5 --loss squared"
    flags = ["--optimizer", "nesterov", "--schedule", "step:1:9/10", "--stages", "W_Q=2,V|W_K=3"]
    assert main([*argv.split(), *flags, "--out", str(tmp_path / "out")]) == 0
    got = _final(tmp_path / "out")
    model, task = get_model("key_query"), CircleWalk(3, 3, "1/2")
    pop = task.population()
    P = positional_embeddings("sine", 4, 3, None, 0)
    data = batch(FLOAT64, pop.tokens, pop.labels, np.asarray(pop.float_probs()), 3, P)
    start = _model_train.initial_model_parameters(model, data.inputs.sizes, "gaussian", 0.5, 0)
    states = descend(
        model, FLOAT64, start, data, ArithmeticLoss("squared", 0.1, FLOAT64), 0.5, 5, optimizer=Optimizer("nesterov"),
        schedule=lambda t: Fraction(9, 10) ** t, stages=[(2, {"W_Q"}), (3, {"V", "W_K"})],
    )  # fmt: skip
    for name, value in states[-1].params.items():
        assert np.abs(got[name] - value).max() < 1e-12, name
    assert np.array_equal(np.asarray(states[2].params["V"]), start["V"])  # V waits for the second stage


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (["--schedule", "step:0:1/2"], "--schedule='step:0:1/2' is not one of the forms step:EVERY:FACTOR"),
        (["--schedule", "linear:3"], "--schedule='linear:3' is not one of the forms step:EVERY:FACTOR"),
        (["--schedule", "step:2:-1"], "--schedule='step:2:-1' is not one of the forms"),
        (["--stages", "blocks.0.*"], "--stages='blocks.0.*' must be GLOBS=STEPS,... in order"),
        (["--stages", "blocks.0.*=0"], "--stages='blocks.0.*=0' must be GLOBS=STEPS,... in order"),
        (
            ["--stages", "nothing.*=6"],
            "--stages: 'nothing.*' matches no parameter of the model (wte.weight, ",
        ),
        (["--stages", "blocks.0.*=3"], "--stages: stages cover 3 steps; steps=6: they must cover every step"),
    ],
)
def test_bad_schedules_and_stages_are_one_line_exit_2_before_any_file(tmp_path, capsys, extra, line):
    argv = _train(tmp_path)
    assert main([*argv, *extra, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"rw train: error: {line}")
    assert not (tmp_path / "out").exists()


def test_a_resumed_run_with_a_schedule_and_stages_writes_the_same_bytes(tmp_path, monkeypatch):
    argv = _train(tmp_path)
    argv += [
        "--optimizer",
        "adamw",
        "--schedule",
        "step:1:4/5",
        "--stages",
        "blocks.0.*=2,*=4",
        "--eta",
        "0.1",
    ]
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    saved = _model_train.save_checkpoint

    def save_then_die(*args):
        saved(*args)
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(_model_train, "save_checkpoint", save_then_die)
        with pytest.raises(KeyboardInterrupt):
            main([*argv, "--checkpoint-every", "3", "--out", str(tmp_path / "parts")])
    assert main([*argv, "--checkpoint-every", "3", "--resume", "--out", str(tmp_path / "parts")]) == 0
    whole = (tmp_path / "whole" / "metrics.json").read_bytes()
    assert (tmp_path / "parts" / "metrics.json").read_bytes() == whole


def test_the_cosine_schedule_is_refused_by_the_exact_arithmetic_naming_the_float_and_ball_engines():
    from rwtoolkit.engines.exact import EXACT

    with pytest.raises(ValueError, match="use the float engine \\(rw train\\) or the ball engine"):
        Schedule.parse("cosine:10").check(EXACT)
    Schedule.parse("step:10:1/2").check(EXACT)  # rational factors: the exact arithmetic runs them


def test_rw_certify_model_with_a_schedule_and_stages_holds_the_python_apis_run(tmp_path):
    argv = ["certify", "--model", NANO, "--spec", _spec(tmp_path), "--init", "own", "--steps", "3"]
    flags = [
        "--eta",
        "3/10",
        "--optimizer",
        "momentum",
        "--schedule",
        "step:1:1/2",
        "--stages",
        "blocks.0.*=1,*=2",
    ]
    assert main([*argv, *flags, "--out", str(tmp_path / "out")]) == 0
    data = json.loads((tmp_path / "out" / "certify.json").read_text())
    assert data["outcome"] == "verified" and data["config"]["schedule"] == "step:1:1/2"
    assert [k for k, _ in data["config"]["stages"]] == [1, 2]
    model, task = get_model(NANO), icl_markov_task(2, 4, 1)
    pop = task.population()
    P = np.asarray(rational_positions(4, 1), dtype=float)  # the ball engine's (one_layer ignores them)
    data_ = batch(FLOAT64, pop.tokens, pop.labels, np.asarray(pop.float_probs()), 2, P)
    start = _model_train.initial_model_parameters(model, data_.inputs.sizes, "own", 0.0, 0)
    states = descend(
        model, FLOAT64, start, data_, CrossEntropy("lm"), 0.3, 3, optimizer=Optimizer("momentum"),
        schedule=lambda t: Fraction(1, 2) ** t, stages=[(1, set(BLOCK)), (2, set(start))],
    )  # fmt: skip
    for step, state in zip(
        data["steps"], states, strict=True
    ):  # the ball holds the float64 run (its rounding)
        assert abs(step["loss"]["mid"] - float(state.loss)) <= step["loss"]["rad"] + 1e-12, step["step"]


def test_bad_schedules_of_rw_certify_are_one_line_exit_2_before_any_file(tmp_path, capsys):
    argv = ["certify", "--model", "key_query", "--K", "3", "--N", "3", "--p", "1/2", "--steps", "2"]
    for extra, line in (
        (["--stages", "X=2"], "--stages: 'X' matches no parameter of the model (V, W_K, W_Q)"),
        (["--schedule", "warmup"], "--schedule='warmup' is not one of the forms"),
    ):
        assert main([*argv, *extra, "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"rw certify: error: {line}")
        assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (
            ["--schedule", "cosine:3"],
            "--schedule cosine:3: the cosine's factors are floats, not rationals; the exact arithmetic cannot run "
            "it; use the float engine (rw train) or the ball engine (rw certify --model)",
        ),
        (["--stages", "x=3"], "--stages: 'x' matches no parameter of the model (V, W_K, W_Q)"),
        (["--stages", "V=1,W_*=1"], "--stages: stages cover 2 steps; steps=3: they must cover every step"),
    ],
)
def test_bad_schedules_of_rw_derive_are_one_line_exit_2_before_any_file(tmp_path, capsys, extra, line):
    argv = ["derive", "--model", "key_query", "--K", "3", "--N", "3", "--p", "1/2", "--steps", "3"]
    assert main([*argv, *extra, "--json", str(tmp_path / "o.json")]) == 2
    assert capsys.readouterr().err == f"rw derive: error: {line}\n"
    assert not (tmp_path / "o.json").exists()
