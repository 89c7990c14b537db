"""``rw train`` of a sequence model (issue 41, items 4-5): ``--objective lm|last``, ``--init own`` and ``--spec``.

The traced nanoGPT-style example (``examples/nanogpt_attention.py:one_layer``) trains on the binary (p, q) source
(S = 2, N = 3: 8 sequences) from the module's own float64 start. Its recorded losses at t = 0..2 must equal three
references within 1e-12 (float64 rounding of a loss of order 1 over two steps): the exact engine's loss at t = 0
(SymPy, from the same start as exact dyadic rationals), the certified ball trajectory at t = 0..2 (inside
rad + 1e-12), and plain PyTorch autograd GD of the module itself on ``F.cross_entropy`` weighted by the exact
probabilities (not the toolkit's engines). The refusals are one line, exit 2, before any file is written.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rwtoolkit.cli.main import main
from rwtoolkit.tasks import binary_markov_task

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ONE_LAYER = f"{EXAMPLES}/nanogpt_attention.py:one_layer"
SOURCE = {"task": {"family": "binary_markov", "params": {"p": "1/3", "q": "3/5", "N": 3}}}
ETA = 0.25  # a dyadic rational: the same step in floats, balls and exact arithmetic
STEPS = 2
#: float64 against the exact value: a loss of order 1 after two steps of float64 GD.
TOL = 1e-12


def module_losses(task, steps: int, last: bool) -> list[float]:
    """The loss at t = 0..steps of float64 population GD of the PyTorch module itself (torch autograd): Σ_x π(x)
    · mean over positions of F.cross_entropy against the next token (the last position only with ``last``)."""
    spec = importlib.util.spec_from_file_location("nanogpt_for_train_test", EXAMPLES / "nanogpt_attention.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    module = example.one_layer(task.K, task.N - 1)
    pop = task.population()
    tokens = torch.tensor(pop.tokens)
    targets = torch.tensor(np.concatenate([pop.tokens[:, 1:], pop.labels[:, None]], axis=1))
    weights = torch.tensor([float(q) for q in pop.exact_probs()], dtype=torch.float64)
    losses = []
    for t in range(steps + 1):
        module.zero_grad()
        logits = module(tokens)
        n, L, S = logits.shape
        per = F.cross_entropy(logits.reshape(n * L, S), targets.reshape(n * L), reduction="none").reshape(
            n, L
        )
        loss = (weights * (per[:, -1] if last else per.mean(dim=1))).sum()
        losses.append(float(loss.detach()))
        if t < steps:
            loss.backward()
            with torch.no_grad():
                for v in module.parameters():
                    v -= ETA * v.grad
    return losses


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict[str, dict]:
    """metrics.json of ``rw train --init own --objective lm`` and ``... last`` on the binary (p, q) source."""
    folder = tmp_path_factory.mktemp("train_sequence")
    spec = folder / "binary.json"
    spec.write_text(json.dumps(SOURCE))
    out = {}
    for objective in ("lm", "last"):
        argv = ["train", "--model", ONE_LAYER, "--spec", str(spec), "--population", "--init", "own"]
        argv += ["--objective", objective, "--eta", str(ETA), "--steps", str(STEPS)]
        assert main([*argv, "--out", str(folder / objective)]) == 0
        out[objective] = json.loads((folder / objective / "metrics.json").read_text())
    return out


def test_the_objective_choices_are_the_models_objectives():
    from rwtoolkit.cli._models import OBJECTIVE_CHOICES
    from rwtoolkit.models import OBJECTIVES

    assert OBJECTIVE_CHOICES == OBJECTIVES


@pytest.mark.parametrize("objective", ["lm", "last"])
def test_rw_train_from_its_own_start_records_the_exact_ball_and_module_losses(trained, objective):
    from rwtoolkit.engines import select
    from rwtoolkit.engines.exact import nearest_double
    from rwtoolkit.models import get_model

    metrics = trained[objective]
    assert metrics["config"]["init"] == "own" and metrics["config"]["objective"] == objective
    assert metrics["config"]["task"]["name"] == "binary_markov"
    losses = [record["train_loss"] for record in metrics["history"]]
    assert [record["step"] for record in metrics["history"]] == list(range(STEPS + 1))
    task = binary_markov_task("1/3", "3/5", 3)
    model = get_model(ONE_LAYER)
    exact = select(model, "exact", "own").load()(task, model=model, steps=0, init="own", objective=objective)
    assert abs(losses[0] - nearest_double(exact.states[0].loss)) < TOL
    balls = select(model, "balls", "own").load()(
        task, model, STEPS, eta="1/4", init="own", objective=objective
    )
    for t, loss in enumerate(losses):
        ball = balls.loss(t)
        assert abs(loss - float(ball.mid())) <= float(ball.rad()) + TOL, (t, loss, ball)
    reference = module_losses(task, STEPS, last=objective == "last")
    assert np.abs(np.array(losses) - reference).max() < TOL
    assert abs(losses[STEPS] - losses[0]) > 1e-3  # the run compares a motion, not a start


def test_lm_and_last_are_different_objectives(trained):
    assert abs(trained["lm"]["history"][0]["train_loss"] - trained["last"]["history"][0]["train_loss"]) > 1e-3


#: rw train of the registered key_query model on the population of a small circle task.
KEY_QUERY = ["--model", "key_query", "--population", "--K", "3", "--N", "4", "--M", "8"]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--objective", "lm", "--K", "3", "--N", "4"],
            "--objective lm: model one_layer gives a prediction f, no next-token logits; drop --objective "
            "(f trains on its loss: --loss, or a configuration's loss)",
        ),
        (
            [
                "--model",
                "key_query",
                "--objective",
                "last",
                "--population",
                "--K",
                "3",
                "--N",
                "4",
                "--M",
                "8",
            ],
            "--objective last: model key_query gives a prediction f, no next-token logits; drop --objective "
            "(f trains on its loss: --loss, or a configuration's loss)",
        ),
        (
            ["--init", "own", "--K", "3", "--N", "4"],
            "--init own: model one_layer has no start of its own (a sequence program's initial parameters); "
            "use --init zero or gaussian",
        ),
        (
            ["--model", "key_query", "--init", "own", "--population", "--K", "3", "--N", "4", "--M", "8"],
            "--init own: model key_query has no start of its own (a sequence program's initial parameters); "
            "use --init zero or gaussian",
        ),
        (["--spec", "SPEC", "--K", "3"], "--spec replaces the task options: drop --K"),
        (
            [*KEY_QUERY, "--seed", "-1"],
            "seed=-1 must be an integer >= 0",
        ),
        (
            [*KEY_QUERY, "--record-steps", "9"],
            "record_steps entry 9 is out of range: must be an integer in [0, steps=1]",
        ),
        (
            [*KEY_QUERY, "--init", "gaussian", "--sigma", "1e308"],
            "the parameters are not finite at step 0: the start is not finite (lower --sigma)",
        ),
    ],
)
def test_rw_train_refuses_an_objective_or_own_start_the_model_has_not_in_one_line(
    tmp_path, capsys, argv, line
):
    spec = tmp_path / "binary.json"
    spec.write_text(json.dumps(SOURCE))
    argv = [str(spec) if a == "SPEC" else a for a in argv]
    assert main(["train", *argv, "--steps", "1", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == f"rw train: error: {line}\n"
    assert not (tmp_path / "out").exists()


def test_rw_train_refuses_a_symbolic_spec_task_in_one_line(tmp_path, capsys):
    spec = tmp_path / "symbolic.json"
    source = {"task": {"family": "binary_markov", "params": {"p": "p", "q": "3/5", "N": 3}}}
    spec.write_text(json.dumps(source))
    argv = ["train", "--spec", str(spec), "--population", "--steps", "1", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("rw train: error: the task's probabilities are symbolic (") and err.count("\n") == 1
    assert err.rstrip().endswith("rw train needs numbers")
    assert not (tmp_path / "out").exists()
