"""Build one reproduced figure: train its runs under every option, evaluate its claims, draw, save JSON."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from tqdm import tqdm

from rwtoolkit.analyses.repro import _claims as C
from rwtoolkit.analyses.repro._experiments import FigureSpec
from rwtoolkit.analyses.repro._plots import (
    attention_profile,
    colour_limits,
    curves,
    heatmap,
    legend_outside,
    mark_disagreement,
    new_figure,
    save_png,
)
from rwtoolkit.analyses.repro._runner import Runner
from rwtoolkit.io import write_json_atomic
from rwtoolkit.tasks import CircleWalk

#: Seed of the example walks of Fig 2.
EXAMPLE_SEED = 20251128


def figure_rows(spec: FigureSpec, outcomes: dict[str, dict]) -> list[C.Row]:
    """The claim rows of ``spec`` for one option; ``outcomes`` maps run name -> outcome."""
    name = spec.name
    if name in ("fig4", "fig8"):
        return C.success_claims(name, outcomes["p=1/2"], few_steps=name == "fig4")
    if name in ("fig5", "fig9"):
        return C.failure_claims(name, outcomes["p=1"])
    if name == "fig6":
        return C.fig6_claims(name, outcomes["p=1/2"], outcomes["p=1"])
    if name in ("fig7", "fig10"):
        return C.qa_claims(name, outcomes["task 1"], outcomes["task 2"])
    if name in ("fig11", "fig12"):
        return C.vis_claims(name, outcomes["p=1/2"])
    return []  # fig2 (an illustration of the setting) and fig13 (no checkable claim) have no rows


def build_figure(spec: FigureSpec, runner: Runner, out: Path, quick: bool, progress: bool = True) -> dict:
    """Train, evaluate and draw ``spec``; writes DIR/<fig>/<fig>.json and its PNGs; returns the JSON record."""
    options = spec.all_options()
    jobs = [(run, opt) for opt in options for run in spec.runs]
    bar = tqdm(
        total=len(jobs),
        desc=f"{spec.name} ({len(jobs)} runs)",
        unit="run",
        disable=not (progress and sys.stderr.isatty()),
    )
    results = runner.run(jobs, on_done=lambda job: bar.update(1))
    bar.close()
    by_option = []
    for opt in options:
        outcomes = {run.name: results[(run, opt)] for run in spec.runs}
        rows = figure_rows(spec, outcomes)
        by_option.append(
            {
                "choices": opt.key(),
                "label": opt.label(),
                "differs_from_main": opt.differs_from(spec.main),
                "reproduces_paper": bool(rows) and all(r.passed for r in rows),
                "rows": [r.to_dict() for r in rows],
                "runs": outcomes,
            }
        )
    record = {
        "figure": spec.name,
        "title": spec.title,
        "quick": quick,
        "settings": {run.name: run.describe() for run in spec.runs},
        "main": spec.main.key(),
        "main_label": spec.main.label(),
        "notes": spec.notes,
        "source": spec.source,
        "rows": by_option[0]["rows"],
        "options": by_option,
    }
    folder = out / spec.name
    figures = draw_figure(spec, record)
    for png, fig in figures.items():
        save_png(fig, folder / png)
    record["panels"] = list(figures)
    write_json_atomic(record, folder / f"{spec.name}.json")
    return record


def draw_figure(spec: FigureSpec, record: dict) -> dict[str, Figure]:
    """The PNG panels of ``spec`` drawn from its JSON ``record`` (file name -> Figure); nothing is trained."""
    draw = {
        "fig2": _draw_fig2,
        "fig6": _draw_fig6,
        "fig7": _draw_qa,
        "fig10": _draw_qa,
        "fig11": _draw_fig11,
        "fig12": _draw_fig12,
        "fig13": _draw_fig13,
    }.get(spec.name, _draw_circle)
    return draw(spec, record)


def _main_runs(record: dict) -> dict[str, dict]:
    return record["options"][0]["runs"]


def disagreeing_claims(rows: list[dict], *keywords: str) -> list[str]:
    """The claims of ``rows`` that disagree with the paper and mention one of ``keywords``.

    The red mark of a panel is driven by this (the report's own verdicts), never by the figure's name.

    >>> rows = [{"claim": "V(T) ∝ all-ones", "agrees": False}, {"claim": "test accuracy ≈ 1/K", "agrees": True}]
    >>> disagreeing_claims(rows, "V(T)"), disagreeing_claims(rows, "accuracy")
    (['V(T) ∝ all-ones'], [])
    """
    return [r["claim"] for r in rows if not r["agrees"] and any(k in r["claim"] for k in keywords)]


def _option_label(opt: dict) -> str:
    """Legend label of an option: what it changes from main, and ✘ when one of its claims disagrees."""
    label = "main: " + opt["label"] if opt["differs_from_main"] == "main" else opt["differs_from_main"]
    if opt["rows"] and not opt["reproduces_paper"]:
        label += " (✘ disagrees)"
    return label


def _option_series(
    record: dict, run: str, key: str, indices: list[int] | None = None
) -> list[tuple[str, list]]:
    """(legend label, series) of ``key`` for the options ``indices`` (default: all; the main option first)."""
    out = []
    for i in range(len(record["options"])) if indices is None else indices:
        opt = record["options"][i]
        o = opt["runs"][run]
        label = _option_label(opt)
        out.append((label, o["series"][key]) if o["ok"] else (label + " (failed: see JSON)", []))
    return out


def _option_colours(record: dict, indices: list[int] | None = None) -> list[str]:
    """One colour per option, the same in every panel of a figure."""
    n = len(record["options"])
    return [f"C{i % 10}" for i in (range(n) if indices is None else indices)]


def _draw_fig2(spec: FigureSpec, record: dict) -> dict[str, Figure]:
    """Π for p = 1/2 and p = 1, example walks, V(1) of Lemma C.1 in closed form and from the sampled run."""
    fig, ax = new_figure(
        2,
        3,
        "Fig 2 (our choice): the random-walk task on the K=6 cycle and the first GD step, N=97, η=1, ε=0.1",
        quick=record["quick"],
    )
    runs = _main_runs(record)
    closed = []
    for col, run in enumerate(spec.runs):
        walk = CircleWalk(run.K, run.N, run.p)
        Pi = walk.transition_matrix_float()
        heatmap(fig, ax[0, col], Pi, f"Π, p={run.p} (row = current node)", "next node j", "current node i")
        # V(1) = (η/(εNK)) Σ_{i=1}^{N-1} (Πᵀ)^{N-i}  (Lemma C.1, log-loss, population)
        PiT = Pi.T
        acc = np.zeros_like(Pi)
        power = np.eye(run.K)
        for _ in range(run.N - 1):
            power = power @ PiT
            acc += power
        closed.append(run.eta / (run.eps * run.N * run.K) * acc)
    o = runs["p=1/2"]
    V1_run = (
        np.array(o["snapshots"]["1"]["V"]) if o["ok"] and "1" in o["snapshots"] else np.array(o["final"]["V"])
    )
    limits = colour_limits(*closed, V1_run)  # one colour scale for the three V(1) panels
    for col, run in enumerate(spec.runs):
        heatmap(fig, ax[1, col], closed[col], f"V(1), Lemma C.1 closed form, p={run.p}", limits=limits)
    heatmap(
        fig,
        ax[1, 2],
        V1_run,
        f"V(1) after one GD step on {spec.runs[0].train_size} sampled walks, p=1/2",
        limits=limits,
    )
    a = ax[0, 2]
    rng = np.random.default_rng(EXAMPLE_SEED)
    for run, style, colour in zip(spec.runs, ("-", "--"), ("tab:blue", "tab:orange")):
        tokens, labels = CircleWalk(run.K, 25, run.p).sample(2, generator=rng)
        for w in range(2):
            a.plot(
                np.arange(1, 26),
                np.r_[tokens[w], labels[w]] + 1 + (w - 0.5) * 0.16,
                style,
                color=colour,
                marker="os"[w],
                ms=3.5,
                lw=1.2,
                alpha=0.9 if w == 0 else 0.6,
                label=f"p={run.p}, walk {w + 1}",
            )
    a.set_title("Example walks (first 25 steps; walks offset by ±0.08 to stay apart)", fontsize=9)
    a.set_xlabel("step i")
    a.set_ylabel("node s_i")
    a.set_yticks(range(1, spec.runs[0].K + 1))
    legend_outside(a, "below", ncol=2)
    return {"fig2.png": fig}


def _draw_circle(spec: FigureSpec, record: dict) -> dict[str, Figure]:
    """Figs 4/5/8/9: accuracy, V(T), attention at T, Πᵀ; and a panel comparing the options."""
    (run,) = spec.runs
    o = _main_runs(record)[run.name]
    rows = record["options"][0]["rows"]
    walk = CircleWalk(run.K, run.N, run.p)
    K, opt_acc = run.K, float(walk.opt)
    refs = [
        (opt_acc, "optimum", f"OPT = max(p, 1-p) = {opt_acc:g}"),
        (1 / K, "chance", f"chance 1/K = {1 / K:.3g}"),
    ]
    fig, ax = new_figure(
        1,
        4,
        f"{spec.name}: {run.describe()}; main option: {record['main_label']}",
        width=4.4,
        height=4.2,
        quick=record["quick"],
    )
    if o["ok"]:
        curves(
            ax[0, 0],
            [("test accuracy", o["series"]["test_accuracy"])],
            "Test accuracy",
            "accuracy",
            refs=refs,
            legend="below",
        )
        ax[0, 0].set_ylim(-0.02, 1.05)
        T = len(o["series"]["test_accuracy"]) - 1
        heatmap(
            fig,
            ax[0, 1],
            np.array(o["final"]["V"]),
            f"V(T), T={T}",
            "column j (token node)",
            "row i (label node)",
        )
        attention_profile(
            ax[0, 2],
            [(f"T={T}", o["final"]["attention_profile"])],
            "Attention over positions at T",
            legend=None,
        )
    else:
        ax[0, 0].text(0.05, 0.5, "run failed:\n" + o["error"][:200], fontsize=7, wrap=True)
    mark_disagreement(ax[0, 0], disagreeing_claims(rows, "accuracy", "OPT"))
    mark_disagreement(ax[0, 1], disagreeing_claims(rows, "V(T)"))
    mark_disagreement(ax[0, 2], disagreeing_claims(rows, "attention"))
    heatmap(fig, ax[0, 3], walk.transition_matrix_float().T, "Πᵀ (the target direction)")
    success = run.p not in ("0", "1")
    opts, ax2 = new_figure(
        1, 2, f"{spec.name}, every option: {run.describe()}", width=5.2, height=4.2, quick=record["quick"]
    )
    colours = _option_colours(record)
    curves(
        ax2[0, 0],
        _option_series(record, run.name, "test_accuracy"),
        "Test accuracy by option",
        "accuracy",
        refs=refs,
        legend=None,
        colours=colours,
    )
    ax2[0, 0].set_ylim(-0.02, 1.05)
    if success:
        curves(
            ax2[0, 1],
            _option_series(record, run.name, "parent_attention"),
            "Attention on the parent x_(N-1)",
            "mean attention on x_(N-1)",
            legend=None,
            colours=colours,
        )
        ax2[0, 1].set_ylim(-0.02, 1.05)
    else:
        curves(
            ax2[0, 1],
            _option_series(record, run.name, "attention_spread"),
            "Attention spread (0 = equal attention)",
            "max_n (max_i S_i - min_i S_i)",
            log=True,
            refs=[(C.SPREAD_MAX, "threshold", f"threshold {C.SPREAD_MAX:g}")],
            legend=None,
            colours=colours,
        )
    handles, labels = _merged_legend(ax2[0, 0], ax2[0, 1])
    opts.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=8)
    return {f"{spec.name}.png": fig, f"{spec.name}_options.png": opts}


def _merged_legend(*axes: Axes) -> tuple[list, list]:
    """Handles and labels of ``axes`` without repeats (a figure legend for panels sharing their series)."""
    seen: dict[str, object] = {}
    for a in axes:
        for h, label in zip(*a.get_legend_handles_labels()):
            seen.setdefault(label, h)
    return list(seen.values()), list(seen)


def option_groups(spec: FigureSpec) -> list[tuple[str, list[int]]]:
    """Fig 6's options in panels of at most four: (title, option indices), the sum-loss option repeated
    as the baseline of the μ/precision and seed panels. Indices follow ``spec.all_options()``.

    >>> from rwtoolkit.analyses.repro._experiments import figure_specs
    >>> option_groups(figure_specs()["fig6"])
    [('loss and KL normalisation', [0, 1, 2]), ('μ and precision', [1, 3, 4, 5]), ('seeds', [1, 6, 7])]
    """
    options = spec.all_options()
    main = spec.main
    base = next(
        (
            i
            for i, c in enumerate(options)
            if c.reduction != main.reduction
            and c.seed == main.seed
            and c.mu == main.mu
            and c.dtype == main.dtype
            and c.kl_norm == main.kl_norm
        ),
        None,
    )
    loss = [
        i for i, c in enumerate(options) if c.mu == main.mu and c.dtype == main.dtype and c.seed == main.seed
    ]
    scale = [
        i for i, c in enumerate(options) if (c.mu != main.mu or c.dtype != main.dtype) and c.seed == main.seed
    ]
    seeds = [i for i, c in enumerate(options) if c.seed != main.seed]
    groups = [("loss and KL normalisation", loss)]
    prefix = [base] if base is not None else []
    if scale:
        groups.append(("μ and precision", prefix + scale))
    if seeds:
        groups.append(("seeds", prefix + seeds))
    return groups


def _draw_fig6(spec: FigureSpec, record: dict) -> dict[str, Figure]:
    """Fig 6: accuracy and KL for p = 1/2 and p = 1; the options split into panels of at most four lines."""
    groups = option_groups(spec)
    fig, ax = new_figure(
        4,
        len(groups),
        f"fig6: {spec.title}; K=6, N=97, M=1000, {spec.runs[0].train_size} walks",
        width=5.2,
        height=3.0,
        quick=record["quick"],
    )
    rows = record["options"][0]["rows"]
    for col, (what, idx) in enumerate(groups):
        colours = _option_colours(record, idx)
        for r, run in enumerate(spec.runs):
            opt_acc = float(CircleWalk(run.K, run.N, run.p).opt)
            a = ax[2 * r, col]
            curves(
                a,
                _option_series(record, run.name, "test_accuracy", idx),
                f"Test accuracy, {run.name}: {what}",
                "accuracy",
                refs=[(opt_acc, "optimum", f"OPT = {opt_acc:g}")],
                legend=None,
                colours=colours,
            )
            a.set_ylim(-0.02, 1.05)
            curves(
                ax[2 * r + 1, col],
                _option_series(record, run.name, "kl", idx),
                f"KL(true law of y | X ‖ f normalised), {run.name}: {what}",
                "KL divergence",
                log=True,
                legend=None,
                colours=colours,
            )
            if 0 in idx:  # the main option's panels carry the mark of its disagreeing claims
                mark_disagreement(
                    a, disagreeing_claims(rows, f"p = {run.p} reach", f"p = {run.p} does not reach")
                )
                mark_disagreement(ax[2 * r + 1, col], disagreeing_claims(rows, "KL") if r == 0 else [])
        handles, labels = _merged_legend(*ax[:, col])  # the column's options and its OPT line
        ax[3, col].legend(
            handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), borderaxespad=0
        )
    return {"fig6.png": fig}


def _draw_qa(spec: FigureSpec, record: dict) -> dict[str, Figure]:
    """Figs 7/10: test accuracy of QA Task 1 and Task 2, every option as one line."""
    fig, ax = new_figure(
        1,
        2,
        f"{spec.name}: {spec.title}, {spec.runs[0].train_size} samples",
        width=5.6,
        height=4.2,
        quick=record["quick"],
    )
    rows = record["options"][0]["rows"]
    colours = _option_colours(record)
    for col, run in enumerate(spec.runs):
        refs = [(1.0, "optimum", "100 % (Bayes accuracy)"), (0.5, "chance", "50 % (chance)")]
        curves(
            ax[0, col],
            _option_series(record, run.name, "test_accuracy"),
            f"Test accuracy, QA {run.name}",
            "accuracy",
            refs=refs,
            legend=None,
            colours=colours,
        )
        ax[0, col].set_ylim(-0.02, 1.05)
        mark_disagreement(ax[0, col], disagreeing_claims(rows, run.name.capitalize()))
    handles, labels = _merged_legend(ax[0, 0], ax[0, 1])
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize=8)
    return {f"{spec.name}.png": fig}


def _snapshot_steps(o: dict) -> list[str]:
    return sorted(o["snapshots"], key=int) if o["ok"] else []


#: Options drawn in Figs 11-13 (main, sum loss, sum loss seed 1); the claims cover every option.
VIS_DRAWN = 3


def _vis_rows(spec: FigureSpec, record: dict) -> list[tuple[str, dict, bool]]:
    """(label, outcome, is the main option's p = 1/2 run) for each run of the Fig 6 pair under each drawn
    option (main first)."""
    out = []
    for i, opt in enumerate(record["options"][:VIS_DRAWN]):
        tag = opt["differs_from_main"].replace(" (η × train size)", "")  # short enough for a panel title
        for j, run in enumerate(spec.runs):
            out.append((f"{run.name}, {tag}", opt["runs"][run.name], i == 0 and j == 0))
    return out


def _draw_fig11(spec: FigureSpec, record: dict) -> dict[str, Figure]:
    """Fig 11: V at the snapshot iterations of the Fig 6 runs; one row per p and option, one colour scale
    per row (so that the change over time is visible) with one colour bar."""
    rows = _vis_rows(spec, record)
    claims = record["options"][0]["rows"]
    n_steps = max(len(_snapshot_steps(o)) for _, o, _ in rows)
    fig, ax = new_figure(
        len(rows),
        max(1, n_steps),
        f"fig11: {spec.title}; main option: {record['main_label']}",
        width=3.0,
        height=2.7,
        quick=record["quick"],
    )
    for row, (label, o, main) in enumerate(rows):
        steps = _snapshot_steps(o)
        if not steps:
            continue
        Vs = [np.array(o["snapshots"][t]["V"]) for t in steps]
        limits = colour_limits(*Vs)
        for col, (t, V) in enumerate(zip(steps, Vs)):
            im = heatmap(fig, ax[row, col], V, f"V at t={t}, {label}", limits=limits, colourbar=False)
        fig.colorbar(im, ax=list(ax[row, :]), fraction=0.02, pad=0.01, label=f"V ({label})")
        if main:
            mark_disagreement(ax[row, len(steps) - 1], disagreeing_claims(claims, "V approaches"))
    return {"fig11.png": fig}


def _draw_fig12(spec: FigureSpec, record: dict) -> dict[str, Figure]:
    """Fig 12: the mean attention profile at the snapshot iterations of the Fig 6 runs."""
    rows = _vis_rows(spec, record)
    claims = record["options"][0]["rows"]
    fig, ax = new_figure(
        (len(rows) + 1) // 2,
        2,
        f"fig12: {spec.title}; main option: {record['main_label']}",
        width=5.6,
        height=3.4,
        quick=record["quick"],
    )
    for i, (label, o, main) in enumerate(rows):
        a = ax[i // 2, i % 2]
        attention_profile(
            a,
            [(f"t={t}", o["snapshots"][t]["attention_profile"]) for t in _snapshot_steps(o)],
            f"Mean attention over positions, {label}",
            legend="right",
        )
        if main:
            mark_disagreement(a, disagreeing_claims(claims, "attention"))
    return {"fig12.png": fig}


def _draw_fig13(spec: FigureSpec, record: dict) -> dict[str, Figure]:
    """Fig 13: the attended token X·S (mean over test inputs) at the snapshot iterations, and for probe walks at T."""
    rows = _vis_rows(spec, record)
    fig, ax = new_figure(
        len(rows),
        2,
        f"fig13: {spec.title}; main option: {record['main_label']}",
        width=5.8,
        height=3.0,
        quick=record["quick"],
    )
    means = [
        np.array([o["snapshots"][t]["attended_token"] for t in _snapshot_steps(o)])
        for _, o, _ in rows
        if _snapshot_steps(o)
    ]
    limits = colour_limits(*means) if means else None  # one scale for every row: rows are compared
    for row, (label, o, _) in enumerate(rows):
        steps = _snapshot_steps(o)
        if steps:
            Xs = np.array([o["snapshots"][t]["attended_token"] for t in steps])  # (steps, K)
            heatmap(
                fig,
                ax[row, 0],
                Xs,
                f"mean over test inputs of X·S, {label}",
                "node k",
                "iteration t",
                limits=limits,
            )
            ax[row, 0].set_yticks(range(len(steps)), steps)
        probe = o.get("probe")
        if probe:
            a = ax[row, 1]
            xs = np.array(probe["attended_token"])  # (walks, K)
            K = xs.shape[1]
            width = 0.8 / len(xs)
            for w, (vec, parent) in enumerate(zip(xs, probe["parent"])):
                a.bar(
                    np.arange(1, K + 1) + w * width - 0.4 + width / 2,
                    vec,
                    width,
                    label=f"walk {w + 1}: parent x_(N-1) = node {parent + 1}",
                )
            a.set_ylim(0, 1.05)
            a.set_title(f"X·S at the last iteration for {len(xs)} fixed walks, {label}", fontsize=9)
            a.set_xlabel("node k")
            a.set_ylabel("[X·S]_k")
            legend_outside(a, "right")
    return {"fig13.png": fig}
