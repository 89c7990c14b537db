"""Write an ``ExploreResult`` as explore.json, REPORT.md and accuracy plots, each file atomically.

Exact values are written as SymPy strings (they parse back with ``sympy.sympify``) next to floats;
no NaN can reach a file (``json.dumps(allow_nan=False)``). Same spec and settings ⇒ same bytes.

For a model other than one_layer explore.json also has ``model`` (its ``describe()``: a model of your own names its
target) and ``checks`` (``ran``: ``MODEL_CHECKS``; ``not_run``: each check of ``ONE_LAYER_CHECKS`` with why), a
check's ``one_step`` and ``manifold`` are null, and REPORT.md says the same under "Model"; for one_layer neither key
is written (the file is the one it has always been).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import sympy as sp

from rwtoolkit.analyses.explore._explore import (
    MODEL_CHECKS,
    STUCK_CONTRADICTION_NOTE,
    ExploreResult,
    Point,
    PointCheck,
)
from rwtoolkit.engines.exact import exact_json
from rwtoolkit.io import Verdict, save_figure_atomic, write_text_atomic
from rwtoolkit.tasks import CircleWalk, FiniteTask, is_numeric

#: Format name written into explore.json.
EXPLORE_FORMAT = "rw-explore"
#: Format version written into explore.json; version 2 added ``training_contradicts_verdict`` to every check,
#: version 3 the stuck verdicts refined by stability (``verdict``), ``exact_verdict`` and ``stability``,
#: version 4 ``stuck_proof`` (stuck for every t proved, or evidence; rwtoolkit.engines.exact.stuck_proof) of a stuck point.
EXPLORE_FORMAT_VERSION = 4
#: Gid of the title of an accuracy plot whose "stuck" verdict training contradicts (tests look for it).
CONTRADICTION_GID = "stuck-contradicted-by-training"
#: How many nonzero signal entries REPORT.md lists per point (the JSON has the whole matrix).
MAX_LISTED_ENTRIES = 24


def _task_info(task: CircleWalk | FiniteTask) -> dict[str, Any]:
    info: dict[str, Any] = task.describe()
    if "inputs" in info:  # a finite task's words, or None for token ids
        info["vocab"] = None if task.vocab is None else list(task.vocab)
    return info


def _check_json(check: PointCheck) -> dict[str, Any]:
    one, many = check.one_step, check.manifold
    out: dict[str, Any] = {
        "values": {k: sp.sstr(v) for k, v in check.values.items()},
        "task": _task_info(check.task),
        "signal_is_zero": check.signal_is_zero,
        "one_step": None
        if one is None
        else {
            "scores_parallel_to_mean_label": one.parallel_to_mean_label,
            "scores_identical": one.identical,
            "mean_label": [sp.sstr(v) for v in one.mean_label],
            "witness": one.witness,
        },
        "manifold": None
        if many is None
        else {
            "steps": many.steps,
            "shared": many.shared,
            "invariant": many.invariant,
            "first_break": many.first_break,
            "witness": many.witness,
        },
        "bayes_accuracy": exact_json(check.bayes_accuracy),
        "constant_accuracy": exact_json(check.constant_accuracy),
        "verdict": check.verdict,
        "exact_verdict": check.exact_verdict,
        "stability": _stability_json(check),
        "stuck_proof": check.proof,
        "reason": check.reason,
        "train_note": check.train_note,
        "training_contradicts_verdict": _contradiction_json(check),
    }
    if check.runs is not None:
        out["train"] = [
            {
                "label": run.label,
                "init": run.init,
                "sigma": run.sigma,
                "test_accuracy": run.test_accuracy,
                "train_loss": run.train_loss,
                "attention_spread": run.attention_spread,
                "final_test_accuracy": run.test_accuracy[-1],
            }
            for run in check.runs
        ]
    return out


def _stability_json(check: PointCheck) -> dict[str, Any] | None:
    """None for a point that is not stuck; else the manifold's stability, or why it was not analysed."""
    if check.stuck is not Verdict.HOLDS:
        return None
    s = check.stability
    if s is None:
        return {"analysed": False, "note": check.stability_note}
    return {
        "analysed": True,
        "kind": s.kind,
        "rate": s.rate,
        "tolerance": s.tolerance,
        "steps": s.steps,
        "eta": s.eta,
        "mu": s.mu,
        "eps": s.eps,
        "predicted_escape_float64_rounding": s.rounding,
        "predicted_escape_float64_rounding_extrapolated": s.rounding_extrapolated,
        "predicted_escape_gaussian": [{"sigma": k, "step": v} for k, v in s.gaussian.items()],
        "line": s.line(),
    }


