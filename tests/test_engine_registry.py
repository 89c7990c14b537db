"""The one engine entry point: every registered engine loads, every specialisation names tests that exist,
selection picks the specialisation only where it covers (model, arithmetic, start), and the architecture page
lists each specialisation with its tests and the one trajectory type every arithmetic's result implements."""

import ast
from pathlib import Path

import pytest

from rwtoolkit.engines import GENERIC, SPECIALISATIONS, select
from rwtoolkit.models import MODELS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("engine", [*GENERIC.values(), *SPECIALISATIONS], ids=lambda e: e.name)
def test_every_engine_loads(engine):
    assert callable(engine.load())


@pytest.mark.parametrize("engine", SPECIALISATIONS, ids=lambda e: e.name)
def test_every_specialisation_is_pinned_by_tests_that_exist(engine):
    assert engine.pinned_by, f"{engine.name} names no test pinning it equal to the generic engine"
    for node in engine.pinned_by:
        path, _, name = node.partition("::")
        tree = ast.parse((ROOT / path).read_text())
        names = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
        assert name in names, f"{node} does not exist"
    for model in engine.models:
        assert model in MODELS, f"{engine.name} names {model!r}, not a registered model"


def test_selection_by_model_arithmetic_and_start():
    table = {
        ("one_layer", "exact", "zero", False): "reduced exact engine",
        ("one_layer", "exact", "gaussian", False): "generic exact engine",
        ("key_query", "exact", "zero", False): "generic exact engine",
        ("one_layer", "torch", "gaussian", False): "reduced torch engine (FastModel)",
        ("relu_head", "torch", "zero", False): "reduced torch engine (FastModel)",
        ("one_layer", "torch", "zero", True): "batched torch engine",
        ("key_query", "torch", "zero", True): "generic torch engine",
        ("two_layer", "torch", "zero", False): "generic torch engine",
        ("one_layer", "balls", "zero", False): "reduced ball engine",
        ("one_layer", "balls", "given", False): "generic ball engine",
        ("tied_embedding", "balls", "zero", False): "generic ball engine",
    }
    for (model, arithmetic, start, many), name in table.items():
        assert select(model, arithmetic, start, many=many).name == name, (model, arithmetic, start, many)
    assert select("one_layer", "exact", "zero", specialise=False).name == "generic exact engine"
    with pytest.raises(ValueError, match="arithmetic='float'"):
        select("one_layer", "float", "zero")


def test_the_architecture_page_lists_every_specialisation_and_its_tests():
    page = (ROOT / "docs/guide/architecture.md").read_text()
    for engine in SPECIALISATIONS:
        assert engine.function.split(":")[1] in page, engine.name
        for node in engine.pinned_by:
            assert node.split("::")[1] in page, node


def test_the_architecture_page_names_the_one_trajectory_type_and_its_implementations():
    page = (ROOT / "docs/guide/architecture.md").read_text()
    assert "`rwtoolkit.engines.Trajectory`" in page
    for member in ("arithmetic", "model", "parameter_names", "times", "value(t, name)", "loss(t)", "reduced"):
        assert f"`{member}`" in page, member
    for result in ("ExactTrajectory", "TrainResult", "BallTrajectory"):
        assert f"`{result}`" in page, result
