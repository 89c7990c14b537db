"""Every registered model sweeps, or its spec is refused in one line before any cluster starts; the sweep's
estimate reads every size of its runs (K, N, the population, M, steps, the model's H and d).

The parametrisation is over ``rwtoolkit.models.MODELS``: a model registered later is covered without a new test.
"""

from __future__ import annotations

import math

import pyarrow.parquet as pq
import pytest

import rwtoolkit.models
from rwtoolkit.analyses.sweep import SpecError, estimate_sweep, load_spec, run_sweep

TINY = {
    "task": "circle",
    "fixed": {"K": 3, "N": 3, "M": 4, "steps": 2, "init": "gaussian", "sigma": 0.1},
    "grid": {"p": ["1/3", "1"]},
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


def _has_value_matrix(name: str) -> bool:
    """Whether the model has one K×K value matrix V (read from its declared shapes, K = 3, M = 4, N = 3)."""
    return rwtoolkit.models.get_model(name).shapes(rwtoolkit.models.Sizes(K=3, M=4, N=3)).get("V") == (3, 3)


@pytest.mark.parametrize("name", list(rwtoolkit.models.MODELS))
def test_every_registered_model_sweeps_or_is_refused_in_one_line_at_load(name, client, tmp_path):
    try:
        spec = load_spec({**TINY, "model": name})
    except SpecError as err:  # refused: one line naming the model, before anything ran
        assert "\n" not in str(err) and "model" in str(err)
        assert not any(tmp_path.iterdir())
        return
    outcome = run_sweep(spec, tmp_path, client=client, progress=False)
    rows = pq.read_table(outcome.results).to_pylist()
    assert [r["config_hash"] for r in rows] == list(spec.hashes)
    for row in rows:
        assert row["diverged_step"] is None and 0 <= row["final_accuracy"] <= row["opt"] + 1e-12
        assert math.isfinite(row["final_loss"]) and math.isfinite(row["parent_attention"])
        if name != rwtoolkit.models.DEFAULT_MODEL:
            assert row["model"] == name
        # the summaries of V are there exactly for the models that have one K×K V
        assert (row["v_direction_error"] is not None) == _has_value_matrix(name)


@pytest.mark.parametrize("name", [n for n in rwtoolkit.models.MODELS if not _has_value_matrix(n)])
def test_a_field_that_only_v_summaries_read_is_refused_for_a_model_without_v(name):
    with pytest.raises(SpecError) as info:
        load_spec({**TINY, "model": name, "fixed": {**TINY["fixed"], "escape_threshold": 0.01}})
    message = str(info.value)
    assert message.startswith("spec: fixed.escape_threshold: model ") and "no value matrix V" in message


def test_heads_go_to_multi_head_runs_and_are_refused_for_one_head():
    spec = load_spec({**TINY, "model": "multi_head", "heads": 3})
    assert spec.heads == 3 and all(r["heads"] == 3 for r in spec.runs)
    with pytest.raises(SpecError, match=r"spec: heads: model key_query has no number of heads"):
        load_spec({**TINY, "model": "key_query", "heads": 2})


def _estimate(change: dict, model: dict | None = None):
    spec = {**TINY, **(model or {}), "fixed": {**TINY["fixed"], **change}}
    return estimate_sweep(load_spec(spec))


@pytest.mark.parametrize(
    ("change", "model"),
    [
        ({"K": 5}, None),
        ({"N": 6, "M": 7}, None),
        ({"steps": 20}, None),
        ({"M": 40}, {"model": "key_query"}),
        ({"N": 6, "M": 7}, {"model": "key_query"}),
        ({"K": 5}, {"model": "tied_embedding"}),
    ],
    ids=["K", "N", "steps", "M-generic", "N-generic", "K-generic"],
)
def test_the_sweep_estimate_grows_with_every_size_of_a_run(change, model):
    small, large = _estimate({}, model), _estimate(change, model)
    assert large.core_seconds > small.core_seconds or large.pack_memory > small.pack_memory


def test_the_sweep_estimate_reads_the_population_and_the_models_h_and_d():
    stuck = estimate_sweep(load_spec({**TINY, "grid": {"p": ["1", "0"]}}))
    moving = estimate_sweep(load_spec({**TINY, "grid": {"p": ["1/3", "2/3"]}}))
    assert moving.core_seconds > stuck.core_seconds  # K walks at p in {0, 1}, K·2^(N-1) otherwise
    fixed = {**TINY["fixed"], "M": 40}
    for hyper, small, large in (("heads", 1, 8), ("head_dim", 1, 16)):
        a = estimate_sweep(load_spec({**TINY, "fixed": fixed, "model": "multi_head", hyper: small}))
        b = estimate_sweep(load_spec({**TINY, "fixed": fixed, "model": "multi_head", hyper: large}))
        assert b.core_seconds > a.core_seconds and b.pack_memory > a.pack_memory, hyper


def test_metrics_and_runs_add_to_the_estimated_output():
    plain = estimate_sweep(load_spec(TINY))
    with_metrics = estimate_sweep(load_spec({**TINY, "metrics": True}))
    more = estimate_sweep(load_spec({**TINY, "grid": {"p": ["1/3", "1", "1/2", "2/3"]}}))
    assert with_metrics.output_bytes > plain.output_bytes and more.output_bytes > plain.output_bytes
    assert estimate_sweep(load_spec(TINY), done=set(load_spec(TINY).hashes)).core_seconds == 0


def test_rw_sweep_refuses_a_sweep_above_max_core_hours_before_the_cluster_starts(tmp_path, capsys):
    from rwtoolkit.cli.main import main

    path = tmp_path / "spec.yaml"
    path.write_text("task: circle\nfixed: {K: 3, N: 16, steps: 100000}\ngrid: {seed: {range: [0, 999]}}\n")
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "above --max-core-hours 100" in err and "1000 runs" in err, err
    assert not out.exists()
