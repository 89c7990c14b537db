"""``rw derive``: the exact population GD trajectory from zero initialisation (rwsymbolic.derive)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import sympy as sp
from sympy.printing.str import StrPrinter

from rwsymbolic import Trajectory, derive, write_oracle
from rwtasks import CircleWalk, check_int, qa_task1, qa_task2

_QA_TASKS = {"qa1": qa_task1, "qa2": qa_task2}
_PRINTER = StrPrinter({"order": "none"})
#: Exact values longer than this are shown as floats (or their length) on screen; JSON has them all.
_SHOW_CHARS = 160


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rw derive``; numbers are read as strings so that bad values give one-line errors."""
    parser.add_argument("--task", default="circle", choices=("circle", "qa1", "qa2"),
                        help="circle walk (default) or a question-answering task of MATH.md §6")  # fmt: skip
    parser.add_argument("--K", help="circle: number of nodes, K >= 3 (QA tasks: fixed at 19)")
    parser.add_argument("--N", help="circle: walk length, N >= 2 (QA tasks: fixed at 17 / 19)")
    parser.add_argument("--p", help="circle: clockwise probability in [0, 1] such as 7/10, or a symbol name "
                        "(default: the symbol p)")  # fmt: skip
    parser.add_argument("--eta", default="1", help="learning rate η > 0 (number, 7/10, or symbol name; default 1)")
    parser.add_argument("--eps", default="1/10", help="ε > 0 of the log-loss -log(z+ε) (default 1/10)")
    parser.add_argument("--pos-norm", default="mu", dest="pos_norm",
                        help="μ = ‖p_i‖² > 0 of the positional embeddings (default: the symbol mu)")  # fmt: skip
    parser.add_argument("--steps", required=True, help="number of GD steps T >= 0 (states t = 0..T)")
    parser.add_argument("--loss", default="log", choices=("log", "any"),
                        help="log: -log(z+ε); any: ℓ left abstract (ell, its derivative dell)")  # fmt: skip
    parser.add_argument("--json", metavar="FILE", help="also write the exact oracle JSON (rwsymbolic/oracle.schema.json)")
    parser.add_argument("--per-input", action="store_true", dest="per_input",
                        help="include per-input logits, S, f in the JSON even above 4096 inputs")  # fmt: skip


def _int(text: str | None, name: str, low: int) -> int:
    """``--name`` as an integer >= ``low``, or a one-line ValueError."""
    try:
        value = int(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"--{name}={text!r} is not an integer: {name} must be an integer >= {low}") from None
    return check_int(value, f"--{name}", low)


def _show(value: object) -> str:
    """An exact value if short, else its float (or its size when symbolic)."""
    if isinstance(value, sp.MatrixBase):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    value = sp.sympify(value)
    text = _PRINTER.doprint(value) if sp.count_ops(value, visual=False) < 60 else ""
    if text and len(text) <= _SHOW_CHARS:
        return text
    if value.is_number and not value.has(sp.Piecewise):
        return f"≈{float(sp.N(value, 20)):.17g}"
    return "<expression, see --json>"


def render(traj: Trajectory) -> str:
    """Human-readable trajectory: V pretty-printed when short, the other quantities one line each."""
    lines = [f"rw derive: {traj.task!r}, eta={traj.eta}, eps={traj.eps}, mu={traj.mu}, loss={traj.loss.name}, "
             f"population={traj.population_size} inputs"]  # fmt: skip
    for s in traj.states:
        lines.append(f"\nt = {s.t}")
        V_text = _show(s.V)
        if "<expression" not in V_text and "≈" not in V_text:
            lines.append("V =\n" + sp.pretty(s.V, use_unicode=True))
        else:
            lines.append("V = " + "\n    ".join(_show(list(s.V.row(i))) for i in range(s.V.rows)))
        lines.append("w_tok = " + _show(list(s.w_tok)))
        lines.append("c = " + _show(list(s.c)))
        lines.append("loss = " + _show(s.loss))
        lines.append("accuracy = " + _show(s.accuracy))
        lines.append("mean attention = " + _show(s.mean_attention))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Build the task, derive the trajectory, print it, and write the oracle JSON if asked."""
    if args.json and not Path(args.json).parent.is_dir():
        raise ValueError(f"--json {args.json}: the folder {Path(args.json).parent} does not exist")
    steps = _int(args.steps, "steps", 0)
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
    traj = derive(task, steps, eta=args.eta, eps=args.eps, mu=args.pos_norm, loss=args.loss)
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # exact rationals of late steps have thousands of digits
    try:
        print(render(traj))
    finally:
        sys.set_int_max_str_digits(old)
    if args.json:
        path = write_oracle(traj, args.json, per_input=True if args.per_input else None)
        print(f"\nwrote {path}")
    return 0
