"""Task definitions shared by ``rwsymbolic`` (exact) and ``rwnumeric`` (PyTorch).

A task gives an exact ``Population`` (every input with its exact probability) and, for numeric
parameters, i.i.d. samples from an explicit seed or generator. Token and label ids are 0-based.
"""

from rwtasks._circle import MAX_EXACT_WALKS, CircleWalk, check_int
from rwtasks._exact import check_in_unit_interval, exact, is_numeric, symbol
from rwtasks._finite import FiniteTask
from rwtasks._population import Population
from rwtasks._qa import QA_VOCAB, qa_task1, qa_task2

Task = CircleWalk | FiniteTask

__all__ = [
    "MAX_EXACT_WALKS",
    "QA_VOCAB",
    "CircleWalk",
    "FiniteTask",
    "Population",
    "Task",
    "check_in_unit_interval",
    "check_int",
    "exact",
    "is_numeric",
    "qa_task1",
    "qa_task2",
    "symbol",
]
