"""``rw zoo``: list the models, tasks and claims (``rw zoo list``), or check claims (``rw zoo claims``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rwtoolkit.io import check_output_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``list`` | ``claims [--claim ID]... [--quick] --out DIR``."""
    parser.add_argument("action", choices=("list", "claims"), help="list the zoo, or check its claims")
    parser.add_argument(
        "--claim",
        action="append",
        metavar="ID",
        help="check only this claim (repeatable; default every claim)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="the smallest configuration of each claim only (CI)"
    )
    parser.add_argument("--out", metavar="DIR", help="output folder for ZOO.md and zoo.json (claims)")
    parser.add_argument(
        "--figures", metavar="DIR", help="folder for the claims' PNG figures (default: OUT/figures)"
    )


def run(args: argparse.Namespace) -> int:
    """``list``: print the catalogue, exit 0. ``claims``: exit 0 when no claim is inconclusive."""
    if args.action == "list":
        if args.claim or args.out or args.quick or args.figures:
            raise ValueError(
                "rw zoo list takes no --claim, --out, --figures or --quick (those are for rw zoo claims)"
            )
        from rwtoolkit.analyses.zoo import render_catalogue

        print(render_catalogue())
        return 0
    if not args.out:
        raise ValueError("rw zoo claims needs --out DIR (where ZOO.md and zoo.json are written)")
    check_output_dir(args.out, "--out", files=("ZOO.md", "zoo.json"))
    if args.figures:
        check_output_dir(args.figures, "--figures")
    from rwtoolkit.analyses.zoo import CLAIMS, run_claims, write_report

    for wanted in args.claim or []:
        if wanted not in CLAIMS:
            raise ValueError(f"--claim {wanted!r} is not a claim id; choose from {', '.join(CLAIMS)}")

    def progress(message: str) -> None:  # one line per stage, so a long claim is never silent
        print(f"rw zoo: {message}", file=sys.stderr, flush=True)

    figures = args.figures or str(Path(args.out) / "figures")
    results = run_claims(args.claim, quick=args.quick, progress=progress, figures=figures)
    md, js = write_report(results, args.out, quick=args.quick, figures=figures)
    # Each claim's wall time: its set-up, its verdict and its figure.
    for claim in results:
        print(f"{claim.id:26s} {claim.verdict:36s} {claim.seconds:6.1f}s")
    print(f"wrote {md} and {js}")
    return 0 if all(claim.verdict.decided for claim in results) else 1
