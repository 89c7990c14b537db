"""``rw certify``: the certified (ball-arithmetic) trajectory, DIR/certify.json and DIR/CERTIFY.md, both atomic."""

from __future__ import annotations

import argparse
import math

from rwtoolkit.cli._task_args import add_task_arguments, parse_int, task_from_args

FLOAT_GRAMS = ("computed", "ideal", "none")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Task and training options as in ``rw train`` (the exact model only), precision and comparison options."""
    add_task_arguments(
        parser, "circle: clockwise probability, a number in [0, 1] such as 1/2 or 1 (required)"
    )
    a = parser.add_argument
    a("--M", default="1000", help="positional dimension (sine: M > N; onehot: M = N) (default 1000)")
    a(
        "--pos",
        choices=("sine", "onehot"),
        default="sine",
        help="positional embeddings (default sine, μ = M/2)",
    )
    a("--eta", default="1", help="learning rate, an exact positive rational such as 1 or 1/2 (default 1)")
    a("--eps", default="1/10", help="ε of the log-loss -log(z + ε), exact positive rational (default 1/10)")
    a("--steps", default="50", help="GD steps >= 0 (default 50)")
    a("--train-size", default="1000", help="sampled training walks >= 1, each of weight 1/n (default 1000)")
    a("--test-size", default="1000", help="sampled evaluation walks >= 1 (default 1000)")
    a(
        "--population",
        action="store_true",
        help="train and evaluate on the exact population (small tasks only)",
    )
    a(
        "--seed",
        default="0",
        help="sampling seed >= 0, the walks rw train draws with the same seed (default 0)",
    )
    a("--record-steps", default=None, help="comma-separated steps to record (default: every step)")
    a("--prec", default="128", help="starting working precision in bits (default 128)")
    a(
        "--tol",
        default="1e-20",
        help="widest relative ball radius accepted before the precision doubles (default 1e-20)",
    )
    a("--max-prec", default="2048", help="largest precision tried, bits (default 2048)")
    a(
        "--parent-threshold",
        default="1/2",
        help="the parent-attention statement's threshold in (0, 1] (default 1/2)",
    )
    a(
        "--float-gram",
        choices=FLOAT_GRAMS,
        default="computed",
        help="compare a float64 rwtoolkit.engines.numeric run with this Gram matrix against the enclosure (default computed; none: skip)",
    )
    a(
        "--float-tol",
        default="1e-9",
        help="relative excess beyond which a float value leaves the enclosure (default 1e-9)",
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


def run(args: argparse.Namespace) -> int:
    """Validate everything, certify, optionally compare a float64 run, write both files.

    Exit status 0 once both files are written, whatever the outcomes (an inconclusive statement, an unmet
    ``--tol`` or a run stopped by too wide balls is a result, printed and recorded, not an error).
    """
    from rwtoolkit.io import check_output_dir, write_json_atomic, write_text_atomic

    out = check_output_dir(args.out, "--out", files=("certify.json", "CERTIFY.md"))  # before any work
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
    cert = certify(task, progress=True, **options)
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
