"""``rw signal``: output, exit codes, and JSON that validates against the shipped schema."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest
import sympy as sp

from rwtoolkit.cli.main import main
from rwtoolkit.io import load_schema, schema_path
from rwtoolkit.tasks import QA_VOCAB, symbol


def _validate(path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(load_schema("signal"))
    jsonschema.validate(data, load_schema("signal"), cls=jsonschema.Draft202012Validator)
    return data


def test_symbolic_circle_prints_factorisation_and_vanishing_set(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["signal", "--task", "circle", "--K", "4", "--N", "5", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    # K = 4, N = 5 by hand: c_1 = (1/16)Σ_{m=1}^{4} P(displacement ≡ 1) - 1/16
    #   = (p + 3p²(1-p) + (1-p)³)/16 - 1/16 = -p(p-1)(2p-1)/8.
    assert "c1 = -p*(p - 1)*(2*p - 1)/8" in text
    assert "vanishing set of C over p in [0, 1] for K=4, N=5: {0, 1/2, 1}" in text
    data = _validate(out)
    p = symbol("p")
    c1 = sp.sympify(data["circulant_offsets"][1]["exact"], locals={"p": p})
    assert sp.expand(c1 + p * (p - 1) * (2 * p - 1) / 8) == 0
    assert data["matrix"][1][0]["exact"] == data["circulant_offsets"][1]["exact"]
    assert data["matrix"][1][0]["float"] is None
    assert [pt["exact"] for pt in data["vanishing_set"]["points"]] == ["0", "1/2", "1"]
    assert [pt["float"] for pt in data["vanishing_set"]["points"]] == [0.0, 0.5, 1.0]
    assert data["is_zero"] is False and data["p"] == {"exact": "p", "float": None}


def test_rational_p_json_has_exact_strings_and_floats(tmp_path):
    out = tmp_path / "r.json"
    assert main(["signal", "--K", "4", "--N", "5", "--p", "3/10", "--json", str(out)]) == 0
    data = _validate(out)
    # From the factorisation above: c_1(3/10) = -(3/10)(-7/10)(-4/10)/8 = -21/2000.
    assert data["matrix"][1][0]["exact"] == "-21/2000"
    assert data["matrix"][1][0]["float"] == -21 / 2000
    assert data["p"] == {"exact": "3/10", "float": 0.3}


def test_qa_tasks_zero_and_nonzero(tmp_path, capsys):
    out2 = tmp_path / "q2.json"
    assert main(["signal", "--task", "qa2", "--json", str(out2)]) == 0
    assert "C is exactly zero: yes" in capsys.readouterr().out
    data = _validate(out2)
    assert data["is_zero"] is True and data["vanishing_set"]["all"] is True
    assert all(e["exact"] == "0" for row in data["matrix"] for e in row)
    out1 = tmp_path / "q1.json"
    assert main(["signal", "--task", "qa1", "--json", str(out1)]) == 0
    assert "C[apple, apple] = 15/512" in capsys.readouterr().out
    data = _validate(out1)
    apple = QA_VOCAB.index("apple")
    assert data["matrix"][apple][apple]["exact"] == "15/512" and data["is_zero"] is False
    assert data["vocab"] == list(QA_VOCAB)


def test_json_is_reproducible_bit_for_bit(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path in (a, b):
        assert main(["signal", "--K", "5", "--N", "6", "--json", str(path)]) == 0
    assert a.read_bytes() == b.read_bytes()
    assert [f.name for f in tmp_path.iterdir()] != [] and not list(tmp_path.glob(".*.tmp"))


BAD = [
    (["--K", "2", "--N", "5"], "--K=2 is out of range"),
    (["--K", "4", "--N", "1"], "--N=1 is out of range"),
    (["--K", "four", "--N", "5"], "--K='four' is not an integer"),
    (["--K", "4", "--N", "5", "--p", "3/2"], "p=3/2 is outside [0, 1]"),
    (["--K", "4", "--N", "5", "--p=-1/2"], "p=-1/2 is outside [0, 1]"),
    (["--K", "4", "--N", "5", "--p", "1/0"], "divides by zero"),
    (["--K", "4", "--N", "5", "--p", "0.3.1"], "is not a number"),
    (["--K", "4"], "needs --K (>= 3) and --N (>= 2)"),
    (["--task", "qa1", "--K", "5"], "--task qa1 has K = 19"),
    (["--task", "qa2", "--p", "1/2"], "--p applies to --task circle only"),
    (["--K", "4", "--N", "500"], "N=500 is too large to factor"),
    (["--K", "4", "--N", "5000", "--p", "1/3"], "N=5000 is too large"),
    (["--K", "4", "--N", "5", "--json", "/nonexistent-dir/x.json"], "does not exist"),
]


@pytest.mark.parametrize("argv,message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(["signal", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("rw signal: error:")


def test_console_command_exits_2_as_a_subprocess():
    done = subprocess.run(
        [sys.executable, "-m", "rwtoolkit.cli.main", "signal", "--K", "2", "--N", "3"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_schema_file_ships_inside_the_package():
    assert schema_path("signal").name == "signal.schema.json" and schema_path("signal").is_file()


def test_qa2_zero_signal_is_one_labelled_line_not_a_bare_matrix(capsys):
    assert main(["signal", "--task", "qa2"]) == 0
    text = capsys.readouterr().out
    assert "C = 0: all 19 × 19 entries C[label, token] are exactly 0" in text
    assert all(word in text for word in QA_VOCAB)  # rows and columns named by the vocabulary
    # no unlabelled pretty-printed matrix (rows of bare zeros between brackets)
    assert not any(line.strip().strip("⎡⎢⎣⎤⎥⎦[]").split() == ["0"] * 19 for line in text.splitlines())


def test_qa1_signal_table_is_labelled_by_words(capsys):
    assert main(["signal", "--task", "qa1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("label \\ token"))
    assert header.split()[-2:] == ["apple", "orange"]
    # the table's row "apple" holds the entries the list below it names C[apple, apple] and C[apple, orange]
    row = next(line for line in lines if line.startswith("apple "))
    assert row.split() == ["apple", "15/512", "-15/512"]
    assert "  C[apple, apple] = 15/512" in lines and "  C[apple, orange] = -15/512" in lines
