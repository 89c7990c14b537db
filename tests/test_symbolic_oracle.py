"""Oracle JSON: schema, exact round trip, float fields, numeric loader, and the rw derive CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import numpy as np
import pytest
import sympy as sp

from rwcli.main import main
from rwnumeric import load_oracle
from rwsymbolic import derive, load_oracle_schema, read_oracle, write_oracle
from rwsymbolic._decide import is_zero
from rwsymbolic._oracle import state_values
from rwtasks import CircleWalk, symbol


@pytest.fixture(scope="module")
def rational_traj():
    return derive(CircleWalk(3, 4, "1/2"), 2, mu="1/2")


def test_oracle_validates_and_reads_back_exactly(tmp_path, rational_traj):
    path = write_oracle(rational_traj, tmp_path / "o.json")
    data = json.loads(path.read_text())
    jsonschema.validate(data, load_oracle_schema())
    assert data["config"]["per_input"] is True and data["config"]["population_size"] == 24
    assert [p.name for p in tmp_path.iterdir()] == ["o.json"]  # atomic: no temporary file left
    back = read_oracle(path)
    for state, entry in zip(rational_traj.states, back["steps"], strict=True):
        for key, value in state_values(state).items():
            # Parsing may regroup products (119248*(1 + e) -> 119248 + 119248*e): same value, proved.
            if isinstance(value, list):
                assert all(is_zero(a - b) is True for a, b in zip(value, entry[key], strict=True)), key
            else:
                assert value == entry[key] or is_zero(value - entry[key]) is True, key
        assert entry["per_input"]["logits"] == state.logits
    assert data["steps"][1]["V"]["exact"][0][1] == "15/16"


def test_numeric_loader_floats_are_the_nearest_doubles(tmp_path, rational_traj):
    path = write_oracle(rational_traj, tmp_path / "o.json")
    oracle = load_oracle(path)
    s2 = rational_traj.states[2]
    assert oracle["steps"][2]["V"].shape == (3, 3) and oracle["steps"][2]["S"].shape == (24, 4)
    # Nearest double of an exact value: equal to float(sp.N(x, 30)) bit for bit.
    assert oracle["steps"][2]["loss"] == float(sp.N(s2.loss, 30))
    assert np.array_equal(oracle["steps"][2]["S"][5], [float(sp.N(x, 30)) for x in s2.S[5]])
    assert oracle["steps"][2]["S"].sum(axis=1) == pytest.approx(np.ones(24), abs=1e-15)  # rows of a softmax


def test_symbolic_oracle_has_null_floats_and_loader_refuses(tmp_path):
    tr = derive(CircleWalk(3, 3, "p"), 1, loss="any")
    path = write_oracle(tr, tmp_path / "s.json", per_input=False)
    data = json.loads(path.read_text())
    jsonschema.validate(data, load_oracle_schema())
    assert data["steps"][1]["V"]["float"] is None and "per_input" not in data["steps"][1]
    back = read_oracle(path)
    assert sp.expand(back["steps"][1]["V"][0, 1] - tr.states[1].V[0, 1]) == 0
    assert back["steps"][1]["V"].free_symbols == {symbol("p")}
    with pytest.raises(ValueError, match="symbolic"):
        load_oracle(path)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--K", "2", "--N", "4", "--steps", "1"], "--K must be >= 3"),
        (["--K", "3", "--N", "1", "--steps", "1"], "--N must be >= 2"),
        (["--K", "3", "--N", "4", "--p", "3/2", "--steps", "1"], "outside [0, 1]"),
        (["--K", "3", "--N", "4", "--eta", "1/x", "--steps", "1"], "is not a number"),
        (["--K", "3", "--N", "4", "--steps", "two"], "--steps='two' is not an integer"),
        (["--K", "3", "--N", "40", "--steps", "1"], "rooted walks, above the limit"),
        (["--task", "qa1", "--p", "1/2", "--steps", "1"], "--p applies to --task circle only"),
    ],
    ids=["K<3", "N<2", "p>1", "eta-unparsable", "steps-unparsable", "too-large", "qa-with-p"],
)
def test_cli_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(["derive", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_cli_writes_a_valid_oracle_in_a_subprocess(tmp_path):
    out = tmp_path / "d.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rwcli.main",
            "derive",
            "--K",
            "3",
            "--N",
            "3",
            "--p",
            "7/10",
            "--eps",
            "1/10",
            "--pos-norm",
            "1/2",
            "--steps",
            "2",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "t = 2" in proc.stdout and "accuracy" in proc.stdout
    data = json.loads(out.read_text())
    jsonschema.validate(data, load_oracle_schema())
    assert data["config"]["p"] == "7/10" and len(data["steps"]) == 3


def test_decimal_value_of_atom_form_values_equals_sympy_evalf_of_the_expanded_value() -> None:
    # Independent evaluation: SymPy's evalf on the plain (expanded) expression, at step 3 where the
    # exact values hold nested exponentials.
    import sympy as sp

    from rwsymbolic import decimal_value, derive
    from rwsymbolic._atoms import expand_atoms, has_atoms
    from rwtasks import CircleWalk

    state = derive(CircleWalk(3, 4, "3/10"), 3, eta=1, eps="1/10", mu=1).states[3]
    values = list(state.atom_form("V")) + list(state.atom_form("c"))
    assert any(has_atoms(v) for v in values)
    for v in values:
        got, want = decimal_value(v, 25), sp.N(expand_atoms(v), 40)
        assert abs(got - want) <= sp.Float("1e-24", 40) * max(1, abs(want)), (got, want)
    assert decimal_value(sp.Symbol("p")) is None
