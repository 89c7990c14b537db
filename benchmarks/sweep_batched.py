"""1000 sweep runs (K=6, N=13, M=20, exact population, 200 steps): batched engine vs one train() per run.

Run by hand (`make bench` or `.venv/bin/python benchmarks/sweep_batched.py`). The 1000 runs are p in
{1/11, ..., 10/11} × 100 seeds of a Gaussian init (σ = 0.01), all of one shape, so they pack into
batches. Both sides run on one core (one torch thread); the sweep spreads packs over cores with no
shared state, so 2 cores give twice the runs/s of one (Dask's overhead per pack is milliseconds
against seconds of compute). By default both sides are timed on a sample and extrapolated, which the
output says: ``--pack`` runs of ``train_batched`` (one pack) and ``--train-sample`` ``train()`` calls;
``--full`` times all 1000 runs through ``rw sweep`` on a 2-worker LocalCluster instead.

``train()`` is timed twice: recording every step (what the per-run summaries need, since the escape
step reads ρ(t) at every t) and recording only the last step (its fastest use). The batched engine is
timed with accuracy and attention evaluated every step (``record_every`` 1) and every 10th.

On a machine shared with other jobs the load changes while the benchmark runs, so the four
measurements are interleaved: ``--rounds`` rounds, each timing every engine once, and each engine's
fastest round is reported (the one least slowed by other jobs); the output gives the load average
before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train, train_batched
from rwtoolkit.tasks import CircleWalk

K, N, M, STEPS, RUNS = 6, 13, 20, 200, 1000
PS = [f"{i}/11" for i in range(1, 11)]


def _run(i: int, record_steps=None) -> tuple[CircleWalk, ModelConfig, TrainConfig]:
    cfg = TrainConfig(
        steps=STEPS,
        population=True,
        init="gaussian",
        sigma=0.01,
        seed=i // len(PS),
        threads=1,
        record_steps=record_steps,
    )
    return CircleWalk(K, N, PS[i % len(PS)]), ModelConfig(K=K, N=N, M=M), cfg


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"


def _train_seconds(sample: int, record_steps) -> float:
    start = time.perf_counter()
    for i in range(sample):
        train(*_run(i, record_steps), progress=False)
    return (time.perf_counter() - start) / sample


def _batched_seconds(pack: int, record_every: int) -> float:
    runs = [_run(i, range(0, STEPS + 1, record_every)) for i in range(pack)]
    start = time.perf_counter()
    train_batched(runs)
    return (time.perf_counter() - start) / pack


def _full_sweep_seconds() -> float:
    from rwtoolkit.analyses.sweep import load_spec, run_sweep

    spec = load_spec(
        {
            "task": "circle",
            "fixed": {"K": K, "N": N, "M": M, "steps": STEPS, "init": "gaussian", "sigma": 0.01},
            "grid": {"seed": {"range": [0, RUNS // len(PS) - 1]}, "p": PS},
            "pack_size": 32,
        }
    )
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        run_sweep(spec, Path(out), workers=2, progress=False)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pack", type=int, default=32, help="runs of the timed batched pack (default 32)")
    parser.add_argument("--train-sample", type=int, default=2, help="train() calls timed (default 2)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds; each engine's fastest is kept (default 3)"
    )
    parser.add_argument(
        "--full", action="store_true", help="time all 1000 runs through rw sweep on 2 workers"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(
        f"torch {torch.__version__}, {os.cpu_count()} CPUs; K={K} N={N} M={M}, exact population, {STEPS} steps"
    )
    print(f"load average (1, 5, 15 min) before: {_load()}")
    timers = {
        "train(), every step recorded": (lambda: _train_seconds(args.train_sample, None), "train"),
        "train(), last step recorded": (lambda: _train_seconds(args.train_sample, [STEPS]), "train"),
        "train_batched, record_every 1": (lambda: _batched_seconds(args.pack, 1), "pack"),
        "train_batched, record_every 10": (lambda: _batched_seconds(args.pack, 10), "pack"),
    }
    best = {name: float("inf") for name in timers}
    for _ in range(args.rounds):
        for name, (timer, _kind) in timers.items():
            best[name] = min(best[name], timer())
    print(f"load average (1, 5, 15 min) after: {_load()}")
    sample = {"train": f"sample of {args.train_sample}", "pack": f"one pack of {args.pack}"}
    rows = [
        (name, best[name], f"{sample[kind]}, best of {args.rounds}") for name, (_, kind) in timers.items()
    ]
    base_all, base_last = best["train(), every step recorded"], best["train(), last step recorded"]
    print(
        "| engine | s per run (1 core) | runs/s per core | speed-up vs every-step train() | vs last-step train() | measured on |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for name, seconds, sample in rows:
        print(
            f"| {name} | {seconds:.3f} | {1 / seconds:.3g} | {base_all / seconds:.1f}x | "
            f"{base_last / seconds:.1f}x | {sample} |"
        )
    fastest = min(s for _, s, _ in rows[2:])
    print(
        f"\n{RUNS} runs on 2 cores (extrapolated from the samples): batched {RUNS * fastest / 2 / 60:.1f} min, "
        f"one train() per run {RUNS * base_all / 2 / 60:.0f} min (every step) / "
        f"{RUNS * base_last / 2 / 60:.0f} min (last step)."
    )
    core_hours = 1e6 * fastest / 3600
    print(
        f"10^6 such runs with the batched engine: {core_hours:.0f} core-hours, i.e. {core_hours / 24:.1f} "
        f"cores for a day, or {core_hours / (64 * 8):.1f} h on 8 nodes of 64 cores (rw sweep --scheduler)."
    )
    if args.full:
        seconds = _full_sweep_seconds()
        print(
            f"\nrw sweep, all {RUNS} runs, 2-worker LocalCluster (measured): {seconds:.0f} s = {RUNS / seconds:.2f} runs/s"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
