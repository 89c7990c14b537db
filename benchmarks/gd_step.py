"""One GD step at paper scale (K=6, N=97, M=1000, 1000 walks): fast path vs autograd on the full W.

Run by hand (`make bench` or `.venv/bin/python benchmarks/gd_step.py`); prints a Markdown table of
median wall-clock times over repeats, the ratio, and the time of the whole 50-step Fig 4 run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch

from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, positional_embeddings, train
from rwtoolkit.engines.numeric._losses import SampleLoss
from rwtoolkit.engines.numeric._model import FastModel, GenericModel, initial_parameters
from rwtoolkit.models import get_model
from rwtoolkit.tasks import CircleWalk

K, N, M, WALKS = 6, 97, 1000, 1000


def _fast(P: torch.Tensor, V0: torch.Tensor, W0: torch.Tensor) -> FastModel:
    return FastModel(P, K, False, V0, W0, None)


def _full_W(P: torch.Tensor, V0: torch.Tensor, W0: torch.Tensor) -> GenericModel:
    """The paper's model of record with its full W (``train(fast=False)``)."""
    return GenericModel(get_model("one_layer"), P, K, {"V": V0, "W": W0})


def _median_step_seconds(build, dtype: torch.dtype, repeats: int) -> float:
    """Median time of loss_and_grad + step (one full-batch GD step) from a Gaussian init."""
    task = CircleWalk(K, N, "1/2")
    tokens, labels = task.sample(WALKS, seed=0)
    tokens = torch.as_tensor(tokens)
    labels = torch.as_tensor(labels)
    weights = torch.full((WALKS,), 1.0 / WALKS, dtype=dtype)
    P = torch.as_tensor(positional_embeddings("sine", M, N), dtype=dtype)
    V0, W0, _ = initial_parameters(K, M, None, "gaussian", 0.01, np.random.default_rng(0))
    net = build(P, torch.as_tensor(V0, dtype=dtype), torch.as_tensor(W0, dtype=dtype))
    loss = SampleLoss("log", 0.1)
    net.loss_and_grad(tokens, labels, weights, loss, 0)  # warm-up
    times = []
    for t in range(repeats):
        start = time.perf_counter()
        net.loss_and_grad(tokens, labels, weights, loss, t)
        net.step(1e-3)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _fig4_seconds(repeats: int, threads: int) -> float:
    """Median time of the whole 50-step Fig 4 run through train() (sampling, init, metrics included)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        train(
            CircleWalk(K, N, "1/2"),
            ModelConfig(K=K, N=N, M=M),
            TrainConfig(steps=50, threads=threads),
            progress=False,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fast-repeats", type=int, default=50)
    parser.add_argument("--reference-repeats", type=int, default=5)
    parser.add_argument("--fig4-repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts to time")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs; K={K} N={N} M={M} walks={WALKS}")
    print("| dtype | torch threads | fast step (ms) | full-W autograd step (ms) | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for threads in args.threads:
        torch.set_num_threads(threads)
        for name, dtype in (("float64", torch.float64), ("float32", torch.float32)):
            fast = _median_step_seconds(_fast, dtype, args.fast_repeats)
            ref = _median_step_seconds(_full_W, dtype, args.reference_repeats)
            print(f"| {name} | {threads} | {fast * 1e3:.2f} | {ref * 1e3:.0f} | {ref / fast:.0f}x |")
    for threads in args.threads:
        seconds = _fig4_seconds(args.fig4_repeats, threads)
        print(
            f"50-step Fig 4 run (train(), float64, metrics every step, {threads} thread(s)): {seconds:.2f} s"
        )


if __name__ == "__main__":
    main()
