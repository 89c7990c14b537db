"""Build the wheel with the standard frontend, install it in a fresh venv, and run what a user runs first.

Checks, in a temporary folder outside the source tree (so nothing is imported from the checkout):
the wheel installs with its runtime dependencies only (no test, notebook or docs package is pulled in),
``rw --help`` and ``rw signal`` run, the shipped JSON schemas load, the frozen fixtures of
``rw check --emit`` pass under pytest once the ``kit`` extra is installed (its plugin registered), and
the public testing package imports when the wheel contains one. Exit code 0 when all hold, 1 otherwise, with one line per failure.

    python tools/wheel_check.py [--python python3.11] [--keep]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Packages only the test suite, the notebooks, the docs or the gates need: a runtime install must not pull them.
NOT_RUNTIME = (
    "pytest",
    "pytest-xdist",
    "nbclient",
    "nbformat",
    "ipykernel",
    "ruff",
    "mypy",
    "build",
    "mutmut",
    "mkdocs",
)
#: The public testing package: imported when the wheel ships it.
TESTING_PACKAGE = "rwtoolkit.analyses.check"

SMOKE = """
import json, rwtoolkit.engines.numeric, rwtoolkit.engines.exact, rwtoolkit.tasks
assert rwtoolkit.engines.numeric.load_metrics_schema()["type"] == "object"
from rwtoolkit.io import SCHEMAS, load_schema
assert all(load_schema(name)["type"] == "object" for name in SCHEMAS)
print("schemas load from the installed packages")
"""
ORACLE = """
from rwtoolkit.engines.exact import load_oracle
oracle = load_oracle("o.json")
assert oracle.value("S", 2).shape == (12, 3) and oracle.error("V", 2).max() < 1e-15
print("the oracle reads back from the installed packages")
"""


def run(cmd: list[str], cwd: Path, what: str) -> str:
    print("+", " ".join(map(str, cmd)), flush=True)
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"wheel check: {what} failed (exit code {done.returncode})")
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="python3.11", help="interpreter for the fresh venv")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and print its path")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="rw-wheel-check-"))
    try:
        dist, venv, work = tmp / "dist", tmp / "venv", tmp / "work"
        work.mkdir()
        run(
            [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
            tmp,
            "python -m build",
        )
        wheels = sorted(dist.glob("rwtoolkit-*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"wheel check: expected one rwtoolkit wheel in {dist}, found {len(wheels)}")
        wheel = wheels[0]
        names = zipfile.ZipFile(wheel).namelist()
        roots = sorted({name.split("/")[0] for name in names if ".dist-info/" not in name})
        if roots != ["rwtoolkit"]:
            raise SystemExit(f"wheel check: {wheel.name} installs {roots}, not the one import root rwtoolkit")
        schemas = [
            f"rwtoolkit/schemas/{p.name}" for p in sorted((ROOT / "rwtoolkit" / "schemas").glob("*.json"))
        ]
        for data in (
            *schemas,
            *(f"rwtoolkit/runtime/{p.name}" for p in sorted((ROOT / "rwtoolkit" / "runtime").glob("*.py"))),
            "rwtoolkit/analyses/check/_fixture_test.py",
            "rwtoolkit/analyses/check/_fixture_conftest.py",
            "rwtoolkit/models/key_query.py",
        ):
            if data not in names:
                raise SystemExit(f"wheel check: {wheel.name} lacks the package data file {data}")
        run([args.python, "-m", "venv", str(venv)], tmp, "creating the venv")
        py, rw = venv / "bin" / "python", venv / "bin" / "rw"
        run(
            [str(py), "-m", "pip", "install", "--quiet", "--no-compile", str(wheel)],
            tmp,
            "pip install of the wheel",
        )
        installed = run([str(py), "-m", "pip", "list", "--format=freeze"], tmp, "pip list").lower()
        pulled = [name for name in NOT_RUNTIME if f"\n{name}==" in "\n" + installed]
        if pulled:
            raise SystemExit(
                f"wheel check: the runtime install pulled test/docs-only packages: {', '.join(pulled)}"
            )
        run([str(rw), "--help"], work, "rw --help")
        out = run([str(rw), "signal", "--K", "4", "--N", "7"], work, "rw signal --K 4 --N 7")
        if "1/2" not in out:
            raise SystemExit(
                f"wheel check: rw signal --K 4 --N 7 did not report the vanishing point 1/2: {out!r}"
            )
        run([str(py), "-c", SMOKE], work, "loading the schemas")
        # The oracle writer and reader, and the fixtures, from the installed files (the fixtures copy the
        # package folder rwtoolkit/runtime out of site-packages as it is).
        run(
            [
                str(rw),
                "derive",
                "--K",
                "3",
                "--N",
                "3",
                "--p",
                "1/2",
                "--mu",
                "1",
                "--steps",
                "2",
                "--json",
                "o.json",
            ],
            work,
            "rw derive --json",
        )
        run([str(py), "-c", ORACLE], work, "load_oracle of the written oracle")
        (work / "one.json").write_text(
            '[{"family": "circle", "params": {"K": 3, "N": 3, "p": "1/2"}, "mu": 1, "eta": 1, "eps": "1/10"}]'
        )
        run(
            [str(rw), "check", "--emit", "fx", "--configs", "one.json", "--steps", "1"],
            work,
            "rw check --emit",
        )
        runtime = sorted(p.name for p in (ROOT / "rwtoolkit" / "runtime").glob("*.py"))
        for name in (
            "manifest.json",
            "conftest.py",
            "test_rwcheck_fixtures.py",
            *(f"rwcheck_runtime/{n}" for n in runtime),
        ):
            if not (work / "fx" / name).is_file():
                raise SystemExit(f"wheel check: rw check --emit wrote no {name}")
        # The kit extra (what rw check --emit tells the user to install): pytest, the rwtoolkit.analyses.check plugin
        # registered through it, and the fixtures just emitted passing under it.
        run(
            [str(py), "-m", "pip", "install", "--quiet", "--no-compile", f"{wheel}[kit]"],
            tmp,
            "pip install of the kit extra",
        )
        usage = run([str(py), "-m", "pytest", "--help"], work, "pytest --help with the kit extra")
        if "--rwcheck-steps" not in usage:
            raise SystemExit(
                "wheel check: with the kit extra, pytest does not load the rwtoolkit.analyses.check plugin"
            )
        shutil.copy(ROOT / "examples" / "plain_torch.py", work / "plain_torch.py")
        run(
            [
                str(py),
                "-m",
                "pytest",
                "fx",
                "--rwfixture-factory",
                "plain_torch.py:model",
                "-q",
                "-p",
                "no:cacheprovider",
            ],
            work,
            "pytest on the emitted fixtures with the kit extra",
        )
        if any(n.startswith(TESTING_PACKAGE.replace(".", "/") + "/") for n in names):
            run(
                [str(py), "-c", f"import {TESTING_PACKAGE}, {TESTING_PACKAGE}.strategies"],
                work,
                f"import {TESTING_PACKAGE}",
            )
            print(f"{TESTING_PACKAGE} imports from the installed wheel")
        else:
            print(f"{TESTING_PACKAGE} is not in the wheel: nothing to import")
        print(f"wheel check passed: {wheel.name}")
        return 0
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
