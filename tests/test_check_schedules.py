"""``rw check --schedule`` and ``--stages`` (issue 43, item 2): a user's loop under a learning-rate scheduler or
trained in stages is checked against the engine's trajectory under the same schedule and stages.

The oracles: the reference is the engine's (rwtoolkit.models.gradient_steps with schedule= and stages=, in
certified balls); the loops here are written with torch.optim alone (``LambdaLR`` with the schedule written as a
lambda; a stage's other parameters left without a gradient, which ``torch.optim`` skips), independently of the
config's ``lr_factors`` and ``trained``. Which quantity a loop without the schedule or the stages first moves
follows from the rule alone: with ``step:1:1/2`` the step from θ(0) is at η either way, so θ(1) agrees and θ(2)
does not (the first parameter compared, wte.weight, at t = 2); trained at once instead of attention first, every
parameter outside the attention moves at the first step (wte.weight at t = 1).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rwtoolkit.analyses.check import CheckOptions, check, load_factory, write_report
from rwtoolkit.analyses.check._compare import Mismatch, assert_matches_exact
from rwtoolkit.models import Schedule, parse_stages

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "nanogpt_attention.py")
MODEL = f"{EXAMPLE}:one_layer"
ATTENTION = "blocks.0.*"
STAGES = f"{ATTENTION}=1,*=1"


def _one_layer(config: Any) -> Any:
    return load_factory(MODEL)(config.K, config.L)


def _loop(config: Any, halve: bool = False, attention_first: bool = False) -> Iterator[dict]:
    """A plain torch loop on the config's population: SGD at lr η, with ``LambdaLR(0.5 ** t)`` where ``halve``,
    and, where ``attention_first``, the first step on the attention block's parameters only."""
    net = _one_layer(config)
    seqs = torch.as_tensor(config.sequences)
    x, y = seqs[:, :-1], seqs[:, 1:]
    weights = torch.as_tensor(config.weights, dtype=torch.float64)
    opt = torch.optim.SGD(net.parameters(), lr=float(config.eta))
    scheduler = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 0.5**t) if halve else None
    t = 0
    while True:
        logits = net(x)
        B, T, S = logits.shape
        ce = F.cross_entropy(logits.reshape(B * T, S), y.reshape(B * T), reduction="none").view(B, T)
        loss = (weights * ce.mean(dim=1)).sum()
        yield {
            **{name: p.detach().clone() for name, p in net.named_parameters()},
            "token_logits": logits.detach(),
            "loss": loss.item(),
        }
        opt.zero_grad()
        loss.backward()
        if attention_first and t == 0:
            for name, p in net.named_parameters():
                if not name.startswith("blocks.0."):
                    p.grad = None
        opt.step()
        if scheduler is not None:
            scheduler.step()
        t += 1


def _config(schedule: str | None = None, stages: str | None = None) -> Any:
    """The smallest sequence task rw check draws (binary (1/3, 3/5) source, N = 3) for the nanoGPT model, at
    η = 1/2, with the schedule and stages resolved for 2 steps as ``rw check`` resolves them (``CheckOptions``)."""
    from rwtoolkit.analyses.check._config import build_config, for_model
    from rwtoolkit.tasks import binary_markov_task

    options = _options(schedule, stages)
    config = build_config(binary_markov_task("1/3", "3/5", 3), 1, "1/2", 1, "onehot", M=3)
    return for_model(config, MODEL, schedule=options.schedule, stages=options.stages, steps=2)


def _options(schedule: str | None = None, stages: str | None = None) -> CheckOptions:
    return CheckOptions(
        steps=2,
        examples=1,
        model=MODEL,
        schedule=None if schedule is None else Schedule.parse(schedule),
        stages=None if stages is None else parse_stages(stages),
    )


def _first_wrong(factory: Any, config: Any) -> tuple[str, int] | None:
    """Where ``factory`` first leaves the reference on ``config`` (quantity, step), None where it does not."""
    try:
        assert_matches_exact(factory, config, 2)
    except Mismatch as err:
        return err.divergence.quantity, err.divergence.step
    return None


