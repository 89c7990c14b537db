"""TrainConfig.record_steps (metrics only at chosen steps) and rotate (the exact rotation reduction)."""

from __future__ import annotations

import numpy as np
from conftest import assert_close

from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train
from rwtoolkit.tasks import CircleWalk

TASK, MODEL = CircleWalk(5, 5, "3/10"), ModelConfig(K=5, N=5, M=7, mu=3.0)


def _decaying(t: int) -> float:
    return 1.0 / (1 + t)


def test_recorded_history_is_the_every_step_history_at_those_steps() -> None:
    """Also with a schedule: the steps that are not evaluated still use eta(t) of their own step."""
    every = train(TASK, MODEL, TrainConfig(steps=8, eta=_decaying, population=True), progress=False)
    some = train(
        TASK,
        MODEL,
        TrainConfig(steps=8, eta=_decaying, population=True, record_steps=[7, 0, 3, 3], snapshots=[5]),
        progress=False,
    )
    # the same computation, only fewer evaluations: equal bit for bit
    assert [h["step"] for h in some.history] == [0, 3, 7]
    assert some.history == [every.history[t] for t in (0, 3, 7)]
    assert some.final == every.final
    assert some.snapshots[5]["attention_profile"] == every.history[5]["attention_profile"]
    assert some.config["train"]["record_steps"] == [0, 3, 7] and every.config["train"]["record_steps"] is None


def test_observe_sees_the_model_at_each_recorded_step() -> None:
    res = train(
        TASK,
        MODEL,
        TrainConfig(steps=4, population=True, record_steps=[1, 4]),
        progress=False,
        observe=lambda t, net: (t, net.V.detach().numpy().copy()),
    )
    every = train(TASK, MODEL, TrainConfig(steps=4, population=True, snapshots=[1, 4]), progress=False)
    assert sorted(res.observations) == [1, 4]
    for t in (1, 4):
        assert res.observations[t][0] == t
        assert np.array_equal(res.observations[t][1], np.array(every.snapshots[t]["V"]))


def test_rotation_reduction_equals_the_full_population_run() -> None:
    # normalised attention and the squared loss: the reduction needs only rotation-invariant parameters
    for model, loss in ((MODEL, "log"), (ModelConfig(K=5, N=5, M=7, normalize_attention=True), "squared")):
        full = train(TASK, model, TrainConfig(steps=10, population=True, loss=loss, eta=0.5), progress=False)
        reduced = train(
            TASK,
            model,
            TrainConfig(steps=10, population=True, loss=loss, eta=0.5, rotate=True),
            progress=False,
        )
        assert reduced.config["train"]["rotate"] is True
        # float64, 10 steps, K times fewer inputs summed: rounding differences stay ≪ 1e-10
        assert_close(reduced.final["V"], full.final["V"], 1e-10, "V(10)")
        assert_close(reduced.final["w"], full.final["w"], 1e-10, "W(10) x_N")
        for a, b in zip(reduced.history, full.history, strict=True):
            assert a["test_accuracy"] == b["test_accuracy"]
            for key in ("train_loss", "parent_attention", "kl", "attention_spread", "ones_residual"):
                assert_close(a[key], b[key], 1e-10, f"{key} at step {a['step']}")
            assert a["circulant_residual"] < 1e-12  # V stays circulant
