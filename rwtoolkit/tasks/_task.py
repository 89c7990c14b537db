"""The task protocol: what an engine may ask of any task, so that no engine branches on a task's class.

A task is a law over inputs (N-1 tokens in [0, K), and a label y in [0, K)) with exact probabilities.
``CircleWalk`` and ``FiniteTask`` implement it, and so does any class a user writes with these members.
What is specific to one family of tasks (Π of a circle walk, the manifold of Lemma D.3, Theorem 3.1's
metrics) stays with the statements about that family; everything an engine needs of *every* task is here:

* ``population()`` / ``population_size()``: the exact population, and its number of inputs without
  building it (zero-probability inputs dropped, as ``population()`` drops them);
* ``sample(n, seed=... | generator=...)``: i.i.d. inputs for numeric parameters;
* ``symbols``: the free symbols of the law (empty for a numeric task), sorted by name;
* ``rotation_invariant``: whether the law is invariant under s -> s+1 (mod K) on tokens and label;
  then ``rooted_population()`` gives one input per orbit, with the orbit's probability over K
  (docs/theory.md#reduction), and any other task refuses it;
* ``vocab``: the tokens' words, or None when tokens are ids;
* ``bayes_scores(tokens)``: P(y | X) per row, the Bayes-optimal scores, float64 (n, K);
* ``describe()``: the task in JSON (name, K, N, and p for a circle walk or the number of inputs);
* ``substitute(values)``: the same task with symbols replaced by exact values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import numpy as np
import sympy as sp

from rwtoolkit.tasks._population import Population


@runtime_checkable
class Task(Protocol):
    """A task every engine can run (see the module docstring for what each member means).

    >>> from rwtoolkit.tasks import CircleWalk, first_of_two_task
    >>> all(isinstance(t, Task) for t in (CircleWalk(3, 4, "1/2"), first_of_two_task(3)))
    True
    """

    K: int
    name: str
    vocab: tuple[str, ...] | None

    @property
    def N(self) -> int: ...

    @property
    def symbols(self) -> tuple[sp.Symbol, ...]: ...

    @property
    def rotation_invariant(self) -> bool: ...

    def population(self) -> Population: ...

    def population_size(self) -> int: ...

    def rooted_population(self, limit: int = ...) -> Population: ...

    def sample(
        self, n: int, seed: int | None = None, generator: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]: ...

    def bayes_scores(self, tokens: np.ndarray) -> np.ndarray: ...

    def describe(self) -> dict[str, object]: ...

    def substitute(self, values: Mapping[sp.Symbol, sp.Expr]) -> Task: ...


def sorted_symbols(values: object) -> tuple[sp.Symbol, ...]:
    """The free symbols of exact values, sorted by name (one order for every caller).

    >>> sorted_symbols([sp.Symbol("q") + 1, sp.Symbol("p"), sp.Rational(1, 2)])
    (p, q)
    """
    found: set[sp.Symbol] = set()
    for v in values:  # type: ignore[attr-defined]
        found |= sp.sympify(v).free_symbols
    return tuple(sorted(found, key=str))
