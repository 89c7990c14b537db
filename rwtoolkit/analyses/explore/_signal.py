"""The token-average signal of one task (docs/theory.md#signal), summarised for the explore report.

The exact work is ``rwtoolkit.engines.exact.signal_matrix`` / ``vanishing_set``; this module only packages the
answer (``Task.substitute`` puts parameter values into a task, so one symbolic task gives many numeric ones).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from rwtoolkit.engines.exact import VanishingSet, signal_matrix, vanishing_set
from rwtoolkit.tasks import CircleWalk, FiniteTask, is_numeric


@dataclass(frozen=True)
class SignalSummary:
    """C = E[e_y x̄ᵀ] - E[e_y]E[x̄]ᵀ for one task: the matrix, whether it is exactly zero, and (for one
    free parameter) the exact set of parameter values in [0, 1] where it vanishes."""

    matrix: sp.Matrix
    is_zero: bool
    symbol: sp.Symbol | None
    vanishing: VanishingSet | None

    @property
    def nonzero_entries(self) -> list[tuple[int, int, sp.Expr]]:
        """(label, token, C[label, token]) for every entry that is not identically zero."""
        K = self.matrix.rows
        return [(a, b, self.matrix[a, b]) for a in range(K) for b in range(K) if self.matrix[a, b] != 0]

    def vanishing_points(self) -> list[sp.Expr]:
        """The exact parameter values where C = 0 (empty when C never or always vanishes)."""
        return [] if self.vanishing is None or self.vanishing.all_p else list(self.vanishing.points)


def signal_summary(task: CircleWalk | FiniteTask) -> SignalSummary:
    """Compute C exactly and, when the task has one free parameter, where C vanishes in [0, 1].

    >>> from rwtoolkit.tasks import qa_task2
    >>> signal_summary(qa_task2()).is_zero
    True
    """
    C = signal_matrix(task).applyfunc(sp.expand)
    is_zero = all(e == 0 for e in C)
    symbols = list(task.symbols)
    if len(symbols) > 1:
        raise ValueError(
            f"the task has {len(symbols)} free parameters {[str(s) for s in symbols]}: keep at most one "
            "symbolic (the vanishing set is over one parameter) and give numbers, or sweep values, "
            "for the others"
        )
    if not symbols:
        return SignalSummary(C, is_zero, None, None)
    if not all(is_numeric(e) or e.free_symbols <= set(symbols) for e in C):
        raise RuntimeError("the signal matrix depends on symbols that are not the task's parameters")
    if all(is_numeric(e) for e in C):
        # The parameter cancelled out of C: it vanishes for all values or for none.
        gcd = sp.Integer(0 if is_zero else 1)
        return SignalSummary(C, is_zero, symbols[0], VanishingSet(symbols[0], is_zero, (), gcd))
    return SignalSummary(C, is_zero, symbols[0], vanishing_set(C))
