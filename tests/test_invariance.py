"""Stuck for every t: the exact induction step, its candidates, and the verdict (docs/theory.md#invariant-manifolds).

Oracles, each independent of the code under test:
* Lemma D.3's manifold, built here from the paper's statement (V = α1·1, W12 = α2·1 p_Nᵀ,
  W22 = (α3 Σ_{i<N} p_i − α4 p_N) p_Nᵀ), is invariant exactly in Theorem 4.1's cases (the paper's proof);
* a refutation's witness is re-derived with torch autograd on a forward pass written out here;
* a proved subspace holds the exact trajectory (rwtoolkit.models.descend in the exact arithmetic, the log-loss), and
  its points' scores are re-evaluated at rational points;
* the symmetry's fixed subspace is compared with a float Reynolds average over every group element, the
  action written here with einsum.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp
import torch
from flint import fmpq

from rwtoolkit.engines.exact import (
    EXACT,
    Subspace,
    fixed_subspace,
    induction_step,
    make_loss,
    stuck_proof,
    trajectory_subspace,
)
from rwtoolkit.engines.exact.arithmetic._decide import is_zero
from rwtoolkit.models import Sizes, batch, descend, get_model
from rwtoolkit.tasks import CircleWalk, first_of_two_task, permutation_task, qa_task2, task_symmetries


def lemma_d3(K: int, N: int) -> Subspace:
    """Lemma D.3's four directions for the paper's model with P = I_N (p_j = e_j)."""
    D = K + N
    shapes = {"V": (K, K), "W": (D, D)}
    nV = K * K

    def w_vector(W):
        return [0] * nV + [int(W[a, b]) for a in range(D) for b in range(D)]

    ones_V = [1] * nV + [0] * (D * D)
    W12, W22a, W22b = (np.zeros((D, D), dtype=int) for _ in range(3))
    W12[:K, D - 1] = 1  # 1_K p_Nᵀ
    W22a[K : K + N - 1, D - 1] = 1  # (Σ_{i<N} p_i) p_Nᵀ
    W22b[D - 1, D - 1] = 1  # p_N p_Nᵀ
    return Subspace.from_vectors(shapes, [ones_V, w_vector(W12), w_vector(W22a), w_vector(W22b)], "Lemma D.3")


@pytest.mark.parametrize("K, r, p", [(3, 1, 1), (3, 1, 0), (4, 1, 1), (3, 2, 0), (5, 1, 1)])
def test_lemma_d3_manifold_is_proved_invariant_in_theorem_41s_cases(K, r, p):
    N = r * K + 1
    result = induction_step(CircleWalk(K, N, p), get_model("one_layer"), lemma_d3(K, N))
    assert result.outcome == "proved" and result.stuck_for_all_t
    assert result.labels_tied and result.per_parameter_rates and result.classes == 1
    assert result.chance_level == fmpq(1, K)


def _inputs(task, P):
    """(X, X̃ = [X; P], y, w) of every input of non-zero probability, X one-hot (K, N) with x_N = 0."""
    pop = task.population()
    for tokens, y, w in zip(pop.tokens.tolist(), pop.labels.tolist(), pop.exact_probs(), strict=True):
        if w == 0:
            continue
        X = np.zeros((task.K, task.N))
        for j, s in enumerate(tokens):
            X[s, j] = 1
        yield X, np.vstack([X, P]), y, w


def _torch_residual(task, subspace, alpha, mu, eps):
    """One log-loss gradient of the paper's model at θ = Bα, by torch autograd on a forward written here,
    minus its pivot projection onto the subspace (the residual the witness reports)."""
    K, N = task.K, task.N
    B = np.array([[float(x.p) / float(x.q) for x in b] for b in subspace.basis]).T  # (total, r)
    theta = torch.tensor(B @ np.array(alpha, dtype=float), dtype=torch.float64, requires_grad=True)
    V = theta[: K * K].reshape(K, K)
    W = theta[K * K :].reshape(K + N, K + N)
    P = np.sqrt(mu) * np.eye(N)
    loss = torch.zeros((), dtype=torch.float64)
    for X, Xt, y, w in _inputs(task, P):
        Xt = torch.tensor(Xt)
        scores = torch.softmax(Xt.T @ (W @ Xt[:, N - 1]), dim=0)
        z = (V @ (torch.tensor(X) @ scores))[y]
        loss = loss - float(w) * torch.log(z + eps)
    (g,) = torch.autograd.grad(loss, theta)
    g = g.numpy()
    pivots = [next(j for j, x in enumerate(b) if x != 0) for b in subspace.basis]
    return g - B @ g[pivots]


def test_a_planted_non_invariant_subspace_is_refuted_with_a_witness_torch_confirms():
    task = CircleWalk(3, 4, 1)
    d3 = lemma_d3(3, 4)
    planted = Subspace.from_vectors(d3.shapes, [list(b) for b in d3.basis[:3]])  # p_N p_Nᵀ dropped
    result = induction_step(task, get_model("one_layer"), planted)
    assert result.outcome == "refuted" and result.witness["loss"].startswith("log")
    alpha = [float(sp.Rational(a)) for a in result.witness["alpha"]]
    residual = _torch_residual(task, planted, alpha, float(sp.Rational(result.witness["mu"])), 0.1)
    centre = float(result.witness["residual"].strip("[").split(" +/-")[0])
    assert abs(residual[_entry(result)] - centre) < 1e-9  # float64 autograd vs the certified ball


def _entry(result) -> int:
    """The flat index of the witness entry ``W[a, b]`` (V has 9 entries, W is 7×7)."""
    name = result.witness["entry"]
    a, b = (int(x) for x in name[name.index("[") + 1 : -1].split(","))
    return 9 + 7 * a + b


def test_theorem_41s_manifold_is_refuted_where_the_paper_says_training_learns():
    result = induction_step(CircleWalk(3, 4, "1/2"), get_model("one_layer"), lemma_d3(3, 4))
    assert result.outcome == "refuted" and result.witness is not None


def test_v_only_is_refuted_for_the_paper_model_and_proved_for_key_query_from_zero():
    task = CircleWalk(3, 4, 1)
    d3 = lemma_d3(3, 4)
    v_only = Subspace.from_vectors(d3.shapes, [list(d3.basis[0])])
    assert induction_step(task, get_model("one_layer"), v_only).outcome == "refuted"
    kq = get_model("key_query", d=2)
    sizes = Sizes(K=3, M=4, N=4)
    shapes = kq.shapes(sizes)
    V = [[int(j == i) for j in range(kq.parameter_count(sizes))] for i in range(9)]  # W_K = W_Q = 0, V free
    for t in (task, CircleWalk(3, 4, "3/10"), first_of_two_task(3)):
        assert induction_step(t, kq, Subspace.from_vectors(shapes, V)).outcome == "proved"


@pytest.mark.parametrize("task", [CircleWalk(3, 4, 1), CircleWalk(4, 5, "1/2")], ids=["thm41", "K4-p1/2"])
def test_a_proved_subspace_holds_the_exact_trajectory_and_its_scores_are_input_independent(task):
    model = get_model("one_layer")
    fixed = fixed_subspace(model, task, task_symmetries(task))
    assert induction_step(task, model, fixed).stuck_for_all_t
    P = EXACT.asarray(np.eye(task.N, dtype=int))
    pop = task.population()
    data = batch(EXACT, pop.tokens, pop.labels, pop.exact_probs(), task.K, P)
    lossfn = make_loss("log", sp.Rational(1, 10)).elementwise()
    states = descend(model, EXACT, model.zeros(EXACT, data.inputs.sizes), data, lossfn, sp.Rational(1), 3)
    for state in states:
        flat = [
            x for name in ("V", "W") for x in np.asarray(state.params[name], dtype=object).ravel().tolist()
        ]
        residual = _exact_residual(fixed, flat)
        assert all(is_zero(sp.sympify(r)) for r in residual)
        f = np.asarray(state.f, dtype=object)
        support = [n for n, q in enumerate(pop.exact_probs()) if q != 0]
        assert all(is_zero(sp.sympify(f[n, k] - f[support[0], k])) for n in support for k in range(task.K))


def _exact_residual(subspace: Subspace, flat: list) -> list:
    out = [sp.sympify(x) for x in flat]
    for b, p in zip(subspace.basis, subspace.pivots(), strict=True):
        c = out[p]
        for j, x in enumerate(b):
            if x != 0:
                out[j] = out[j] - c * sp.Rational(int(x.p), int(x.q))
    return out


def _reynolds_rank(task, model) -> int:
    """dim Fix(G) as the rank of the float average of g·θ over every group element (action via einsum)."""
    group = task_symmetries(task)
    K, N = task.K, task.N
    sizes = Sizes(K=K, M=N, N=N)
    shapes = model.shapes(sizes)
    total = model.parameter_count(sizes)
    average = np.zeros((total, total))
    elements = group.elements()
    for g in elements:
        T = np.zeros((K, K))
        T[list(g.tokens), range(K)] = 1
        L = np.zeros((K, K))
        L[list(g.labels), range(K)] = 1
        Pi = np.zeros((N, N))
        Pi[list(g.positions) + [N - 1], range(N)] = 1
        Omat = np.block([[T, np.zeros((K, N))], [np.zeros((N, K)), Pi]])
        mats = {"label": L, "token": T, "embed": Omat}
        columns = []
        for i in range(total):
            e = np.zeros(total)
            e[i] = 1
            out, start = [], 0
            for name, shape in shapes.items():
                size = int(np.prod(shape))
                A = e[start : start + size].reshape(shape)
                for axis, role in enumerate(model.AXES[name]):
                    if role is not None:
                        A = np.moveaxis(np.tensordot(mats[role], A, axes=([1], [axis])), 0, axis)
                out.append(A.ravel())
                start += size
            columns.append(np.concatenate(out))
        average += np.array(columns).T / len(elements)
    return int(np.linalg.matrix_rank(average, tol=1e-9))


@pytest.mark.parametrize(
    "task, name",
    [
        (CircleWalk(3, 4, 1), "one_layer"),
        (CircleWalk(3, 4, "3/10"), "one_layer"),
        (CircleWalk(3, 4, 1), "key_query"),
    ],
    ids=["thm41", "rotations", "key-query"],
)
def test_the_fixed_subspace_is_the_range_of_the_reynolds_average(task, name):
    model = get_model(name)
    assert fixed_subspace(model, task, task_symmetries(task)).dim == _reynolds_rank(task, model)


def test_a_planted_relabelling_of_tokens_moves_the_fixed_subspace_with_it():
    task = first_of_two_task(3)
    model = get_model("one_layer")
    G = task_symmetries(task)
    assert fixed_subspace(model, task, G).dim == _reynolds_rank(task, model)


@pytest.mark.parametrize(
    "task, verdict",
    [
        (CircleWalk(3, 4, 1), "stuck for all t (proved)"),
        (CircleWalk(4, 5, 0), "stuck for all t (proved)"),
        (CircleWalk(4, 5, "1/2"), "stuck for all t (proved)"),
        (first_of_two_task(3), "stuck for all t (proved)"),
        (permutation_task(3, 1), "stuck for all t (proved)"),
        (qa_task2(), "stuck for all t (proved)"),
        (CircleWalk(3, 4, "3/10"), "escapes"),
    ],
    ids=["thm41-p1", "thm41-p0", "K4-p1/2-N5", "first_of_two", "permutation", "qa2", "learns"],
)
def test_stuck_proof_verdicts_of_the_known_cases(task, verdict):
    report = stuck_proof(task)
    assert json.loads(json.dumps(report)) == report  # plain JSON, no NaN
    assert report["verdict"] == verdict
    if verdict.startswith("stuck") and task.__class__.__name__ == "CircleWalk":
        assert report["why"].startswith("a symmetry of order")
    assert trajectory_subspace(get_model("one_layer"), task) is None or report["comparison"]


def test_stuck_proof_refuses_a_job_beyond_its_estimate_before_any_work():
    with pytest.raises(
        ValueError, match=r"stuck_proof: 12288 inputs × 265 parameters = 3.26e\+06, above 1.0e\+06"
    ):
        stuck_proof(CircleWalk(3, 13, "1/2"))


@pytest.mark.parametrize("task", [CircleWalk(3, 4, 1), CircleWalk(4, 5, "1/2")], ids=["thm41", "K4-p1/2"])
def test_the_reduced_engine_rwsymbolic_derive_stays_in_the_proved_subspace(task):
    """derive (V, w_tok, c; its own gradient) at μ = 1: its states lie in the image of Fix(G) under
    θ ↦ (V, w_tok = W[:K, D-1], c_j = W[K+j, D-1]), the reduced coordinates at P = I_N (docs/theory.md#reduction)."""
    from rwtoolkit.engines.exact import derive

    model = get_model("one_layer")
    fixed = fixed_subspace(model, task, task_symmetries(task))
    assert induction_step(task, model, fixed).stuck_for_all_t
    K, N = task.K, task.N
    D = K + N
    images = []
    for b in fixed.basis:
        V, W = list(b[: K * K]), np.array(b[K * K :], dtype=object).reshape(D, D)
        images.append(V + list(W[:K, D - 1]) + list(W[K:, D - 1]))
    reduced = Subspace.from_vectors({"V": (K, K), "w_tok": (K,), "c": (N,)}, images)
    trajectory = derive(task, 3, eta=1, eps="1/10", mu=1)
    for state in trajectory.states:
        flat = list(sp.Matrix(state.V)) + list(state.w_tok) + list(state.c)
        assert all(is_zero(sp.sympify(r)) for r in _exact_residual(reduced, flat))


def _torch_signal(task, subspace, alpha, mu):
    """C(θ) = E[e_y (X S_θ)ᵀ] − E[e_y] E[X S_θ]ᵀ at θ = Bα, from a forward pass written here (float64)."""
    K, N = task.K, task.N
    B = np.array([[float(x.p) / float(x.q) for x in b] for b in subspace.basis]).T
    theta = B @ np.array(alpha, dtype=float)
    W = theta[K * K :].reshape(K + N, K + N)
    P = np.sqrt(mu) * np.eye(N)
    joint, mean = np.zeros((K, K)), np.zeros(K)
    average = np.zeros(K)
    for X, Xt, y, w in _inputs(task, P):
        logits = Xt.T @ (W @ Xt[:, N - 1])
        S = np.exp(logits - logits.max())
        S /= S.sum()
        a = X @ S
        joint[y] += float(w) * a
        mean[y] += float(w)
        average += float(w) * a
    return joint - np.outer(mean, average)


def test_the_token_signal_vanishes_on_theorem_41s_manifold():
    """The paper's Lemma D.3 manifold: equal attention on the key positions and each token r times, so
    X S_θ is the same for every input and C(θ) = 0 at every point (proved)."""
    for K, r, p in [(3, 1, 1), (4, 1, 0), (3, 2, 1)]:
        N = r * K + 1
        result = induction_step(CircleWalk(K, N, p), get_model("one_layer"), lemma_d3(K, N))
        assert result.signal == "zero" and result.signal_witness is None
        assert result.to_json()["signal"] == "zero"


def test_the_token_signal_of_a_learning_task_is_non_zero_with_a_witness_recomputed_here():
    task = CircleWalk(3, 6, "3/10")
    model = get_model("one_layer")
    fixed = fixed_subspace(model, task, task_symmetries(task))
    result = induction_step(task, model, fixed)
    assert result.signal == "non-zero"
    w = result.signal_witness
    alpha = [float(sp.Rational(a)) for a in w["alpha"]]
    C = _torch_signal(task, fixed, alpha, float(sp.Rational(w["mu"])))
    y, k = w["entry"]
    centre = float(w["value"].strip("[").split(" +/-")[0])
    assert abs(C[y, k] - centre) < 1e-9 and abs(centre) > 1e-6  # float64 vs the certified ball
