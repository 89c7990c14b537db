"""Frozen fixtures (``rw check --emit``): the emitted pytest file runs without the toolkit, SymPy or
python-flint, passes on examples/plain_torch.py and fails on each planted bug of examples/bugs.py at
the bug's first wrong quantity (``bugs.FIRST_WRONG``, asserted independently by test_check_examples.py
through ``rw check``), with a reproduction that runs on its own."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import rwtoolkit.runtime
from rwtoolkit.analyses.check import DEFAULT_SPECS, emit_fixtures, read_specs
from rwtoolkit.cli.main import main
from rwtoolkit.engines.numeric import DEFAULT_TIE_RTOL, LOSS_FUNCTIONS
from rwtoolkit.engines.numeric import predict as torch_predict
from rwtoolkit.models import DEFAULT_MODEL
from rwtoolkit.runtime import LABELS, CheckConfig, fixture_config, load_manifest, predict, torch_losses

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))
from bugs import FIRST_WRONG  # noqa: E402

#: Runs pytest with the toolkit, SymPy, python-flint and mpmath made unimportable: what a user's CI
#: without them sees (the installed rwtoolkit.analyses.check pytest plugin is not loaded either).
BLOCKED_PYTEST = """
import importlib.abc, sys
BLOCK = {"sympy", "flint", "mpmath", "rwtoolkit"}
class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCK:
            raise ImportError(f"{name} is not installed where the fixtures run")
sys.meta_path.insert(0, Blocked())
if sys.argv[1] == "-c":
    exec(sys.argv[2])
else:
    import pytest
    sys.exit(pytest.main(sys.argv[1:]))
"""


def _blocked(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("RWFIXTURE_FACTORY", None)
    return subprocess.run(
        [sys.executable, "-c", BLOCKED_PYTEST, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fixtures")
    emit_fixtures(folder, DEFAULT_SPECS, steps=2)
    return folder


def test_the_folder_holds_oracles_runtime_test_and_a_manifest_of_digests(fixtures):
    manifest = json.loads((fixtures / "manifest.json").read_text())
    assert (manifest["format"], manifest["version"]) == ("rw-fixtures", 3) and manifest["toolkit"][
        "name"
    ] == "rwtoolkit"
    assert len(manifest["configs"]) == len(DEFAULT_SPECS)
    assert set(manifest["tolerance_rule"]) == {"float64", "float32"}
    names = {p.relative_to(fixtures).as_posix() for p in fixtures.rglob("*") if p.is_file()}
    assert names - {"manifest.json"} == set(manifest["files"])  # every file has its digest
    for entry in manifest["configs"]:
        assert entry["rtol"]["float32"] > entry["rtol"]["float64"] > 0 and entry["steps"] == 2


def test_the_runtime_is_the_toolkits_package_folder_copied_as_it_is(fixtures):
    """``rwcheck_runtime/`` holds every module of ``rwtoolkit.runtime``, byte for byte: nothing is rewritten
    on the way out, so what the fixtures run is what ``rw check`` runs."""
    package = Path(rwtoolkit.runtime.__file__).parent
    sources = {p.name: p.read_bytes() for p in package.glob("*.py")}
    copied = {p.name: p.read_bytes() for p in (fixtures / "rwcheck_runtime").iterdir()}
    assert {"__init__.py", "oracle_format.py"} <= set(sources) and copied == sources


def test_the_runtime_imports_nothing_of_the_toolkit():
    """Every import of ``rwtoolkit.runtime`` is of the standard library, numpy, torch (inside a function: only
    where an implementation is torch) or a module of the package itself, relatively: the copy runs alone."""
    package = Path(rwtoolkit.runtime.__file__).parent
    found = []
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top_level = set(tree.body)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                continue  # relative: the package itself
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for name in names:
                    root = name.split(".")[0]
                    allowed = root in sys.stdlib_module_names or root == "numpy" or root == "__future__"
                    if not allowed and not (root == "torch" and node not in top_level):
                        found.append(f"{path.name}:{node.lineno} imports {name}")
    assert found == []


def test_a_fixture_config_is_the_one_config_rw_check_builds(fixtures):
    """The config a frozen fixture hands the factory is ``rwtoolkit.runtime.CheckConfig``, the class ``rw check``
    hands it, with the same values as the toolkit's ``build_config`` of the same configuration."""
    manifest = load_manifest(fixtures)
    for spec, entry in zip(DEFAULT_SPECS, manifest["configs"], strict=True):
        for dtype in ("float64", "float32"):
            frozen = fixture_config(fixtures, entry, dtype)
            built = spec.check_config(dtype)
            assert type(frozen) is type(built) is CheckConfig
            assert frozen.tie_rtol == built.tie_rtol == DEFAULT_TIE_RTOL[dtype]
            assert frozen.shapes == built.shapes and frozen.model == built.model == DEFAULT_MODEL
            assert frozen.describe().split(", P=")[1] == built.describe().split(", P=")[1]
            for name in ("K", "N", "M", "mu", "eta", "eps", "loss", "dtype", "embedding", "seed", "init"):
                assert getattr(frozen, name) == getattr(built, name), name
            for name in ("P", "tokens", "labels", "weights", "query", "inputs_array"):
                a, b = getattr(frozen, name), getattr(built, name)
                a, b = (a(), b()) if callable(a) else (a, b)
                assert a.dtype == b.dtype and np.array_equal(a, b), name
            assert all(np.array_equal(frozen.start[k], built.start[k]) for k in built.shapes)


