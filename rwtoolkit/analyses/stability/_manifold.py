"""The invariant manifold a registered model's generic stability report linearises around.

Two kinds, both invariant under the GD map F(θ) = θ − η∇L(θ) for every loss:

* ``zero``: θ_off = 0 for the parameters that full-batch GD from zero leaves exactly zero at every step
  of the run (key_query's W_K and W_Q: their gradients W_Q Gᵀ and W_K G vanish when both factors do);
* ``symmetry``: the fixed subspace Fix(G) of the task's symmetry group G acting on the parameters through
  the model's axes (``rwtoolkit.models.coordinate_permutation``, at P = √μ·I_N where the action permutes the
  coordinates). The loss is G-invariant, so ∇L is G-equivariant and F maps Fix(G) into itself; GD from
  zero starts on it (docs/theory.md#invariant-manifolds).

Either way the manifold is a linear subspace, described here by two orthonormal bases of R^n (n: every
parameter entry, flattened in the model's ``shapes`` order): ``on`` spans the manifold and ``off`` its
orthogonal complement, the perturbations that leave it. For ``zero`` they are coordinate vectors. For
``symmetry`` Fix(G) is spanned by the orbits' normalised indicators, and the complement by a Helmert basis
of each orbit: for the orbit's members i_1 < … < i_m, the m − 1 vectors
(e_{i_1} + … + e_{i_k} − k e_{i_{k+1}}) / √(k(k+1)), k = 1..m−1. A permutation is orthogonal, so Fix(G)^⊥
is G-invariant too, and F's Jacobian at a point of Fix(G) maps each into itself: ``offᵀ J on`` (the leak)
vanishes up to rounding, which the report measures.

>>> from rwtoolkit.models import get_model
>>> from rwtoolkit.tasks import CircleWalk
>>> m = symmetric_manifold(get_model("one_layer"), CircleWalk(3, 4, 1))
>>> m.on.shape, m.off.shape, m.parameters
((58, 12), (58, 46), ['V', 'W'])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rwtoolkit.analyses.stability._orbits import SYMMETRY
from rwtoolkit.models import Model, Sizes, acting_group, coordinate_permutation
from rwtoolkit.tasks import CircleWalk, FiniteTask, orbit_labels, task_symmetries

#: The kind of the manifold of the parameters GD from zero keeps at 0 (``SYMMETRY``: Fix(G), as for
#: the paper's model's ``Coordinates.source``).
ZERO = "zero"
#: ``--manifold``: auto takes the zero manifold when some parameter stays exactly zero, else the symmetric one.
MANIFOLDS = ("auto", ZERO, SYMMETRY)


@dataclass(frozen=True)
class Manifold:
    """A linear invariant manifold: orthonormal bases ``on`` (n, n − k) of it and ``off`` (n, k) of its complement.

    ``parameters``: the parameters with at least one off-manifold direction; ``definition``: one sentence;
    ``group``: the generators of G, described (symmetry only).
    """

    kind: str
    on: np.ndarray
    off: np.ndarray
    parameters: list[str]
    definition: str
    group: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "parameters": self.parameters,
            "definition": self.definition,
            "dim": int(self.on.shape[1]),
            "off_dim": int(self.off.shape[1]),
        }
        if self.group is not None:
            out["group"] = self.group
        return out


def _owners(shapes: dict[str, tuple[int, ...]]) -> list[str]:
    return [name for name, shape in shapes.items() for _ in range(math.prod(shape))]


def zero_manifold(shapes: dict[str, tuple[int, ...]], off: Sequence[str]) -> Manifold:
    """{θ_off = 0} for the parameters ``off`` (coordinate bases, ``shapes`` order).

    >>> zero_manifold({"V": (2, 2), "W_K": (1, 3)}, ["W_K"]).off.shape
    (7, 3)
    """
    owner = np.asarray(_owners(shapes))
    mask = np.isin(owner, list(off))
    eye = np.eye(len(owner))
    return Manifold(
        ZERO,
        eye[:, ~mask],
        eye[:, mask],
        [n for n in shapes if n in off],
        "the parameters GD from zero leaves exactly zero at every step, all set to 0",
    )


def symmetric_manifold(model: Model, task: CircleWalk | FiniteTask) -> Manifold:
    """Fix(G) of the task's symmetry group on ``model``'s parameters at P = √μ·I_N (module text).

    Raises ValueError when G is the identity alone (Fix(G) is every parameter: nothing leaves it).
    """
    K, N = task.K, task.N
    sizes = Sizes(K=K, M=N, N=N)
    shapes = model.shapes(sizes)
    n = model.parameter_count(sizes)
    group = acting_group(model, task_symmetries(task))
    described = group.describe(getattr(task, "vocab", None))
    images = [coordinate_permutation(model, g, K, N) for g in group.generators]
    label = orbit_labels(images, n)
    orbits: dict[int, list[int]] = {}
    for i, orbit in enumerate(label.tolist()):
        orbits.setdefault(orbit, []).append(i)
    if len(orbits) == n:
        raise ValueError(
            f"--manifold symmetry: the task's symmetry group is the identity alone (or moves no parameter "
            f"of --model {model.name}), so its fixed subspace is every parameter and nothing leaves it"
        )
    on = np.zeros((n, len(orbits)))
    off = np.zeros((n, n - len(orbits)))
    column = 0
    for j, members in enumerate(sorted(orbits.values())):
        on[members, j] = 1 / math.sqrt(len(members))
        for k in range(1, len(members)):
            off[members[:k], column] = 1 / math.sqrt(k * (k + 1))
            off[members[k], column] = -k / math.sqrt(k * (k + 1))
            column += 1
    owner = _owners(shapes)
    moved = {owner[i] for members in orbits.values() if len(members) > 1 for i in members}
    return Manifold(
        SYMMETRY,
        on,
        off,
        [name for name in shapes if name in moved],
        f"the fixed subspace of the task's symmetry group (order {group.order}) acting on the parameters",
        list(described),
    )
