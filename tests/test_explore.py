"""``rw explore`` verdicts on catalogue tasks, each expected verdict derived by hand in the docstring.

Notation: C = E[e_y x̄ᵀ] - E[e_y]E[x̄]ᵀ (docs/theory.md#signal); "stuck" means C = 0, every f(X) ∝ E[e_y] after one
exact GD step, and one shared score vector at every step checked (ℓ' abstract); "informative" means
C ≠ 0 and the first step tells inputs apart.
"""

from __future__ import annotations

import importlib
import json

import pytest
import sympy as sp

import rwtoolkit.analyses.explore
from rwtoolkit.analyses.explore import explore, write_report
from rwtoolkit.cli.main import main
from rwtoolkit.tasks import CircleWalk, parse_task_spec, qa_task2, symbol


def _explore(task: dict, steps: int = 2, sweep: dict | None = None, stability: bool = False):
    """The exact verdicts (the stability of stuck points is tested on its own, below: it costs seconds)."""
    data = {"task": task, "explore": {"steps": steps}}
    if sweep:
        data["sweep"] = sweep
    return explore(parse_task_spec(data), stability=stability)


def _verdicts(result) -> dict[str, str]:
    return {
        ",".join(f"{k}={v}" for k, v in {**pt.params, **c.values}.items()): c.verdict
        for pt in result.points
        for c in pt.checks
    }


def test_qa_task1_is_informative():
    """QA Task 1: the label is the majority fruit, so x̄_apple = (#apples)/16 rises with P(y = apple):
    C[apple, apple] = (E[#a·1{y=a}] - P(y=a)E[#a])/16. The 16 lists with ≥ 3 apples have
    Σ #a = 10·3 + 5·4 + 1·5 = 55, so E[#a·1{y=a}] = 55/32 and C[apple, apple] = (55/32 - (1/2)(5/2))/16
    = 15/512 ≠ 0."""
    point = _explore({"family": "qa1"}).points[0]
    apple = 0
    assert point.signal.matrix[apple, apple] == sp.Rational(15, 512)
    assert point.checks[0].verdict == "informative"


def test_qa_task2_is_stuck():
    """QA Task 2: both questions contain the same 18 words (only the order of apple/orange differs), so
    x̄ is the same for both inputs and C = E[e_y]x̄ᵀ - E[e_y]x̄ᵀ = 0; every f(X) = V(1)X/N is then the
    same vector for both inputs. Swapping apple and orange maps the task onto itself, so GD keeps the
    two inputs' scores equal (the paper's Task 2 stays at 50%)."""
    check = _explore({"family": "qa2"}, steps=3).points[0].checks[0]
    assert check.signal_is_zero and check.one_step.identical
    assert check.manifold.shared == [True] * 4
    assert check.verdict == "stuck"
    assert check.constant_accuracy == sp.Rational(1, 2) and check.bayes_accuracy == 1


def test_circle_walk_with_N_equal_rK_plus_1_is_stuck_only_at_p_0_and_1():
    """Circle K = 3, N = 4, p symbolic. The walk visits each node once when p ∈ {0, 1} (3 steps of +1),
    so x̄ = (1/3)1 for every walk and C = 0 there (Theorem 4.1). For 0 < p < 1:
    C = (1/(K(N-1))) Σ_{m=1}^{3} (Πᵀ)^m - 1/9; its diagonal is (1/9)([Π²]_aa + [Π³]_aa) - 1/9 with
    [Π²]_aa = 2p(1-p) and [Π³]_aa = p³ + (1-p)³ (three steps return only by going all the way round),
    so C_aa = (2p(1-p) + p³ + (1-p)³ - 1)/9 = (2pq + (p+q)(p² - pq + q²) - 1)/9 with q = 1-p
    = (2pq + 1 - 3pq - 1)/9 = -pq/9 ≠ 0. Vanishing set {0, 1}; verdict informative at a generic p."""
    point = _explore({"family": "circle", "params": {"K": 3, "N": 4, "p": "p"}}).points[0]
    p = symbol("p")
    assert sp.expand(point.signal.matrix[0, 0] + p * (1 - p) / 9) == 0
    assert list(point.signal.vanishing.points) == [0, 1]
    assert _verdicts(_explore({"family": "circle", "params": {"K": 3, "N": 4, "p": "p"}})) == {
        "p=0": "stuck",
        "p=1/2": "informative",
        "p=1": "stuck",
    }


