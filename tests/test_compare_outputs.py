"""tools/compare_outputs.py compare: planted differences are found leaf by leaf, volatile leaves are not.

The runs are synthetic folders in the layout ``compare_outputs.py run`` writes (run.json, per command
stdout.txt, stderr.txt and files/), so no toolkit command runs here.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "compare_outputs.py"


def _tool():
    spec = importlib.util.spec_from_file_location("tools_compare_outputs", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


co = _tool()

#: The oracle-like JSON both sides write; each test plants one change in a copy.
ORACLE: dict[str, Any] = {
    "format": "rw-oracle",
    "version": 3,
    "notation": {"nodes": "node table (rwsymbolic/oracle/_nodes.py)"},
    "steps": [
        {"t": t, "V": {"exact": [["0", "1/4"], ["1/3", "0"]], "float": [[0.0, 0.25], [1 / 3, 0.0]]}}
        for t in range(3)
    ],
    "seconds": 1.25,
}


def _write_run(
    folder: Path,
    examples: str,
    oracle: dict[str, Any],
    arrays: dict[str, np.ndarray],
    stderr: str,
    exit_code: int = 0,
) -> Path:
    """A run folder with one command, 'derive', that wrote derive.json and derive.inputs.npz."""
    files = folder / "derive" / "files"
    files.mkdir(parents=True)
    (files / "derive.json").write_text(json.dumps(oracle))
    np.savez(files / "derive.inputs.npz", logits=arrays["logits"], labels=arrays["labels"])
    (folder / "derive" / "stdout.txt").write_text(f"rw check {examples}/plain_torch.py:model: pass\n")
    (folder / "derive" / "stderr.txt").write_text(stderr)
    record = {
        "format": co.RUN_FORMAT,
        "version": co.RUN_VERSION,
        "rw": str(folder / "venv" / "bin" / "rw"),
        "examples": examples,
        "out": str(folder),
        "quick": True,
        "commands": [
            {
                "name": "derive",
                "argv": ["rw", "derive", "--json", "derive.json"],
                "exit_code": exit_code,
                "seconds": 1.0,
                "files": ["derive.inputs.npz", "derive.json"],
            }
        ],
    }
    (folder / "run.json").write_text(json.dumps(record))
    return folder


def _arrays() -> dict[str, np.ndarray]:
    return {"logits": np.arange(12, dtype=np.float64).reshape(3, 4) / 7, "labels": np.arange(3)}


@pytest.fixture
def old(tmp_path: Path) -> Path:
    return _write_run(tmp_path / "old", "/tmp/ci/examples", ORACLE, _arrays(), "rw derive: done in 2.7 s\n")


def _differing(rows) -> dict[str, str]:
    return {row.item: row.detail for row in rows if row.counts and not row.same}


def test_compare_ignores_times_paths_and_renamed_modules(old: Path, tmp_path: Path) -> None:
    oracle = copy.deepcopy(ORACLE)
    oracle["seconds"] = 9.5
    oracle["notation"]["nodes"] = "node table (rwtoolkit/engines/exact/oracle/_nodes.py)"
    new = _write_run(tmp_path / "new", "/work/x/examples", oracle, _arrays(), "rw derive: done in 31.0 s\n")
    assert _differing(co.compare(str(old), str(new))) == {}
    assert co.main(["compare", str(old), str(new)]) == 0


def test_compare_finds_a_number_planted_deep_in_json(old: Path, tmp_path: Path) -> None:
    oracle = copy.deepcopy(ORACLE)
    oracle["steps"][2]["V"]["float"][1][0] = 0.33333333333333337  # 1/3 is 0.3333333333333333
    new = _write_run(tmp_path / "new", "/tmp/ci/examples", oracle, _arrays(), "rw derive: done in 2.7 s\n")
    differing = _differing(co.compare(str(old), str(new)))
    assert list(differing) == ["derive.json"]
    assert "$.steps[2].V.float[1][0]: 0.3333333333333333 vs 0.33333333333333337" in differing["derive.json"]
    assert co.main(["compare", str(old), str(new)]) == 1


def test_compare_tells_an_integer_from_the_same_float(old: Path, tmp_path: Path) -> None:
    oracle = copy.deepcopy(ORACLE)
    oracle["steps"][0]["t"] = 0.0
    new = _write_run(tmp_path / "new", "/tmp/ci/examples", oracle, _arrays(), "rw derive: done in 2.7 s\n")
    assert "$.steps[0].t: 0 vs 0.0" in _differing(co.compare(str(old), str(new)))["derive.json"]


def test_compare_finds_one_array_element_that_is_not_bit_identical(old: Path, tmp_path: Path) -> None:
    arrays = _arrays()
    arrays["logits"][1, 2] = np.nextafter(arrays["logits"][1, 2], 2.0)
    new = _write_run(tmp_path / "new", "/tmp/ci/examples", ORACLE, arrays, "rw derive: done in 2.7 s\n")
    differing = _differing(co.compare(str(old), str(new)))
    assert list(differing) == ["derive.inputs.npz"]
    assert "logits[1, 2]:" in differing["derive.inputs.npz"]
    assert "(1 of 12 elements differ)" in differing["derive.inputs.npz"]


def test_compare_finds_a_changed_exit_code_and_a_changed_message(old: Path, tmp_path: Path) -> None:
    new = _write_run(
        tmp_path / "new", "/tmp/ci/examples", ORACLE, _arrays(), "rw derive: refused\n", exit_code=2
    )
    differing = _differing(co.compare(str(old), str(new)))
    assert differing["exit code"] == "0 vs 2"
    assert differing["stderr"] == 'differs at line 1: "rw derive: done in <T>" vs "rw derive: refused"'


def test_markdown_time_column_is_masked_and_other_columns_are_compared() -> None:
    norm = co.Normaliser({})
    table = "| id | verdict | time (s) |\n| --- | --- | --- |\n| B.1 | **{}** | {} |\n"
    assert norm.lines(table.format("holds", "1.9")) == norm.lines(table.format("holds", "12.75"))
    assert norm.lines(table.format("holds", "1.9")) != norm.lines(table.format("fails", "1.9"))


def test_compare_refuses_a_folder_that_is_not_a_run_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(TOOL), "compare", str(tmp_path), str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert (
        done.stderr
        == f"compare_outputs.py compare: error: {tmp_path}: no run.json of 'compare_outputs.py run' in it\n"
    )
