"""Certified ball trajectories of traced models (issue 41): ``rw certify --model`` and ReLU signs in balls.

The balls must contain the exact trajectory (the exact engine, an independent SymPy derivation) and the float64
trajectory of the PyTorch module itself (plain torch autograd on ``F.cross_entropy``, not the toolkit's engines);
the run is planned and refused before any work; a ReLU input the balls cannot sign ends the run inconclusive at
that step, never a pass and never a traceback.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
import torch
import torch.nn.functional as F
from flint import arb, ctx, fmpq

from rwtoolkit.cli.main import main
from rwtoolkit.engines import select
from rwtoolkit.engines.balls import ball_model_job, ball_model_trajectory
from rwtoolkit.io import Verdict
from rwtoolkit.models import get_model
from rwtoolkit.tasks import binary_markov_task, icl_markov_task

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ONE_LAYER = f"{EXAMPLES}/nanogpt_attention.py:one_layer"
WITH_MLP = f"{EXAMPLES}/nanogpt_attention.py:with_mlp"


def _dyadic(part: tuple) -> fmpq:
    sign, man, exp, _ = part
    q = fmpq(man * 2**exp) if exp >= 0 else fmpq(man, 2**-exp)
    return -q if sign else q


def holds(ball: arb, exact: object) -> bool:
    """Whether the ball meets a 256-bit enclosure of the exact value (the exact engine's interval evaluation
    of its atoms): a wrong ball misses an interval 2^-250 wide."""
    from rwtoolkit.engines.exact.arithmetic._decide import enclose

    lo, hi = enclose(sp.sympify(exact), 256)._mpi_
    previous, ctx.prec = ctx.prec, 2048
    try:
        return bool(ball.overlaps(arb(_dyadic(lo)).union(arb(_dyadic(hi)))))
    finally:
        ctx.prec = previous


def within(ball: arb, x: float, slack: float = 1e-12) -> bool:
    """|x − mid| ≤ rad + slack: a float64 value inside the ball up to float64 rounding."""
    return abs(x - float(ball.mid())) <= float(ball.rad()) + slack


def torch_trajectory(
    factory, task, steps: int, eta: float = 1.0
) -> list[tuple[float, dict[str, np.ndarray]]]:
    """(loss, parameters) at t = 0..steps of float64 population GD of the module itself: Σ_x π(x) · mean over
    positions of F.cross_entropy against the next token, torch autograd."""
    pop = task.population()
    tokens = torch.tensor(pop.tokens)
    targets = torch.tensor(np.concatenate([pop.tokens[:, 1:], pop.labels[:, None]], axis=1))
    weights = torch.tensor([float(q) for q in pop.exact_probs()], dtype=torch.float64)
    module = factory(task.K, task.N - 1)
    out = []
    for t in range(steps + 1):
        module.zero_grad()
        logits = module(tokens)
        n, L, S = logits.shape
        per = F.cross_entropy(logits.reshape(n * L, S), targets.reshape(n * L), reduction="none").reshape(
            n, L
        )
        loss = (weights * per.mean(dim=1)).sum()
        out.append(
            (float(loss.detach()), {k: v.detach().numpy().copy() for k, v in module.named_parameters()})
        )
        if t < steps:
            loss.backward()
            with torch.no_grad():
                for v in module.parameters():
                    v -= eta * v.grad
    return out


def _example(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "nanogpt_attention_for_test", EXAMPLES / "nanogpt_attention.py"
    )
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return getattr(module, name)


def test_ball_enclosures_contain_the_exact_trajectory_and_the_pytorch_float64_run():
    """One_layer traced from PyTorch, binary (p, q) source, its own start: 5 certified steps whose balls hold the
    exact engine's loss and parameters (t = 0, 1) and the module's own float64 GD (t = 0..5) within rad + 1e-12."""
    task = binary_markov_task("1/3", "3/5", 3)
    model = get_model(ONE_LAYER)
    balls = select(model, "balls", "own").load()(task, model, 5, init="own")
    assert balls.outcome is Verdict.HOLDS and balls.stopped is None and balls.times == (0, 1, 2, 3, 4, 5)
    exact = select(model, "exact", "own").load()(task, model=model, steps=1, init="own")
    for t in range(2):
        assert holds(balls.loss(t), exact.states[t].loss), t
        for name, value in exact.states[t].params.items():
            ball = balls.value(t, name)
            assert all(holds(b, x) for b, x in zip(ball.ravel(), value.ravel(), strict=True)), (t, name)
    reference = torch_trajectory(_example("one_layer"), task, 5)
    for t, (loss, params) in enumerate(reference):
        assert within(balls.loss(t), loss), (t, loss, balls.loss(t))
        for name, value in params.items():
            ball = balls.value(t, name)
            assert all(within(b, x) for b, x in zip(ball.ravel(), value.ravel(), strict=True)), (t, name)
    moved = np.abs(reference[5][1]["lm_head.weight"] - reference[0][1]["lm_head.weight"]).max()
    assert moved > 1e-3  # the run compares a motion, not a start


def test_rw_certify_model_writes_the_loss_enclosures_and_widest_radius(tmp_path, capsys):
    spec = tmp_path / "icl.json"
    spec.write_text(json.dumps({"task": {"family": "icl_markov", "params": {"S": 2, "N": 5, "alpha": 1}}}))
    out = tmp_path / "out"
    argv = [
        "certify",
        "--model",
        ONE_LAYER,
        "--spec",
        str(spec),
        "--init",
        "own",
        "--steps",
        "3",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "rw certify: estimated ~" in captured.err and "verified" in captured.out
    data = json.loads((out / "certify.json").read_text())
    assert data["format"] == "rw-certify-model" and data["outcome"] == "verified" and data["reason"] is None
    assert [s["step"] for s in data["steps"]] == [0, 1, 2, 3]
    assert data["estimate"]["prec"] == data["prec"] == 274 and data["estimate"]["seconds"] > 0
    reference = torch_trajectory(_example("one_layer"), icl_markov_task(2, 5, 1), 3)
    for step, (loss, _) in zip(data["steps"], reference, strict=True):
        assert abs(loss - step["loss"]["mid"]) <= step["loss"]["rad"] + 1e-12
        assert 0 <= step["widest_parameter_radius"] < 1e-60
    assert data["steps"][0]["widest_parameter_radius"] == 0  # the start: exact dyadic rationals
    report = (out / "CERTIFY.md").read_text()
    assert "Outcome: **verified**" in report and "| 3 | [" in report


def test_the_estimate_refuses_beyond_its_limit_naming_the_steps_that_fit(tmp_path, capsys):
    task = icl_markov_task(2, 5, 1)
    model = get_model(ONE_LAYER)
    job = ball_model_job(task, model, 200, init="own")
    assert job.bits == 256 + 6 * 200 and job.recorded == list(range(201))
    assert 1 < job.estimate.seconds < 3600 and job.estimate.memory > 2**28 and job.estimate.file_bytes < 2**20
    with pytest.raises(
        ValueError, match=r"is estimated at .* s, above the limit of 10 s; take at most --steps (\d+)"
    ):
        ball_model_job(task, model, 200, init="own", max_seconds=10)
    try:
        ball_model_job(task, model, 200, init="own", max_seconds=10)
    except ValueError as error:
        fits = int(str(error).rsplit(" ", 1)[1])
    assert 0 < fits < 200 and ball_model_job(task, model, fits, init="own", max_seconds=10).steps == fits
    spec = tmp_path / "icl.json"
    spec.write_text(json.dumps({"task": {"family": "icl_markov", "params": {"S": 2, "N": 5, "alpha": 1}}}))
    out = tmp_path / "out"
    base = ["certify", "--model", ONE_LAYER, "--spec", str(spec), "--out", str(out)]
    cases = [
        (
            ["--steps", "200", "--init", "own", "--max-seconds", "10"],
            "above the limit of 10 s; take at most --steps",
        ),
        (["--steps", "100000"], "take at most --steps"),
        (["--steps", "-1"], "--steps"),
        (["--steps", "2", "--eta", "-1"], "--eta='-1' must be a positive rational"),
        (["--steps", "2", "--M", "8"], "--M applies to the paper's model (one_layer) only"),
        (
            ["--steps", "2", "--objective", "last", "--model", "key_query"],
            "--objective last: model key_query",
        ),
    ]
    for extra, message in cases:
        argv = base + extra if "--model" not in extra else base[:1] + base[3:] + extra
        assert main(argv) == 2, extra
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err, (extra, err)
        assert not out.exists(), extra
    assert main(["certify", "--K", "3", "--N", "4", "--p", "1", "--init", "own", "--out", str(out)]) == 2
    assert "--init applies with --model" in capsys.readouterr().err


SYMMETRIC_MLP = '''
import importlib.util

import torch

spec = importlib.util.spec_from_file_location("nanogpt_attention_symmetric", {path!r})
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)


def symmetric(S, L):
    """with_mlp with residual dimensions 0 and 1 interchangeable (together with feed-forward units 0 and 1) and
    the attention's output map at 0: ReLU units 0 and 1 read x_0 − x_1 = 0, exactly 0 at the start (every value
    a dyadic rational) and, by the symmetry, 0 at every step, but from step 1 computed from inexact balls."""
    m = example.with_mlp(S, L)
    block = m.blocks[0]
    with torch.no_grad():
        for weight in (m.wte.weight, m.wpe.weight, block.attn.query.weight, block.attn.key.weight,
                       block.attn.value.weight, block.mlp.fc.weight, m.lm_head.weight):
            weight[:, 1] = weight[:, 0]
        block.attn.proj.weight.zero_()
        block.mlp.fc.weight[0] = torch.tensor([1.0, -1.0, 0.0, 0.0])
        block.mlp.fc.weight[1] = torch.tensor([-1.0, 1.0, 0.0, 0.0])
        block.mlp.fc.bias[0] = block.mlp.fc.bias[1] = 0.0
        out = block.mlp.out
        out.weight[1] = out.weight[0]
        out.weight[:, 1] = out.weight[:, 0]
        out.bias[1] = out.bias[0]
    return m
'''


def test_a_relu_input_straddling_zero_ends_the_run_inconclusive_with_the_steps_before_kept(tmp_path, capsys):
    (tmp_path / "symmetric_mlp.py").write_text(
        textwrap.dedent(SYMMETRIC_MLP.format(path=str(EXAMPLES / "nanogpt_attention.py")))
    )
    task = binary_markov_task("1/3", "3/5", 3)
    model = get_model(f"{tmp_path}/symmetric_mlp.py:symmetric")
    traj = ball_model_trajectory(task, model, 4, init="own")
    assert traj.outcome is Verdict.INCONCLUSIVE and traj.stopped_at == 1 and traj.times == (0,)
    assert traj.stopped.startswith("inconclusive at step 1: a ReLU input straddles 0 (entry ("), traj.stopped
    assert traj.settled and traj.prec == 256 + 6 * 4  # a ball around an exact 0: no precision chased for it
    out = tmp_path / "out"
    spec = tmp_path / "binary.json"
    spec.write_text(
        json.dumps({"task": {"family": "binary_markov", "params": {"p": "1/3", "q": "3/5", "N": 3}}})
    )
    argv = ["certify", "--model", f"{tmp_path}/symmetric_mlp.py:symmetric", "--spec", str(spec)]
    assert main([*argv, "--init", "own", "--steps", "4", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "inconclusive" in printed and "a ReLU input straddles 0" in printed
    data = json.loads((out / "certify.json").read_text())
    assert data["outcome"] == "inconclusive" and data["stopped_at"] == 1 and len(data["steps"]) == 1
    assert "inconclusive at step 1: a ReLU input straddles 0" in (out / "CERTIFY.md").read_text()


def test_decided_relu_signs_certify_every_step():
    """with_mlp from its own (random) start: every ReLU input is away from 0, every step certified, and the balls
    hold the module's own float64 GD."""
    task = binary_markov_task("1/3", "3/5", 3)
    model = get_model(WITH_MLP)
    traj = ball_model_trajectory(task, model, 3, init="own")
    assert traj.outcome is Verdict.HOLDS and traj.stopped is None and traj.times == (0, 1, 2, 3)
    for t, (loss, params) in enumerate(torch_trajectory(_example("with_mlp"), task, 3)):
        assert within(traj.loss(t), loss), t
        for name, value in params.items():
            assert all(within(b, x) for b, x in zip(traj.value(t, name).ravel(), value.ravel(), strict=True))


def test_a_billion_steps_are_refused_by_counting_not_listing_them():
    """The plan counts the recorded steps: 10⁹ of them used to be listed (gigabytes) before the refusal."""
    with pytest.raises(
        ValueError, match=r"\(1000000000 steps at 6000000256 bits\) is estimated at .* take at most"
    ):
        ball_model_job(icl_markov_task(2, 5, 1), get_model(ONE_LAYER), 10**9, init="own")
