"""The update rule in oracles (issue 43, item 2): ``rw derive --json --optimizer momentum|nesterov`` writes the
rule and its exact hyperparameters in the oracle's config (``config.optimizer``, a compatible extension of
rw-oracle version 3: a file without it is plain GD, and a plain-GD oracle has no such field), ``load_oracle``
reads it back (``Oracle.optimizer``), and a frozen fixture of ``rw check --emit`` runs the rule its oracle names.
Adam with ``--json`` is refused by the exact engine in one line naming the ball engine (tests/test_optimizers.py).

The oracle's values are checked against an independent derivation: a PyTorch module (token and positional
embeddings and a linear head, traced by ``--model PATH.py:ATTR``) trained by ``torch.optim.SGD`` with momentum
or Nesterov on the same population's cross-entropy in float64 (within 1e-12).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import torch

from rwtoolkit.analyses.check import DEFAULT_SPECS, emit_fixtures
from rwtoolkit.cli.main import main
from rwtoolkit.engines.exact import load_oracle
from rwtoolkit.io import load_schema
from rwtoolkit.models import Optimizer
from rwtoolkit.runtime import (
    OracleFormatError,
    expected_readouts,
    first_difference,
    fixture_config,
    load_factory,
    load_manifest,
    run,
)
from rwtoolkit.tasks import binary_markov_task
from tests.test_sequence_model import population, torch_objective
from tests.test_sequence_oracle import SPEC, TORCH_MODULE

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TASK = binary_markov_task("1/3", "3/5", 3)


def _zero_module() -> torch.nn.Module:
    """TORCH_MODULE's model (S = 2, L = 2) with every parameter 0: the start of the independent torch loop."""
    namespace: dict = {}
    exec(compile(TORCH_MODULE, "mine.py", "exec"), namespace)
    module = namespace["model"](2, 2)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.zero_()
    return module


def _torch_population() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """TASK's population as torch tensors: token ids, next-token targets, the sequences' probabilities."""
    pop, targets = population(TASK)
    tokens = torch.tensor(pop.tokens, dtype=torch.long)
    weights = torch.tensor([float(q) for q in pop.exact_probs()], dtype=torch.float64)
    return tokens, torch.tensor(targets, dtype=torch.long), weights


