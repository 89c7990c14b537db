"""``rw certify``: the certified (ball-arithmetic) trajectory, DIR/certify.json and DIR/CERTIFY.md, both atomic.

Without ``--model`` (or with ``--model one_layer``) it certifies the paper's statements on the paper's model
(``rwtoolkit.engines.balls.certify``); with another model (a registered name, ``MODULE:ATTR`` or ``PATH.py:ATTR``,
a traced PyTorch or JAX model included) it runs that model's certified trajectory on the task's population
(``ball_model_job`` plans it, the ball engine ``select`` gives runs it) and writes per recorded step the loss's
enclosure and the widest parameter radius.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from rwtoolkit.cli._models import add_model_arguments, add_objective_argument
from rwtoolkit.cli._task_args import (
    add_spec_argument,
    add_task_arguments,
    options_in_place,
    parse_int,
    task_from_args,
    task_or_spec,
)

FLOAT_GRAMS = ("computed", "ideal", "none")

#: The model whose statements ``rw certify`` certifies (Theorems 3.1 and 4.1's); any other runs its trajectory.
PAPER_MODEL = "one_layer"

#: The options of the paper's certification and their defaults (given with another model: refused in one line).
PAPER_DEFAULTS = {
    "M": "1000",
    "pos": "sine",
    "train_size": "1000",
    "test_size": "1000",
    "seed": "0",
    "prec": "128",
    "tol": "1e-20",
    "max_prec": "2048",
    "parent_threshold": "1/2",
    "float_gram": "computed",
    "float_tol": "1e-9",
}
#: The options of another model's certified trajectory (given with the paper's model: refused in one line).
MODEL_OPTIONS = ("spec", "init", "objective", "mu", "max_seconds", "head_dim", "heads")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Task and training options as in ``rw train`` (the exact model only), precision and comparison options;
    ``--model`` and its options (``--spec``, ``--init``, ``--objective``, ``--mu``, ``--max-seconds``) for the
    certified trajectory of another model."""
    add_task_arguments(
        parser, "circle: clockwise probability, a number in [0, 1] such as 1/2 or 1 (required)"
    )
    add_spec_argument(parser, "rw certify --model")
    add_model_arguments(
        parser,
        "one_layer certifies the paper's statements; another model gets its certified trajectory on the "
        "task's population (docs/certify.md#another-model)",
    )
    a = parser.add_argument
    a("--M", default=None, help="positional dimension (sine: M > N; onehot: M = N) (default 1000)")
    a(
        "--pos",
        choices=("sine", "onehot"),
        default=None,
        help="positional embeddings (default sine, μ = M/2)",
    )
    a("--eta", default="1", help="learning rate, an exact positive rational such as 1 or 1/2 (default 1)")
    a(
        "--eps",
        default=None,
        help="ε of the log-loss -log(z + ε), exact positive rational (default 1/10; not for a model with "
        "next-token logits, which trains on --objective)",
    )
    a("--steps", default="50", help="GD steps >= 0 (default 50)")
    a("--train-size", default=None, help="sampled training walks >= 1, each of weight 1/n (default 1000)")
    a("--test-size", default=None, help="sampled evaluation walks >= 1 (default 1000)")
    a(
        "--population",
        action="store_true",
        help="train and evaluate on the exact population (small tasks only; another model always does)",
    )
    a(
        "--seed",
        default=None,
        help="sampling seed >= 0, the walks rw train draws with the same seed (default 0)",
    )
    a("--record-steps", default=None, help="comma-separated steps to record (default: every step)")
    a(
        "--prec",
        default=None,
        help="starting working precision in bits (default 128; another model: the ball engine's own, "
        "256 + 6·steps bits, doubled while a ball is not tight)",
    )
    a(
        "--tol",
        default=None,
        help="widest relative ball radius accepted before the precision doubles (default 1e-20)",
    )
    a("--max-prec", default=None, help="largest precision tried, bits (default 2048)")
    a(
        "--parent-threshold",
        default=None,
        help="the parent-attention statement's threshold in (0, 1] (default 1/2)",
    )
    a(
        "--float-gram",
        choices=FLOAT_GRAMS,
        default=None,
        help="compare a float64 rwtoolkit.engines.numeric run with this Gram matrix against the enclosure (default computed; none: skip)",
    )
    a(
        "--float-tol",
        default=None,
        help="relative excess beyond which a float value leaves the enclosure (default 1e-9)",
    )
    a(
        "--init",
        default=None,
        choices=("zero", "own"),  # rwtoolkit.engines.balls BALL_INITS
        help="another model: zero (default), or own: the model's own start (a traced or sequence program's "
        "float64 initial values, each the exact dyadic rational it holds)",
    )
    add_objective_argument(parser, "another model")
    from rwtoolkit.cli._optim import add_optimizer_arguments

    add_optimizer_arguments(
        parser, "--model runs of the generic ball engine (the paper's run plain GD)", schedules=True
    )
    a("--mu", default=None, help="another model: μ = ‖p_i‖² > 0 of its rational positions (default 1)")
    a(
        "--max-seconds",
        default=None,
        dest="max_seconds",
        help="another model: refuse up front when the estimated time exceeds this many seconds "
        "(default and at most 3600)",
    )
    a("--out", required=True, metavar="DIR", help="output folder for certify.json and CERTIFY.md")


