"""The certified trajectory: full-batch GD from zero init on f = V X S(X̃ᵀ W x̃_N), every quantity a ball.

Model and reduction. From W(0) = 0 the trajectory lives in the reduced coordinates (V, w_tok, c) of
the exact engine (Lemma B.1 gradients, PᵀP = μI by Lemma E.5): logit_j = w_tok[s_j] + μ c_j for the
N-1 token positions, logit_N = μ c_N for the query slot, S = softmax(logits), f = V X S, and with
z = e_yᵀ f, δ_j = ℓ'(z) S_j (a_j - z), a_j = V[y, s_j] (a_N = 0), one step with weights w_i is
    V ← V - η Σ_i w_i ℓ'(z_i) e_y (X S)ᵀ,  w_tok ← w_tok - ημ Σ_i w_i Σ_{j<N} δ_ij e_{s_ij},
    c ← c - ημ Σ_i w_i δ_i.
The loss is ℓ(z) = -log(z + ε), ℓ'(z) = -1/(z + ε).

Symmetry-preserving coordinates. Ball arithmetic cannot prove that two separately computed balls
hold the same real, so the engine stores differences: V[:, k] = Vb + Vd[:, k] (Vd[:, 0] = 0),
w_tok = ω + e (e_0 = 0), c_j = γ + d_j for token positions (d_0 = 0), and c_N. Every update of a
difference is a sum of products each of which contains a difference factor (e.g. S_j - S_0 =
S_0 (expm1(Δ_token) Fe_j + expm1(μ d_j))), so a difference that is exactly 0 stays the exact ball {0}.
At p ∈ {0, 1} (Theorem 4.1) this makes "equal attention" a certified fact (radius 0) rather than an
overlap of balls. Per input the work is O(K) after two ball-matrix products with the 0/1 incidence
Aᵀ (positions × (input, token)), and only K² + N exponentials are taken per step.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from flint import arb, arb_mat
from tqdm import tqdm

from rwtoolkit.engines.balls._balls import (
    ball_interval,
    exact_ball,
    is_exact_zero,
    precision,
)
from rwtoolkit.engines.balls._trajectory import (
    BallTrajectory,
    Readout,
    Reduced,
    StepRecord,
    Walks,
    automatic_precision,
    predict,
    rational,
)
from rwtoolkit.engines.balls._walks import WalkSet


@dataclass
class State:
    """θ(t) in symmetry-preserving reduced coordinates (see the module docstring)."""

    Vb: list[arb]  # (K,) column 0 of V
    Vd: list[list[arb]]  # (K, K) V[y, k] - V[y, 0]; column 0 is the exact 0
    omega: arb  # w_tok[0]
    e: list[arb]  # (K,) w_tok[k] - w_tok[0]; e[0] is the exact 0
    gamma: arb  # c_1 (first token position)
    d: list[arb]  # (N-1,) c_j - c_1; d[0] is the exact 0
    cN: arb  # c_N (query slot)

    @classmethod
    def zero(cls, K: int, L: int) -> State:
        """Zero initialisation: every ball is the exact 0."""
        z = arb(0)
        return cls([z] * K, [[z] * K for _ in range(K)], z, [z] * K, z, [z] * L, z)

    # The three views below compute at the current working precision: the engine takes them inside its scope.
    @property
    def V(self) -> list[list[arb]]:
        """V (K×K)."""
        return [[b + dv for dv in row] for b, row in zip(self.Vb, self.Vd)]

    @property
    def w_tok(self) -> list[arb]:
        """w_tok (K,), the token part of W x̃_N / μ-scaled as in the reduction."""
        return [self.omega + ek for ek in self.e]

    @property
    def c(self) -> list[arb]:
        """c (N,): w_pos = Σ_j c_j p_j."""
        return [self.gamma + dj for dj in self.d] + [self.cN]

    def balls(self) -> list[arb]:
        """Every ball of the state: Vb, Vd, ω, e, γ, d, c_N."""
        return [
            *self.Vb,
            *(x for row in self.Vd for x in row),
            self.omega,
            *self.e,
            self.gamma,
            *self.d,
            self.cN,
        ]

    def symmetric(self) -> tuple[bool, bool]:
        """(token/position logits equal: e ≡ 0 and d ≡ 0 exactly, V rows constant: Vd ≡ 0 exactly)."""
        logits = all(is_exact_zero(x) for x in self.e) and all(is_exact_zero(x) for x in self.d)
        rows = all(is_exact_zero(x) for row in self.Vd for x in row)
        return logits, rows


@dataclass
class _Tables:
    """Per-step exponentials, relative to a reference token position r (the largest positional logit).

    Qh[k][k'] = expm1(e_k - e_k'), Fh_j = expm1(μ (d_j - d_r)), EN[k] = exp(logit_N - logit_r) when s_r = k.
    Centring the softmax at the dominant position keeps every exponential ≤ O(1), so a ball's width is
    not multiplied by the size of the attention logits; r = 1 (index 0) whenever the d are exactly 0.
    """

    r: int
    Qh: list[list[arb]]
    Q: list[list[arb]]
    Fh: list[arb]
    Fe: list[arb]
    EN: list[arb]

    @classmethod
    def build(cls, st: State, mu: arb) -> _Tables:
        K = len(st.e)
        r = max(range(len(st.d)), key=lambda j: (float(st.d[j].mid()), -j))
        Qh = [[arb(0) if k == kk else (st.e[k] - st.e[kk]).expm1() for kk in range(K)] for k in range(K)]
        dr = st.d[r]
        Fh = [arb(0) if j == r else (mu * (dj - dr)).expm1() for j, dj in enumerate(st.d)]
        base = mu * (st.cN - st.gamma - dr) - st.omega
        EN = [(base - st.e[k]).exp() for k in range(K)]
        return cls(r, Qh, [[1 + q for q in row] for row in Qh], Fh, [1 + f for f in Fh], EN)


@dataclass
class _Pass:
    """Per-input forward quantities on one walk set (lists indexed by distinct input)."""

    Sr: list[arb]  # S at the reference position r
    S0: list[arb]  # S at the first token position
    SN: list[arb]  # S at the query slot
    XS: list[list[arb]]  # (n, K) X S
    XSd: list[list[arb]]  # (n, K) XS_k - XS_0 (entry 0 is the exact 0)
    mass: list[arb]  # Σ_k XS_k = 1 - S_N


def _forward(ws: WalkSet, st: State, tab: _Tables) -> _Pass:
    """S_0, S_N and X S of every input; per input O(K) after one product Fhᵀ Aᵀ (sums of Fh over a token's positions)."""
    K = ws.K
    Bh = (arb_mat([tab.Fh]) * ws.AT).entries()  # (n·K,) Σ_{j: s_ij = k} Fh_j at index i·K + k
    r = tab.r
    Srs, S0s, SNs, XSs, XSds, masses = [], [], [], [], [], []
    for i in range(ws.size):
        sr, s0 = int(ws.tokens[i, r]), int(ws.tokens[i, 0])
        cnt = ws.counts[i]
        t = [
            tab.Q[k][sr] * (int(cnt[k]) + Bh[i * K + k]) for k in range(K)
        ]  # Σ_{j: s_j = k} exp(logit_j - logit_r)
        T = sum(t[1:], t[0])
        Sr = 1 / (T + tab.EN[sr])
        Srs.append(Sr)
        S0s.append(Sr if r == 0 else Sr * tab.Q[s0][sr] * tab.Fe[0])
        SNs.append(tab.EN[sr] * Sr)
        XSs.append([Sr * tk for tk in t])
        XSds.append([arb(0)] + [Sr * (t[k] - t[0]) for k in range(1, K)])
        masses.append(Sr * T)
    return _Pass(Srs, S0s, SNs, XSs, XSds, masses)


def _scores(st: State, y: int, XS: list[arb], mass: arb) -> arb:
    """f_y = Σ_k V[y, k] XS_k = Vb[y] (1 - S_N) + Σ_{k≥1} Vd[y, k] XS_k."""
    out = st.Vb[y] * mass
    for k in range(1, len(XS)):
        out += st.Vd[y][k] * XS[k]
    return out


def _evaluate(ws: WalkSet, st: State, tab: _Tables, fw: _Pass, weights: list[arb]) -> Readout:
    K, L = ws.K, ws.tokens.shape[1]
    preds: list[int | None] = []
    for i in range(ws.size):
        preds.append(predict([_scores(st, y, fw.XS[i], fw.mass[i]) for y in range(K)]))
    S0bar = sum((w * s for w, s in zip(weights, fw.S0)), arb(0))
    SNbar = sum((w * s for w, s in zip(weights, fw.SN)), arb(0))
    if tab.r == 0:  # Σ_i w_i S_i1 (Qh Fe_j + Fh_j): exactly 0 while the logits are symmetric
        v = [
            [weights[i] * fw.S0[i] * tab.Qh[k][int(ws.tokens[i, 0])]]
            for i in range(ws.size)
            for k in range(K)
        ]
        C = (ws.AT * arb_mat(v)).entries()  # (L,)
        diffs = [arb(0)] + [tab.Fe[j] * C[j] + tab.Fh[j] * S0bar for j in range(1, L)]
        profile = [S0bar + dj for dj in diffs] + [SNbar]
    else:  # Σ_i w_i S_ij = Fe_j Σ_i w_i S_ir Q[s_ij, s_ir]
        r = tab.r
        v = [
            [weights[i] * fw.Sr[i] * tab.Q[k][int(ws.tokens[i, r])]] for i in range(ws.size) for k in range(K)
        ]
        C = (ws.AT * arb_mat(v)).entries()
        profile = [tab.Fe[j] * C[j] for j in range(L)] + [SNbar]
        diffs = [arb(0)] + [profile[j] - profile[0] for j in range(1, L)]
    return Readout(preds, profile, diffs)


def _step(ws: WalkSet, st: State, tab: _Tables, fw: _Pass, weights: list[arb], eta: arb, mu: arb, eps: arb):
    """(loss L(θ), θ after one GD step)."""
    K, L = ws.K, ws.tokens.shape[1]
    zero = arb(0)
    GVb = [zero] * K
    GVd = [[zero] * K for _ in range(K)]
    Ge = [zero] * K
    Gomega = Ggamma = GcN = loss = zero
    U = []
    for i in range(ws.size):
        y, s0, sr = int(ws.labels[i]), int(ws.tokens[i, 0]), int(ws.tokens[i, tab.r])
        XS, XSd, S0 = fw.XS[i], fw.XSd[i], fw.S0[i]
        z = _scores(st, y, XS, fw.mass[i])
        if not z + eps > 0:
            if z + eps <= 0:
                raise ValueError(
                    f"the log-loss -log(z + eps) is undefined: z + eps ∈ {ball_interval(z + eps)} <= 0 for input {i}"
                )
            raise Undecided(
                f"the balls no longer show z + eps > 0 (input {i}: z + eps ∈ {ball_interval(z + eps)})"
            )
        loss -= weights[i] * (z + eps).log()
        g = -weights[i] / (z + eps)  # w_i ℓ'(z_i)
        Vby, Vdy = st.Vb[y], st.Vd[y]
        r = Vby - z
        GVb[y] += g * XS[0]
        Gomega += g * r * XS[0]
        for k in range(1, K):
            GVd[y][k] += g * XSd[k]
            Ge[k] += g * (Vdy[k] * XS[k] + r * XSd[k])
        Ggamma += g * S0 * (r + Vdy[s0])
        GcN -= g * fw.SN[i] * z
        gS = g * S0
        gr = g * fw.Sr[i]
        for k in range(K):
            v = r + Vdy[k]  # V[y, k] - z
            third = zero if k == s0 else gS * (Vdy[k] - Vdy[s0])
            if tab.r == 0:  # (Qh, 1) form: exactly 0 while the logits are symmetric
                h = gS * v
                U.append([tab.Qh[k][s0] * h, h, third])
            else:
                U.append([gr * tab.Q[k][sr] * v, gS * v, third])
    C = (ws.AT * arb_mat(U)).entries()  # (L·3,) row-major: three per-position sums
    # Gd_j = Σ_i (δ_ij - δ_i1) = Σ_i g_i [(S_ij - S_i1)(V[y, s_ij] - z) + S_i1 (Vd[y, s_ij] - Vd[y, s_i1])]
    second = tab.Fh if tab.r == 0 else [arb(-1)] * L
    Gd = [zero] + [tab.Fe[j] * C[3 * j] + second[j] * C[3 * j + 1] + C[3 * j + 2] for j in range(1, L)]
    em = eta * mu
    new = State(
        Vb=[v - eta * gv for v, gv in zip(st.Vb, GVb)],
        Vd=[[zero] + [v - eta * gv for v, gv in zip(row[1:], grow[1:])] for row, grow in zip(st.Vd, GVd)],
        omega=st.omega - em * Gomega,
        e=[zero] + [x - em * gx for x, gx in zip(st.e[1:], Ge[1:])],
        gamma=st.gamma - em * Ggamma,
        d=[zero] + [x - em * gx for x, gx in zip(st.d[1:], Gd[1:])],
        cN=st.cN - em * GcN,
    )
    return loss, new


class Undecided(ArithmeticError):
    """The balls cannot decide what the next step needs (the log-loss domain z + ε > 0, a ReLU input's sign):
    the run ends there, inconclusive. ``settled``: the undecided ball was already tight (narrower than 2^-64),
    so a higher precision is not what it lacks (``automatic_precision`` keeps such a run as it is)."""

    def __init__(self, message: str, settled: bool = False) -> None:
        super().__init__(message)
        self.settled = settled


#: The models the reduced ball engine runs (its entry in ``rwtoolkit.engines.SPECIALISATIONS``).
REDUCED_MODELS = ("one_layer",)


def run_trajectory(
    task: Any,
    model: Any,
    steps: int,
    eta: object = 1,
    eps: object = "1/10",
    mu: object = 1,
    *,
    prec: int | None = None,
    walks: Walks | None = None,
    keep: Callable[[int], bool] | None = None,
    progress: bool = False,
    init: str = "zero",
    objective: str | None = None,
    optimizer: Any = None,
    schedule: Any = None,
    stages: Any = None,
) -> BallTrajectory:
    """The reduced ball engine: GD of ``one_layer`` from zero in reduced coordinates, every quantity a ball.

    The one signature of the ball engines (``_trajectory.py``): the training and evaluation sets are
    ``walks`` (default the task's population, both), the positions any P with PᵀP = μI (the caller encloses
    P's Gram matrix), ``prec`` bits (None: ``automatic_precision``), recorded at the steps ``keep`` selects
    (default all) and the last. If the balls no longer show z + ε > 0 the run stops (``stopped``) with the
    steps recorded so far. ValueError for another model, ``init`` other than ``"zero"``, an ``objective``, an
    ``optimizer`` other than plain GD, a ``schedule`` or ``stages`` (the generic engine runs them).

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> tr = run_trajectory(CircleWalk(3, 4, 1), get_model("one_layer"), 1, prec=64)
    >>> tr.records[0].train_loss.overlaps(-arb("0.1").log()), [r.step for r in tr.records], tr.symmetry
    (True, [0, 1], [(True, True), (True, True)])
    """
    if model.name not in REDUCED_MODELS:
        raise ValueError(
            f"model={model.name!r}: the reduced ball engine runs {', '.join(REDUCED_MODELS)} only "
            "(rwtoolkit.engines.select gives the generic ball engine for another model)"
        )
    if init != "zero" or objective is not None:
        raise ValueError(
            f"init={init!r}, objective={objective!r}: the reduced ball engine runs from zero on the loss of its "
            "prediction (rwtoolkit.engines.select gives the generic ball engine for another start)"
        )
    if optimizer is not None and not getattr(optimizer, "plain", False):
        raise ValueError(
            f"optimizer={getattr(optimizer, 'name', optimizer)!r}: the reduced ball engine runs plain gradient "
            "descent (rwtoolkit.engines.select gives the generic ball engine for another rule)"
        )
    if schedule is not None or stages is not None:
        raise ValueError(
            "schedule, stages: the reduced ball engine runs a constant rate on every parameter "
            "(rwtoolkit.engines.select gives the generic ball engine for them)"
        )
    train_set, eval_set = walks if walks is not None else (WalkSet.population(task.population()),) * 2
    mu_q, eta_q, eps_q = rational(mu), rational(eta), rational(eps)

    def run(bits: int) -> BallTrajectory:
        return _run(train_set, eval_set, mu_q, eta_q, eps_q, steps, bits, keep, progress)

    traj = automatic_precision(run, steps) if prec is None else run(prec)
    traj.model = model
    return traj


def _run(
    train_set: WalkSet,
    eval_set: WalkSet,
    mu: Fraction,
    eta: Fraction,
    eps: Fraction,
    steps: int,
    prec: int,
    keep: Callable[[int], bool] | None,
    progress: bool,
) -> BallTrajectory:
    """GD from zero for ``steps`` steps at ``prec`` bits; records at the steps ``keep`` selects and the last."""
    same = eval_set is train_set
    with precision(prec):
        mu_b, eta_b, eps_b = exact_ball(mu), exact_ball(eta), exact_ball(eps)
        w_train = [exact_ball(w) for w in train_set.weights]
        w_eval = w_train if same else [exact_ball(w) for w in eval_set.weights]
        st = State.zero(train_set.K, train_set.tokens.shape[1])
        symmetry: list[tuple[bool, bool]] = []
        traj = BallTrajectory(prec, mu, symmetry=symmetry)
        bar = tqdm(
            total=steps,
            disable=not (progress and sys.stderr.isatty()),
            desc=f"rw certify ({prec} bits)",
            unit="step",
        )
        for t in range(steps + 1):
            symmetry.append(st.symmetric())
            tab = _Tables.build(st, mu_b)
            fw = _forward(train_set, st, tab)
            try:
                loss, new = _step(train_set, st, tab, fw, w_train, eta_b, mu_b, eps_b)
            except Undecided as why:
                traj.stopped = f"step {t} at {prec} bits: {why}"
                break
            if keep is None or keep(t) or t == steps:
                ev = _evaluate(train_set, st, tab, fw, w_train)
                test = ev if same else _evaluate(eval_set, st, tab, _forward(eval_set, st, tab), w_eval)
                reduced = Reduced(st, st.V, st.w_tok, st.c)
                traj.records.append(StepRecord(t, loss, test, ev, reduced=reduced))
            if t < steps:
                st = new
                bar.update(1)
        bar.close()
    return traj


def predictions_array(ev: Readout) -> np.ndarray:
    """Predictions as an int array with -1 where undecided."""
    return np.array([-1 if p is None else p for p in ev.predictions], dtype=np.int64)
