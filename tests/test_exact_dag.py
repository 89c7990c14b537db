"""The exact DAG arithmetic (rwtoolkit/engines/exact/arithmetic/_dag.py) and the generic exact engine on it.

The arithmetic folds rationals and applies a short list of identities, nothing else; a sign its balls cannot
settle is undecided, never guessed; a value enters the oracle's node table straight from the program and reads
back as its SymPy expression. On a traced example the engine in DAG gives the same exact values as in the SymPy
arithmetic, proved by identical canonical forms (each DAG value rebuilt by SymPy's own evaluation is the very
expression the SymPy path holds).
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from flint import fmpq

from rwtoolkit.engines.exact import (
    DAG,
    DagNode,
    derive_model,
    exact_arithmetic,
    program_size,
    sympy_value,
    to_sympy,
)
from rwtoolkit.engines.exact.arithmetic._dag import dag_sign
from rwtoolkit.engines.exact.oracle._nodes import NodeTable, decode_nodes
from rwtoolkit.models import Tape, get_model
from rwtoolkit.tasks import binary_markov_task

EXAMPLE = "examples/nanogpt_attention.py:one_layer"


def _e(q: str) -> DagNode:
    return DAG.exp(DAG.asarray([q]))[0]


def test_the_dag_arithmetic_folds_rationals_and_applies_only_its_identities():
    x = _e("104729/7919")  # an atom no other test makes (the program is one per process, hash-consed)
    assert (
        isinstance(x, DagNode) and _e("104729/7919") is x
    )  # hash-consed: one entry per operation and operands
    assert DAG.exp(DAG.asarray([0]))[0] == 1 and isinstance(fmpq(1, 3) + fmpq(1, 6), fmpq)
    assert 0 * x == 0 and x * 0 == 0 and 1 * x is x and x + 0 is x and 0 + x is x and x / 1 is x
    negated = -x
    assert x - x == 0 and x / x == 1 and -negated is x and x + 1 is 1 + x and 2 * x is x * 2
    assert isinstance((x + fmpq(1, 2)) * 4 - 4 * x, DagNode)  # no distribution: 2 is not found
    before = program_size()
    y = (x + 1) * (x + 1) - 2 * x - x * x - 1  # zero as a value, not as a program
    # new entries: the operations above (at most 8; fewer where a rational leaf such as 1 or 2 is already in the
    # process's one program, as after another test): the zero is not found, so nothing folds it
    assert isinstance(y, DagNode) and 0 < program_size() - before <= 8
    z = x + x
    assert isinstance(z, DagNode) and (z + fmpq(0)) is z  # x + x is not rewritten as 2x


def test_a_sign_the_balls_cannot_settle_is_undecided_not_guessed():
    x = _e("1/3")
    zero = (x + 1) * (x + 1) - 2 * x - x * x - 1
    assert dag_sign(zero) is None and DAG.sign(x - fmpq(7, 5)) == -1 and DAG.sign(x) == 1
    assert DAG.predict(np.array([[zero, 0]], dtype=object)) is None  # an accuracy of a tie: undecided
    with pytest.raises(ValueError, match=r"cannot decide whether .* > 0 \(a ReLU's input\)$"):
        Tape(DAG).relu(Tape(DAG).input(np.array([zero], dtype=object)))
    tiny = sp.Rational(1, 2**9000)  # beyond 8192 bits the ball still holds 0: undecided, not 0
    assert dag_sign(zero + fmpq(int(tiny.p), int(tiny.q))) is None
    assert DAG.to_float(np.array([x, y := x / 3], dtype=object)).tolist() == [
        float(sp.N(sp.exp(sp.Rational(1, 3)), 30)),
        float(sp.N(sp.exp(sp.Rational(1, 3)) / 3, 30)),
    ]
    assert isinstance(y, DagNode)


def test_a_dag_value_enters_the_node_table_from_its_program_and_reads_back_as_its_sympy_value():
    x = _e("2/5")
    value = (x + 1) / (3 * x + 2) - DAG.sqrt(DAG.asarray([2]))[0]
    table = NodeTable()
    index = table.add(value)
    assert all(isinstance(node, (str, list)) for node in table.nodes)
    assert ["atom", table.add(sp.Rational(2, 5))] in table.nodes  # exp as the engine's atom
    read = decode_nodes(table.nodes, atoms="named")[index]
    assert read == sympy_value(value) and read == to_sympy(value)
    plain = decode_nodes(table.nodes)[index]
    exact = (sp.exp(sp.Rational(2, 5)) + 1) / (3 * sp.exp(sp.Rational(2, 5)) + 2) - sp.sqrt(2)
    assert sp.simplify(plain - exact) == 0
    size = len(table)
    table.add(value + 1)
    table.truncate(size)
    assert table.add(value) == index and len(table) == size


@pytest.fixture(scope="module")
def both_paths():
    """one_layer on binary_markov N = 3 from --init gaussian, one step, in DAG (the default) and in SymPy."""
    task = binary_markov_task("1/3", "3/5", 3)
    model = get_model(EXAMPLE)
    assert exact_arithmetic(model, task) == "dag"
    dag = derive_model(task, model, 1, init="gaussian")
    sympy = derive_model(task, model, 1, init="gaussian", arithmetic="sympy")
    return dag, sympy


def test_the_dag_and_sympy_paths_give_the_same_exact_values(both_paths):
    """Every parameter and the loss at t = 0, 1: the DAG value rebuilt with SymPy's evaluation at every node (the
    operations the SymPy path ran, in its order) is structurally the SymPy path's expression, so the two are one
    exact real; and the DAG path held no SymPy while it ran."""
    dag, sympy = both_paths
    assert dag.exact is DAG and sympy.exact is not DAG
    compared = nodes = 0
    for t in (0, 1):
        for name in dag.parameter_names:
            for x, y in zip(
                dag.states[t].params[name].ravel(), sympy.states[t].params[name].ravel(), strict=True
            ):
                assert isinstance(x, (fmpq, DagNode))
                nodes += isinstance(x, DagNode)
                assert sympy_value(x, evaluate=True) == sp.sympify(y), (t, name)
                compared += 1
        assert sympy_value(dag.states[t].loss, evaluate=True) == sp.sympify(sympy.states[t].loss)
    assert compared == 176 and nodes == 88  # every parameter of step 1 is an exponential expression
