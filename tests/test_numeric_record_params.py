"""``record_params`` (``rw train --record-params``) keeps V and w = W x̃_N at every recorded step, and those
are the exact GD iterates of ``rwtoolkit.engines.exact.derive``; without it metrics.json is unchanged (no "params").

Tolerance 1e-12 relative to max(1, largest exact entry), as in test_properties_numeric_vs_symbolic
(float64 rounding over two GD steps of a 3-node task stays below 1e-14; a wrong step moves V by > 1e-3).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp
from conftest import assert_rel

from rwtoolkit.cli.main import main
from rwtoolkit.engines.exact import derive
from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train
from rwtoolkit.tasks import CircleWalk

RTOL = 1e-12


def _float(matrix) -> np.ndarray:
    return np.array([[float(sp.N(v, 30)) for v in row] for row in matrix], dtype=np.float64)


def test_recorded_parameters_are_the_exact_gd_iterates():
    task = CircleWalk(3, 4, "7/10")
    exact = derive(task, 2, eta=1, eps="1/10", mu=1)
    result = train(
        task,
        ModelConfig(K=3, N=4, M=4, pos="onehot"),
        TrainConfig(steps=2, eta=1.0, eps=0.1, population=True, record_params=True),
        progress=False,
    )
    assert sorted(result.params) == [0, 1, 2]
    for t, state in enumerate(exact.states):
        assert_rel(result.params[t]["V"], _float(state.V.tolist()), RTOL, f"V({t})")
        assert_rel(result.params[t]["w"][:3], _float([list(state.w_tok)])[0], RTOL, f"w_tok({t})")
    assert np.abs(np.asarray(result.params[1]["V"])).max() > 1e-3  # GD moved V: the check can fail
    assert result.params[2] == {k: v for k, v in result.final.items() if k != "attention_profile"}


def test_only_the_recorded_steps_are_kept_and_the_relu_head_is_included():
    result = train(
        CircleWalk(3, 4, "1/2"),
        ModelConfig(K=3, N=4, M=5, relu_width=2),
        TrainConfig(steps=4, population=True, init="gaussian", record_steps=(0, 3), record_params=True),
        progress=False,
    )
    assert sorted(result.params) == [0, 3]
    assert sorted(result.params[3]) == ["A", "V", "w"]
    assert np.shape(result.params[3]["V"]) == (2, 3) and np.shape(result.params[3]["A"]) == (3, 2)
    assert sorted(result.to_json()["params"]) == ["0", "3"]


def test_without_the_option_metrics_json_has_no_params(tmp_path):
    small = ["--K", "3", "--N", "4", "--M", "8", "--steps", "2", "--train-size", "10", "--test-size", "10"]
    assert main(["train", *small, "--out", str(tmp_path / "plain")]) == 0
    assert (
        main(["train", *small, "--record-params", "--record-steps", "0,2", "--out", str(tmp_path / "params")])
        == 0
    )
    plain = json.loads((tmp_path / "plain" / "metrics.json").read_text())
    recorded = json.loads((tmp_path / "params" / "metrics.json").read_text())
    assert "params" not in plain and plain["config"]["train"]["record_params"] is False
    assert sorted(recorded["params"]) == ["0", "2"] and recorded["config"]["train"]["record_params"] is True
    assert (
        recorded["params"]["2"]["V"] == recorded["final"]["V"] and len(recorded["params"]["0"]["w"]) == 3 + 8
    )


@pytest.mark.parametrize("value", [1, "yes", None])
def test_record_params_must_be_a_bool(value):
    with pytest.raises(ValueError, match="record_params=.* must be True or False"):
        train(CircleWalk(3, 4, "1/2"), ModelConfig(K=3, N=4, M=5), TrainConfig(steps=1, record_params=value))
