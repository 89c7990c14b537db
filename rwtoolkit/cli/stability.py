"""``rw stability``: does a stuck task's symmetric manifold attract or repel, and when does a run leave it?"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import rwtoolkit.models
from rwtoolkit.cli._models import add_model_arguments, model_from_args
from rwtoolkit.cli._task_args import (
    add_spec_argument,
    add_task_arguments,
    options_in_place,
    parse_int,
    task_or_spec,
)
from rwtoolkit.io import check_output_file

if TYPE_CHECKING:
    from rwtoolkit.tasks import CircleWalk, FiniteTask

#: The grids of --grid (the same values as rwtoolkit.analyses.stability.GRIDS; kept here so --help loads no package).
_GRID_HELP = "quick (default): the given --sigmas, --mus, --dtypes, --seeds; full: sigma 1e-2..1e-12, mu 1, sqrt(1000), 500, float32 and float64, 5 seeds"


def _positive_float(text: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--{name}={text!r} is not a number: {name} must be a number > 0") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"--{name}={text!r} is out of range: {name} must be a finite number > 0")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Task options (or a spec file) plus the run length, GD settings, sweep grid and outputs."""
    add_task_arguments(
        parser,
        "circle: 0 or 1 (N = rK+1), or 1/2 (K = 4, N odd): the values where the signal C vanishes",
    )
    add_spec_argument(parser, "rw stability")
    add_model_arguments(
        parser,
        "another model: is an invariant manifold (--manifold) stable, and is the run on it stuck? "
        "(the generic linearisation; the paper's model runs Lemma D.3's reduced map)",
    )
    parser.add_argument(
        "--manifold",
        default="auto",
        help="with --model: zero (the parameters GD from zero keeps at 0), symmetry (the fixed subspace of "
        "the task's symmetry group), auto (default: zero when a parameter stays 0, else symmetry)",
    )
    parser.add_argument(
        "--steps", default="200", help="GD steps to linearise and train (2..2000, default 200)"
    )
    parser.add_argument("--eta", default="1", help="learning rate > 0 (default 1)")
    parser.add_argument("--mu", default="1", help="mu = |p_i|^2 > 0 (default 1); --mus gives several")
    parser.add_argument("--mus", help="comma-separated mu values, one linearisation each (overrides --mu)")
    parser.add_argument("--eps", default="0.1", help="log-loss epsilon > 0 (default 0.1)")
    parser.add_argument(
        "--sigmas",
        default=None,
        help="comma-separated Gaussian init scales in (0, 1) (default 1e-2,1e-4,1e-6,1e-8)",
    )
    parser.add_argument(
        "--dtypes",
        default=None,
        help="dtypes of the Gaussian-init runs: float32, float64 (default float64)",
    )
    parser.add_argument("--seeds", default=None, help="training seeds per init scale (1..20, default 2)")
    parser.add_argument("--grid", default="quick", choices=("quick", "full"), help=_GRID_HELP)
    parser.add_argument(
        "--threshold",
        default="1e-3",
        help="escape threshold on V's relative distance from the manifold, in (0, 1); key_query: escape "
        "when ||(W_K, W_Q)|| has grown by the factor 1/threshold",
    )
    parser.add_argument(
        "--sum",
        default="auto",
        help="population sums of the Hessians: plain (every input, around the manifold the exact "
        "trajectory finds), orbits (one term per orbit of the task's symmetry group, around its fixed "
        "subspace), auto (default: orbits above 4096 inputs); the report's time is estimated first",
    )
    parser.add_argument(
        "--predict-only",
        action="store_true",
        help="leave out the measured escape runs (they train off the manifold over every input); keep "
        "the verdict and the predicted escapes",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="write the report (rwtoolkit/schemas/stability.schema.json, for every model)",
    )
    parser.add_argument(
        "--png", metavar="FILE", help="write the figure (growth along t; escape against sigma, per mu)"
    )


def _task(args: argparse.Namespace):
    return task_or_spec(args, "rw stability")


#: The quick grid's options and their defaults (--mus: none, --mu gives one); --grid full sets all of them.
_GRID_OPTIONS = {"sigmas": "1e-2,1e-4,1e-6,1e-8", "dtypes": "float64", "seeds": "2", "mus": None}


