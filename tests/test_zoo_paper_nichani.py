"""The zoo row ``nichani_parent_attention_paper`` (rwtoolkit/analyses/zoo/_paper_nichani.py): Nichani et al.'s
simplified model in the paper's two stages, on the chain and two other causal graphs.

Oracles: torch autograd on the paper's module itself (examples/papers/nichani_causal.py, its ``nn.Module`` and
``F.cross_entropy`` at the last position, weighted by the exact population) trained in the same stages, for
softmax(A1) at the end of stage 1 and the losses; the conditional entropy H(y | x) by hand at N = 3; the criterion
on hand-made ball rows (decided, failed, undecided) and on the tree's attention read with the chain's parents.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import paper_example
from flint import arb

from rwtoolkit.analyses.zoo._paper_nichani import (
    CLAIM,
    ETA,
    TAU1,
    TAU2,
    conditional_entropy,
    figure,
    graphs,
    parent_rows,
)
from rwtoolkit.io import Verdict, save_figure_atomic
from rwtoolkit.tasks import icl_markov_task


@pytest.fixture(scope="module")
def quick():
    return CLAIM.check(quick=True)


def _torch_staged(parents, N=5):
    """softmax(A1) at t = τ₁ and the losses at 0, τ₁, τ₁ + τ₂ of torch autograd on the module, in the stages."""
    task = icl_markov_task(2, N, 1, parents=parents)
    pop = task.population()
    net = paper_example("nichani_causal.py").simplified(2, N - 1)
    idx = torch.tensor(pop.tokens, dtype=torch.long)
    y = torch.tensor(pop.labels, dtype=torch.long)
    w = torch.tensor([float(q) for q in pop.exact_probs()], dtype=torch.float64)

    def loss():
        return (w * F.cross_entropy(net(idx)[:, -1, :], y, reduction="none")).sum()

    losses, attention = {}, None
    for t in range(TAU1 + TAU2 + 1):
        value = loss()
        if t in (0, TAU1, TAU1 + TAU2):
            losses[t] = float(value.detach())
        if t == TAU1:
            L = N - 1
            masked = net.A1.detach().masked_fill(torch.tril(torch.ones(L, L)) == 0, float("-inf"))
            attention = torch.softmax(masked, dim=-1).numpy()
        if t == TAU1 + TAU2:
            break
        trained = net.A1 if t < TAU1 else net.A2
        (grad,) = torch.autograd.grad(value, trained)
        with torch.no_grad():
            trained -= float(ETA) * grad
    return attention, losses


def test_the_quick_verdict_is_pinned(quick):
    assert quick.verdict is Verdict.HOLDS
    assert [c["graph"] for c in quick.configurations] == ["chain", "tree", "skip", "chain, query a root"]
    assert [c["parents"] for c in quick.configurations] == [[1, 2, 3], [1, 1, 2], [0, 1, 2], [1, 2, 0]]
    assert all("above" in line and "NOT above" not in line for line in quick.evidence)
    assert all("A1 unchanged in stage 2" in line for line in quick.evidence)


@pytest.mark.parametrize("name", ["chain", "tree", "skip", "chain, query a root"])
def test_the_certified_attention_and_losses_match_torch_autograd_on_the_module(quick, name):
    data = quick.figure[f"N=5 {name}"]
    parents = {**graphs(5), "chain, query a root": (1, 2, 0)}[name]
    attention, losses = _torch_staged(parents)
    assert np.max(np.abs(data["softmax"] - attention)) < 1e-9
    for t, value in losses.items():
        assert abs(data["loss_float"][t] - value) < 1e-9
        if t % 10 == 0:
            assert abs(data["loss_balls"][data["t"].index(t)] - value) < 1e-9
    # the parent's entry is the row's largest in the oracle too, row by row
    for k, p in enumerate(parents):
        if p:
            row = attention[k + 1, : k + 2]
            assert int(np.argmax(row)) == p - 1


def test_the_evidence_prints_the_pinned_parent_entries(quick):
    chain = quick.evidence[0]
    # torch autograd on the module (test above) gives these to 1e-9; pinned to the printed digits
    assert "i=2: parent 1 0.965 vs 2 0.035 above" in chain
    assert "i=3: parent 2 0.781 vs 1 0.174 above" in chain
    assert "i=4: parent 3 0.521 vs 4 0.192 above" in chain
    assert "i=2: a root" in quick.evidence[2] and "i=4: a root" in quick.evidence[3]


def test_stage_two_lowers_the_loss_and_stays_above_the_conditional_entropy(quick):
    for data in quick.figure.values():
        balls = dict(zip(data["t"], data["loss_balls"], strict=True))
        assert balls[TAU1 + TAU2] <= balls[TAU1] < balls[0]
        assert balls[TAU1 + TAU2] > data["entropy"]


def test_the_conditional_entropy_by_hand():
    # N = 3 chain, α = 1: the contexts (x1, x2) are equally likely (x2 | x1 is uniform: α / 2α); given x2 the
    # label follows the urn (n_{x2 y} + 1)/(n_{x2} + 2): (0, 0) and (1, 1) give (2/3, 1/3), (0, 1) and (1, 0) (1/2, 1/2)
    h23 = -(2 / 3) * math.log(2 / 3) - (1 / 3) * math.log(1 / 3)
    want = 0.5 * h23 + 0.5 * math.log(2)
    H = conditional_entropy(icl_markov_task(2, 3, 1))
    assert abs(float(H.mid()) - want) < 1e-15 and float(H.rad()) < 1e-12


def test_the_criterion_decides_fails_and_stays_undecided_on_balls():
    one, zero = arb(1), arb(0)
    decided = np.array(
        [[one, zero, zero], [arb("0.7"), arb("0.3"), zero], [arb("0.2"), arb("0.5"), arb("0.3")]]
    )
    assert parent_rows(decided, (1, 2)) == ([2, 3], [], [])
    assert parent_rows(decided, (1, 1)) == ([2], [3], [])  # row 3's entry at 1 is below its entry at 2
    overlap = decided.copy()
    overlap[2, 1], overlap[2, 2] = arb("0.4 +/- 0.1"), arb("0.35 +/- 0.1")
    assert parent_rows(overlap, (1, 2)) == ([2], [], [3])  # overlapping balls: undecided, never a pass
    tie = decided.copy()
    tie[2, 1] = tie[2, 2] = arb(3) / 8  # exact: the tie is decided
    assert parent_rows(tie, (1, 2)) == ([2], [3], [])  # a tie is not "largest"


def test_the_criterion_reads_the_graph(quick):
    """The tree's attention read with the chain's parents fails (position 3 attends to 1, not 2): a criterion
    that ignored ``parents`` would pass both."""
    tree = quick.figure["N=5 tree"]["softmax"]
    assert parent_rows(tree, graphs(5)["tree"]) == ([2, 3, 4], [], [])
    above, failed, _ = parent_rows(tree, graphs(5)["chain"])
    assert 3 in failed and 4 in failed and above == [2]


def test_the_figure_is_written(quick, tmp_path):
    path = save_figure_atomic(figure(quick, lambda _: None), tmp_path / "nichani.png", dpi=110)
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert (width, height) == (round((3.3 * 4 + 1.2) * 110), round(6.6 * 110))  # four graphs at N = 5
