"""``rw derive`` on late steps: named exponentials, interval signs, verdicts and the up-front refusal.

The verdict oracles are hand-derived: at p = 1 and N = rK + 1 every walk is the same up to rotation
and the label is fixed by the start, so V(t) stays proportional to 1_{K×K} and the attention stays
equal (Theorem 4.1, any loss); V(0) = 0 has rank 0. At p = 3/10 V(1) is circulant but not constant
(Lemma C.1: its entries are the walk's transition probabilities mixed, which differ for p != 1/2).
"""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import sympy as sp

from rwtoolkit.cli.main import main
from rwtoolkit.engines.exact import (
    derive,
    derive_estimate,
    load_oracle,
    nearest_double,
    outcome,
    structure_verdicts,
    write_oracle,
)
from rwtoolkit.engines.exact.arithmetic._atoms import expand_atoms, has_atoms
from rwtoolkit.io import load_schema
from rwtoolkit.tasks import CircleWalk


def test_theorem_41_any_loss_gives_proved_verdicts_at_every_step():
    traj = derive(CircleWalk(3, 4, 1), steps=3, loss="any", mu=1)
    for state in traj.states:
        got = {name: outcome(check) for name, check in structure_verdicts(state).items()}
        expected_rank = "refuted" if state.t == 0 else "proved"  # V(0) = 0 has rank 0
        assert got == {
            "w_token_columns_zero": "proved",
            "is_circulant": "proved",
            "is_proportional_to_ones": "proved",
            "is_rank_one": expected_rank,
            "has_equal_attention": "proved",
            "is_lemma_d3_form": "proved",
        }, state.t


def test_p_three_tenths_refutes_constant_v_with_a_witness_but_keeps_circulant():
    state = derive(CircleWalk(3, 4, "3/10"), steps=1, mu=1).states[1]
    checks = structure_verdicts(state)
    assert outcome(checks["is_circulant"]) == "proved"
    assert outcome(checks["is_proportional_to_ones"]) == "refuted"
    a, b = checks["is_proportional_to_ones"].witness["entries"]
    assert state.V[a] != state.V[b]


def test_late_step_values_use_named_atoms_and_their_doubles_match_sympy():
    state = derive(CircleWalk(3, 4, "3/10"), steps=2, mu=1).states[2]
    loss = state.atom_form("loss")
    assert has_atoms(loss)
    # SymPy's own evaluation of the plain expression (slow on later steps, hence t = 2) agrees.
    assert nearest_double(loss) == float(sp.N(expand_atoms(loss), 30))


def test_estimate_grows_with_steps_and_refusal_is_one_line_exit_2(capsys):
    walk = CircleWalk(5, 6, "3/10")
    assert (
        derive_estimate(walk, 4)
        < derive_estimate(walk, 8)
        < 60
        < 600
        < derive_estimate(CircleWalk(5, 12, "3/10"), 5)
    )
    code = main(["derive", "--K", "5", "--N", "12", "--p", "3/10", "--steps", "5", "--mu", "1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "estimated" in err and "--max-seconds 600" in err and "rw train" in err


def test_verdict_json_validates_and_reads_as_outcomes(tmp_path, capsys):
    path = tmp_path / "v.json"
    code = main(
        [
            "derive",
            "--K",
            "3",
            "--N",
            "4",
            "--p",
            "1",
            "--steps",
            "2",
            "--loss",
            "any",
            "--verdict",
            "--json",
            str(path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "is_proportional_to_ones: proved" in out
    data = json.loads(path.read_text())
    jsonschema.validate(data, load_schema("oracle"))
    assert data["steps"][2]["verdict"]["has_equal_attention"]["outcome"] == "proved"


def test_oracle_with_verdict_round_trips_through_schema(tmp_path):
    traj = derive(CircleWalk(3, 3, "3/10"), steps=1, mu=1)
    data = json.loads(write_oracle(traj, tmp_path / "o.json", verdict=True).read_text())
    jsonschema.validate(data, load_schema("oracle"))
    witness = data["steps"][1]["verdict"]["is_proportional_to_ones"]["witness"]
    assert set(witness) == {"entries", "difference"} and isinstance(witness["difference"], int)
    difference = load_oracle(tmp_path / "o.json").node(witness["difference"])
    assert difference != 0 and difference.is_Rational


def test_console_command_reaches_step_4():
    argv = [sys.executable, *"-m rwtoolkit.cli.main derive --K 3 --N 4 --p 3/10 --steps 4 --mu 1".split()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert "t = 4" in done.stdout and "loss = ≈" in done.stdout


def test_verdict_text_clips_long_witnesses_and_the_json_keeps_them_whole():
    """Symbolic p at t = 2: a witness difference of thousands of characters is cut to its first 400 on the
    terminal, with its length; verdict_json (what --json writes) keeps all of it."""
    from rwtoolkit.cli.derive import render_verdicts
    from rwtoolkit.engines.exact import verdict_json

    traj = derive(CircleWalk(3, 4, "p"), steps=2)
    longest = max((str(e["witness"]) for e in verdict_json(traj.states[2]).values() if e["witness"]), key=len)
    assert len(longest) > 1000
    text = render_verdicts(traj, "o.json")
    assert f"{longest[:400]} … ({len(longest)} characters; the exact value is in o.json)" in text
    assert longest not in text
    without = render_verdicts(traj)  # no --json: nothing to look in, so the line says how to get it
    assert f"({len(longest)} characters; for the exact value add --json FILE)" in without
