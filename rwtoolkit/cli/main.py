"""Entry point of the ``rw`` console command: one subcommand per module in this package.

Each subcommand module imports only argparse and ``rwtoolkit.io`` at the top and loads torch and SymPy inside
its ``run``, so ``rw --help`` and argument errors answer at once. Every output path is checked before
any work starts.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import traceback
from typing import NoReturn

# (subcommand, module, one-line help). Each module defines add_arguments(parser) and run(args) -> int.
COMMANDS: list[tuple[str, str, str]] = [
    (
        "train",
        "rwtoolkit.cli.train",
        "train the one-layer transformer numerically (rwtoolkit.engines.numeric)",
    ),
    (
        "derive",
        "rwtoolkit.cli.derive",
        "the exact population GD trajectory from zero init (rwtoolkit.engines.exact), --json oracle",
    ),
    (
        "signal",
        "rwtoolkit.cli.signal",
        "the token-average signal C, its factorisation and exact vanishing set",
    ),
    (
        "proofs",
        "rwtoolkit.cli.proofs",
        "run the executable certificates of the paper's lemmas (PROOFS.md, proofs.json)",
    ),
    (
        "reproduce",
        "rwtoolkit.cli.reproduce",
        "reproduce the paper's figures, REPORT.md and the p = 1 sensitivity study",
    ),
    (
        "explore",
        "rwtoolkit.cli.explore",
        "is a task's token average informative, and does GD stay stuck? (JSON spec)",
    ),
    (
        "check",
        "rwtoolkit.cli.check",
        "check your own implementation against the exact trajectory (pass / fail / not checked)",
    ),
    (
        "certify",
        "rwtoolkit.cli.certify",
        "certified ball-arithmetic trajectory of the exact model (certify.json, CERTIFY.md)",
    ),
    (
        "stability",
        "rwtoolkit.cli.stability",
        "does a stuck task's symmetric manifold attract or repel; predicted vs measured escape",
    ),
    (
        "zoo",
        "rwtoolkit.cli.zoo",
        "the field's other models, tasks and claims: 'rw zoo list', 'rw zoo claims --out DIR' (ZOO.md)",
    ),
    (
        "sweep",
        "rwtoolkit.cli.sweep",
        "grids of exact-population runs on Dask into one Parquet table; 'rw sweep plot DIR' draws them",
    ),
]


EPILOG = """exit status: 0 success; 2 bad input, refused before any work (a value out of range, an output path
that cannot be written, a size whose memory estimate exceeds the memory available); 1 a failure while
working (e.g. writing an output file failed, in which case no partial file is left, or code the command ran
called sys.exit)"""


class UsageError(Exception):
    """Bad user input: printed as one line and exit code 2."""


def _attach_negative_values(argv: list[str]) -> list[str]:
    """``--p -1/2`` -> ``--p=-1/2``: argparse takes "-1/2" for an option, but it is a (bad) value.

    >>> _attach_negative_values(["signal", "--p", "-1/2", "--K", "3"])
    ['signal', '--p=-1/2', '--K', '3']
    """
    out: list[str] = []
    for arg in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and re.match(r"-[\d.]", arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


class _OneLineParser(argparse.ArgumentParser):
    """argparse's own refusals (a missing or unknown option, a value of the wrong type, a choice outside the
    list) in one line, ``rw SUB: error: ...``, exit 2, without the usage block (``rw SUB --help`` shows it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand; bad input gives one line on stderr and exit 2."""
    parser = _OneLineParser(
        prog="rw",
        description="rw: check training-dynamics claims about small transformers exactly",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, module_name, help_text in COMMANDS:
        module = importlib.import_module(module_name)
        modules[name] = module
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(_attach_negative_values(sys.argv[1:] if argv is None else argv))
    try:
        return int(modules[args.command].run(args) or 0)
    except (UsageError, ValueError) as err:
        print(f"rw {args.command}: error: {err}", file=sys.stderr)
        return 2
    except SystemExit as err:  # sys.exit in code the command ran (a user's model, implementation or import)
        frames = traceback.extract_tb(err.__traceback__)
        at = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
        print(
            f"rw {args.command}: error: SystemExit({err.code!r}) raised{at} by code the command ran; it stopped there",
            file=sys.stderr,
        )
        return 1
    except MemoryError:
        print(f"rw {args.command}: error: ran out of memory; use smaller sizes", file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into e.g. `head`, which closed early: not an error
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stops the flush at exit from failing again
        return 0
    except (
        OSError
    ) as err:  # rwtoolkit.io.WriteError names the file; any other I/O failure still gets one line
        print(f"rw {args.command}: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
