"""``rw sweep`` on a 2-worker LocalCluster in this process: exactly-once rows, resume, specs, the (N, p) diagram.

The cluster is shared by the module (starting worker processes that import torch is most of the cost).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rwtoolkit.analyses.sweep import finished_hashes, load_spec, plan_packs, plot_sweep, run_sweep
from rwtoolkit.cli.main import main

#: 18 runs in 9 packs of at most 2, long enough (120 steps) that a pack is still running when one ends.
SPEC = {
    "name": "exactly-once",
    "task": "circle",
    "fixed": {
        "K": 3,
        "M": None,
        "pos": "onehot",
        "mu": 1,
        "steps": 200,
        "init": "gaussian",
        "sigma": 1e-3,
    },
    "grid": {"N": [6, 7, 8], "p": ["0", "1/3", "1"], "seed": [0, 1]},
    "pack_size": 2,
}


@pytest.fixture(scope="module")
def client():
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", memory_limit="2GiB"
    )
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def reference(client, tmp_path_factory):
    """The sweep of SPEC with one worker killed while packs run: (spec, results.parquet bytes, pids killed)."""
    spec = load_spec(SPEC)
    out = tmp_path_factory.mktemp("killed")
    killed: list[int] = []

    def kill_a_busy_worker(pack_id: str) -> None:
        if killed:
            return
        busy = [w for w, keys in client.processing().items() if keys]
        pids = client.run(os.getpid, workers=busy[:1])
        for pid in pids.values():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    outcome = run_sweep(spec, out, client=client, progress=False, on_pack_done=kill_a_busy_worker)
    client.wait_for_workers(2, timeout=120)
    return spec, outcome, killed


def test_a_worker_killed_mid_sweep_leaves_every_run_exactly_once(reference):
    spec, outcome, killed = reference
    assert len(killed) == 1  # a worker that was computing a pack was killed
    table = pq.read_table(outcome.results)
    assert table.column("config_hash").to_pylist() == list(spec.hashes)  # each run once, in spec order
    assert table.num_rows == 18 and outcome.computed == 18 and outcome.skipped == 0
    assert "pack_wall_s" not in table.column_names
    assert pq.read_table(outcome.timing).column("config_hash").to_pylist() == list(spec.hashes)


class _Stop(Exception):
    pass


def _executing(dask_worker) -> int:
    """How many tasks run on this worker's threads, cancelled ones still running included."""
    return len(dask_worker.state.executing) + len(dask_worker.state.long_running)


def test_an_interrupted_sweep_resumed_computes_exactly_the_missing_packs_and_the_same_bytes(
    reference, client, tmp_path
):
    spec, first, _ = reference
    ended: list[str] = []

    def stop_after_two(pack_id: str) -> None:
        ended.append(pack_id)
        if len(ended) == 2:
            raise _Stop

    with pytest.raises(_Stop):
        run_sweep(spec, tmp_path, client=client, progress=False, on_pack_done=stop_after_two)
    # Cancelled packs already running on a worker thread finish first: the scheduler forgets a cancelled key at
    # once, but the worker's thread runs on (and may write its chunk) until the pack ends; a worker's
    # ``state.executing`` holds its cancelled-but-running tasks too.
    while any(client.processing().values()) or any(client.run(_executing).values()):
        time.sleep(0.05)
    assert not (tmp_path / "results.parquet").exists()
    before = {p.stem for p in (tmp_path / "chunks").glob("*.parquet")}
    done = finished_hashes(tmp_path)
    assert 2 <= len(before) < len(plan_packs(spec))
    computed: list[str] = []
    outcome = run_sweep(spec, tmp_path, client=client, progress=False, on_pack_done=computed.append)
    assert set(computed).isdisjoint(before) and set(computed) | before == {p.id for p in plan_packs(spec)}
    assert outcome.skipped == len(done) and outcome.computed == len(spec.runs) - len(done)
    assert outcome.results.read_bytes() == first.results.read_bytes()
    # a third run finds everything done and rewrites the same bytes
    again = run_sweep(spec, tmp_path, client=client, progress=False)
    assert again.computed == 0 and again.results.read_bytes() == first.results.read_bytes()


def test_zero_init_cells_at_chance_are_exactly_the_exact_vanishing_set(client, tmp_path):
    """Done-when check: exact population, ideal Gram, zero init, 5 steps, (N, p) for K = 3 and 4.

    5 steps is below the float64 rounding escape that ``rwtoolkit.analyses.stability.predict_escape`` predicts for the
    stuck cells, so any cell at chance is there by the exact dynamics, not by a rounding accident.
    """
    from rwtoolkit.analyses.stability import linearise, predict_escape
    from rwtoolkit.tasks import CircleWalk

    steps = 5
    for K, N in ((3, 4), (3, 7), (4, 5)):
        predicted = predict_escape(linearise(CircleWalk(K, N, 1), steps=40), dtype="float64").step
        assert predicted is None or predicted > steps
    spec = load_spec(
        {
            "task": "circle",
            "fixed": {"M": None, "pos": "onehot", "mu": 1, "gram": "ideal", "steps": steps},
            "grid": {"K": [3, 4], "N": {"range": [3, 8]}, "p": {"linspace": [0, 1, 5]}},
            "pack_size": 16,
        }
    )
    outcome = run_sweep(spec, tmp_path, client=client, progress=False)
    rows = pq.read_table(outcome.results).to_pylist()
    assert len(rows) == 60
    at_chance = {(r["K"], r["N"], r["p"]) for r in rows if abs(r["final_accuracy"] - 1 / r["K"]) < 1e-12}
    vanishing = {(r["K"], r["N"], r["p"]) for r in rows if r["signal_zero"]}
    assert at_chance == vanishing
    assert {
        (3, 4, "0"),
        (3, 7, "1"),
        (4, 5, "1/2"),
        (4, 7, "1/2"),
    } <= vanishing  # Theorem 4.1; K = 4, p = 1/2
    written, skipped = plot_sweep(tmp_path, tmp_path / "plots")
    assert written[0].name == "phase_accuracy.png" and written[0].stat().st_size > 10_000
    assert list(skipped) == ["escape_sigma_mu.png"]


