"""Predicted escape from the manifold (linear theory) and measured escape (``rwnumeric.train``).

The symmetry-breaking quantity is V's relative distance from the manifold, ρ(t) = ‖V - mean(V)·1‖_F / ‖V‖_F
(``ones_residual`` in ``rwnumeric``'s history). Escape is the first t ≥ 1 with ρ(t) > τ.

Prediction. A perturbation's normal component evolves by C_t (``_linear``); its covariance by
Σ_{t+1} = C_t Σ_t C_tᵀ + Q_{t+1}. A Gaussian init N(0, σ²) of V and W gives, in reduced coordinates,
independent entries with variance σ² on V and on c (c_j = p_jᵀ W x̃_N/μ) and σ²μ on w_tok, and Q = 0.
Rounding injects, at every step, independent errors of size u·‖θ*(t)‖/√dim per coordinate (u the unit
roundoff of the dtype), Σ_0 = 0. The predicted ρ(t) is the root-mean-square V-part of the normal
deviation divided by ‖V*(t)‖_F.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rwstability._linear import Linearisation
from rwstability._reduced import deterministic_walks

#: Unit roundoff (half the machine epsilon) per dtype.
UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24}
#: Default escape threshold τ on ρ(t) (see ``predict_escape``).
DEFAULT_THRESHOLD = 1e-3


@dataclass(frozen=True)
class Escape:
    """``step``: the first t ≥ 1 with ρ(t) > τ, or None within the run; ``rho``: ρ(t) from t = 0.

    A prediction's ``rho`` stops at its escape step; a measurement's covers the whole run.
    """

    step: int | None
    rho: list[float]


def _first_above(rho: list[float], threshold: float) -> int | None:
    return next((t for t in range(1, len(rho)) if rho[t] > threshold), None)


def predict_escape(
    lin: Linearisation,
    sigma: float | None = None,
    dtype: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> Escape:
    """Predicted ρ(t) and escape step for a Gaussian init of scale ``sigma`` or for rounding in ``dtype``.

    τ = 1e-3 by default: far above the rounding floor (ρ ≈ 1e-7 in float32, 1e-16 in float64), so the
    crossing is a property of the dynamics, and small enough that the neglected second-order terms
    (relative size ≈ ρ) are 0.1% of the linear ones when it is crossed.

    >>> from rwtasks import CircleWalk
    >>> from rwstability import linearise
    >>> lin = linearise(CircleWalk(3, 4, 1), steps=20)
    >>> predict_escape(lin, sigma=1e-3).step
    1
    """
    if (sigma is None) == (dtype is None):
        raise ValueError("give exactly one of sigma (Gaussian init) and dtype (rounding)")
    coords = lin.coords
    K = coords.K
    B = lin.basis  # (dim, n)
    n = B.shape[1]
    PV = B[: K * K]  # V-rows of the normal basis
    if sigma is not None:
        if not (math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma={sigma!r} must be a finite number > 0")
        var = sigma**2 * coords.metric(lin.mu)  # σ² on V and c, σ²μ on w_tok
        Sigma = B.T @ (var[:, None] * B)
        u = 0.0
    else:
        if dtype not in UNIT_ROUNDOFF:
            raise ValueError(f"dtype={dtype!r} is not one of {', '.join(UNIT_ROUNDOFF)}")
        Sigma = np.zeros((n, n))
        u = UNIT_ROUNDOFF[dtype]
    rho = []
    for t, theta in enumerate(lin.thetas):
        normV = float(np.linalg.norm(theta[: K * K]))
        dev = math.sqrt(max(float(np.trace(PV @ Sigma @ PV.T)), 0.0))
        rho.append(dev / normV if normV > 0 else 1.0)
        if t >= 1 and rho[-1] > threshold:
            break  # escaped: past here the linear growth is meaningless (and can overflow)
        if t < len(lin.C):
            C = lin.C[t]
            Sigma = C @ Sigma @ C.T
            q = (u * float(np.linalg.norm(lin.thetas[t + 1]))) ** 2 / coords.dim
            Sigma = Sigma + q * np.eye(n)
    return Escape(_first_above(rho, threshold), rho)


def measure_escape(
    lin: Linearisation,
    sigma: float | None = None,
    dtype: str = "float64",
    seed: int = 0,
    threshold: float = DEFAULT_THRESHOLD,
    gram: str = "ideal",
) -> Escape:
    """ρ(t) of a real ``rwnumeric.train`` run (exact population, full W, P scaled to ‖p_j‖² = μ).

    ``sigma`` None: zero init, so only rounding breaks the symmetry; else a Gaussian init of scale σ.
    ``gram``: "ideal" (PᵀP = μI exactly, one-hot P with M = N) or "computed" (the float Gram matrix of a
    sine P with M = 4N, whose ~1e-16 off-diagonal entries are an asymmetry rounding alone does not make).
    """
    from rwnumeric import ModelConfig, TrainConfig, train

    task = lin.task
    steps = len(lin.C)
    if gram == "ideal":
        model = ModelConfig(K=task.K, N=task.N, M=task.N, pos="onehot", pos_norm=lin.mu)
    elif gram == "computed":
        model = ModelConfig(K=task.K, N=task.N, M=4 * task.N, pos="sine", pos_norm=lin.mu, gram="computed")
    else:
        raise ValueError(f"gram={gram!r} is not one of ideal, computed")
    cfg = TrainConfig(
        steps=steps,
        eta=lin.eta,
        eps=lin.eps,
        init="zero" if sigma is None else "gaussian",
        sigma=0.01 if sigma is None else sigma,
        seed=seed,
        population=True,
        dtype=dtype,
        threads=1,
    )
    result = train(deterministic_walks(task), model, cfg, progress=False)
    rho = [float(h["ones_residual"]) for h in result.history]
    return Escape(_first_above(rho, threshold), rho)
