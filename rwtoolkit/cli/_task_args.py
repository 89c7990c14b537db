"""The task options shared by ``rw derive`` and ``rw signal``: --task, --K, --N, --p.

Only argparse is imported here: ``rw --help`` and argument errors must not load SymPy; the task
classes are imported when a command runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rwtoolkit.tasks import CircleWalk, FiniteTask


def add_task_arguments(parser: argparse.ArgumentParser, p_help: str) -> None:
    """--task, --K, --N, --p; numbers are read as strings so that bad values give one-line errors."""
    parser.add_argument(
        "--task",
        default="circle",
        choices=("circle", "qa1", "qa2"),
        help="circle walk (default) or a question-answering task of the paper's Section 6",
    )
    parser.add_argument("--K", help="circle: number of nodes, K >= 3 (QA tasks: fixed at 19)")
    parser.add_argument("--N", help="circle: walk length, N >= 2 (QA tasks: fixed at 17 / 19)")
    parser.add_argument("--p", help=p_help)


def parse_int(text: str | None, name: str, low: int) -> int:
    """``--name`` as an integer >= ``low``, or a one-line ValueError."""
    from rwtoolkit.tasks import check_int

    try:
        value = int(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"--{name}={text!r} is not an integer: {name} must be an integer >= {low}") from None
    return check_int(value, f"--{name}", low)


_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_size(text: str, name: str) -> int:
    """``--name`` as a number of bytes: an integer, or a number with K, M, G or T (binary units; "B" and
    "iB" optional), e.g. 500M or 2GiB; a one-line ValueError otherwise.

    >>> parse_size("2GiB", "max-bytes"), parse_size("500M", "max-bytes"), parse_size("4096", "max-bytes")
    (2147483648, 524288000, 4096)
    """
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([KMGT]?)(?:i?B)?\s*", text or "", re.IGNORECASE)
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(f"--{name}={text!r} is not a size: give bytes as e.g. 500M, 2GiB or 4096")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def task_from_args(args: argparse.Namespace) -> CircleWalk | FiniteTask:
    """The task the options name; circle walks without --p get the symbol p."""
    from rwtoolkit.tasks import CircleWalk, qa_task1, qa_task2

    if args.task == "circle":
        if args.K is None or args.N is None:
            raise ValueError("--task circle needs --K (>= 3) and --N (>= 2)")
        return CircleWalk(
            parse_int(args.K, "K", 3), parse_int(args.N, "N", 2), "p" if args.p is None else args.p
        )
    task = {"qa1": qa_task1, "qa2": qa_task2}[args.task]()
    if args.p is not None:
        raise ValueError(f"--p applies to --task circle only, not to --task {args.task}")
    for name, fixed in (("K", task.K), ("N", task.N)):
        given = getattr(args, name)
        if given is not None and parse_int(given, name, 1) != fixed:
            raise ValueError(f"--{name}={given}: --task {args.task} has {name} = {fixed}")
    return task


def add_spec_argument(parser: argparse.ArgumentParser, command: str) -> None:
    """--spec FILE: a task of the catalogue (rw explore's spec file), in place of --task/--K/--N/--p."""
    parser.add_argument(
        "--spec",
        metavar="SPEC",
        help="task specification file of rw explore (JSON or YAML, schema rwtoolkit/schemas/task_spec.schema.json), e.g. a "
        f"Markov or in-context Markov chain; replaces --task/--K/--N/--p; a sweep must have one point ({command})",
    )


def task_or_spec(args: argparse.Namespace, command: str) -> CircleWalk | FiniteTask:
    """The task of ``--spec`` (one point of its sweep) or of the task options; both given is refused."""
    if getattr(args, "spec", None) is None:
        return task_from_args(args)
    given = [f"--{n}" for n in ("K", "N", "p") if getattr(args, n) is not None]
    if given or args.task != "circle":
        raise ValueError(f"--spec replaces the task options: drop {', '.join(given) or '--task'}")
    from rwtoolkit.tasks import load_task_spec

    spec = load_task_spec(args.spec)
    points = spec.points()
    if len(points) > 1:
        raise ValueError(
            f"spec.sweep: {command} takes one task; the spec sweeps {len(points)} points "
            "(give one value, or use rw explore for the sweep)"
        )
    return spec.task(**points[0])


def renamed_flag(args: argparse.Namespace, command: str, new: str, old: str) -> None:
    """Read a flag's deprecated name (kept one release): its value moves to the new flag's, with one line
    on stderr; both given is refused. ``new``/``old`` are the flags (``--mu``, ``--pos-norm``).

    >>> import contextlib, io
    >>> ns = argparse.Namespace(mu=None, pos_norm=2.0)
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     renamed_flag(ns, "rw train", "--mu", "--pos-norm")
    >>> ns.mu, err.getvalue().strip()
    (2.0, 'rw train: --pos-norm is deprecated, use --mu (the same value)')
    """
    new_dest, old_dest = new.lstrip("-").replace("-", "_"), old.lstrip("-").replace("-", "_")
    value = getattr(args, old_dest, None)
    if value is None:
        return
    if getattr(args, new_dest, None) is not None:
        raise ValueError(f"{old} is the deprecated name of {new}: give one of them")
    print(f"{command}: {old} is deprecated, use {new} (the same value)", file=sys.stderr)
    setattr(args, new_dest, value)
    setattr(args, old_dest, None)


def options_in_place(args: argparse.Namespace, defaults: dict, out_of_place: str | None) -> None:
    """Options whose parser default is None and that a run may ignore: where ``out_of_place`` is given (the run
    would ignore them), the first one given is refused in one line, ``out_of_place`` with ``{flag}`` (the
    option's flag: ``max_seconds`` is ``--max-seconds``) filled in;
    else each option not given takes its value in ``defaults`` (a default of None leaves it unset).

    >>> ns = argparse.Namespace(sigma=None)
    >>> options_in_place(ns, {"sigma": "1/100"}, None); ns.sigma
    '1/100'
    >>> options_in_place(argparse.Namespace(sigma="2"), {"sigma": "1/100"}, "{flag}: drop it")
    Traceback (most recent call last):
    ValueError: --sigma: drop it
    """
    if out_of_place is not None:
        given = ["--" + key.replace("_", "-") for key in defaults if getattr(args, key, None) is not None]
        if given:
            raise ValueError(out_of_place.replace("{flag}", given[0]))
    for key, value in defaults.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
