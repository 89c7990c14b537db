"""``rw derive``: the exact population GD trajectory from zero initialisation (rwsymbolic.derive)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rwcli._task_args import add_task_arguments, parse_int, task_from_args
from rwio import check_output_file

if TYPE_CHECKING:  # SymPy and the exact engine load when the command runs, not for --help
    from rwsymbolic import Trajectory

#: Exact values longer than this are shown as floats (or their length) on screen; JSON has them all.
_SHOW_CHARS = 160


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rw derive``; numbers are read as strings so that bad values give one-line errors."""
    add_task_arguments(
        parser,
        "circle: clockwise probability in [0, 1] such as 7/10, or a symbol name (default: the symbol p)",
    )
    parser.add_argument(
        "--eta", default="1", help="learning rate η > 0 (number, 7/10, or symbol name; default 1)"
    )
    parser.add_argument("--eps", default="1/10", help="ε > 0 of the log-loss -log(z+ε) (default 1/10)")
    parser.add_argument(
        "--pos-norm",
        default="mu",
        dest="pos_norm",
        help="μ = ‖p_i‖² > 0 of the positional embeddings (default: the symbol mu)",
    )
    parser.add_argument("--steps", required=True, help="number of GD steps T >= 0 (states t = 0..T)")
    parser.add_argument(
        "--loss",
        default="log",
        choices=("log", "squared", "exp", "any"),  # rwtasks.LOSSES + "any"
        help="log: -log(z+ε); squared: (1-z)²; exp: exp(-z); any: ℓ left abstract (ell, its derivative dell)",
    )
    parser.add_argument(
        "--json", metavar="FILE", help="also write the exact oracle JSON (rwsymbolic/oracle.schema.json)"
    )
    parser.add_argument(
        "--verdict",
        action="store_true",
        help="print, per step, which structure predicates are proved / refuted (with witness) / "
        "undecided instead of the values; with --json they are written too",
    )
    parser.add_argument(
        "--max-seconds",
        default="600",
        dest="max_seconds",
        help="refuse up front when the estimated exact work exceeds this many seconds (default 600)",
    )
    parser.add_argument(
        "--per-input",
        action="store_true",
        dest="per_input",
        help="include per-input logits, S, f in the JSON even above 4096 inputs",
    )


def _show(value: object) -> str:
    """An exact value if short, else its float (or its size when symbolic)."""
    import sympy as sp

    from rwsymbolic import exact_string, nearest_double
    from rwsymbolic._atoms import has_atoms

    if isinstance(value, sp.MatrixBase):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    value = sp.sympify(value)
    if has_atoms(value):  # nested exponentials: the exact text is long, its double is what a reader needs
        number = nearest_double(value)
        return f"≈{number:.17g}" if number is not None else "<expression, see --json>"
    text = exact_string(value) if sp.count_ops(value, visual=False) < 60 else ""
    if text and len(text) <= _SHOW_CHARS:
        return text
    number = nearest_double(value)  # None for symbolic values
    if number is not None:
        return f"≈{number:.17g}"
    return "<expression, see --json>"


def render(traj: Trajectory) -> str:
    """Human-readable trajectory: V pretty-printed when short, the other quantities one line each."""
    import sympy as sp

    lines = [
        f"rw derive: {traj.task!r}, eta={traj.eta}, eps={traj.eps}, mu={traj.mu}, loss={traj.loss.name}, "
        f"population={traj.population_size} inputs"
    ]
    for s in traj.states:
        lines.append(f"\nt = {s.t}")
        value = s.atom_form  # exact values with named exponentials: fast to print and evaluate
        V = value("V")
        V_text = _show(V)
        if "<expression" not in V_text and "≈" not in V_text:
            lines.append("V =\n" + sp.pretty(s.V, use_unicode=True))
        else:
            lines.append("V = " + "\n    ".join(_show(list(V.row(i))) for i in range(V.rows)))
        lines.append("w_tok = " + _show(list(value("w_tok"))))
        lines.append("c = " + _show(list(value("c"))))
        lines.append("loss = " + _show(value("loss")))
        lines.append("accuracy = " + _show(value("accuracy")))
        lines.append("mean attention = " + _show(value("mean_attention")))
    return "\n".join(lines)


#: Characters of a witness shown by ``--verdict`` on the terminal (the JSON keeps it whole): with
#: symbolic p a difference of late steps runs to tens of thousands of characters.
_WITNESS_CHARS = 400


def _clip(text: str) -> str:
    """``text`` if short, else its first ``_WITNESS_CHARS`` characters and how long it is.

    >>> _clip("short")
    'short'
    >>> _clip("x" * 401).endswith("xx … (401 characters; all of them in --json)")
    True
    """
    if len(text) <= _WITNESS_CHARS:
        return text
    return f"{text[:_WITNESS_CHARS]} … ({len(text)} characters; all of them in --json)"


def render_verdicts(traj: Trajectory) -> str:
    """One line per step and structure predicate: proved, refuted (with the witness) or undecided."""
    from rwsymbolic import verdict_json

    lines = [
        f"rw derive --verdict: {traj.task!r}, eta={traj.eta}, eps={traj.eps}, mu={traj.mu}, "
        f"loss={traj.loss.name}"
    ]
    for state in traj.states:
        lines.append(f"\nt = {state.t}")
        for name, entry in verdict_json(state).items():
            witness = (
                f" (witness {_clip(entry['witness'])})"
                if entry["outcome"] != "proved" and entry["witness"]
                else ""
            )
            lines.append(f"  {name}: {entry['outcome']}{witness}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Build the task, derive the trajectory, print it, and write the oracle JSON if asked."""
    if args.json:
        check_output_file(args.json, "--json")
    steps = parse_int(args.steps, "steps", 0)
    task = task_from_args(args)
    from rwsymbolic import derive, derive_estimate, long_integers, write_oracle

    limit = parse_int(args.max_seconds, "max-seconds", 1)
    estimate = derive_estimate(task, steps)
    if estimate > limit:
        raise ValueError(
            f"--steps {steps} on {task!r} is estimated at ~{estimate:.3g} s of exact work, above --max-seconds "
            f"{limit}: use fewer steps, smaller K or N, a rational --p (symbolic p costs about 1000x from two "
            "steps on), rwnumeric (rw train) for floating-point trajectories, or raise --max-seconds"
        )
    traj = derive(task, steps, eta=args.eta, eps=args.eps, mu=args.pos_norm, loss=args.loss, progress=True)
    with long_integers():  # exact rationals of late steps have thousands of digits
        print(render_verdicts(traj) if args.verdict else render(traj))
    if args.json:
        path = write_oracle(traj, args.json, per_input=True if args.per_input else None, verdict=args.verdict)
        print(f"\nwrote {path}")
    return 0
