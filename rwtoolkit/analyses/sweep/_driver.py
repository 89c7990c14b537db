"""Run a sweep on dask.distributed: packs of equal-shape runs per task, one Parquet chunk per finished pack.

Layout of the output folder DIR:

* ``spec.json``: the spec as given; ``chunks/<pack>.parquet``: the rows of one finished pack, written
  atomically by the worker that computed it (named by the hash of its runs' config hashes, so a pack
  computed twice, e.g. after a worker was killed between writing and reporting, writes the same file);
* ``results.parquet``: every run of the spec exactly once, in spec order: config fields, ``config_hash``,
  summaries, package versions. Same spec, same pack size and same environment: same bytes, also after an
  interrupted sweep is resumed (packs are fixed by the spec, each run is computed by one thread);
* ``timing.parquet``: ``config_hash``, ``pack``, ``pack_runs``, ``pack_wall_s`` (wall-clock seconds of
  the pack, which depend on the machine and are kept out of ``results.parquet`` for that reason);
* ``metrics/<pack>.parquet`` with ``metrics: true``: the per-step history of every run (long format).

A rerun skips every pack whose runs are all in ``chunks/``; a killed worker's pack is rerun by Dask.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rwtoolkit.analyses.sweep._spec import Spec
from rwtoolkit.analyses.sweep._summaries import SUMMARY_COLUMNS
from rwtoolkit.models import DEFAULT_MODEL

#: Packages whose versions every row records.
VERSIONED = ("rwtoolkit", "torch", "numpy", "sympy")
#: The fields that make runs batchable together (with the input set, from p; see ``rwtoolkit.engines.numeric.batch_key``).
_SHAPE_FIELDS = ("K", "N", "loss", "eps", "steps", "dtype", "normalize_attention")


@dataclass(frozen=True)
class Pack:
    """Runs (indices into ``Spec.runs``) computed together in one Dask task; ``id`` hashes their configs."""

    id: str
    indices: tuple[int, ...]


@dataclass(frozen=True)
class SweepOutcome:
    """``runs`` in the spec, ``skipped`` (finished before), ``computed`` now, and the tables written."""

    runs: int
    skipped: int
    computed: int
    results: Path
    timing: Path


def plan_packs(spec: Spec) -> list[Pack]:
    """Group the runs by shape (equal ``rwtoolkit.engines.numeric.batch_key``) in spec order, ``spec.pack_size`` per pack.

    >>> from rwtoolkit.analyses.sweep import load_spec
    >>> spec = load_spec({"task": "circle", "grid": {"p": ["1/2", "1/3", 1], "seed": [0, 1]}, "pack_size": 3})
    >>> [len(p.indices) for p in plan_packs(spec)]
    [3, 1, 2]
    """
    groups: dict[tuple, list[int]] = {}
    for i, run in enumerate(spec.runs):
        support = run["p"] if run["p"] in ("0", "1") else "0<p<1"
        groups.setdefault((*(run[f] for f in _SHAPE_FIELDS), support), []).append(i)
    packs = []
    for indices in groups.values():
        for s in range(0, len(indices), spec.pack_size):
            part = tuple(indices[s : s + spec.pack_size])
            digest = hashlib.sha256("\n".join(spec.hashes[i] for i in part).encode()).hexdigest()[:16]
            packs.append(Pack(digest, part))
    return packs


#: The columns a run of a model other than one_layer adds (those in its config: heads for a model with H,
#: objective for a model with next-token logits).
MODEL_COLUMNS = ("model", "head_dim", "heads", "objective")


def _schema(config: dict):
    """The row schema of runs like ``config``; a run of another model than one_layer adds ``MODEL_COLUMNS``."""
    import pyarrow as pa

    from rwtoolkit.analyses.sweep._spec import FIELDS

    types = {
        **dict.fromkeys(("K", "N", "M", "pos_seed", "steps", "seed"), pa.int64()),
        **dict.fromkeys(("p", "pos", "gram", "loss", "init", "dtype"), pa.string()),
        "normalize_attention": pa.bool_(),
        "model": pa.string(),
        "objective": pa.string(),
        "head_dim": pa.int64(),
        "heads": pa.int64(),
    }
    config_fields = [*FIELDS, *(c for c in MODEL_COLUMNS if c in config)]
    columns = [pa.field(f, types.get(f, pa.float64())) for f in config_fields]
    steps = ("escape_step", "symmetry_break_step", "learning_step", "diverged_step")
    summaries = [
        pa.field(c, pa.int64() if c in steps else pa.bool_() if c == "signal_zero" else pa.float64())
        for c in SUMMARY_COLUMNS
    ]
    versions = [pa.field(f"version_{v}", pa.string()) for v in VERSIONED]
    timing = [
        pa.field("pack", pa.string()),
        pa.field("pack_runs", pa.int64()),
        pa.field("pack_wall_s", pa.float64()),
    ]
    return pa.schema([pa.field("config_hash", pa.string()), *columns, *summaries, *versions, *timing])


#: Columns of ``timing.parquet`` besides ``config_hash``; every other column goes to ``results.parquet``.
TIMING_COLUMNS = ("pack", "pack_runs", "pack_wall_s")


def _parquet_bytes(table) -> bytes:
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {f"version_{name}": version(name) for name in VERSIONED}


def run_pack(
    pack_id: str, configs: Sequence[dict], hashes: Sequence[str], out: str, record_every: int, metrics: bool
) -> tuple[str, int]:
    """Train one pack with the engine ``rwtoolkit.engines.select`` picks and write its rows atomically to ``chunks/``.

    The paper model's runs train together on the batched engine, the runs of a model named in the spec one
    by one on the generic engine (its tape gradient); both return ``rwtoolkit.engines.numeric.TrainResult``
    and ``_pack_tables`` writes them. Runs on a Dask worker, one torch thread (the same summation order on
    every machine).
    """
    import torch

    from rwtoolkit.engines import select
    from rwtoolkit.io import write_bytes_atomic

    torch.set_num_threads(1)
    start = time.perf_counter()
    named = "model" in configs[0]  # a model named in the spec trains with its tape gradient
    engine = select(
        configs[0].get("model", DEFAULT_MODEL),
        "torch",
        "zero" if all(c["init"] == "zero" for c in configs) else "gaussian",
        many=True,
        specialise=not named,
    )
    results = engine.load()([_run(c, record_every) for c in configs], trace=True)
    wall = time.perf_counter() - start
    rows, long = _pack_tables(configs, hashes, results, pack_id, wall, metrics)
    if long is not None:
        write_bytes_atomic(_parquet_bytes(long), Path(out) / "metrics" / f"{pack_id}.parquet")
    write_bytes_atomic(_parquet_bytes(rows), Path(out) / "chunks" / f"{pack_id}.parquet")
    return pack_id, rows.num_rows


def _run(c: dict, record_every: int):
    """The (task, ModelConfig, TrainConfig) of a spec run (its fields are named as in the two configs);
    loss, accuracy and attention recorded every ``record_every`` steps and at the last."""
    from dataclasses import fields

    from rwtoolkit.engines.numeric import ModelConfig, TrainConfig
    from rwtoolkit.models import get_model
    from rwtoolkit.tasks import CircleWalk

    registered = get_model(c["model"], d=c["head_dim"], H=c.get("heads")) if "model" in c else None
    model = ModelConfig(
        **{f.name: c[f.name] for f in fields(ModelConfig) if f.name in c}, registered=registered
    )
    recorded = tuple(range(0, c["steps"] + 1, record_every))
    cfg = TrainConfig(
        **{f.name: c[f.name] for f in fields(TrainConfig) if f.name in c},
        population=True,
        threads=1,
        record_steps=recorded,
    )
    return CircleWalk(c["K"], c["N"], c["p"]), model, cfg


def _pack_tables(configs, hashes, results, pack_id: str, wall: float, metrics: bool):
    """The rows of a pack (config, summaries, versions, timing) and, with ``metrics``, its per-step table.

    Per run: loss, accuracy and parent attention at the recorded steps (NaN between), V's ones and
    circulant residuals at every step where the engine measured them (``TrainResult.series``), the final
    accuracy (``TrainResult.final_accuracy``) and ‖V/‖V‖ - Πᵀ/‖Πᵀ‖‖_F of a K×K V (null without one, or
    when V = 0). A diverged run has its step and null trajectory summaries.
    """
    import numpy as np
    import pyarrow as pa

    from rwtoolkit.analyses.sweep._summaries import run_summaries
    from rwtoolkit.engines.numeric import BATCHED_HISTORY_KEYS, v_direction_error
    from rwtoolkit.tasks import CircleWalk

    T = configs[0]["steps"]
    versions = _versions()
    history = {key: np.stack([r.series(key, T) for r in results]) for key in BATCHED_HISTORY_KEYS}
    rows = []
    for b, (c, h, result) in enumerate(zip(configs, hashes, results, strict=True)):
        final = {}
        if result.diverged is None:
            V = np.asarray(result.final.get("V", ()), dtype=float)
            final = {"test_accuracy": result.final_accuracy, "v_direction_error": None}
            if V.shape == (c["K"], c["K"]):  # a model with a value matrix V (K×K)
                Pi = CircleWalk(c["K"], c["N"], c["p"]).transition_matrix_float()
                final["v_direction_error"] = v_direction_error(V, Pi)
        step = None if result.diverged is None else result.diverged.step
        summary = run_summaries(c, {k: v[b] for k, v in history.items()}, final, step)
        rows.append(
            {
                "config_hash": h,
                **c,
                **summary,
                **versions,
                "pack": pack_id,
                "pack_runs": len(configs),
                "pack_wall_s": wall,
            }
        )
    table = pa.Table.from_pylist(rows, schema=_schema(configs[0]))
    if not metrics:
        return table, None
    long = {
        "config_hash": np.repeat(np.array(list(hashes), dtype=object), T + 1),
        "step": np.tile(np.arange(T + 1), len(hashes)),
    }
    for key, values in history.items():
        long[key] = pa.array(values.reshape(-1), mask=np.isnan(values.reshape(-1)))
    return table, pa.table(long)


def finished_hashes(out: str | os.PathLike) -> set[str]:
    """Config hashes with a row in ``out/chunks/`` (every chunk file is complete: it is written atomically)."""
    import pyarrow.parquet as pq

    done: set[str] = set()
    for path in sorted((Path(out) / "chunks").glob("*.parquet")):
        done.update(pq.read_table(path, columns=["config_hash"]).column("config_hash").to_pylist())
    return done


def assemble(spec: Spec, out: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``results.parquet`` and ``timing.parquet``: each run of ``spec`` once, in spec order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rwtoolkit.io import write_bytes_atomic

    paths = sorted((Path(out) / "chunks").glob("*.parquet"))
    schema = _schema(spec.runs[0])
    table = pa.concat_tables([pq.read_table(p, schema=schema) for p in paths])
    position = {h: i for i, h in enumerate(spec.hashes)}
    first: dict[str, int] = {}
    for row, h in enumerate(table.column("config_hash").to_pylist()):
        if h in position and h not in first:
            first[h] = row
    missing = len(spec.hashes) - len(first)
    if missing:
        raise RuntimeError(f"{missing} runs of the spec have no row in {Path(out) / 'chunks'}")
    table = table.take(pa.array([first[h] for h in spec.hashes]))
    results = table.select([c for c in table.column_names if c not in TIMING_COLUMNS])
    timing = table.select(["config_hash", *TIMING_COLUMNS])
    return (
        write_bytes_atomic(_parquet_bytes(results), Path(out) / "results.parquet"),
        write_bytes_atomic(_parquet_bytes(timing), Path(out) / "timing.parquet"),
    )


def _walks(K: int, N: int, p: str) -> int:
    """The exact population's size: K·2^(N-1) walks, K at p ∈ {0, 1} (load_spec bounds both)."""
    return K if p in ("0", "1") else K * 2 ** (N - 1)


