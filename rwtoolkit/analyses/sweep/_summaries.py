"""What a sweep records per run: the summaries of its trajectory and the exact signal of its task.

* ``final_accuracy``: exact population accuracy at the last step (nearest float), ``opt`` = max(p, 1-p)
  (the Bayes accuracy), ``accuracy_over_opt``; ``final_loss``; ``parent_attention`` (mean attention on
  position N-1 at the last step; null for a model without attention S over the positions, a sequence model);
  ``v_direction_error`` (‖V/‖V‖ - Πᵀ/‖Πᵀ‖‖_F, Theorem 3.1; null when V = 0).
* ``escape_step``: the first t >= 1 with ρ(t) = ‖V - mean(V)·1‖_F/‖V‖_F above ``escape_threshold``, the
  escape of ``rwtoolkit.analyses.stability`` (docs/stability.md#escape). ``symmetry_break_step``: the first t >= 1 with
  V's circulant residual ‖V - C(V)‖_F/‖V‖_F above the same threshold: the rotation symmetry of the
  circle, which GD from a rotation-invariant start keeps exactly, is broken (by a random init or rounding).
* ``learning_step``: the first evaluated step with accuracy >= ``learned_fraction``·OPT.
* ``signal_norm``: ‖C‖_F of the token-average signal (docs/theory.md#signal), exact then rounded;
  ``signal_zero``: C = 0 exactly; ``vanishing_distance``: |p - p₀| to the nearest p₀ of the exact vanishing
  set of C in p for this (K, N) (0 inside it, null when the set is empty).
* ``diverged_step``: the step at which the run left the loss domain or stopped being finite (then the
  trajectory summaries are null), else null.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

SUMMARY_COLUMNS = (
    "final_accuracy",
    "opt",
    "accuracy_over_opt",
    "final_loss",
    "parent_attention",
    "v_direction_error",
    "escape_step",
    "symmetry_break_step",
    "learning_step",
    "signal_norm",
    "signal_zero",
    "vanishing_distance",
    "diverged_step",
)


@lru_cache(maxsize=4096)
def signal_summary(K: int, N: int, p: str) -> dict:
    """``signal_norm``, ``signal_zero`` and ``vanishing_distance`` of CircleWalk(K, N, p), exact (cached).

    >>> signal_summary(3, 4, "1")
    {'signal_norm': 0.0, 'signal_zero': True, 'vanishing_distance': 0.0}
    >>> signal_summary(4, 5, "2/5")["vanishing_distance"]
    0.1
    """
    import sympy as sp

    from rwtoolkit.engines.exact import signal_matrix
    from rwtoolkit.tasks import CircleWalk

    C = signal_matrix(CircleWalk(K, N, p))
    norm = sp.sqrt(sum(e**2 for e in C))
    where = vanishing_for(K, N)
    value = sp.Rational(p)
    if where.all_p:
        distance: float | None = 0.0
    elif where.points:
        distance = min(float(abs(value - q)) for q in where.points)
    else:
        distance = None
    return {"signal_norm": float(norm), "signal_zero": bool(C.is_zero_matrix), "vanishing_distance": distance}


@lru_cache(maxsize=1024)
def vanishing_for(K: int, N: int):
    from rwtoolkit.engines.exact import vanishing_set

    return vanishing_set((K, N))


def _first_above(series: np.ndarray, threshold: float) -> int | None:
    """First t >= 1 with series[t] > threshold (NaN never counts); the escape rule of ``rwtoolkit.analyses.stability``."""
    from rwtoolkit.analyses.stability import first_above

    return first_above([float(x) if math.isfinite(x) else -math.inf for x in series], threshold)


def run_summaries(config: dict, history: dict[str, np.ndarray], final: dict, diverged: int | None) -> dict:
    """The summary columns of one run: its ``history`` arrays (``TrainResult.series``), final accuracy and V's
    direction error, and the step it diverged at (None if it did not)."""
    import sympy as sp

    p = sp.Rational(config["p"])
    opt = float(max(p, 1 - p))
    out: dict = dict.fromkeys(SUMMARY_COLUMNS)
    out["opt"] = opt
    out["diverged_step"] = diverged
    out.update(signal_summary(config["K"], config["N"], config["p"]))
    if diverged is not None:
        return out
    tau = config["escape_threshold"]
    acc = history["test_accuracy"]
    out["final_accuracy"] = final["test_accuracy"]
    out["accuracy_over_opt"] = final["test_accuracy"] / opt
    out["final_loss"] = float(history["train_loss"][-1])
    attention = float(history["parent_attention"][-1])  # NaN: a model without attention S (a sequence model)
    out["parent_attention"] = attention if math.isfinite(attention) else None
    out["v_direction_error"] = final["v_direction_error"]
    out["escape_step"] = _first_above(history["ones_residual"], tau)
    out["symmetry_break_step"] = _first_above(history["circulant_residual"], tau)
    reached = np.nonzero(np.nan_to_num(acc, nan=-1.0) >= config["learned_fraction"] * opt)[0]
    out["learning_step"] = int(reached[0]) if len(reached) else None
    return out
