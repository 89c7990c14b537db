"""Orbit sums in the exact engine: one term per orbit of the task's symmetry group, then the group average.

A symmetry g = (τ, λ, π) of the task (``rwtoolkit.tasks.task_symmetries``) acts on the engine's coordinates by
V[y, k] -> V[λ(y), τ(k)], w_tok[k] -> w_tok[τ(k)], c_j -> c_π(j) for the key positions (c_N fixed). Zero
is fixed, and the GD step is equivariant, so every iterate θ(t) lies in Fix(G). On Fix(G) each orbit O of
inputs contributes |O| times the group average of its representative's term (docs/theory.md#orbit-sums):
the engine sums over the representatives with weights |O|·P(x_O) (``orbit_inputs``) and ``symmetrise``
averages the results over the group, entry by entry over the orbits of the coordinates they index:

* E[∇_V ℓ] over the orbits of (label, token) pairs, E[Σ_j δ_j e_{s_j}] over the token orbits, E[δ_j] and
  the mean attention and logit of key position j over the position orbits, E[f] over the label orbits;
* the loss is invariant: no average;
* the accuracy, P(smallest argmax of f = y), is not (ties go to the smallest label), so each
  representative's indicator is averaged over the label group Λ = {λ_g} (the image of G on labels,
  each element hit equally often as g runs over G): the orbit's inputs carry the scores λ·f and labels λ(y).

The exact values equal the plain sums over every input (tests/test_symbolic_orbits.py); the per-input
read-outs (``StepState.f``, ``S``, ...) are those of the representatives.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import sympy as sp

from rwtoolkit.engines.exact.arithmetic._rational import exact_sum
from rwtoolkit.engines.exact.engine._groups import MAX_LABEL_GROUP, GroupPass
from rwtoolkit.engines.exact.engine._population import SummedPopulation
from rwtoolkit.models import REDUCED_AXES, parameter_images
from rwtoolkit.tasks import (
    ORBIT_SEARCH_WORK,
    OrbitSum,
    Population,
    Task,
    orbit_labels,
    orbit_sum,
    permutation_closure,
)


@dataclass(frozen=True)
class OrbitAction:
    """The group's action on the engine's coordinates: the orbit label of every V entry (y·K + k), token,
    key position and label, and the label group Λ (each element as a tuple of images)."""

    pairs: np.ndarray
    tokens: np.ndarray
    positions: np.ndarray
    labels: np.ndarray
    label_group: tuple[tuple[int, ...], ...]


def orbit_action(orbits: OrbitSum) -> OrbitAction:
    """The orbits of the coordinates under ``orbits.group`` (from its generators) and its label group.

    Each generator moves V, w_tok and c axis by axis (``rwtoolkit.models.REDUCED_AXES``,
    ``rwtoolkit.models.parameter_images``); the key positions are c's first N - 1 entries (c_N fixed).
    """
    group = orbits.group
    K, L = group.K, group.N - 1
    gens = group.generators
    shapes = {"V": (K, K), "w_tok": (K,), "c": (group.N,)}
    images = [parameter_images(REDUCED_AXES, shapes, g, K, group.N) for g in gens]
    return OrbitAction(
        pairs=orbit_labels([im["V"] for im in images], K * K),
        tokens=orbit_labels([im["w_tok"] for im in images], K),
        positions=orbit_labels([im["c"][:L] for im in images], L),
        labels=orbit_labels([np.asarray(g.labels) for g in gens], K),
        label_group=tuple(sorted(permutation_closure([g.labels for g in gens], K, MAX_LABEL_GROUP) or ())),
    )


def orbit_inputs(task: Task, max_work: int = ORBIT_SEARCH_WORK) -> SummedPopulation:
    """The representatives of the task's orbits with weights |O|·P(x_O), as the engine's input set.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> inputs = orbit_inputs(CircleWalk(4, 9, "1/2"))
    >>> inputs.size, inputs.population_size, sum(inputs.prob_values)
    (6, 1024, 1)
    """
    orbits = orbit_sum(task, max_work=max_work)
    m = len(orbits)
    population = Population(
        tokens=orbits.tokens,
        labels=orbits.labels,
        prob_index=np.arange(m, dtype=np.int64),
        prob_values=tuple(sp.sympify(w) for w in orbits.weights),
        K=int(task.K),
    )
    return SummedPopulation(population, rotation=False, orbits=orbits)


def _average(values: list[sp.Expr], label: np.ndarray) -> list[sp.Expr]:
    """Each entry replaced by the exact mean of ``values`` over its orbit (``label``: the orbit of each entry)."""
    members: dict[int, list[int]] = {}
    for i, o in enumerate(label.tolist()):
        members.setdefault(o, []).append(i)
    mean = {o: exact_sum([values[i] for i in idx]) * sp.Rational(1, len(idx)) for o, idx in members.items()}
    return [mean[o] for o in label.tolist()]


def symmetrise(ev: GroupPass, action: OrbitAction) -> GroupPass:
    """The group average of a ``GroupPass`` computed on the representatives (module docstring)."""
    K = len(action.tokens)
    L = len(action.positions)
    query = np.asarray([L], dtype=np.int64)
    positions = np.concatenate([action.positions, query])
    changes: dict[str, object] = {
        "mean_attention": _average(list(ev.mean_attention), positions),
        "mean_logits": _average(list(ev.mean_logits), positions),
        "mean_f": _average(list(ev.mean_f), action.labels),
        "label_group": action.label_group,
        "_cache": {},
    }
    if ev.grad_V is not None and ev.grad_tok is not None and ev.grad_c is not None:
        G = ev.grad_V
        flat = _average([G[a, b] for a in range(K) for b in range(K)], action.pairs)
        changes["grad_V"] = sp.Matrix(K, K, flat)
        changes["grad_tok"] = _average(list(ev.grad_tok), action.tokens)
        changes["grad_c"] = _average(list(ev.grad_c), positions)
    return replace(ev, **changes)  # type: ignore[arg-type]
