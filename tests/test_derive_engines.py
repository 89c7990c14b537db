"""rw derive has one path: the exact engine that ``rwtoolkit.engines.select`` gives for (model, start), planned
and called with one signature, read through one trajectory interface, printed by one render and written by one
oracle writer. The paper's model from zero runs in both exact engines here: the reduced engine (``derive``, the
registered specialisation) and the generic one (``derive_model``), and what the toolkit prints and writes of
the two must agree wherever both have the quantity (the reduced engine is pinned equal to the generic one by
tests/test_models.py; here it is the output code that is shared)."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

from rwtoolkit.cli.main import main
from rwtoolkit.engines import GENERIC, SPECIALISATIONS, select
from rwtoolkit.engines.exact import (
    EngineArguments,
    ExactTrajectory,
    derive,
    derive_model,
    job_estimate,
    load_oracle,
    write_oracle,
)
from rwtoolkit.models import get_model
from rwtoolkit.tasks import CircleWalk

EXACT_ENGINES = [GENERIC["exact"], *(e for e in SPECIALISATIONS if e.arithmetic == "exact")]


def _keywords(function) -> dict[str, inspect.Parameter]:
    return {
        name: p
        for name, p in inspect.signature(function).parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def test_every_exact_engine_runs_and_plans_with_one_signature():
    shared = {"task", "model", "steps", *EngineArguments.__annotations__}
    plans = []
    for engine in EXACT_ENGINES:
        assert shared <= set(_keywords(engine.load())), engine.name
        plans.append([(p.name, p.kind) for p in _keywords(engine.load_estimate()).values()])
    assert all(plan == plans[0] for plan in plans)


def test_the_reduced_engine_refuses_another_model_or_start():
    task = CircleWalk(3, 3, "1/2")
    with pytest.raises(ValueError, match="the reduced engine runs the paper's model"):
        derive(task, model=get_model("key_query"), steps=1)
    with pytest.raises(ValueError, match="from zero"):
        derive(task, model=get_model("one_layer"), steps=1, init="gaussian")


def test_both_exact_engines_read_the_same_through_one_interface():
    """Steps 0 and 1 are rational (uniform attention, W(1) = 0: Lemma C.1), so every read-out is equal exactly."""
    task, model = CircleWalk(3, 4, "3/10"), get_model("one_layer")
    arguments = {"eta": 1, "eps": "1/10", "mu": 2, "loss": "log", "init": "zero", "sigma": "1/100", "seed": 0}
    reduced = select("one_layer", "exact", "zero").load()(task, model=model, steps=1, **arguments)
    generic = select("one_layer", "exact", "zero", specialise=False).load()(
        task, model=model, steps=1, **arguments
    )
    assert isinstance(reduced, ExactTrajectory) and isinstance(generic, ExactTrajectory)
    assert reduced.reduced is reduced and generic.reduced is None
    assert (reduced.model.name, reduced.init, reduced.M, generic.M) == ("one_layer", "zero", None, 4)
    assert reduced.parameter_names == ("V", "w_tok", "c") and generic.parameter_names == ("V", "W")
    assert set(generic.readout_names) <= set(reduced.readout_names)
    for t in (0, 1):
        assert reduced.value(t, "V").tolist() == generic.value(t, "V")
        for name in ("accuracy", "mean_attention", "mean_f"):
            assert reduced.value(t, name) == generic.value(t, name), (name, t)


def _lines(out: str, prefix: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(prefix)]


def test_rw_derive_runs_the_engine_the_registry_selects(monkeypatch, capsys):
    """With no specialisation registered the paper's model from zero runs in the generic engine, through the same
    command: its own parameters (V, W) instead of the reduced coordinates, the same read-outs printed."""
    argv = ["derive", "--K", "3", "--N", "3", "--p", "1/2", "--mu", "1", "--steps", "1"]
    assert main(argv) == 0
    reduced = capsys.readouterr().out
    monkeypatch.setattr("rwtoolkit.engines._registry.SPECIALISATIONS", ())
    assert main(argv) == 0
    generic = capsys.readouterr().out
    assert "w_tok = " in reduced and "w_tok = " not in generic
    assert "model={'name': 'one_layer'}, init=zero" in generic.splitlines()[0]
    assert "\nW = " in generic
    for prefix in ("accuracy = ", "mean attention = ", "t = "):
        assert _lines(reduced, prefix) == _lines(generic, prefix), prefix


def test_rw_derive_refusal_above_max_seconds_names_the_most_steps_that_fit(capsys):
    """The refusal says how many steps the same job could take within --max-seconds: the most whose estimate
    (job_estimate, the plan's) is within it."""
    task = CircleWalk(5, 12, "1/2")
    fits = max(k for k in range(5) if job_estimate(task, k, json=False).seconds <= 600)
    assert main(["derive", "--K", "5", "--N", "12", "--p", "1/2", "--steps", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"above --max-seconds 600 (at most --steps {fits} fits); " in err[0]
    assert fits == 2


def test_both_exact_engines_oracles_share_their_common_parts(tmp_path):
    """One writer: the configuration, the read-outs and the per-input population, S, f and logits written the
    same way from either engine; the reduced coordinates' description and verdicts only where they exist."""
    task, model = CircleWalk(3, 3, "1/2"), get_model("one_layer")
    reduced = derive(task, model=model, steps=2, mu=1)
    generic = derive_model(task, model, 2, mu=1)
    paths = {
        "reduced": write_oracle(reduced, tmp_path / "r.json", per_input=True, verdict=True),
        "generic": write_oracle(generic, tmp_path / "g.json", per_input=True),
    }
    header = {k: json.loads(p.read_text()) for k, p in paths.items()}
    config = {k: dict(h["config"]) for k, h in header.items()}
    assert config["generic"].pop("M") == 4 and "positions" in config["generic"].pop("positions")
    assert config["reduced"] == config["generic"]
    assert "coordinates" in header["reduced"]["model"] and "coordinates" not in header["generic"]["model"]
    assert "verdict" in header["reduced"]["steps"][1] and "verdict" not in header["generic"]["steps"][1]
    oracles = {k: load_oracle(p) for k, p in paths.items()}
    r, g = oracles["reduced"], oracles["generic"]
    for name in ("tokens", "labels", "weight"):
        assert np.array_equal(r.population()[name], g.population()[name]), name
    for t in range(3):
        for name in ("loss", "accuracy", "mean_attention", "mean_f", "V", "S", "f", "logits"):
            assert np.allclose(r.value(name, t), g.value(name, t), rtol=1e-14, atol=1e-15), (name, t)
    with pytest.raises(ValueError, match="structure predicates"):
        write_oracle(generic, tmp_path / "x.json", verdict=True)
