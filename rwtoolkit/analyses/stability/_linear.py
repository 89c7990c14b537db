"""The GD map linearised along the exact trajectory, restricted to the normal directions of the manifold.

Exact (SymPy): J_t = I - η D ∇²L(θ*(t)) at the exact θ*(t) of ``rwtoolkit.engines.exact.derive``, and its normal block
C_t = (BᵀB)⁻¹ Bᵀ J_t B for the rational normal basis B. Because J_t maps the tangent space T into itself,
the normal component of a perturbation evolves by C_t alone: this is exact, and ``leak`` (= Bᵀ J_t T, which
must vanish) checks it. Float64 (torch.func.jacrev twice on the same loss) for long runs: C_t in an orthonormal
normal basis, Φ_t = C_{t-1}⋯C_0 with its leading singular value kept in log scale.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import sympy as sp

from rwtoolkit.analyses.stability._reduced import (
    Coordinates,
    find_manifold,
    population_task,
    symbolic_loss,
    torch_loss,
)
from rwtoolkit.io import Verdict, Wording
from rwtoolkit.tasks import CircleWalk, FiniteTask, exact

if TYPE_CHECKING:  # rwtoolkit.engines.exact is imported where the exact trajectory is derived, not at import
    from rwtoolkit.analyses.stability._orbits import OrbitSums
    from rwtoolkit.engines.exact import StepState


def _simplified(expr: sp.Expr) -> sp.Expr:
    """A rational function of the symbols in canonical form (``cancel``: zero iff identically zero);
    expressions with exponentials (the trajectory from t = 2 on) go through ``simplify``."""
    return sp.simplify(expr) if expr.has(sp.exp) else sp.cancel(expr)


@dataclass
class ExactJacobian:
    """J (full reduced), C (normal block in the basis B), leak = BᵀJT (zero on an invariant manifold), θ*(t)."""

    t: int
    theta: list[sp.Expr]
    J: sp.Matrix
    C: sp.Matrix
    leak: sp.Matrix
    B: sp.Matrix


def theta_of_state(state: StepState, coords: Coordinates) -> list[sp.Expr]:
    """θ = (V[rows, cols] row-major, w_tok[cols], c) of a ``rwtoolkit.engines.exact`` StepState."""
    return coords.theta_of(sp.Matrix(state.V), list(state.w_tok), list(state.c))


def exact_jacobians(
    task: CircleWalk | FiniteTask,
    steps: int,
    eta: object = 1,
    mu: object = 1,
    eps: object = "1/10",
    coords: Coordinates | None = None,
) -> list[ExactJacobian]:
    """J_t and its normal block C_t, exactly, for t = 0..steps-1 along the exact trajectory from zero init.

    ``coords``: the manifold (default ``find_manifold`` at η = μ = 1 when η or μ is a symbol, else at
    the given values).

    >>> from rwtoolkit.tasks import CircleWalk
    >>> jac = exact_jacobians(CircleWalk(3, 4, 1), steps=1)
    >>> jac[0].C.shape, jac[0].leak.is_zero_matrix
    ((12, 12), True)
    """
    from rwtoolkit.engines.exact import derive

    eta_e, mu_e, eps_e = exact(eta, "eta"), exact(mu, "mu"), exact(eps, "eps")
    if coords is None:
        numeric = {e: 1 if e.free_symbols else e for e in (eta_e, mu_e)}
        coords = find_manifold(task, numeric[eta_e], numeric[mu_e], eps_e)
    traj = derive(population_task(task), steps=max(steps - 1, 0), eta=eta_e, eps=eps_e, mu=mu_e)
    L, theta = symbolic_loss(task, mu_e, eps_e, coords)
    H = sp.hessian(L, theta)
    n_tok = len(coords.token_cols)
    D = sp.diag(*[sp.Integer(1)] * coords.n_V + [mu_e] * n_tok + [sp.Integer(1)] * coords.N)
    B, T = coords.normal_basis(), coords.tangent_basis()
    BtB_inv = (B.T * B).inv()
    out = []
    for t in range(steps):
        point = theta_of_state(traj.states[t], coords)
        Ht = H.xreplace(dict(zip(theta, point)))
        J = (sp.eye(coords.dim) - eta_e * D * Ht).applyfunc(_simplified)
        C = (BtB_inv * B.T * J * B).applyfunc(_simplified)
        leak = (B.T * J * T).applyfunc(_simplified)
        out.append(ExactJacobian(t, point, J, C, leak, B))
    return out


@dataclass
class Linearisation:
    """Float64 linearisation along θ*(t), t = 0..steps (per-step lists have ``steps`` entries).

    ``sigma_J``, ``sigma_C``: leading singular values of J_t and of its normal block C_t; ``radius_C``: the
    spectral radius of C_t; ``log_sigma_Phi[t]``: ln σ_max(Φ_{t+1}); ``growth``: σ_max(Φ_{t+1})/σ_max(Φ_t).
    """

    task: CircleWalk | FiniteTask
    eta: float
    mu: float
    eps: float
    coords: Coordinates
    basis: np.ndarray  # (dim, n_normal) orthonormal normal basis
    thetas: list[np.ndarray]
    C: list[np.ndarray]
    J: list[np.ndarray] = field(default_factory=list)
    sigma_J: list[float] = field(default_factory=list)
    sigma_C: list[float] = field(default_factory=list)
    radius_C: list[float] = field(default_factory=list)
    log_sigma_Phi: list[float] = field(default_factory=list)
    growth: list[float] = field(default_factory=list)
    Phi: np.ndarray | None = None  # Φ_steps / σ_max(Φ_steps)
    leak: list[float] = field(default_factory=list)  # ‖Bᵀ J_t T‖ / ‖J_t‖ (0 on an invariant manifold)


def orthonormal_normal_basis(coords: Coordinates) -> np.ndarray:
    """An orthonormal basis of the normal space (SVD of the tangent basis' complement)."""
    T = np.array(coords.tangent_basis().tolist(), dtype=np.float64)
    u, _, _ = np.linalg.svd(T, full_matrices=True)
    return u[:, T.shape[1] :]


def project_to_manifold(theta: np.ndarray, coords: Coordinates) -> np.ndarray:
    """The orthogonal projection onto the manifold: every class replaced by its mean."""
    out = theta.copy()
    for members in coords.partition():
        idx = list(members)
        out[idx] = theta[idx].mean()
    return out


def linearise(
    task: CircleWalk | FiniteTask,
    steps: int,
    eta: float = 1.0,
    mu: float = 1.0,
    eps: float = 0.1,
    coords: Coordinates | None = None,
    sums: OrbitSums | None = None,
    tick: Callable[[], object] | None = None,
) -> Linearisation:
    """J_t, C_t and Φ_t in float64 for t < steps along θ*(t), GD from zero on the reduced loss.

    θ*(t) is projected onto the manifold after every step, so rounding cannot move the base trajectory
    off it (the exact trajectory is on it: Theorem 4.1, or ``find_manifold``). ``coords`` defaults to
    ``find_manifold(task, eta, mu, eps)``; ``leak[t]`` = ‖Bᵀ J_t T‖/‖J_t‖ checks its invariance per step.
    ``sums`` (``orbit_sums``): Hessians and gradients summed over the orbits of the task's group and
    group-averaged (R₂, R), the same values as the plain sums on the trajectory, which lies in Fix(G).
    ``tick`` is called after every step (a progress bar's update).

    >>> from rwtoolkit.tasks import CircleWalk
    >>> lin = linearise(CircleWalk(3, 4, 1), steps=3)
    >>> len(lin.sigma_C), lin.basis.shape
    (3, (16, 12))
    """
    import torch
    from torch.func import grad, jacrev

    if coords is None:
        coords = (
            sums.manifold() if sums is not None else find_manifold(task, float(eta), float(mu), float(eps))
        )
    population = None
    if sums is not None:
        orbits = sums.orbits
        population = (orbits.tokens, orbits.labels, orbits.weights)
    loss = torch_loss(task, float(mu), float(eps), coords=coords, population=population)
    d = torch.as_tensor(coords.metric(float(mu)))
    B = orthonormal_normal_basis(coords)
    Bt = torch.as_tensor(B)
    T_np = np.array(coords.tangent_basis().tolist(), dtype=np.float64)
    T = torch.as_tensor(T_np / np.linalg.norm(T_np, axis=0))  # (dim, classes) unit columns
    lin = Linearisation(task, float(eta), float(mu), float(eps), coords, B, [], [])
    theta = torch.zeros(coords.dim, dtype=torch.float64)
    Phi = torch.eye(B.shape[1], dtype=torch.float64)
    log_scale = 0.0
    prev = 0.0
    # Reverse-over-reverse Hessian (torch.func.hessian's forward mode loads TorchScript decompositions).
    hess, gradient = jacrev(jacrev(loss)), grad(loss)
    if sums is not None:
        plain_hess, plain_gradient = hess, gradient

        def hess(theta: torch.Tensor) -> torch.Tensor:
            return sums.hessian(plain_hess(theta))

        def gradient(theta: torch.Tensor) -> torch.Tensor:
            return sums.gradient(plain_gradient(theta))

    for _ in range(steps):
        lin.thetas.append(theta.numpy().copy())
        H = hess(theta)  # (dim, dim)
        J = torch.eye(coords.dim, dtype=torch.float64) - eta * d[:, None] * H
        C = Bt.T @ J @ Bt  # (n_normal, n_normal)
        lin.C.append(C.numpy())
        lin.J.append(J.numpy())
        lin.leak.append(
            float(torch.linalg.matrix_norm(Bt.T @ J @ T, ord=2) / torch.linalg.matrix_norm(J, ord=2))
        )
        lin.sigma_J.append(float(torch.linalg.matrix_norm(J, ord=2)))
        lin.sigma_C.append(float(torch.linalg.matrix_norm(C, ord=2)))
        lin.radius_C.append(float(torch.linalg.eigvals(C).abs().max()))
        Phi = C @ Phi
        s = float(torch.linalg.matrix_norm(Phi, ord=2))
        if s == 0.0:
            raise ValueError("Φ_t vanished: the normal dynamics collapse in one step (lower eta)")
        if not math.isfinite(s):
            raise ValueError(
                f"Φ_t overflowed at step {len(lin.C) - 1}: the normal block C_t is not finite (lower eta)"
            )
        Phi = Phi / s
        log_scale += math.log(s)
        lin.log_sigma_Phi.append(log_scale)
        lin.growth.append(math.exp(log_scale - prev))
        prev = log_scale
        theta = theta - eta * d * gradient(theta)
        theta = torch.as_tensor(project_to_manifold(theta.numpy(), coords))
        if not bool(torch.isfinite(theta).all()):
            raise ValueError(f"the reduced trajectory diverged at step {len(lin.C)} (lower eta)")
        if tick is not None:
            tick()
    lin.thetas.append(theta.numpy().copy())
    lin.Phi = Phi.numpy()
    return lin


#: How stability.json writes the verdict of the claim "the stuck manifold attracts gradient descent" (its
#: ``verdict.kind``): holds at the steps run (attracting), does not hold (repelling), or inconclusive within the
#: neutral band; ``STABILITY_WORDS_GENERIC`` for the generic report of ``rw stability --model``.
STABILITY_WORDS = Wording(
    "rw stability",
    {Verdict.HOLDS: "attracting", Verdict.FAILS: "repelling", Verdict.INCONCLUSIVE: "neutral"},
)
#: The same verdicts as stability_generic.json writes them.
STABILITY_WORDS_GENERIC = Wording(
    "rw stability --model",
    {Verdict.HOLDS: "stable", Verdict.FAILS: "unstable", Verdict.INCONCLUSIVE: "marginal"},
)


def attracts(growth: float, tolerance: float) -> Verdict:
    """The claim "the manifold attracts" from the growth of the linearised perturbations (a rate or a total
    ln-growth) and its band: holds below −``tolerance``, does not hold above it, inconclusive within.

    >>> attracts(-0.5, 0.1).value, attracts(0.05, 0.1).value, attracts(0.5, 0.1).value
    ('holds at the sizes checked', 'inconclusive', 'does not hold at the sizes checked')
    """
    if growth > tolerance:
        return Verdict.FAILS
    return Verdict.HOLDS if growth < -tolerance else Verdict.INCONCLUSIVE


@dataclass(frozen=True)
class StabilityVerdict:
    """Whether the manifold attracts (``verdict``, the one vocabulary), with ``rate`` = late mean ln-growth per
    step of σ_max(Φ_t) and the neutral band ±``tolerance``; ``kind`` is attracting / neutral / repelling."""

    verdict: Verdict
    rate: float
    tolerance: float

    @property
    def kind(self) -> str:
        """The verdict as stability.json writes it (``STABILITY_WORDS``)."""
        return STABILITY_WORDS.word(self.verdict)

    def line(self) -> str:
        return f"{self.kind} (rate {self.rate:+.3e} per step, neutral band ±{self.tolerance:.2e})"


def verdict(lin: Linearisation) -> StabilityVerdict:
    """The rate over the second half of the run; neutral when it changes σ_max(Φ) by less than 2x there.

    rate = (ln σ_max(Φ_T) - ln σ_max(Φ_{T/2})) / (T - T/2); tolerance = ln 2 / (T - T/2).
    """
    T = len(lin.log_sigma_Phi)
    if T < 2:
        raise ValueError(f"steps={T}: a verdict needs at least 2 steps")
    half = T // 2
    span = T - half
    rate = (lin.log_sigma_Phi[-1] - lin.log_sigma_Phi[half - 1]) / span
    tol = math.log(2) / span
    return StabilityVerdict(attracts(rate, tol), rate, tol)


def unstable_directions(lin: Linearisation, top: int = 4) -> dict[str, object]:
    """The leading right ("from") and left ("into") singular vectors of Φ_T, as the largest θ-entries by name.

    ``multiplicity``: how many singular values of Φ_T are within 1% of the largest. Above 1 the leading
    direction is one member of a subspace (the task's rotation symmetry makes such ties), so the named
    entries are a representative, not the only direction that grows.
    """
    if lin.Phi is None:
        raise ValueError("the linearisation has no Φ_T: build it with linearise(), which sets Phi")
    u, s, vt = np.linalg.svd(lin.Phi)
    out: dict[str, object] = {"multiplicity": int(np.sum(s >= 0.99 * s[0]))}
    for key, vec in (("from", lin.basis @ vt[0]), ("into", lin.basis @ u[:, 0])):
        vec = vec * np.sign(vec[np.argmax(np.abs(vec))])
        order = np.argsort(-np.abs(vec), kind="stable")[:top]
        out[key] = [[lin.coords.name(int(i)), round(float(vec[i]), 6)] for i in order]
    return out
