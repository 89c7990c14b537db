"""A damaged oracle or fixture folder fails in one way: ``OracleFormatError``, one line naming the file.

The damage table cuts, flips and deletes parts of a freshly written oracle (its JSON header and its
``.inputs.npz``) and reads everything back, through ``load_oracle`` and through the numpy-only reader
the frozen fixtures carry; hypothesis then damages the files at random, where the only outcomes allowed
are the same error or the very values written. Out-of-range steps get the same range message for
per-step and per-input values. The emitted fixtures' tests fail with their own one-line message when a
file is missing or ``manifest.json`` is cut.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import scaled
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rwtoolkit.analyses.check import DEFAULT_SPECS, emit_fixtures
from rwtoolkit.engines.exact import OracleFormatError, derive, load_oracle, write_oracle
from rwtoolkit.engines.exact.oracle import PerInput, read_header, step_doubles
from rwtoolkit.runtime.oracle_format import sha256_of
from rwtoolkit.tasks import CircleWalk

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """An oracle with per-input values: K = N = 3, t = 0..2."""
    folder = tmp_path_factory.mktemp("oracle")
    return write_oracle(derive(CircleWalk(3, 3, "1/2"), 2, mu=1), folder / "o.json")


@pytest.fixture
def oracle(written, tmp_path) -> Path:
    """A fresh copy of the written oracle to damage."""
    for path in written.parent.iterdir():
        shutil.copy(path, tmp_path / path.name)
    return tmp_path / written.name


def _npz(header: Path) -> Path:
    return header.with_name("o.inputs.npz")


def read_with_load_oracle(path: Path, verify: bool = False) -> dict:
    """Every value ``load_oracle`` gives: doubles, bounds and exact values, per step and per input."""
    out: dict = {}
    oracle = load_oracle(path, verify=verify)
    try:
        for t in range(oracle.T + 1):
            for name in (*oracle.step_values, *oracle.per_input_values):
                if name in oracle.step_values and name not in oracle.steps[t]:
                    continue
                out[name, t] = (oracle.value(name, t), oracle.error(name, t), oracle.exact(name, t))
        out["population"] = oracle.population()
    finally:
        oracle.close()
    out["exact"] = load_oracle(path, exact=True).steps
    return out


def read_with_numpy(path: Path) -> dict:
    """Everything the numpy-only reader (what ``rw check --emit`` copies) gives: doubles and members."""
    header = read_header(path)
    out: dict = {"steps": step_doubles(header, path)}
    columns = PerInput(path, header)
    try:
        out.update({name: columns.column(name) for name in columns.members})
    finally:
        columns.close()
    return out


READERS = {"load_oracle": read_with_load_oracle, "numpy": read_with_numpy}


def _edit_header(path: Path, change: Callable[[dict], None]) -> None:
    header = json.loads(path.read_text(encoding="utf-8"))
    change(header)
    path.write_text(json.dumps(header), encoding="utf-8")


def _rewrite_npz(path: Path, change: Callable[[str, np.ndarray], np.ndarray | None]) -> None:
    """Rewrite the ``.npz`` with ``change`` applied to each member (None drops it), and record its new
    size and digest in the header, so that only the member itself is wrong."""
    npz = _npz(path)
    with np.load(npz) as old:
        members = {name: old[name] for name in old.files}
    with zipfile.ZipFile(npz, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for name, array in members.items():
            array = change(name, array)
            if array is not None:
                with out.open(name + ".npy", "w") as handle:
                    np.lib.format.write_array(handle, array, allow_pickle=False)

    def record(header: dict) -> None:
        header["per_input"].update(bytes=npz.stat().st_size, sha256=sha256_of(npz))

    _edit_header(path, record)


def _cut(fraction: float) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * fraction)])

    return damage


def _header(change: Callable[[dict], None]) -> Callable[[Path], None]:
    return lambda path: _edit_header(path, change)


def _npz_cut(path: Path) -> None:
    _cut(0.5)(_npz(path))


def _npz_garbage(path: Path) -> None:
    npz = _npz(path)
    npz.write_bytes(b"\x00" * npz.stat().st_size)  # same size: the header's byte count still agrees


def _npz_flip_inside_a_member(path: Path) -> None:
    npz = _npz(path)
    with zipfile.ZipFile(npz) as archive:
        info = archive.getinfo("S/1.npy")
    data = bytearray(npz.read_bytes())
    data[info.header_offset + 30 + len(info.filename) + info.compress_size // 2] ^= 0xFF
    npz.write_bytes(bytes(data))


def _set(keys: tuple, value: object) -> Callable[[dict], None]:
    def change(header: dict) -> None:
        target = header
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return change


def _delete(keys: tuple) -> Callable[[dict], None]:
    def change(header: dict) -> None:
        target = header
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]

    return change


def _cut_nodes(header: dict) -> None:
    header["nodes"] = header["nodes"][: len(header["nodes"]) // 2]


#: (damage, the file the message must name, whether the numpy-only reader must notice it too).
DAMAGE = {
    "header-empty": (_cut(0.0), "json", True),
    "header-cut-1-byte": (_cut(1 / 9000), "json", True),
    "header-cut-third": (_cut(1 / 3), "json", True),
    "header-cut-half": (_cut(1 / 2), "json", True),
    "header-cut-near-end": (_cut(0.995), "json", True),
    "header-not-utf8": (lambda p: p.write_bytes(b"\xff\xfe" + p.read_bytes()), "json", True),
    "header-not-an-object": (lambda p: p.write_text("[1, 2]"), "json", True),
    "header-other-format": (_header(_set(("format",), "something-else")), "json", True),
    "no-steps": (_header(_delete(("steps",))), "json", True),
    "empty-steps": (_header(_set(("steps",), [])), "json", True),
    "step-out-of-order": (_header(_set(("steps", 1, "t"), 2)), "json", True),
    "no-float": (_header(_delete(("steps", 1, "V", "float"))), "json", True),
    "float-not-numbers": (_header(_set(("steps", 1, "V", "float"), "x")), "json", True),
    "float-wrong-shape": (_header(_set(("steps", 1, "V", "float"), [[1.0, 2.0]])), "json", True),
    "float-ragged": (_header(_set(("steps", 1, "V", "float"), [[1.0], [2.0, 3.0]])), "json", True),
    "value-not-an-object": (_header(_set(("steps", 1, "loss"), 3)), "json", True),
    "no-model": (_header(_delete(("model",))), "json", True),
    "model-shape-not-a-list": (_header(_set(("model", "parameters", "V"), "3x3")), "json", True),
    "config-K-a-string": (_header(_set(("config", "K"), "3")), "json", False),
    "no-config": (_header(_delete(("config",))), "json", True),
    "no-per-input": (_header(_delete(("per_input",))), "json", True),
    "per-input-bytes-a-string": (_header(_set(("per_input", "bytes"), "6662")), "json", True),
    "per-input-steps": (_header(_set(("per_input", "steps"), 7)), "json", True),
    "per-input-rows": (_header(_set(("per_input", "rows"), 11)), "json", True),
    "per-input-member-unlisted": (_header(_set(("per_input", "members"), ["tokens"])), "json", True),
    "no-nodes": (_header(_delete(("nodes",))), "json", False),
    "node-table-cut": (_header(_cut_nodes), "json", False),
    "node-index-past-the-table": (_header(_set(("steps", 1, "V", "exact", 0, 0), 10**6)), "json", False),
    "node-index-negative": (_header(_set(("steps", 1, "V", "exact", 0, 0), -1)), "json", False),
    "exact-wrong-shape": (_header(_set(("steps", 1, "V", "exact"), [4, 5])), "json", False),
    "node-refers-forward": (_header(_set(("nodes", 3), ["exp", 40])), "json", False),
    "node-refers-negative": (_header(_set(("nodes", 3), ["exp", -1])), "json", False),
    "node-zero-denominator": (_header(_set(("nodes", 0), "1/0")), "json", False),
    "node-unknown-kind": (_header(_set(("nodes", 3), ["frobnicate", 0])), "json", False),
    "node-not-a-node": (_header(_set(("nodes", 3), 7)), "json", False),
    "npz-missing": (lambda p: _npz(p).unlink(), "npz", True),
    "npz-cut": (_npz_cut, "npz", True),
    "npz-not-a-zip": (_npz_garbage, "npz", True),
    "npz-flipped-member-data": (_npz_flip_inside_a_member, "npz", True),
    "npz-member-missing": (lambda p: _rewrite_npz(p, lambda n, a: None if n == "f/2" else a), "npz", True),
    "npz-member-wrong-shape": (
        lambda p: _rewrite_npz(p, lambda n, a: a[:, :2] if n == "S/1" else a),
        "npz",
        True,
    ),
    "npz-member-too-few-rows": (
        lambda p: _rewrite_npz(p, lambda n, a: a[:5] if n == "labels" else a),
        "npz",
        True,
    ),
    "npz-member-wrong-dtype": (
        lambda p: _rewrite_npz(p, lambda n, a: a.astype(np.complex128) if n == "f/0" else a),
        "npz",
        True,
    ),
    "npz-index-column-as-floats": (
        lambda p: _rewrite_npz(p, lambda n, a: a.astype(np.float64) if n == "S_exact/1" else a),
        "npz",
        True,
    ),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_oracle_raises_one_error_naming_the_file(case, reader, oracle) -> None:
    damage, names, numpy_too = DAMAGE[case]
    damage(oracle)
    if reader == "numpy" and not numpy_too:  # the node table: only load_oracle reads it
        return
    with pytest.raises(OracleFormatError) as caught:
        READERS[reader](oracle)
    message = str(caught.value)
    assert str(oracle if names == "json" else _npz(oracle)) in message
    assert "\n" not in message


def test_an_altered_per_input_file_fails_its_digest_when_verified(oracle) -> None:
    npz = _npz(oracle)
    data = bytearray(npz.read_bytes())
    data[-5] ^= 0x01  # the end of the zip directory's comment length: read without complaint
    npz.write_bytes(bytes(data))
    with pytest.raises(OracleFormatError, match="SHA-256 differs"):
        read_with_load_oracle(oracle, verify=True)


def _same(a: object, b: object) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return bool(a == b)


@settings(max_examples=scaled(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_damage_gives_the_error_or_the_values_written(data, written, tmp_path) -> None:
    """Any cut, flipped or deleted bytes of either file: OracleFormatError naming it, or what was
    written (a flip can hit bytes that do not matter, or change a double in the JSON: then only the
    doubles differ, which the fixtures' digests catch)."""
    target = data.draw(st.sampled_from(["o.json", "o.inputs.npz"]), label="file")
    original = (written.parent / target).read_bytes()
    at = data.draw(st.integers(0, len(original) - 1), label="offset")
    kind = data.draw(st.sampled_from(["flip", "cut", "delete"]), label="damage")
    damaged = bytearray(original)
    if kind == "flip":
        damaged[at] ^= data.draw(st.integers(1, 255), label="xor")
    elif kind == "cut":
        damaged = damaged[:at]
    else:
        del damaged[at]
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    for path in written.parent.iterdir():
        (folder / path.name).write_bytes(bytes(damaged) if path.name == target else path.read_bytes())
    for reader in READERS.values():
        try:
            got = reader(folder / "o.json")
        except OracleFormatError as err:
            assert str(folder / target) in str(err) and "\n" not in str(err)
            continue
        if target == "o.inputs.npz":  # a zip byte that does not matter (a time stamp, a comment)
            assert _same(got, reader(written))


@pytest.mark.parametrize("name", ["V", "loss", "S", "f"])
@pytest.mark.parametrize("t", [3, -1, 10])
def test_a_step_past_the_last_is_refused_with_the_range_for_every_value(written, name, t) -> None:
    oracle = load_oracle(written)
    for read in (oracle.value, oracle.error, oracle.exact):
        with pytest.raises(ValueError, match=rf"^t={t} is out of range: the oracle has steps 0\.\.2$"):
            read(name, t)
    oracle.close()


def test_a_node_index_outside_the_table_is_refused_with_the_range(written) -> None:
    oracle = load_oracle(written)
    size = len(oracle.header["nodes"])
    with pytest.raises(
        ValueError, match=rf"^node {size} is out of range: the table has nodes 0\.\.{size - 1}$"
    ):
        oracle.node(size)


# ------------------------------------------------------------------------------------------------
# the emitted fixtures, run without the toolkit (the copies of the runtime and reader only)
# ------------------------------------------------------------------------------------------------
BLOCKED_PYTEST = """
import importlib.abc, sys
BLOCK = {"sympy", "flint", "mpmath", "rwtoolkit"}
class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCK:
            raise ImportError(f"{name} is not installed where the fixtures run")
sys.meta_path.insert(0, Blocked())
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fixtures")
    emit_fixtures(folder, DEFAULT_SPECS[:1], steps=1)
    return folder


def _run_fixtures(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "COLUMNS": "1000"}  # summary lines whole
    env.pop("RWFIXTURE_FACTORY", None)
    argv = [sys.executable, "-c", BLOCKED_PYTEST, str(folder), "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=folder, env=env, timeout=600)


def _copy(fixtures: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(fixtures, copy)
    return copy


def _failures(stdout: str) -> list[str]:
    """The one-line reasons pytest prints in its short summary (``FAILED id - reason``)."""
    lines = [line.split(" - ", 1) for line in stdout.splitlines() if line.startswith("FAILED ")]
    return [parts[1].removeprefix("Failed: ") if len(parts) == 2 else "" for parts in lines]


@pytest.mark.parametrize(
    "damage", ["cut", "empty", "not-an-object", "no-configs-key", "missing"], ids=lambda d: f"manifest-{d}"
)
def test_a_damaged_manifest_fails_every_test_with_one_line_naming_it(fixtures, tmp_path, damage) -> None:
    copy = _copy(fixtures, tmp_path)
    manifest = copy / "manifest.json"
    text = manifest.read_text(encoding="utf-8")
    if damage == "cut":
        manifest.write_text(text[: len(text) // 2], encoding="utf-8")
    elif damage == "empty":
        manifest.write_text("", encoding="utf-8")
    elif damage == "not-an-object":
        manifest.write_text("[]", encoding="utf-8")
    elif damage == "no-configs-key":
        manifest.write_text(json.dumps({k: v for k, v in json.loads(text).items() if k != "configs"}))
    else:
        manifest.unlink()
    done = _run_fixtures(copy)
    assert done.returncode == 1, done.stdout + done.stderr
    reasons = _failures(done.stdout)
    assert len(reasons) == 2 and all(r.startswith(f"{manifest}: ") for r in reasons), done.stdout
    assert "error" not in done.stdout.splitlines()[-1]  # failed tests, no collection error


def test_a_missing_file_fails_the_digest_test_naming_it(fixtures, tmp_path) -> None:
    copy = _copy(fixtures, tmp_path)
    P = next((copy / "oracles").glob("*.P.npy"))
    P.unlink()
    done = _run_fixtures(copy, "-k", "emitted")
    assert done.returncode == 1, done.stdout + done.stderr
    assert _failures(done.stdout) == [
        f"oracles/{P.name} is missing or unreadable (FileNotFoundError; manifest.json lists it)"
    ]


@pytest.mark.parametrize("damage", ["oracle-cut", "npz-cut", "P-cut"])
def test_a_damaged_oracle_fails_the_comparison_with_one_line_naming_it(fixtures, tmp_path, damage) -> None:
    copy = _copy(fixtures, tmp_path)
    suffix = {"oracle-cut": ".json", "npz-cut": ".inputs.npz", "P-cut": ".P.npy"}[damage]
    path = next(p for p in (copy / "oracles").iterdir() if p.name.endswith(suffix))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    factory = f"--rwfixture-factory={ROOT / 'examples' / 'plain_torch.py'}:model"
    done = _run_fixtures(copy, "-k", "matches", factory)
    assert done.returncode == 1, done.stdout + done.stderr
    [reason] = _failures(done.stdout)
    assert reason.startswith(str(path)), done.stdout
    assert "Traceback" not in done.stdout and "During handling" not in done.stdout, done.stdout
