"""Numeric training of the explored task from zero and from small Gaussian init (``rw explore --train``).

The runs are ``rwtoolkit.engines.numeric.train``; this module picks the configurations (one per initialisation) and
computes two exact reference accuracies the curves are read against: the Bayes accuracy
E[max_y P(y | X)] and the constant-prediction accuracy max_y P(y) (where a stuck model sits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train
from rwtoolkit.tasks import CircleWalk, FiniteTask, is_numeric


def reference_accuracies(task: CircleWalk | FiniteTask) -> tuple[sp.Expr, sp.Expr]:
    """(Bayes accuracy E[max_y P(y|X)], constant-prediction accuracy max_y P(y)), exact.

    >>> from rwtoolkit.tasks import qa_task1, qa_task2
    >>> reference_accuracies(qa_task1()), reference_accuracies(qa_task2())
    ((1, 1/2), (1, 1/2))
    """
    joint = task.population().joint_law()
    label_law = [sp.Add(*column) for column in zip(*joint.values())]
    values = [q for row in joint.values() for q in row] + label_law
    if not all(is_numeric(v) for v in values):
        raise ValueError("reference accuracies need numeric probabilities (substitute the parameters)")
    bayes = sp.Add(*(max(row) for row in joint.values()))
    return bayes, max(label_law)


@dataclass(frozen=True)
class TrainRun:
    """One numeric run: its label ("zero" or "gaussian sigma=0.01"), init, sigma, and per-step curves."""

    label: str
    init: str
    sigma: float | None
    test_accuracy: list[float]
    train_loss: list[float]
    attention_spread: list[float]


def train_configs(
    task: CircleWalk | FiniteTask, settings: dict[str, Any]
) -> list[tuple[str, str, float | None, ModelConfig, TrainConfig]]:
    """(label, init, sigma, ModelConfig, TrainConfig) of each run ``train_runs`` makes: zero init, then
    N(0, σ²) for each σ in ``settings["sigmas"]``. ``rw explore`` sizes them up front (memory).

    >>> from rwtoolkit.tasks import TRAIN_DEFAULTS, qa_task2
    >>> [(label, cfg.init) for label, _, _, _, cfg in train_configs(qa_task2(), TRAIN_DEFAULTS)]
    [('zero', 'zero'), ('gaussian sigma=0.01', 'gaussian'), ('gaussian sigma=0.0001', 'gaussian')]
    """
    if settings["M"] < task.N:
        raise ValueError(f"spec.train.M: M={settings['M']} is out of range: M must be >= N={task.N}")
    model = ModelConfig(K=task.K, N=task.N, M=int(settings["M"]))
    inits: list[tuple[str, str, float | None]] = [("zero", "zero", None)]
    inits += [(f"gaussian sigma={s:g}", "gaussian", float(s)) for s in settings["sigmas"]]
    configs = []
    for label, init, sigma in inits:
        cfg = TrainConfig(
            steps=int(settings["steps"]),
            eta=float(settings["eta"]),
            eps=float(settings["eps"]),
            init=init,
            sigma=sigma if sigma is not None else 0.01,
            seed=int(settings["seed"]),
            population=bool(settings["population"]),
            train_size=int(settings["train_size"]),
            test_size=int(settings["test_size"]),
            threads=1,  # small tensors: one thread is fastest, and avoids contention on shared cores
        )
        configs.append((label, init, sigma, model, cfg))
    return configs


def train_runs(
    task: CircleWalk | FiniteTask, settings: dict[str, Any], progress: bool = False
) -> list[TrainRun]:
    """Train from zero and from N(0, σ²) init for each σ in ``settings["sigmas"]`` (rwtoolkit.engines.numeric, float64).

    ``settings`` holds steps, M, eta, eps, sigmas, population, train_size, test_size, seed
    (``rwtoolkit.tasks.TRAIN_DEFAULTS`` gives the defaults).
    """
    runs = []
    for label, init, sigma, model, cfg in train_configs(task, settings):
        result = train(task, model, cfg, progress=progress)
        runs.append(
            TrainRun(
                label=label,
                init=init,
                sigma=sigma,
                test_accuracy=[float(h["test_accuracy"]) for h in result.history],
                train_loss=[float(h["train_loss"]) for h in result.history],
                attention_spread=[float(h["attention_spread"]) for h in result.history],
            )
        )
    return runs
