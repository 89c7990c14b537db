"""Every `rw` subcommand refuses a bad output path or an oversized request BEFORE any work, in one line
with exit 2; argument errors and --help never load torch or SymPy; a write that fails late leaves no file.

"Before any work" is checked by running the command in a fresh interpreter and reporting which heavy
modules it loaded: a refusal that loaded neither torch nor SymPy cannot have computed anything.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rwtoolkit.cli.main import COMMANDS as MAIN_COMMANDS
from rwtoolkit.cli.main import main

HEAVY = ("torch", "sympy", "matplotlib")

# Runs rwtoolkit.cli.main.main(argv) and prints, as the last stdout line, the exit code and the heavy modules loaded.
_HARNESS = """
import json, sys
from rwtoolkit.cli.main import main
try:
    code = main(json.loads(sys.argv[1]))
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "loaded": [m for m in HEAVY if m in sys.modules]}))
""".replace("HEAVY", repr(HEAVY))

SPEC = {"task": {"family": "circle", "params": {"K": 3, "N": 3, "p": "1/2"}}}


def _run(argv: list[str]) -> tuple[dict, str]:
    """(report, stderr) of ``main(argv)`` in a fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, "-c", _HARNESS, json.dumps(argv)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def _commands(out: Path, spec: Path) -> dict[str, tuple[list[str], str]]:
    """Each subcommand with ``out`` as its output path, and whether that path is a "dir" or a "file"."""
    return {
        "train": (["train", "--out", str(out)], "dir"),
        "derive": (["derive", "--K", "3", "--N", "3", "--steps", "1", "--json", str(out)], "file"),
        "signal": (["signal", "--K", "3", "--N", "3", "--json", str(out)], "file"),
        "proofs": (["proofs", "--quick", "--out", str(out)], "dir"),
        "reproduce": (["reproduce", "fig4", "--quick", "--out", str(out)], "dir"),
        "explore": (["explore", str(spec), "--out", str(out)], "dir"),
        "stability": (
            ["stability", "--K", "3", "--N", "4", "--p", "1", "--steps", "2", "--json", str(out)],
            "file",
        ),
        "check": (["check", "examples/plain_torch.py:model", "--steps", "1", "--json", str(out)], "file"),
        "certify": (
            ["certify", "--K", "3", "--N", "3", "--p", "1/2", "--steps", "1", "--out", str(out)],
            "dir",
        ),
        "sweep": (["sweep", str(spec), "--out", str(out)], "dir"),
        "zoo": (["zoo", "claims", "--quick", "--out", str(out)], "dir"),
    }


#: Every subcommand of ``rw``: a new one fails here until ``_commands`` gives it an output path.
COMMANDS = tuple(name for name, _module, _help in MAIN_COMMANDS)


def _assert_refused(report: dict, err: str, path: Path, reason: str) -> None:
    assert report["code"] == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(path) in err and reason in err, err
    assert report["loaded"] == [], f"refused only after loading {report['loaded']}: work had started"


