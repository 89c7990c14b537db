"""Long ``rw train`` runs (issue 43, item 3): checkpoints, ``--resume``, progress, and the estimate first.

A run of T steps interrupted right after its checkpoint at T/2 (a ``KeyboardInterrupt`` raised once the checkpoint
is on disk, as a kill would leave it) and resumed with ``--resume`` must write the same bytes of metrics.json as
the run of T steps never interrupted (and without checkpoints). A resume with another option is one line naming
the field, exit 2; a checkpoint whose write fails leaves the previous checkpoint and no temporary file; the
progress bar writes nothing where stderr is not a terminal. The model is the traced nanoGPT-style example
(examples/nanogpt_attention.py:one_layer) from its own start on in-context Markov chains S = 2, N = 4 (16
sequences): a few milliseconds a step.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
import torch
from conftest import icl_train_argv

from rwtoolkit.cli.main import main
from rwtoolkit.engines.numeric import _model_train

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
STEPS = 12


@pytest.fixture
def argv(tmp_path) -> list[str]:
    return icl_train_argv(tmp_path, "0.3", STEPS, 5)


def test_a_resumed_run_writes_the_same_bytes_as_the_uninterrupted_run(argv, tmp_path, monkeypatch):
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    saved = _model_train.save_checkpoint

    def save_then_die(checkpoint, fields, t, *rest):
        saved(checkpoint, fields, t, *rest)
        raise KeyboardInterrupt  # killed right after the checkpoint at t = STEPS / 2 is on disk

    parts = tmp_path / "parts"
    with monkeypatch.context() as m:
        m.setattr(_model_train, "save_checkpoint", save_then_die)
        with pytest.raises(KeyboardInterrupt):
            main([*argv, "--checkpoint-every", str(STEPS // 2), "--out", str(parts)])
    assert sorted(p.name for p in parts.iterdir()) == ["checkpoint.pt"]
    assert torch.load(parts / "checkpoint.pt", weights_only=True)["step"] == STEPS // 2
    assert main([*argv, "--checkpoint-every", str(STEPS // 2), "--resume", "--out", str(parts)]) == 0
    whole = (tmp_path / "whole" / "metrics.json").read_bytes()
    assert (parts / "metrics.json").read_bytes() == whole
    steps = [r["step"] for r in json.loads(whole)["history"]]
    assert steps == [0, 5, 10, STEPS]  # --record-every 5 and the last


@pytest.mark.parametrize(
    ("change", "field"),
    [(["--eta", "0.2"], "config.eta: was 0.3, now 0.2"), (["--record-every", "4"], "record_steps")],
)
def test_a_resume_with_another_option_is_refused_in_one_line(argv, tmp_path, capsys, change, field):
    out = tmp_path / "out"
    assert main([*argv, "--checkpoint-every", "4", "--out", str(out)]) == 0
    before = (out / "metrics.json").read_bytes(), (out / "checkpoint.pt").read_bytes()
    capsys.readouterr()
    assert main([*argv, *change, "--resume", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    name, _, values = field.partition(": ")
    assert err.count("\n") == 1 and err.startswith("rw train: error: --resume: the checkpoint ")
    assert f"of another run: {name} was " in err and values.replace("was ", "").split(",")[0] in err
    assert ((out / "metrics.json").read_bytes(), (out / "checkpoint.pt").read_bytes()) == before


def test_a_resume_without_a_checkpoint_is_refused_before_any_file(argv, tmp_path, capsys):
    assert main([*argv, "--resume", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"rw train: error: --resume: no checkpoint {tmp_path / 'out' / 'checkpoint.pt'}; run without --resume (and with --checkpoint-every)\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_failed_checkpoint_write_leaves_the_previous_checkpoint_and_no_partial_file(
    argv, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "out"
    calls = []

    def save_half_then_fail(obj, path):  # a full disk in the middle of the second checkpoint's write
        calls.append(obj["step"])
        if len(calls) == 2:
            Path(path).write_bytes(b"partial")
            raise OSError(errno.ENOSPC, "No space left on device")
        real_save(obj, path)

    real_save = torch.save
    monkeypatch.setattr(torch, "save", save_half_then_fail)
    assert (
        main([*argv, "--checkpoint-every", "4", "--out", str(out)]) == 1
    )  # a failed write, not a usage error
    err = capsys.readouterr().err.splitlines()[-1]
    assert err == f"rw train: error: cannot write {out / 'checkpoint.pt'}: No space left on device"
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint.pt"]  # no temporary file, no metrics.json
    assert torch.load(out / "checkpoint.pt", weights_only=True)["step"] == 4 and calls == [4, 8]


def test_progress_writes_nothing_where_stderr_is_not_a_terminal(argv, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err == ""  # a short run without checkpoints: no estimate line, no bar


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (["--checkpoint-every", "0"], "--checkpoint-every=0 is out of range: must be an integer >= 1"),
        (["--record-every", "2", "--record-steps", "1,2"], "--record-every and --record-steps both choose"),
        (["--steps", "100000000", "--checkpoint-every", "4"], "is estimated at "),
    ],
)
def test_long_run_options_out_of_range_are_refused_before_any_file(argv, tmp_path, capsys, extra, line):
    assert main([*argv, *extra, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and line in err
    assert not (tmp_path / "out").exists()


def test_the_estimate_counts_the_files_and_the_time_of_the_steps_left():
    from rwtoolkit.models import get_model
    from rwtoolkit.tasks import icl_markov_task

    model = get_model(f"{EXAMPLES}/nanogpt_attention.py:two_layer")
    task = icl_markov_task(2, 7, 1)
    every = _model_train.model_train_estimate(task, model, 1000, 10**5, checkpoint_every=1000)
    thinned = _model_train.model_train_estimate(
        task, model, 1000, 10**5, record_steps=range(0, 10**5 + 1, 100), checkpoint_every=1000
    )
    resumed = _model_train.model_train_estimate(task, model, 1000, 10**5, first=5 * 10**4)
    assert thinned.file_bytes < every.file_bytes / 50  # recording every 100th step keeps both files small
    assert resumed.seconds == pytest.approx(every.seconds / 2)
    assert 10 * 60 < every.seconds < 3600  # the measured 15.5 ms a step: 26 min, below the default limit