def _contradiction_json(check: PointCheck) -> dict[str, Any] | None:
    """None, or the runs that learn although the verdict is "stuck", the tolerance used and why it can happen."""
    runs = check.contradicting_runs
    if not runs:
        return None
    return {
        "runs": [
            {"label": label, "first_step": first, "final_test_accuracy": final}
            for label, first, final in runs
        ],
        "constant_accuracy": exact_json(check.constant_accuracy),
        "tolerance": check.accuracy_tol,
        "explanation": STUCK_CONTRADICTION_NOTE,
    }


def _point_json(point: Point) -> dict[str, Any]:
    sig = point.signal
    vanishing = None
    if sig.vanishing is not None:
        vanishing = {
            "symbol": str(sig.symbol),
            "interval": [0, 1],
            "all": sig.vanishing.all_p,
            "points": [exact_json(r) for r in sig.vanishing.points],
            "text": str(sig.vanishing),
        }
    return {
        "params": {k: v for k, v in point.params.items()},
        "task": _task_info(point.task),
        "signal": {
            "is_zero": sig.is_zero,
            "matrix": [
                [sp.sstr(sig.matrix[a, b]) for b in range(sig.matrix.cols)] for a in range(sig.matrix.rows)
            ],
            "symbol": None if sig.symbol is None else str(sig.symbol),
            "vanishing_set": vanishing,
        },
        "skipped": point.skipped,
        "checks": [_check_json(c) for c in point.checks],
    }


def explore_json(result: ExploreResult) -> dict[str, Any]:
    """The result as a JSON-ready dict (format "rw-explore", version ``EXPLORE_FORMAT_VERSION``)."""
    spec = result.spec
    model: dict[str, Any] = {}
    if result.not_run:  # a model other than one_layer: which it is, and which checks ran
        model = {
            "model": result.model.describe(),
            "checks": {"ran": list(MODEL_CHECKS), "not_run": result.not_run},
        }
    return {
        "format": EXPLORE_FORMAT,
        "version": EXPLORE_FORMAT_VERSION,
        "name": spec.name,
        **model,
        "spec": spec.raw,
        "settings": {
            "explore": {k: str(v) if not isinstance(v, int) else v for k, v in spec.explore.items()},
            "train": spec.train if result.trained else None,
        },
        "points": [_point_json(p) for p in result.points],
    }


def model_lines(result: ExploreResult) -> list[str]:
    """The model and the checks that ran and did not (one line each, with why), for a model other than one_layer;
    [] for one_layer. ``rw explore`` prints them and REPORT.md lists them."""
    if not result.not_run:
        return []
    described = result.model.describe()
    return [
        f"model: {described.get('target') or described['name']} ({described['name']})",
        *(f"ran: {line}" for line in MODEL_CHECKS),
        *(f"not run: {line}" for line in result.not_run.values()),
    ]


