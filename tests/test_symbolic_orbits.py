"""``rwtoolkit.engines.exact.derive(orbits=True)``: sums over orbit representatives, group-averaged, equal the plain sums.

Oracle: ``derive(rotate=False)``, which sums over every input of the population with no symmetry used.
At t <= 1 the states are rational and compared exactly; later states carry exponentials and are compared
at 60 digits, agreeing to 1e-45 (the two sums add the same exact terms in another order and differ only by
the evaluation's rounding, about 1e-58 measured).
"""

from __future__ import annotations

import pytest
import sympy as sp

from rwtoolkit.engines.exact import derive
from rwtoolkit.tasks import CircleWalk, make_task, qa_task2

DIGITS, TOL = 60, sp.Float("1e-45", 60)

CASES = {
    "K4-N9-half": (CircleWalk(4, 9, "1/2"), {"mu": 1}, 3),
    "first_of_two": (make_task("first_of_two", {"L": 4}), {"mu": 2}, 3),
    "permutation": (make_task("permutation", {"m": 3}), {"mu": "3/2"}, 3),
    "K3-N5-third": (CircleWalk(3, 5, "1/3"), {"mu": 1}, 2),  # learns: f differs between inputs
}


def close(a, b) -> bool:
    return abs(sp.N(sp.sympify(a) - sp.sympify(b), DIGITS)) < TOL


def values(state):
    return {
        "V": list(state.V),
        "w_tok": list(state.w_tok),
        "c": list(state.c),
        "loss": [state.loss],
        "accuracy": [state.accuracy],
        "mean_attention": list(state.mean_attention),
        "mean_logits": list(state.mean_logits),
        "mean_f": list(state.mean_f),
    }


@pytest.mark.parametrize("name", list(CASES))
def test_orbit_sums_equal_the_sums_over_every_input(name):
    task, kw, steps = CASES[name]
    plain = derive(task, steps, rotate=False, **kw)
    orbits = derive(task, steps, orbits=True, **kw)
    assert orbits.states[0]._inputs.population_size == plain.states[0]._inputs.size
    assert orbits.states[0]._inputs.size < plain.states[0]._inputs.size
    for t in range(steps + 1):
        a, b = values(plain.states[t]), values(orbits.states[t])
        for key in a:
            if t <= 1 and key not in ("loss",):  # rational states: exactly equal
                assert all(sp.simplify(x - y) == 0 for x, y in zip(a[key], b[key], strict=True)), (t, key)
            else:
                assert all(close(x, y) for x, y in zip(a[key], b[key], strict=True)), (t, key)


def test_orbit_sums_hold_for_the_abstract_loss():
    task = CircleWalk(4, 7, "1/2")
    plain = derive(task, 1, rotate=False, mu=1, loss="any")
    orbits = derive(task, 1, orbits=True, mu=1, loss="any")
    for x, y in zip(plain.states[1].V, orbits.states[1].V, strict=True):
        assert sp.expand(x - y) == 0


def test_accuracy_with_ties_averages_over_the_label_group():
    """All scores tie on the stuck manifold: the smallest-argmax accuracy is P(y = 0), which no single
    representative per orbit gives; averaging over the label group does (1/4 here, exactly)."""
    task = CircleWalk(4, 9, "1/2")
    orbits = derive(task, 2, orbits=True, mu=1)
    reps = orbits.states[0]._inputs
    assert all(int(y) == 0 for y in reps.labels)  # every representative has label 0 ...
    assert orbits.states[2].accuracy == sp.Rational(1, 4)  # ... yet the accuracy is P(y = 0) = 1/4


def test_accuracy_over_a_label_group_too_large_is_refused():
    orbits = derive(qa_task2(), 1, orbits=True, mu=1)
    assert close(orbits.states[1].loss, derive(qa_task2(), 1, rotate=False, mu=1).states[1].loss)
    with pytest.raises(ValueError, match="averages over the label group, which has more than 100000"):
        _ = orbits.states[1].accuracy


def test_a_population_of_a_quarter_million_inputs_takes_seconds():
    """CircleWalk(4, 17, 1/2): 262144 inputs, 15 orbits; 3 exact steps stay at chance (accuracy 1/4)."""
    tr = derive(CircleWalk(4, 17, "1/2"), 3, orbits=True, mu=1)
    assert tr.states[0]._inputs.population_size == 262144 and tr.states[0]._inputs.size == 15
    assert tr.states[3].accuracy == sp.Rational(1, 4)