def _grid_options(args: argparse.Namespace) -> None:
    """--sigmas, --dtypes, --seeds, --mus: refused in one line with --grid full, which replaces them (they were
    silently dropped); else their defaults where not given."""
    why = (
        "{flag} is out of place with --grid full, which sets sigma, mu, dtypes and seeds itself: drop {flag}, "
        "or use --grid quick"
    )
    options_in_place(args, _GRID_OPTIONS, why if args.grid == "full" else None)


def run(args: argparse.Namespace) -> int:
    """Validate everything, compute the report, print the one-line verdict, write JSON / PNG if asked."""
    for option, path in (("--json", args.json), ("--png", args.png)):
        if path:
            check_output_file(path, option)
    model = model_from_args(args)
    _grid_options(args)
    steps = parse_int(args.steps, "steps", 2)
    seeds = parse_int(args.seeds, "seeds", 1)
    eta, mu, eps = (_positive_float(getattr(args, n), n) for n in ("eta", "mu", "eps"))
    threshold = _positive_float(args.threshold, "threshold")
    sigmas = [_positive_float(s, "sigmas") for s in args.sigmas.split(",")]
    mus = [mu] if args.mus is None else [_positive_float(m, "mus") for m in args.mus.split(",")]
    dtypes = [d.strip() for d in args.dtypes.split(",")]
    task = _task(args)
    from rwtoolkit.analyses.stability import GRIDS, check_stability_args, view_report

    if args.grid == "full":
        grid = GRIDS["full"]
        sigmas, mus, dtypes, seeds = (
            list(grid["sigmas"]),
            list(grid["mus"]),
            list(grid["dtypes"]),
            grid["seeds"],
        )
    view = check_stability_args(  # the selected linearisation's view: every refusal here, before any work
        task,
        steps,
        sigmas,
        seeds,
        threshold,
        mus,
        dtypes,
        args.sum,
        not args.predict_only,
        model=model,
        manifold=args.manifold,
        eta=eta,
        eps=eps,
    )
    report = _one_thread(lambda: view_report(view, progress=True))
    return _write(args, report, view.task, _command(model))


def _command(model: rwtoolkit.models.Model) -> str:
    """How the verdict line names the command: the model and its settings when it is not the paper's."""
    if model.name == rwtoolkit.models.DEFAULT_MODEL:
        return "rw stability"
    hyper = "".join(f" {k}={v}" for k, v in model.hyperparameters.items())
    return f"rw stability --model {model.target or model.name}{hyper}"


def _one_thread(compute: Callable[[], dict]) -> dict:
    """The report computed on one torch thread: same bytes on every machine (one summation order)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return compute()
    finally:
        torch.set_num_threads(previous)


def _stuck_proof(task: CircleWalk | FiniteTask, report: dict) -> dict:
    """Stuck for every t (proved), or evidence with the reason the proof was not attempted."""
    from rwtoolkit.engines.exact import stuck_proof
    from rwtoolkit.io import STUCK_WORDS, Verdict

    model = report.get("model", {}).get("name", rwtoolkit.models.DEFAULT_MODEL)
    hyper = {k: v for k, v in report.get("model", {}).items() if k != "name"}
    try:
        return stuck_proof(task, rwtoolkit.models.get_model(model, **hyper))
    except ValueError as err:
        return {"verdict": STUCK_WORDS.word(Verdict.HOLDS), "why": f"no proof attempted: {err}"}


def _write(args: argparse.Namespace, report: dict, task: CircleWalk | FiniteTask, command: str) -> int:
    """The one-line verdict, then the JSON and the figure if asked."""
    from rwtoolkit.analyses.stability import escape_summary, plot_report, task_info
    from rwtoolkit.io import write_json_atomic

    info = task_info(task)
    where = " ".join(f"{k}={v}" for k, v in info.items() if k in ("K", "N", "p"))
    name = "" if info["name"] == "circle" else f"{info['name']} "
    report["stuck_proof"] = _stuck_proof(task, report)
    print(f"{command} {name}{where}: {report['verdict']['line']}")
    print(f"  {report['stuck_proof']['verdict']}: {report['stuck_proof']['why']}")
    if args.json:
        print(f"wrote {write_json_atomic(report, args.json)}")
    if args.png:
        plot_report(report, args.png)
        print(f"wrote {args.png}")
    if not (args.json or args.png):  # the escape tables would otherwise be computed and thrown away
        print(escape_summary(report))
        print("(--json FILE writes the whole report, --png FILE its figure)")
    return 0
