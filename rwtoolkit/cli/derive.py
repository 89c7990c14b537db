"""``rw derive``: the exact population GD trajectory of a model from a start, by the exact engine that
``rwtoolkit.engines.select`` gives (the reduced engine ``derive`` for the paper's model from zero, else the
generic ``derive_model``): one plan, one call, one render and one oracle writer for both."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rwtoolkit.cli._models import (
    add_model_arguments,
    add_objective_argument,
    gaussian_start_from_args,
    loss_of_f_from_args,
    model_from_args,
)
from rwtoolkit.cli._task_args import add_spec_argument, add_task_arguments, parse_int, task_or_spec
from rwtoolkit.io import check_output_file

if TYPE_CHECKING:  # SymPy and the exact engine load when the command runs, not for --help
    from collections.abc import Callable

    from rwtoolkit.engines.exact import DeriveJob, ExactTrajectory, ReducedTrajectory

#: Exact values longer than this are shown as floats (or their length) on screen; JSON has them all.
_SHOW_CHARS = 160


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rw derive``; numbers are read as strings so that bad values give one-line errors."""
    add_task_arguments(
        parser,
        "circle: clockwise probability in [0, 1] such as 7/10, or a symbol name (default: the symbol p)",
    )
    add_spec_argument(parser, "rw derive")
    parser.add_argument(
        "--eta", default="1", help="learning rate η > 0 (number, 7/10, or symbol name; default 1)"
    )
    parser.add_argument(
        "--eps",
        default=None,
        help="ε > 0 of the log-loss -log(z+ε) (default 1/10; not for a model with "
        "next-token logits, which trains on --objective)",
    )
    parser.add_argument(
        "--mu",
        default=None,
        dest="mu",
        help="μ = ‖p_i‖² > 0 of the positional embeddings (default: the symbol mu; a rational for a model "
        "other than one_layer or a non-zero --init)",
    )
    parser.add_argument(
        "--pos-norm", default=None, dest="pos_norm", help=argparse.SUPPRESS
    )  # deprecated --mu
    add_model_arguments(
        parser, "another model, or any model from --init gaussian, runs the generic exact engine"
    )
    parser.add_argument(
        "--init",
        default="zero",
        choices=("zero", "gaussian", "own"),
        help="zero (default), gaussian: i.i.d. N(0, sigma^2) entries from --seed, rounded to multiples "
        "of 2^-20 so that the start is exact (runs the generic engine: a registered model at most 3 steps; "
        "a model with next-token logits as many as its estimate allows), or own: the model's own "
        "start (a traced or sequence program's float64 initial values, each the exact dyadic rational it "
        "holds; as many steps as the estimate allows within --max-seconds)",
    )
    add_objective_argument(parser)
    from rwtoolkit.cli._optim import add_optimizer_arguments

    add_optimizer_arguments(
        parser,
        "the generic exact engine runs gd, momentum and nesterov (Adam's square root is not rational)",
        schedules=True,
    )
    parser.add_argument("--sigma", default=None, help="scale of --init gaussian > 0 (default 1/100)")
    parser.add_argument("--seed", default=None, help="seed of --init gaussian (integer >= 0, default 0)")
    parser.add_argument("--steps", required=True, help="number of GD steps T >= 0 (states t = 0..T)")
    parser.add_argument(
        "--loss",
        default=None,
        choices=("log", "squared", "exp", "any"),  # rwtoolkit.tasks.LOSSES + "any"
        help="log (default): -log(z+ε); squared: (1-z)²; exp: exp(-z); any: ℓ left abstract (ell, its "
        "derivative dell); not for a model with next-token logits, which trains on --objective",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="also write the exact oracle: the header FILE (rwtoolkit/schemas/oracle.schema.json) and, "
        "with per-input values, FILE's stem + .inputs.npz beside it",
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
        help="refuse up front when the estimated time of the whole job (derivation, read-outs, writing) "
        "exceeds this many seconds (default 600)",
    )
    parser.add_argument(
        "--max-bytes",
        default=None,
        dest="max_bytes",
        help="refuse up front when the estimated size of the files written by --json exceeds this "
        "(e.g. 500M, 2GiB; default: the free space of the target's folder)",
    )
    parser.add_argument(
        "--per-input",
        action=argparse.BooleanOptionalAction,
        default=None,
        dest="per_input",
        help="with --json: write (or not) the per-input logits, S, f (a sequence model's token_logits, f; "
        "default: when the population has at most 4096 inputs)",
    )


