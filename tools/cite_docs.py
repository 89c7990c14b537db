"""Rewrite citations of the outside mathematics specification ("MATH.md §3") as citations of this
repository's documentation pages ("docs/theory.md#reduction").

Code must cite the paper's numbered statements and the project's own docs, never a file outside the
repository. This script applies one fixed mapping, section by section, to every tracked source file
(``.py``, ``.ipynb``, ``.json``, ``.md``; not ``docs/``, where pages link to each other, not the
top-level README, and not this script or its test, which name the outside file). It only touches
citation strings and is idempotent, so it can be re-run after merging branches that still carry old
citations::

    python tools/cite_docs.py           # rewrite in place, print what changed
    python tools/cite_docs.py --check   # exit 1 and list the citations left, change nothing

``tests/test_docs_links.py`` checks that no tracked file cites the outside file and that every
``docs/<page>.md#<anchor>`` cited exists.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Section of the outside specification -> the docs page and anchor that now hold its content.
SECTIONS = {
    "1": "docs/theory.md#task",
    "2": "docs/theory.md#model",
    "3": "docs/theory.md#reduction",
    "4": "docs/theory.md#statements",
    "5": "docs/theory.md#signal",
    "6": "docs/theory.md#qa-tasks",
    "7": "docs/reproduction.md#experiments",
    "8": "docs/theory.md#stability",
}

#: Whole phrases whose section mapping alone would read badly (applied before the general rule).
PHRASES = [
    ("(MATH.md §2, issue 2 item 8)", "(docs/theory.md#model)"),
    ("MATH.md §3–§5", "docs/theory.md#statements"),
    ("MATH.md §3-§5", "docs/theory.md#statements"),
    ("MATH.md §4–§5 on the smallest", "The symmetry argument of docs/theory.md#manifold, on the smallest"),
    ("a question-answering task of MATH.md §6", "a question-answering task of the paper's Section 6"),
    (
        "Lemma D.1 (our reading; MATH.md §5 states it, the spec does not quote the paper's D.1)",
        "Lemma D.1 (our reading, stated in docs/theory.md#manifold; the paper's wording is not quoted)",
    ),
    (
        "**D.1** is our reading (MATH.md §5 states the fact, not the paper's wording).",
        "**D.1** is our reading (docs/theory.md#manifold states the fact, not the paper's wording).",
    ),
    ("MATH.md's circulant form holds", "the circulant form of docs/theory.md#statements holds"),
    (
        "The paper's printed indices are not in MATH.md, so they are not",
        "The paper's printed indices are not reproduced there, so they are not",
    ),
    ("This is MATH.md's corrected form", "This is the corrected form of docs/theory.md#statements"),
    ("printed indices are not reproduced in MATH.md, so", "printed indices are not reproduced there, so"),
    ("in the order of MATH.md.", "in the order of docs/theory.md#statements."),
    ("in MATH.md order.", "in the order of docs/theory.md#statements."),
    ("one statement of MATH.md;", "one statement of the paper (docs/theory.md#statements);"),
    ("(MATH.md indexing)", "(the 1-based indexing of docs/theory.md)"),
    (
        "(node k is MATH.md's node k+1); positions i are 1-based as in MATH.md.",
        "(node k is node k+1 of docs/theory.md#task); positions i are 1-based as there.",
    ),
    ("(written from MATH.md)", "(written from docs/theory.md#model)"),
    ("| statement (MATH.md) |", "| statement (docs/theory.md) |"),
    ("of MATH.md section 5", "of docs/theory.md#signal"),
]

_SECTION_LIST = re.compile(r"MATH\.md (§\d+(?:\s*[-–]\s*§\d+)?(?:,\s*§\d+(?:\s*[-–]\s*§\d+)?)*)")


def _expand(sections: str) -> str:
    """'§2-§3, §7' -> 'docs/theory.md#model, #reduction, docs/reproduction.md#experiments'.

    A target on the same page as the one before it is written as its anchor alone.
    """
    targets: list[str] = []
    for part in sections.split(","):
        numbers = [int(n) for n in re.findall(r"§(\d+)", part)]
        for n in range(numbers[0], numbers[-1] + 1):
            target = SECTIONS.get(str(n))
            if target is None:
                raise ValueError(f"no docs page for section §{n}; add it to SECTIONS")
            if target not in targets:
                targets.append(target)
    out = []
    for i, target in enumerate(targets):
        same_page = i > 0 and target.split("#")[0] == targets[i - 1].split("#")[0]
        out.append("#" + target.split("#")[1] if same_page else target)
    return ", ".join(out)


def rewrite(text: str) -> str:
    """``text`` with every citation of the outside specification rewritten (idempotent).

    >>> rewrite("the sine basis of MATH.md §2")
    'the sine basis of docs/theory.md#model'
    >>> rewrite("(MATH.md §2-§3, §7).")
    '(docs/theory.md#model, #reduction, docs/reproduction.md#experiments).'
    >>> rewrite(rewrite("MATH.md §5")) == rewrite("MATH.md §5")
    True
    """
    for old, new in PHRASES:
        text = text.replace(old, new)
    return _SECTION_LIST.sub(lambda m: _expand(m.group(1)), text)


def targets() -> list[Path]:
    """The tracked files the mapping applies to."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    paths = []
    for name in listed.splitlines():
        path = Path(name)
        if path.suffix not in (".py", ".ipynb", ".json", ".md") or name == "README.md":
            continue
        if path.parts[0] == "docs" or name in ("tools/cite_docs.py", "tests/test_docs_links.py"):
            continue
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="list citations left; change nothing")
    args = parser.parse_args(argv)
    left = 0
    for path in targets():
        full = ROOT / path
        text = full.read_text(encoding="utf-8")
        if "MATH.md" not in text:
            continue
        new = rewrite(text)
        if args.check:
            for number, line in enumerate(text.splitlines(), 1):
                if "MATH.md" in line:
                    print(f"{path}:{number}: {line.strip()[:100]}")
                    left += 1
            continue
        if new != text:
            full.write_text(new, encoding="utf-8")
            print(f"rewrote {path}: {text.count('MATH.md') - new.count('MATH.md')} citation(s)")
        for number, line in enumerate(new.splitlines(), 1):
            if "MATH.md" in line:
                print(f"{path}:{number}: not rewritten (no rule): {line.strip()[:100]}", file=sys.stderr)
                left += 1
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
