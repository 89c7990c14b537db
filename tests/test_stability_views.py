"""``rw stability`` has one path: one report builder reading the linearisation selected by (model, arithmetic, start).

Lemma D.3's reduced GD map is the registered specialisation of the generic off-manifold linearisation for
``one_layer`` from zero (``select_linearisation``, the same ``Engine`` records as ``rwtoolkit.engines.select``);
``stability_report`` builds either report and one schema validates both, the fields of one view required in its
report and refused in the other's. Oracles: the selection table written out by hand, the tests each
specialisation names (they must exist), and the field lists of docs/stability.md.
"""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import jsonschema
import pytest

from rwtoolkit.analyses.stability import (
    GENERIC_LINEARISATION,
    LINEARISATIONS,
    ModelView,
    ReducedView,
    check_stability_args,
    select_linearisation,
    stability_report,
)
from rwtoolkit.io import load_schema
from rwtoolkit.tasks import CircleWalk

ROOT = Path(__file__).resolve().parent.parent
TASK = CircleWalk(3, 4, 1)
SMALL = dict(steps=3, sigmas=[1e-3], seeds=1)


@pytest.mark.parametrize(
    ("model", "arithmetic", "start", "expected"),
    [
        ("one_layer", "torch", "zero", "Lemma D.3's reduced GD map"),
        ("one_layer", "torch", "any", "generic off-manifold linearisation"),
        ("key_query", "torch", "zero", "generic off-manifold linearisation"),
        ("two_layer", "torch", "zero", "generic off-manifold linearisation"),
        ("normalized_attention", "torch", "zero", "generic off-manifold linearisation"),
    ],
)
def test_the_paper_model_from_zero_selects_lemma_d3s_map_and_every_other_the_generic_one(
    model, arithmetic, start, expected
):
    assert select_linearisation(model, arithmetic, start).name == expected
    assert select_linearisation(model, arithmetic, start, specialise=False) is GENERIC_LINEARISATION


def test_the_selected_views_load_and_a_linearisation_outside_torch_is_refused():
    assert select_linearisation("one_layer").load() is ReducedView
    assert select_linearisation("key_query").load() is ModelView
    with pytest.raises(ValueError, match="linearises in torch float64, not in the exact arithmetic"):
        select_linearisation("key_query", "exact")
    with pytest.raises(ValueError, match="arithmetic='float' is not one of exact, torch, balls"):
        select_linearisation("one_layer", "float")


def test_every_specialisation_names_pinning_tests_that_exist_and_the_architecture_page_lists_them():
    page = (ROOT / "docs" / "guide" / "architecture.md").read_text(encoding="utf-8")
    for view in LINEARISATIONS:
        assert view.pinned_by, view.name
        for test in view.pinned_by:
            path, _, name = test.partition("::")
            tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
            assert name in {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}, test
            assert name in page, f"docs/guide/architecture.md does not name {test}"


@pytest.fixture(scope="module")
def reports():
    return stability_report(TASK, **SMALL), stability_report(TASK, **SMALL, model="key_query")


def test_one_builder_gives_each_view_its_own_fields(reports):
    reduced, generic = reports
    assert list(reduced) == ["task", "config", "dimensions", "manifold", "population", "verdict", "results"]
    assert list(generic) == ["model", "task", "config", "manifold", "verdict", "results"]
    common = ["steps", "eta", "mus", "eps", "sigmas", "dtypes", "seeds", "threshold"]
    assert list(reduced["config"]) == common + ["sums", "measured"]
    assert list(generic["config"]) == common + ["margin_per_step", "manifold", "stuck_tolerance"]
    assert reduced["results"][0]["escape"]["quantity"] == "v_residual"
    assert "rounding" in reduced["results"][0]["escape"]
    assert generic["results"][0]["escape"] == {
        "quantity": "off_manifold_growth",
        "gaussian": generic["results"][0]["escape"]["gaussian"],
    }
    assert stability_report(TASK, **SMALL, model="one_layer") == reduced  # the default is the paper's model


def test_one_schema_validates_both_reports_and_refuses_a_field_of_the_other_view(reports):
    schema = load_schema("stability")
    reduced, generic = reports
    for report in reports:
        jsonschema.validate(report, schema)

    def refused(report, change):
        broken = copy.deepcopy(report)
        change(broken)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)

    refused(reduced, lambda r: r.pop("population"))
    refused(reduced, lambda r: r.update(model={"name": "one_layer"}))
    refused(reduced, lambda r: r["results"][0].pop("unstable_directions"))
    refused(reduced, lambda r: r["results"][0]["escape"].pop("rounding"))
    refused(reduced, lambda r: r["results"][0].update(stuck=True))
    refused(generic, lambda r: r.pop("model"))
    refused(generic, lambda r: r.update(dimensions=reduced["dimensions"]))
    refused(generic, lambda r: r["results"][0].update(unstable_directions={}))
    refused(generic, lambda r: r["results"][0]["escape"].update(rounding=[]))
    refused(generic, lambda r: r["config"].update(sums="plain"))
    refused(generic, lambda r: r.update(verdict=reduced["verdict"]))


@pytest.mark.parametrize(
    ("model", "option", "message"),
    [
        ("key_query", {"sums": "plain"}, "--sum and --predict-only apply to the paper's model"),
        ("key_query", {"measure": False}, "--sum and --predict-only apply to the paper's model"),
        ("one_layer", {"manifold": "zero"}, "--manifold zero applies with --model"),
        ("one_layer", {"sums": "all"}, "--sum='all' must be one of auto, plain, orbits"),
    ],
)
def test_each_view_refuses_the_other_views_options_before_any_work(model, option, message):
    with pytest.raises(ValueError, match=message):
        check_stability_args(TASK, 3, [1e-3], 1, 1e-3, model=model, **option)


@pytest.mark.parametrize(
    "task",
    [CircleWalk(3, 4, 1), CircleWalk(3, 4, "3/10")],
    ids=["lemma-d3", "circle-3/10"],
)
def test_the_reduced_loss_is_one_definition_read_in_sympy_and_in_torch(task):
    """``symbolic_loss`` and ``torch_loss`` are ``reduced_loss`` in two arithmetics: the same L(θ) and ∇L(θ) at a
    rational θ off the manifold, and at θ = 0 the value by hand: z = mean of V = 0, so L = −log ε = log 10."""
    import numpy as np
    import sympy as sp
    import torch
    from torch.func import grad

    from rwtoolkit.analyses.stability import active_coordinates, symbolic_loss, torch_loss

    coords = active_coordinates(task)
    L, symbols = symbolic_loss(task, sp.Integer(2), sp.Rational(1, 10), coords)
    f = torch_loss(task, 2.0, 0.1, coords=coords)
    assert L.xreplace(dict.fromkeys(symbols, sp.Integer(0))) == sp.log(10)
    assert float(f(torch.zeros(coords.dim, dtype=torch.float64))) == pytest.approx(np.log(10), rel=1e-15)
    point = [sp.Rational((7 * i) % 11 + 1, 13) for i in range(coords.dim)]  # V > 0: inside the log domain
    at = dict(zip(symbols, point, strict=True))
    theta = torch.tensor([float(x) for x in point], dtype=torch.float64)
    assert float(f(theta)) == pytest.approx(float(sp.N(L.xreplace(at), 30)), rel=1e-14)
    exact_gradient = [float(sp.N(sp.diff(L, x).xreplace(at), 30)) for x in symbols]
    assert grad(f)(theta).tolist() == pytest.approx(exact_gradient, rel=1e-12, abs=1e-15)
