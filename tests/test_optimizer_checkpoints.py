"""Checkpoints of an update rule with state (issue 43, items 2 and 3): ``rw train --optimizer momentum|nesterov|
adam|adamw --checkpoint-every N`` saves the rule's state (the momentum buffers b; Adam's m, v and step count t per
parameter) beside θ(t), and ``--resume`` continues from it: a run killed right after its checkpoint and resumed
writes the same bytes of metrics.json as the run never interrupted (as tests/test_train_checkpoint.py checks plain
GD). A checkpoint of one rule (or of other hyperparameters) resumed with another is refused in one line naming
both. The model is examples/nanogpt_attention.py:one_layer from its own start on in-context Markov chains S = 2,
N = 4 (16 sequences): milliseconds a step.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import icl_train_argv

from rwtoolkit.cli.main import main
from rwtoolkit.engines.numeric import _model_train

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
STEPS = 8


@pytest.fixture
def argv(tmp_path) -> list[str]:
    return icl_train_argv(tmp_path, "0.05", STEPS, 3)


def _killed_after_first_checkpoint(argv: list[str], out: Path, monkeypatch) -> None:
    saved = _model_train.save_checkpoint

    def save_then_die(*args):
        saved(*args)
        raise KeyboardInterrupt  # killed right after the checkpoint at t = STEPS / 2 is on disk

    with monkeypatch.context() as m:
        m.setattr(_model_train, "save_checkpoint", save_then_die)
        with pytest.raises(KeyboardInterrupt):
            main([*argv, "--checkpoint-every", str(STEPS // 2), "--out", str(out)])


@pytest.mark.parametrize(
    "rule",
    [
        ["--optimizer", "momentum"],
        ["--optimizer", "nesterov", "--momentum", "1/2", "--weight-decay", "0.01"],
        ["--optimizer", "adam"],
        ["--optimizer", "adamw", "--betas", "0.8,0.99"],
    ],
)
def test_a_resumed_run_of_a_rule_with_state_writes_the_same_bytes_as_the_uninterrupted_run(
    argv, tmp_path, monkeypatch, rule
):
    argv = [*argv, *rule]
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    parts = tmp_path / "parts"
    _killed_after_first_checkpoint(argv, parts, monkeypatch)
    state = torch.load(parts / "checkpoint.pt", weights_only=True)
    keys = {"b"} if rule[1] in ("momentum", "nesterov") else {"t", "m", "v"}
    assert (
        state["step"] == STEPS // 2 and state["rule"] and all(set(s) == keys for s in state["rule"].values())
    )
    if "t" in keys:  # Adam's step count, per parameter: the steps taken before the checkpoint
        assert {s["t"] for s in state["rule"].values()} == {STEPS // 2}
    assert main([*argv, "--checkpoint-every", str(STEPS // 2), "--resume", "--out", str(parts)]) == 0
    assert (parts / "metrics.json").read_bytes() == (tmp_path / "whole" / "metrics.json").read_bytes()


@pytest.mark.parametrize(
    ("first", "then", "was", "now"),
    [
        (
            ["--optimizer", "momentum"],
            ["--optimizer", "adam"],
            "--optimizer momentum (momentum 0.9, weight_decay 0.0)",
            "--optimizer adam (betas 0.9,0.999, eps 1e-08, weight_decay 0.0)",
        ),
        (
            ["--optimizer", "momentum"],
            ["--optimizer", "momentum", "--momentum", "0.5"],
            "--optimizer momentum (momentum 0.9, weight_decay 0.0)",
            "--optimizer momentum (momentum 0.5, weight_decay 0.0)",
        ),
        ([], ["--optimizer", "nesterov"], "--optimizer gd (weight_decay 0.0)", "--optimizer nesterov"),
    ],
)
def test_a_resume_with_another_rule_is_refused_in_one_line_naming_both(
    argv, tmp_path, capsys, first, then, was, now
):
    out = tmp_path / "out"
    assert main([*argv, *first, "--checkpoint-every", "3", "--out", str(out)]) == 0
    before = (out / "metrics.json").read_bytes(), (out / "checkpoint.pt").read_bytes()
    capsys.readouterr()
    assert main([*argv, *then, "--checkpoint-every", "3", "--resume", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(
        f"rw train: error: --resume: the checkpoint {out / 'checkpoint.pt'} was written with {was}, now {now}"
    )
    assert ((out / "metrics.json").read_bytes(), (out / "checkpoint.pt").read_bytes()) == before


def test_the_estimate_counts_the_rules_buffers_in_the_checkpoint():
    from rwtoolkit.models import Optimizer, get_model
    from rwtoolkit.tasks import icl_markov_task

    model = get_model(f"{EXAMPLES}/nanogpt_attention.py:one_layer")
    task = icl_markov_task(2, 5, 1)
    sizes = [
        _model_train.model_train_estimate(
            task, model, 1000, 100, checkpoint_every=10, optimizer=rule
        ).file_bytes
        for rule in (None, Optimizer("momentum"), Optimizer("adam"))
    ]
    params = 8 * model.parameter_count(_model_train.Sizes(K=2, M=1000, N=5))
    assert sizes[1] - sizes[0] >= params and sizes[2] - sizes[0] >= 2 * params
