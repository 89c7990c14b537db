"""Shared test setup: hypothesis profiles chosen by HYPOTHESIS_PROFILE, a seeded RNG, a tolerance helper.

Profiles: ``dev`` (default; quick, random), ``ci`` (derandomized, no deadline, modest example
counts: what .ci/run selects), ``thorough`` (many examples, for a run by hand).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=10, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
settings.register_profile("dev", deadline=None, max_examples=10)
settings.register_profile("thorough", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A numpy Generator seeded from the test's name; the seed is printed so a failure can be replayed."""
    seed = sum(map(ord, request.node.nodeid)) % 2**32
    print(f"rng seed = {seed}")
    return np.random.default_rng(seed)


def assert_close(actual: object, expected: object, atol: float, what: str = "") -> None:
    """Assert max |actual - expected| <= atol (arrays or nested lists); the tolerance is part of the message."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    err = float(np.max(np.abs(a - e))) if a.size else 0.0
    assert err <= atol, f"{what}: max abs error {err:.3g} exceeds the tolerance {atol:g}"


def assert_rel(actual: object, expected: object, rtol: float, what: str = "") -> float:
    """Assert max |actual - expected| <= rtol·max(1, max |expected|); returns the scaled error.

    Scaling by max(1, ·) makes the check relative for large values and absolute near zero, where a
    relative error is meaningless (exact zeros of the oracle).
    """
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    if not e.size:
        return 0.0
    err = float(np.max(np.abs(a - e))) / max(1.0, float(np.max(np.abs(e))))
    assert err <= rtol, f"{what}: relative error {err:.3g} exceeds the tolerance {rtol:g}"
    return err


def transition_by_hand(K: int, p: float) -> np.ndarray:
    """Π from docs/theory.md#task, written out independently of rwtasks: row i = current state (0-based)."""
    Pi = np.zeros((K, K))
    for i in range(K):
        Pi[i, (i + 1) % K] += p
        Pi[i, (i - 1) % K] += 1 - p
    return Pi
