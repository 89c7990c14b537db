"""The pytest plugin costs nothing until used: every pytest session where the toolkit is installed loads
it (entry point ``pytest11``), so loading it imports none of the heavy libraries; its options still
reach ``ConformanceTests`` when a test uses the kit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: What a pytest session must not pay for when it never uses the kit.
HEAVY = (
    "sympy",
    "flint",
    "torch",
    "jax",
    "dask",
    "matplotlib",
    "pandas",
    "hypothesis",
    "rwtoolkit.engines.exact",
)


def _loaded_after(code: str) -> list[str]:
    """The ``HEAVY`` modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_loading_the_pytest_plugin_imports_no_heavy_library() -> None:
    assert _loaded_after("import rwtoolkit.analyses.check.pytest_plugin") == []


def test_importing_rwcheck_imports_no_heavy_library_until_a_name_is_used() -> None:
    assert _loaded_after("import rwtoolkit.analyses.check") == []
    assert "sympy" in _loaded_after("import rwtoolkit.analyses.check\nrwtoolkit.analyses.check.check")


def _pytest(tmp_path: Path, test: str, *options: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_it.py").write_text(test, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_it.py", *options]
    return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)


def test_a_pytest_session_that_never_uses_the_kit_loads_none_of_it(tmp_path) -> None:
    test = (
        "import sys\n\n\n"
        "def test_nothing_heavy_is_loaded():\n"
        '    assert "rwtoolkit.analyses.check.pytest_plugin" in sys.modules  # the plugin is loaded\n'
        f"    assert [m for m in {HEAVY!r} if m in sys.modules] == []\n"
    )
    proc = _pytest(tmp_path, test)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_plugins_options_reach_a_conformance_test_class(tmp_path) -> None:
    test = (
        "from rwtoolkit.analyses.check import ConformanceTests\n\n\n"
        "class Mine(ConformanceTests):\n"
        "    factory = None\n\n\n"
        "def test_options():\n"
        "    o = Mine().options()\n"
        "    print('OPTIONS', o.steps, o.examples, o.dtype, o.task)\n"
    )
    given = ["--rwcheck-steps", "3", "--rwcheck-examples", "7", "--rwcheck-dtype", "float32"]
    proc = _pytest(tmp_path, test, "-s", *given, "--rwcheck-task", "finite")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OPTIONS 3 7 float32 finite" in proc.stdout
    proc = _pytest(tmp_path, test, "-s")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OPTIONS 2 10 float64 circle" in proc.stdout