def test_a_lambdalr_loop_passes_under_its_schedule_and_fails_without_it():
    halving, constant = _config(schedule="step:1:1/2"), _config()
    assert _first_wrong(lambda c: _loop(c, halve=True), halving) is None
    assert _first_wrong(lambda c: _loop(c), halving) == ("wte.weight", 2)
    assert _first_wrong(lambda c: _loop(c, halve=True), constant) == ("wte.weight", 2)


def test_a_loop_trained_in_stages_passes_under_its_stages_and_fails_without_them():
    staged, together = _config(stages=STAGES), _config()
    assert _first_wrong(lambda c: _loop(c, attention_first=True), staged) is None
    assert _first_wrong(lambda c: _loop(c), staged) == ("wte.weight", 1)
    assert _first_wrong(lambda c: _loop(c, attention_first=True), together) == ("wte.weight", 1)


def _scheduled_loop(config: Any) -> Iterator[dict]:
    """A torch loop that takes the schedule and the stages from the config (``CheckConfig.scheduled``)."""
    net = _one_layer(config)
    tokens = torch.as_tensor(config.tokens)
    opt = torch.optim.SGD(net.parameters(), lr=float(config.eta))
    for t in range(config.steps + 1):
        loss = config.sequence_loss(net(tokens))
        yield {name: p.detach().clone() for name, p in net.named_parameters()}
        if t < config.steps:
            opt.zero_grad()
            loss.backward()
            config.scheduled(opt, t, net.named_parameters())
            opt.step()


def test_the_kits_module_loop_and_config_scheduled_run_both(tmp_path):
    """The module itself (protocol (a)) trained by the kit under both flags, and a loop stepping through
    ``config.scheduled``; the report names the schedule and the stages."""
    both = _config(schedule="step:1:1/2", stages=STAGES)
    readouts = assert_matches_exact(_one_layer, both, 2)
    assert readouts.protocol == "module"
    wte = readouts.series("wte.weight")  # outside the first stage: unmoved by the first step, bit for bit
    assert (wte[1] == wte[0]).all() and not (wte[2] == wte[1]).all()
    assert _first_wrong(_scheduled_loop, both) is None
    report = check(_one_layer, _options("step:1:1/2", STAGES), "one_layer")
    assert report.exit_code == 0 and report.protocol == "module"
    assert ", schedule step:1:1/2, stages blocks.0." in report.render().splitlines()[0]
    options = json.loads(write_report(report, tmp_path / "report.json").read_text())["options"]
    assert options["schedule"] == "step:1:1/2"
    (one, first), (other, every) = options["stages"]
    assert (
        (one, other) == (1, 1) and set(first) < set(every) and all(n.startswith("blocks.0.") for n in first)
    )


def test_the_config_hands_the_loop_its_factors_and_trained_parameters():
    from rwtoolkit.runtime import with_steps

    planned = with_steps(_config(schedule="warmup:2", stages=STAGES), 2)
    assert planned.lr_factors == (0.5, 1.0)
    attention = {name for name in planned.shapes if name.startswith("blocks.0.")}
    assert attention and planned.trained == (frozenset(attention), frozenset(planned.shapes))
    assert with_steps(planned, 1).trained == (frozenset(attention),)
    plain = with_steps(_config(), 2)
    assert plain.lr_factors == (1.0, 1.0) and plain.trained == (frozenset(plain.shapes),) * 2


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--model", MODEL, "--schedule", "step:0:1/2"], "--schedule='step:0:1/2' is not one of the forms"),
        (["--model", MODEL, "--stages", "blocks.*"], "--stages='blocks.*' must be GLOBS=STEPS"),
        (["--model", MODEL, "--stages", "nothing.*=2"], "--stages: 'nothing.*' matches no parameter"),
        (["--model", MODEL, "--stages", "*=3"], "--stages: stages cover 3 steps; steps=2"),
        (
            ["--schedule", "warmup:2"],
            "--schedule: rw check runs a schedule and stages for a model with next-token",
        ),
        (["--emit", "out", "--stages", "*=2"], "--stages applies to a checked model with next-token logits"),
    ],
)
def test_bad_schedules_and_stages_are_one_line(args, line, capsys):
    """Bad syntax, a glob matching no parameter, stages not covering --steps, a model without next-token
    logits and --emit: one line, exit 2, before the implementation runs."""
    from rwtoolkit.cli.main import main

    assert main(["check", f"{EXAMPLE}:training", *args]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and line in out.err, out.err
