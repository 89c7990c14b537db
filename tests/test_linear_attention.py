"""Linear attention (rwtoolkit.models.linear_attention): its gradient against a hand derivation, zero as a fixed point,
and ``rw check --model linear_attention`` on an independent plain implementation (examples/linear_attention_torch.py).

The hand derivation: f_y = Σ_j (V x_j)_y s_j with s_j = x̃_jᵀ W x̃_N / N, so for L = Σ_n π_n ℓ(f_{y_n}),
∂L/∂V = Σ_n π_n ℓ'(z_n) e_y (X s)ᵀ and ∂L/∂W = Σ_n π_n ℓ'(z_n) (1/N) Σ_j (V x_j)_y x̃_j x̃_Nᵀ.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from rwtoolkit.analyses.check import CheckOptions, build_config, check, for_model, load_factory
from rwtoolkit.engines.exact import derive_model, initial_parameters
from rwtoolkit.models import Sizes, get_model, rational_positions
from rwtoolkit.tasks import CircleWalk

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "linear_attention_torch.py"
OPTIONS = CheckOptions(steps=2, examples=3, model="linear_attention")
sys.path.insert(0, str(EXAMPLE.parent))
from linear_attention_torch import FIRST_WRONG  # noqa: E402


def _fractions(a) -> np.ndarray:
    return np.vectorize(lambda x: Fraction(int(x.p), int(x.q)), otypes=[object])(np.asarray(a, dtype=object))


def test_one_step_equals_the_hand_derived_gradient_exactly() -> None:
    task, eta, eps = CircleWalk(3, 3, "1/2"), Fraction(1, 2), Fraction(1)
    model = get_model("linear_attention")
    traj = derive_model(task, model, 1, eta=eta, eps=eps, init="gaussian", sigma="1/2", seed=3)
    P = rational_positions(3, 1)
    V0, W0 = (_fractions(traj.states[0].params[k]) for k in ("V", "W"))
    pop = task.population()
    K, N = 3, 3
    gV = np.zeros((K, K), dtype=object) + Fraction(0)
    gW = np.zeros(W0.shape, dtype=object) + Fraction(0)
    for tokens, y, prob in zip(pop.tokens.tolist(), pop.labels.tolist(), pop.exact_probs(), strict=True):
        X = np.zeros((K, N), dtype=object) + Fraction(0)
        for j, tok in enumerate(tokens):
            X[tok, j] = Fraction(1)
        Xt = np.vstack([X, P])
        s = (Xt.T @ W0 @ Xt[:, -1]) / N
        z = (V0 @ X @ s)[y]
        dl = Fraction(-1) / (z + eps) * Fraction(str(prob))
        gV[y] += dl * (X @ s)
        VX = V0 @ X
        for j in range(N):
            gW += dl * VX[y, j] / N * np.outer(Xt[:, j], Xt[:, -1])
    assert (_fractions(traj.states[1].params["V"]) == V0 - eta * gV).all()
    assert (_fractions(traj.states[1].params["W"]) == W0 - eta * gW).all()


def test_from_zero_nothing_moves() -> None:
    traj = derive_model(CircleWalk(4, 5, "3/10"), get_model("linear_attention"), 3)
    for state in traj.states:
        assert all((np.asarray(v, dtype=object) == 0).all() for v in state.params.values())


def test_the_check_starts_from_a_fixed_dyadic_start_exact_in_float64() -> None:
    config = for_model(build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10"), "linear_attention")
    assert config.init == "gaussian"
    sizes = Sizes(K=3, M=config.M, N=3)
    exact = initial_parameters(get_model("linear_attention"), sizes, "gaussian", "1/2", 0)
    for name, value in config.start.items():
        assert value.dtype == np.float64 and np.abs(value).max() > 0
        assert [Fraction(float(x)) for x in value.ravel()] == list(_fractions(exact[name]).ravel())


def test_the_plain_implementation_passes() -> None:
    report = check(load_factory(f"{EXAMPLE}:model"), OPTIONS)
    assert report.exit_code == 0, report.render()
    rows = {r.id: r.status for r in report.results}
    assert rows["V"] == rows["W"] == rows["S"] == rows["f"] == rows["loss"] == "pass"
    assert rows["lemma_C1_first_value_step"] == "not checked"  # a statement about the zero start


@pytest.mark.parametrize("variant", sorted(FIRST_WRONG))
def test_each_planted_bug_fails_at_its_first_wrong_quantity(variant) -> None:
    report = check(load_factory(f"{EXAMPLE}:{variant}"), OPTIONS)
    trajectory = [r.id for r in report.results if r.status == "fail" and r.id in ("V", "W", "S", "f", "loss")]
    assert report.exit_code == 1 and trajectory == [FIRST_WRONG[variant]], report.render()


def test_an_implementation_started_at_zero_fails_at_V0(tmp_path) -> None:
    import linear_attention_torch as example
    import torch

    def from_zero(config):
        return example.LinearAttention(
            config.K, {k: np.zeros_like(v) for k, v in config.start.items()}, torch.float64
        )

    report = check(from_zero, OPTIONS)
    failed = [r.id for r in report.results if r.status == "fail"]
    assert failed[:1] == ["V"], report.render()
