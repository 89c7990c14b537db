"""The certified engine (rwtoolkit.engines.balls) against independent engines, its typed outcomes, and ``rw certify``."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import jsonschema
import numpy as np
import pytest
import sympy as sp
from flint import arb, arb_mat

from rwtoolkit.cli.main import main
from rwtoolkit.engines.balls import (
    WalkSet,
    certify,
    certify_json,
    compare_float,
    precision,
    run_trajectory,
)
from rwtoolkit.engines.balls._gram import check_gram
from rwtoolkit.io import CERTIFIED_WORDS, Verdict, load_schema
from rwtoolkit.models import get_model
from rwtoolkit.tasks import CircleWalk

ONE_LAYER = get_model("one_layer")

#: Small configurations that rwtoolkit.engines.exact.derive follows exactly in well under a second per step.
SMALL = [(3, 4, "1/3"), (4, 3, "1/2"), (3, 4, "1"), (4, 5, "0")]


def _population(task: CircleWalk) -> WalkSet:
    pop = task.population()
    weights = [Fraction(int(w.p), int(w.q)) for w in pop.exact_probs()]
    return WalkSet.build(pop.tokens, pop.labels, weights, task.K)


def _contains(ball: arb, exact: sp.Expr) -> bool:
    """The ball overlaps a 60-digit evaluation of the exact value (whose own error is < 1e-55) and is tight."""
    with precision(256):
        value = arb(str(sp.N(exact, 60)))
        return ball.overlaps(value) and float(ball.rad()) < 1e-30


@pytest.mark.parametrize("K,N,p", SMALL, ids=lambda v: str(v))
def test_enclosures_contain_the_exact_trajectory_of_rwsymbolic_derive(K, N, p):
    from rwtoolkit.engines.exact import derive

    task = CircleWalk(K, N, p)
    ws = _population(task)
    traj = run_trajectory(task, ONE_LAYER, 2, 1, "1/10", "3/2", prec=128, walks=(ws, ws))
    exact = derive(task, steps=2, eta=1, eps="1/10", mu="3/2", loss="log")
    for rec, st in zip(traj.records, exact.states, strict=True):
        view = rec.reduced
        assert all(_contains(view.V[i][j], st.V[i, j]) for i in range(K) for j in range(K)), rec.step
        assert all(_contains(view.w_tok[k], st.w_tok[k]) for k in range(K)), rec.step
        assert all(_contains(view.c[j], st.c[j]) for j in range(N)), rec.step
        assert _contains(rec.train_loss, st.loss), rec.step
        assert all(
            _contains(a, b) for a, b in zip(rec.evaluation.attention_profile, st.mean_attention, strict=True)
        ), rec.step


def test_decided_accuracy_equals_the_exact_accuracy():
    from rwtoolkit.engines.balls._certify import accuracy_bounds
    from rwtoolkit.engines.exact import derive

    task = CircleWalk(3, 4, "1/3")
    ws = _population(task)
    traj = run_trajectory(task, ONE_LAYER, 2, 1, "1/10", "3/2", prec=128, walks=(ws, ws))
    exact = derive(task, steps=2, eta=1, eps="1/10", mu="3/2", loss="log")
    lo, hi = accuracy_bounds(traj.records[2].evaluation.predictions, ws.labels, ws.weights)
    assert lo == hi == Fraction(str(exact.states[2].accuracy)) == Fraction(2, 3)


@pytest.mark.parametrize("population", [True, False], ids=["population", "sampled"])
def test_enclosures_contain_float64_rwnumeric_where_float64_is_accurate(population):
    # 5 steps of a K=3, N=5 model: float64 is accurate to ~1e-14 here (measured 3e-16 excess at most);
    # 1e-12 leaves a margin of 100 over that, and far below the 1e-9 a real departure is flagged at.
    task = CircleWalk(3, 5, "1/3")
    cert = certify(task, M=8, steps=5, population=population, train_size=40, test_size=30, prec=64, tol=1e-15)
    data = certify_json(cert)
    for gram in ("ideal", "computed"):
        comp = compare_float(cert, data, gram=gram)
        assert max(r["excess"] for r in comp["steps"]) <= 1e-12, gram
        assert comp["first_step_outside"] is None


def test_float_comparison_flags_a_float_value_outside_its_ball():
    from rwtoolkit.engines.balls._compare import _excess

    assert _excess(1.0 + 1e-6, {"mid": 1.0, "rad": 1e-12}) == pytest.approx(1e-6 - 1e-12, rel=1e-6)
    assert _excess(1.0 + 1e-13, {"mid": 1.0, "rad": 1e-12}) == 0.0


def test_low_precision_is_inconclusive_never_a_wrong_verdict():
    task = CircleWalk(6, 13, "1/2")
    kwargs = dict(M=20, steps=12, train_size=200, test_size=200, seed=1)
    reference = certify(task, prec=256, tol=1e-30, **kwargs)
    # a threshold within 1e-16 of the true parent attention: decided at 256 bits, not at 40 or fewer
    parent = reference.trajectory.records[-1].evaluation.attention_profile[-2]
    kwargs["parent_threshold"] = Fraction(float(parent.mid()))
    high = {s.name: s.outcome for s in certify(task, prec=256, tol=1e-30, **kwargs).statements}
    assert Verdict.INCONCLUSIVE not in high.values()
    seen = set()
    for bits in (16, 32, 40):
        low = {
            s.name: s.outcome for s in certify(task, prec=bits, max_prec=bits, tol=0.5, **kwargs).statements
        }
        for name, outcome in low.items():
            assert outcome in (high[name], Verdict.INCONCLUSIVE), (bits, name)
        seen |= {(name, o) for name, o in low.items()}
    assert ("parent_attention", Verdict.INCONCLUSIVE) in seen and ("accuracy", Verdict.HOLDS) in seen


def test_inconclusive_is_never_a_pass():
    # the certified statements' verdicts, as certify.json writes them: only "verified" is a pass
    assert {w: CERTIFIED_WORDS.verdict(w).passed for w in CERTIFIED_WORDS.words.values()} == {
        "verified": True,
        "refuted": False,
        "inconclusive": False,
    }
    assert [v.passed for v in Verdict] == [True, False, True, False, False]


@pytest.mark.parametrize("p", ["0", "1"])
def test_balanced_walks_keep_exactly_equal_attention_and_constant_rows_of_V(p):
    cert = certify(CircleWalk(3, 7, p), M=12, steps=6, train_size=50, test_size=50, prec=32, max_prec=32)
    assert all(logits and rows for logits, rows in cert.trajectory.symmetry)
    outcomes = {s.name: s.outcome for s in cert.statements}
    assert outcomes["equal_attention"] is Verdict.HOLDS and outcomes["chance"] is Verdict.HOLDS
    for rec in cert.trajectory.records:
        assert all(x.is_exact() and x.is_zero() for x in rec.evaluation.profile_differences)


def test_fig5_setting_is_certified_at_chance_with_equal_attention():
    cert = certify(CircleWalk(6, 97, 1), M=1000, steps=10, train_size=1000, test_size=1000, seed=0)
    outcomes = {s.name: s.outcome for s in cert.statements}
    assert outcomes["equal_attention"] is Verdict.HOLDS and outcomes["chance"] is Verdict.HOLDS
    assert cert.gram.mu == 500 and cert.gram.max_offdiag_rad < 1e-30
    data = certify_json(cert)
    jsonschema.validate(data, load_schema("certify"))
    assert all(s["mean_attention_spread"] == {"mid": 0.0, "rad": 0.0} for s in data["steps"])


def test_the_ball_engines_take_one_signature_and_return_one_type():
    import inspect

    from rwtoolkit.engines import GENERIC, SPECIALISATIONS
    from rwtoolkit.engines.balls import BallTrajectory

    engines = [GENERIC["balls"], *(e for e in SPECIALISATIONS if e.arithmetic == "balls")]
    assert len(engines) == 2
    signatures = [inspect.signature(e.load()) for e in engines]
    assert [list(s.parameters.values()) for s in signatures[1:]] == [list(signatures[0].parameters.values())]
    assert all(s.return_annotation in (BallTrajectory, "BallTrajectory") for s in signatures)


@pytest.mark.parametrize("p", ["1", "1/2"])
def test_the_statements_and_certify_json_read_the_trajectory_of_either_ball_engine(p):
    # one trajectory type: the generic ball engine's run of the same walks goes through the same statements
    # and certify.json; it keeps no exact differences, so equal attention and chance are never verified by it
    from dataclasses import replace

    from rwtoolkit.engines import select
    from rwtoolkit.engines.balls import statements

    task = CircleWalk(3, 4, p)
    cert = certify(task, M=8, steps=3, population=True, prec=128, tol=1e-12)
    ws = cert.eval_set
    engine = select("one_layer", "balls", "zero", specialise=False).load()
    generic = engine(task, ONE_LAYER, 3, 1, "1/10", cert.gram.mu, prec=128, walks=(ws, ws))
    assert generic.symmetry is None and all(r.reduced is None for r in generic.records)
    said = statements(task, generic, ws, Fraction(1, 2))
    reduced = {s.name: s.outcome for s in cert.statements}
    got = {s.name: s.outcome for s in said}
    symmetric = ("equal_attention", "chance")
    if p == "1":  # Theorem 4.1: verified by the reduced engine's exact zeros, undecided by the generic balls
        assert [reduced[n] for n in symmetric] == [Verdict.HOLDS] * 2
        assert [got[n] for n in symmetric] == [Verdict.INCONCLUSIVE] * 2
    else:  # refuted by both: a mean attention difference and two predictions are certified to differ
        assert [reduced[n] for n in symmetric] == [got[n] for n in symmetric] == [Verdict.REFUTED] * 2
    assert {n: got[n] for n in got if n not in symmetric} == {
        n: reduced[n] for n in reduced if n not in symmetric
    }
    data = certify_json(replace(cert, trajectory=generic, statements=said))
    jsonschema.validate(data, load_schema("certify"))
    for row, ref in zip(data["steps"], certify_json(cert)["steps"], strict=True):
        assert "V" not in row and "w_tok" not in row and "v_direction_error" not in row and "V" in ref
        assert row["test_accuracy"] == ref["test_accuracy"]
        for a, b in zip(row["attention_profile"], ref["attention_profile"], strict=True):
            assert abs(a["mid"] - b["mid"]) <= a["rad"] + b["rad"]


def test_gram_check_rejects_a_matrix_that_is_not_mu_identity():
    with precision(64):
        G = arb_mat([[arb(2), arb("1e-3")], [arb("1e-3"), arb(2)]])
        with pytest.raises(ValueError, match=r"entry \(1, 2\)"):
            check_gram(G, Fraction(2))
        assert check_gram(arb_mat([[arb("2 +/- 1e-20"), arb("0 +/- 1e-20")], [0, 2]]), Fraction(2))[0] > 0


def test_walk_set_merges_duplicates_and_keeps_exact_weights():
    ws = WalkSet.build(
        np.array([[0, 1, 0], [0, 1, 0], [1, 2, 1]]), np.array([1, 1, 2]), [Fraction(1, 3)] * 3, K=3
    )
    assert ws.size == 2 and sorted(ws.weights) == [Fraction(1, 3), Fraction(2, 3)]
    assert ws.counts.tolist() == [[2, 1, 0], [0, 2, 1]]
    with pytest.raises(ValueError, match="sum to"):
        WalkSet.build(np.array([[0, 1]]), np.array([1]), [Fraction(1, 2)], K=2)


BAD = [
    (["--p", "1/2", "--steps", "-1"], "--steps"),
    (["--p", "1/2", "--eta", "0"], "eta"),
    (["--p", "1/2", "--M", "5"], "M=5"),
    (["--p", "1/2", "--prec", "8"], "--prec"),
    (["--p", "1/2", "--tol", "2"], "--tol"),
    (["--p", "1/2", "--record-steps", "0,99"], "--record-steps"),
    (["--p", "1/2", "--pos", "onehot"], "onehot"),
    (["--p", "3/2"], "p"),
    (["--p", "1/2", "--train-size", "10000000"], "train_size=10000000 needs an incidence matrix"),
    ([], "--p is required"),
]


@pytest.mark.parametrize("extra,needle", BAD, ids=[b[1] for b in BAD])
def test_bad_input_gives_one_line_and_exit_2_before_any_output(tmp_path, capsys, extra, needle):
    out = tmp_path / "o"
    code = main(
        ["certify", "--K", "3", "--N", "7", "--steps", "2", "--float-gram", "none", "--out", str(out), *extra]
    )
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1
    assert not out.exists()


def test_rw_certify_writes_schema_valid_json_and_report_with_the_same_bytes_twice(tmp_path):
    args = [
        "certify",
        "--K",
        "3",
        "--N",
        "7",
        "--p",
        "1",
        "--M",
        "12",
        "--steps",
        "3",
        "--train-size",
        "30",
        "--test-size",
        "20",
        "--float-gram",
        "none",
    ]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    data = json.loads((tmp_path / "a" / "certify.json").read_text())
    jsonschema.validate(data, load_schema("certify"))
    assert (tmp_path / "a" / "certify.json").read_bytes() == (tmp_path / "b" / "certify.json").read_bytes()
    assert "**verified**" in (tmp_path / "a" / "CERTIFY.md").read_text()


def test_rw_certify_runs_as_a_console_command_with_the_float_comparison(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "rwtoolkit.cli.main",
        "certify",
        "--K",
        "3",
        "--N",
        "4",
        "--p",
        "1/3",
        "--M",
        "8",
        "--steps",
        "2",
        "--population",
        "--out",
        str(tmp_path),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "certify.json").read_text())
    assert data["float_comparison"]["first_step_outside"] is None


def test_out_that_is_a_file_is_refused_before_any_work(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("keep")
    assert main(["certify", "--K", "3", "--N", "4", "--p", "1", "--out", str(target)]) == 2
    assert "--out" in capsys.readouterr().err and target.read_text() == "keep"


def test_the_papers_certification_is_estimated_and_refused_beyond_an_hour(tmp_path, capsys):
    """rw certify of the paper's model prints its estimate first and refuses what cannot fit, before any work:
    one line naming the steps that fit; the estimate bounds the files a run writes."""
    from rwtoolkit.engines.balls import certify_estimate, certify_steps_that_fit

    base = ["certify", "--K", "3", "--N", "4", "--p", "1/2"]
    assert main([*base, "--steps", "1000000000", "--out", str(tmp_path / "big")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    fits = certify_steps_that_fit(3600.0, task=CircleWalk(3, 4, "1/2"), train_size=1000, test_size=1000)
    assert f"above the limit of 3600 s; take at most --steps {fits}" in err and 0 < fits < 10**9
    assert not (tmp_path / "big").exists()
    assert main([*base, "--steps", "30", "--out", str(tmp_path / "small")]) == 0
    assert capsys.readouterr().err.startswith("rw certify: estimated ~")
    est = certify_estimate(CircleWalk(3, 4, "1/2"), steps=30)
    written = sum(f.stat().st_size for f in (tmp_path / "small").iterdir())
    assert written <= est.file_bytes <= 3 * written