def test_emitting_again_gives_the_same_bytes(fixtures, tmp_path):
    emit_fixtures(tmp_path, DEFAULT_SPECS, steps=2)
    first, again = (json.loads((f / "manifest.json").read_text()) for f in (fixtures, tmp_path))
    assert first["files"] == again["files"] and first["configs"] == again["configs"]


@pytest.mark.parametrize("factory", ["model", "training"])
def test_the_correct_example_passes_without_the_toolkit(fixtures, factory):
    done = _blocked(
        str(fixtures),
        "-q",
        "-p",
        "no:cacheprovider",
        f"--rwfixture-factory={EXAMPLES / 'plain_torch.py'}:{factory}",
        cwd=fixtures,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"{len(DEFAULT_SPECS) + 1} passed" in done.stdout


@pytest.mark.parametrize("bug", sorted(FIRST_WRONG))
def test_each_planted_bug_fails_at_its_first_wrong_quantity(fixtures, bug):
    done = _blocked(
        str(fixtures),
        "-q",
        "-p",
        "no:cacheprovider",
        f"--rwfixture-factory={EXAMPLES / 'bugs.py'}:{bug}",
        cwd=fixtures,
    )
    assert done.returncode == 1, done.stdout[-3000:]
    firsts = re.findall(r"first wrong quantity: (.+?)(?:\[[\d, ]+\])? at t=(\d)", done.stdout)
    assert firsts, done.stdout[-3000:]
    allowed = {LABELS[FIRST_WRONG[bug]]} | ({"loss"} if bug == "summed_loss" else set())  # loss when ε ≠ 1
    assert {label for label, _ in firsts} <= allowed, (bug, firsts)
    assert "reproduce:" in done.stdout


def test_the_reproduction_snippet_runs_on_its_own(fixtures):
    done = _blocked(
        str(fixtures),
        "-q",
        "-p",
        "no:cacheprovider",
        "-x",
        f"--rwfixture-factory={EXAMPLES / 'bugs.py'}:transposed_V",
        cwd=fixtures,
    )
    lines = done.stdout.split("reproduce:\n", 1)[1].splitlines()
    end = next(i for i, line in enumerate(lines) if line.endswith(")))"))  # the snippet's last line
    snippet = "\n".join(lines[: end + 1])
    ran = _blocked("-c", snippet, cwd=fixtures)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "Difference(step=1, quantity='V'" in ran.stdout


def test_a_changed_file_fails_the_digest_test(fixtures, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(fixtures, copy)
    P = next((copy / "oracles").glob("*.P.npy"))
    P.write_bytes(P.read_bytes()[:-8] + b"\x00" * 8)
    done = _blocked(str(copy), "-q", "-p", "no:cacheprovider", "-k", "emitted", cwd=copy)
    assert done.returncode == 1 and f"oracles/{P.name} changed since it was emitted" in done.stdout


def test_without_an_implementation_the_test_says_how_to_name_one(fixtures):
    done = _blocked(str(fixtures), "-q", "-p", "no:cacheprovider", cwd=fixtures)
    assert done.returncode == 1 and "no implementation named: pass --rwfixture-factory" in done.stdout


def test_the_runtime_tie_rule_is_rwnumerics():
    rng = np.random.default_rng(0)
    f = rng.normal(size=(500, 4))
    f[::7, 2] = f[::7, 1]  # exact ties
    f[::11, 3] = f[::11, 0] * (1 + 1e-12)  # ties within the tolerance
    f[5] = np.nan
    for rtol in (1e-9, 1e-5):
        assert np.array_equal(predict(f, rtol), torch_predict(torch.as_tensor(f), rtol).numpy())


def test_the_runtime_losses_are_rwnumerics():
    z = torch.linspace(-0.09, 3, 101, dtype=torch.float64)
    for name, fn in torch_losses().items():
        assert torch.equal(fn(z.clone(), 0.1), LOSS_FUNCTIONS[name](z.clone(), 0.1)), name


def test_a_configs_file_chooses_the_configurations(tmp_path):
    path = tmp_path / "configs.yaml"
    path.write_text(
        "- {family: circle, params: {K: 3, N: 3, p: 1/3}, mu: 1, eta: 1, eps: 1/10, embedding: onehot, M: 3}\n"
        "- {family: permutation, params: {m: 3}, mu: 2, eta: 1/2, eps: 1/10, loss: squared}\n"
    )
    specs = read_specs(path)
    assert [s.family for s in specs] == ["circle", "permutation"] and specs[1].loss == "squared"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--emit", "out", "--steps", "5"], "steps must be an integer in 0..4"),
        (["--emit", "out", "--json", "r.json"], "with --emit nothing is checked"),
        (["--emit", "out", "--configs", "missing.yaml"], "missing.yaml is not a file"),
        (
            ["--emit", "out", "--configs", "bad.json"],
            "bad.json: [0].size: unknown key; allowed: family, params",
        ),
        (["--emit", "out", "--configs", "badtask.json"], "badtask.json: [0].params.K: K=2 is out of range"),
        (["--emit", "out", "--max-seconds", "0"], "--max-seconds must be >= 1"),
        (["--configs", "bad.json"], "give --emit DIR too"),
        ([], "MODULE:FACTORY is required"),
        (["nope.py:f", "--emit", "out"], "the file nope.py does not exist"),
    ],
    ids=[
        "steps",
        "json",
        "missing-configs",
        "bad-key",
        "bad-task",
        "max-seconds",
        "configs-alone",
        "no-target",
        "bad-target",
    ],
)
def test_emit_bad_input_is_one_line_exit_2_and_writes_nothing(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text(
        '[{"family": "circle", "params": {}, "mu": 1, "eta": 1, "eps": 1, "size": 3}]'
    )
    (tmp_path / "badtask.json").write_text(
        '[{"family": "circle", "params": {"K": 2, "N": 3, "p": "1/2"}, "mu": 1, "eta": 1, "eps": 1}]'
    )
    assert main(["check", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not (tmp_path / "out").exists()


def test_emit_refuses_what_cannot_fit_before_any_work(tmp_path, monkeypatch, capsys):
    configs = tmp_path / "big.json"
    configs.write_text(
        '[{"family": "circle", "params": {"K": 5, "N": 12, "p": "1/3"}, "mu": 1, "eta": 1, "eps": "1/10"}]'
    )
    assert main(["check", "--emit", str(tmp_path / "out"), "--configs", str(configs), "--steps", "4"]) == 2
    err = capsys.readouterr().err
    assert "estimated at" in err and "above --max-seconds 600" in err and not (tmp_path / "out").exists()


def test_the_runtime_reads_the_first_manifest_id_and_refuses_an_unknown_one(fixtures, tmp_path):
    manifest = json.loads((fixtures / "manifest.json").read_text())
    (tmp_path / "manifest.json").write_text(
        json.dumps({**manifest, "format": "rwtoolkit-fixtures", "version": 1})
    )
    assert load_manifest(tmp_path)["configs"] == manifest["configs"]
    (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "format": "rw-fixtures", "version": 2}))
    assert load_manifest(tmp_path)["configs"] == manifest["configs"]
    (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "version": 4}))
    with pytest.raises(ValueError, match="version 4 is not a fixture manifest this runtime reads"):
        load_manifest(tmp_path)
