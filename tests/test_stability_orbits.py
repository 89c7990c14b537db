"""Orbit sums (rwtoolkit.tasks.orbit_sum, rwtoolkit.analyses.stability.orbit_sums) equal the plain population sums on Fix(G).

Oracles: the orbits are checked against the orbits of the listed group elements (``TaskGroup.elements``
acting through ``Symmetry.act``, not the generators' label propagation); the gradient and Hessian against
torch autograd of the plain reduced loss over every input. Tolerance 1e-12 absolute: the two sums add the
same float64 terms in another order, measured differences are at most 2e-14 on these tasks (50x margin).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rwtoolkit.analyses.stability import (
    active_coordinates,
    check_report_args,
    find_manifold,
    linearise,
    orbit_sums,
    population_route,
    stability_report,
    torch_loss,
)
from rwtoolkit.io import load_schema
from rwtoolkit.tasks import (
    CircleWalk,
    FiniteTask,
    Symmetry,
    TaskGroup,
    make_task,
    orbit_labels,
    orbit_sum,
    qa_task2,
)

TOL = 1e-12

TASKS = {
    "K4-N9-half": CircleWalk(4, 9, "1/2"),
    "K3-N7-p1": CircleWalk(3, 7, 1),
    "first_of_two": make_task("first_of_two", {"L": 4}),
    "permutation": make_task("permutation", {"m": 3}),
    "qa2": qa_task2(),
}


def union_find_orbits(perms: list[list[int]], size: int) -> list[int]:
    """The smallest member of each point's orbit, by a plain union-find (the independent oracle)."""
    parent = list(range(size))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for p in perms:
        for i, j in enumerate(p):
            a, b = find(i), find(j)
            parent[max(a, b)] = min(a, b)
    return [find(i) for i in range(size)]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(st.just(n), st.lists(st.permutations(range(n)), max_size=3))
    )
)
def test_orbit_labels_are_the_union_find_orbits(case):
    n, perms = case
    assert orbit_labels([np.array(p) for p in perms], n).tolist() == union_find_orbits(perms, n)


@pytest.mark.parametrize("name", ["K4-N9-half", "K3-N7-p1", "first_of_two", "permutation"])
def test_orbits_are_the_orbits_of_the_listed_group(name):
    task = TASKS[name]
    orbits = orbit_sum(task)
    pop = task.population()
    probs = pop.exact_probs()
    rows = {
        (tuple(t), int(y)): q
        for t, y, q in zip(pop.tokens.tolist(), pop.labels.tolist(), probs, strict=True)
        if q != 0
    }
    assert orbits.inputs == len(rows) and int(orbits.sizes.sum()) == len(rows)
    assert sum(orbits.weights) == 1
    elements = orbits.group.elements(limit=10**5)
    covered: set = set()
    for tokens, label, size, q in zip(
        orbits.tokens, orbits.labels, orbits.sizes, orbits.probabilities, strict=True
    ):
        orbit = set()
        for g in elements:
            gt, gy = g.act(tokens[None, :], np.array([label]))
            orbit.add((tuple(gt[0].tolist()), int(gy[0])))
        assert len(orbit) == size and all(rows[x] == q for x in orbit)
        assert not orbit & covered
        covered |= orbit
    assert covered == set(rows)


def test_a_task_without_symmetry_has_one_input_per_orbit():
    task = FiniteTask([[0, 1], [1, 1], [0, 0]], [1, 0, 0], ["1/2", "1/3", "1/6"], K=2)
    orbits = orbit_sum(task)
    assert orbits.group.order == 1 and len(orbits) == 3 and orbits.sizes.tolist() == [1, 1, 1]


def test_a_generator_that_breaks_the_law_is_refused():
    task = CircleWalk(3, 4, "3/10")  # rotations only: the reflection moves p to 1 - p
    reflection = Symmetry((0, 2, 1), (0, 2, 1), (0, 1, 2))
    group = TaskGroup(K=3, N=4, generators=(reflection,), order=2)
    with pytest.raises(ValueError, match=r"tokens and labels \(1 2\) does not preserve the law"):
        orbit_sum(task, group)


def fixed_point(sums, seed: int) -> torch.Tensor:
    """A random point of Fix(G): one random value per orbit of coordinates (positive, so z + ε > 0)."""
    rng = np.random.default_rng(seed)
    values = rng.uniform(0.2, 1.0, size=sums.coordinate_orbit.max() + 1)
    return torch.as_tensor(values[sums.coordinate_orbit], dtype=torch.float64)


