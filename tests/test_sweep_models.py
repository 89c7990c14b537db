"""``rw sweep --model NAME``: the spec's model field, and key_query runs trained by rwtoolkit.engines.numeric.train_model."""

from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
import pytest

from rwtoolkit.analyses.sweep import SpecError, load_spec, pack_memory, run_sweep
from rwtoolkit.cli.main import main

SPEC = {
    "task": "circle",
    "fixed": {"K": 3, "N": 4, "M": 8, "steps": 6, "init": "gaussian", "sigma": 0.05},
    "grid": {"p": ["1/3", "1"], "seed": [0, 1]},
    "pack_size": 2,
}


@pytest.fixture(scope="module")
def client():
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_the_default_model_leaves_one_layer_runs_and_hashes_as_before():
    plain, named = load_spec(SPEC), load_spec({**SPEC, "model": "one_layer"})
    assert plain.runs == named.runs and plain.hashes == named.hashes
    assert "model" not in plain.runs[0] and plain.model == "one_layer" and plain.head_dim is None


def test_a_key_query_spec_adds_model_and_head_dim_to_every_run():
    spec = load_spec({**SPEC, "model": "key_query", "head_dim": 3})
    assert spec.model == "key_query" and spec.head_dim == 3
    assert all(r["model"] == "key_query" and r["head_dim"] == 3 for r in spec.runs)
    assert not set(spec.hashes) & set(load_spec(SPEC).hashes)
    assert load_spec(SPEC, model="key_query").head_dim == 2  # the override, the model's default d
    assert pack_memory(spec) > 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"model": "nope"},
            "spec: model: --model='nope' is not a registered model: use one of one_layer, key_query, ",
        ),
        ({"head_dim": 2}, "spec: head_dim: model one_layer has no head dimension"),
        ({"model": "key_query", "head_dim": 0}, "spec: head_dim: 0 is out of range"),
        (
            {"model": "rwtoolkit.models:BALL_ENGINE"},
            "spec: model: --model='rwtoolkit.models:BALL_ENGINE' is a str",
        ),
        (
            {"model": "key_query", "fixed": {**SPEC["fixed"], "normalize_attention": True}},
            "normalize_attention",
        ),
        ({"model": "key_query", "fixed": {**SPEC["fixed"], "gram": "computed"}}, "spec: fixed.gram"),
    ],
)
def test_a_bad_model_field_is_refused_naming_it(change, message):
    with pytest.raises(SpecError, match=message):
        load_spec({**SPEC, **change})


def test_a_key_query_sweep_writes_the_summary_columns(client, tmp_path):
    spec = load_spec({**SPEC, "model": "key_query", "metrics": True})
    outcome = run_sweep(spec, tmp_path, client=client, progress=False)
    table = pq.read_table(outcome.results).to_pylist()
    assert [r["config_hash"] for r in table] == list(spec.hashes)
    for row in table:
        assert row["model"] == "key_query" and row["head_dim"] == 2 and row["diverged_step"] is None
        for key in ("final_loss", "final_accuracy", "accuracy_over_opt", "parent_attention"):
            assert math.isfinite(row[key]), key
        assert 0 <= row["final_accuracy"] <= row["opt"] + 1e-12
    assert len(list((tmp_path / "metrics").glob("*.parquet"))) == 2


def test_rw_sweep_model_flag_overrides_the_spec(client, tmp_path, capsys):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({**SPEC, "grid": {"p": ["1/3"]}}))
    out = tmp_path / "out"
    argv = ["sweep", str(path), "--out", str(out), "--scheduler", client.scheduler.address]
    assert main([*argv, "--model", "key_query", "--head-dim", "1"]) == 0
    row = pq.read_table(out / "results.parquet").to_pylist()[0]
    assert (row["model"], row["head_dim"]) == ("key_query", 1)
    assert json.loads((out / "spec.json").read_text())["model"] == "key_query"
    assert main([*argv, "--head-dim", "2"]) == 2  # one_layer has no head dimension
    assert "head_dim" in capsys.readouterr().err
