"""``rw sweep SPEC --out DIR`` runs a sweep on Dask; ``rw sweep plot DIR`` draws its phase diagrams (docs/sweep.md)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from rwtoolkit.io import check_output_dir

#: PNG files ``rw sweep plot`` may write (each when the table varies the fields it needs).
PLOT_FILES = ("phase_accuracy.png", "escape_sigma_mu.png", "learning_time.png")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``rw sweep SPEC --out DIR [engine options]`` or ``rw sweep plot DIR [--out PLOTS]``."""
    parser.usage = "rw sweep SPEC --out DIR [--scheduler ADDRESS | --workers N] ...\n       rw sweep plot DIR [--out PLOTS]"
    parser.add_argument(
        "spec",
        metavar="SPEC",
        help="sweep spec (JSON or YAML, every number read exactly as written; schema rwtoolkit/schemas/sweep.schema.json), "
        "or the word 'plot' followed by DIR",
    )
    parser.add_argument("dir", nargs="?", metavar="DIR", help="with 'plot': the folder of a finished sweep")
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="run: folder for results.parquet, timing.parquet and chunks/ (created if missing; a rerun "
        "computes only the missing runs); plot: folder for the PNGs (default DIR/plots)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="address of a running Dask scheduler (e.g. tcp://10.0.0.1:8786); default: a LocalCluster here",
    )
    parser.add_argument(
        "--workers", help="LocalCluster worker processes, one thread each (default: the number of CPUs)"
    )
    parser.add_argument(
        "--memory-limit",
        default="auto",
        help="LocalCluster memory limit per worker, e.g. 4GiB (default auto: system memory / workers)",
    )
    import rwtoolkit.models

    parser.add_argument(
        "--model",
        default=None,
        metavar="MODEL",
        help="the model of every run, replacing the spec's model field (default: the spec's, else "
        f"{rwtoolkit.models.DEFAULT_MODEL}, whose runs use the batched engine; another model trains each run with its "
        f"tape gradient): a registered name, or your own as {rwtoolkit.models.TARGET_FORMS} "
        f"(docs/guide/models.md#your-own-model). Registered: {rwtoolkit.models.model_help()}",
    )
    parser.add_argument(
        "--head-dim",
        default=None,
        dest="head_dim",
        metavar="D",
        help="head dimension d of a model that has one (key_query), integer >= 1, replacing the spec's head_dim",
    )
    parser.add_argument(
        "--heads",
        default=None,
        metavar="H",
        help="number of heads H of a model that has several (multi_head), integer >= 1, replacing the spec's heads",
    )
    parser.add_argument(
        "--max-core-hours",
        default="100",
        dest="max_core_hours",
        metavar="HOURS",
        help="refuse up front when the runs still to compute are estimated at more than this many hours of "
        "compute on one core (default 100; the estimate is printed before the cluster starts)",
    )
    parser.add_argument(
        "--max-tasks",
        help="packs submitted to Dask at once (default: twice the worker threads); bounds scheduler memory",
    )


def _positive_int(text: str | None, name: str) -> int | None:
    if text is None:
        return None
    from rwtoolkit.cli._task_args import parse_int

    return parse_int(text, name, 1)