@pytest.mark.parametrize("name", list(TASKS))
def test_orbit_gradient_and_hessian_equal_the_plain_sums_on_the_fixed_subspace(name):
    from torch.func import grad, jacrev

    task = TASKS[name]
    coords = active_coordinates(task)
    sums = orbit_sums(task, coords)
    plain = torch_loss(task, 2.0, 0.1, coords=coords)
    orbits = sums.orbits
    rep = torch_loss(task, 2.0, 0.1, coords=coords, population=(orbits.tokens, orbits.labels, orbits.weights))
    for seed in range(3):
        theta = fixed_point(sums, seed)
        assert abs(float(plain(theta) - rep(theta))) < TOL
        assert float((grad(plain)(theta) - sums.gradient(grad(rep)(theta))).abs().max()) < TOL
        H = jacrev(jacrev(plain))(theta)
        assert float((H - sums.hessian(jacrev(jacrev(rep))(theta))).abs().max()) < TOL


def test_off_the_fixed_subspace_the_orbit_formula_does_not_hold():
    """The formula needs θ ∈ Fix(G): at a generic point the orbit-summed gradient is wrong (the test can fail)."""
    from torch.func import grad

    task = TASKS["K4-N9-half"]
    coords = active_coordinates(task)
    sums = orbit_sums(task, coords)
    orbits = sums.orbits
    plain = torch_loss(task, 1.0, 0.1, coords=coords)
    rep = torch_loss(task, 1.0, 0.1, coords=coords, population=(orbits.tokens, orbits.labels, orbits.weights))
    theta = torch.as_tensor(np.random.default_rng(0).uniform(0.2, 1.0, size=coords.dim))
    assert float((grad(plain)(theta) - sums.gradient(grad(rep)(theta))).abs().max()) > 1e-3


@pytest.mark.parametrize("name", ["K4-N9-half", "first_of_two", "qa2"])
def test_linearisation_with_orbit_sums_equals_the_plain_one(name):
    task = TASKS[name]
    coords = find_manifold(task)
    sums = orbit_sums(task, active_coordinates(task))
    a = linearise(task, 5, mu=2.0, coords=coords)
    b = linearise(task, 5, mu=2.0, coords=coords, sums=sums)
    for x, y in zip(a.thetas + a.C, b.thetas + b.C, strict=True):
        assert np.abs(x - y).max() < TOL
    assert abs(a.log_sigma_Phi[-1] - b.log_sigma_Phi[-1]) < 1e-10


def test_fixed_subspace_contains_the_trajectory_manifold():
    """Every class of the trajectory's manifold is a union of Fix(G)'s classes (Fix(G) ⊇ 𝓜)."""
    for name in ("K4-N9-half", "first_of_two", "qa2"):
        task = TASKS[name]
        found = find_manifold(task).partition()
        fixed = orbit_sums(task, active_coordinates(task)).manifold().partition()
        owner = {i: c for c, members in enumerate(found) for i in members}
        for members in fixed:
            assert len({owner[i] for i in members}) == 1


def test_report_on_orbit_sums_validates_and_names_the_group(tmp_path):
    import jsonschema

    task = CircleWalk(4, 13, "1/2")  # 16384 inputs: auto takes orbit sums
    assert (
        population_route(task, "auto") == "orbits"
        and population_route(CircleWalk(4, 11, "1/2"), "auto") == "plain"
    )
    report = stability_report(task, steps=6, sigmas=[1e-3], seeds=1, measure=False)
    jsonschema.validate(json.loads(json.dumps(report)), load_schema("stability"))
    assert report["config"]["sums"] == "orbits" and report["manifold"]["source"] == "symmetry"
    assert report["population"]["inputs"] == 16384 and report["population"]["summed"] == 10
    assert report["population"]["group"]["order"] == 33177600
    rounding = report["results"][0]["escape"]["rounding"]
    assert all(
        r["measured"] is None and r["predicted"] is not None or r["predicted"] is None for r in rounding
    )


def test_report_estimates_refuse_before_work():
    with pytest.raises(ValueError, match=r"use --predict-only"):
        check_report_args(CircleWalk(4, 19, "1/2"), 200, [1e-2], 2, 1e-3)
    with pytest.raises(ValueError, match=r"plain sums over 262144 inputs.*or --sum orbits"):
        check_report_args(CircleWalk(4, 17, "1/2"), 200, [1e-2], 2, 1e-3, sums="plain", measure=False)
    assert check_report_args(CircleWalk(4, 17, "1/2"), 200, [1e-2], 2, 1e-3, measure=False).N == 17
