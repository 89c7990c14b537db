"""``rw signal``: the token-average signal C of MATH.md §5, its factorisation and exact vanishing set."""

from __future__ import annotations

import argparse
from pathlib import Path

from rwsymbolic import signal_report, write_signal_json
from rwtasks import CircleWalk, check_int, qa_task1, qa_task2

_QA_TASKS = {"qa1": qa_task1, "qa2": qa_task2}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rw signal``; numbers are read as strings so that bad values give one-line errors."""
    parser.add_argument("--task", default="circle", choices=("circle", "qa1", "qa2"),
                        help="circle walk (default) or a question-answering task of MATH.md §6")  # fmt: skip
    parser.add_argument("--K", help="circle: number of nodes, K >= 3 (QA tasks: fixed at 19)")
    parser.add_argument("--N", help="circle: walk length, N >= 2 (QA tasks: fixed at 17 / 19)")
    parser.add_argument("--p", help="circle: clockwise probability in [0, 1] such as 7/10, or a symbol "
                        "name; omitted = the symbol p (factorised entries and vanishing set in p)")  # fmt: skip
    parser.add_argument("--json", metavar="FILE",
                        help="also write the result as JSON (rwsymbolic/signal.schema.json)")  # fmt: skip


def _int(text: str | None, name: str, low: int) -> int:
    """``--name`` as an integer >= ``low``, or a one-line ValueError."""
    try:
        value = int(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"--{name}={text!r} is not an integer: {name} must be an integer >= {low}") from None
    return check_int(value, f"--{name}", low)


def run(args: argparse.Namespace) -> int:
    """Build the task, print ``SignalReport.render()``, and write JSON if asked."""
    if args.json and not Path(args.json).parent.is_dir():
        raise ValueError(f"--json {args.json}: the folder {Path(args.json).parent} does not exist")
    if args.task == "circle":
        if args.K is None or args.N is None:
            raise ValueError("--task circle needs --K (>= 3) and --N (>= 2)")
        task = CircleWalk(_int(args.K, "K", 3), _int(args.N, "N", 2), "p" if args.p is None else args.p)
    else:
        task = _QA_TASKS[args.task]()
        if args.p is not None:
            raise ValueError(f"--p applies to --task circle only, not to --task {args.task}")
        for name, fixed in (("K", task.K), ("N", task.N)):
            given = getattr(args, name)
            if given is not None and _int(given, name, 1) != fixed:
                raise ValueError(f"--{name}={given}: --task {args.task} has {name} = {fixed}")
    report = signal_report(task)
    print(report.render())
    if args.json:
        path = write_signal_json(report, args.json)
        print(f"\nwrote {path}")
    return 0
