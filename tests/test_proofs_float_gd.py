"""The float64 reduced-coordinate GD used by the evidence certificates against independent implementations."""

from __future__ import annotations

import numpy as np

from proofs._float_gd import run_gd
from conftest import assert_close


def test_float_gd_matches_exact_symbolic_trajectory() -> None:
    from rwsymbolic import derive
    from rwtasks import CircleWalk

    traj = derive(CircleWalk(5, 4, "7/10"), steps=2, eta=1, eps="1/10", mu=2, loss="log")
    run = run_gd(5, 4, "7/10", 2, [2], mu=2.0)
    exact_V = np.array(traj.states[2].V.evalf(30).tolist(), dtype=np.float64)
    # float64 after two steps of O(10) entries: rounding error is far below 1e-12
    assert_close(run.V, exact_V, 1e-12, "V(2) float vs exact")
    exact_c = np.array([float(v.evalf(30)) for v in traj.states[2].c])
    assert_close(run.c, exact_c, 1e-12, "c(2) float vs exact")


def test_float_gd_matches_rwnumeric_training() -> None:
    from rwnumeric import ModelConfig, TrainConfig, train
    from rwtasks import CircleWalk

    res = train(CircleWalk(5, 6, "7/10"), ModelConfig(K=5, N=6, M=7, pos="sine"),
                TrainConfig(steps=20, eta=1.0, eps=0.1, population=True), progress=False)
    run = run_gd(5, 6, "7/10", 20, list(range(21)), mu=3.5)  # sine with M = 7: μ = M/2 = 3.5
    # both are float64 GD on the same population; 20 steps keep the rounding difference ≪ 1e-10
    assert_close(run.V, np.array(res.final["V"]), 1e-10, "V(20)")
    assert run.accuracy == [h["test_accuracy"] for h in res.history]
    assert_close(run.v_err_pi[1:], [h["v_direction_error"] for h in res.history][1:], 1e-10, "v error")


def test_parent_attention_is_computed_in_log_space() -> None:
    run = run_gd(5, 8, "1/2", 3, [3])  # μ = 500: 1 − S_parent underflows float64, its log does not
    assert run.log10_one_minus_parent[-1] < -300
    assert np.isfinite(run.log10_one_minus_parent[-1])
