"""``rw sweep`` of a sequence model (issue 41, item 6): the spec's ``objective`` (lm or last, beside ``model``),
each run's config and row carry it, and a bad or misplaced value is one line naming the field.

The rows' final losses are checked against plain PyTorch autograd GD of the traced module itself on
``F.cross_entropy`` weighted by the exact probabilities (not the toolkit's engines), from the same Gaussian start.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
import torch.nn.functional as F

from rwtoolkit.analyses.sweep import SpecError, load_spec, run_pack
from rwtoolkit.tasks import CircleWalk

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NANOGPT = f"{EXAMPLES}/nanogpt_attention.py:one_layer"
SPEC = {
    "task": "circle",
    "model": NANOGPT,
    "fixed": {"K": 3, "N": 4, "M": 8, "p": "1/3", "steps": 2, "init": "gaussian", "sigma": 0.5},
    "grid": {"seed": [0, 1]},
}
#: float64 against float64: the same two GD steps, summed in another order.
TOL = 1e-12


def module_loss(start: dict[str, np.ndarray], task: CircleWalk, steps: int, last: bool) -> float:
    """The loss after ``steps`` of float64 population GD (η = 1) of the PyTorch module itself from ``start``:
    Σ_x π(x) · mean over positions of F.cross_entropy against the next token (the last position only with
    ``last``), torch autograd."""
    spec = importlib.util.spec_from_file_location("nanogpt_for_sweep_test", EXAMPLES / "nanogpt_attention.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    module = example.one_layer(task.K, task.N - 1).double()
    with torch.no_grad():
        for name, value in module.named_parameters():
            value.copy_(torch.tensor(start[name]))
    pop = task.population()
    tokens = torch.tensor(pop.tokens)
    targets = torch.tensor(np.concatenate([pop.tokens[:, 1:], pop.labels[:, None]], axis=1))
    weights = torch.tensor([float(q) for q in pop.exact_probs()], dtype=torch.float64)
    for t in range(steps + 1):
        module.zero_grad()
        logits = module(tokens)
        n, L, S = logits.shape
        per = F.cross_entropy(logits.reshape(n * L, S), targets.reshape(n * L), reduction="none").reshape(
            n, L
        )
        loss = (weights * (per[:, -1] if last else per.mean(dim=1))).sum()
        if t == steps:
            return float(loss.detach())
        loss.backward()
        with torch.no_grad():
            for v in module.parameters():
                v -= v.grad
    raise AssertionError("unreachable")


def test_a_sequence_models_runs_carry_the_spec_objective_default_lm():
    default, lm, last = (
        load_spec(SPEC),
        load_spec({**SPEC, "objective": "lm"}),
        load_spec({**SPEC, "objective": "last"}),
    )
    assert [r["objective"] for r in default.runs] == ["lm", "lm"] and default.objective == "lm"
    assert default.runs == lm.runs and default.hashes == lm.hashes
    assert [r["objective"] for r in last.runs] == ["last", "last"] and last.objective == "last"
    assert not set(last.hashes) & set(lm.hashes)  # the objective is part of each run's config


def test_a_model_without_next_token_logits_has_no_objective_in_its_runs():
    plain = {key: value for key, value in SPEC.items() if key != "model"}
    for spec in (load_spec(plain), load_spec({**plain, "model": "key_query"})):
        assert spec.objective is None and all("objective" not in r for r in spec.runs)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"objective": "all"}, "spec: objective: 'all' is not one of the choices; allowed: lm, last"),
        (
            {"model": "key_query", "objective": "last"},
            "spec: objective: model key_query gives a prediction f, no next-token logits, and trains on its loss; "
            "allowed: leave objective out for this model (lm or last are a sequence model's)",
        ),
        (
            {"model": "one_layer", "objective": "lm"},
            "spec: objective: model one_layer gives a prediction f, no next-token logits, and trains on its loss; "
            "allowed: leave objective out for this model (lm or last are a sequence model's)",
        ),
    ],
)
def test_a_bad_objective_is_refused_in_one_line_naming_the_field(change, message):
    with pytest.raises(SpecError) as caught:
        load_spec({**SPEC, **change})
    assert str(caught.value) == message


@pytest.mark.parametrize("objective", ["lm", "last"])
def test_the_rows_carry_the_objective_and_its_final_loss(tmp_path, objective):
    from rwtoolkit.engines.numeric import ModelConfig
    from rwtoolkit.engines.numeric._model_train import initial_model_parameters
    from rwtoolkit.models import Sizes, get_model

    spec = load_spec({**SPEC, "objective": objective})
    run_pack("pack", list(spec.runs), list(spec.hashes), str(tmp_path), 1, False)
    [chunk] = (tmp_path / "chunks").glob("*.parquet")
    rows = pq.read_table(chunk).to_pylist()
    assert [r["config_hash"] for r in rows] == list(spec.hashes)
    task = CircleWalk(3, 4, "1/3")
    model = get_model(NANOGPT)
    sizes = Sizes(K=3, M=ModelConfig(K=3, N=4, M=8).M, N=4)
    for row in rows:
        assert row["objective"] == objective and row["model"] == NANOGPT and row["diverged_step"] is None
        assert row["parent_attention"] is None  # no attention over the N positions; null, never NaN
        assert math.isfinite(row["final_loss"]) and 0 <= row["final_accuracy"] <= 1
        start = initial_model_parameters(model, sizes, "gaussian", 0.5, row["seed"])
        expected = module_loss(start, task, 2, last=objective == "last")
        assert abs(row["final_loss"] - expected) < TOL, (row["seed"], row["final_loss"], expected)
