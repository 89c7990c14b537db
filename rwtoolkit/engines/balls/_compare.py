"""Where a float64 run (``rwtoolkit.engines.numeric.train``) leaves the certified enclosure of the exact trajectory.

The float run uses the same task, walks (same seed), η, ε and embeddings, and either the float Gram
matrix of P (``gram="computed"``, what a direct implementation sees) or μI (``"ideal"``). At each
recorded step the float train loss and mean attention profile are compared with their balls: the
excess is max(0, |x - mid| - rad) / max(1, |mid|). Evaluating the exact parameters in float64 already
costs about 1e-13 (the sine Gram's off-diagonal rounding is about 1e-13·μ), so ``float_tol`` = 1e-9,
four orders of magnitude above it, separates growth of the float error from evaluation rounding.
"""

from __future__ import annotations

import math

from rwtoolkit.engines.balls._certify import Certification

#: Default excess beyond which a float value counts as outside the enclosure (see the module docstring).
FLOAT_TOL = 1e-9


def _excess(x: float, ball: dict) -> float:
    """How far x lies outside the exported ball (relative); 0 for an unbounded ball, which holds every real."""
    if ball.get("unbounded"):
        return 0.0
    return max(0.0, abs(x - ball["mid"]) - ball["rad"]) / max(1.0, abs(ball["mid"]))


def compare_float(
    cert: Certification, data: dict, gram: str = "computed", float_tol: float = FLOAT_TOL
) -> dict:
    """Run rwtoolkit.engines.numeric in float64 on the certified configuration and locate where it leaves the enclosure.

    ``data`` is ``certify_json(cert)`` (the exported balls). Returns the per-step excess, the first step
    whose excess exceeds ``float_tol`` (None if none does) and the first step at which the float test
    accuracy differs from a certified (decided) accuracy. When the certified run stopped early, the
    float run goes only as far as its last recorded step; with no recorded step nothing is compared.
    """
    from rwtoolkit.engines.numeric import (  # heavy (torch): imported only when comparing
        ModelConfig,
        TrainConfig,
        train,
    )

    if gram not in ("computed", "ideal"):
        raise ValueError(f"gram={gram!r} is not one of computed, ideal")
    if not (isinstance(float_tol, float) and math.isfinite(float_tol) and float_tol > 0):
        raise ValueError(f"float_tol={float_tol!r} must be a finite number > 0")
    cfg = cert.config
    task = cert.task
    model = ModelConfig(K=task.K, N=task.N, M=cfg["M"], pos=cfg["pos"], gram=gram)
    steps = [s["step"] for s in data["steps"]]
    stopped = data["precision"]["stopped"]
    if not steps:
        return {
            "gram": gram,
            "float_tol": float_tol,
            "first_step_outside": None,
            "first_accuracy_mismatch": None,
            "summary": f"float64 rwtoolkit.engines.numeric run with gram = {gram!r}: not compared, the certified run recorded no step"
            + (f" (it stopped: {stopped})." if stopped else "."),
            "steps": [],
        }
    train_cfg = TrainConfig(
        steps=cfg["steps"] if stopped is None else steps[-1],
        eta=float(eval_fraction(cfg["eta"])),
        eps=float(eval_fraction(cfg["eps"])),
        seed=cfg["seed"],
        population=cfg["population"],
        train_size=cfg["train_size"] or 1,
        test_size=cfg["test_size"] or 1,
        threads=1,
        record_steps=steps,
    )
    result = train(task, model, train_cfg, progress=False)
    rows, first_outside, first_accuracy = [], None, None
    for h, s in zip(result.history, data["steps"], strict=True):
        if h["step"] != s["step"]:
            raise RuntimeError(
                f"the float run recorded step {h['step']} where the enclosure has step {s['step']}"
            )
        excess = max(
            [_excess(h["train_loss"], s["train_loss"])]
            + [_excess(x, b) for x, b in zip(h["attention_profile"], s["attention_profile"], strict=True)]
        )
        rows.append(
            {
                "step": s["step"],
                "excess": excess,
                "test_accuracy": h["test_accuracy"],
                "attention_spread": h["attention_spread"],
            }
        )
        if first_outside is None and excess > float_tol:
            first_outside = s["step"]
        acc = s["test_accuracy"]
        if (
            first_accuracy is None
            and acc["decided"]
            and abs(h["test_accuracy"] - float(eval_fraction(acc["lower"]))) > 1e-12
        ):
            first_accuracy = s["step"]
    summary = (
        f"float64 rwtoolkit.engines.numeric run with gram = {gram!r}: the first recorded step whose train loss or mean attention "
        f"leaves the enclosure by more than {float_tol:g} (relative) is "
        + (f"step {first_outside}" if first_outside is not None else f"none up to step {steps[-1]}")
        + "; the first step whose float test accuracy differs from the certified accuracy is "
        + (f"step {first_accuracy}." if first_accuracy is not None else "none.")
        + f" Largest excess: {max(r['excess'] for r in rows):.3g}."
    )
    return {
        "gram": gram,
        "float_tol": float_tol,
        "first_step_outside": first_outside,
        "first_accuracy_mismatch": first_accuracy,
        "summary": summary,
        "steps": rows,
    }


def eval_fraction(text: str):
    """A Fraction from its exported string ("1/10")."""
    from fractions import Fraction

    return Fraction(text)
