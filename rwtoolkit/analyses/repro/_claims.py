"""The paper's claims about its experiments, each with the criterion that decides agreement.

Every claim is a function of run outcomes (``rwtoolkit.analyses.repro._runner``) returning ``Row``s, each a
``rwtoolkit.io.Claim`` whose verdict is "holds at the sizes checked" or "does not hold at the sizes checked" (a
measurement of float runs), or "inconclusive" when a run failed; report.json writes it as ``agrees`` (it
passed). The same claims are evaluated on every option of a figure, which is how the report shows which unstated choices
reproduce the paper. Thresholds are fixed here, before any run, and quoted in REPORT.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from rwtoolkit.io import Claim, Verdict
from rwtoolkit.tasks import CircleWalk, exact

#: Binomial tolerance: an accuracy "≈ q" on n test inputs agrees when |acc - q| ≤ Z_TOL·sqrt(q(1-q)/n).
Z_TOL = 3.0
#: "Within a few iterations" (Fig 4): the accuracy is within tolerance of OPT from this step on.
FEW_STEPS = 10
#: "Attention on the parent ≈ 1": mean attention on x_{N-1} over test inputs at least this.
PARENT_MIN = 0.9
#: "V looks like Πᵀ": direction error ‖V/‖V‖_F - Πᵀ/‖Πᵀ‖_F‖_F below this (cosine > 0.875) and the
#: largest entries of each column of V on Πᵀ's nonzero pattern.
V_DIRECTION_MAX = 0.5
#: "V ∝ all-ones": ‖V - mean(V)·1‖_F / ‖V‖_F at most this. Sampled training sets have unequal label
#: counts (±1/√n), which makes V = a·1ᵀ with rows a few per cent apart even when the symmetry is exact.
ONES_MAX = 0.1
#: "Equal attention on all tokens" / the p = 1 symmetry holds: attention spread (max over test inputs
#: of max - min of S_i over the N-1 token positions) at most this. Uniform attention is 1/(N-1) ≈ 0.01,
#: so a spread of 1e-3 is a tenth of it: visible in a plot of the profile.
SPREAD_MAX = 1e-3
#: The p = 1 symmetry of V is visibly broken when V's distance from the form a·1ᵀ (exactly 0 in exact
#: arithmetic, for any training sample) exceeds this relative size.
V_COLUMN_MAX = 1e-3
#: "≈ 400 iterations" (Fig 6): agreement when the first iteration at ≈ OPT is within a factor 2 of 400.
FIG6_WINDOW = (200, 800)


@dataclass(kw_only=True)
class Row(Claim):
    """One report row: a claim (``statement``) about the paper's figure ``source``, what the paper shows
    (``paper``) and what our runs show (the one line of ``evidence``), decided by ``criterion``: holds or does
    not hold at the sizes run, inconclusive when a run failed (never a pass).

    >>> row = measured("fig4", "final test accuracy ≈ OPT", "≈ OPT = 0.5", "0.498", True, "|acc - OPT| ≤ tol")
    >>> row.verdict.value, row.command, row.to_dict()["agrees"]
    ('holds at the sizes checked', 'rw reproduce fig4', True)
    """

    id: str = field(init=False, default="")
    command: str = field(init=False, default="")
    #: What the paper shows.
    paper: str

    def __post_init__(self) -> None:
        super().__post_init__()
        self.id = f"{self.source}: {self.statement}"
        self.command = f"rw reproduce {self.source}"

    def to_dict(self) -> dict:
        """The row as report.json and the figure records write it (``REPORT_KEYS``; ``agrees``: it passed)."""
        return {
            "figure": self.source,
            "claim": self.statement,
            "paper": self.paper,
            "ours": self.evidence[0],
            "agrees": self.passed,
            "criterion": self.criterion,
        }


def measured(figure: str, claim: str, paper: str, ours: str, agrees: bool, criterion: str) -> Row:
    """A row decided by what the runs measured: holds at the sizes run when ``agrees``, does not hold otherwise."""
    return Row(
        source=figure,
        statement=claim,
        paper=paper,
        evidence=[ours],
        verdict=Verdict.HOLDS if agrees else Verdict.FAILS,
        criterion=criterion,
    )


def accuracy_tolerance(target: float, n: int) -> float:
    """Z_TOL·sqrt(q(1-q)/n): three binomial standard deviations of an accuracy q measured on n inputs.

    >>> round(accuracy_tolerance(0.5, 1000), 4)
    0.0474
    """
    return Z_TOL * math.sqrt(target * (1 - target) / n)


def first_step(values: Sequence[float | None], ok: Callable[[float], bool]) -> int | None:
    """First index t with ``ok(values[t])``; None when there is none.

    >>> first_step([0.1, 0.5, 0.2], lambda v: v > 0.3)
    1
    """
    for t, v in enumerate(values):
        if v is not None and ok(v):
            return t
    return None


def first_step_staying(values: Sequence[float | None], ok: Callable[[float], bool]) -> int | None:
    """First index t from which ``ok`` holds at every later index; None when it fails at the end.

    >>> first_step_staying([0.5, 0.1, 0.5, 0.5], lambda v: v > 0.3)
    2
    """
    t_ok = None
    for t, v in enumerate(values):
        if v is not None and ok(v):
            t_ok = t if t_ok is None else t_ok
        else:
            t_ok = None
    return t_ok


def support_matches(V: np.ndarray, Pi: np.ndarray) -> bool:
    """True when V has Πᵀ's pattern: in every column j the k_j largest entries of V sit on the k_j nonzeros
    of column j of Πᵀ, ordered as Πᵀ orders them (where Πᵀ's values differ).

    >>> Pi = np.array([[0, .5, .5], [.5, 0, .5], [.5, .5, 0]])
    >>> support_matches(np.array([[0, 2, 2], [2, 0, 2], [2, 2, 0.]]), Pi), support_matches(np.eye(3), Pi)
    (True, False)
    """
    target = Pi.T
    for j in range(V.shape[1]):
        support = np.flatnonzero(target[:, j] > 0)
        top = set(np.argsort(-V[:, j], kind="stable")[: len(support)].tolist())
        if top != set(support.tolist()):
            return False
        for a in support:
            for b in support:
                if target[a, j] > target[b, j] and not V[a, j] > V[b, j]:
                    return False
    return True


def _n_test(outcome: dict) -> int:
    return int(outcome["config"]["train"]["test_size"])


def _fmt(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}g}"


def _failed(figure: str, claim: str, paper: str, criterion: str, outcome: dict) -> Row:
    """A row whose run failed: inconclusive (never a pass)."""
    return Row(
        source=figure,
        statement=claim,
        paper=paper,
        evidence=[f"run failed: {outcome['error']}"],
        verdict=Verdict.INCONCLUSIVE,
        criterion=criterion,
    )


def _pi(outcome: dict) -> np.ndarray:
    t = outcome["config"]["task"]
    return CircleWalk(t["K"], t["N"], t["p"]).transition_matrix_float()


def success_claims(figure: str, out: dict, few_steps: bool) -> list[Row]:
    """Figs 4/8 (0 < p < 1, zero init): accuracy ≈ OPT (early), V ≈ Πᵀ in direction, parent attention ≈ 1."""
    rows = []
    p = exact(out["config"]["task"]["p"], "p") if out["ok"] else None
    opt = None if p is None else float(max(p, 1 - p))  # OPT = max{p, 1-p}: 0.5 in Figs 4 and 8
    c_acc = f"|acc(T) - OPT| ≤ {Z_TOL:g}·sqrt(OPT(1-OPT)/n_test) (binomial noise of the test set)"
    c_few = f"accuracy within that tolerance of OPT from some step ≤ {FEW_STEPS} on"
    c_v = (
        f"‖V/‖V‖_F - Πᵀ/‖Πᵀ‖_F‖_F < {V_DIRECTION_MAX:g} and each column's largest entries on Πᵀ's "
        "nonzero pattern"
    )
    c_att = f"mean attention on x_(N-1) at T ≥ {PARENT_MIN:g}"
    specs = [
        ("final test accuracy ≈ OPT", "≈ OPT = max(p, 1-p)" if opt is None else f"≈ OPT = {opt:g}", c_acc),
        *([("reaches OPT within a few iterations", "within a few iterations", c_few)] if few_steps else []),
        ("V(T) ≈ Πᵀ in direction", "V looks like Πᵀ", c_v),
        ("attention on the parent x_(N-1) ≈ 1", "≈ 1", c_att),
    ]
    if not out["ok"]:
        return [_failed(figure, c, p, crit, out) for c, p, crit in specs]
    assert opt is not None  # p is known once the run succeeded
    s = out["series"]
    tol = accuracy_tolerance(opt, _n_test(out))
    acc = s["test_accuracy"]
    rows.append(
        measured(
            figure,
            specs[0][0],
            specs[0][1],
            f"{acc[-1]:.3f} (T={len(acc) - 1}, tolerance ±{tol:.3f})",
            abs(acc[-1] - opt) <= tol,
            c_acc,
        )
    )
    if few_steps:
        t = first_step_staying(acc, lambda a: abs(a - opt) <= tol)
        rows.append(
            measured(
                figure,
                specs[1][0],
                specs[1][1],
                f"from iteration {t}" if t is not None else "never",
                t is not None and t <= FEW_STEPS,
                c_few,
            )
        )
    V = np.array(out["final"]["V"])
    err = s["v_direction_error"][-1]
    support = support_matches(V, _pi(out))
    rows.append(
        measured(
            figure,
            "V(T) ≈ Πᵀ in direction",
            "V looks like Πᵀ",
            f"direction error {_fmt(err)}, largest entries on Πᵀ's pattern: {'yes' if support else 'no'}",
            err is not None and err < V_DIRECTION_MAX and support,
            c_v,
        )
    )
    par = s["parent_attention"][-1]
    rows.append(measured(figure, specs[-1][0], specs[-1][1], f"{par:.4f}", par >= PARENT_MIN, c_att))
    return rows


def failure_claims(figure: str, out: dict) -> list[Row]:
    """Figs 5/9 (p = 1, zero init): accuracy ≈ 1/K throughout, V ∝ all-ones, equal attention on all tokens."""
    c_acc = f"|acc(t) - 1/K| ≤ {Z_TOL:g}·sqrt((1/K)(1-1/K)/n_test) at every iteration t"
    c_v = f"‖V - mean(V)·1‖_F/‖V‖_F ≤ {ONES_MAX:g} at T"
    c_att = f"attention spread (max - min of S_i over token positions) ≤ {SPREAD_MAX:g} at every iteration"
    specs = [
        ("test accuracy ≈ 1/K throughout", "≈ 1/K", c_acc),
        ("V(T) ∝ all-ones", "V ∝ 1_(K×K)", c_v),
        ("equal attention on all tokens", "S_1 = … = S_(N-1)", c_att),
    ]
    if not out["ok"]:
        return [_failed(figure, c, p, crit, out) for c, p, crit in specs]
    s = out["series"]
    K = int(out["config"]["task"]["K"])
    q = 1 / K
    tol = accuracy_tolerance(q, _n_test(out))
    acc = s["test_accuracy"]
    worst = max(abs(a - q) for a in acc)
    paper_acc = f"≈ 1/K = {q:.3f}"
    rows = [
        measured(
            figure,
            specs[0][0],
            paper_acc,
            f"final {acc[-1]:.3f}, max |acc - 1/K| = {worst:.3f} (tolerance {tol:.3f})",
            worst <= tol,
            c_acc,
        )
    ]
    ones = s["ones_residual"][-1]
    rows.append(
        measured(
            figure,
            specs[1][0],
            specs[1][1],
            f"residual {_fmt(ones)}",
            ones is not None and ones <= ONES_MAX,
            c_v,
        )
    )
    spread = max(s["attention_spread"])
    rows.append(
        measured(figure, specs[2][0], specs[2][1], f"max spread {spread:.2g}", spread <= SPREAD_MAX, c_att)
    )
    return rows


def fig6_claims(figure: str, half: dict, one: dict) -> list[Row]:
    """Fig 6 (random init, normalised x̃, η = 0.01): timing of p = 1/2, p = 1 below 100 %, KL curves."""
    c_t = (
        f"first iteration with acc ≥ OPT - {Z_TOL:g}·sqrt(OPT(1-OPT)/n_test) lies in "
        f"[{FIG6_WINDOW[0]}, {FIG6_WINDOW[1]}] (within a factor 2 of 400)"
    )
    c_one = "test accuracy at the last iteration < 1"
    c_kl = "KL at the last iteration: p = 1/2 below p = 1 (our reading of the panels' ordering)"
    c_dec = "KL at the last iteration below KL at iteration 0, for both p"
    specs = [
        ("p = 1/2 reaches ≈ 50 % after ≈ 400 iterations", "≈ 400 iterations", c_t),
        ("p = 1 does not reach 100 % within 1000 iterations", "< 100 % at 1000", c_one),
        ("KL ordering: p = 1/2 ends below p = 1", "p = 1/2 below p = 1", c_kl),
        ("KL decreases along training (both p)", "decreasing curves", c_dec),
    ]
    bad = half if not half["ok"] else one if not one["ok"] else None
    if bad is not None:
        return [_failed(figure, c, p, crit, bad) for c, p, crit in specs]
    acc = half["series"]["test_accuracy"]
    tol = accuracy_tolerance(0.5, _n_test(half))
    t = first_step(acc, lambda a: a >= 0.5 - tol)
    rows = [
        measured(
            figure,
            specs[0][0],
            specs[0][1],
            f"iteration {t} (final acc {acc[-1]:.3f})"
            if t is not None
            else f"never (final acc {acc[-1]:.3f})",
            t is not None and FIG6_WINDOW[0] <= t <= FIG6_WINDOW[1],
            c_t,
        )
    ]
    acc1 = one["series"]["test_accuracy"]
    T = len(acc1) - 1
    rows.append(measured(figure, specs[1][0], specs[1][1], f"acc({T}) = {acc1[-1]:.3f}", acc1[-1] < 1, c_one))
    kh, ko = half["series"]["kl"], one["series"]["kl"]
    rows.append(
        measured(
            figure,
            specs[2][0],
            specs[2][1],
            f"KL(T): p=1/2 {kh[-1]:.3g}, p=1 {ko[-1]:.3g}",
            kh[-1] < ko[-1],
            c_kl,
        )
    )
    rows.append(
        measured(
            figure,
            specs[3][0],
            specs[3][1],
            f"p=1/2 {kh[0]:.3g} → {kh[-1]:.3g}; p=1 {ko[0]:.3g} → {ko[-1]:.3g}",
            kh[-1] < kh[0] and ko[-1] < ko[0],
            c_dec,
        )
    )
    return rows


def qa_claims(figure: str, task1: dict, task2: dict) -> list[Row]:
    """Figs 7/10: Task 1 reaches 100 % within 100 iterations, Task 2 stays ≈ 50 %."""
    c1 = "test accuracy = 1 (every test input right) from some iteration ≤ 100 on, to the end of the run"
    c2 = (
        f"never above chance: acc(t) ≤ 1/2 + {Z_TOL:g}·sqrt(1/4/n_test) at every iteration t, and "
        "|acc(T) - 1/2| within the same tolerance"
    )
    specs = [
        ("Task 1 reaches 100 % within 100 iterations", "100 % within 100", c1),
        ("Task 2 stays ≈ 50 %", "≈ 50 %", c2),
    ]
    rows = []
    if task1["ok"]:
        acc = task1["series"]["test_accuracy"]
        t = first_step_staying(acc, lambda a: a >= 1.0)
        t_any = first_step(acc, lambda a: a >= 1.0)
        if t is not None:
            ours = f"100 % from iteration {t} on"
        elif t_any is not None:
            ours = f"100 % at iteration {t_any} but not kept (final {acc[-1]:.3f})"
        else:
            ours = f"never 100 % (final {acc[-1]:.3f})"
        rows.append(measured(figure, specs[0][0], specs[0][1], ours, t is not None and t <= 100, c1))
    else:
        rows.append(_failed(figure, *specs[0], task1))
    if task2["ok"]:
        acc = task2["series"]["test_accuracy"]
        tol = accuracy_tolerance(0.5, _n_test(task2))
        best = max(acc)
        rows.append(
            measured(
                figure,
                specs[1][0],
                specs[1][1],
                f"final {acc[-1]:.3f}, max over iterations {best:.3f} (tolerance {tol:.3f})",
                best <= 0.5 + tol and abs(acc[-1] - 0.5) <= tol,
                c2,
            )
        )
    else:
        rows.append(_failed(figure, *specs[1], task2))
    return rows


def vis_claims(figure: str, half: dict) -> list[Row]:
    """Figs 11/12 (the Fig 6 run at p = 1/2, last iteration): V ≈ Πᵀ, attention on the parent (Theorem 3.1)."""
    c_v = (
        f"at the last iteration: ‖V/‖V‖_F - Πᵀ/‖Πᵀ‖_F‖_F < {V_DIRECTION_MAX:g} and each column's largest "
        "entries on Πᵀ's pattern"
    )
    c_att = f"mean attention on x_(N-1) at the last iteration ≥ {PARENT_MIN:g}"
    if figure == "fig11":
        claim, paper, crit = (
            "p = 1/2: V approaches Πᵀ (one-step transition)",
            "V ≈ Πᵀ (Thm 3.1 mechanism)",
            c_v,
        )
    else:
        claim, paper, crit = (
            "p = 1/2: attention selects the parent x_(N-1)",
            "attention on x_(N-1) (Thm 3.1)",
            c_att,
        )
    if not half["ok"]:
        return [_failed(figure, claim, paper, crit, half)]
    s = half["series"]
    if figure == "fig11":
        V = np.array(half["final"]["V"])
        err = s["v_direction_error"][-1]
        support = support_matches(V, _pi(half))
        ours = f"direction error {_fmt(err)}, largest entries on Πᵀ's pattern: {'yes' if support else 'no'}"
        return [
            measured(figure, claim, paper, ours, err is not None and err < V_DIRECTION_MAX and support, crit)
        ]
    prof = half["final"]["attention_profile"]
    N = len(prof)
    top = int(np.argmax(prof))
    ours = f"attention on x_(N-1) = {prof[N - 2]:.3f}; the most attended position is {top + 1} of N={N}"
    return [measured(figure, claim, paper, ours, prof[N - 2] >= PARENT_MIN, crit)]


def sensitivity_claim(table: list[dict], main_key: str, steps: int) -> Row:
    """Theorem 4.1 in floating point: does the main option keep the p = 1 symmetry for all iterations run?"""
    crit = (
        f"in the sensitivity run with the main figures' option, attention spread ≤ {SPREAD_MAX:g} and "
        f"‖V - a·1ᵀ‖_F/‖V‖_F ≤ {V_COLUMN_MAX:g} at every iteration up to {steps}"
    )
    entry = next((e for e in table if e["choices"] == main_key), None)
    if entry is None:
        return Row(
            source="sensitivity",
            statement="the p = 1 symmetry persists (main option)",
            paper="for every T (exact arithmetic)",
            evidence=["main option not in the grid"],
            verdict=Verdict.INCONCLUSIVE,
            criterion=crit,
        )
    br = entry["break_step"]
    ours = f"no break up to {steps}" if br is None else f"breaks at iteration {br}"
    # a failed sensitivity run decides nothing (inconclusive); its row keeps what was measured before it failed
    verdict = Verdict.INCONCLUSIVE if not entry["ok"] else Verdict.HOLDS if br is None else Verdict.FAILS
    return Row(
        source="sensitivity",
        statement="Theorem 4.1: the p = 1 symmetry persists (main option)",
        paper="for every T (exact arithmetic)",
        evidence=[ours],
        verdict=verdict,
        criterion=crit,
    )