def test_circle_K4_N5_vanishes_at_p_one_half_too():
    """K = 4, N = 5: Σ_{m=1}^{4} [Π^m]_aa = [Π²]_aa + [Π⁴]_aa (odd powers cannot return on an even cycle)
    = 2pq + 6p²q² + p⁴ + q⁴, and C_aa = (that - 1)/16. With 1 = (p+q)⁴ = p⁴ + 4p³q + 6p²q² + 4pq³ + q⁴,
    C_aa = 0 iff 2pq = 4pq(p² + q²), i.e. pq = 0 or p² + q² = 1/2, i.e. p ∈ {0, 1/2, 1}. At p = 1/2,
    Π = (S + S⁻¹)/2 with S⁴ = I gives Π² = (I + S²)/2, Π³ = Π, Π⁴ = Π², so Σ_{m=1}^{4} Π^m = I + S + S² + S³
    = J and C = J/16 - J/16 = 0 exactly: a zero that is not of Theorem 4.1's kind. E[x̄] is uniform, so
    f(X) = c E[e_y] (1/4) is the same for every walk after one step."""
    result = _explore({"family": "circle", "params": {"K": 4, "N": 5, "p": "p"}})
    assert list(result.points[0].signal.vanishing.points) == [0, sp.Rational(1, 2), 1]
    assert _verdicts(result) == {"p=0": "stuck", "p=1/3": "informative", "p=1/2": "stuck", "p=1": "stuck"}


def test_majority_vote_signal_is_2q2_1mq2_and_vanishes_only_at_0_and_1():
    """Majority of L = 3 tokens, a w.p. q: P(y=a) = q³ + 3q²(1-q) = 3q² - 2q³, E[x̄_a] = q,
    E[1{y=a} x̄_a] = (1/3)(3q³ + 2·3q²(1-q)) = 2q² - q³, so C[a, a] = 2q² - q³ - q(3q² - 2q³)
    = 2q²(1-q)². It vanishes at q ∈ {0, 1} only (there a single input has probability 1: trivially
    stuck); at q = 1/2 the average tells the majority: informative."""
    result = _explore({"family": "majority", "params": {"L": 3, "q": "q"}})
    q = symbol("q")
    assert sp.factor(result.points[0].signal.matrix[0, 0]) == sp.factor(2 * q**2 * (1 - q) ** 2)
    assert list(result.points[0].signal.vanishing.points) == [0, 1]
    assert _verdicts(result) == {"q=0": "stuck", "q=1/2": "informative", "q=1": "stuck"}


def test_single_input_points_are_flagged_and_not_trained():
    """Majority at q = 0: only "b b b" has positive probability, so there is nothing to learn (Bayes
    accuracy = constant-prediction accuracy = 1) and training is skipped with a note."""
    spec = parse_task_spec({"task": {"family": "majority", "params": {"L": 3, "q": 0}}})
    check = explore(spec, train=True).points[0].checks[0]
    assert check.runs is None and "single input" in check.train_note
    assert "nothing to learn" in check.reason


def test_counting_task_is_informative():
    """Count of a among L = 2 fair tokens, label n_k: C[n2, a] = E[1{y=n2} x̄_a] - P(y=n2)E[x̄_a]
    = (1/4)(1) - (1/4)(1/2) = 1/8 ≠ 0."""
    point = _explore({"family": "count", "params": {"L": 2}}).points[0]
    assert point.signal.matrix[4, 0] == sp.Rational(1, 8)  # vocab: a, b, n0, n1, n2
    assert point.checks[0].verdict == "informative"


def test_permutation_task_is_stuck():
    """All 3! orders of t0, t1, t2: every input has x̄ = (1/3, 1/3, 1/3), so C = 0 and f(X) after step
    one is the same vector for all inputs; relabelling the tokens by any permutation maps the task
    onto itself, so GD keeps the scores shared."""
    check = (
        _explore({"family": "permutation", "params": {"m": 3, "label_position": 1}}, steps=3)
        .points[0]
        .checks[0]
    )
    assert check.signal_is_zero and check.manifold.shared == [True] * 4
    assert check.verdict == "stuck"


