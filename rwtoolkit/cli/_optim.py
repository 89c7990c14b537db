"""``--optimizer``, ``--momentum``, ``--betas``, ``--adam-eps`` and ``--weight-decay``: the update rule of
``rwtoolkit.models.Optimizer``, one reading for every command that trains (rw train, rw derive, rw certify,
rw check); ``--schedule`` and ``--stages``: a learning-rate schedule (``rwtoolkit.models.Schedule``) and training
in stages (``rwtoolkit.models.parse_stages``, ``glob_stages``), for the commands whose engines run them."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rwtoolkit.models import Optimizer, Schedule

#: The rules as ``--optimizer`` offers them: ``rwtoolkit.models.OPTIMIZERS`` (written out here, so that ``rw --help``
#: imports nothing more; tests/test_optimizers.py pins them equal).
OPTIMIZER_CHOICES = ("gd", "momentum", "nesterov", "adam", "adamw")


def add_optimizer_arguments(parser: argparse.ArgumentParser, what: str = "", schedules: bool = False) -> None:
    """The update rule's flags (docs/guide/optimizers.md); ``what`` says where the rule runs; ``schedules``:
    also ``--schedule`` and ``--stages`` (docs/guide/optimizers.md#schedules-and-stages-on-the-command-line)."""
    a = parser.add_argument
    if schedules:
        a(
            "--schedule",
            default=None,
            help="learning-rate schedule: step:EVERY:FACTOR (the rate times FACTOR every EVERY steps, FACTOR a "
            "rational > 0), warmup:W (linear warmup over W steps) or cosine:T (cosine decay over T steps; floats)",
        )
        a(
            "--stages",
            default=None,
            help="train in stages, in order: GLOBS=STEPS,... (parameter-name globs joined by |, e.g. "
            "'blocks.0.*=1000,blocks.1.*=1000'); the others keep their values and the rule's state; the steps "
            "must cover --steps",
        )
    a(
        "--optimizer",
        default="gd",
        choices=OPTIMIZER_CHOICES,
        help="update rule (default gd, plain gradient descent): momentum (heavy ball) or nesterov as "
        "torch.optim.SGD, adam or adamw as torch.optim.Adam/AdamW (docs/guide/optimizers.md)"
        + (f"; {what}" if what else ""),
    )
    a("--momentum", default=None, help="momentum mu of momentum/nesterov, in (0, 1) (default 0.9)")
    a("--betas", default=None, help="beta1,beta2 of adam/adamw, each in [0, 1) (default 0.9,0.999)")
    a(
        "--adam-eps",
        default=None,
        dest="adam_eps",
        help="epsilon of adam/adamw (outside the root), > 0 (default 1e-8)",
    )
    a(
        "--weight-decay",
        default=None,
        dest="weight_decay",
        help="weight decay lambda >= 0: L2 (g + lambda theta) for gd, momentum, nesterov, adam; decoupled for adamw "
        "(default 0; adamw 0.01, as torch)",
    )


def optimizer_from_args(args: argparse.Namespace) -> Optimizer | None:
    """The rule of the flags, or None for plain GD without weight decay (every engine's default, the outputs
    unchanged); one line naming the flag for a value out of range or a flag of another rule.

    >>> ns = argparse.Namespace(optimizer="adam", momentum=None, betas="0.9,0.99", adam_eps=None, weight_decay=None)
    >>> optimizer_from_args(ns).describe()
    {'name': 'adam', 'betas': [0.9, 0.99], 'eps': 1e-08, 'weight_decay': 0.0}
    """
    name = getattr(args, "optimizer", "gd")
    momentum, betas = getattr(args, "momentum", None), getattr(args, "betas", None)
    eps, decay = getattr(args, "adam_eps", None), getattr(args, "weight_decay", None)
    for flag, value, rules in (
        ("--momentum", momentum, ("momentum", "nesterov")),
        ("--betas", betas, ("adam", "adamw")),
        ("--adam-eps", eps, ("adam", "adamw")),
    ):
        if value is not None and name not in rules:
            raise ValueError(
                f"{flag} is out of place: --optimizer {name} has none (it applies to {', '.join(rules)})"
            )
    pair = None
    if betas is not None:
        pair = tuple(b.strip() for b in str(betas).split(","))
        if len(pair) != 2:
            raise ValueError(f"--betas={betas} must be two numbers beta1,beta2, e.g. 0.9,0.999")
    from rwtoolkit.models import Optimizer

    try:
        rule = Optimizer(name, momentum=momentum, betas=pair, eps=eps, weight_decay=decay)
    except ValueError as why:
        raise ValueError(f"--optimizer {name}: {why}") from None
    return None if rule.plain else rule


def schedule_from_args(args: argparse.Namespace) -> Schedule | None:
    """``--schedule`` read (``rwtoolkit.models.Schedule.parse``; one line naming the flag and the forms), or None.

    >>> schedule_from_args(argparse.Namespace(schedule="step:100:1/2")).text
    'step:100:1/2'
    """
    text = getattr(args, "schedule", None)
    if text is None:
        return None
    from rwtoolkit.models import Schedule

    return Schedule.parse(text)


def stages_from_args(
    args: argparse.Namespace, names: list[str] | None = None
) -> list[tuple[int, frozenset[str]]] | None:
    """``--stages`` read (``rwtoolkit.models.parse_stages``) and, given the model's parameter ``names``, matched
    against them and checked to cover ``args.steps`` (``rwtoolkit.models.glob_stages``, ``stage_plan``): one
    line naming the flag otherwise, before any work; None without ``--stages``."""
    text = getattr(args, "stages", None)
    if text is None:
        return None
    from rwtoolkit.models import glob_stages, parse_stages, stage_plan

    parsed = parse_stages(text)
    if names is None:
        return [(steps, frozenset(globs)) for steps, globs in parsed]
    stages = glob_stages(parsed, names)
    try:
        stage_plan(stages, names, int(args.steps))
    except ValueError as why:
        raise ValueError(f"--stages: {why}") from None
    return stages
