"""``relu_head``: the paper's attention with a ReLU read-out f = A ReLU(V X S) (paper Fig 10), a model of record.

Checked against the reduced torch fast path with ``relu_width`` (``FastModel``, written independently in
reduced coordinates), with and without normalised attention; the training loop's faithful path
(``train(fast=False)``, the model of record through ``GenericModel``) against the same fast path; and the exact
trajectory, whose ReLU decides every sign exactly, against that fast path in float64 from the same dyadic start.
From zero nothing moves (h = V X S = 0 and ReLU'(0) = 0): checked exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rwtoolkit.engines.exact import EXACT, derive_model
from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train, train_model
from rwtoolkit.engines.numeric._model import FastModel
from rwtoolkit.engines.numeric._train import registered_model
from rwtoolkit.models import get_model, rational_positions
from rwtoolkit.tasks import CircleWalk

TASK = CircleWalk(3, 4, "3/10")


def _fast(model: ModelConfig, steps: int, **cfg) -> list[dict]:
    config = TrainConfig(
        steps=steps, population=True, record_params=True, init="gaussian", sigma=0.3, loss="squared", **cfg
    )
    result = train(TASK, model, config, progress=False)
    assert result.params is not None
    return [result.params[t] for t in range(steps + 1)]


@pytest.mark.parametrize("normalize", [False, True], ids=["plain", "normalised"])
def test_the_model_trains_as_the_fast_path_with_a_relu_read_out(normalize: bool) -> None:
    P = np.asarray(rational_positions(TASK.N, 2), dtype=np.float64)
    config = ModelConfig(K=3, N=4, M=P.shape[0], pos=P, mu=2.0, relu_width=5, normalize_attention=normalize)
    steps = 6
    fast = _fast(config, steps)
    model = get_model("relu_head", width=5, normalize=normalize)
    generic = train_model(TASK, model, P, steps, loss="squared", init="gaussian", sigma=0.3, keep_params=True)
    xN = np.concatenate([np.zeros(3), P[:, -1]])
    for t in range(steps + 1):
        params = generic.params[t]
        np.testing.assert_allclose(params["V"], fast[t]["V"], rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(params["A"], fast[t]["A"], rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(params["W"] @ xN, fast[t]["w"], rtol=1e-12, atol=1e-13)
    assert np.abs(generic.params[steps]["A"] - generic.params[0]["A"]).max() > 1e-3  # the read-out moved


def test_the_faithful_training_path_is_the_model_of_record() -> None:
    """``train(fast=False)`` runs ``relu_head`` (normalised) through its one forward pass and equals the fast path."""
    config = ModelConfig(K=3, N=4, M=6, relu_width=4, normalize_attention=True, gram="computed")
    assert registered_model(config).describe() == {"name": "relu_head", "width": 4, "normalize": True}
    runs = [
        train(
            TASK,
            config,
            TrainConfig(steps=4, population=True, init="gaussian", sigma=0.3, fast=f),
            progress=False,
        )
        for f in (True, False)
    ]
    for a, b in zip(runs[0].history, runs[1].history, strict=True):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-12)
    for key in ("V", "A", "w"):
        np.testing.assert_allclose(runs[0].final[key], runs[1].final[key], rtol=1e-12, atol=1e-13)


def test_the_exact_trajectory_decides_every_relu_exactly_and_is_the_fast_paths() -> None:
    task = CircleWalk(3, 3, "1/2")
    model = get_model("relu_head", width=2)
    traj = derive_model(task, model, 2, mu=1, loss="squared", init="gaussian", sigma="1/2", seed=1)
    P = torch.as_tensor(np.asarray(rational_positions(task.N, 1), dtype=np.float64))
    start = {k: torch.as_tensor(EXACT.to_float(v)) for k, v in traj.states[0].params.items()}
    net = FastModel(P, 3, False, start["V"], start["W"], start["A"], mu=1.0)
    pop = task.population()
    tokens, labels = torch.as_tensor(pop.tokens), torch.as_tensor(pop.labels)
    weights = torch.tensor([float(q) for q in pop.exact_probs()], dtype=torch.float64)
    from rwtoolkit.engines.numeric._losses import SampleLoss

    for t, state in enumerate(traj.states):
        np.testing.assert_allclose(EXACT.to_float(state.params["V"]), net.V.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(EXACT.to_float(state.params["A"]), net.A.detach().numpy(), rtol=1e-12)
        if t < 2:
            net.loss_and_grad(tokens, labels, weights, SampleLoss("squared", 0.1), t)
            net.step(1.0)


def test_from_zero_nothing_moves() -> None:
    traj = derive_model(CircleWalk(3, 3, "1/2"), get_model("relu_head"), 3)
    for state in traj.states:
        assert all((np.asarray(v, dtype=object) == 0).all() for v in state.params.values())
