"""The exact arithmetic, knowing nothing of models: named exponentials, decisions, rationals, JSON.

Layer 1 of ``rwtoolkit.engines.exact`` (the layers import only downwards: arithmetic <- engine <- analysis <- oracle):

* ``_atoms``: exp(a) kept as a named positive symbol while the engine works;
* ``_decide``: zero proved by algebra, signs by certified evaluation;
* ``_rational``: python-flint ``fmpq`` at the SymPy boundary, balanced sums, unsorted SymPy trees;
* ``_fractions``: canonical reduced fractions over FLINT polynomials (``fraction_form``);
* ``_models``: the arithmetic ``EXACT`` through which every model of ``rwtoolkit.models`` runs exactly;
* ``_dag``: the arithmetic ``DAG`` (rationals and nodes of one hash-consed straight-line program, decided by
  certified balls) through which a sequence model runs exactly without building SymPy trees;
* ``_json``: the one JSON encoding of exact values.
"""

from rwtoolkit.engines.exact.arithmetic._atoms import has_atoms
from rwtoolkit.engines.exact.arithmetic._dag import DAG, dag_ball, dag_sign, program_size, sympy_value
from rwtoolkit.engines.exact.arithmetic._dag import Node as DagNode
from rwtoolkit.engines.exact.arithmetic._json import (
    decimal_value,
    exact_json,
    exact_string,
    long_integers,
    nearest_double,
)
from rwtoolkit.engines.exact.arithmetic._models import EXACT, ExactLoss, exact_element, to_sympy

__all__ = [
    "DAG",
    "DagNode",
    "dag_ball",
    "dag_sign",
    "program_size",
    "sympy_value",
    "decimal_value",
    "exact_json",
    "exact_string",
    "long_integers",
    "nearest_double",
    "EXACT",
    "ExactLoss",
    "exact_element",
    "to_sympy",
    "has_atoms",
]
