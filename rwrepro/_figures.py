"""Build one reproduced figure: train its runs under every option, evaluate its claims, draw, save JSON."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from rwio import write_json_atomic
from rwrepro import _claims as C
from rwrepro._experiments import FigureSpec
from rwrepro._plots import attention_profile, curves, heatmap, new_figure, save_png
from rwrepro._runner import Runner
from rwtasks import CircleWalk

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
    bar = tqdm(total=len(jobs), desc=f"{spec.name} ({len(jobs)} runs)", unit="run",
               disable=not (progress and sys.stderr.isatty()))  # fmt: skip
    results = runner.run(jobs, on_done=lambda job: bar.update(1))
    bar.close()
    by_option = []
    for opt in options:
        outcomes = {run.name: results[(run, opt)] for run in spec.runs}
        rows = figure_rows(spec, outcomes)
        by_option.append({
            "choices": opt.key(),
            "label": opt.label(),
            "differs_from_main": opt.differs_from(spec.main),
            "reproduces_paper": bool(rows) and all(r.agrees for r in rows),
            "rows": [r.to_dict() for r in rows],
            "runs": outcomes,
        })  # fmt: skip
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
    draw = {"fig2": _draw_fig2, "fig6": _draw_fig6, "fig7": _draw_qa, "fig10": _draw_qa,
            "fig11": _draw_fig11, "fig12": _draw_fig12, "fig13": _draw_fig13}.get(spec.name, _draw_circle)  # fmt: skip
    record["panels"] = draw(spec, record, folder)
    write_json_atomic(record, folder / f"{spec.name}.json")
    return record


def _main_runs(record: dict) -> dict[str, dict]:
    return record["options"][0]["runs"]


def _option_series(record: dict, run: str, key: str) -> list[tuple[str, list]]:
    """(legend label, series) of ``key`` for every option that ran; the main option first."""
    out = []
    for opt in record["options"]:
        o = opt["runs"][run]
        label = "main: " + opt["label"] if opt["differs_from_main"] == "main" else opt["differs_from_main"]
        if o["ok"]:
            out.append((label, o["series"][key]))
        else:
            out.append((label + " (failed: see JSON)", []))
    return out


def _draw_fig2(spec: FigureSpec, record: dict, folder: Path) -> list[str]:
    """Π for p = 1/2 and p = 1, example walks, V(1) of Lemma C.1 in closed form and from the sampled run."""
    fig, ax = new_figure(2, 3, "Fig 2 (our choice): the random-walk task on the K=6 cycle and the first GD step, "
                         "N=97, η=1, ε=0.1")  # fmt: skip
    runs = _main_runs(record)
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
        V1 = run.eta / (run.eps * run.N * run.K) * acc
        heatmap(fig, ax[1, col], V1, f"V(1), Lemma C.1 closed form, p={run.p}")
    o = runs["p=1/2"]
    V1_run = np.array(o["snapshots"]["1"]["V"]) if o["ok"] and "1" in o["snapshots"] else np.array(o["final"]["V"])
    heatmap(fig, ax[1, 2], V1_run, f"V(1) after one GD step on {spec.runs[0].train_size} sampled walks, p=1/2")
    a = ax[0, 2]
    rng = np.random.default_rng(EXAMPLE_SEED)
    for run, style in zip(spec.runs, ("-", "--")):
        tokens, labels = CircleWalk(run.K, 25, run.p).sample(3, generator=rng)
        for w in range(3):
            a.plot(np.arange(1, 26), np.r_[tokens[w], labels[w]] + 1, style, marker=".", lw=1,
                   label=f"p={run.p}, walk {w + 1}")  # fmt: skip
    a.set_title("Example walks (first 25 steps)", fontsize=9)
    a.set_xlabel("step i")
    a.set_ylabel("node s_i")
    a.legend(fontsize=6)
    save_png(fig, folder / "fig2.png")
    return ["fig2.png"]


def _draw_circle(spec: FigureSpec, record: dict, folder: Path) -> list[str]:
    """Figs 4/5/8/9: accuracy, V(T), attention at T, Πᵀ; and a panel comparing the options."""
    (run,) = spec.runs
    o = _main_runs(record)[run.name]
    walk = CircleWalk(run.K, run.N, run.p)
    K, opt_acc = run.K, float(walk.opt)
    fig, ax = new_figure(1, 4, f"{spec.name}: {run.describe()}; main option: {record['main_label']}", width=4.4)
    if o["ok"]:
        curves(ax[0, 0], [("test accuracy", o["series"]["test_accuracy"])], "Test accuracy", "accuracy",
               hlines=[(opt_acc, f"OPT = {opt_acc:g}"), (1 / K, "1/K")])  # fmt: skip
        T = len(o["series"]["test_accuracy"]) - 1
        heatmap(fig, ax[0, 1], np.array(o["final"]["V"]), f"V(T), T={T}", "column j (token node)", "row i (label node)")
        attention_profile(ax[0, 2], [(f"T={T}", o["final"]["attention_profile"])], "Attention over positions at T")
    else:
        ax[0, 0].text(0.05, 0.5, "run failed:\n" + o["error"][:200], fontsize=7, wrap=True)
    heatmap(fig, ax[0, 3], walk.transition_matrix_float().T, "Πᵀ (the target direction)")
    save_png(fig, folder / f"{spec.name}.png")
    success = run.p not in ("0", "1")
    fig, ax = new_figure(1, 2, f"{spec.name}, every option: {run.describe()}", width=6.0)
    curves(ax[0, 0], _option_series(record, run.name, "test_accuracy"), "Test accuracy by option", "accuracy",
           hlines=[(opt_acc, "OPT"), (1 / K, "1/K")])  # fmt: skip
    if success:
        curves(ax[0, 1], _option_series(record, run.name, "parent_attention"), "Attention on the parent x_(N-1)",
               "mean attention on x_(N-1)")  # fmt: skip
    else:
        curves(ax[0, 1], _option_series(record, run.name, "attention_spread"),
               "Attention spread (0 = equal attention; zeros drawn at 1e-20)", "max_n (max_i S_i - min_i S_i)",
               log=True, hlines=[(C.SPREAD_MAX, "threshold")])  # fmt: skip
    save_png(fig, folder / f"{spec.name}_options.png")
    return [f"{spec.name}.png", f"{spec.name}_options.png"]


def _draw_fig6(spec: FigureSpec, record: dict, folder: Path) -> list[str]:
    """Fig 6: accuracy and KL for p = 1/2 and p = 1, every option as one line."""
    fig, ax = new_figure(2, 2, f"fig6: {spec.title}; K=6, N=97, M=1000, {spec.runs[0].train_size} walks", width=6.0)
    for row, run in enumerate(spec.runs):
        opt_acc = float(CircleWalk(run.K, run.N, run.p).opt)
        curves(ax[row, 0], _option_series(record, run.name, "test_accuracy"), f"Test accuracy, {run.name}",
               "accuracy", hlines=[(opt_acc, "OPT")])  # fmt: skip
        curves(ax[row, 1], _option_series(record, run.name, "kl"),
               f"KL(true law of y | X ‖ f normalised), {run.name}", "KL divergence", log=True)  # fmt: skip
    save_png(fig, folder / "fig6.png")
    return ["fig6.png"]


def _draw_qa(spec: FigureSpec, record: dict, folder: Path) -> list[str]:
    """Figs 7/10: test accuracy of QA Task 1 and Task 2, every option as one line."""
    fig, ax = new_figure(1, 2, f"{spec.name}: {spec.title}, {spec.runs[0].train_size} samples", width=6.0)
    for col, run in enumerate(spec.runs):
        curves(ax[0, col], _option_series(record, run.name, "test_accuracy"), f"Test accuracy, QA {run.name}",
               "accuracy", hlines=[(1.0, "100 %"), (0.5, "50 %")])  # fmt: skip
    save_png(fig, folder / f"{spec.name}.png")
    return [f"{spec.name}.png"]


def _snapshot_steps(o: dict) -> list[str]:
    return sorted(o["snapshots"], key=int) if o["ok"] else []


#: Options drawn in Figs 11-13 (main, sum loss, sum loss seed 1); the claims cover every option.
VIS_DRAWN = 3


def _vis_rows(spec: FigureSpec, record: dict) -> list[tuple[str, dict]]:
    """(label, outcome) for each run of the Fig 6 pair under each drawn option (main first)."""
    out = []
    for opt in record["options"][:VIS_DRAWN]:
        tag = opt["differs_from_main"].replace(" (η × train size)", "")  # short enough for a panel title
        for run in spec.runs:
            out.append((f"{run.name}, {tag}", opt["runs"][run.name]))
    return out


def _draw_fig11(spec: FigureSpec, record: dict, folder: Path) -> list[str]:
    """Fig 11: V at the snapshot iterations of the Fig 6 runs (one row per p and option)."""
    rows = _vis_rows(spec, record)
    n_steps = max(len(_snapshot_steps(o)) for _, o in rows)
    fig, ax = new_figure(len(rows), max(1, n_steps), f"fig11: {spec.title}; main option: {record['main_label']}",
                         width=3.4, height=3.0)  # fmt: skip
    for row, (label, o) in enumerate(rows):
        for col, t in enumerate(_snapshot_steps(o)):
            heatmap(fig, ax[row, col], np.array(o["snapshots"][t]["V"]), f"V at t={t}, {label}")
    save_png(fig, folder / "fig11.png")
    return ["fig11.png"]


def _draw_fig12(spec: FigureSpec, record: dict, folder: Path) -> list[str]:
    """Fig 12: the mean attention profile at the snapshot iterations of the Fig 6 runs."""
    rows = _vis_rows(spec, record)
    fig, ax = new_figure((len(rows) + 1) // 2, 2, f"fig12: {spec.title}; main option: {record['main_label']}",
                         width=6.0)  # fmt: skip
    for i, (label, o) in enumerate(rows):
        attention_profile(ax[i // 2, i % 2], [(f"t={t}", o["snapshots"][t]["attention_profile"]) for t in _snapshot_steps(o)],
                          f"Mean attention over positions, {label}")  # fmt: skip
    save_png(fig, folder / "fig12.png")
    return ["fig12.png"]


def _draw_fig13(spec: FigureSpec, record: dict, folder: Path) -> list[str]:
    """Fig 13: the attended token X·S (mean over test inputs) at the snapshot iterations, and for probe walks at T."""
    rows = _vis_rows(spec, record)
    fig, ax = new_figure(len(rows), 2, f"fig13: {spec.title}; main option: {record['main_label']}", width=6.0,
                         height=3.2)  # fmt: skip
    for row, (label, o) in enumerate(rows):
        steps = _snapshot_steps(o)
        if steps:
            Xs = np.array([o["snapshots"][t]["attended_token"] for t in steps])  # (steps, K)
            heatmap(fig, ax[row, 0], Xs, f"mean over test inputs of X·S, {label}", "node k", "iteration t")
            ax[row, 0].set_yticks(range(len(steps)), steps)
        probe = o.get("probe")
        if probe:
            a = ax[row, 1]
            xs = np.array(probe["attended_token"])  # (walks, K)
            K = xs.shape[1]
            width = 0.8 / len(xs)
            for w, (vec, parent) in enumerate(zip(xs, probe["parent"])):
                a.bar(np.arange(1, K + 1) + w * width - 0.4 + width / 2, vec, width,
                      label=f"walk {w + 1}: parent x_(N-1) = node {parent + 1}")  # fmt: skip
            a.set_title(f"X·S at the last iteration for {len(xs)} fixed walks, {label}", fontsize=9)
            a.set_xlabel("node k")
            a.set_ylabel("[X·S]_k")
            a.legend(fontsize=6.5)
    save_png(fig, folder / "fig13.png")
    return ["fig13.png"]
