"""``rw check`` on examples/: the plain implementation passes, each planted bug fails naming its first wrong quantity.

The bug variants (examples/bugs.py) and the quantity each must be caught at are listed in
``bugs.FIRST_WRONG``; the user test file examples/test_user_model.py runs under plain pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from rwtoolkit.analyses.check import CheckOptions, check, load_factory, write_report
from rwtoolkit.analyses.check._properties import TRAJECTORY
from rwtoolkit.io import load_schema

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
RW = [sys.executable, "-c", "import sys; from rwtoolkit.cli.main import main; sys.exit(main())"]
OPTIONS = CheckOptions(steps=2, examples=3)

sys.path.insert(0, str(EXAMPLES))
from bugs import FIRST_WRONG  # noqa: E402


def _trajectory_failures(report) -> list[tuple[str, int]]:
    return [(r.id, r.failure["step"]) for r in report.results if r.id in TRAJECTORY and r.status == "fail"]


@pytest.mark.parametrize("factory", ["model", "training"])
def test_plain_implementation_passes(factory) -> None:
    report = check(load_factory(f"{EXAMPLES}/plain_torch.py:{factory}"), OPTIONS)
    assert report.exit_code == 0, report.render()
    assert report.counts()["fail"] == 0


@pytest.mark.parametrize("bug", sorted(FIRST_WRONG))
def test_each_bug_fails_at_its_first_wrong_quantity(bug) -> None:
    report = check(load_factory(f"{EXAMPLES}/bugs.py:{bug}"), OPTIONS)
    assert report.exit_code == 1
    failures = _trajectory_failures(report)
    assert [q for q, _ in failures] == [FIRST_WRONG[bug]], report.render()


def test_rw_check_console_passes_and_writes_a_valid_report(tmp_path) -> None:
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [*RW, "check", "examples/plain_torch.py:model", "--examples", "1", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "10 pass, 0 fail, 0 not checked" in proc.stdout
    data = json.loads(out.read_text())
    jsonschema.validate(data, load_schema("report"))
    assert data["exit_code"] == 0 and data["counts"]["pass"] == 10


def test_rw_check_console_fails_with_exit_1_naming_the_quantity_without_pytest(tmp_path) -> None:
    """The console command on a bug: exit 1, the quantity named; pytest blocked, so ``rw check`` needs no pytest."""
    out = tmp_path / "report.json"
    code = (
        "import sys; sys.modules['pytest'] = None\n"  # any `import pytest` now raises ImportError
        "from rwtoolkit.cli.main import main\n"
        f"sys.exit(main(['check', 'examples/bugs.py:transposed_V', '--steps', '1', '--examples', '1', '--json', {str(out)!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "first divergence: V[" in proc.stdout and "at t=1" in proc.stdout
    data = json.loads(out.read_text())
    jsonschema.validate(data, load_schema("report"))
    row = next(r for r in data["properties"] if r["id"] == "V")
    assert row["status"] == "fail" and row["failure"]["step"] == 1 and row["failure"]["config"]["K"] >= 3


def test_same_implementation_same_report_bytes(tmp_path) -> None:
    """Derandomized search: the same implementation and options write the same bytes."""
    factory = load_factory(f"{EXAMPLES}/bugs.py:summed_loss")
    paths = [
        write_report(
            check(factory, CheckOptions(steps=1, examples=2), "bugs.py:summed_loss"), tmp_path / name
        )
        for name in ("a.json", "b.json")
    ]
    assert paths[0].read_bytes() == paths[1].read_bytes()


def _pytest(args: list[str], cwd: Path, path: Path | None = None) -> subprocess.CompletedProcess:
    """Plain ``pytest -q`` on ``args`` in a subprocess (the rwtoolkit.analyses.check plugin loads through its entry point),
    with ``path`` put first on PYTHONPATH so the test file can import the user's module."""
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), os.environ.get("PYTHONPATH", "")])
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


def _python_blocks(text: str) -> list[str]:
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


def _readme_mine() -> str:
    """The README's "Check your implementation" code (mine.py), as a user copies it."""
    readme = (ROOT / "README.md").read_text()
    return _python_blocks(readme[readme.index("## Check your implementation") :])[0]


def test_user_test_file_runs_under_plain_pytest() -> None:
    proc = _pytest(["examples/test_user_model.py", "--rwcheck-examples", "1", "--rwcheck-steps", "1"], ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "10 passed" in proc.stdout


def test_a_user_test_class_with_a_bug_fails_under_pytest(tmp_path) -> None:
    test_file = tmp_path / "test_buggy.py"
    test_file.write_text(
        "from bugs import transposed_V\n"
        "from rwtoolkit.analyses.check import ConformanceTests\n\n\n"
        "class TestBuggy(ConformanceTests):\n"
        "    factory = staticmethod(transposed_V)\n"
        "    steps = 1\n"
    )
    proc = _pytest([str(test_file), "--rwcheck-examples", "1", "-k", "trajectory"], tmp_path, EXAMPLES)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Mismatch: V[" in proc.stdout and "at t=1" in proc.stdout


def test_readme_example_passes(tmp_path) -> None:
    """The README's "Check your implementation" code, copied as a user would, passes."""
    (tmp_path / "mine.py").write_text(_readme_mine())
    report = check(load_factory(f"{tmp_path}/mine.py:factory"), CheckOptions(steps=2, examples=2))
    assert report.exit_code == 0 and report.counts() == {"pass": 10, "fail": 0, "not checked": 0}, (
        report.render()
    )


def test_plain_implementation_matches_the_exact_trajectory_at_step_4() -> None:
    # The largest case the exact engine must reach in seconds: K=5, N=6, p=3/10, t = 0..4. A trajectory
    # this long goes through the named-exponential (atom) form of the exact values.
    from rwtoolkit.analyses.check import assert_matches_exact, build_config
    from rwtoolkit.tasks import CircleWalk

    factory = load_factory(f"{EXAMPLES}/plain_torch.py:model")
    cfg = build_config(CircleWalk(5, 6, "3/10"), mu=1, eta=1, eps="1/10")
    readouts = assert_matches_exact(factory, cfg, 4)
    assert len(readouts.values["V"]) == 5


def test_a_bug_is_still_caught_at_step_4() -> None:
    report = check(load_factory(f"{EXAMPLES}/bugs.py:eta_twice_on_W"), CheckOptions(steps=4, examples=3))
    assert [q for q, _ in _trajectory_failures(report)] == [FIRST_WRONG["eta_twice_on_W"]], report.render()


def test_docs_check_page_runs_as_written(tmp_path) -> None:
    """docs/check.md, with the README's mine.py beside it: the pytest class passes under plain pytest,
    and the assert_matches_exact block runs without a Mismatch."""
    (tmp_path / "mine.py").write_text(_readme_mine())
    under_pytest, one_config = _python_blocks((ROOT / "docs" / "check.md").read_text())
    (tmp_path / "test_mine.py").write_text(under_pytest)
    proc = _pytest(["test_mine.py", "--rwcheck-examples", "1"], tmp_path, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    script = "from mine import factory\n" + one_config + "\nassert len(readouts.values['V']) == 3\n"
    # python -c puts its working folder first on sys.path: mine.py is found there
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