def test_first_of_two_signal_is_zero_for_every_r_and_gd_stays_stuck():
    """Which of a, b comes first among L = 4 positions: every input holds a, b and two fillers, so x̄ is
    constant and C = 0 for every r. At r = 7/10 the labels are unbalanced, so ℓ'(e_yᵀf) differs between
    labels; still, given either label the pair of positions holding {a, b} is uniform, so the attention
    treats a and b alike and the inputs keep one shared score vector."""
    result = _explore(
        {"family": "first_of_two", "params": {"L": 4, "r": "r"}}, steps=2, sweep={"r": ["r", "7/10"]}
    )
    assert result.points[0].signal.vanishing.all_p
    assert _verdicts(result) == {"r=1/2": "stuck", "r=7/10": "stuck"}  # r symbolic -> generic r = 1/2


def test_cayley_walk_on_a_disconnected_coset_graph_is_informative():
    """D_3 with the single generator r: a walk never leaves its coset {e, r, r²} or {s, rs, r²s}, so with
    N = 4 it visits its whole coset once: x̄ = (1/3) on the coset, and the label is in that coset.
    C[a, b] = P(y=a)·(1/3)1{b ~ a} - (1/6)(1/6) = 1/18·1{same coset} - 1/36 = ±1/36 ≠ 0."""
    point = _explore(
        {"family": "cayley", "params": {"group": "dihedral", "n": 3, "generators": {"r": 1}, "N": 4}}
    ).points[0]
    assert set(point.signal.matrix) == {sp.Rational(1, 36), -sp.Rational(1, 36)}
    assert point.signal.matrix[0, 1] == sp.Rational(1, 36) and point.signal.matrix[0, 3] == -sp.Rational(
        1, 36
    )
    assert point.checks[0].verdict == "informative"


def test_lazy_walk_breaks_the_balanced_visits():
    """Lazy circle K = 3, N = 4, p = 1, stay w.p. q = 1/2: a walk that stays put revisits a node, so x̄
    is no longer (1/3)1 for every walk and the balanced-visit argument of Theorem 4.1 fails. The oracle
    enumerates the 3 starts × 2³ stay/move patterns (each of probability (1/3)(1/8)) straight from the
    definition C[a, b] = E[1{y=a} x̄_b] - P(y=a)E[x̄_b], with P(y=a) = E[x̄_b] = 1/3 by rotation
    symmetry; it gives C[a, a-1] = 1/24 (the label sits one step ahead of the visited nodes more often
    than chance) and C[a, a+1] = -1/24."""
    point = _explore({"family": "lazy_circle", "params": {"K": 3, "N": 4, "p": 1, "q": "1/2"}}).points[0]
    oracle = sp.zeros(3, 3)
    for start in range(3):
        for pattern in range(8):
            walk = [start]
            for k in range(3):
                walk.append(walk[-1] if (pattern >> k) & 1 else (walk[-1] + 1) % 3)
            for b in range(3):
                oracle[walk[3], b] += sp.Rational(1, 24) * sp.Rational(walk[:3].count(b), 3)
    oracle -= sp.ones(3, 3) / 9
    assert point.signal.matrix == oracle
    assert oracle[1, 0] == sp.Rational(1, 24)
    assert point.checks[0].verdict == "informative"


