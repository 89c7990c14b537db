"""The H-head model (rwtoolkit.models.multi_head): the sum of H paper's models, and its identical heads stay identical.

Oracles: the forward pass and the gradient of Σ_h one_layer(V_h, W_h), written with the paper's model's own
definition (a separate module) and torch autograd; H = 1 is the paper's model exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rwtoolkit.engines.exact import Subspace, identical_heads, induction_step, stuck_proof
from rwtoolkit.engines.numeric import TensorLoss, TorchArithmetic
from rwtoolkit.models import Sizes, Tape, evaluate, get_model, rational_positions
from rwtoolkit.tasks import CircleWalk, first_of_two_task
from tests.test_models import _float_batch


def _setup(H: int, seed: int = 3):
    task = CircleWalk(3, 4, "3/10")
    P = np.asarray(rational_positions(task.N, 2), dtype=float)
    ar = TorchArithmetic(torch.float64)
    b = _float_batch(ar, task, P)
    rng = np.random.default_rng(seed)
    D = task.K + P.shape[0]
    params = {
        "V": ar.asarray(rng.standard_normal((H, 3, 3))),
        "W": ar.asarray(0.4 * rng.standard_normal((H, D, D))),
    }
    return task, ar, b, params


@pytest.mark.parametrize("H", [1, 2, 3])
def test_the_h_head_model_is_the_sum_of_h_paper_models(H):
    task, ar, b, params = _setup(H)
    ev = evaluate(get_model("multi_head", H=H), ar, params, b, TensorLoss("log", 0.1))
    one = get_model("one_layer")
    leaves = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    f = sum(
        one.forward(Tape(ar), {"V": leaves["V"][h], "W": leaves["W"][h]}, b.inputs).f.value for h in range(H)
    )
    z = f[torch.arange(b.size), torch.as_tensor(b.labels)]
    (b.weights * -torch.log(z + 0.1)).sum().backward()
    torch.testing.assert_close(ev.f, f.detach(), rtol=1e-12, atol=1e-12)
    for k in params:
        torch.testing.assert_close(ev.gradient[k], leaves[k].grad, rtol=1e-12, atol=1e-12)


def test_identical_heads_stay_identical_for_every_loss_and_a_planted_ratio_is_refuted():
    for task in (CircleWalk(3, 4, "3/10"), first_of_two_task(3)):
        model = get_model("multi_head", H=2)
        same = identical_heads(model, task)
        assert same is not None and induction_step(task, model, same).outcome == "proved"
        # planted: head 1 = 2 × head 0 (not a symmetry: the heads' attentions differ)
        K2 = same.shapes["V"][1] * same.shapes["V"][2]
        doubled = [
            v[:K2] + [2 * x for x in v[:K2]] + v[K2:] + [2 * x for x in v[K2:]] for v in _per_head(same)
        ]
        planted = Subspace.from_vectors(same.shapes, doubled)
        assert induction_step(task, model, planted).outcome == "refuted"
    assert identical_heads(get_model("one_layer"), CircleWalk(3, 4, 1)) is None


def _per_head(subspace: Subspace) -> list:
    """Head 0's coordinates of each basis vector, laid out as [V_0 | V_1 | W_0 | W_1] → [V_0, W_0] halves."""
    (H, K, _), (_, D, _) = subspace.shapes["V"], subspace.shapes["W"]
    out = []
    for b in subspace.basis:
        V = np.array(b[: H * K * K], dtype=object).reshape(H, K, K)
        W = np.array(b[H * K * K :], dtype=object).reshape(H, D, D)
        out.append(list(V[0].ravel()) + list(W[0].ravel()))
    return out


def test_stuck_proof_reports_identical_heads_for_a_multi_head_model():
    report = stuck_proof(CircleWalk(3, 4, 1), get_model("multi_head", H=2))
    assert report["verdict"] == "stuck for all t (proved)"
    assert report["identical_heads"]["outcome"] == "proved"


def test_one_head_with_separate_key_and_query_is_key_query_exactly():
    """multi_head H = 1, d = 1 is key_query d = 1 value for value, from the same exact Gaussian start.

    The two forward passes order their products differently, so once exponential atoms enter (numbered per
    run) the expressions differ in form: compared as floats to 1e-14 (the values agree to float64 rounding).
    """
    from rwtoolkit.engines.exact import EXACT, derive_model

    task = CircleWalk(3, 3, "1/2")
    a = derive_model(task, get_model("multi_head", H=1, d=1), 2, init="gaussian", seed=1)
    b = derive_model(task, get_model("key_query", d=1), 2, init="gaussian", seed=1)
    for sa, sb in zip(a.states, b.states, strict=True):
        for name in ("V", "W_K", "W_Q"):
            got = EXACT.to_float(sa.params[name]).reshape(np.asarray(sb.params[name]).shape)
            np.testing.assert_allclose(got, EXACT.to_float(sb.params[name]), rtol=1e-14, atol=1e-300)
        np.testing.assert_allclose(EXACT.to_float(sa.f), EXACT.to_float(sb.f), rtol=1e-14, atol=1e-300)
    assert (a.states[0].params["W_K"].reshape(1, 7) == b.states[0].params["W_K"]).all()  # the same start


def test_separate_key_and_query_heads_stay_identical_and_stuck_from_zero():
    model, task = get_model("multi_head", H=2, d=1), CircleWalk(3, 4, "3/10")
    assert induction_step(task, model, identical_heads(model, task)).outcome == "proved"
    sizes = Sizes(K=3, M=4, N=4)
    shapes = model.shapes(sizes)
    v_only = [[int(i == k) for i in range(model.parameter_count(sizes))] for k in range(18)]
    assert induction_step(task, model, Subspace.from_vectors(shapes, v_only)).outcome == "proved"
