"""The inputs the exact engine sums over, and the loss it differentiates: the types every group pass reads.

``SummedPopulation`` is either a task's whole population or, for circle walks, only the walks that
start at node 0 (``rotation=True``; docs/theory.md#reduction). ``Loss`` holds ℓ and ℓ' as functions of
an exact expression. The passes (``_uniform``, ``_atom_pass``, ``_polynomial_pass``) and their
dispatcher ``_groups.group_pass`` import them from here, so no pass imports the dispatcher.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import sympy as sp

from rwtoolkit.engines.exact.arithmetic._models import ExactLoss
from rwtoolkit.tasks import OrbitSum, Population, Task

#: Largest number of inputs the engine enumerates (rooted walks for circle tasks) with numpy.
MAX_INPUTS = 2**22


@dataclass(frozen=True)
class SummedPopulation:
    """The inputs the engine sums over: a ``rwtoolkit.tasks.Population`` and whether sums are rotation-averaged.

    A view, not a second copy of the data: tokens, labels and exact probabilities are the population's.
    With ``rotation`` the population is the circle walks rooted at node 0 (``CircleWalk.rooted_population``,
    probabilities summing to 1/K) and the full population is their K rotations (input i rotated by r is
    full-population input r*n + i); without it, it is the task's whole population.
    """

    population: Population
    rotation: bool
    #: With orbit sums (``orbit_inputs``): the task's orbits, whose representatives ``population`` holds
    #: with weights |O|·P(x_O); sums over them are then group-averaged (``rwtoolkit.engines.exact.engine._orbits``).
    orbits: OrbitSum | None = None

    @property
    def tokens(self) -> np.ndarray:
        return self.population.tokens

    @property
    def labels(self) -> np.ndarray:
        return self.population.labels

    @property
    def prob_index(self) -> np.ndarray:
        return self.population.prob_index

    @property
    def prob_values(self) -> tuple[sp.Expr, ...]:
        return self.population.prob_values

    @property
    def K(self) -> int:
        return self.population.K

    @property
    def size(self) -> int:
        return self.population.size

    @property
    def N(self) -> int:
        return self.population.N

    @property
    def population_size(self) -> int:
        """Number of inputs of the full population (K times the rooted set under rotation)."""
        if self.orbits is not None:
            return self.orbits.inputs
        return self.size * (self.K if self.rotation else 1)


def rooted_walks(task: Task) -> SummedPopulation:
    """One input per rotation orbit of a rotation-invariant task (for a circle walk: the walks from node 0, in
    the order of ``task.population()``'s first block)."""
    steps = task.N - 1
    if 2**steps > MAX_INPUTS:
        raise ValueError(
            f"CircleWalk(K={task.K}, N={task.N}): exact expectations enumerate 2^(N-1) = "
            f"{float(2**steps):.3g} rooted walks, above the limit {MAX_INPUTS}; use N <= "
            f"{MAX_INPUTS.bit_length()} or rwtoolkit.engines.numeric for sampled training"
        )
    return SummedPopulation(task.rooted_population(limit=MAX_INPUTS), rotation=True)


def population_inputs(population: Population) -> SummedPopulation:
    """A whole population as the engine's input set (no symmetry used)."""
    return SummedPopulation(population, rotation=False)


@dataclass(frozen=True)
class Loss:
    """ℓ and ℓ' as functions of an exact expression z = e_yᵀ f (the exact engine's one loss).

    ``elementwise()`` is the same ℓ, ℓ' on arrays of label scores, the loss protocol of ``rwtoolkit.models.descend``
    (the generic engine), so both engines read one definition.
    """

    name: str
    value: Callable[[sp.Expr], sp.Expr]
    derivative: Callable[[sp.Expr], sp.Expr]

    def elementwise(self) -> ExactLoss:
        """ℓ and ℓ' elementwise on object arrays (``rwtoolkit.engines.exact.ExactLoss``)."""
        return ExactLoss(self.value, self.derivative)
