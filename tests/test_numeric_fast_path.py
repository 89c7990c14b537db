"""The fast path (reduced parameters V, u, q) equals autograd on the full W (the rank-one reduction of the W step)."""

from __future__ import annotations

import numpy as np
from conftest import assert_close
from hypothesis import given
from hypothesis import strategies as st

from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train
from rwtoolkit.tasks import CircleWalk, FiniteTask

# 1e-12 is the agreement the README promises between the two paths. Both paths differ only in summation order (float64
# rounding ~1e-16 relative per operation); over 3 steps of O(1) quantities that stays ~1e-14.
ATOL = 1e-12


@st.composite
def configs(draw):
    K = draw(st.integers(3, 5))
    N = draw(st.integers(2, 5))
    pos = draw(st.sampled_from(["sine", "onehot", "random"]))
    M = N if pos == "onehot" else draw(st.integers(N + 1, N + 4))
    model = ModelConfig(
        K=K,
        N=N,
        M=M,
        pos=pos,
        mu=draw(st.sampled_from([None, 0.5, 3.0])),
        pos_seed=draw(st.integers(0, 3)),
        normalize_attention=draw(st.booleans()),
        relu_width=draw(st.sampled_from([None, 2, 4])),
        gram=draw(st.sampled_from(["ideal", "computed"])),
    )
    init = draw(st.sampled_from(["zero", "gaussian"]))
    if model.relu_width is not None:
        init = "gaussian"  # from zero init the ReLU model has zero gradients: a vacuous comparison
    cfg = TrainConfig(
        steps=3,
        eta=draw(st.sampled_from([0.1, 0.5, 1.0])),
        loss=draw(st.sampled_from(["log", "squared", "exp"])),
        init=init,
        sigma=0.2,
        seed=draw(st.integers(0, 100)),
        population=draw(st.booleans()),
        train_size=7,
        test_size=5,
    )
    p = draw(st.sampled_from(["1/2", "0.3", "1"]))
    return CircleWalk(K, N, p), model, cfg


def _compare(task, model, cfg):
    fast = train(task, model, cfg, progress=False)
    cfg.fast = False
    ref = train(task, model, cfg, progress=False)
    assert_close(fast.final["V"], ref.final["V"], ATOL, "V")
    assert_close(fast.final["w"], ref.final["w"], ATOL, "W x~_N")
    assert_close(fast.W(), ref.W(), ATOL, "W")
    if "A" in ref.final:
        assert_close(fast.final["A"], ref.final["A"], ATOL, "A")
    for hf, hr in zip(fast.history, ref.history, strict=True):
        for key in ("train_loss", "parent_attention", "attention_profile", "kl"):
            assert_close(hf[key], hr[key], ATOL, f"{key} at step {hf['step']}")
        assert hf["test_accuracy"] == hr["test_accuracy"]


@given(configs())
def test_fast_path_matches_full_W_autograd(config):
    task, model, cfg = config
    if cfg.loss == "log" and cfg.init == "gaussian":
        cfg.sigma = 0.02  # keeps z + ε > 0 at init, so the log-loss is defined on every draw
    _compare(task, model, cfg)


def test_fast_path_matches_autograd_on_a_finite_task_with_gaussian_init_and_normalisation():
    task = FiniteTask([[0, 1, 2], [2, 1, 0], [1, 1, 0]], [0, 2, 1], ["1/2", "1/4", "1/4"], K=3)
    model = ModelConfig(K=3, N=4, M=6, normalize_attention=True, pos="random", mu=2.0)
    cfg = TrainConfig(steps=4, eta=0.7, init="gaussian", sigma=0.05, population=True, seed=5)
    _compare(task, model, cfg)


def test_reconstructed_W_reproduces_the_attention_logits():
    """W(T) rebuilt from the rank-one updates gives the softmax the fast path used (checked by hand)."""
    task, K, N, M = CircleWalk(3, 4, "0.7"), 3, 4, 6
    model = ModelConfig(K=K, N=N, M=M)
    result = train(
        task, model, TrainConfig(steps=3, population=True, init="gaussian", sigma=0.03), progress=False
    )
    W = result.W()
    from rwtoolkit.engines.numeric import positional_embeddings

    P = positional_embeddings("sine", M, N)
    pop = task.population()
    X = np.zeros((pop.size, K, N))
    X[:, :, :-1] = pop.one_hot()
    Xt = np.concatenate([X, np.broadcast_to(P, (pop.size, M, N))], axis=1)  # (n, K+M, N)
    logits = np.einsum("nkj,k->nj", Xt, W @ Xt[0, :, -1])
    S = np.exp(logits - logits.max(1, keepdims=True))
    S /= S.sum(1, keepdims=True)
    profile = (pop.float_probs()[:, None] * S).sum(0)
    assert_close(result.final["attention_profile"], profile, 1e-13, "attention from rebuilt W")
