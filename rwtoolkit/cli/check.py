"""``rw check MODULE:FACTORY``: check your own implementation against the exact trajectory (rwtoolkit.analyses.check)."""

from __future__ import annotations

import argparse
import sys

#: The install line of the kit's pytest workflow (the ``kit`` extra; README.md's install section).
KIT_INSTALL = "pip install -e '.[kit]'"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rw check``; numbers are read as strings so that bad values give one-line errors."""
    parser.add_argument(
        "target",
        metavar="MODULE:FACTORY",
        nargs="?",
        default=None,
        help="the factory config -> implementation, as module:name or path/to/file.py:name "
        "(optional with --emit: recorded as the fixtures' implementation)",
    )
    parser.add_argument("--steps", default="2", help="GD steps T checked, t = 0..T (0..4, default 2)")
    parser.add_argument(
        "--examples", default="10", help="hypothesis examples per property (>= 1, default 10)"
    )
    parser.add_argument(
        "--dtype", default="float64", choices=("float64", "float32"), help="dtype (default float64)"
    )
    parser.add_argument(
        "--task",
        default=None,
        choices=("circle", "finite", "any", "sequence"),
        help="configurations drawn: circle walks (K 3..5, N 2..5), small finite tasks, or either, or sequence "
        "tasks (in-context Markov chains and binary (p, q) sources, S = 2, N 3..5: a model with next-token "
        "logits, the only tasks it takes) (default: the model's; circle walks, finite tasks for tied_embedding "
        "and untied_embedding, sequence tasks for a sequence model)",
    )
    from rwtoolkit.cli._models import add_model_arguments, add_objective_argument

    add_model_arguments(
        parser,
        "any other is checked against the generic exact engine rwtoolkit.models.descend, rwtoolkit.analyses.check._models; "
        "a model with next-token logits from its own start, against its certified ball trajectory where the exact "
        "estimate is above a minute (docs/check.md#sequence-models)",
    )
    add_objective_argument(parser, "--model")
    from rwtoolkit.cli._optim import add_optimizer_arguments

    add_optimizer_arguments(
        parser,
        "the rule your implementation trains with, for a --model with next-token logits (the reference runs it: "
        "certified balls for adam/adamw); --schedule and --stages likewise (its loop reads config.lr_factors and "
        "config.trained)",
        schedules=True,
    )
    parser.add_argument(
        "--json", metavar="FILE", help="also write the report as JSON (rwtoolkit/schemas/report.schema.json)"
    )
    parser.add_argument(
        "--emit",
        metavar="DIR",
        help="instead of checking, write frozen exact oracles and a standalone pytest file into DIR "
        "(needs numpy, pytest and your framework only; docs/check.md#frozen-fixtures)",
    )
    parser.add_argument(
        "--configs",
        metavar="FILE",
        help="with --emit: the configurations, a JSON or YAML list of {family, params, mu, eta, eps, "
        "loss, embedding, M, seed} (default: the built-in set of rwtoolkit.analyses.check.DEFAULT_SPECS)",
    )
    parser.add_argument(
        "--max-seconds",
        default="600",
        dest="max_seconds",
        help="refuse up front when the estimated time of the check (its exact reference trajectories), or "
        "with --emit of writing the fixtures, exceeds this many seconds (default 600)",
    )


def _emit(args: argparse.Namespace, steps: int) -> int:
    """``--emit DIR``: validate, estimate (refusing what cannot fit), write the fixtures, say how to run them."""
    import shlex

    from rwtoolkit.cli._task_args import parse_int
    from rwtoolkit.io import check_disk, check_memory, check_output_dir, format_bytes

    if args.json:
        raise ValueError("--json writes a check report; with --emit nothing is checked: leave it out")
    folder = check_output_dir(args.emit, "--emit", files=("manifest.json", "oracles"))
    limit = parse_int(args.max_seconds, "max-seconds", 1)
    from rwtoolkit.analyses.check import (
        DEFAULT_SPECS,
        emit_fixtures,
        estimate_fixtures,
        load_factory,
        read_specs,
    )

    specs = read_specs(args.configs) if args.configs else list(DEFAULT_SPECS)
    if args.target is not None:
        load_factory(args.target)  # a target that does not import is refused before the work
    est = estimate_fixtures(specs, steps)
    summary = f"~{est.seconds:.3g} s, ~{format_bytes(est.memory)} of memory, ~{format_bytes(est.file_bytes)} of files"
    configs = f"{len(specs)} configuration{'s' * (len(specs) != 1)} at --steps {steps}"
    what = f"--emit: {configs}"
    alternative = "use fewer or smaller configurations (K, N, population, M) or fewer --steps"
    if est.seconds > limit:
        raise ValueError(
            f"{what} is estimated at {summary}: above --max-seconds {limit}; {alternative}, or raise --max-seconds"
        )
    check_memory(est.memory, f"{what} (estimated at {summary})", alternative)
    check_disk(est.file_bytes, folder, f"{what} (estimated at {summary})", alternative)
    print(f"rw check --emit: {configs}, estimated {summary}")
    command = "rw check " + " ".join(shlex.quote(a) for a in _argv())
    manifest = emit_fixtures(folder, specs, steps, implementation=args.target, command=command)
    print(f"wrote {manifest} and the oracles, the runtime and test_rwcheck_fixtures.py in {folder}")
    how = "" if args.target else " --rwfixture-factory MODULE:FACTORY"
    print(
        f"run them with: pytest {shlex.quote(str(folder))}{how}  (numpy, pytest and your framework only)\n"
        f"pytest: {KIT_INSTALL} in the toolkit's checkout; in a CI without the toolkit: pip install numpy pytest"
    )
    return 0


def _refuse_if_too_large(options, limit: int) -> str:
    """Estimate the check (``rwtoolkit.analyses.check.estimate_check``) and refuse in one line what cannot fit: its time above
    --max-seconds, its memory above what is available; else the estimate's line (printed once the probe of the
    implementation has passed, so that bad input stays one line)."""
    from rwtoolkit.analyses.check import estimate_check
    from rwtoolkit.io import check_memory

    est = estimate_check(options)
    model = "" if options.model == "one_layer" else f" --model {options.model}"
    what = f"--steps {options.steps}{model} with --examples {options.examples}"
    alternative = "use fewer --steps or --examples" + (
        ", or --task finite (smaller populations)" if options.task != "finite" else ""
    )
    if est.seconds > limit:
        raise ValueError(
            f"{what} is estimated at {est.describe()}: above --max-seconds {limit}; {alternative}, or raise "
            "--max-seconds"
        )
    check_memory(est.memory, f"{what} (estimated at {est.describe()})", alternative)
    return f"rw check: estimated {est.describe()}"


def _argv() -> list[str]:
    import sys

    argv = sys.argv[1:]
    return argv[1:] if argv and argv[0] == "check" else argv


def _model_args(args: argparse.Namespace) -> tuple[str, int | None, int | None]:
    """``--model``, ``--head-dim`` and ``--heads``, refused in one line where they do not go together (before any work)."""
    from rwtoolkit.cli._models import model_from_args
    from rwtoolkit.models import DEFAULT_MODEL

    chosen = model_from_args(args)
    # a model of your own travels as its target (MODULE:ATTR or PATH.py:ATTR), which get_model reads again
    model, d, heads = (
        chosen.target or chosen.name,
        chosen.hyperparameters.get("d"),
        chosen.hyperparameters.get("H"),
    )
    if model != DEFAULT_MODEL and args.emit:
        raise ValueError(
            f"--emit writes frozen oracles of the paper's model (one_layer) only; --model {model} is checked "
            "live: leave out --emit"
        )
    return model, d, heads


def run(args: argparse.Namespace) -> int:
    """Validate the options, probe the implementation, run every property, print the report; exit 0/1/2."""
    from rwtoolkit.cli._task_args import parse_int
    from rwtoolkit.io import check_output_file

    model, head_dim, heads = _model_args(args)
    if args.emit:
        for flag, given in (("--schedule", args.schedule), ("--stages", args.stages)):
            if given is not None:
                raise ValueError(
                    f"{flag} applies to a checked model with next-token logits; --emit writes the paper model's "
                    "oracles, trained at a constant rate: leave it out"
                )
        steps = parse_int(args.steps, "steps", 0)
        if steps > 4:
            raise ValueError(f"--steps={steps} is out of range: steps must be an integer in 0..4")
        return _emit(args, steps)
    if args.configs:
        raise ValueError("--configs chooses the configurations of --emit DIR: give --emit DIR too")
    if args.target is None:
        raise ValueError(
            "MODULE:FACTORY is required (the implementation to check), unless --emit DIR is given"
        )
    if args.json:
        check_output_file(args.json, "--json")  # before any work
    steps = parse_int(args.steps, "steps", 0)
    examples = parse_int(args.examples, "examples", 1)
    from tqdm import tqdm

    from rwtoolkit.analyses.check import PROPERTIES, CheckOptions, check, load_factory, write_report
    from rwtoolkit.cli._optim import optimizer_from_args, schedule_from_args, stages_from_args

    schedule, stages = schedule_from_args(args), stages_from_args(args)  # their syntax, before any work
    options = CheckOptions(
        steps=steps,
        examples=examples,
        dtype=args.dtype,
        task=args.task,
        model=model,
        head_dim=head_dim,
        heads=heads,
        objective=args.objective,
        optimizer=optimizer_from_args(args),
        schedule=schedule,
        stages=stages,  # matched against the model's parameter names, covering --steps
    )
    limit = parse_int(args.max_seconds, "max-seconds", 1)
    factory = load_factory(args.target)
    estimate = _refuse_if_too_large(options, limit)
    bar = tqdm(total=len(PROPERTIES), disable=not sys.stderr.isatty(), desc="rw check", unit="property")

    def progress(pid: str) -> None:  # called as each property starts
        if pid == PROPERTIES[0].id:  # the probe passed: the work starts
            bar.write(estimate, file=sys.stderr)
        else:
            bar.update(1)
        bar.set_postfix_str(pid)

    try:
        report = check(factory, options, args.target, progress=progress)
        bar.update(bar.total - bar.n)
    finally:
        bar.close()
    written = write_report(report, args.json) if args.json else None  # validated before anything is printed
    print(report.render())
    if written is not None:
        print(f"\nwrote {written}")
    return report.exit_code
