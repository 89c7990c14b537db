"""The row makkuva_unigram_point_paper: θ_π on the paper's own model (examples/papers/makkuva_markov.py)."""

from __future__ import annotations

import io
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import sympy as sp

from rwtoolkit.analyses.zoo._claims import paper_model
from rwtoolkit.analyses.zoo._paper_makkuva import CLAIM, figure, unigram_point
from rwtoolkit.engines.exact import hessian_inertia
from rwtoolkit.io import Verdict
from rwtoolkit.models import CrossEntropy, hessian
from rwtoolkit.tasks import binary_markov_task


@pytest.fixture(scope="module")
def quick() -> Any:
    return CLAIM.check(quick=True)


def _hessian(name: str, p: str, q: str, N: int) -> tuple[dict[str, int], sp.Matrix]:
    model = paper_model(f"makkuva_markov.py:{name}")
    point, data, ar = unigram_point(model, binary_markov_task(p, q, N))
    offsets, k = {}, 0
    for key, value in point.items():
        offsets[key] = k
        k += int(np.size(value))
    return offsets, sp.Matrix(hessian(model, ar, point, data, CrossEntropy("lm")).tolist())


def test_quick_verdict_and_inertia_pinned(quick: Any) -> None:
    assert quick.verdict == Verdict.HOLDS
    tied, untied = quick.evidence
    assert "∇L = 0 exactly" in tied and "(+5, 0×104, −0)" in tied
    assert "∇L = 0 exactly" in untied and "(+5, 0×104, −4)" in untied


def test_untied_entries_by_hand() -> None:
    """By hand at θ_π (p = q = 7/10, π = (1/2, 1/2)): ∂²L/∂b² = σ(b)(1 − σ(b)) = 1/4, and the a–e cross term is
    E[(σ(b) − x_{n+1}) x_n] = π₁² − π₁(1 − q) = 1/10 (a saddle: the 2×2 block [[0, 1/10], [1/10, 0]])."""
    off, H = _hessian("untied_no_norm", "7/10", "7/10", 3)
    assert H[off["b"], off["b"]] == Fraction(1, 4)
    assert H[off["e"], off["a"]] == Fraction(1, 10)
    assert H[off["e"], off["e"]] == 0 and H[off["a"], off["a"]] == 0


def test_tied_below_one_is_a_saddle() -> None:
    """Tied with p + q < 1 (p = q = 3/10): along e₀ the curvature is 2(π₁² − π₁(1 − q)) = −1/5 by hand, so the
    exact inertia must count a negative eigenvalue (the paper's saddle for p + q < 1)."""
    off, H = _hessian("tied_no_norm", "3/10", "3/10", 3)
    assert H[off["e"], off["e"]] == Fraction(-1, 5)
    assert hessian_inertia(H)[2] > 0


def test_figure_png(quick: Any) -> None:
    fig = figure(quick, lambda message: None)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    assert buffer.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"
    assert tuple(fig.get_size_inches()) == (11, 4.5)
