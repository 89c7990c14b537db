"""One name per concept (issue 23): μ is ``mu`` everywhere, and every old name keeps working one release.

Each old name gives the same result as the new one, with a warning (library) or one line on stderr (CLI)
that names the replacement; giving both names with different values is refused.
"""

from __future__ import annotations

import importlib
import json
import warnings

import jsonschema
import pytest
from conftest import SMALL_TRAIN_ARGS as SMALL

from rwtoolkit.analyses.sweep import load_spec
from rwtoolkit.cli.main import main
from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train
from rwtoolkit.io import load_schema
from rwtoolkit.tasks import CircleWalk, majority_task, symbol


def test_model_config_takes_mu_and_its_old_name_pos_norm_with_a_warning():
    with pytest.warns(DeprecationWarning, match=r"ModelConfig\(pos_norm=\.\.\.\) is deprecated: use mu="):
        old = ModelConfig(K=3, N=4, M=8, pos_norm=2.5)
    assert old == ModelConfig(K=3, N=4, M=8, mu=2.5)
    with pytest.warns(DeprecationWarning, match=r"ModelConfig\.pos_norm is deprecated: use ModelConfig\.mu"):
        assert old.pos_norm == 2.5
    with pytest.raises(ValueError, match=r"pos_norm=1.0 is the deprecated name of mu=2.0: give one of them"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            ModelConfig(K=3, N=4, mu=2.0, pos_norm=1.0)


def test_metrics_json_is_version_2_with_mu_in_the_model(tmp_path):
    task = CircleWalk(3, 4, "1/2")
    run = train(
        task, ModelConfig(K=3, N=4, M=8, mu=2.0), TrainConfig(steps=1, population=True), progress=False
    )
    data = run.to_json()
    assert (data["format"], data["version"]) == ("rw-metrics", 2)
    assert data["config"]["model"]["mu"] == 2.0 and "pos_norm" not in data["config"]["model"]
    jsonschema.Draft202012Validator(load_schema("metrics")).validate(data)
    data["config"]["model"]["pos_norm"] = data["config"]["model"].pop("mu")  # a version-1 key is refused
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(load_schema("metrics")).validate(data)


def test_rw_train_pos_norm_is_the_deprecated_mu_and_writes_the_same_bytes(tmp_path, capsys):
    assert main(["train", *SMALL, "--mu", "2", "--out", str(tmp_path / "new")]) == 0
    capsys.readouterr()
    assert main(["train", *SMALL, "--pos-norm", "2", "--out", str(tmp_path / "old")]) == 0
    assert "rw train: --pos-norm is deprecated, use --mu (the same value)" in capsys.readouterr().err
    assert (tmp_path / "new/metrics.json").read_bytes() == (tmp_path / "old/metrics.json").read_bytes()
    assert json.loads((tmp_path / "new/metrics.json").read_text())["config"]["model"]["mu"] == 2.0
    assert main(["train", *SMALL, "--mu", "2", "--pos-norm", "3", "--out", str(tmp_path / "both")]) == 2
    assert "--pos-norm is the deprecated name of --mu: give one of them" in capsys.readouterr().err


def test_a_sweep_spec_field_pos_norm_is_read_as_mu_with_a_warning():
    new = {"task": "circle", "fixed": {"K": 3, "N": 4, "steps": 1, "mu": 2}, "grid": {"p": [0, 1]}}
    old = {"task": "circle", "fixed": {"K": 3, "N": 4, "steps": 1, "pos_norm": 2}, "grid": {"p": [0, 1]}}
    with pytest.warns(FutureWarning, match=r"spec: fixed\.pos_norm is deprecated: call it mu"):
        read = load_spec(old)
    assert read.runs == load_spec(new).runs and read.hashes == load_spec(new).hashes
    grid = {"task": "circle", "fixed": {"K": 3, "N": 4, "steps": 1}, "grid": {"pos_norm": [1, 2]}}
    with pytest.warns(FutureWarning, match=r"spec: grid\.pos_norm"):
        assert [r["mu"] for r in load_spec(grid).runs] == [1.0, 2.0]
    both = {"task": "circle", "fixed": {"K": 3, "N": 4, "mu": 1, "pos_norm": 2}}
    with pytest.raises(
        ValueError, match=r"spec: fixed\.pos_norm: the deprecated name of mu; allowed: one of pos_norm, mu"
    ):
        load_spec(both)


OLD_NAMES = [
    ("rwtoolkit.engines.balls", "Trajectory", "rwtoolkit.engines.balls.BallTrajectory"),
    ("rwtoolkit.engines.exact", "Trajectory", "rwtoolkit.engines.exact.ReducedTrajectory"),
    ("rwtoolkit.analyses.explore", "task_symbols", r"task.symbols \(rwtoolkit.tasks.Task\)"),
    ("rwtoolkit.analyses.explore", "substitute", r"task.substitute\(values\) \(rwtoolkit.tasks.Task\)"),
    (
        "rwtoolkit.analyses.check.strategies",
        "symbolic_loss",
        "rwtoolkit.analyses.check.strategies.exact_loss",
    ),
    (
        "rwtoolkit.analyses.check.strategies",
        "symbolic_any_loss",
        "rwtoolkit.analyses.check.strategies.exact_loss",
    ),
]


@pytest.mark.parametrize(("module", "old", "replacement"), OLD_NAMES)
def test_an_old_name_warns_and_names_its_replacement(module, old, replacement):
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{old} is deprecated: use {replacement}"):
        getattr(importlib.import_module(module), old)


def test_the_old_names_give_what_the_new_ones_give():
    import rwtoolkit.analyses.explore
    import rwtoolkit.engines.balls
    import rwtoolkit.engines.exact
    from rwtoolkit.analyses.check import strategies

    task = majority_task(3, "q")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert rwtoolkit.engines.balls.Trajectory is rwtoolkit.engines.balls.BallTrajectory
        assert rwtoolkit.engines.exact.Trajectory is rwtoolkit.engines.exact.ReducedTrajectory
        assert rwtoolkit.analyses.explore.task_symbols(task) == list(task.symbols) == [symbol("q")]
        assert (
            rwtoolkit.analyses.explore.substitute(task, {symbol("q"): 1}).prob_values
            == task.substitute({symbol("q"): 1}).prob_values
        )
        assert strategies.symbolic_loss("log") == strategies.exact_loss("log") == "log"