def _positive_number(text: str, name: str) -> float:
    """``--name`` as a number > 0, or a one-line ValueError."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"--{name}={text!r} is not a number > 0: give e.g. 100")
    return value


def _memory_limit(text: str) -> str | int:
    """``auto`` or a size such as 4GiB / 500MB, as bytes; a one-line ValueError otherwise."""
    if text == "auto":
        return text
    from dask.utils import parse_bytes

    try:
        value = parse_bytes(text)
    except (ValueError, TypeError):
        value = 0
    if value <= 0:
        raise ValueError(f"--memory-limit={text!r} is not a size: give e.g. 4GiB or 500MB, or auto")
    if value < MIN_WORKER_MEMORY:
        raise ValueError(
            f"--memory-limit={text!r} is below 256MiB, less than a worker holds (its interpreter, numpy and "
            "torch take about 300MB): give e.g. 4GiB, or auto"
        )
    return value


#: The least --memory-limit a worker runs in (its interpreter with numpy and torch takes about 300 MB).
MIN_WORKER_MEMORY = 256 * 2**20


def run(args: argparse.Namespace) -> int:
    """Check paths and options, validate the spec (one line naming the field), then run or plot."""
    if args.spec == "plot":
        return _plot(args)
    if args.dir is not None:
        raise ValueError(
            f"unexpected argument {args.dir!r}: use rw sweep SPEC --out DIR (or rw sweep plot DIR)"
        )
    if args.out is None:
        raise ValueError("--out DIR is required: the folder for the results of the sweep")
    check_output_dir(args.out, "--out", files=("results.parquet", "timing.parquet", "spec.json"))
    workers = _positive_int(args.workers, "workers")
    max_tasks = _positive_int(args.max_tasks, "max-tasks")
    if args.scheduler is not None and workers is not None:
        raise ValueError("--workers sizes a LocalCluster; with --scheduler the cluster has its own workers")
    memory_limit = _memory_limit(args.memory_limit)
    max_hours = _positive_number(args.max_core_hours, "max-core-hours")
    from rwtoolkit.analyses.sweep import estimate_sweep, finished_hashes, load_spec, run_sweep
    from rwtoolkit.io import check_disk, check_memory, format_bytes

    head_dim = _positive_int(args.head_dim, "head-dim")
    heads = _positive_int(args.heads, "heads")
    spec = load_spec(args.spec, model=args.model, head_dim=head_dim, heads=heads)
    done = finished_hashes(args.out) if Path(args.out).is_dir() else set()
    estimate = estimate_sweep(spec, done)
    alternative = "lower pack_size in the spec or --workers"
    if estimate.core_seconds > max_hours * 3600:
        raise ValueError(
            f"the sweep is estimated at {estimate.describe()}: above --max-core-hours {args.max_core_hours}; use fewer "
            "or smaller runs (N, steps, M), or raise --max-core-hours"
        )
    check_disk(
        estimate.output_bytes,
        args.out,
        f"--out {args.out}: the sweep ({estimate.describe()})",
        "free some space, use another --out, or leave metrics out of the spec",
    )
    if args.scheduler is None:
        import os

        share = workers or os.cpu_count() or 1
        check_memory(
            share * estimate.pack_memory,
            f"rw sweep with {share} workers (largest pack: {format_bytes(estimate.pack_memory)})",
            alternative,
        )
    print(f"rw sweep: estimated {estimate.describe()}", flush=True)
    try:
        outcome = run_sweep(
            spec,
            args.out,
            scheduler=args.scheduler,
            workers=workers,
            memory_limit=memory_limit,
            max_tasks=max_tasks,
        )
    except KeyboardInterrupt:
        print(
            f"rw sweep: interrupted; the finished packs are kept in {Path(args.out) / 'chunks'}: "
            "run the same command again to compute only the rest"
        )
        return 130
    print(f"wrote {outcome.results} ({outcome.runs} runs) and {outcome.timing}")
    return 0


def _plot(args: argparse.Namespace) -> int:
    if args.dir is None:
        raise ValueError("rw sweep plot needs DIR, the folder of a finished sweep (rw sweep plot DIR)")
    results = Path(args.dir) / "results.parquet"
    if not results.is_file():
        raise ValueError(f"DIR {args.dir} has no results.parquet: run rw sweep SPEC --out {args.dir} first")
    out = args.out or str(Path(args.dir) / "plots")
    check_output_dir(out, "--out", files=PLOT_FILES)
    from rwtoolkit.analyses.sweep import plot_sweep

    written, skipped = plot_sweep(args.dir, out)
    for path in written:
        print(f"wrote {path}")
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    return 0