@pytest.mark.parametrize(
    ("flags", "rule", "torch_rule"),
    [
        (
            ["--optimizer", "momentum", "--momentum", "1/2"],
            {"name": "momentum", "momentum": "1/2"},
            {"momentum": 0.5},
        ),
        (
            ["--optimizer", "nesterov", "--momentum", "0.9", "--weight-decay", "1/10"],
            {"name": "nesterov", "momentum": "9/10", "weight_decay": "1/10"},
            {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
        ),
    ],
)
def test_rw_derive_json_with_momentum_writes_the_rule_and_torch_optims_trajectory(
    tmp_path, monkeypatch, flags, rule, torch_rule
):
    (tmp_path / "mine.py").write_text(TORCH_MODULE)
    (tmp_path / "task.json").write_text(json.dumps(SPEC))
    monkeypatch.chdir(tmp_path)
    argv = "derive --model mine.py:model --spec task.json --mu 1 --steps 3 --eta 1/2 --json o.json".split()
    assert main([*argv, *flags]) == 0
    header = json.loads((tmp_path / "o.json").read_text())
    jsonschema.validate(header, load_schema("oracle"))
    assert header["config"]["optimizer"] == {"weight_decay": "0", **rule}  # exact rationals, as strings
    oracle = load_oracle(tmp_path / "o.json", verify=True)
    assert oracle.optimizer == Optimizer(**{k: v for k, v in rule.items()})
    # the independent derivation: the module from zero, torch.optim.SGD on the population's cross-entropy
    module = _zero_module()
    sgd = torch.optim.SGD(module.parameters(), lr=0.5, **torch_rule)
    tokens, targets_t, weights = _torch_population()
    for t in range(4):
        for key, value in module.state_dict().items():
            assert np.abs(oracle.value(key, t) - value.numpy()).max() < 1e-12, (t, key)
        sgd.zero_grad()
        loss = torch_objective(module(tokens), targets_t, weights, last=False)
        assert abs(float(oracle.value("loss", t)) - loss.item()) < 1e-12, t
        loss.backward()
        sgd.step()


def test_a_plain_gd_oracle_has_no_rule_and_reads_as_plain_gd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = "derive --model key_query --K 3 --N 3 --p 1/2 --steps 1".split()
    for folder, rule in (("plain", []), ("gd", ["--optimizer", "gd"])):
        (tmp_path / folder).mkdir()
        assert main([*argv, *rule, "--json", f"{folder}/o.json"]) == 0
    for name in ("o.json", "o.inputs.npz"):  # --optimizer gd is plain GD: the same bytes
        assert (tmp_path / "plain" / name).read_bytes() == (tmp_path / "gd" / name).read_bytes()
    assert "optimizer" not in json.loads((tmp_path / "plain" / "o.json").read_text())["config"]
    assert load_oracle(tmp_path / "plain" / "o.json").optimizer == Optimizer() and Optimizer().plain


def test_an_oracle_whose_rule_is_damaged_is_refused_naming_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert (
        main(
            "derive --model key_query --K 3 --N 3 --p 1/2 --steps 1 --optimizer momentum --json o.json".split()
        )
        == 0
    )
    header = json.loads((tmp_path / "o.json").read_text())
    header["config"]["optimizer"]["momentum"] = "3/2"  # a value the schema admits, out of the rule's range
    (tmp_path / "o.json").write_text(json.dumps(header))
    with pytest.raises(
        OracleFormatError, match=r"o\.json: config\.optimizer is not an update rule \(momentum=3/2"
    ):
        load_oracle(tmp_path / "o.json")


@pytest.fixture(scope="module")
def fixture_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fixtures")
    emit_fixtures(folder, DEFAULT_SPECS[:1], steps=2)
    return folder


def test_a_frozen_fixture_runs_the_rule_its_oracle_names(fixture_folder):
    """The kit trains examples/plain_torch.py:model (protocol (a)) with the oracle's rule: the plain-GD oracle
    passes; the same oracle relabelled momentum no longer does, first at t = 2 (momentum's first step, b = g, is
    GD's), because the kit now steps with torch.optim.SGD(momentum=1/2)."""
    [entry] = load_manifest(fixture_folder)["configs"]
    factory = load_factory(f"{EXAMPLES}/plain_torch.py:model")
    config = fixture_config(fixture_folder, entry, "float64")
    assert config.optimizer is None
    oracle = fixture_folder / entry["oracle"]
    expected = expected_readouts(oracle, config.P)
    assert first_difference(run(factory, config, 2), expected, entry["rtol"]["float64"]) is None
    header = json.loads(oracle.read_text())
    header["config"]["optimizer"] = {"name": "momentum", "momentum": "1/2", "weight_decay": "0"}
    oracle.write_text(json.dumps(header))
    config = fixture_config(fixture_folder, entry, "float64")
    assert config.optimizer == {"name": "momentum", "momentum": 0.5, "weight_decay": 0.0}
    diff = first_difference(run(factory, config, 2), expected, entry["rtol"]["float64"])
    assert diff is not None and diff.step == 2


def test_rw_derive_json_with_a_schedule_and_stages_writes_them_and_torchs_trajectory(tmp_path, monkeypatch):
    """--schedule step:1:1/2 and --stages 'w*=1,*=2' with momentum: the oracle records both, and its values are
    torch.optim.SGD's under LambdaLR with the parameters outside a stage left without a gradient (1e-12); the
    head, which the first stage freezes (and which alone moves at t = 0 from zero), keeps its start exactly."""
    (tmp_path / "mine.py").write_text(TORCH_MODULE)
    (tmp_path / "task.json").write_text(json.dumps(SPEC))
    monkeypatch.chdir(tmp_path)
    argv = "derive --model mine.py:model --spec task.json --mu 1 --steps 3 --eta 1/2 --json o.json".split()
    flags = [
        "--optimizer",
        "momentum",
        "--momentum",
        "1/2",
        "--schedule",
        "step:1:1/2",
        "--stages",
        "w*=1,*=2",
    ]
    assert main([*argv, *flags]) == 0
    header = json.loads((tmp_path / "o.json").read_text())
    jsonschema.validate(header, load_schema("oracle"))
    names = ["head.bias", "head.weight", "wpe.weight", "wte.weight"]
    assert header["config"]["schedule"] == "step:1:1/2"
    assert header["config"]["stages"] == [[1, ["wpe.weight", "wte.weight"]], [2, names]]
    oracle = load_oracle(tmp_path / "o.json", verify=True)
    module = _zero_module()
    sgd = torch.optim.SGD(module.parameters(), lr=0.5, momentum=0.5)
    scheduler = torch.optim.lr_scheduler.LambdaLR(sgd, lambda t: 0.5**t)
    tokens, targets_t, weights = _torch_population()
    for t in range(4):
        for key, value in module.state_dict().items():
            assert np.abs(oracle.value(key, t) - value.numpy()).max() < 1e-12, (t, key)
        sgd.zero_grad()
        loss = torch_objective(module(tokens), targets_t, weights, last=False)
        loss.backward()
        if t == 0:  # the first stage trains the embeddings: the head has no gradient (torch.optim skips it)
            for key, parameter in module.named_parameters():
                if key.startswith("head."):
                    parameter.grad = None
        sgd.step()
        scheduler.step()
    for key in ("head.weight", "head.bias"):
        assert not oracle.value(key, 1).any()  # frozen in the first stage: zero, exactly
    assert oracle.value("head.bias", 2).any()  # then trained