def test_rw_explore_writes_report_json_and_is_reproducible(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "name": "qa2",
                "task": {"family": "qa2"},
                "train": {"steps": 4, "M": 24, "eta": 0.1, "sigmas": [0.01]},
            }
        )
    )
    outs = []
    for k in range(2):
        out = tmp_path / f"out{k}"
        assert main(["explore", str(spec), "--out", str(out), "--train", "--steps", "2"]) == 0
        outs.append(out)
    printed = capsys.readouterr().out
    assert "qa2 (as given): stuck" in printed
    names = sorted(p.name for p in outs[0].iterdir())
    assert names == ["REPORT.md", "accuracy_0_0.png", "explore.json"]
    for name in names:
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    data = json.loads((outs[0] / "explore.json").read_text())
    check = data["points"][0]["checks"][0]
    assert data["format"] == "rw-explore" and check["exact_verdict"] == "stuck"
    assert check["verdict"] == "stuck-" + check["stability"]["kind"] and check["stability"]["steps"] == 4
    assert check["manifold"]["shared"] == [True, True, True]
    assert [run["label"] for run in check["train"]] == ["zero", "gaussian sigma=0.01"]
    # zero init on a C = 0 task: every input scored alike, so accuracy = max_y P(y) = 1/2 at every step
    assert check["train"][0]["test_accuracy"] == [0.5] * 5
    assert f"**{check['verdict']}**" in (outs[0] / "REPORT.md").read_text()


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--steps", "0"], "--steps=0 is out of range"),
        (["--steps", "two"], "--steps='two' is not an integer"),
    ],
)
def test_rw_explore_bad_arguments_exit_2_with_one_line(tmp_path, capsys, argv, message):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"task": {"family": "qa2"}}))
    assert main(["explore", str(spec), "--out", str(tmp_path / "o"), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_rw_explore_bad_spec_names_the_field(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"task": {"family": "circle", "params": {"K": 3, "N": 4, "p": 2}}}))
    assert main(["explore", str(spec), "--out", str(tmp_path / "o")]) == 2
    assert "spec.json: task.params.p: p=2 is outside [0, 1]" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_cli_module_is_registered():
    from rwtoolkit.cli.main import COMMANDS

    assert ("explore", "rwtoolkit.cli.explore") in [(name, module) for name, module, _ in COMMANDS]
    importlib.import_module("rwtoolkit.cli.explore")


def test_irrational_zeros_are_listed_as_not_checked_and_a_generic_value_is_used():
    """A vanishing set {1/2, √2/2}: the rational zero is checked, the irrational one is reported as
    skipped, and the generic value is the first of 1/2, 1/3, ... off the set, i.e. 1/3."""
    from rwtoolkit.analyses.explore._explore import _evaluation_values
    from rwtoolkit.engines.exact import VanishingSet

    p = symbol("p")
    gcd = sp.expand((2 * p - 1) * (2 * p**2 - 1))
    summary = rwtoolkit.analyses.explore.SignalSummary(
        sp.Matrix([[gcd]]), False, p, VanishingSet(p, False, (sp.Rational(1, 2), sp.sqrt(2) / 2), gcd)
    )
    values, skipped = _evaluation_values(summary)
    assert values == [sp.Rational(1, 3), sp.Rational(1, 2)]
    assert len(skipped) == 1 and "sqrt(2)/2" in skipped[0] and "irrational" in skipped[0]


