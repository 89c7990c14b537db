"""The sensitivity study's predicted break steps, against an independent float64 recomputation.

The oracle rebuilds the prediction from its definition without ``rwtoolkit.analyses.stability``'s torch code: the training
sample drawn with ``rwtoolkit.tasks`` and merged by hand, the manifold written down from the p = 1 symmetry (each
row of V constant, equal token logits, c_1 = … = c_{N-1}), the GD map and its Jacobian from the SymPy loss
differentiated symbolically, and the rounding covariance propagated in the full coordinates.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import cache

import numpy as np
import pytest
import sympy as sp

from rwtoolkit.analyses.repro._claims import V_COLUMN_MAX
from rwtoolkit.analyses.repro._experiments import MU_OPTIONS, Choices, RunSpec
from rwtoolkit.analyses.repro._report import _sensitivity_table
from rwtoolkit.analyses.repro._sensitivity import predicted_breaks, rounding_note, sample_task
from rwtoolkit.analyses.stability import active_coordinates, symbolic_loss
from rwtoolkit.tasks import CircleWalk, FiniteTask

RUN = RunSpec(name="p=1", task="circle", K=3, N=4, p="1", M=1000, steps=200, train_size=10, test_size=10)
GRID = tuple(
    Choices(mu=mu, dtype=dtype, gram=gram)
    for gram in ("computed", "ideal")
    for mu in ("sqrtM",)
    for dtype in ("float32", "float64")
)
UNIT = {"float32": 2.0**-24, "float64": 2.0**-53}


def _oracle_sample() -> FiniteTask:
    """The training walks ``rwtoolkit.engines.numeric.train`` draws (its first spawned seed), duplicates merged by count."""
    train_seq = np.random.SeedSequence(RUN.seed).spawn(3)[0]
    tokens, labels = CircleWalk(RUN.K, RUN.N, 1).sample(
        RUN.train_size, generator=np.random.default_rng(train_seq)
    )
    counts = Counter(
        (tuple(int(s) for s in seq), int(y)) for seq, y in zip(tokens.tolist(), labels.tolist(), strict=True)
    )
    walks = sorted(counts)
    return FiniteTask(
        [list(w) for w, _ in walks],
        [y for _, y in walks],
        [sp.Rational(counts[w], RUN.train_size) for w in walks],
        K=RUN.K,
    )


@cache
def _oracle_break(mu: float, dtype: str, steps: int = 60) -> int | None:
    """First t ≥ 1 with the predicted ‖V - a·1ᵀ‖/‖V‖ above the threshold, recomputed from the definition."""
    task = _oracle_sample()
    K, N = RUN.K, RUN.N
    coords = active_coordinates(task)  # all K labels and tokens occur: θ = (V (K×K), w_tok (K), c (N))
    L, theta = symbolic_loss(task, sp.Float(mu, 30), sp.Rational(1, 10), coords)
    grad = sp.lambdify([theta], sp.Matrix([L]).jacobian(theta), "numpy")
    hess = sp.lambdify([theta], sp.hessian(L, theta), "numpy")
    dim, nV = K * K + K + N, K * K
    classes = [list(range(y * K, (y + 1) * K)) for y in range(K)]  # each row of V constant
    classes += [list(range(nV, nV + K)), list(range(nV + K, dim - 1)), [dim - 1]]
    T = np.zeros((dim, len(classes)))
    for j, members in enumerate(classes):
        T[members, j] = 1.0
    P = np.eye(dim) - T @ np.linalg.solve(T.T @ T, T.T)  # orthogonal projector onto the normal space
    D = np.ones(dim)
    D[nV : nV + K] = mu  # ‖x̃_N‖² = μ scales the step of the token logits
    th = np.zeros(dim)
    Sigma = np.zeros((dim, dim))
    for t in range(steps + 1):
        norm_v = np.linalg.norm(th[:nV])
        rho = math.sqrt(max(np.trace(Sigma[:nV, :nV]), 0.0)) / norm_v if norm_v > 0 else 1.0
        if t >= 1 and rho > V_COLUMN_MAX:
            return t
        J = np.eye(dim) - RUN.eta * D[:, None] * np.asarray(hess(th), dtype=float)
        nxt = th - RUN.eta * D * np.asarray(grad(th), dtype=float).ravel()
        for members in classes:  # back onto the manifold, as the exact trajectory is
            nxt[members] = nxt[members].mean()
        Sigma = P @ J @ Sigma @ J.T @ P + (UNIT[dtype] * np.linalg.norm(nxt)) ** 2 / dim * P
        th = nxt
    return None


def test_sample_task_is_the_training_sample_merged_by_count():
    ours, oracle = sample_task(RUN), _oracle_sample()
    key = lambda task: sorted(  # noqa: E731
        zip(
            map(tuple, task.population().tokens.tolist()),
            task.population().labels.tolist(),
            task.population().exact_probs(),
            strict=True,
        )
    )
    assert key(ours) == key(oracle)


@pytest.mark.slow
def test_predicted_break_steps_match_an_independent_recomputation_and_show_in_the_table():
    predicted = predicted_breaks(RUN, GRID)
    mu = MU_OPTIONS["sqrtM"](RUN.M)
    for dtype in ("float32", "float64"):
        pred = predicted[Choices(mu="sqrtM", dtype=dtype, gram="computed").key()]
        assert pred["extrapolated"] is False
        assert pred["step"] == _oracle_break(mu, dtype), dtype
        assert pred["leak"] < 1e-12  # the manifold is invariant under the linearised map (float64 check)
    assert predicted[GRID[0].key()]["step"] < predicted[GRID[1].key()]["step"]  # float32 breaks first
    # rounding's prediction does not depend on the Gram option
    for computed, ideal in zip(GRID[:2], GRID[2:], strict=True):
        assert predicted[ideal.key()] == predicted[computed.key()]
    table = []
    for c in GRID:
        pred = predicted[c.key()]
        if (
            c.gram == "ideal" and c.dtype == "float64"
        ):  # what build_sensitivity does with a bitwise-symmetric run
            pred = {**pred, "step": None, "note": rounding_note({"attention_spread": [0.0, 0.0]})}
        table.append(
            {
                "choices": c.key(),
                "mu": c.mu,
                "mu_value": mu,
                "dtype": c.dtype,
                "gram": c.gram,
                "ok": True,
                "error": None,
                "predicted_break": pred,
                "spread_break": None,
                "v_break": 5,
                "break_step": 5,
                "ones_break": None,
                "accuracy_leaves": None,
                "final_accuracy": 1 / 3,
            }
        )
    lines = _sensitivity_table({"table": table, "steps": RUN.steps})
    assert "predicted (linearised)" in lines[0]
    cells = [[x.strip() for x in line.strip("|").split("|")] for line in lines[2:]]
    column = lines[0].strip("|").split("|").index(" predicted (linearised) ")
    expected = [str(_oracle_break(mu, d)) for d in ("float32", "float64")]
    assert [row[column] for row in cells] == [
        *expected,
        expected[0],
        "—, " + rounding_note({"attention_spread": [0.0]}),
    ]