def _model_of(spec: Spec):
    from rwtoolkit.models import get_model

    return get_model(spec.model, d=spec.head_dim, H=spec.heads)


def pack_memory(spec: Spec) -> int:
    """Bytes of the largest pack at its peak, read from every size of its runs: K, N, the population (from
    p), M, steps, dtype, the pack size, ``metrics``, and the model's parameter shapes (its H and d).

    The paper model's pack: ``rwtoolkit.engines.numeric.batched_peak_bytes`` of its shape, plus the population's tokens
    (n·N), every run's P (M·N) and the histories ((steps + 1) per run, and the per-step metrics table).
    Another model's pack trains one run at a time: its largest run (``rwtoolkit.engines.numeric.model_memory_estimate``)
    plus V kept at every step, and the pack's histories.
    """
    from rwtoolkit.engines.numeric import batched_peak_bytes

    B = spec.pack_size
    largest = 0
    shapes = {(r["K"], r["N"], r["p"], r["M"], r["steps"], r["dtype"]) for r in spec.runs}
    for K, N, p, M, steps, dtype in shapes:
        n = _walks(K, N, p)
        histories = 8 * B * (steps + 1) * (5 + (7 if spec.metrics else 0))
        if spec.model != DEFAULT_MODEL:
            from rwtoolkit.engines.numeric import model_memory_estimate
            from rwtoolkit.tasks import CircleWalk

            kept_v = 8 * (steps + 1) * K * K  # V at every step, for its residuals
            run = model_memory_estimate(CircleWalk(K, N, p), _model_of(spec), M, steps, dtype)
            largest = max(largest, run + kept_v + histories)
        else:
            population = 8 * n * (N + 2)  # tokens, labels and probabilities
            largest = max(largest, batched_peak_bytes(K, n, B) + population + 8 * B * M * N + histories)
    return largest


