"""The zoo row ``edelman_stages_paper`` (rwtoolkit/analyses/zoo/_paper_edelman.py): Edelman et al.'s stages on the
paper's two-layer attention-only transformer, KL to the uniform, unigram and bigram predictors at every position.

Oracles: torch on the paper's module itself (examples/papers/edelman_induction.py, ``two_layer`` drawn under seed 0)
for the model's predictions at t = 0 and after a few steps of ``torch.optim.AdamW`` (the authors' optimizer, their
betas, no weight decay) on the cross-entropy at every position, the predictors and KL written out again with numpy
from the counts; the stage, verdict and plateau rules on hand-made values.
"""

from __future__ import annotations

import struct
from fractions import Fraction

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import paper_example
from flint import arb

from rwtoolkit.analyses.zoo._paper_edelman import (
    CLAIM,
    ETA,
    figure,
    nearest,
    plateaus,
    position_predictors,
    stage_verdict,
)
from rwtoolkit.io import Verdict, save_figure_atomic
from rwtoolkit.tasks import icl_markov_task


@pytest.fixture(scope="module")
def quick():
    return CLAIM.check(quick=True)


def _torch_kl(steps: int, N: int = 5) -> tuple[dict[str, float], float]:
    """KL(p ‖ model) per predictor averaged over positions and the loss after ``steps`` AdamW steps, by torch on
    the module with the predictors counted again in numpy (α = 1)."""
    task = icl_markov_task(2, N, 1)
    pop = task.population()
    seqs = np.concatenate([pop.tokens, pop.labels[:, None]], axis=1)
    w = torch.tensor([float(q) for q in pop.exact_probs()], dtype=torch.float64)
    net = paper_example("edelman_induction.py").two_layer(2, N - 1)
    idx = torch.tensor(pop.tokens, dtype=torch.long)
    target = torch.tensor(seqs[:, 1:], dtype=torch.long)
    opt = torch.optim.AdamW(net.parameters(), lr=float(ETA), betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    for _ in range(steps):
        logp = F.log_softmax(net(idx), -1)
        loss = -(w[:, None] * logp.gather(-1, target[..., None])[..., 0]).sum() / (N - 1)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        logp = F.log_softmax(net(idx), -1).numpy()
        loss = float(
            -(w.numpy()[:, None] * np.take_along_axis(logp, seqs[:, 1:, None], -1)[..., 0]).sum() / (N - 1)
        )
    n, L = pop.tokens.shape
    kl = {"uniform": 0.0, "unigram": 0.0, "bigram": 0.0}
    for k in range(n):
        for i in range(L):
            ctx = list(seqs[k, : i + 1])
            c = np.bincount(ctx, minlength=2)
            t = np.zeros(2)
            for u, v in zip(ctx[:-1], ctx[1:], strict=False):
                if u == ctx[-1]:
                    t[v] += 1
            for name, p in (
                ("uniform", np.full(2, 0.5)),
                ("unigram", (c + 1) / (i + 3)),
                ("bigram", (t + 1) / (t.sum() + 2)),
            ):
                kl[name] += float(w[k]) * float(np.sum(p * (np.log(p) - logp[k, i]))) / L
    return kl, loss


def test_quick_verdict_is_pinned(quick):
    assert quick.verdict is Verdict.FAILS
    (line,) = quick.evidence
    # the unigram predictor is never the nearest at L = 4; the nearest flips between uniform and bigram
    assert "uniform (t=0) → bigram (t=29) → uniform (t=30) → bigram (t=31)" in line
    assert "t=0: 0.0000, 0.0724, 0.0480" in line


def test_kl_at_start_matches_torch(quick):
    kl, _ = _torch_kl(0)
    data = quick.figure["N=5 η=1/100"]
    for name, value in kl.items():
        assert data["kl_balls"][name][0] == pytest.approx(value, abs=1e-12)
    assert (round(kl["unigram"], 4), round(kl["bigram"], 4)) == (0.0724, 0.0480)


def test_kl_after_adamw_matches_torch(quick):
    kl, _ = _torch_kl(10)
    data = quick.figure["N=5 η=1/100"]
    k = data["t"].index(10)
    for name, value in kl.items():
        assert data["kl_balls"][name][k] == pytest.approx(value, abs=1e-9)


def test_position_predictors_by_hand():
    p = position_predictors([1, 0, 1, 1], 0, Fraction(1))
    # i = 3: context 1 0 1 1, counts (1, 3): unigram (2/6, 4/6); transitions from 1: 1→0, 1→1: bigram (2/4, 2/4)
    assert p["unigram"][3] == [Fraction(1, 3), Fraction(2, 3)]
    assert p["bigram"][3] == [Fraction(1, 2), Fraction(1, 2)]
    # i = 0: no transition yet, the bigram predictor is the prior's (1/2, 1/2); unigram (1/3, 2/3)
    assert p["bigram"][0] == [Fraction(1, 2)] * 2 and p["unigram"][0] == [Fraction(1, 3), Fraction(2, 3)]


def test_the_stage_rule_decides_in_balls():
    assert nearest({"uniform": arb(1), "unigram": arb(2), "bigram": arb(3)}) == "uniform"
    assert nearest({"uniform": arb(2), "unigram": arb(1, 0.5), "bigram": arb(3)}) == "unigram"
    assert nearest({"uniform": arb(2), "unigram": arb(1, 0.5), "bigram": arb(1.2, 0.1)}) == ""  # overlap


def test_the_order_rule_would_catch_a_wrong_order():
    assert stage_verdict(["uniform", "unigram", "bigram"], []) is Verdict.HOLDS
    assert stage_verdict(["uniform", "bigram"], []) is Verdict.FAILS
    assert stage_verdict(["uniform", "unigram", "bigram", "unigram"], []) is Verdict.FAILS
    assert stage_verdict(["uniform", "unigram"], []) is Verdict.INCONCLUSIVE
    assert stage_verdict(["uniform", "unigram", "bigram"], [40]) is Verdict.INCONCLUSIVE


def test_plateaus_by_hand():
    t = list(range(0, 1100, 100))
    loss = [1.0, 0.9, 0.8999, 0.8998, 0.8997, 0.7, 0.6999, 0.6, 0.5999, 0.5998, 0.5997]
    assert plateaus(t, loss, width=200, delta=1e-3) == [(100, 400), (700, 1000)]
    assert plateaus(t, loss, width=400, delta=1e-3) == []


def test_the_figure_is_written(quick, tmp_path):
    path = save_figure_atomic(figure(quick, lambda _: None), tmp_path / "edelman.png", dpi=100)
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert (width, height) == (700, 460)
