"""Orbit-summed Hessians and gradients of the reduced loss along the stuck trajectory.

A symmetry g = (τ, λ, π) of the task (``rwtoolkit.tasks.task_symmetries``) permutes the reduced coordinates:
V[y, k] -> V[λ(y), τ(k)], w_tok[k] -> w_tok[τ(k)], c_j -> c_π(j) for the key positions j < N, c_N fixed
(the query slot never moves). The reduced loss is invariant, L(g·θ) = L(θ), because the law is and
the attention output Σ_j S_j V[y, s_j] does not depend on the order of the key positions. Writing the
population as orbits (``rwtoolkit.tasks.orbit_sum``) with representatives x_O and L_rep(θ) = Σ_O |O| P(x_O) ℓ_{x_O}(θ),

    L(θ) = (1/|G|) Σ_g L_rep(g⁻¹·θ)        for every θ,

so at a point θ of the fixed subspace Fix(G) (where the trajectory from zero lies: docs/theory.md#orbit-sums)

    ∇L(θ)  = R ∇L_rep(θ),      R v: every coordinate replaced by the mean over its orbit,
    ∇²L(θ) = R₂ ∇²L_rep(θ),    R₂ H: every entry (i, j) replaced by the mean over the orbit of the pair (i, j),

the group averages of a permutation action. The orbits of coordinates and of coordinate pairs are found
from the generators alone (``rwtoolkit.tasks.orbit_labels``), so the group, however large, is never listed. A
Hessian over m orbit representatives then replaces one over n inputs; ``tests/test_stability_orbits.py``
checks both formulas against the plain population sum.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from rwtoolkit.analyses.stability._reduced import Coordinates, population_task
from rwtoolkit.models import REDUCED_AXES, parameter_images
from rwtoolkit.tasks import (
    ORBIT_SEARCH_WORK,
    CircleWalk,
    FiniteTask,
    OrbitSum,
    Symmetry,
    TaskGroup,
    orbit_labels,
    orbit_sum,
)

if TYPE_CHECKING:  # torch is imported where the sums are taken
    import torch

#: Where a manifold comes from when it is the fixed subspace of the task's group (``Coordinates.source``;
#: the group itself is in the report's ``population.group``).
SYMMETRY = "symmetry"


def reduced_images(coords: Coordinates, g: Symmetry) -> np.ndarray:
    """The image index of every reduced coordinate under the symmetry ``g`` (layout of ``Coordinates``).

    >>> from rwtoolkit.tasks import Symmetry
    >>> shift = Symmetry((1, 2, 0), (1, 2, 0), (0, 1, 2))
    >>> reduced_images(Coordinates(3, 4), shift)[9:].tolist()  # w_tok[0] -> w_tok[1] ..., c_j fixed
    [10, 11, 9, 12, 13, 14, 15]
    """
    rows, cols = coords.label_rows, coords.token_cols
    K, N = coords.K, coords.N
    moved = parameter_images(REDUCED_AXES, {"V": (K, K), "w_tok": (K,), "c": (N,)}, g, K, N)
    row = {y: r for r, y in enumerate(rows)}
    col = {k: j for j, k in enumerate(cols)}
    try:
        V = [
            row[y] * len(cols) + col[k]
            for y, k in (divmod(int(moved["V"][y * K + k]), K) for y in rows for k in cols)
        ]
        w = [coords.n_V + col[int(moved["w_tok"][k])] for k in cols]
    except KeyError:
        raise ValueError(
            "the symmetry maps an occurring token or label to one that never occurs: it is not a "
            "symmetry of this task's law"
        ) from None
    c0 = coords.n_V + len(cols)
    c = [c0 + int(j) for j in moved["c"]]
    return np.asarray(V + w + c, dtype=np.int64)


@dataclass(frozen=True)
class OrbitSums:
    """A task's population as orbits, and the group averages R, R₂ on its reduced coordinates.

    ``orbits``: the representatives and exact weights; ``coordinate_orbit`` (dim,) and ``pair_orbit``
    (dim·dim,): the orbit label of each coordinate and of each pair (i, j), flattened row-major.
    """

    orbits: OrbitSum
    coords: Coordinates
    coordinate_orbit: np.ndarray
    pair_orbit: np.ndarray

    def gradient(self, v: torch.Tensor) -> torch.Tensor:
        """R v: each coordinate replaced by the mean of v over its orbit."""
        return _orbit_mean(v, self.coordinate_orbit)

    def hessian(self, H: torch.Tensor) -> torch.Tensor:
        """R₂ H: each entry replaced by the mean of H over the orbit of its pair of coordinates."""
        return _orbit_mean(H.reshape(-1), self.pair_orbit).reshape(H.shape)

    def manifold(self) -> Coordinates:
        """Fix(G) in the reduced coordinates: one class per orbit of coordinates (proved invariant for
        every loss by equivariance, docs/theory.md#invariant-manifolds)."""
        classes: dict[int, list[int]] = {}
        for i, label in enumerate(self.coordinate_orbit.tolist()):
            classes.setdefault(label, []).append(i)
        return replace(
            self.coords, classes=tuple(tuple(m) for m in sorted(classes.values())), source=SYMMETRY
        )


def _orbit_mean(v: torch.Tensor, label: np.ndarray) -> torch.Tensor:
    import torch

    index = torch.as_tensor(label)
    total = torch.zeros_like(v).index_add_(0, index, v)
    count = torch.zeros_like(v).index_add_(0, index, torch.ones_like(v))
    return (total / count.clamp(min=1))[index]


def orbit_sums(
    task: CircleWalk | FiniteTask,
    coords: Coordinates,
    group: TaskGroup | None = None,
    max_work: int = ORBIT_SEARCH_WORK,
) -> OrbitSums:
    """The orbit decomposition of the population GD runs on, and R, R₂ on ``coords``.

    ``group`` defaults to every symmetry of the task's law (``rwtoolkit.tasks.task_symmetries(·, max_work)``).

    >>> from rwtoolkit.tasks import CircleWalk
    >>> from rwtoolkit.analyses.stability import active_coordinates
    >>> task = CircleWalk(4, 9, "1/2")
    >>> sums = orbit_sums(task, active_coordinates(task))
    >>> sums.orbits.inputs, len(sums.orbits), len(sums.manifold().partition())
    (1024, 6, 4)
    """
    walks = population_task(task)
    orbits = orbit_sum(walks, group, max_work=max_work)
    images = [reduced_images(coords, g) for g in orbits.group.generators]
    dim = coords.dim
    pairs = [(p[:, None] * dim + p[None, :]).reshape(-1) for p in images]
    return OrbitSums(orbits, coords, orbit_labels(images, dim), orbit_labels(pairs, dim * dim))
