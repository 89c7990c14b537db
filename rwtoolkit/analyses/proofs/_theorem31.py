"""Shared exact-population float64 runs for the Theorem 3.1 and Lemma C.5 evidence (cached per mode).

The runs are ``rwtoolkit.engines.numeric.train`` on the exact population from zero init with the rotation reduction
(``rotate=True``) and metrics only at the recorded steps; the metrics the certificates need beyond
rwtoolkit.engines.numeric's history (directions against √Πᵀ, log10(1 − parent attention) in log space) are computed
here from the model at each recorded step through ``train``'s ``observe`` hook.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import torch

from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train
from rwtoolkit.tasks import CircleWalk

#: μ = M/2 of the sine embeddings with the paper's experimental M = 1000.
PAPER_MU = 500.0


def settings(quick: bool) -> dict:
    """The declared grid of runs (K, p, N, T) for Theorem 3.1."""
    if quick:
        return {"Ks": (5,), "ps": ("1/2", "7/10"), "N": 8, "T": 400, "mu": PAPER_MU}
    return {"Ks": (5, 6, 7), "ps": ("1/2", "3/10", "7/10", "9/10"), "N": 10, "T": 3000, "mu": PAPER_MU}


def record_steps(T: int) -> list[int]:
    """Every step up to 100, then about 12 log-spaced steps per decade up to T."""
    dense = list(range(min(T, 100) + 1))
    sparse = np.unique(
        np.round(np.logspace(2, np.log10(T), 1 + int(12 * np.log10(max(T, 100) / 100))))
    ).astype(int)
    return sorted(set(dense) | {int(s) for s in sparse if s <= T} | {T})


@dataclass
class Run:
    """Metrics at the recorded ``steps`` (lists indexed like ``steps``) and the final parameters."""

    K: int
    N: int
    p: float
    mu: float
    steps: list[int] = field(default_factory=list)
    accuracy: list[float] = field(
        default_factory=list
    )  # rwtoolkit.engines.numeric's exact population accuracy
    log10_one_minus_parent: list[float] = field(default_factory=list)  # log10(E[1 − S_{N−1}])
    v_err_pi: list[float] = field(default_factory=list)  # ‖V/‖V‖_F − Πᵀ/‖Πᵀ‖_F‖_F (nan while V = 0)
    v_err_sqrt: list[float] = field(default_factory=list)  # same against √Πᵀ (entrywise)
    f_err_pi: list[float] = field(default_factory=list)  # E‖f/‖f‖ − Πᵀx_{N−1}/‖·‖‖
    f_err_sqrt: list[float] = field(default_factory=list)  # same against √(Πᵀx_{N−1})
    V: np.ndarray | None = None  # V(T)
    q: np.ndarray | None = None  # positional logits at T: logit_j = w_tok[s_j] + q_j (q = μc)


def _direction_error(a: np.ndarray, b: np.ndarray, axis=None) -> np.ndarray:
    """‖a/‖a‖ − b/‖b‖‖ (along ``axis``, or Frobenius for whole matrices)."""
    na = np.linalg.norm(a, axis=axis, keepdims=axis is not None)
    nb = np.linalg.norm(b, axis=axis, keepdims=axis is not None)
    return np.linalg.norm(a / na - b / nb, axis=axis)


def _lse(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1)
    return m + np.log(np.exp(x - m[:, None]).sum(axis=1))


def run_gd(
    K: int,
    N: int,
    p: str,
    steps: int,
    record: list[int],
    mu: float = 500.0,
    eta: float = 1.0,
    eps: float = 0.1,
) -> Run:
    """``rwtoolkit.engines.numeric.train`` from zero init on the exact population of CircleWalk(K, N, p), log-loss, float64.

    ``rotate=True`` (exact by the rotation symmetry) and metrics only at the ``record`` steps, on the
    full population; P enters only through PᵀP = μI, so one-hot embeddings scaled to μ stand for any P.

    >>> r = run_gd(5, 4, "7/10", 3, [0, 3], mu=2.0)
    >>> r.accuracy[0]  # zero init: all scores tie, the smallest label is predicted
    0.2
    """
    task = CircleWalk(K, N, p)
    pop = task.population()
    tokens = torch.as_tensor(pop.tokens, dtype=torch.int64)
    w = pop.float_probs()  # (n,) exact probabilities rounded to float64
    Pi = task.transition_matrix_float()
    target = Pi[pop.tokens[:, -1]]  # (n, K): f_OPT = Πᵀx_{N−1}

    def observe(t: int, net) -> dict[str, float]:
        with torch.no_grad():
            logits = net.logits(tokens).numpy()
            f = net.evaluate(tokens)[0].numpy()
        V = net.V.detach().numpy()
        # log(1 − S_parent) = lse(other logits) − lse(all logits): exact even when 1 − S_parent underflows
        lo = _lse(np.delete(logits, N - 2, axis=1)) - _lse(logits)
        top = lo.max()
        out = {"log10_one_minus_parent": float((top + np.log(w @ np.exp(lo - top))) / np.log(10))}
        if np.linalg.norm(V) > 0 and (np.linalg.norm(f, axis=1) > 0).all():
            out |= {
                "v_err_pi": float(_direction_error(V, Pi.T)),
                "v_err_sqrt": float(_direction_error(V, np.sqrt(Pi.T))),
                "f_err_pi": float(w @ _direction_error(f, target, axis=1)),
                "f_err_sqrt": float(w @ _direction_error(f, np.sqrt(target), axis=1)),
            }
        else:
            out |= dict.fromkeys(("v_err_pi", "v_err_sqrt", "f_err_pi", "f_err_sqrt"), float("nan"))
        return out

    result = train(
        task,
        ModelConfig(K=K, N=N, M=N, pos="onehot", mu=mu),
        TrainConfig(
            steps=steps, eta=eta, eps=eps, population=True, rotate=True, record_steps=record, threads=1
        ),
        progress=False,
        observe=observe,
    )
    out = Run(K, N, float(task.p), mu)
    for h in result.history:
        out.steps.append(h["step"])
        out.accuracy.append(h["test_accuracy"])
        for key, value in result.observations[h["step"]].items():
            getattr(out, key).append(value)
    out.V, out.q = np.array(result.final["V"]), result.net.q.detach().numpy().copy()
    return out


@lru_cache(maxsize=2)
def runs(quick: bool) -> dict[tuple[int, str], Run]:
    """GD from zero init (η = 1, ε = 1/10, log-loss, μ = 500) for every (K, p) of the grid."""
    cfg = settings(quick)
    return {
        (K, p): run_gd(K, cfg["N"], p, cfg["T"], record_steps(cfg["T"]), mu=cfg["mu"])
        for K in cfg["Ks"]
        for p in cfg["ps"]
    }


def tail_slope(steps: list[int], values: list[float], start: int) -> float:
    """Least-squares slope of log(value) against log(step) over steps ≥ start."""
    s, v = np.array(steps, float), np.array(values, float)
    keep = (s >= start) & np.isfinite(v) & (v > 0)
    return float(np.polyfit(np.log(s[keep]), np.log(v[keep]), 1)[0])


def plateau(K: int, p: str) -> tuple[float, float]:
    """(c_V, c_f): the direction distances between √Πᵀ and Πᵀ (Frobenius) and between √(Πᵀx) and Πᵀx.

    Both equal sqrt(2 − 2(p^{3/2} + (1−p)^{3/2}) / sqrt(p² + (1−p)²)) for K ≥ 3, and 0 at p = 1/2.
    """
    Pi = CircleWalk(K, 3, p).transition_matrix_float()
    c_v = float(_direction_error(np.sqrt(Pi.T), Pi.T))
    c_f = float(_direction_error(np.sqrt(Pi[0]), Pi[0]))
    return c_v, c_f


def closed_plateau(p: float) -> float:
    """sqrt(2 − 2(p^{3/2} + (1−p)^{3/2}) / sqrt(p² + (1−p)²))."""
    return math.sqrt(max(0.0, 2 - 2 * (p**1.5 + (1 - p) ** 1.5) / math.sqrt(p**2 + (1 - p) ** 2)))


def _linear_fit(x: list[int], y: list[float]) -> dict[str, float]:
    """Least-squares line y = a + b x with its R²."""
    b, a = np.polyfit(x, y, 1)
    pred = a + b * np.array(x, float)
    ss = float(((np.array(y) - np.mean(y)) ** 2).sum())
    return {
        "a": float(a),
        "b": float(b),
        "r2": 1 - float(((np.array(y) - pred) ** 2).sum()) / ss if ss else 1.0,
    }


@lru_cache(maxsize=4)
def margin_runs(quick: bool, steps: int, n_max: int, with_fixed: bool) -> dict:
    """Parent logit margin μ(c_{N−1} − max_{j≠N−1} c_j) after ``steps`` steps vs N, μ = ⌈N^{3/2}⌉/2.

    From zero init w_tok stays constant across tokens (rotation symmetry), so every input has the same
    logit differences and 1 − S_{N−1} ≤ (N−1)·exp(−margin) exactly.
    """
    Ns = list(range(4, n_max + 1))
    cases = [(5, "1/2"), (5, "7/10")] if quick else [(5, "1/2"), (5, "7/10"), (6, "3/10")]
    out = {}
    for K, p in cases:
        margins, log10_gap, fixed = [], [], []
        for N in Ns:
            mu = max(math.ceil(N**1.5), N + 1) / 2
            r = run_gd(K, N, p, steps, [steps], mu=mu)
            c = r.q  # μc: the positional logits
            assert c is not None
            margins.append(float(c[N - 2] - np.delete(c, N - 2).max()))
            log10_gap.append(r.log10_one_minus_parent[-1])
            if with_fixed:  # the same with μ = 500 for every N, for contrast
                c5 = run_gd(K, N, p, steps, [steps], mu=PAPER_MU).q
                assert c5 is not None
                fixed.append(float(c5[N - 2] - np.delete(c5, N - 2).max()))
        fits = {
            name: _linear_fit(
                [n for n in Ns if n % 2 == parity], [m for n, m in zip(Ns, margins) if n % 2 == parity]
            )
            for name, parity in (("even N", 0), ("odd N", 1))
        }
        fits["all N"] = _linear_fit(Ns, margins)
        out[(K, p)] = {
            "N": Ns,
            "margin": margins,
            "log10(1-att)": log10_gap,
            "fits": fits,
            "margin_mu500": fixed,
        }
    return out