def _exact_in(json: str | None) -> str:
    """Where the exact value of a shortened one is: the oracle file of ``--json`` when it is written.

    >>> _exact_in("o.json"), _exact_in(None)
    ('the exact value is in o.json', 'for the exact value add --json FILE')
    """
    return f"the exact value is in {json}" if json else "for the exact value add --json FILE"


#: What ``_show`` prints for a symbolic value too long to show; the output then ends with ``_footnote``.
_LONG = "<expression>"


def _footnote(text: str, json: str | None) -> str:
    """``text``, and when it holds a value too long to show, one line saying where its exact value is.

    >>> _footnote("loss = <expression>", None).splitlines()[-1]
    '<expression>: a symbolic value too long to show; for the exact value add --json FILE'
    """
    if _LONG not in text:
        return text
    return f"{text}\n\n{_LONG}: a symbolic value too long to show; {_exact_in(json)}"


def _show(value: object) -> str:
    """An exact value if short, else its float, or ``_LONG`` when it is symbolic."""
    import sympy as sp

    from rwtoolkit.engines.exact import DagNode, exact_string, has_atoms, nearest_double

    if isinstance(value, sp.MatrixBase):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, DagNode):  # a node of the exact engine's program: its certified double
        return f"≈{nearest_double(value):.17g}"
    value = sp.sympify(value)
    if has_atoms(value):  # nested exponentials: the exact text is long, its double is what a reader needs
        number = nearest_double(value)
        return f"≈{number:.17g}" if number is not None else _LONG
    text = exact_string(value) if sp.count_ops(value, visual=False) < 60 else ""
    if text and len(text) <= _SHOW_CHARS:
        return text
    number = nearest_double(value)  # None for symbolic values
    if number is not None:
        return f"≈{number:.17g}"
    return _LONG


def render(traj: ExactTrajectory, json: str | None = None) -> str:
    """Human-readable trajectory of either exact engine: the settings, then per step the parameters (the
    reduced view's V pretty-printed when short, w_tok and c; else each parameter by its name, row by row) and
    the read-outs loss, accuracy and mean attention (``json``: the oracle file written, named where a value is
    too long to show). The reduced view's first line names no model and start: it is the paper's from zero."""
    import sympy as sp

    reduced = traj.reduced
    settings = "" if reduced is not None else f", model={traj.model.describe()}, init={traj.init}"
    objective = getattr(traj, "objective", None)  # a model with next-token logits: its cross-entropy
    loss = f"loss={traj.ell.name}" if objective is None else f"objective={objective}"
    optimizer = getattr(traj, "optimizer", None)  # an update rule other than plain GD
    if optimizer is not None:
        loss += f", optimizer={optimizer.describe()}"
    schedule, stages = getattr(traj, "schedule", None), getattr(traj, "stages", None)
    if schedule is not None:
        loss += f", schedule={schedule.text}"
    if stages is not None:
        loss += ", stages=" + ",".join(f"{'|'.join(names)}={k}" for k, names in stages)
    lines = [
        f"rw derive: {traj.task!r}{settings}, eta={traj.eta}, eps={traj.eps}, mu={traj.mu}, "
        f"{loss}, population={traj.population_size} inputs"
    ]
    for t in range(len(traj.states)):
        lines.append(f"\nt = {t}")
        if reduced is not None:
            V = traj.value(t, "V")  # exact values with named exponentials: fast to print and evaluate
            V_text = _show(V)
            if _LONG not in V_text and "≈" not in V_text:
                lines.append("V =\n" + sp.pretty(reduced.states[t].V, use_unicode=True))
            else:
                lines.append("V = " + "\n    ".join(_show(list(V.row(i))) for i in range(V.rows)))
            lines.append("w_tok = " + _show(traj.value(t, "w_tok")))
            lines.append("c = " + _show(traj.value(t, "c")))
        else:
            for name in traj.parameter_names:
                lines.append(f"{name} = " + "\n    ".join(_show(row) for row in traj.element(t, name)))
        accuracy = traj.element(t, "accuracy")
        lines.append("loss = " + _show(traj.element(t, "loss")))
        lines.append("accuracy = " + ("undecided" if accuracy is None else _show(accuracy)))
        if "mean_attention" in traj.readout_names:
            lines.append("mean attention = " + _show(list(traj.element(t, "mean_attention"))))
        else:  # no attention S over the positions (a sequence model): its mean prediction
            lines.append("mean f = " + _show(list(traj.element(t, "mean_f"))))
    return _footnote("\n".join(lines), json)