def _steps_list(text: str | None, steps: int) -> set[int] | None:
    if text is None:
        return None
    try:
        chosen = {int(s) for s in text.split(",") if s.strip()}
    except ValueError:
        raise ValueError(f"--record-steps={text!r} must be comma-separated integers, e.g. 0,10,50") from None
    bad = [s for s in sorted(chosen) if not 0 <= s <= steps]
    if bad:
        raise ValueError(f"--record-steps entry {bad[0]} is out of range: must be in [0, steps={steps}]")
    return chosen


def _positive_float(text: str, name: str, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--{name}={text!r} is not a number: must be in (0, {high:g})") from None
    if not (math.isfinite(value) and 0 < value < high):
        raise ValueError(f"--{name}={text!r} is out of range: must be in (0, {high:g})")
    return value


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _paper(args: argparse.Namespace) -> bool:
    """Whether the options ask for the paper's certification (``one_layer``); an option of the other kind given
    is refused in one line."""
    paper = getattr(args, "model", PAPER_MODEL) == PAPER_MODEL
    if paper:
        why = (
            f"{{flag}} applies with --model (a model other than {PAPER_MODEL}, whose certified trajectory it "
            f"runs); {PAPER_MODEL} certifies the paper's statements: drop {{flag}}"
        )
        options_in_place(args, dict.fromkeys(MODEL_OPTIONS), why)
        options_in_place(args, PAPER_DEFAULTS, None)
    else:
        given = [dest for dest in PAPER_DEFAULTS if dest != "prec" and getattr(args, dest, None) is not None]
        if args.population:
            given.append("population")
        if given:
            raise ValueError(
                f"{_flag(given[0])} applies to the paper's model ({PAPER_MODEL}) only; --model "
                f"{args.model} runs on the task's exact population: drop {_flag(given[0])}"
            )
    return paper


#: The update rule's options besides --optimizer, as (flag, dest) (``rwtoolkit.cli._optim``).
_OPTIMIZER_FLAGS = (
    ("--momentum", "momentum"),
    ("--betas", "betas"),
    ("--adam-eps", "adam_eps"),
    ("--weight-decay", "weight_decay"),
    ("--schedule", "schedule"),
    ("--stages", "stages"),
)


def run(args: argparse.Namespace) -> int:
    """Validate everything, certify, optionally compare a float64 run, write both files.

    Exit status 0 once both files are written, whatever the outcomes (an inconclusive statement, an unmet
    ``--tol`` or a run stopped by too wide balls is a result, printed and recorded, not an error).
    """
    from rwtoolkit.io import check_output_dir, write_json_atomic, write_text_atomic

    out = check_output_dir(args.out, "--out", files=("certify.json", "CERTIFY.md"))  # before any work
    if not _paper(args):
        return _run_model(args, out)
    options_in_place(args, {"eps": "1/10"}, None)  # --model's defaults: loss_of_f_from_args
    given = [f for f, d in _OPTIMIZER_FLAGS if getattr(args, d, None) is not None] + (
        ["--optimizer"] if getattr(args, "optimizer", "gd") != "gd" else []
    )
    if given:
        raise ValueError(
            f"{given[0]} applies with --model (the generic ball engine runs the update rules); the paper's "
            f"certification ({PAPER_MODEL}) runs plain GD: drop {given[0]}"
        )
    from rwtoolkit.engines.balls import (
        MAX_PREC,
        MIN_PREC,
        certify,  # python-flint: imported only when the command runs
        certify_json,
        certify_markdown,
        tolerance_line,
    )
    from rwtoolkit.io import load_schema

    if args.task == "circle" and args.p is None:
        raise ValueError("--p is required: the certified engine needs a number in [0, 1], e.g. --p 1/2")
    task = task_from_args(args)
    steps = parse_int(args.steps, "steps", 0)
    prec = parse_int(args.prec, "prec", MIN_PREC)
    if prec > MAX_PREC:
        raise ValueError(f"--prec={prec} is out of range: must be in [{MIN_PREC}, {MAX_PREC}]")
    max_prec = parse_int(args.max_prec, "max-prec", prec)
    if max_prec > MAX_PREC:
        raise ValueError(f"--max-prec={max_prec} is out of range: must be in [{prec}, {MAX_PREC}]")
    options = dict(
        M=parse_int(args.M, "M", 2),
        pos=args.pos,
        eta=args.eta,
        eps=args.eps,
        steps=steps,
        population=args.population,
        train_size=parse_int(args.train_size, "train-size", 1),
        test_size=parse_int(args.test_size, "test-size", 1),
        seed=parse_int(args.seed, "seed", 0),
        prec=prec,
        tol=_positive_float(args.tol, "tol", 1.0),
        max_prec=max_prec,
        record_steps=_steps_list(args.record_steps, steps),
        parent_threshold=args.parent_threshold,
    )
    float_tol = _positive_float(args.float_tol, "float-tol", 1.0)
    cert = certify(task, progress=True, plan=_refuse_beyond_the_estimate(task, options, out), **options)
    data = certify_json(cert)
    if args.float_gram != "none":
        from rwtoolkit.engines.balls import compare_float

        data["float_comparison"] = compare_float(cert, data, gram=args.float_gram, float_tol=float_tol)
    import jsonschema

    jsonschema.validate(data, load_schema("certify"))
    js = write_json_atomic(data, out / "certify.json")
    md = write_text_atomic(certify_markdown(data), out / "CERTIFY.md")
    for s in cert.statements:
        print(f"{s.name:18s} {s.to_json()['outcome']:12s} {s.claim}")
    if cert.trajectory.stopped is not None:
        print(f"the certified run stopped: {cert.trajectory.stopped}")
    if not cert.tolerance_met:
        print(tolerance_line(data))
    if data["float_comparison"]:
        print(data["float_comparison"]["summary"])
    print(f"wrote {js} and {md}")
    return 0


def _refuse_beyond_the_estimate(task: object, options: dict, out: object) -> Callable[[Any], None]:
    """The paper's certification planned before any work (``certify``'s ``plan``: called with its
    ``certify_estimate`` once every argument is checked): refused in one line above an hour, the memory
    available or the free disk, naming the most steps that fit; else its estimate on stderr."""
    import sys
    from pathlib import Path

    from rwtoolkit.engines.balls import MAX_BALL_SECONDS, certify_steps_that_fit
    from rwtoolkit.io import check_disk, check_memory, format_bytes

    def plan(est: Any) -> None:
        sizes = {k: options[k] for k in ("population", "train_size", "test_size", "prec", "max_prec")}
        what = (
            f"the certified run of {PAPER_MODEL} ({options['steps']} steps at "
            f"{options['prec']}-{options['max_prec']} bits)"
        )
        fits = certify_steps_that_fit(MAX_BALL_SECONDS, task=task, **sizes)
        alternative = (
            f"take at most --steps {fits}" if fits > 0 else "take fewer walks (--train-size, --test-size)"
        )
        summary = f"~{est.seconds:.3g} s, ~{format_bytes(est.memory)} of memory, ~{format_bytes(est.file_bytes)} of files"
        if est.seconds > MAX_BALL_SECONDS:
            raise ValueError(
                f"{what} is estimated at {est.seconds:.3g} s, above the limit of {MAX_BALL_SECONDS:.0f} s; "
                f"{alternative}"
            )
        check_memory(est.memory, f"{what} (estimated at {summary})", alternative)
        check_disk(est.file_bytes, Path(str(out)), f"{what} (estimated at {summary})", alternative)
        print(f"rw certify: estimated {summary}", file=sys.stderr)

    return plan


def _run_model(args: argparse.Namespace, out: object) -> int:
    """The certified trajectory of ``--model`` on the task's population: every argument checked, the task and
    the model built, the run planned (``ball_model_job``: refused in one line when it cannot fit), run by the
    ball engine ``select`` gives, both files written atomically. Exit 0 whatever its outcome (a run that ends
    inconclusive is a result)."""
    import sys
    import time
    from pathlib import Path

    from rwtoolkit.cli._models import loss_of_f_from_args, model_from_args
    from rwtoolkit.io import check_disk, check_memory, format_bytes, write_json_atomic, write_text_atomic

    steps = parse_int(args.steps, "steps", 0)
    record = _steps_list(args.record_steps, steps)
    prec = None
    if args.prec is not None:
        from rwtoolkit.engines.balls import MAX_PREC, MIN_PREC

        prec = parse_int(args.prec, "prec", MIN_PREC)
        if prec > MAX_PREC:
            raise ValueError(f"--prec={prec} is out of range: must be in [{MIN_PREC}, {MAX_PREC}]")
    max_seconds = 3600 if args.max_seconds is None else parse_int(args.max_seconds, "max-seconds", 1)
    if getattr(args, "spec", None) is None and args.task == "circle" and args.p is None:
        raise ValueError("--p is required: the certified engine needs a number in [0, 1], e.g. --p 1/2")
    init = args.init or "zero"
    task = task_or_spec(args, "rw certify")
    if task.symbols:
        raise ValueError(
            f"the task's probabilities are symbolic ({task!r}): the certified engine needs numbers"
        )
    from rwtoolkit.cli._optim import optimizer_from_args, schedule_from_args, stages_from_args

    schedule, stages = schedule_from_args(args), stages_from_args(args)  # their syntax, before any work
    model = model_from_args(args)
    loss_of_f_from_args(args, model, {"eps": "1/10"})
    optimizer = optimizer_from_args(args)
    if (
        stages is not None
    ):  # the globs against the model's parameter names (the engine's sizes), covering --steps
        from rwtoolkit.models import Sizes

        population = task.population()
        sizes = Sizes(K=population.K, M=4 * -(-population.N // 4), N=population.N)
        stages = stages_from_args(args, list(model.shapes(sizes)))
    from rwtoolkit.engines import select
    from rwtoolkit.engines.balls import (
        ball_model_job,
        model_certify_json,
        model_certify_markdown,
        model_certify_summary,
    )

    job = ball_model_job(
        task,
        model,
        steps,
        eta=args.eta,
        eps=args.eps,
        mu=1 if args.mu is None else args.mu,
        prec=prec,
        init=init,
        objective=args.objective,
        record_steps=record,
        max_seconds=max_seconds,
        optimizer=optimizer,
        schedule=schedule,
        stages=stages,
    )
    est = job.estimate
    summary = (
        f"~{est.seconds:.3g} s at {job.bits} bits, ~{format_bytes(est.memory)} of memory, "
        f"~{format_bytes(est.file_bytes)} of files"
    )
    check_memory(est.memory, f"{job.what} (estimated at {summary})", job.alternatives)
    check_disk(est.file_bytes, Path(str(out)), f"{job.what} (estimated at {summary})", job.alternatives)
    print(f"rw certify: estimated {summary}", file=sys.stderr)
    plain = optimizer is None and schedule is None and stages is None  # the reduced engine runs plain GD
    engine = select(model, "balls", init, specialise=plain)
    chosen = set(job.recorded)
    started = time.perf_counter()
    traj = engine.load()(task, model, steps, progress=True, keep=lambda t: t in chosen, **job.arguments)
    wall = time.perf_counter() - started
    data = model_certify_json(task, model, job, traj)
    js = write_json_atomic(data, Path(str(out)) / "certify.json")
    md = write_text_atomic(model_certify_markdown(data), Path(str(out)) / "CERTIFY.md")
    print(model_certify_summary(data, wall))
    print(f"wrote {js} and {md}")
    return 0
