"""rwtoolkit.io: files get the user's umask and stay atomic; output paths are checked without creating anything;
the memory check refuses with the estimate; a failed write leaves neither a partial file nor a temp file."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from rwtoolkit.io import (
    MemoryEstimateError,
    OutputPathError,
    WriteError,
    available_memory,
    check_memory,
    check_output_dir,
    check_output_file,
    save_figure_atomic,
    write_bytes_atomic,
    write_json_atomic,
    write_text_atomic,
)

WRITERS = {
    "bytes": lambda path: write_bytes_atomic(b"x", path),
    "text": lambda path: write_text_atomic("x", path),
    "json": lambda path: write_json_atomic({"a": 1}, path),
}


@pytest.fixture
def umask():
    """Set the process umask for one test, restoring the previous one afterwards."""
    previous = os.umask(0o022)
    os.umask(previous)
    yield os.umask
    os.umask(previous)


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_new_files_get_0666_less_the_umask(writer, mask, mode, umask, tmp_path):
    umask(mask)
    path = WRITERS[writer](tmp_path / "sub" / "out")
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "sub").stat().st_mode) == 0o777 & ~mask  # the created folder too
    assert [p.name for p in path.parent.iterdir()] == ["out"]  # the temp file was renamed, not copied


def test_a_replaced_file_gets_the_umask_and_the_new_content(umask, tmp_path):
    target = tmp_path / "f.txt"
    target.write_text("old")
    target.chmod(0o600)
    umask(0o022)
    write_text_atomic("new", target)
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o644


def test_figures_get_the_umask_too(umask, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    umask(0o022)
    fig = plt.figure()
    path = save_figure_atomic(fig, tmp_path / "a.png")
    plt.close(fig)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 and path.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("failing", ["os.replace", "os.fsync"])
def test_a_failed_write_raises_one_line_and_leaves_the_old_file(failing, tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    target.write_text("old")

    def fail(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(f"rwtoolkit.io._atomic.{failing}", fail)
    with pytest.raises(WriteError) as info:
        write_json_atomic({"a": 1}, target)
    assert str(info.value) == f"cannot write {target}: No space left on device"
    assert info.value.errno == errno.ENOSPC and isinstance(info.value, OSError)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_write_below_a_file_is_a_write_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(WriteError, match="cannot write .*file/a.txt: "):
        write_text_atomic("x", tmp_path / "file" / "a.txt")


def test_path_checks_create_nothing(tmp_path):
    assert check_output_dir(tmp_path / "a" / "b", "--out", files=("m.json",)) == tmp_path / "a" / "b"
    assert check_output_file(tmp_path / "c" / "d.json", "--json") == tmp_path / "c" / "d.json"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "check,make,reason",
    [
        (
            lambda p: check_output_dir(p / "f", "--out"),
            lambda p: (p / "f").write_text("x"),
            "exists and is a file",
        ),
        (
            lambda p: check_output_dir(p / "f" / "g", "--out"),
            lambda p: (p / "f").write_text("x"),
            "is a file, not a folder",
        ),
        (
            lambda p: check_output_dir(p / "d", "--out", files=("m.json",)),
            lambda p: (p / "d" / "m.json").mkdir(parents=True),
            "is a folder, but the file m.json is written there",
        ),
        (
            lambda p: check_output_file(p / "d", "--json"),
            lambda p: (p / "d").mkdir(),
            "is a folder; give a file name",
        ),
        (
            lambda p: check_output_file(str(p / "new") + "/", "--json"),
            lambda p: None,
            "is a folder; give a file name",
        ),
        (
            lambda p: check_output_file(p / "f" / "a.json", "--json"),
            lambda p: (p / "f").write_text("x"),
            "is a file, not a folder",
        ),
    ],
    ids=[
        "dir-is-file",
        "dir-below-file",
        "file-in-dir-is-dir",
        "file-is-dir",
        "file-ends-in-slash",
        "file-below-file",
    ],
)
def test_path_checks_name_the_option_the_path_and_the_reason(check, make, reason, tmp_path):
    make(tmp_path)
    with pytest.raises(OutputPathError) as info:
        check(tmp_path)
    message = str(info.value)
    assert message.startswith(("--out ", "--json "))
    assert str(tmp_path) in message and reason in message and "\n" not in message


def test_a_dangling_link_is_named_as_such(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "missing")
    with pytest.raises(OutputPathError, match="link is a link to a missing target"):
        check_output_dir(tmp_path / "link" / "run", "--out")


def test_the_memory_check_refuses_with_the_estimate_and_the_alternative():
    with pytest.raises(MemoryEstimateError) as info:
        check_memory(3 * 2**30, "the run", "use less", available=2**30)
    assert str(info.value) == "the run needs about 3 GiB of memory, more than the 1 GiB available: use less"
    check_memory(2**30, "the run", "use less", available=2**30)  # equal fits


def test_available_memory_reads_meminfo():
    try:
        with open("/proc/meminfo") as handle:
            line = next(line for line in handle if line.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        pytest.skip("no MemAvailable in /proc/meminfo on this system")
    kib = int(line.split()[1])
    # MemAvailable moves between two reads; 5% or 64 MiB covers what other processes do meanwhile.
    assert abs(available_memory() - kib * 1024) <= max(0.05 * kib * 1024, 64 * 2**20)
