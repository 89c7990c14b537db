"""``rw check`` of a sequence model (issue 41, items 5 and 6): a training loop and a JAX port against the model traced
from examples/nanogpt_attention.py, compared with its exact trajectory from the module's own start.

The oracles: the reference is exact GD (the exact engine's DAG arithmetic runs these steps in seconds); the five planted bugs of examples/bugs_nanogpt.py each move a quantity we can name from the bug
alone (the loss at t = 0 for a different objective; θ(2) for momentum, whose first step is plain GD's; the logits at
t = 0 for a different forward pass), so each must fail exactly there. The objective of the kit's runtime
(``CheckConfig.sequence_loss``) is pinned against a numpy log-softmax written here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from rwtoolkit.analyses.check import CheckOptions, check, load_factory, write_report
from rwtoolkit.analyses.check._compare import Mismatch, assert_matches_exact
from rwtoolkit.analyses.check._config import build_config, for_model

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "nanogpt_attention.py")
MODEL = f"{EXAMPLE}:one_layer"
BUGS = str(ROOT / "examples" / "bugs_nanogpt.py")


def _options(**kw) -> CheckOptions:
    return CheckOptions(**{"steps": 2, "examples": 2, "model": MODEL, **kw})


def _config(task=None, objective=None, optimizer=None):
    from rwtoolkit.tasks import binary_markov_task

    task = binary_markov_task("1/3", "3/5", 4) if task is None else task
    config = build_config(task, 1, Fraction(1, 2), 1, "onehot", M=task.N)
    return for_model(config, MODEL, objective=objective, optimizer=optimizer)


def test_the_examples_training_loop_passes_and_the_report_names_its_reference(tmp_path):
    report = check(load_factory(f"{EXAMPLE}:training"), _options(), "training")
    statuses = {r.id: r.status for r in report.results}
    assert report.exit_code == 0
    assert statuses["token_logits"] == statuses["loss"] == statuses["lm_head.weight"] == "pass"
    assert statuses["lemma_C1_first_value_step"] == "not checked"
    assert report.references == ["the exact trajectory"]
    data = json.loads(write_report(report, tmp_path / "report.json").read_text())
    assert data["options"]["task"] == "sequence" and data["options"]["objective"] == "lm"
    assert data["options"]["reference"] == "the exact trajectory"


def test_the_module_itself_trained_by_the_kit_passes():
    """Protocol (a): the PyTorch factory's module, trained by the kit on the objective it defines."""
    module = load_factory(f"{EXAMPLE}:one_layer")
    readouts = assert_matches_exact(lambda config: module(config.K, config.L), _config(), 2)
    assert readouts.protocol == "module"


@pytest.mark.parametrize(
    ("bug", "quantity", "step"),
    [
        ("last_position_only", "loss", 0),
        ("unweighted_mean", "loss", 0),
        ("momentum_left_on", "wte.weight", 2),
    ],
)
def test_a_planted_loop_bug_fails_at_its_first_quantity(bug, quantity, step):
    report = check(load_factory(f"{BUGS}:{bug}"), _options(), bug)
    failed = [r for r in report.results if r.status == "fail"]
    assert [r.id for r in failed] == [quantity]
    assert failed[0].failure["step"] == step


def test_the_last_position_objective_is_the_loops_last_position_loss():
    """--objective last: the loop with the loss at the last position only is then the correct one."""
    factory = load_factory(f"{BUGS}:last_position_only")
    assert_matches_exact(factory, _config(objective="last"), 2)
    with pytest.raises(Mismatch) as err:
        assert_matches_exact(factory, _config(objective="lm"), 2)
    assert (err.value.divergence.quantity, err.value.divergence.step) == ("loss", 0)


def test_the_sequence_objective_of_the_runtime_is_the_weighted_cross_entropy():
    torch = pytest.importorskip("torch")
    config = _config()
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(len(config.labels), config.L, config.K))
    logp = logits - np.log(np.exp(logits).sum(axis=2, keepdims=True))
    seqs = np.concatenate([config.tokens, config.labels[:, None]], axis=1)
    picked = np.take_along_axis(logp, seqs[:, 1:, None], axis=2)[..., 0]  # (n, L)
    lm = -(config.weights * picked.mean(axis=1)).sum()
    last = -(config.weights * picked[:, -1]).sum()
    assert float(config.sequence_loss(torch.as_tensor(logits))) == pytest.approx(lm, rel=1e-14)
    other = _config(objective="last")
    assert float(other.sequence_loss(torch.as_tensor(logits))) == pytest.approx(last, rel=1e-14)


def test_the_jax_port_passes_and_two_port_bugs_fail_at_the_logits():
    pytest.importorskip("jax")
    port = load_factory(str(ROOT / "examples" / "nanogpt_attention_jax.py") + ":training")
    assert_matches_exact(port, _config(), 2)
    for bug in ("jax_mask_off_by_one", "jax_no_sqrt_d"):
        with pytest.raises(Mismatch) as err:
            assert_matches_exact(load_factory(f"{BUGS}:{bug}"), _config(), 2)
        assert (err.value.divergence.quantity, err.value.divergence.step) == ("token_logits", 0), bug


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--objective", "last"],
            "--objective last: model one_layer gives a prediction f, no next-token logits",
        ),
        (["--model", MODEL, "--task", "circle"], "task='circle' is not one of sequence"),
        (
            ["--optimizer", "adam"],
            "--optimizer adam: rw check runs another update rule for a model with next-token",
        ),
    ],
)
def test_bad_options_of_a_sequence_check_are_one_line(args, line):
    out = subprocess.run(
        [sys.executable, "-m", "rwtoolkit.cli.main", "check", f"{EXAMPLE}:training", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and line in out.stderr, out.stderr


def test_a_torch_optim_adam_loop_passes_and_two_hand_written_adam_bugs_fail_at_theta_1():
    """--optimizer adam: the reference runs the engine's Adam (one definition, rwtoolkit.models.Optimizer) in
    balls; the example's loop with torch.optim.Adam, the kit-trained module and a correct hand-written Adam pass;
    the bias correction left out (a first step (1 − β₁)/√(1 − β₂) ≈ 3.2 times too short) and ε inside the root
    (a relative change of about ε/(2v̂)) each move θ(1), the first state an update reaches."""
    from rwtoolkit.models import Optimizer

    config = _config(optimizer=Optimizer("adam"))
    assert_matches_exact(load_factory(f"{EXAMPLE}:training"), config, 2)
    assert_matches_exact(load_factory(f"{BUGS}:adam_by_hand"), config, 2)
    module = load_factory(f"{EXAMPLE}:one_layer")
    assert assert_matches_exact(lambda c: module(c.K, c.L), config, 2).protocol == "module"
    for bug in ("adam_without_bias_correction", "adam_eps_inside_the_root"):
        with pytest.raises(Mismatch) as err:
            assert_matches_exact(load_factory(f"{BUGS}:{bug}"), config, 2)
        assert (err.value.divergence.quantity, err.value.divergence.step) == ("wte.weight", 1), bug


def test_momentum_left_on_is_the_loop_of_the_momentum_rule():
    from rwtoolkit.models import Optimizer

    assert_matches_exact(
        load_factory(f"{BUGS}:momentum_left_on"), _config(optimizer=Optimizer("momentum")), 2
    )
