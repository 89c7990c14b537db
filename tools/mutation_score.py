"""The mutation score per file from mutmut's results, with the equivalent mutants of docs/testing.md set aside.

score = killed / (mutants checked - equivalent survivors). A mutant is equivalent when no input can tell
it from the original (docs/testing.md lists each with the reason); every other survivor is a gap in the
tests. Prints one row per file, then the surviving mutants that are not triaged; exit code 1 when a file
with checked mutants scores below the target (90 %) or a survivor is untriaged.

    python tools/mutation_score.py [--target 0.9] [--markdown]

``mutants`` is every mutant of the file and ``checked`` those with a result, so a partial run shows how
far it got; ``--markdown`` prints the table as the Markdown table of docs/testing.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRIAGE = ROOT / "docs" / "testing.md"
#: mutmut's exit codes: the tests failed or errored (1, 3), timed out (24, 36, 152, 255, -24) or the type
#: check caught it (37): killed. 0: survived. 5, 33: no selected test reaches the mutant, a gap like a
#: survivor. 34 (skipped) is left out of the count.
KILLED = {1, 3, 24, 36, 37, 152, 255, -24}
SURVIVED = {0, 5, 33}
SKIPPED = {34}


def equivalent_mutants(text: str) -> set[str]:
    """Mutant names listed in the triage table: lines starting with ``| `package.module.x_name__mutmut_N` |``."""
    return set(re.findall(r"^\|\s*`([\w.ǁ]+__mutmut_\d+)`", text, flags=re.MULTILINE))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=0.9, help="minimum score per file (default 0.9)")
    parser.add_argument("--markdown", action="store_true", help="print the table as a Markdown table")
    args = parser.parse_args(argv)
    equivalent = equivalent_mutants(TRIAGE.read_text(encoding="utf-8")) if TRIAGE.exists() else set()
    metas = sorted((ROOT / "mutants").rglob("*.py.meta"))
    if not metas:
        print("no mutmut results under mutants/: run `make mutate` first", file=sys.stderr)
        return 1
    failed = False
    untriaged: list[str] = []
    header = ("file", "mutants", "checked", "killed", "survived", "equiv.", "score")
    if args.markdown:
        print("| " + " | ".join(header) + " |\n|" + " --- |" * len(header))
    else:
        print(f"{header[0]:32} " + " ".join(f"{h:>8}" for h in header[1:]))
    for meta in metas:
        codes: dict[str, int | None] = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        done = {k: c for k, c in codes.items() if c is not None and c not in SKIPPED}
        if not done:
            continue
        killed = sum(c in KILLED for c in done.values())
        survivors = [k for k, c in done.items() if c in SURVIVED]
        equiv = [k for k in survivors if k in equivalent]
        untriaged += [k for k in survivors if k not in equivalent]
        real = len(done) - len(equiv)
        score = killed / real if real else 1.0
        failed |= score < args.target
        name = str(meta.relative_to(ROOT / "mutants"))[: -len(".meta")]
        row = (len(codes), len(done), killed, len(survivors), len(equiv), f"{score:.1%}")
        if args.markdown:
            print(f"| `{name}` | " + " | ".join(map(str, row)) + " |")
        else:
            print(f"{name:32} " + " ".join(f"{v:>8}" for v in row))
    if untriaged:
        print(f"\n{len(untriaged)} surviving mutants not listed as equivalent in docs/testing.md:")
        print("\n".join(f"  {k}" for k in untriaged))
    return 1 if failed or untriaged else 0


if __name__ == "__main__":
    sys.exit(main())
