"""``rw explore SPEC``: is a task's token average informative, and does GD stay stuck? (docs/theory.md#signal, #qa-tasks)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import rwtoolkit.models
from rwtoolkit.cli._models import add_model_arguments, model_from_args
from rwtoolkit.io import check_memory, check_output_dir

if TYPE_CHECKING:
    from rwtoolkit.tasks import TaskSpec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rw explore``; the task and its settings live in the spec file (JSON or YAML)."""
    parser.add_argument(
        "spec",
        metavar="SPEC",
        help="task specification file (JSON or YAML, every number read exactly as written; schema "
        "rwtoolkit/schemas/task_spec.schema.json)",
    )
    parser.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="folder for REPORT.md, explore.json and plots (created if missing)",
    )
    parser.add_argument(
        "--train",
        action="store_true",
        help="also train numerically from zero and from Gaussian init (sigmas in the spec)",
    )
    parser.add_argument(
        "--steps", help="exact GD steps of the stuck-manifold check, 1..8 (overrides the spec)"
    )
    parser.add_argument(
        "--no-stability",
        action="store_true",
        help="skip the stability of stuck manifolds (verdict stays 'stuck' instead of stuck-attracting/"
        "-neutral/-repelling, computed at the spec's training settings)",
    )
    add_model_arguments(
        parser,
        "another model keeps the signal and the reference accuracies and gets stuck_proof's verdict at each "
        "point; the one-step, manifold and stability checks and --train are one_layer's",
    )


def _check_memory(spec: TaskSpec) -> None:
    """Refuse --train before any work when its largest run (runs are one after another) would not fit."""
    from rwtoolkit.analyses.explore import train_configs
    from rwtoolkit.engines.numeric import memory_estimate

    need = 0
    for point in spec.points():
        task = spec.task(**point)
        for *_, model, cfg in train_configs(task, spec.train):
            need = max(need, sum(memory_estimate(task, model, cfg).values()))
    check_memory(
        need,
        "rw explore --train",
        "lower train.train_size / train.test_size or train.M in the spec, "
        "or set train.population to false for a sampled training set",
    )


def run(args: argparse.Namespace) -> int:
    """Parse the spec, run ``rwtoolkit.analyses.explore.explore`` and write the report atomically."""
    steps = None
    if args.steps is not None:
        try:
            steps = int(args.steps)
        except ValueError:
            raise ValueError(f"--steps={args.steps!r} is not an integer: steps must be in 1..8") from None
        if not 1 <= steps <= 8:
            raise ValueError(f"--steps={steps} is out of range: steps must be in 1..8")
    model = model_from_args(args)
    if args.train and model.name != rwtoolkit.models.DEFAULT_MODEL:
        raise ValueError(
            f"--train is out of place with --model {model.target or model.name}: explore's training runs are "
            "specific to one_layer (sine embeddings); train it with rw train --model, or leave out --train"
        )
    check_output_dir(args.out, "--out", files=("REPORT.md", "explore.json"))
    from rwtoolkit.analyses.explore import (  # SymPy and torch load here, not for --help
        explore,
        model_lines,
        write_report,
    )
    from rwtoolkit.tasks import load_task_spec

    spec = load_task_spec(args.spec)
    if steps is not None:
        spec.explore["steps"] = steps
    if args.train:
        _check_memory(spec)
    result = explore(
        spec, train=args.train, progress=sys.stderr.isatty(), stability=not args.no_stability, model=model
    )
    written = write_report(result, args.out)
    for line in model_lines(result):  # another model: which it is, and which checks ran and did not (why)
        print(line)
    for point in result.points:
        for check in point.checks:
            values = ", ".join(f"{k}={v}" for k, v in {**point.params, **check.values}.items())
            proved = f", {check.proof['verdict']}" if check.proof is not None else ""
            print(f"{spec.name} {values or '(as given)'}: {check.verdict}{proved} ({check.reason})")
    print(f"wrote {', '.join(str(p) for p in written.values())}")
    return 0