def _fmt_params(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "(as given)"


def _label(task: CircleWalk | FiniteTask, k: int) -> str:
    vocab = getattr(task, "vocab", None)
    return vocab[k] if vocab is not None else str(k)


def _report_markdown(result: ExploreResult, plots: dict[tuple[int, int], str]) -> str:
    spec = result.spec
    ex = spec.explore
    lines = [
        f"# rw explore: {spec.name}",
        "",
        "Is the token average informative about the label, and if not, does gradient descent from zero "
        "initialisation stay on the stuck manifold, where every input gets the same score vector? "
        "(docs/theory.md#signal, #qa-tasks)",
        "",
        f"Exact checks: η = {ex['eta']}, ε = {ex['eps']}, μ = {ex['mu']}, {ex['steps']} GD steps with ℓ' "
        "abstract (every verdict about the manifold holds for any differentiable loss).",
        "",
        "Verdicts: **informative** (C ≠ 0 and the first step already tells inputs apart), **stuck** "
        "(C = 0, every score vector f(X) is a multiple of E[e_y] after one step, and all inputs share one "
        "score vector at every step checked), **escapes** (C = 0 but a later step separates inputs), "
        "**undecided** (otherwise). A stuck point is **stuck-attracting**, **stuck-neutral** or "
        "**stuck-repelling** by the linearised GD map around its manifold at the training settings "
        "(rw stability; docs/stability.md), with the rate and the predicted escape at float64 rounding.",
        "",
    ]
    if result.not_run:
        lines += [
            "## Model",
            "",
            *(f"- {line}" for line in model_lines(result)),
            "",
            "Verdicts for this model come from stuck_proof: **stuck** (proved for all t, or the scores agree "
            "within their balls for the steps checked: its verdict says which), **escapes** (two inputs' scores "
            "differ, certified), **undecided** (stuck_proof not attempted, with the reason). The exact checks "
            "above are one_layer's and did not run.",
            "",
        ]
    for i, point in enumerate(result.points):
        sig = point.signal
        task = point.task
        lines += [f"## Point {i}: {task.name} {_fmt_params(point.params)}", ""]
        lines += [
            f"K = {task.K}, N = {task.N}"
            + (f", {len(task.labels)} inputs" if isinstance(task, FiniteTask) else f", p = {task.p}"),
            "",
        ]
        lines += ["### Token-average signal C = E[e_y x̄ᵀ] − E[e_y] E[x̄]ᵀ", ""]
        if sig.is_zero:
            lines += [
                "C = 0 exactly" + (" (identically in " + str(sig.symbol) + ")" if sig.symbol else "") + ".",
                "",
            ]
        else:
            entries = sig.nonzero_entries
            lines += [f"{len(entries)} nonzero entries C[label, token] (exact):", ""]
            for a, b, value in entries[:MAX_LISTED_ENTRIES]:
                shown = sp.factor(value) if not is_numeric(value) else value
                lines.append(f"- C[{_label(task, a)}, {_label(task, b)}] = `{shown}`")
            if len(entries) > MAX_LISTED_ENTRIES:
                lines.append(f"- … {len(entries) - MAX_LISTED_ENTRIES} more in explore.json")
            lines.append("")
        if sig.vanishing is not None:
            lines += [f"Where C vanishes over {sig.symbol} ∈ [0, 1]: **{sig.vanishing}**", ""]
        for note in point.skipped:
            lines += [f"Not checked: {note}", ""]
        if point.checks:
            lines += [
                "### Gradient-descent checks",
                "",
                "| values | C = 0 | step 1: all f ∝ E[e_y] | shared f at t = 0.. | verdict | Bayes acc. "
                "| constant acc. |",
                "| --- | --- | --- | --- | --- | --- | --- |",
            ]
            for check in point.checks:
                marks, one = "not run", "not run"  # another model (see "Model")
                if check.manifold is not None and check.one_step is not None:
                    marks = " ".join({True: "✓", False: "✗", None: "?"}[s] for s in check.manifold.shared)
                    one = "yes" if check.one_step.shared else "no"
                lines.append(
                    f"| {_fmt_params({k: str(v) for k, v in check.values.items()})} "
                    f"| {'yes' if check.signal_is_zero else 'no'} "
                    f"| {one} | {marks} | **{check.verdict}**"
                    f"{' (contradicted by training, see below)' if check.contradiction else ''} "
                    f"| {check.bayes_accuracy} | {check.constant_accuracy} |"
                )
            lines.append("")
            for check in point.checks:
                details = [w.witness for w in (check.one_step, check.manifold) if w is not None and w.witness]
                lines.append(
                    f"- {_fmt_params({k: str(v) for k, v in check.values.items()})}: {check.reason}"
                    + (f" (witness: {'; '.join(details)})" if details else "")
                )
            lines.append("")
        for j, check in enumerate(point.checks):
            if check.train_note:
                lines += [
                    f"Numeric training ({_fmt_params({k: str(v) for k, v in check.values.items()})}): "
                    f"{check.train_note}.",
                    "",
                ]
            if check.runs is None:
                continue
            lines += [
                f"### Numeric training ({_fmt_params({k: str(v) for k, v in check.values.items()})})",
                "",
                "| init | final test accuracy | best test accuracy |",
                "| --- | --- | --- |",
            ]
            for run in check.runs:
                lines.append(f"| {run.label} | {run.test_accuracy[-1]:.4f} | {max(run.test_accuracy):.4f} |")
            lines += [""]
            if check.contradiction:
                lines += [
                    f'**Warning: the verdict "{check.verdict}" is contradicted by training:** {check.contradiction}.',
                    "",
                ]
            lines += [f"![accuracy curves]({plots[(i, j)]})", ""]
    if result.trained:
        tr = spec.train
        lines += [
            "## Training settings",
            "",
            f"rwtoolkit.engines.numeric, float64, full-batch GD: {tr['steps']} steps, η = {tr['eta']}, ε = {tr['eps']}, "
            f"M = {tr['M']} (sine embeddings, μ = M/2), "
            + (
                "exact population"
                if tr["population"]
                else f"{tr['train_size']} train / {tr['test_size']} test samples"
            )
            + f", seed {tr['seed']}; Gaussian init σ ∈ {tr['sigmas']}.",
            "",
        ]
    return "\n".join(lines)


def _plot(check: PointCheck, title: str, path: Path) -> Any:
    """Accuracy curves of the check's runs with the Bayes and constant-prediction levels; returns the Figure."""
    from matplotlib.figure import Figure

    assert check.runs is not None
    fig = Figure(figsize=(8.2, 4.0), layout="constrained")
    ax = fig.subplots()
    for run in check.runs:
        ax.plot(range(len(run.test_accuracy)), run.test_accuracy, label=run.label, lw=1.6)
    ax.axhline(float(check.bayes_accuracy), color="black", ls="--", lw=1.2, label="Bayes accuracy")
    ax.axhline(float(check.constant_accuracy), color="tab:red", ls=":", lw=1.5, label="constant prediction")
    ax.set_xlabel("GD step")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(-0.02, 1.02)
    verdict = f"verdict: {check.verdict}"
    if check.contradiction:
        verdict += " ✘ CONTRADICTED BY TRAINING (see REPORT.md)"
        for spine in ax.spines.values():
            spine.set_edgecolor("tab:red")
            spine.set_linewidth(2.5)
    ax.set_title(f"{title}\n{verdict}", fontsize=9, color="tab:red" if check.contradiction else "black")
    if check.contradiction:
        ax.title.set_gid(CONTRADICTION_GID)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    save_figure_atomic(fig, path, dpi=100, metadata={"Software": None})
    return fig


def plot_title(
    name: str, task: CircleWalk | FiniteTask, params: dict[str, Any], values: dict[str, Any]
) -> str:
    """Title of an accuracy plot: the spec name, the task and its parameters (sweep point, then the value
    of the free symbol), each said once.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> plot_title("walks", CircleWalk(4, 5, "1/2"), {}, {})
    'walks: task circle, K=4, N=5, p=1/2'
    """
    given = {**{k: str(v) for k, v in params.items()}, **{k: str(v) for k, v in values.items()}}
    head = f"{name}: task {task.name}, K={task.K}, N={task.N}"
    if "p" in (described := task.describe()):
        given["p"] = str(described["p"])
    shown = ", ".join(f"{k}={v}" for k, v in given.items() if k not in ("K", "N"))
    return head + (f", {shown}" if shown else "")


def write_report(result: ExploreResult, out: str | os.PathLike[str]) -> dict[str, Path]:
    """Write explore.json, REPORT.md and accuracy_<point>_<check>.png (with training) into ``out``.

    Returns the written paths by name. Every file is written atomically.
    """
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out {folder}: exists and is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    plots: dict[tuple[int, int], str] = {}
    for i, point in enumerate(result.points):
        for j, check in enumerate(point.checks):
            if check.runs is None:
                continue
            name = f"accuracy_{i}_{j}.png"
            _plot(check, plot_title(result.spec.name, check.task, point.params, check.values), folder / name)
            plots[(i, j)] = name
            written[name] = folder / name
    text = json.dumps(explore_json(result), indent=1, allow_nan=False, sort_keys=False) + "\n"
    write_text_atomic(text, folder / "explore.json")
    written["explore.json"] = folder / "explore.json"
    write_text_atomic(_report_markdown(result, plots) + "\n", folder / "REPORT.md")
    written["REPORT.md"] = folder / "REPORT.md"
    return written