#: Characters of a witness shown by ``--verdict`` on the terminal (the JSON keeps it whole): with
#: symbolic p a difference of late steps runs to tens of thousands of characters.
_WITNESS_CHARS = 400


def _clip(text: str, json: str | None = None) -> str:
    """``text`` if short, else its first ``_WITNESS_CHARS`` characters, how long it is and where it is whole.

    >>> _clip("short")
    'short'
    >>> _clip("x" * 401, "o.json").endswith("xx … (401 characters; the exact value is in o.json)")
    True
    """
    if len(text) <= _WITNESS_CHARS:
        return text
    return f"{text[:_WITNESS_CHARS]} … ({len(text)} characters; {_exact_in(json)})"


def render_verdicts(traj: ReducedTrajectory, json: str | None = None) -> str:
    """One line per step and structure predicate: proved, refuted (with the witness) or undecided (``json``:
    the oracle file written, which keeps a long witness whole)."""
    from rwtoolkit.engines.exact import verdict_json

    lines = [
        f"rw derive --verdict: {traj.task!r}, eta={traj.eta}, eps={traj.eps}, mu={traj.mu}, "
        f"loss={traj.ell.name}"
    ]
    for state in traj.states:
        lines.append(f"\nt = {state.t}")
        for name, entry in verdict_json(state).items():
            witness = (
                f" (witness {_clip(entry['witness'], json)})"
                if entry["outcome"] != "proved" and entry["witness"]
                else ""
            )
            lines.append(f"  {name}: {entry['outcome']}{witness}")
    return "\n".join(lines)


def _refuse_if_too_large(args: argparse.Namespace, job: DeriveJob, plan: Callable[[int], DeriveJob]) -> str:
    """The job's estimate (one line), after refusing in one line when it cannot fit: time (naming the most
    steps that fit, ``_steps_that_fit``), memory, files."""
    from rwtoolkit.io import check_memory, format_bytes

    limit = parse_int(args.max_seconds, "max-seconds", 1)
    est = job.estimate
    files = f", {format_bytes(est.file_bytes)} of files" if args.json else ""
    summary = f"~{est.seconds:.3g} s, ~{format_bytes(est.memory)} of memory{files}"
    if est.seconds > limit:
        fits = _steps_that_fit(plan, parse_int(args.steps, "steps", 0), limit)
        within = "not even --steps 0 fits" if fits is None else f"at most --steps {fits} fits"
        raise ValueError(
            f"{job.what} is estimated at {summary}: above --max-seconds {limit} ({within}); "
            f"{job.alternatives}, or raise --max-seconds"
        )
    check_memory(est.memory, f"{job.what} (estimated at {summary})", job.alternatives)
    if args.json:
        _refuse_files(args, est.file_bytes, summary, job.alternatives)
    return summary


def _steps_that_fit(plan: Callable[[int], DeriveJob], steps: int, limit: float) -> int | None:
    """The most steps below ``steps`` whose planned job (``plan(k)``, the same job with k steps) is estimated
    within ``limit`` seconds (the estimate grows with the steps), or None when not even 0 steps fit.

    >>> from rwtoolkit.engines.exact import DeriveJob, JobEstimate
    >>> plan = lambda k: DeriveJob({}, JobEstimate(2.0**k, 0, 0, 0), "", "")
    >>> _steps_that_fit(plan, 10, 60), _steps_that_fit(plan, 10, 0.5)
    (5, None)
    """
    if plan(0).estimate.seconds > limit:
        return None
    low, high = 0, steps  # plan(low) fits, plan(high) does not
    while high - low > 1:
        middle = (low + high) // 2
        if plan(middle).estimate.seconds <= limit:
            low = middle
        else:
            high = middle
    return low


def _refuse_files(args: argparse.Namespace, file_bytes: int, summary: str, alternatives: str) -> None:
    """One line when the estimated files of --json exceed --max-bytes or the free disk of their folder."""
    from pathlib import Path

    from rwtoolkit.cli._task_args import parse_size
    from rwtoolkit.io import format_bytes, free_disk

    max_bytes = None if args.max_bytes is None else parse_size(args.max_bytes, "max-bytes")
    folder, disk = free_disk(Path(args.json).resolve().parent)
    cap = disk if max_bytes is None else min(max_bytes, disk)
    if file_bytes > cap:
        which = (
            f"--max-bytes {format_bytes(max_bytes)}"
            if max_bytes is not None and max_bytes <= disk
            else (f"the {format_bytes(disk)} free in {folder}")
        )
        raise ValueError(
            f"--json {args.json}: the files are estimated at {summary}: above {which}; {alternatives}"
        )


