"""``rw proofs``: run the executable certificates and write DIR/PROOFS.md and DIR/proofs.json."""

from __future__ import annotations

import argparse
import sys

from rwtoolkit.io import check_output_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--quick, --only ID (repeatable), --out DIR."""
    parser.add_argument(
        "--quick", action="store_true", help="shrink every range (CI); every certificate still runs"
    )
    parser.add_argument(
        "--only", action="append", metavar="ID", help="run only this statement id (repeatable), e.g. C.1"
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="output folder for PROOFS.md and proofs.json"
    )


def run(args: argparse.Namespace) -> int:
    """Exit 0 when every certificate passes (holds or corrected), 1 otherwise."""
    check_output_dir(args.out, "--out", files=("PROOFS.md", "proofs.json"))
    from tqdm import tqdm

    import rwtoolkit.analyses.proofs  # the certificates load SymPy: only once the command runs

    ids = rwtoolkit.analyses.proofs.certificate_ids()
    if args.only:
        for wanted in args.only:
            if wanted not in ids:
                raise ValueError(f"--only {wanted!r} is not a statement id; choose from {', '.join(ids)}")
    bar = None

    def progress(names):
        nonlocal bar
        bar = tqdm(
            names, desc="certificates", unit="cert", disable=not sys.stderr.isatty()
        )  # a bar only on a terminal
        for name in bar:
            bar.set_postfix_str(name.rsplit(".", 1)[-1])
            yield name

    certs = rwtoolkit.analyses.proofs.run(quick=args.quick, only=args.only, progress=progress)
    md, js = rwtoolkit.analyses.proofs.write_report(certs, args.out, quick=args.quick)
    for c in certs:
        print(f"{c.id:10s} {c.word:9s} {c.seconds:7.1f}s  {c.method}")
    print(f"wrote {md} and {js}")
    return 0 if all(c.passed for c in certs) else 1