@pytest.mark.parametrize("command", COMMANDS)
def test_the_wrong_kind_of_existing_path_is_refused_before_any_work(command, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    folder, file = tmp_path / "folder", tmp_path / "file"
    folder.mkdir()
    file.write_text("keep")
    kind = _commands(tmp_path, spec)[command][1]
    wrong, reason = (file, "is a file, not a folder") if kind == "dir" else (folder, "is a folder")
    report, err = _run(_commands(wrong, spec)[command][0])
    _assert_refused(report, err, wrong, reason)
    assert file.read_text() == "keep" and list(folder.iterdir()) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_an_output_below_a_file_is_refused_before_any_work(command, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    (tmp_path / "file").write_text("keep")
    target = tmp_path / "file" / "sub" / "out.json"
    report, err = _run(_commands(target, spec)[command][0])
    _assert_refused(report, err, target, f"{tmp_path / 'file'} is a file, not a folder")


@pytest.mark.parametrize(
    "command,name",
    [
        ("train", "metrics.json"),
        ("proofs", "PROOFS.md"),
        ("reproduce", "REPORT.md"),
        ("explore", "explore.json"),
        ("certify", "certify.json"),
        ("sweep", "results.parquet"),
        ("zoo", "ZOO.md"),
    ],
)
def test_a_folder_standing_where_an_output_file_goes_is_refused(command, name, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    (tmp_path / "out" / name).mkdir(parents=True)
    report, err = _run(_commands(tmp_path / "out", spec)[command][0])
    _assert_refused(report, err, tmp_path / "out" / name, f"the file {name} is written there")


def _chattr(flag: str, folder: Path) -> bool:
    return subprocess.run(["chattr", flag, str(folder)], capture_output=True, check=False).returncode == 0


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder this process may not write in, and the reason the system gives.

    Root ignores permission bits, so under root the folder is made immutable (chattr +i), which root
    cannot write in either; where chattr is unavailable, sysfs (/sys) serves, which no one may add to.
    """
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder, "Permission denied"
        folder.chmod(0o755)
        return
    if shutil.which("chattr") and _chattr("+i", folder):
        yield folder, "Operation not permitted"
        assert _chattr("-i", folder)
        return
    try:
        with tempfile.TemporaryFile(dir="/sys"):
            pass
    except OSError as err:
        yield Path("/sys"), err.strerror
        return
    pytest.skip("running as root without chattr or a read-only /sys: no folder here is unwritable")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_without_write_permission_is_refused_before_any_work(command, read_only_folder, tmp_path):
    folder, reason = read_only_folder
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    for target in (folder / "out", folder / "deeper" / "out"):
        report, err = _run(_commands(target, spec)[command][0])
        _assert_refused(report, err, target, "cannot write in")
        assert reason in err, err
    assert not (folder / "out").exists() and not (folder / "deeper").exists()


@pytest.mark.parametrize(
    "argv,where",
    [
        (["train", "--N", "100000", "--M", "200000"], "use a smaller M or N"),
        (
            ["train", "--train-size", "1000000000"],
            "use a smaller train_size/test_size (--train-size, --test-size)",
        ),
    ],
    ids=["N-and-M", "train-size"],
)
def test_sizes_beyond_memory_are_refused_up_front_with_the_estimate(argv, where, tmp_path, capsys):
    # 160 GB of positional embeddings, or 10^9 walks of 97 tokens: beyond any test machine's memory.
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs about" in err and "GiB available" in err and where in err, err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "argv,message",
    [
        (["train", "--p", "abc"], "--p='abc' is not a number: rw train needs --p in [0, 1]"),
        (["train", "--p", "1/0"], "--p='1/0' is not a number"),
        (["train", "--threads", "100000"], "--threads=100000 is out of range: must be in 1.."),
        (["train", "--threads", "0"], "--threads=0 is out of range"),
        (["reproduce", "fig4", "--jobs", "1000000"], "--jobs=1000000 is out of range: must be in 1.."),
        (["reproduce", "fig4", "--jobs", "0"], "--jobs=0 is out of range"),
        (["reproduce", "fig4", "--jobs", "two"], "--jobs='two' is not an integer"),
        (["reproduce", "fig99"], "FIG='fig99' is not one of"),
    ],
)
def test_bad_values_get_one_line_naming_the_option(argv, message, tmp_path):
    report, err = _run([*argv, "--out", str(tmp_path / "out")])
    assert report["code"] == 2 and err.count("\n") == 1 and message in err, err
    assert "transition_matrix_float" not in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        *([c, "--help"] for c in COMMANDS),
        ["train", "--K", "x", "--out", "o"],
        ["derive"],
        ["nonsense"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_help_and_argument_errors_load_neither_torch_nor_sympy(argv):
    report, err = _run(argv)
    assert report["code"] in (0, 2), err
    assert report["loaded"] == [], f"rw {' '.join(argv)} loaded {report['loaded']}"


def test_reproduce_help_lists_every_target():
    from rwtoolkit.analyses.repro import TARGETS
    from rwtoolkit.cli.reproduce import FIG_HELP

    named = {"fig2", "fig4", "fig13", "sensitivity", "all"}
    assert named <= set(TARGETS) and all(t in named or t[:3] == "fig" for t in TARGETS)
    assert all(name in FIG_HELP for name in named)


def test_a_write_that_fails_after_the_check_leaves_no_file_and_prints_one_line(tmp_path, capsys, monkeypatch):
    target = tmp_path / "signal.json"
    target.write_text("previous")

    def full_disk(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("rwtoolkit.io._atomic.os.replace", full_disk)
    assert main(["signal", "--K", "3", "--N", "3", "--p", "1/2", "--json", str(target)]) == 1
    err = capsys.readouterr().err
    assert err == f"rw signal: error: cannot write {target}: No space left on device\n"
    assert target.read_text() == "previous" and [p.name for p in tmp_path.iterdir()] == ["signal.json"]


def test_a_negative_log_loss_is_explained_where_it_is_printed(tmp_path, capsys):
    # p = 1: the walk is deterministic, so GD drives z = e_y^T f towards 1 and -log(z + 0.1) below 0.
    argv = [
        "train",
        "--K",
        "3",
        "--N",
        "4",
        "--M",
        "8",
        "--p",
        "1",
        "--population",
        "--steps",
        "40",
        "--eta",
        "5",
    ]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    loss = json.loads((tmp_path / "metrics.json").read_text())["history"][-1]["train_loss"]
    out = capsys.readouterr().out
    assert loss < 0, "the setting no longer reaches z + eps > 1: pick one that does"
    assert "(negative because -log(z+eps) < 0 where z+eps > 1)" in out


def test_train_refuses_before_allocating_when_the_estimate_exceeds_available_memory(monkeypatch):
    from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, memory_estimate, train
    from rwtoolkit.io import MemoryEstimateError
    from rwtoolkit.tasks import CircleWalk

    task, model, cfg = CircleWalk(3, 4, "1/2"), ModelConfig(K=3, N=4, M=5), TrainConfig(steps=1)
    need = sum(memory_estimate(task, model, cfg).values())
    monkeypatch.setattr("rwtoolkit.io._memory.available_memory", lambda: need - 1)
    with pytest.raises(MemoryEstimateError, match="training K=3, N=4, M=5 .* needs about"):
        train(task, model, cfg, progress=False)
    monkeypatch.setattr("rwtoolkit.io._memory.available_memory", lambda: need)
    assert len(train(task, model, cfg, progress=False).history) == 2


def test_reproduce_refuses_up_front_when_its_parallel_runs_cannot_fit(monkeypatch, tmp_path, capsys):
    def no_run(*args, **kwargs):
        raise AssertionError("reproduce started although its memory estimate was refused")

    monkeypatch.setattr("rwtoolkit.io._memory.available_memory", lambda: 2**20)
    monkeypatch.setattr("rwtoolkit.analyses.repro.reproduce", no_run)
    assert main(["reproduce", "fig4", "--quick", "--jobs", "1", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "rw reproduce with 1 worker process(es) needs about" in err and "use fewer workers" in err, err
    assert err.count("\n") == 1 and not (tmp_path / "out").exists()


def test_memory_estimate_grows_with_each_size_it_counts():
    from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, memory_estimate
    from rwtoolkit.tasks import CircleWalk

    def total(N=10, M=20, n=100, **cfg):
        return sum(
            memory_estimate(
                CircleWalk(3, N, "1/2"),
                ModelConfig(K=3, N=N, M=M),
                TrainConfig(train_size=n, test_size=n, **cfg),
            ).values()
        )

    base = total()
    # P is M x N float64 in NumPy and torch: doubling M adds at least those 2 x 8 x 20 x 10 bytes.
    assert total(M=40) - base >= 2 * 8 * 20 * 10
    # each extra walk holds at least its N tokens twice (NumPy and torch int64).
    assert total(n=200) - base >= 100 * 2 * 2 * 8 * 10
    assert total(init="gaussian") - base >= 8 * (3 + 20) ** 2  # W(0)
    assert total(record_params=True) > base


def test_explore_train_refuses_up_front_when_its_largest_run_cannot_fit(monkeypatch, tmp_path, capsys):
    def no_run(*args, **kwargs):
        raise AssertionError("explore started although its memory estimate was refused")

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    monkeypatch.setattr("rwtoolkit.io._memory.available_memory", lambda: 2**20)
    monkeypatch.setattr("rwtoolkit.analyses.explore.explore", no_run)
    assert main(["explore", str(spec), "--train", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert (
        "rw explore --train needs about" in err and "lower train.train_size" in err and err.count("\n") == 1
    ), err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        ([], "rw: error: the following arguments are required: command"),
        (
            ["train", "--eta", "1/100", "--out", "x"],
            "rw train: error: argument --eta: invalid float value: '1/100'",
        ),
        (["explore"], "rw explore: error: the following arguments are required: SPEC, --out"),
        (["derive", "--task", "torus"], "rw derive: error: argument --task: invalid choice: 'torus'"),
        (["stability", "--nonesuch"], "rw: error: unrecognized arguments: --nonesuch"),
    ],
)
def test_argparses_own_refusals_are_one_line_without_the_usage_block(
    argv, line, tmp_path, monkeypatch, capsys
):
    """A missing or unknown option, a value of the wrong type or a choice outside the list: argparse's own message
    on one line, exit 2, nothing written (the usage block is rw SUB --help's)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    assert exited.value.code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(line), err
    assert list(tmp_path.iterdir()) == []


def test_sys_exit_in_code_the_command_runs_is_one_line_and_exit_1(tmp_path, monkeypatch, capsys):
    """A user's factory calling sys.exit(5): not exit status 5 without a word, but one line naming where, exit 1."""
    (tmp_path / "f.py").write_text("import sys\n\n\ndef exits(S, L):\n    sys.exit(5)\n")
    (tmp_path / "s.json").write_text(
        json.dumps({"task": {"family": "icl_markov", "params": {"S": 2, "N": 4}}})
    )
    monkeypatch.chdir(tmp_path)
    assert main(["derive", "--model", "f.py:exits", "--spec", "s.json", "--init", "own", "--steps", "1"]) == 1
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("rw derive: error: SystemExit(5) raised at "), err
    assert f"{tmp_path / 'f.py'}:5 by code the command ran" in err


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        (["derive", "--init", "own", "--steps", "1"], ["--loss", "squared"]),
        (["derive", "--init", "own", "--steps", "1"], ["--eps", "1/3"]),
        (["train", "--population", "--steps", "1", "--out", "o"], ["--loss", "exp"]),
        (["train", "--population", "--steps", "1", "--out", "o"], ["--eps", "0.5"]),
        (["certify", "--steps", "1", "--out", "o"], ["--eps", "1/3"]),
    ],
)
def test_a_loss_of_f_is_refused_for_a_model_with_next_token_logits(
    command, flag, tmp_path, monkeypatch, capsys
):
    """--loss and --eps would be recorded and never used by a model trained on --objective."""
    (tmp_path / "s.json").write_text(
        json.dumps({"task": {"family": "icl_markov", "params": {"S": 2, "N": 4}}})
    )
    monkeypatch.chdir(tmp_path)
    example = str(Path(__file__).resolve().parents[1] / "examples" / "nanogpt_attention.py")
    argv = [command[0], "--model", f"{example}:one_layer", "--spec", "s.json", *command[1:], *flag]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"error: {flag[0]} belongs to the loss of a prediction f" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["derive", "--K", "3", "--N", "4", "--p", "1/2", "--steps", "1", "--sigma", "1/2"],
            "rw derive: error: --sigma applies to --init gaussian (the start drawn from N(0, sigma^2)), not --init "
            "zero: drop --sigma, or give --init gaussian",
        ),
        (
            ["derive", "--K", "3", "--N", "4", "--p", "1/2", "--steps", "1", "--seed", "3"],
            "rw derive: error: --seed applies to --init gaussian",
        ),
        (
            ["train", "--K", "3", "--N", "4", "--p", "1/2", "--steps", "1", "--sigma", "0.5", "--out", "o"],
            "rw train: error: --sigma applies to --init gaussian",
        ),
        (
            ["stability", "--K", "3", "--N", "4", "--p", "1", "--grid", "full", "--seeds", "3"],
            "rw stability: error: --seeds is out of place with --grid full, which sets sigma, mu, dtypes and seeds "
            "itself: drop --seeds, or use --grid quick",
        ),
        (
            ["stability", "--K", "3", "--N", "4", "--p", "1", "--grid", "full", "--sigmas", "0.5"],
            "rw stability: error: --sigmas is out of place with --grid full",
        ),
    ],
)
def test_an_option_the_run_would_ignore_is_refused_in_one_line(argv, line, tmp_path, monkeypatch, capsys):
    """--sigma or --seed of a Gaussian start with another start, the quick grid's options with --grid full: they
    were accepted and silently unused."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(line), err
    assert list(tmp_path.iterdir()) == []