def _mu(args: argparse.Namespace) -> str:
    """--mu, or the deprecated --pos-norm (with its message), or the symbol mu."""
    from rwtoolkit.cli._task_args import renamed_flag

    renamed_flag(args, "rw derive", "--mu", "--pos-norm")
    return "mu" if args.mu is None else str(args.mu)


def _stages(args: argparse.Namespace, model: object, task: object) -> list:
    """--stages matched against the model's parameter names at the exact engine's sizes, covering --steps."""
    from rwtoolkit.cli._optim import stages_from_args
    from rwtoolkit.models import Sizes

    population = task.population()  # type: ignore[attr-defined]
    sizes = Sizes(K=population.K, M=4 * -(-population.N // 4), N=population.N)
    return stages_from_args(args, list(model.shapes(sizes))) or []  # type: ignore[attr-defined]


def run(args: argparse.Namespace) -> int:
    """Build the task, select the exact engine of (model, start), plan its job (refusing what it cannot do or
    what cannot fit), derive, print, write the oracle."""
    import sys

    from rwtoolkit.engines import select

    if args.json:
        check_output_file(args.json, "--json")
    if args.max_bytes is not None:
        from rwtoolkit.cli._task_args import parse_size

        parse_size(args.max_bytes, "max-bytes")  # a bad value is refused before any work
    model = model_from_args(
        args
    )  # resolved, not traced: a target naming no model is refused before SymPy loads
    parse_int(args.max_seconds, "max-seconds", 1)  # a bad value before a traced model's tracing
    loss_of_f_from_args(args, model, {"loss": "log", "eps": "1/10"})
    gaussian_start_from_args(args, {"sigma": "1/100", "seed": "0"})
    steps = parse_int(args.steps, "steps", 0)
    if not args.json and args.per_input is not None:
        raise ValueError("--per-input / --no-per-input apply to the oracle file: give --json FILE")
    seed = parse_int(args.seed, "seed", 0)
    from rwtoolkit.cli._optim import optimizer_from_args, schedule_from_args, stages_from_args

    optimizer = optimizer_from_args(args)
    schedule, stages = schedule_from_args(args), stages_from_args(args)  # their syntax, before any work
    if schedule is not None:
        from rwtoolkit.engines.exact import EXACT

        schedule.check(EXACT)  # the cosine's floats: one line naming the float and ball engines
    if stages is not None:  # the globs against the model's parameter names, covering --steps
        stages = _stages(args, model, task_or_spec(args, "rw derive"))
    rule: dict = {} if optimizer is None else {"optimizer": optimizer}  # None: plain GD, every exact engine's
    if schedule is not None:
        rule["schedule"] = schedule
    if stages is not None:
        rule["stages"] = stages
    if optimizer is not None and args.verdict:
        raise ValueError(
            f"--optimizer {optimizer.name}: --verdict applies to plain GD (the verdicts are of the paper's "
            "reduced coordinates); drop it, or --optimizer"
        )
    task = task_or_spec(args, "rw derive")
    plain = optimizer is None and not rule  # the reduced engine runs gd at one constant rate
    engine = select(model, "exact", args.init, specialise=plain)
    mu = _mu(args)

    def plan(k: int) -> DeriveJob:
        """The job of ``k`` steps, planned before any work (refusing what the engine cannot do)."""
        return engine.load_estimate()(
            task,
            model,
            k,
            eta=args.eta,
            eps=args.eps,
            mu=mu,
            loss=args.loss,
            init=args.init,
            sigma=args.sigma,
            seed=seed,
            objective=args.objective,
            json=bool(args.json),
            per_input=args.per_input,
            verdict=args.verdict,
            **rule,
        )

    job = plan(steps)
    for note in job.notes:
        print(f"rw derive: {note}", file=sys.stderr)
    summary = _refuse_if_too_large(args, job, plan)
    print(f"rw derive: estimated {summary}", file=sys.stderr)
    from rwtoolkit.engines.exact import long_integers, per_input_path, write_oracle

    traj = engine.load()(
        task, model=model, steps=steps, progress=True, **job.arguments
    )  # the rule among them
    with long_integers():  # exact rationals of late steps have thousands of digits
        print(render_verdicts(traj.reduced, args.json) if args.verdict else render(traj, args.json))
    if args.json:
        path = write_oracle(traj, args.json, per_input=args.per_input, verdict=args.verdict, progress=True)
        print(f"\nwrote {path}")
        columns = per_input_path(path)
        if columns.exists():
            print(f"wrote {columns}")
    return 0
