"""The tutorials run as written: every ``pycon`` block of ``docs/tutorials/*.md`` is executed as a doctest
(blocks of one page share their names, in order, and their printed output must match the page), then
every ``rw ...`` line of its ``bash`` blocks runs through the CLI in the same temporary folder and must
exit 0.
"""

from __future__ import annotations

import doctest
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)


def blocks(page: Path, language: str) -> list[tuple[int, str]]:
    """(line number, body) of each fenced block of ``language`` on ``page``."""
    text = page.read_text()
    return [
        (text[: m.start()].count("\n") + 1, m.group(2))
        for m in FENCE.finditer(text)
        if m.group(1) == language
    ]


def test_the_tutorials_are_found():
    names = {page.name for page in TUTORIALS}
    assert {"symmetry.md", "explore.md"} <= names
    for page in TUTORIALS:
        assert blocks(page, "pycon"), f"{page.name} has no pycon block to run"


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_as_written(page, tmp_path, monkeypatch):
    """In a fresh folder: the pycon blocks in order (output compared), then every ``rw`` command line."""
    monkeypatch.chdir(tmp_path)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs: dict = {"__name__": f"tutorial_{page.stem}"}
    for line, body in blocks(page, "pycon"):
        test = parser.get_doctest(body, globs, f"{page.name}:{line}", str(page), line)
        result = runner.run(test, clear_globs=False)
        assert result.failed == 0, (
            f"{page.name}, block at line {line}: {result.failed} example(s) failed (see above)"
        )
        globs = test.globs  # DocTest copies its globals: carry the names on to the next block
    commands = [
        shlex.split(line.split("#")[0])
        for _, body in blocks(page, "bash")
        for line in body.splitlines()
        if line.strip().startswith("rw ")
    ]
    for argv in commands:
        proc = subprocess.run(
            [sys.executable, "-m", "rwtoolkit.cli.main", *argv[1:]],
            check=False,
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, f"{shlex.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}"
