"""The certificates of ``rwtoolkit/analyses/proofs/``: each passes in quick mode, and each kind can fail with a witness."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest
import sympy as sp
from conftest import assert_close, transition_by_hand

import rwtoolkit.analyses.proofs
from rwtoolkit.analyses.proofs import Certificate
from rwtoolkit.analyses.proofs._walks import P, nonnegative_on, power_entry
from rwtoolkit.io import Verdict

EVIDENCE_IDS = {"C.5", "C.7", "3.1(i)", "3.1(ii)", "3.1(iii)", "3.1(iv)"}


@pytest.mark.parametrize("module_name", rwtoolkit.analyses.proofs.MODULES, ids=lambda m: m.rsplit(".", 1)[-1])
def test_every_certificate_passes_in_quick_mode(module_name: str) -> None:
    cert = rwtoolkit.analyses.proofs.run_one(module_name, quick=True)
    assert cert.word in ("holds", "corrected"), cert.witness
    assert cert.passed and cert.seconds >= 0
    # a symbolic proof is proved; every other method holds at the sizes checked (never "proved")
    assert cert.verdict is (Verdict.PROVED if cert.method == "symbolic proof" else Verdict.HOLDS)
    assert (cert.method == "numeric evidence") == (cert.id in EVIDENCE_IDS)
    json.dumps(cert.to_json())  # JSON-able


def test_statement_ids_are_unique_and_in_math_md_order() -> None:
    ids = list(rwtoolkit.analyses.proofs.certificate_ids())
    assert len(ids) == len(rwtoolkit.analyses.proofs.MODULES) == 26
    assert ids[:4] == ["B.1", "W11=W21=0", "Gram", "C.1"]


def test_gradient_check_fails_for_a_wrong_w_formula() -> None:
    import rwtoolkit.analyses.proofs.lemma_b1_gradients as b1
    from rwtoolkit.analyses.proofs.lemma_b1_gradients import check

    # drop the −SSᵀ term of Lemma B.1's W-gradient: the symbolic comparison must catch it
    K, M, N = 2, 2, 3
    g = sp.Symbol("g")
    pos = [sp.Symbol(f"E{n}", positive=True) for n in range(N)]
    S = sp.Matrix(pos) / sp.Add(*pos)
    V, X = b1.symbol_matrix("V", K, K), b1.symbol_matrix("x", K, N).copy()
    X[:, N - 1] = sp.zeros(K, 1)
    Xt = X.col_join(b1.symbol_matrix("P", M, N))
    ey = sp.Matrix([1, 0])
    failures = check(K, M, N, 0, formula_w=lambda: g * Xt * sp.diag(*S) * X.T * V.T * ey * Xt[:, N - 1].T)
    assert failures and failures[0]["entry"].startswith("('W'")
    assert check(K, M, N, 0) == []


def test_invariant_manifold_step_fails_off_the_failure_case() -> None:
    from rwtoolkit.analyses.proofs.lemma_d3_invariant_manifold import check

    assert check(3, 1, 1) is None
    witness = check(3, 1, sp.Rational(1, 2))  # p = 1/2: V leaves the all-ones direction
    assert witness is not None and "V not proportional to 1" in witness["violations"]


def test_nonnegativity_check_returns_a_point_where_the_polynomial_is_negative() -> None:
    poly = sp.Poly((P - sp.Rational(1, 3)) * (P - sp.Rational(2, 3)), P)  # < 0 strictly between 1/3 and 2/3
    ok, where = nonnegative_on(poly, sp.Integer(0), sp.Integer(1))
    assert not ok and poly.eval(where) < 0 and sp.Rational(1, 3) < where < sp.Rational(2, 3)
    assert nonnegative_on(poly, sp.Integer(0), sp.Rational(1, 3)) == (True, None)


def test_walk_power_closed_form_matches_matrix_power_by_hand() -> None:
    for K, p, R in [(5, 0.3, 4), (4, 0.8, 5), (6, 0.5, 7)]:
        power = np.linalg.matrix_power(transition_by_hand(K, p), R)
        row = [float(power_entry(K, R, e).subs(P, sp.Rational(str(p)))) for e in range(K)]
        assert_close(row, power[0], 1e-12, f"[Π^{R}]_0· for K={K}")


def test_signal_vanishes_at_k4_half_odd_n_contrary_to_the_naive_pattern() -> None:
    from rwtoolkit.analyses.proofs.signal_vanishing_set import computed

    # the naive rule "C = 0 iff p ∈ {0,1} and K | N−1" misses p = 1/2 for K = 4, N odd
    assert computed(4, 3) == {sp.Rational(1, 2)}
    assert computed(4, 5) == {0, sp.Rational(1, 2), 1}
    assert computed(5, 6) == {0, 1} and computed(5, 7) == set()
    # by hand: K = 4, p = 1/2: Π + Π² = 1 1ᵀ/2, so the two-token average is uninformative
    Pi = transition_by_hand(4, 0.5)
    assert_close(Pi + Pi @ Pi, np.full((4, 4), 0.5), 1e-15, "Π + Π²")


def test_orthogonal_embeddings_of_unequal_norms_change_the_attention() -> None:
    from rwtoolkit.analyses.proofs.gram_dependence import SQRT_MU, cayley_orthogonal, differences, trajectory

    Q = cayley_orthogonal(4)
    assert Q.T * Q == sp.eye(4)
    reference = trajectory(3, 3, "1/3", None, 2)
    assert differences(reference, trajectory(3, 3, "1/3", SQRT_MU * Q[:, :3], 2)) == []
    unequal = sp.diag(SQRT_MU, 2 * SQRT_MU, 3 * SQRT_MU)
    assert differences(reference, trajectory(3, 3, "1/3", unequal, 2)) == ["logits(2)"]


def test_hankel_reading_of_c2_is_false() -> None:
    from rwtoolkit.analyses.proofs.lemma_c2_circulant import (
        circulant_rule,
        first_value_step,
        hankel_rule,
        violations,
    )

    V = first_value_step(3, 3, sp.Rational(1, 2))
    assert violations(V, circulant_rule) == []
    assert violations(V, hankel_rule)


def test_direction_certificates_report_the_printed_statement_as_corrected() -> None:
    from rwtoolkit.analyses.proofs._theorem31 import closed_plateau

    cert = importlib.import_module("rwtoolkit.analyses.proofs.theorem_3_1_v_direction").certify(quick=True)
    assert cert.word == "corrected" and cert.corrected and cert.verdict is Verdict.HOLDS
    failing = cert.witness["printed statement fails (error vs Π^T stalls)"]
    assert failing["p"] == "7/10"
    # hand value: sqrt(2 − 2(0.7^1.5 + 0.3^1.5)/sqrt(0.49 + 0.09)) ≈ 0.17453
    assert abs(closed_plateau(0.7) - 0.174526) < 1e-6
    assert closed_plateau(0.5) == 0.0


def test_a_crashing_certificate_is_an_error_not_a_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module("rwtoolkit.analyses.proofs.lemma_d1_balanced_visits")

    def boom(quick: bool = False) -> Certificate:
        raise RuntimeError("boom")

    monkeypatch.setattr(module, "certify", boom)
    cert = rwtoolkit.analyses.proofs.run_one("rwtoolkit.analyses.proofs.lemma_d1_balanced_visits", quick=True)
    assert cert.word == "error" and not cert.passed and "boom" in cert.witness["error"]
    assert cert.verdict is Verdict.INCONCLUSIVE and cert.to_json()["verdict"] == "error"


@pytest.mark.parametrize(
    ("method", "verdict"),
    [
        ("numeric evidence", Verdict.PROVED),
        ("numeric evidence", Verdict.REFUTED),
        ("exact verification over a finite range", Verdict.PROVED),
        ("symbolic proof", Verdict.HOLDS),
        ("symbolic proof", "holds"),
    ],
    ids=["evidence-proved", "evidence-refuted", "finite-range-proved", "proof-holds", "proofs.json-word"],
)
def test_a_certificate_reaches_only_the_verdicts_of_its_method(method: str, verdict: str) -> None:
    with pytest.raises(ValueError, match="is not one of"):
        Certificate(id="X", statement="s", scope="scope", method=method, verdict=verdict)


def test_unknown_only_id_is_refused() -> None:
    with pytest.raises(ValueError, match="not a statement id"):
        rwtoolkit.analyses.proofs.run(quick=True, only=["Z.9"])


def test_report_files_are_written_atomically(tmp_path) -> None:
    certs = rwtoolkit.analyses.proofs.run(quick=True, only=["E.1", "D.1"])
    md, js = rwtoolkit.analyses.proofs.write_report(certs, tmp_path, quick=True)
    data = json.loads(js.read_text())
    assert [c["id"] for c in data["certificates"]] == ["D.1", "E.1"]
    assert "| E.1 |" in md.read_text() and "| D.1 |" in md.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["PROOFS.md", "proofs.json"]  # no temp files left


def test_certificate_json_turns_non_finite_floats_into_strings() -> None:
    cert = Certificate(
        id="X",
        statement="s",
        scope="scope",
        method="numeric evidence",
        verdict=Verdict.HOLDS,
        details={"v": float("nan"), "a": np.arange(2)},
    )
    assert cert.to_json()["details"] == {"v": "nan", "a": [0, 1]}


def test_relative_remainder_is_the_sine_of_the_angle() -> None:
    from rwtoolkit.analyses.proofs.lemma_c7_value_decomposition import relative_remainder

    theta = 0.3
    a, b = np.array([1.0, 0.0]), np.array([np.cos(theta), np.sin(theta)])
    e = float(np.linalg.norm(a - b))  # distance of unit vectors = 2 sin(θ/2)
    # least-squares remainder of b on a, relative to ‖b‖: |sin θ|, by hand
    assert abs(relative_remainder([e])[0] - np.sin(theta)) < 1e-15
