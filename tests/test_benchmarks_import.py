"""Every script in ``benchmarks/`` still imports: a rename in the packages must not leave a benchmark that
fails before it measures anything (``benchmarks/gd_step.py`` once imported a renamed class and nobody saw).

Only the module level runs (``run_name`` is not ``__main__``), so nothing is timed here.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parent.parent / "benchmarks").glob("*.py"))


def test_there_are_benchmarks():
    assert len(SCRIPTS) >= 5


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_each_benchmark_imports(script):
    namespace = runpy.run_path(str(script), run_name="benchmark_import_check")
    assert callable(namespace.get("main")), f"{script.name} has no main()"