#: The cost model of ``estimate_sweep`` (measured on the 2-core development machine with one torch thread:
#: packs of 16 runs, K, N from (3, 8) to (4, 12), 50 steps; key_query, multi_head, tied_embedding and two_layer
#: at K, N = (3, 6), (4, 8), 20 steps): seconds per step of a run of the paper's model (batched engine)
#: are ``BATCHED_STEP_S + BATCHED_ELEMENT_S·n·N`` for n walks of N positions; of another model
#: ``GENERIC_STEP_S·N + GENERIC_OP_S·3·n·N·D·(1 + parameters/D)`` (the multiply-adds of
#: ``rwtoolkit.engines.exact.model_estimate``, D = K + M).
BATCHED_STEP_S, BATCHED_ELEMENT_S = 2.5e-4, 6e-9
GENERIC_STEP_S, GENERIC_OP_S = 1e-3, 1e-9
#: Seconds of the exact signal summaries of one (K, N, p) (``signal_summary``: 0.02-0.07 s measured for
#: K = 3, 4 and N = 4 … 12, once per worker).
SIGNAL_S = 0.1
#: Bytes of a finished pack on disk besides its rows (Parquet's schema and footer), of a run's row in
#: ``chunks/``, ``results.parquet`` and ``timing.parquet`` together, and of one step of the per-step metrics.
PACK_FILE_BYTES, ROW_BYTES, METRIC_STEP_BYTES = 16_384, 1_024, 64


