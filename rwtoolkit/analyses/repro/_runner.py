"""Train the runs of the figures, in parallel worker processes, and keep each outcome as plain data.

An outcome is the JSON-able record of one (RunSpec, Choices): the scalar metric series of every step,
the final parameters and the snapshots, or, when rwtoolkit.engines.numeric refused or the run diverged, the error
message (a diverging option is an outcome to report, not a crash).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from rwtoolkit.analyses.repro._experiments import Choices, RunSpec
from rwtoolkit.engines.numeric import HISTORY_KEYS, train
from rwtoolkit.tasks import CircleWalk, FiniteTask

#: The per-step scalars kept as series (the per-step attention profile is kept only in snapshots).
SERIES_KEYS = tuple(k for k in HISTORY_KEYS if k != "attention_profile")
#: Seed of the probe walks whose X·S Fig 13 shows.
PROBE_SEED = 20251129


def probe(model: Any, task: CircleWalk | FiniteTask, n: int = 3) -> dict:
    """X·S and S of the trained model on ``n`` fixed walks (seed PROBE_SEED), for Fig 13."""
    tokens, _ = task.sample(n, seed=PROBE_SEED)
    with torch.no_grad():
        _, S, XS = model.evaluate(torch.as_tensor(tokens, dtype=torch.int64))
    return {
        "tokens": tokens.tolist(),
        "parent": tokens[:, -1].tolist(),
        "attended_token": XS.double().tolist(),
        "attention": S.double().tolist(),
    }


def column_residual(V: np.ndarray) -> float:
    """‖V - a·1ᵀ‖_F/‖V‖_F with a = the row means: V's distance from the form V = a·1ᵀ (0 if V = 0).

    For p = 1 and N = rK+1 every GD step keeps V = a·1ᵀ exactly, whatever the training sample
    (every walk's X·S is a multiple of 1), so this is 0 in exact arithmetic.

    >>> column_residual(np.array([[1.0, 1.0], [3.0, 3.0]])), round(column_residual(np.eye(2)), 4)
    (0.0, 0.7071)
    """
    nv = np.linalg.norm(V)
    return 0.0 if nv == 0 else float(np.linalg.norm(V - V.mean(axis=1, keepdims=True)) / nv)


def run_one(job: tuple[RunSpec, Choices]) -> dict:
    """Train one run under one option; returns its outcome record (see module doc)."""
    spec, choices = job
    task, model, cfg = spec.build(choices)
    if spec.v_every_step:  # V at every step, for the column residual series; only spec.snapshots are kept
        cfg = replace(cfg, snapshots=tuple(range(spec.steps + 1)))
    try:
        result = train(task, model, cfg, progress=False)
    except (
        ValueError
    ) as err:  # rwtoolkit.engines.numeric's refusal: diverged, or the log-loss left its domain
        return {"ok": False, "error": str(err), "run": spec.name, "choices": choices.key()}
    series = {k: [h[k] for h in result.history] for k in SERIES_KEYS}
    snapshots = result.snapshots
    if spec.v_every_step:
        series["v_column_residual"] = [
            column_residual(np.array(snapshots[t]["V"])) for t in range(spec.steps + 1)
        ]
        snapshots = {t: snapshots[t] for t in spec.snapshots}
    record = {
        "ok": True,
        "error": None,
        "run": spec.name,
        "choices": choices.key(),
        "config": result.config,
        "series": series,
        "final": result.final,
        "snapshots": {str(k): v for k, v in sorted(snapshots.items())},
    }
    if spec.probe:
        record["probe"] = probe(result.net, task)
    return record


def default_jobs() -> int:
    """Worker processes: one per CPU core, at most 2 (the target machine has 2 cores)."""
    return max(1, min(2, os.cpu_count() or 1))


class Runner:
    """Trains jobs once per invocation (figures share runs: Figs 11-13 reuse Fig 6) with ``jobs`` workers."""

    def __init__(self, jobs: int = 1) -> None:
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"jobs={jobs!r} must be an integer >= 1")
        self.jobs = jobs
        self.cache: dict[tuple[RunSpec, Choices], dict] = {}
        self._pool: ProcessPoolExecutor | None = None

    def run(
        self,
        jobs: Iterable[tuple[RunSpec, Choices]],
        on_done: Callable[[tuple[RunSpec, Choices]], None] | None = None,
    ) -> dict[tuple[RunSpec, Choices], dict]:
        """Outcomes of ``jobs`` (cached ones reused); ``on_done(job)`` is called as each one finishes."""
        jobs = list(dict.fromkeys(jobs))
        todo = [j for j in jobs if j not in self.cache]
        for j in jobs:
            if j in self.cache and on_done:
                on_done(j)
        if self.jobs == 1 or len(todo) <= 1:
            for j in todo:
                self.cache[j] = run_one(j)
                if on_done:
                    on_done(j)
        else:
            pool = self._get_pool()
            futures = {pool.submit(run_one, j): j for j in todo}
            for fut in as_completed(futures):  # completion order only drives the bar; results are per job
                self.cache[futures[fut]] = fut.result()
                if on_done:
                    on_done(futures[fut])
        return {j: self.cache[j] for j in jobs}

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn, not fork: torch's thread pools do not survive a fork reliably
            self._pool = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn"))
        return self._pool

    def close(self) -> None:
        """Shut the worker processes down."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
