"""The tied / untied embedding models (rwtoolkit.models.tied_embedding), the exact Hessian (rwtoolkit.engines.exact.exact_hessian)
and ``rw check`` on an independent plain implementation (examples/tied_embedding_torch.py).

Oracles, each derived independently of the code under test:
  * at the unigram point θ_π (E = 0, W = W_V = 0, A = 0, b = log ρ, ρ the label marginal) the logit of
    label k is e_kᵀ(E x_q + p_q) + b_k (tied). Along E = t·(0, e) with e ⊥ p_q it is t²‖e‖² 1{x_q = 1} for
    k = 1, so d²L/dt² = 2‖e‖² Σ_n w_n 1{x_q = 1}(ρ_1 − 1{y = 1}): a population sum written out here;
  * untied, the logit a_kᵀ(E x_q + p_q) + b_k makes ∂²L/∂A_{k,m}∂E_{m,l} = Σ_n w_n 1{x_q = l}(ρ_k − 1{y = k})
    for every m (and 0 across different m), the Gauss–Newton part vanishing at A = E = 0;
  * torch.autograd.functional.hessian of the example module's own loss at a dyadic point: the exact
    Hessian to 1e-10 of its largest entry (float64 rounding of a few hundred operations is ~1e-13;
    a margin of 1000);
  * Sylvester's law of inertia: B D Bᵀ with B invertible has the signs of D.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from rwtoolkit.analyses.check import CheckOptions, check, load_factory
from rwtoolkit.analyses.zoo._claims import unigram_point
from rwtoolkit.engines.exact import exact_hessian, hessian_inertia
from rwtoolkit.models import Sizes, get_model, rational_positions
from rwtoolkit.tasks import binary_markov_task

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "tied_embedding_torch.py"
sys.path.insert(0, str(EXAMPLE.parent))
from tied_embedding_torch import FIRST_WRONG  # noqa: E402


def _flat_index(model, K, M, N, name, index) -> int:
    start = 0
    for param, shape in model.shapes(Sizes(K=K, M=M, N=N)).items():
        if param == name:
            return start + int(np.ravel_multi_index(index, shape))
        start += int(np.prod(shape))
    raise KeyError(name)


def _population_terms(task):
    pop = task.population()
    rho = [sp.Integer(0)] * pop.K
    for y, w in zip(pop.labels.tolist(), pop.exact_probs(), strict=True):
        rho[y] += sp.nsimplify(w)
    last = pop.tokens[:, -1].tolist()
    return pop, rho, last


@pytest.mark.parametrize("p, q", [("7/10", "3/5"), ("1/5", "3/10")])
def test_tied_curvature_along_the_embedding_is_the_population_sum(p, q) -> None:
    task, N = binary_markov_task(p, q, 3), 3
    model = get_model("tied_embedding")
    point, P, _ = unigram_point(task, model)
    gradient, H = exact_hessian(model, task, point, P)
    assert all(g == 0 for g in gradient)  # stationary, exactly
    pop, rho, last = _population_terms(task)
    M = len(P)
    p_q = [sp.nsimplify(P[m][N - 2]) for m in range(M)]
    m_free = next(m for m in range(M) if p_q[m] == 0)  # e = unit vector ⊥ p_q
    j = _flat_index(model, 2, M, N, "E", (m_free, 1))
    expected = 2 * sum(
        sp.nsimplify(w) * (rho[1] - int(y == 1))
        for x, y, w in zip(last, pop.labels.tolist(), pop.exact_probs(), strict=True)
        if x == 1
    )
    assert H[j, j] == expected
    # the sign is that of p + q − 1 (ρ stationary: 2π₁ q (p + q − 1)/(p + q))
    pp, qq = sp.Rational(p), sp.Rational(q)
    assert H[j, j] == 2 * (pp / (pp + qq)) * qq * (pp + qq - 1) / (pp + qq)


def test_untied_mixed_block_is_the_population_covariance() -> None:
    task, N = binary_markov_task("7/10", "3/5", 3), 3
    model = get_model("untied_embedding")
    point, P, _ = unigram_point(task, model)
    _, H = exact_hessian(model, task, point, P)
    pop, rho, last = _population_terms(task)
    M = len(P)
    weights = [sp.nsimplify(w) for w in pop.exact_probs()]
    for k in range(2):
        for l_ in range(2):
            C = sum(
                w * (rho[k] - int(y == k))
                for x, y, w in zip(last, pop.labels.tolist(), weights, strict=True)
                if x == l_
            )
            for m in range(M):
                for m2 in range(M):
                    a = _flat_index(model, 2, M, N, "A", (k, m))
                    e = _flat_index(model, 2, M, N, "E", (m2, l_))
                    assert H[a, e] == (C if m == m2 else 0), (k, l_, m, m2)


def test_exact_hessian_is_torch_autograd_of_the_plain_module() -> None:
    import tied_embedding_torch as example
    import torch

    task, N = binary_markov_task("7/10", "3/5", 3), 3
    model = get_model("untied_embedding")
    P = rational_positions(N, 1)
    M = len(P)
    shapes = model.shapes(Sizes(K=2, M=M, N=N))
    rng = np.random.default_rng(4)
    point = {
        k: np.vectorize(lambda v: sp.Rational(int(v), 8), otypes=[object])(rng.integers(-4, 5, s))
        for k, s in shapes.items()
    }
    # E = 0 and W = 0 (uniform attention): z = p_q + W_V P̄ is the same for every input, and b makes the
    # read-out's logits log(1/3), log(2/3), so every exponential is rational and H stays rational
    point["E"] = np.zeros(shapes["E"], dtype=object)
    point["W"] = np.zeros(shapes["W"], dtype=object)
    Pq = sp.Matrix(P)
    z = Pq[:, N - 2] + sp.Matrix(point["W_V"]) * Pq[:, : N - 1] * sp.ones(N - 1, 1) / (N - 1)
    logits = sp.Matrix(point["A"]) * z
    point["b"] = np.array(
        [sp.log(r) - logits[k] for k, r in enumerate((sp.Rational(1, 3), sp.Rational(2, 3)))]
    )
    gradient, H = exact_hessian(model, task, point, P, eps="1/10")
    assert all(x.is_Rational for x in H)
    pop = task.population()
    X = np.zeros((pop.size, 2, N))
    X[np.arange(pop.size)[:, None], pop.tokens, np.arange(N - 1)[None, :]] = 1
    Xt = torch.tensor(np.concatenate([X, np.broadcast_to(np.asarray(P, float), (pop.size, M, N))], 1))
    y = torch.as_tensor(pop.labels)
    w = torch.tensor([float(x) for x in pop.exact_probs()], dtype=torch.float64)
    module = example.UntiedEmbedding(2, M)
    names = list(shapes)
    sizes = [int(np.prod(s)) for s in shapes.values()]
    flat0 = torch.tensor(
        [float(point[k][i]) for k in names for i in np.ndindex(shapes[k])], dtype=torch.float64
    )

    def loss(theta):
        parts = dict(zip(names, torch.split(theta, sizes), strict=True))
        f = torch.func.functional_call(module, {k: v.reshape(shapes[k]) for k, v in parts.items()}, (Xt,))
        return -(w * torch.log(f[torch.arange(len(y)), y] + 0.1)).sum()

    Hf = torch.autograd.functional.hessian(loss, flat0).numpy()
    He = np.array(H.evalf(), dtype=float)
    assert np.abs(Hf - He).max() <= 1e-10 * np.abs(He).max()
    gf = torch.func.grad(loss)(flat0).numpy()
    assert np.abs(gf - np.array(gradient.evalf(), dtype=float).ravel()).max() <= 1e-10 * np.abs(gf).max()


def test_inertia_is_sylvesters() -> None:
    B = sp.Matrix([[1, 2, 0, 1], [0, 1, 3, 0], [2, 0, 1, 1], [1, 1, 1, 2]])
    assert B.det() != 0
    for D, expected in [([3, -1, 0, 2], (2, 1, 1)), ([-1, -2, -5, -1], (0, 0, 4)), ([0, 0, 7, 0], (1, 3, 0))]:
        assert hessian_inertia(B * sp.diag(*D) * B.T) == expected
    with pytest.raises(ValueError, match="not symmetric"):
        hessian_inertia(sp.Matrix([[0, 1], [0, 0]]))


@pytest.mark.parametrize("model, factory", [("tied_embedding", "tied"), ("untied_embedding", "untied")])
def test_the_plain_implementation_passes(model, factory) -> None:
    report = check(load_factory(f"{EXAMPLE}:{factory}"), CheckOptions(steps=2, examples=3, model=model))
    assert report.exit_code == 0, report.render()
    rows = {r.id: r.status for r in report.results}
    assert all(rows[q] == "pass" for q in ("E", "W", "W_V", "b", "S", "f", "loss")), rows
    assert rows["lemma_C1_first_value_step"] == "not checked"  # no value matrix V of f = V X S
    assert report.options.task == "finite"  # the model's CHECK_TASK: from zero nothing moves on circle walks


@pytest.mark.parametrize("variant", sorted(FIRST_WRONG))
def test_each_planted_bug_fails_at_its_first_wrong_quantity(variant) -> None:
    model, quantity = FIRST_WRONG[variant]
    report = check(load_factory(f"{EXAMPLE}:{variant}"), CheckOptions(steps=2, examples=3, model=model))
    names = ("E", "W", "W_V", "b", "A", "S", "f", "loss")
    failed = [r.id for r in report.results if r.status == "fail" and r.id in names]
    assert report.exit_code == 1 and failed == [quantity], report.render()