@dataclass(frozen=True)
class SweepEstimate:
    """What a sweep will cost before it starts: compute time (seconds on one core, all runs to do),
    memory of the largest pack, and bytes written to DIR."""

    runs: int
    core_seconds: float
    pack_memory: int
    output_bytes: int

    def describe(self) -> str:
        from rwtoolkit.io import format_bytes

        return (
            f"{self.runs} runs: ~{_duration(self.core_seconds)} of compute on one core, "
            f"~{format_bytes(self.pack_memory)} per pack, ~{format_bytes(self.output_bytes)} written"
        )


def _duration(seconds: float) -> str:
    """``42 s``, ``3.5 min``, ``2.1 h`` (core time).

    >>> _duration(42), _duration(210), _duration(7560)
    ('42 s', '3.5 min', '2.1 h')
    """
    if seconds < 120:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.2g} min"
    return f"{seconds / 3600:.3g} h"


def estimate_sweep(spec: Spec, done: set[str] | frozenset[str] = frozenset()) -> SweepEstimate:
    """Time, memory and output size of the runs of ``spec`` not in ``done`` (config hashes), by arithmetic
    on every size of every run (K, N, the population from p, M, steps, the pack size, ``metrics``, the
    model's parameter shapes with its H and d): nothing is built.

    >>> from rwtoolkit.analyses.sweep import load_spec
    >>> small = estimate_sweep(load_spec({"task": "circle", "fixed": {"N": 4, "steps": 10}}))
    >>> large = estimate_sweep(load_spec({"task": "circle", "fixed": {"N": 12, "steps": 10}}))
    >>> small.runs, small.core_seconds < large.core_seconds, small.output_bytes > 0
    (1, True, True)
    """
    model = _model_of(spec) if spec.model != DEFAULT_MODEL else None
    seconds, runs, steps_written = 0.0, 0, 0
    signals: set[tuple[int, int, str]] = set()
    for run, h in zip(spec.runs, spec.hashes, strict=True):
        if h in done:
            continue
        runs += 1
        signals.add((run["K"], run["N"], run["p"]))
        K, N, M, steps = run["K"], run["N"], run["M"], run["steps"]
        n = _walks(K, N, run["p"])
        if model is None:
            per_step = BATCHED_STEP_S + BATCHED_ELEMENT_S * n * N
        else:
            from rwtoolkit.models import Sizes

            D = K + M
            parameters = model.parameter_count(Sizes(K=K, M=M, N=N))
            per_step = GENERIC_STEP_S * N + GENERIC_OP_S * 3 * n * N * D * (1 + parameters / D)
        seconds += per_step * (steps + 1)
        steps_written += steps + 1
    seconds += SIGNAL_S * len(signals)
    packs = -(-runs // spec.pack_size)
    output = packs * PACK_FILE_BYTES * (2 if spec.metrics else 1) + runs * ROW_BYTES
    if spec.metrics:
        output += METRIC_STEP_BYTES * steps_written
    return SweepEstimate(runs, seconds, pack_memory(spec), output)


def run_sweep(
    spec: Spec,
    out: str | os.PathLike,
    scheduler: str | None = None,
    workers: int | None = None,
    memory_limit: str | int = "auto",
    max_tasks: int | None = None,
    progress: bool = True,
    on_pack_done: Callable[[str], None] | None = None,
    client=None,
) -> SweepOutcome:
    """Compute the missing runs of ``spec`` into ``out`` on Dask and assemble the tables.

    ``client``: an existing ``distributed.Client``; else ``scheduler`` (an address such as
    tcp://host:8786) or a new LocalCluster with ``workers`` processes (default: the CPU count), one
    thread each, ``memory_limit`` per worker. At most ``max_tasks`` packs (default: twice the worker
    threads) are submitted at once. ``on_pack_done(pack_id)`` is called as each pack finishes.
    """
    from rwtoolkit.io import write_json_atomic

    out = Path(out)
    done = finished_hashes(out)
    packs = [p for p in plan_packs(spec) if not all(spec.hashes[i] in done for i in p.indices)]
    skipped = sum(1 for h in spec.hashes if h in done)
    todo = sum(len([i for i in p.indices if spec.hashes[i] not in done]) for p in packs)
    print(
        f"rw sweep: {len(spec.runs)} runs, {skipped} finished before, {todo} to compute in {len(packs)} packs"
    )
    if packs:
        _compute(
            spec,
            out,
            packs,
            done,
            scheduler,
            workers,
            memory_limit,
            max_tasks,
            progress,
            on_pack_done,
            client,
        )
    else:  # nothing to compute: the spec is written as after a computed sweep
        write_json_atomic(spec.source, out / "spec.json")
    results, timing = assemble(spec, out)
    return SweepOutcome(len(spec.runs), skipped, todo, results, timing)


def _worker_environ() -> dict:
    """Dask's environment for new worker processes without ``MALLOC_TRIM_THRESHOLD_``.

    Dask sets it to 64 KiB so that workers hand freed memory back to the system. Setting it also fixes
    glibc's mmap threshold at 128 KiB, so every large temporary of the batched engine is a fresh mmap
    whose pages fault in again: a pack of 32 runs at K = 6, N = 13 took 23 s instead of 8.5 s. A pack's
    memory is bounded (``pack_memory``) and freed when it ends, so the workers keep glibc's defaults,
    as a plain process has. The single-thread settings (OMP_NUM_THREADS = 1, …) stay.
    """
    import dask
    import dask.distributed  # noqa: F401  (loads distributed's configuration defaults)

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    return environ


def _compute(
    spec, out, packs, done, scheduler, workers, memory_limit, max_tasks, progress, on_pack_done, client
):
    import dask
    from dask.distributed import Client, LocalCluster, as_completed
    from tqdm import tqdm

    from rwtoolkit.io import write_json_atomic

    cluster = None
    own_client = client is None
    if client is None:
        if scheduler is not None:
            client = Client(scheduler)
        else:
            with dask.config.set({"distributed.nanny.pre-spawn-environ": _worker_environ()}):
                cluster = LocalCluster(
                    n_workers=workers or os.cpu_count() or 1,
                    threads_per_worker=1,
                    processes=True,
                    memory_limit=memory_limit,
                    dashboard_address=":0",
                )
            client = Client(cluster)
    write_json_atomic(
        spec.source, out / "spec.json"
    )  # once connected: an unreachable scheduler leaves nothing
    try:
        print(f"rw sweep: Dask dashboard at {client.dashboard_link}", flush=True)
        cap = max_tasks or 2 * max(1, sum(client.nthreads().values()))
        bar = tqdm(
            total=sum(len(p.indices) for p in packs),
            disable=not (progress and sys.stderr.isatty()),
            desc="rw sweep",
            unit="run",
        )
        queue = list(packs)
        size = {p.id: len(p.indices) for p in packs}

        def submit(pack: Pack):
            indices = [i for i in pack.indices if spec.hashes[i] not in done]
            return client.submit(
                run_pack,
                pack.id,
                [spec.runs[i] for i in indices],
                [spec.hashes[i] for i in indices],
                str(out),
                spec.record_every,
                spec.metrics,
                key=f"rw-sweep-pack-{pack.id}",
                pure=False,
            )

        futures = [submit(queue.pop(0)) for _ in range(min(cap, len(queue)))]
        running = as_completed(futures)
        try:
            for future in running:
                pack_id, _ = future.result()
                bar.update(size[pack_id])
                if on_pack_done is not None:
                    on_pack_done(pack_id)
                if queue:
                    futures.append(submit(queue.pop(0)))
                    running.add(futures[-1])
        except BaseException:
            client.cancel(futures)  # an interrupted sweep leaves only finished packs; a rerun does the rest
            raise
        finally:
            bar.close()
    finally:
        if own_client:
            client.close()
        if cluster is not None:
            cluster.close()
