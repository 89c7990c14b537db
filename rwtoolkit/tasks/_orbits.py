"""Population sums over orbits: the inputs of a task grouped by its symmetry group, with exact orbit weights.

A symmetry g of the task (``rwtoolkit.tasks.task_symmetries``) maps every input of probability w to an input of
probability w, so the population splits into orbits Gx, each of one probability. For any function h of
the input, Σ_x P(x) h(x) = Σ_{orbits O} P(x_O) Σ_{x ∈ O} h(x). Where h is invariant along each orbit
(the loss at a point θ of the fixed subspace Fix(G); docs/theory.md#orbit-sums), that is
Σ_O |O| P(x_O) h(x_O): one term per orbit, with the exact weight |O| P(x_O). Where h is equivariant (the
gradient at θ ∈ Fix(G)), the orbit's sum is |O| times the group average of h(x_O), which the caller takes
on its own coordinates (``rwtoolkit.analyses.stability`` averages the gradient over the coordinates' orbits and the Hessian
over the orbits of coordinate pairs).

Orbits are the connected components of the graph whose edges join x to g(x) for every generator g (the
group is never listed: the generators reach every element). Components are found by label propagation
with pointer jumping on arrays (``orbit_labels``), so a population of 10⁶ inputs costs a few array passes
per generator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sympy as sp

from rwtoolkit.tasks._symmetry import TaskGroup, nonzero_law, row_keys, task_symmetries
from rwtoolkit.tasks._task import Task


def orbit_labels(images: Sequence[np.ndarray], size: int) -> np.ndarray:
    """The orbit of every point 0..size-1 under the permutations ``images`` (``images[g][i]`` = g(i)),
    as the smallest point of its orbit.

    >>> orbit_labels([np.array([1, 0, 2, 4, 3])], 5).tolist()
    [0, 0, 2, 3, 3]
    >>> orbit_labels([np.array([1, 2, 0, 3]), np.array([0, 1, 3, 2])], 4).tolist()
    [0, 0, 0, 0]
    """
    label = np.arange(size, dtype=np.int64)
    perms = [np.asarray(p, dtype=np.int64) for p in images]
    for p in perms:
        if p.shape != (size,):
            raise ValueError(f"orbit_labels: a permutation has shape {p.shape}, expected ({size},)")
    while True:
        before = label
        for p in perms:
            low = np.minimum(label, label[p])
            label = low.copy()
            label[p] = np.minimum(label[p], low)
        label = label[label]  # pointer jumping: label[i] <= i lies in i's orbit, so does its label
        if np.array_equal(label, before):
            return label


@dataclass(frozen=True)
class OrbitSum:
    """A task's population as one representative per orbit of its symmetry group, with exact weights.

    ``tokens`` (m, N-1) and ``labels`` (m,) are the representatives (each orbit's smallest input in
    lexicographic order of (tokens, label)), ``sizes`` (m,) the orbit sizes, ``probabilities`` the exact
    probability every member of the orbit has, ``inputs`` the number n of distinct inputs of nonzero
    probability, and ``group`` the group whose orbits these are.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> orbits = orbit_sum(CircleWalk(4, 9, "1/2"))
    >>> orbits.inputs, len(orbits), orbits.group.order, sum(orbits.weights)
    (1024, 6, 36864, 1)
    """

    tokens: np.ndarray
    labels: np.ndarray
    sizes: np.ndarray
    probabilities: tuple[sp.Expr, ...]
    inputs: int
    group: TaskGroup

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    @property
    def weights(self) -> list[sp.Expr]:
        """|O| P(x_O) per representative: the exact weights of an orbit-summed population sum (they add to 1)."""
        return [int(s) * q for s, q in zip(self.sizes.tolist(), self.probabilities)]


#: Work budget of the symmetry search behind ``orbit_sum`` (``task_symmetries``' units; 1e9 is about 20 s
#: on 2 cores, and finds the group of order 8.4e12 of CircleWalk(4, 19, 1/2), 10⁶ inputs, within it).
ORBIT_SEARCH_WORK = 10**9


def orbit_sum(task: Task, group: TaskGroup | None = None, max_work: int = ORBIT_SEARCH_WORK) -> OrbitSum:
    """The orbits of ``task``'s inputs of nonzero probability under ``group`` (default: every symmetry,
    ``task_symmetries(task, max_work)``).

    Each generator is checked to map the law to itself (every image is an input of the same exact
    probability); a group that does not is refused with a ValueError naming the generator.
    """
    name = repr(task) if len(repr(task)) <= 100 else type(task).__name__
    K, N = int(task.K), int(task.N)
    if group is None:
        group = task_symmetries(task, max_work=max_work)
    if (group.K, group.N) != (K, N):
        raise ValueError(
            f"orbit_sum({name}): the group acts on K={group.K}, N={group.N}, the task has K={K}, N={N}"
        )
    X, Y, cls, values = nonzero_law(task, K, N, name)
    keys = row_keys(np.concatenate([X, Y[:, None]], axis=1), K)
    order = np.argsort(keys, kind="stable")
    X, Y, cls, keys = X[order], Y[order], cls[order], keys[order]
    n = int(Y.shape[0])
    images = []
    for g in group.generators:
        gx, gy = g.act(X, Y)
        image_keys = row_keys(np.concatenate([gx, gy[:, None]], axis=1), K)
        at = np.minimum(np.searchsorted(keys, image_keys), n - 1)
        if not (keys[at] == image_keys).all() or not (cls[at] == cls).all():
            raise ValueError(
                f"orbit_sum({name}): {g.describe(group.vocab)} does not preserve the law (an input of "
                "nonzero probability maps outside the population or to another probability)"
            )
        images.append(at)
    label = orbit_labels(images, n)
    reps, sizes = np.unique(label, return_counts=True)
    return OrbitSum(
        tokens=X[reps],
        labels=Y[reps],
        sizes=sizes.astype(np.int64),
        probabilities=tuple(values[c] for c in cls[reps].tolist()),
        inputs=n,
        group=group,
    )
