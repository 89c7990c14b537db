"""``rw stability``: does the Theorem 4.1 manifold attract or repel, and when does a run leave it?"""

from __future__ import annotations

import argparse
import math

from rwcli._task_args import add_task_arguments, parse_int, task_from_args
from rwio import check_output_file


def _positive_float(text: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--{name}={text!r} is not a number: {name} must be a number > 0") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"--{name}={text!r} is out of range: {name} must be a finite number > 0")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Task options plus the run length, GD settings, init scales and outputs."""
    add_task_arguments(parser, "circle: 0 or 1 (the manifold of Theorem 4.1 needs p in {0, 1} and N = rK+1)")
    parser.add_argument(
        "--steps", default="200", help="GD steps to linearise and train (2..2000, default 200)"
    )
    parser.add_argument("--eta", default="1", help="learning rate > 0 (default 1)")
    parser.add_argument("--mu", default="1", help="mu = |p_i|^2 > 0 (default 1)")
    parser.add_argument("--eps", default="0.1", help="log-loss epsilon > 0 (default 0.1)")
    parser.add_argument(
        "--sigmas",
        default="1e-2,1e-4,1e-6,1e-8",
        help="comma-separated Gaussian init scales in (0, 1) (default 1e-2,1e-4,1e-6,1e-8)",
    )
    parser.add_argument("--seeds", default="2", help="training seeds per init scale (1..20, default 2)")
    parser.add_argument(
        "--threshold",
        default="1e-3",
        help="escape threshold on V's relative distance from the manifold, in (0, 1)",
    )
    parser.add_argument("--json", metavar="FILE", help="write the report (rwstability/stability.schema.json)")
    parser.add_argument(
        "--png", metavar="FILE", help="write the figure (growth along t; escape against sigma)"
    )


def run(args: argparse.Namespace) -> int:
    """Validate everything, compute the report, print the one-line verdict, write JSON / PNG if asked."""
    for option, path in (("--json", args.json), ("--png", args.png)):
        if path:
            check_output_file(path, option)
    task = task_from_args(args)
    steps = parse_int(args.steps, "steps", 2)
    seeds = parse_int(args.seeds, "seeds", 1)
    eta, mu, eps = (_positive_float(getattr(args, n), n) for n in ("eta", "mu", "eps"))
    threshold = _positive_float(args.threshold, "threshold")
    sigmas = [_positive_float(s, "sigmas") for s in args.sigmas.split(",")]
    from rwstability import check_report_args

    circle = check_report_args(task, steps, sigmas, seeds, threshold)

    import torch

    from rwio import write_json_atomic
    from rwstability import plot_report, stability_report

    previous = torch.get_num_threads()
    torch.set_num_threads(1)  # same bytes on every machine: one summation order
    try:
        report = stability_report(circle, steps, eta, mu, eps, sigmas, seeds, threshold)
    finally:
        torch.set_num_threads(previous)
    print(f"rw stability K={circle.K} N={circle.N} p={circle.p}: {report['verdict']['line']}")
    if args.json:
        print(f"wrote {write_json_atomic(report, args.json)}")
    if args.png:
        plot_report(report, args.png)
        print(f"wrote {args.png}")
    return 0
