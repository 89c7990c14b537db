"""When does floating point break the p = 1 symmetry of Theorem 4.1?

Exact arithmetic keeps S_1 = … = S_{N-1} and V ∝ 1 forever for p = 1, N = rK+1. In floating point
the rounding of the sine P (its float Gram matrix, ~1e-16·μ off the diagonal in float64) and of the
sums seeds an asymmetry that training may amplify; the W-step on the positional logits scales as μ²,
so larger μ amplifies faster. We train the Fig 5 setting for each μ × precision × Gram option and
report the first iteration at which the symmetry is visibly broken.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import sympy as sp
from tqdm import tqdm

from rwtoolkit.analyses.repro import _claims as C
from rwtoolkit.analyses.repro._experiments import MU_LABELS, MU_OPTIONS, Choices, RunSpec, sensitivity_runs
from rwtoolkit.analyses.repro._plots import LOG_FLOOR, new_figure, reference_line, rounding_band, save_png
from rwtoolkit.analyses.repro._runner import Runner
from rwtoolkit.io import write_json_atomic
from rwtoolkit.tasks import FiniteTask

#: The series the sensitivity record keeps for every option.
SENS_SERIES = ("attention_spread", "v_column_residual", "ones_residual", "test_accuracy")


def break_steps(series: dict, K: int, n_test: int) -> dict:
    """First iterations at which the p = 1 symmetry is visibly broken, by each stated threshold.

    ``spread_break``: attention spread > SPREAD_MAX; ``v_break``: ‖V - a·1ᵀ‖/‖V‖ > V_COLUMN_MAX (V leaves
    the form the symmetry keeps exactly); ``break_step``: the earlier of the two; ``ones_break``:
    ‖V - mean(V)·1‖/‖V‖ > ONES_MAX (the Fig 5 criterion "V ∝ all-ones" fails); ``accuracy_leaves``:
    first |acc - 1/K| > the binomial tolerance (the failure of Fig 5 visibly ends).

    >>> s = {"attention_spread": [0, 1e-9, 2e-3], "v_column_residual": [0, 2e-3, 0.1],
    ...      "ones_residual": [0, 0.01, 0.2], "test_accuracy": [0.17, 0.17, 1.0]}
    >>> break_steps(s, 6, 1000)
    {'spread_break': 2, 'v_break': 1, 'break_step': 1, 'ones_break': 2, 'accuracy_leaves': 2}
    """
    spread = C.first_step(series["attention_spread"], lambda v: v > C.SPREAD_MAX)
    column = C.first_step(series["v_column_residual"], lambda v: v > C.V_COLUMN_MAX)
    ones = C.first_step(series["ones_residual"], lambda v: v > C.ONES_MAX)
    tol = C.accuracy_tolerance(1 / K, n_test)
    leaves = C.first_step(series["test_accuracy"], lambda a: abs(a - 1 / K) > tol)
    both = [t for t in (spread, column) if t is not None]
    return {
        "spread_break": spread,
        "v_break": column,
        "break_step": min(both) if both else None,
        "ones_break": ones,
        "accuracy_leaves": leaves,
    }


def build_sensitivity(runner: Runner, out: Path, quick: bool, progress: bool = True) -> dict:
    """Train the grid, write DIR/sensitivity/sensitivity.json and sensitivity.png; returns the record."""
    run, grid = sensitivity_runs(quick)
    jobs = [(run, c) for c in grid]
    bar = tqdm(
        total=len(jobs),
        desc=f"sensitivity ({len(jobs)} runs)",
        unit="run",
        disable=not (progress and sys.stderr.isatty()),
    )
    results = runner.run(jobs, on_done=lambda job: bar.update(1))
    bar.close()
    predicted = predicted_breaks(run, grid)
    table = []
    for c in grid:
        o = results[(run, c)]
        entry = {
            "choices": c.key(),
            "mu": c.mu,
            "mu_value": None,
            "dtype": c.dtype,
            "gram": c.gram,
            "ok": o["ok"],
            "error": o["error"],
            "predicted_break": predicted[c.key()],
        }
        note = rounding_note(o["series"]) if o["ok"] else None
        if note is not None:
            entry["predicted_break"] = {
                **predicted[c.key()],
                "step": None,
                "extrapolated": False,
                "note": note,
            }
        if o["ok"]:
            s = o["series"]
            entry["mu_value"] = o["config"]["mu"]
            entry.update(break_steps(s, run.K, run.test_size))
            entry.update(
                final_accuracy=s["test_accuracy"][-1],
                final_spread=s["attention_spread"][-1],
                final_ones_residual=s["ones_residual"][-1],
                max_spread=max(s["attention_spread"]),
            )
        else:
            entry.update(
                spread_break=None, v_break=None, break_step=None, ones_break=None, accuracy_leaves=None
            )
        table.append(entry)
    main = Choices()
    record = {
        "setting": run.describe(),
        "steps": run.steps,
        "quick": quick,
        "thresholds": {
            "attention_spread": C.SPREAD_MAX,
            "v_column_residual": C.V_COLUMN_MAX,
            "ones_residual": C.ONES_MAX,
        },
        "main": main.key(),
        "table": table,
        "row": C.sensitivity_claim(table, main.key(), run.steps).to_dict(),
        "series": {
            c.key(): {k: results[(run, c)]["series"][k] for k in SENS_SERIES}
            for c in grid
            if results[(run, c)]["ok"]
        },
    }
    folder = out / "sensitivity"
    _draw(record, folder, grid, run.steps)
    record["panels"] = ["sensitivity.png"]
    write_json_atomic(record, folder / "sensitivity.json")
    return record


def _draw(record: dict, folder: Path, grid: tuple[Choices, ...], steps: int) -> None:
    """Attention spread, V's distance from a·1ᵀ and accuracy against the iteration; one row per Gram option.

    A star on the V-distance panel marks the predicted break step (``predicted_breaks``) of the curve of its
    colour, at the threshold it predicts the crossing of (black edge: float64).

    Values at or below ``LOG_FLOOR`` (float64 rounding, or exact 0) are drawn on it, in a shaded band,
    so that values alternating between 0 and 1e-16 do not look like a signal.
    """
    fig, ax = new_figure(
        2,
        3,
        f"Sensitivity of the p=1 symmetry (Theorem 4.1): {record['setting']}, up to {steps} iterations",
        width=4.8,
        height=3.6,
        quick=record["quick"],
    )
    colours = {"1": "tab:blue", "sqrtM": "tab:orange", "M/2": "tab:green"}
    predicted = {e["choices"]: e.get("predicted_break") or {} for e in record["table"]}
    for row, gram in enumerate(("computed", "ideal")):
        for c in (c for c in grid if c.gram == gram):
            s = record["series"].get(c.key())
            if s is None:
                continue
            style = {
                "color": colours[c.mu],
                "lw": 1.8 if c.dtype == "float64" else 1.0,
                "marker": "o" if c.dtype == "float64" else "^",
                "ms": 3.5,
                "markevery": max(1, steps // 8),
            }
            label = f"{MU_LABELS[c.mu]}, {c.dtype}"
            t = np.arange(len(s["attention_spread"]))
            ax[row, 0].plot(
                t, np.maximum(np.array(s["attention_spread"], float), LOG_FLOOR), label=label, **style
            )
            ax[row, 1].plot(
                t, np.maximum(np.array(s["v_column_residual"], float), LOG_FLOOR), label=label, **style
            )
            ax[row, 2].plot(t, s["test_accuracy"], label=label, **style)
            pred = predicted.get(c.key(), {})
            if pred.get("step") is not None:  # the predicted crossing, on the threshold it predicts
                ax[row, 1].plot(
                    pred["step"],
                    C.V_COLUMN_MAX,
                    marker="*",
                    ms=11,
                    ls="none",
                    color=colours[c.mu],
                    markeredgecolor="black" if c.dtype == "float64" else colours[c.mu],
                    zorder=5,
                )
        for col, (title, ylabel, thr) in enumerate(
            (
                ("attention spread", "max_n (max_i S_i - min_i S_i)", C.SPREAD_MAX),
                ("V's distance from the form a·1ᵀ", "‖V - a·1ᵀ‖_F / ‖V‖_F (a = row means)", C.V_COLUMN_MAX),
                ("test accuracy", "accuracy", None),
            )
        ):
            a = ax[row, col]
            if thr is not None:
                a.set_yscale("log")
                reference_line(a, thr, "threshold", f"threshold {thr:g}")
                rounding_band(a)
            else:
                a.set_ylim(-0.02, 1.05)
            a.set_title(f"{title}, {gram} Gram of P", fontsize=9)
            a.set_xlabel("GD iteration t")
            a.set_ylabel(ylabel)
            a.grid(alpha=0.3)
    if any(p.get("step") is not None for p in predicted.values()):  # a legend entry for the stars
        ax[0, 0].plot(
            [], [], marker="*", ms=11, ls="none", color="grey", label="predicted break (linearised)"
        )
    handles, labels = ax[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=8, fontsize=8)
    save_png(fig, folder / "sensitivity.png")


#: Steps of the linearisation behind the predicted break steps; past it the late rate extrapolates.
LINEAR_HORIZON = 64


def sample_task(run: RunSpec) -> FiniteTask:
    """The distinct walks of the run's training sample, weighted by their counts (drawn as ``rwtoolkit.engines.numeric.train`` draws).

    At p ∈ {0, 1} a walk is fixed by its start, so the sample has at most K distinct inputs.

    >>> from rwtoolkit.analyses.repro._experiments import sensitivity_runs
    >>> sample_task(sensitivity_runs(quick=True)[0]).population().tokens.shape
    (6, 96)
    """
    from rwtoolkit.engines.balls import walk_sets

    train, _ = walk_sets(run.make_task(), False, run.train_size, run.test_size, run.seed)
    weights = [sp.Rational(w.numerator, w.denominator) for w in train.weights]
    return FiniteTask(train.tokens.tolist(), train.labels.tolist(), weights, K=run.K)


def predicted_breaks(
    run: RunSpec, grid: tuple[Choices, ...], horizon: int = LINEAR_HORIZON
) -> dict[str, dict]:
    """Predicted first step with V's distance from its manifold above ``C.V_COLUMN_MAX``, per option.

    The run's GD is linearised (``rwtoolkit.analyses.stability.linearise``) along the exact trajectory on its distinct
    training walks; that trajectory stays on the manifold ``rwtoolkit.analyses.stability.find_manifold`` finds (each row of V
    constant, equal token logits, equal positional logits c_1 = … = c_{N-1}), whose V-distance ρ is the
    table's ‖V - a·1ᵀ‖/‖V‖. Rounding of unit roundoff u per step (``rwtoolkit.analyses.stability.predict_escape``) seeds
    the normal deviation; the prediction depends on μ and the dtype, not on the Gram option (whether a run's
    rounding seeds the growing directions at all is read from its series: ``rounding_note``). Linearised for
    16 steps, or ``horizon`` steps when the prediction does not cross within 16; past it, the late rate
    extrapolates (``rwtoolkit.analyses.stability.extrapolate_escape``). Returns, per ``Choices.key()``: ``step`` (int or
    None), ``extrapolated`` (bool), ``note`` (why there is no number), ``rate`` (late ln-growth per step of
    σ_max(Φ_t), ``rwtoolkit.analyses.stability.verdict``), ``leak`` (max ‖BᵀJT‖/‖J‖ over the steps: 0 on an invariant
    manifold).
    """
    import torch

    from rwtoolkit.analyses.stability import (
        Linearisation,
        extrapolate_escape,
        find_manifold,
        linearise,
        predict_escape,
        verdict,
    )

    task = sample_task(run)
    coords = find_manifold(task, 1, 1, sp.nsimplify(run.eps))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 139-dimensional Hessian per step: threads cost more than they save
    out: dict[str, dict] = {}
    try:
        lins: dict[tuple[str, int], Linearisation] = {}
        for c in grid:
            mu = MU_OPTIONS[c.mu](run.M)
            steps = 16
            while True:
                lin = lins.get((c.mu, steps))
                if lin is None:
                    lin = linearise(
                        task, min(steps, run.steps), eta=run.eta, mu=mu, eps=run.eps, coords=coords
                    )
                    lins[(c.mu, steps)] = lin
                pred = predict_escape(lin, dtype=c.dtype, threshold=C.V_COLUMN_MAX)
                if pred.step is not None or steps >= min(horizon, run.steps):
                    break
                steps = horizon
            v = verdict(lin)
            entry: dict[str, object] = {
                "step": pred.step,
                "extrapolated": False,
                "rate": v.rate,
                "leak": max(lin.leak),
                "note": None,
            }
            if pred.step is None:
                later = extrapolate_escape(lin, pred, C.V_COLUMN_MAX)
                if later is not None and later <= run.steps:
                    entry.update(step=later, extrapolated=True)
                if entry["step"] is None:
                    entry["note"] = (
                        f"linear growth does not reach {C.V_COLUMN_MAX:g} within {run.steps} steps"
                    )
            out[c.key()] = entry
    finally:
        torch.set_num_threads(threads)
    return out


def rounding_note(series: dict) -> str | None:
    """Why the rounding prediction does not apply to a run, or None when it does.

    A run whose attention spread is exactly 0 at every step kept its logits bitwise symmetric (the ideal Gram
    in float64 does): rounding then perturbed V alone, never the logits, and the linear model's seed in every
    normal direction is not what the run saw.

    >>> rounding_note({"attention_spread": [0.0, 0.0]})
    "no seed: the run's attention stayed exactly uniform, so rounding never perturbed the logits"
    >>> rounding_note({"attention_spread": [0.0, 1e-12]}) is None
    True
    """
    if max(series["attention_spread"]) == 0.0:
        return "no seed: the run's attention stayed exactly uniform, so rounding never perturbed the logits"
    return None
