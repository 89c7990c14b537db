"""The rotation-reduced, recorded rwtoolkit.engines.numeric runs the evidence certificates read, against independent references."""

from __future__ import annotations

import numpy as np
from conftest import assert_close

from rwtoolkit.analyses.proofs._theorem31 import run_gd


def _state(t: int, net) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(V, u = w_tok, q = μc) of the fast path at step t."""
    return tuple(x.detach().numpy().copy() for x in (net.V, net.w_tok, net.q))


def test_rotation_reduced_run_matches_exact_symbolic_trajectory() -> None:
    from rwtoolkit.engines.exact import derive
    from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train
    from rwtoolkit.tasks import CircleWalk

    task = CircleWalk(5, 4, "7/10")
    # the oracle sums over the whole population (rotate=False), so it does not rely on the symmetry argument
    traj = derive(task, steps=2, eta=1, eps="1/10", mu=2, loss="log", rotate=False)
    res = train(
        task,
        ModelConfig(K=5, N=4, M=4, pos="onehot", mu=2.0),
        TrainConfig(steps=2, population=True, rotate=True, record_steps=[0, 1, 2]),
        progress=False,
        observe=_state,
    )
    for t in (0, 1, 2):
        V, u, q = res.observations[t]
        exact = traj.states[t]
        # float64 after two steps on entries of size O(10): rounding error is far below 1e-12
        assert_close(
            V, np.array(exact.V.evalf(30).tolist(), dtype=np.float64), 1e-12, f"V({t}) float vs exact"
        )
        assert_close(u, [float(v.evalf(30)) for v in exact.w_tok], 1e-12, f"w_tok({t}) float vs exact")
        assert_close(q / 2.0, [float(v.evalf(30)) for v in exact.c], 1e-12, f"c({t}) = q/μ float vs exact")


def test_rotation_reduced_recorded_run_equals_the_unreduced_run() -> None:
    from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train
    from rwtoolkit.tasks import CircleWalk

    task, model = CircleWalk(5, 6, "7/10"), ModelConfig(K=5, N=6, M=7, pos="sine")
    full = train(task, model, TrainConfig(steps=20, population=True), progress=False)
    run = run_gd(5, 6, "7/10", 20, list(range(0, 21, 4)), mu=3.5)  # sine with M = 7: μ = M/2 = 3.5
    # both are float64 GD on the same population (K times fewer inputs, projected gradients); 20 steps keep
    # the rounding difference ≪ 1e-10
    assert run.steps == [0, 4, 8, 12, 16, 20]
    assert_close(run.V, np.array(full.final["V"]), 1e-10, "V(20)")
    assert run.accuracy == [full.history[t]["test_accuracy"] for t in run.steps]
    assert_close(
        run.v_err_pi[1:], [full.history[t]["v_direction_error"] for t in run.steps[1:]], 1e-10, "v error"
    )
    assert_close(
        run.f_err_pi[1:], [full.history[t]["f_direction_error"] for t in run.steps[1:]], 1e-10, "f error"
    )
    parent = [full.history[t]["parent_attention"] for t in run.steps]
    assert_close(1 - 10 ** np.array(run.log10_one_minus_parent), parent, 1e-10, "parent attention")


def test_parent_attention_is_computed_in_log_space() -> None:
    run = run_gd(5, 8, "1/2", 3, [3])  # μ = 500: 1 − S_parent underflows float64, its log does not
    assert run.log10_one_minus_parent[-1] < -300
    assert np.isfinite(run.log10_one_minus_parent[-1])
