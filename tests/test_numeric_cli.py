"""`rw train` writes DIR/metrics.json (config, history, final) reproducibly; in-process and as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import SMALL_TRAIN_ARGS as SMALL

from rwtoolkit.cli.main import main
from rwtoolkit.engines.numeric import HISTORY_KEYS, ModelConfig, TrainConfig, train, write_json_atomic
from rwtoolkit.tasks import CircleWalk


def test_train_command_writes_the_documented_metrics_file(tmp_path):
    assert main(["train", *SMALL, "--snapshots", "0,3", "--out", str(tmp_path / "run")]) == 0
    data = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert sorted(data) == ["config", "final", "format", "history", "snapshots", "version"]
    assert (data["format"], data["version"]) == ("rw-metrics", 2)
    assert [h["step"] for h in data["history"]] == [0, 1, 2, 3]
    assert all(sorted(h) == sorted(HISTORY_KEYS) for h in data["history"])
    assert data["config"]["task"] == {"name": "circle", "K": 4, "N": 5, "p": "7/10"}
    assert data["config"]["train"]["train_size"] == 20 and data["config"]["model"]["M"] == 8
    assert data["config"]["mu"] == 4.0  # M/2 for the sine basis
    assert sorted(data["final"]) == ["V", "attention_profile", "w"]
    assert len(data["final"]["w"]) == 4 + 8 and len(data["final"]["attention_profile"]) == 5
    assert sorted(data["snapshots"]) == ["0", "3"]
    assert sorted(data["snapshots"]["3"]) == ["V", "attended_token", "attention_profile"]
    # the attended token X·S averages one-hot columns with weights S_1..S_{N-1}: it sums to 1 - S_N
    snap = data["snapshots"]["3"]
    assert abs(sum(snap["attended_token"]) - (1 - snap["attention_profile"][-1])) < 1e-15


def test_same_seed_and_config_give_identical_bytes(tmp_path):
    for name in ("a", "b"):
        assert (
            main(["train", *SMALL, "--init", "gaussian", "--seed", "7", "--out", str(tmp_path / name)]) == 0
        )
    a, b = ((tmp_path / n / "metrics.json").read_bytes() for n in ("a", "b"))
    assert a == b
    assert main(["train", *SMALL, "--init", "gaussian", "--seed", "8", "--out", str(tmp_path / "c")]) == 0
    assert (tmp_path / "c" / "metrics.json").read_bytes() != a  # the seed matters


def test_library_result_and_atomic_writer_agree_with_the_command(tmp_path):
    result = train(
        CircleWalk(4, 5, "0.7"),
        ModelConfig(K=4, N=5, M=8),
        TrainConfig(steps=3, train_size=20, test_size=10, threads=1),
        progress=False,
    )
    write_json_atomic(result.to_json(), tmp_path / "lib" / "metrics.json")
    assert main(["train", *SMALL, "--out", str(tmp_path / "cli")]) == 0
    assert (tmp_path / "lib" / "metrics.json").read_bytes() == (
        tmp_path / "cli" / "metrics.json"
    ).read_bytes()
    assert [p.name for p in (tmp_path / "lib").iterdir()] == ["metrics.json"]  # no temp file left behind


def test_train_command_runs_as_a_subprocess(tmp_path):
    rw = Path(sys.executable).with_name("rw")
    proc = subprocess.run(
        [
            str(rw),
            "train",
            "--task",
            "qa1",
            "--M",
            "20",
            "--steps",
            "2",
            "--population",
            "--init",
            "gaussian",
            "--eta",
            "0.1",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout and "it/s" not in proc.stderr  # no progress bar when stderr is not a tty
    data = json.loads((tmp_path / "metrics.json").read_text())
    assert data["config"]["task"] == {"name": "qa1", "K": 19, "N": 17, "inputs": 32}
    assert data["history"][-1]["v_direction_error"] is None  # no Π for a QA task


def test_bad_flag_as_a_subprocess_exits_2(tmp_path):
    rw = Path(sys.executable).with_name("rw")
    proc = subprocess.run(
        [str(rw), "train", "--steps", "-1", "--N", "5", "--M", "8", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr == "rw train: error: steps=-1 must be an integer >= 0\n"


def test_atomic_writer_refuses_nan_and_leaves_nothing_behind(tmp_path):
    import pytest

    with pytest.raises(
        ValueError, match="refusing to write .*metrics.json: Out of range float values are not JSON compliant"
    ):
        write_json_atomic({"kl": float("nan")}, tmp_path / "metrics.json")
    assert list(tmp_path.iterdir()) == []


def test_record_steps_and_rotate_flags_keep_only_those_steps(tmp_path):
    flags = ["--K", "5", "--N", "4", "--M", "6", "--p", "0.7", "--steps", "4", "--population"]
    assert main(["train", *flags, "--out", str(tmp_path / "every")]) == 0
    assert main(["train", *flags, "--record-steps", "4,0", "--rotate", "--out", str(tmp_path / "some")]) == 0
    every, some = (json.loads((tmp_path / n / "metrics.json").read_text()) for n in ("every", "some"))
    assert [h["step"] for h in some["history"]] == [0, 4]
    assert some["config"]["train"]["record_steps"] == [0, 4] and some["config"]["train"]["rotate"] is True
    # the rotation reduction changes only the float rounding (8 rooted walks, 4 steps): ≪ 1e-12
    for a, b in zip(some["history"], [every["history"][0], every["history"][4]], strict=True):
        assert a["test_accuracy"] == b["test_accuracy"]
        assert abs(a["train_loss"] - b["train_loss"]) < 1e-12
    assert main(["train", *flags, "--record-steps", "0,x", "--out", str(tmp_path / "bad")]) == 2
