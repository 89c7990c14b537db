"""``rw proofs``: in-process and as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

from rwtoolkit.cli.main import main


def test_rw_proofs_only_writes_table_and_json(tmp_path, capsys) -> None:
    code = main(["proofs", "--quick", "--only", "E.4", "--only", "signal", "--out", str(tmp_path)])
    assert code == 0
    table = (tmp_path / "PROOFS.md").read_text()
    assert "| id | statement | scope | method | verdict | time (s) |" in table
    assert "| E.4 |" in table and "**holds**" in table
    data = json.loads((tmp_path / "proofs.json").read_text())
    assert data["quick"] is True and [c["id"] for c in data["certificates"]] == ["E.4", "signal"]
    assert "wrote" in capsys.readouterr().out


def test_rw_proofs_bad_only_exits_2_with_one_line(tmp_path, capsys) -> None:
    assert main(["proofs", "--quick", "--only", "Q.7", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Q.7" in err[0] and "choose from" in err[0]


def test_rw_proofs_out_must_be_a_folder(tmp_path, capsys) -> None:
    target = tmp_path / "file.txt"
    target.write_text("x")
    assert main(["proofs", "--quick", "--only", "D.1", "--out", str(target)]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_rw_proofs_as_subprocess(tmp_path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rwtoolkit.cli.main",
            "proofs",
            "--quick",
            "--only",
            "D.1",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "D.1" in proc.stdout and (tmp_path / "proofs.json").exists()
