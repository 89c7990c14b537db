"""Task definitions shared by ``rwtoolkit.engines.exact`` (exact) and ``rwtoolkit.engines.numeric`` (PyTorch).

A task gives an exact ``Population`` (every input with its exact probability) and, for numeric
parameters, i.i.d. samples from an explicit seed or generator. Token and label ids are 0-based.
"""

from rwtoolkit.io import schema_deprecations as _schema_deprecations
from rwtoolkit.tasks._catalogue import (
    FAMILIES,
    Family,
    count_task,
    first_of_two_task,
    majority_task,
    make_task,
    permutation_task,
)
from rwtoolkit.tasks._circle import MAX_EXACT_WALKS, CircleWalk, check_int
from rwtoolkit.tasks._exact import check_in_unit_interval, exact, is_numeric, symbol
from rwtoolkit.tasks._finite import FiniteTask
from rwtoolkit.tasks._graph import (
    GROUPS,
    MAX_FINITE_INPUTS,
    MAX_GRAPH_NODES,
    NAMED_GRAPHS,
    adjacency_walk,
    cayley_walk,
    exact_expr,
    graph_walk,
    lazy_circle_walk,
    named_graph_walk,
    undirected_graph_walk,
    walk_task,
)
from rwtoolkit.tasks._losses import ABSTRACT_LOSS, LOSSES, check_loss
from rwtoolkit.tasks._markov import binary_markov_task, icl_markov_task, markov_task
from rwtoolkit.tasks._orbits import ORBIT_SEARCH_WORK, OrbitSum, orbit_labels, orbit_sum
from rwtoolkit.tasks._population import Population
from rwtoolkit.tasks._qa import QA_VOCAB, qa_task1, qa_task2
from rwtoolkit.tasks._spec import (
    EXPLORE_DEFAULTS,
    TRAIN_DEFAULTS,
    SpecError,
    TaskSpec,
    load_task_spec,
    parse_task_spec,
)
from rwtoolkit.tasks._symmetry import Symmetry, TaskGroup, permutation_closure, task_symmetries
from rwtoolkit.tasks._task import Task

__all__ = [
    # catalogue and task specification files (rw explore)
    "EXPLORE_DEFAULTS",
    "FAMILIES",
    "GROUPS",
    "MAX_FINITE_INPUTS",
    "MAX_GRAPH_NODES",
    "NAMED_GRAPHS",
    "TRAIN_DEFAULTS",
    "Family",
    "SpecError",
    "TaskSpec",
    "adjacency_walk",
    "cayley_walk",
    "count_task",
    "exact_expr",
    "first_of_two_task",
    "graph_walk",
    "lazy_circle_walk",
    "load_task_spec",
    "majority_task",
    "make_task",
    "named_graph_walk",
    "parse_task_spec",
    "permutation_task",
    "undirected_graph_walk",
    "walk_task",
    # the built-in losses (names shared by rwtoolkit.engines.numeric and rwtoolkit.engines.exact)
    "ABSTRACT_LOSS",
    "LOSSES",
    "check_loss",
    # tasks
    "MAX_EXACT_WALKS",
    "QA_VOCAB",
    "CircleWalk",
    "FiniteTask",
    "Population",
    "Symmetry",
    "Task",
    "TaskGroup",
    "check_in_unit_interval",
    "check_int",
    "exact",
    "is_numeric",
    "qa_task1",
    "qa_task2",
    "symbol",
    "task_symmetries",
    "binary_markov_task",
    "icl_markov_task",
    "markov_task",
    "permutation_closure",
    "ORBIT_SEARCH_WORK",
    "OrbitSum",
    "orbit_labels",
    "orbit_sum",
]

# Kept one release (docs/changelog.md): the schema is rwtoolkit.io.load_schema("task_spec").
__getattr__ = _schema_deprecations("rwtoolkit.tasks", {"task_spec_schema": "task_spec"})