def test_rw_explore_runs_as_a_subprocess(tmp_path):
    import subprocess
    import sys

    spec = tmp_path / "perm.json"
    spec.write_text(
        json.dumps(
            {
                "task": {"family": "permutation", "params": {"m": 2}},
                "explore": {"steps": 1},
                "train": {"steps": 5},  # the stability of the stuck manifold: 5 steps
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "rwtoolkit.cli.main", "explore", str(spec), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "stuck" in done.stdout
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "rwtoolkit.cli.main",
            "explore",
            str(tmp_path / "nope.json"),
            "--out",
            str(tmp_path / "o2"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert missing.returncode == 2 and "nope.json is not a file" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_stuck_verdict_contradicted_by_training_is_flagged_in_report_json_and_plot(tmp_path):
    # K = 4, N = 5, p = 1/2: C = 0 and exact GD keeps one shared score vector, yet float64 training from
    # zero leaves the manifold (rounding grows) and reaches the Bayes accuracy 1/2 (notebook (c), part 2).
    spec = parse_task_spec(
        {
            "name": "fair walk",
            "task": {"family": "circle", "params": {"K": 4, "N": 5, "p": "1/2"}},
            "explore": {"steps": 2},
            "train": {"steps": 100, "eta": 1.0, "M": 16, "sigmas": [0.01]},
        }
    )
    result = explore(spec, train=True)
    check = result.points[0].checks[0]
    # The stability analysis at the training settings (η = 1, μ = M/2 = 8, 100 steps) finds the manifold
    # repelling and predicts that float64 rounding alone leaves it within the run: the runs that learn
    # are then expected, not a contradiction.
    assert check.exact_verdict == "stuck" and check.verdict == "stuck-repelling", check.reason
    assert check.stability is not None and check.stability.rounding is not None
    assert check.contradicting_runs == [] and "predicted escape at float64 rounding: step" in check.reason
    check.stability = None  # without the analysis, the same runs contradict a plain "stuck"
    assert check.verdict == "stuck"
    assert check.constant_accuracy == sp.Rational(1, 4) and check.bayes_accuracy == sp.Rational(1, 2)
    (label, first, final), gaussian = check.contradicting_runs
    assert label == "zero" and final == 0.5 and 20 < first < 100  # the notebook: accuracy 1/4 for 20 steps
    assert gaussian[0] == "gaussian sigma=0.01" and gaussian[2] == 0.5  # a non-zero init leaves it too
    assert "CONTRADICTED BY TRAINING" in check.reason and '"stuck" alone means the' in check.reason
    written = write_report(result, tmp_path)
    data = json.loads(written["explore.json"].read_text())
    assert data["version"] == 4
    assert data["points"][0]["checks"][0]["stuck_proof"]["verdict"] == "stuck for all t (proved)"
    flag = data["points"][0]["checks"][0]["training_contradicts_verdict"]
    assert flag["runs"][0] == {"label": "zero", "first_step": first, "final_test_accuracy": 0.5}
    assert flag["constant_accuracy"]["exact"] == "1/4" and "invariant manifold" in flag["explanation"]
    report = written["REPORT.md"].read_text()
    assert "**stuck** (contradicted by training, see below)" in report
    assert 'Warning: the verdict "stuck" is contradicted by training' in report
    from rwtoolkit.analyses.explore._report import CONTRADICTION_GID, _plot

    fig = _plot(check, "fair walk", tmp_path / "again.png")  # the plot's title carries the red flag
    assert fig.axes[0].title.get_gid() == CONTRADICTION_GID and "CONTRADICTED" in fig.axes[0].get_title()


def test_stuck_verdict_kept_by_training_is_not_flagged():
    from rwtoolkit.analyses.explore import Manifold, OneStep, TrainRun
    from rwtoolkit.analyses.explore._explore import PointCheck

    def check(accuracies):
        run = TrainRun("zero", "zero", None, accuracies, [0.0] * len(accuracies), [0.0] * len(accuracies))
        return PointCheck(
            {},
            CircleWalk(4, 5, "1/2"),
            True,
            OneStep(True, True, [], ""),
            Manifold(2, [True] * 3, ""),
            sp.Rational(1, 2),
            sp.Rational(1, 4),
            runs=[run],
        )

    assert check([0.25] * 10).contradicting_runs == [] and check([0.25] * 10).contradiction == ""
    assert check([0.25] * 10 + [0.25 + 1e-12]).contradiction == ""  # within the float tolerance 1e-9
    assert check([0.25, 0.25, 0.4, 0.5]).contradicting_runs == [("zero", 2, 0.5)]


def test_accuracy_plot_title_names_each_parameter_once():
    from rwtoolkit.analyses.explore._report import plot_title

    title = plot_title("sweep", CircleWalk(4, 5, "1/2"), {"N": 5, "p": "p"}, {"p": sp.Rational(1, 2)})
    assert title == "sweep: task circle, K=4, N=5, p=1/2"
    assert "(as given)" not in plot_title("qa2", qa_task2(), {}, {})


@pytest.mark.parametrize(
    "task, kind",
    [
        ({"family": "qa2"}, "repelling"),
        ({"family": "permutation", "params": {"m": 3}}, "repelling"),
    ],
    ids=["qa2", "permutation"],  # K = 4, p = 1/2: test_stuck_verdict_contradicted_by_training_...
)
def test_stuck_points_get_the_stability_verdict_of_rw_stability(task, kind):
    """A stuck point's verdict is refined by rwtoolkit.analyses.stability's linearisation at the spec's training settings
    (η = 0.1, ε = 0.1, μ = M/2 = 32, 40 steps here), the same numbers rw stability computes."""
    from rwtoolkit.analyses.stability import linearise, stability_summary

    spec = parse_task_spec({"task": task, "explore": {"steps": 1}, "train": {"steps": 40}})
    check = explore(spec).points[0].checks[0]
    expected = stability_summary(linearise(check.task, 40, eta=0.1, mu=32.0, eps=0.1), (1e-2, 1e-4))
    assert check.verdict == f"stuck-{kind}" and check.stability == expected
    assert expected.line() in check.reason


def test_explore_runs_stuck_proof_for_another_model_and_says_which_checks_did_not_run(tmp_path, capsys):
    """--model key_query on the circle walk K = 3, N = 4 with p symbolic: C vanishes at p = 0 and 1 only, so the
    points are p = 0, 1 and the generic 1/2. From zero W_K = W_Q = 0 get no gradient (each is multiplied by the
    other), the attention stays uniform for one step and V(1) = (η/ε) E[e_y x̄ᵀ] as in the paper's model; at p = 1/2
    inputs 0 and 1 of the population then differ by 10·(E[e_y x̄ᵀ](x̄_1 − x̄_0))_0 = −5/64 on label 0 at t = 1
    (computed below from the population alone), which stuck_proof certifies: escapes."""
    from fractions import Fraction

    from rwtoolkit.io import STUCK_WORDS, Verdict

    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {"task": {"family": "circle", "params": {"K": 3, "N": 4, "p": "p"}}, "explore": {"steps": 1}}
        )
    )
    assert main(["explore", str(spec), "--out", str(tmp_path / "o"), "--model", "key_query"]) == 0
    printed = capsys.readouterr().out
    assert "model: key_query (key_query)" in printed
    assert (
        printed.count("not run: ") == 3 and "not run: the one-step check is specific to one_layer" in printed
    )
    data = json.loads((tmp_path / "o" / "explore.json").read_text())
    assert data["model"] == {"name": "key_query", "d": 2}
    assert sorted(data["checks"]["not_run"]) == ["manifold", "one_step", "stability"]
    checks = {c["values"]["p"]: c for c in data["points"][0]["checks"]}
    assert {p: c["verdict"] for p, c in checks.items()} == {"0": "stuck", "1/2": "escapes", "1": "stuck"}
    assert checks["1"]["stuck_proof"]["verdict"] == STUCK_WORDS.word(Verdict.PROVED)
    assert checks["1"]["one_step"] is None and checks["1"]["manifold"] is None
    escape = checks["1/2"]["stuck_proof"]
    assert escape["verdict"] == STUCK_WORDS.word(Verdict.REFUTED) and escape["model"] == data["model"]
    pop = CircleWalk(3, 4, sp.Rational(1, 2)).population()
    xbar = [[Fraction(list(seq).count(k), 4) for k in range(3)] for seq in pop.tokens.tolist()]
    probs = [Fraction(str(q)) for q in pop.exact_probs()]
    m = [
        [
            sum(q * (y == a) * x[b] for q, y, x in zip(probs, pop.labels.tolist(), xbar, strict=True))
            for b in range(3)
        ]
        for a in range(3)
    ]
    first, second = [n for n, q in enumerate(probs) if q != 0][:2]
    gap = 10 * sum(m[0][b] * (xbar[second][b] - xbar[first][b]) for b in range(3))
    assert gap == Fraction(-5, 64)
    assert escape["ball_check"]["escape_step"] == 1 and escape["ball_check"]["label"] == 0
    assert escape["ball_check"]["difference"].startswith(f"[{float(gap):.9f} +/-")
    assert "**escapes**" in (tmp_path / "o" / "REPORT.md").read_text()


def test_explore_refuses_train_for_another_model_before_any_work(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"task": {"family": "qa2"}}))
    assert main(["explore", str(spec), "--out", str(tmp_path / "o"), "--model", "key_query", "--train"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--train is out of place with --model key_query" in err
    assert not (tmp_path / "o").exists()