def test_rw_sweep_runs_on_an_existing_scheduler_and_plots(client, tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "task: circle\nfixed: {K: 3, N: 4, steps: 3}\ngrid:\n  p: ['1/3', '1/2']\nmetrics: true\n"
    )
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--scheduler", client.scheduler.address]) == 0
    text = capsys.readouterr().out
    assert "2 runs, 0 finished before, 2 to compute in 1 packs" in text and "dashboard" in text
    assert json.loads((out / "spec.json").read_text())["grid"] == {"p": ["1/3", "1/2"]}
    assert pq.read_table(out / "results.parquet").num_rows == 2
    (metrics,) = (out / "metrics").glob("*.parquet")
    steps = pq.read_table(metrics).to_pylist()
    assert [(r["step"], r["test_accuracy"] is not None) for r in steps] == [(t, True) for t in range(4)] * 2
    assert main(["sweep", "plot", str(out)]) == 0
    assert "skipped phase_accuracy.png" in capsys.readouterr().out


BAD_SPECS = [
    ({"task": "grid"}, "spec.json: task: 'grid' is not one of the choices; allowed: circle"),
    ({"task": "circle", "fixed": {"Q": 1}}, "spec.json: fixed.Q: unknown key; allowed: K, N, p,"),
    (
        {"task": "circle", "grid": {"N": [1, 2]}},
        "spec.json: grid.N[0]: 1 is out of range; allowed: an integer >= 2",
    ),
    (
        {"task": "circle", "grid": {"p": ["3/2"]}},
        "spec.json: grid.p[0]: '3/2' is out of range; allowed: a number in [0, 1]",
    ),
    (
        {"task": "circle", "fixed": {"eta": -1}},
        "spec.json: fixed.eta: -1 is out of range; allowed: a number > 0",
    ),
    (
        {"task": "circle", "fixed": {"M": 3, "N": 5}},
        "spec.json: fixed.M: M=3 is out of range; allowed: M >= N=5",
    ),
    ({"task": "circle", "fixed": {"N": 30}}, "spec.json: fixed.N: K=3, N=30, p=1/2 has an exact population"),
    (
        {"task": "circle", "pack_size": 0},
        "spec.json: pack_size: 0 is out of range; allowed: an integer in 1..4096",
    ),
    (
        {"task": "circle", "random": {"count": 2, "axes": {"N": {"uniform": [2, 5]}}}},
        "spec.json: random.axes.N.uniform: N is not continuous; allowed: {choice: [values]} for N",
    ),
    ({"task": "circle", "fixed": {"N": 4}, "grid": {"N": [3]}}, "spec.json: grid.N: N is also in fixed"),
]


@pytest.mark.parametrize(
    "spec,message", BAD_SPECS, ids=[m.split(": ")[1] + f" #{i}" for i, (_, m) in enumerate(BAD_SPECS)]
)
def test_a_bad_spec_is_refused_in_one_line_naming_the_field_before_any_work(spec, message, tmp_path, capsys):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


def test_a_spec_that_is_not_json_or_yaml_is_refused_naming_the_file(tmp_path, capsys):
    path = tmp_path / "spec.yaml"
    path.write_text("task: [circle\n")
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"SPEC {path} is not valid YAML" in err, err
    assert main(["sweep", "plot"]) == 2
    assert "rw sweep plot needs DIR" in capsys.readouterr().err
    path.write_text("task: circle\n")
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--memory-limit", "lots"]) == 2
    assert "--memory-limit='lots' is not a size" in capsys.readouterr().err
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--memory-limit", "1"]) == 2
    assert "--memory-limit='1' is below 256MiB, less than a worker holds" in capsys.readouterr().err
    assert not Path(tmp_path / "out").exists()


def test_local_workers_keep_glibc_malloc_defaults_and_one_thread():
    """Dask's MALLOC_TRIM_THRESHOLD_ (which pins glibc's mmap threshold and makes every large temporary of
    the batched engine fault its pages in again) is left out of the workers' environment; the
    single-thread settings stay."""
    import dask
    import dask.distributed  # noqa: F401  (loads distributed's configuration defaults)

    from rwtoolkit.analyses.sweep._driver import _worker_environ

    assert "MALLOC_TRIM_THRESHOLD_" in dask.config.get("distributed.nanny.pre-spawn-environ")
    environ = _worker_environ()
    assert "MALLOC_TRIM_THRESHOLD_" not in environ
    assert {environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")} == {1}
