"""Frozen fixtures in a venv without the toolkit: `make fixture-check` (CI runs it through .ci/run).

Emits the default fixtures with the project's ``rw check --emit``, creates a fresh venv with numpy,
pytest and the project venv's torch version only (no rwtoolkit, no python-flint; SymPy arrives there as
a dependency of torch, and tests/test_check_fixtures.py runs the same file with SymPy's import
blocked), checks that the toolkit and python-flint cannot be imported there, and runs the emitted
pytest file against examples/plain_torch.py (both protocols: must pass) and against each planted bug
of examples/bugs.py (must fail, every failure naming the bug's first wrong quantity,
``bugs.FIRST_WRONG``), then with ``manifest.json`` cut in half (every test must fail with the one line
naming it, none may fail to be collected). Exit 0 when all of that holds.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
from bugs import FIRST_WRONG  # noqa: E402 - examples/ is not a package

LABELS = {"V": "V", "W_xN": "W x̃_N", "S": "S", "f": "f", "loss": "loss", "accuracy": "accuracy"}


def run(
    cmd: list[str], what: str, check: bool = True, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """Run ``cmd`` from ``cwd`` (default: the temporary folder; never the checkout, whose sources and
    package metadata Python would find on its path there)."""
    print("+", " ".join(map(str, cmd)), flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd or tempfile.gettempdir())
    if check and done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"fixture check: {what} failed (exit code {done.returncode})")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="python3.11", help="interpreter for the fresh venv")
    parser.add_argument("--rw", default=str(ROOT / ".venv" / "bin" / "rw"), help="the project's rw command")
    args = parser.parse_args(argv)
    project_python = Path(args.rw).with_name("python")
    torch_version = run(
        [str(project_python), "-c", "import torch; print(torch.__version__.split('+')[0])"],
        "reading torch's version",
    ).stdout.strip()
    tmp = Path(tempfile.mkdtemp(prefix="rw-fixture-check-"))
    try:
        fixtures, venv = tmp / "fixtures", tmp / "venv"
        run([args.rw, "check", "--emit", str(fixtures)], "rw check --emit")
        run([args.python, "-m", "venv", str(venv)], "creating the venv")
        py = venv / "bin" / "python"
        run(
            [str(py), "-m", "pip", "install", "--quiet", "numpy", "pytest", f"torch=={torch_version}"],
            "pip install numpy pytest torch",
        )
        for module in ("rwtoolkit.analyses.check", "rwtoolkit.engines.exact", "flint"):
            done = run([str(py), "-c", f"import {module}"], f"import {module}", check=False)
            if "ModuleNotFoundError" not in done.stderr:
                raise SystemExit(
                    f"fixture check: import {module} did not fail as a missing module: {done.stderr[-500:]}"
                )
            if done.returncode == 0:
                raise SystemExit(f"fixture check: {module} is importable in the venv that must not have it")
        pytest = [str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(fixtures)]
        for factory in ("model", "training"):
            run(
                [*pytest, f"--rwfixture-factory={ROOT / 'examples' / 'plain_torch.py'}:{factory}"],
                f"plain_torch:{factory}",
            )
            print(f"plain_torch.py:{factory}: passed")
        for bug, quantity in sorted(FIRST_WRONG.items()):
            done = run(
                [*pytest, f"--rwfixture-factory={ROOT / 'examples' / 'bugs.py'}:{bug}"], bug, check=False
            )
            firsts = {
                m for m in re.findall(r"first wrong quantity: (.+?)(?:\[[\d, ]+\])? at t=\d", done.stdout)
            }
            allowed = {LABELS[quantity]} | ({"loss"} if bug == "summed_loss" else set())  # loss when ε ≠ 1
            if done.returncode != 1 or not firsts or not firsts <= allowed:
                sys.stderr.write(done.stdout[-4000:])
                raise SystemExit(f"fixture check: {bug} should fail at {quantity}, got {sorted(firsts)}")
            print(f"bugs.py:{bug}: failed at {', '.join(sorted(firsts))}, as expected")
        manifest = fixtures / "manifest.json"
        manifest.write_bytes(manifest.read_bytes()[: manifest.stat().st_size // 2])
        done = run([*pytest, "-rf"], "the cut manifest", check=False)
        summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        if done.returncode != 1 or "error" in summary or f"{manifest}: not a readable" not in done.stdout:
            sys.stderr.write(done.stdout[-4000:] + done.stderr[-2000:])
            raise SystemExit(
                "fixture check: a cut manifest.json should fail every test with one line naming it"
            )
        print(f"cut manifest.json: {summary}, naming the file, as expected")
        print("fixture check: passed")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
