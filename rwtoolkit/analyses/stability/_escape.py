"""Predicted escape from the manifold (linear theory) and measured escape (``rwtoolkit.engines.numeric.train``).

The symmetry-breaking quantity is V's relative distance from the manifold, ρ(t) = ‖V - m(V)‖_F / ‖V‖_F over
the entries θ keeps (labels × occurring tokens), m(V) replacing each of the manifold's V-classes by its mean
(``v_residual``). On Lemma D.3's manifold m(V) = mean(V)·1 and ρ is ``ones_residual`` of ``rwtoolkit.engines.numeric``'s
history. Escape is the first t ≥ 1 with ρ(t) > τ.

Prediction. A perturbation's normal component evolves by C_t (``_linear``); its covariance by
Σ_{t+1} = C_t Σ_t C_tᵀ + Q_{t+1}. A Gaussian init N(0, σ²) of V and W gives, in reduced coordinates,
independent entries with variance σ² on V and on c (c_j = p_jᵀ W x̃_N/μ) and σ²μ on w_tok, and Q = 0.
Rounding injects, at every step, independent errors of size u·‖θ*(t)‖/√dim per coordinate (u the unit
roundoff of the dtype), Σ_0 = 0. The predicted ρ(t) is the root-mean-square V-part of the normal
deviation divided by ‖V*(t)‖_F.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from rwtoolkit.analyses.stability._linear import Linearisation
from rwtoolkit.analyses.stability._reduced import Coordinates, population_task
from rwtoolkit.io import Verdict
from rwtoolkit.tasks import CircleWalk

#: Unit roundoff (half the machine epsilon) per dtype.
UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24}
#: Default escape threshold τ on ρ(t) (see ``predict_escape``).
DEFAULT_THRESHOLD = 1e-3


@dataclass(frozen=True)
class Selection:
    """Which solution a run picked by its last step (``selection``).

    ``attended_position``: the token position j (1-based, j < N) with the largest mean attention, and
    ``attention`` that mean; ``v_pattern``: on a circle walk "offset d", the d for which the entries
    V[s+d mod K, s] are largest on average (y = s + d read from an attended token s), else the name of
    the largest entry of V - m(V) (the part of V off the manifold); ``accuracy``: the final test accuracy.
    """

    attended_position: int
    attention: float
    v_pattern: str
    accuracy: float

    def key(self) -> str:
        """The solution's label in a distribution over seeds: "position j, <v_pattern>"."""
        return f"position {self.attended_position}, {self.v_pattern}"


@dataclass(frozen=True)
class Escape:
    """``step``: the first t ≥ 1 with ρ(t) > τ, or None within the run; ``rho``: ρ(t) from t = 0.

    A prediction's ``rho`` stops at its escape step; a measurement's covers the whole run and has the
    ``selection`` of its last step.
    """

    step: int | None
    rho: list[float]
    selection: Selection | None = None


def v_residual(V: np.ndarray, coords: Coordinates) -> float:
    """ρ = ‖V - m(V)‖_F / ‖V‖_F on the active entries of a full K×K V (0 when they are all 0).

    >>> from rwtoolkit.analyses.stability import Coordinates
    >>> v_residual(np.ones((3, 3)), Coordinates(3, 4)), round(v_residual(np.eye(3), Coordinates(3, 4)), 6)
    (0.0, 0.816497)
    """
    act = V[np.ix_(coords.label_rows, coords.token_cols)].ravel()
    dev = act - _class_means(act, coords)
    norm = float(np.linalg.norm(act))
    return 0.0 if norm == 0 else float(np.linalg.norm(dev)) / norm


def _class_means(act: np.ndarray, coords: Coordinates) -> np.ndarray:
    """m(V) on the flat active entries: each V-class replaced by its mean."""
    out = act.copy()
    for members in coords.partition():
        idx = [i for i in members if i < coords.n_V]
        if idx:
            out[idx] = act[idx].mean()
    return out


def selection(
    V: np.ndarray, profile: list[float], accuracy: float, coords: Coordinates, circle: bool
) -> Selection:
    """The ``Selection`` of a final V (K×K) and mean attention profile (N entries)."""
    j = int(np.argmax(profile[: coords.N - 1]))
    if circle:
        K = coords.K
        offsets = [float(np.mean([V[(s + d) % K, s] for s in range(K)])) for d in range(K)]
        pattern = f"offset {int(np.argmax(offsets))}"
    else:
        act = V[np.ix_(coords.label_rows, coords.token_cols)].ravel()
        pattern = coords.name(int(np.argmax(act - _class_means(act, coords))))
    return Selection(j + 1, float(profile[j]), pattern, float(accuracy))


def selection_distribution(escapes: list[Escape]) -> dict[str, int]:
    """How many of the runs that escaped picked each solution (``Selection.key``), most frequent first."""
    counts = Counter(e.selection.key() for e in escapes if e.step is not None and e.selection is not None)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def finite_or_none(x: float) -> float | None:
    """``x`` if it is finite, else None: what a report writes for a value that overflowed or is NaN (JSON
    has no NaN or infinity, and ``rwtoolkit.io.write_json_atomic`` refuses them).

    >>> finite_or_none(0.5), finite_or_none(float("nan")), finite_or_none(float("inf"))
    (0.5, None, None)
    """
    return x if math.isfinite(x) else None


def first_above(rho: list[float], threshold: float = DEFAULT_THRESHOLD) -> int | None:
    """The escape rule: the first t ≥ 1 with ρ(t) > τ (t = 0 never counts), or None.

    Shared by ``predict_escape``, ``measure_escape`` and ``rw sweep``'s escape and symmetry-break steps.

    >>> first_above([0.0, 1e-5, 2e-3, 0.5])
    2
    >>> first_above([0.7, 1e-4], threshold=1e-3) is None
    True
    """
    return next((t for t in range(1, len(rho)) if rho[t] > threshold), None)


def predict_escape(
    lin: Linearisation,
    sigma: float | None = None,
    dtype: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> Escape:
    """Predicted ρ(t) and escape step for a Gaussian init of scale ``sigma`` or for rounding in ``dtype``.

    τ = 1e-3 by default: far above the rounding floor (ρ ≈ 1e-7 in float32, 1e-16 in float64), so the
    crossing is a property of the dynamics, and small enough that the neglected second-order terms
    (relative size ≈ ρ) are 0.1% of the linear ones when it is crossed.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> from rwtoolkit.analyses.stability import linearise
    >>> lin = linearise(CircleWalk(3, 4, 1), steps=20)
    >>> predict_escape(lin, sigma=1e-3).step
    1
    """
    if (sigma is None) == (dtype is None):
        raise ValueError("give exactly one of sigma (Gaussian init) and dtype (rounding)")
    coords = lin.coords
    nV = coords.n_V
    B = lin.basis  # (dim, n)
    n = B.shape[1]
    PV = B[:nV]  # V-rows of the normal basis
    if sigma is not None:
        if not (math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma={sigma!r} must be a finite number > 0")
        var = sigma**2 * coords.metric(lin.mu)  # σ² on V and c, σ²μ on w_tok
        Sigma = B.T @ (var[:, None] * B)
        u = 0.0
    else:
        if dtype not in UNIT_ROUNDOFF:
            raise ValueError(f"dtype={dtype!r} is not one of {', '.join(UNIT_ROUNDOFF)}")
        Sigma = np.zeros((n, n))
        u = UNIT_ROUNDOFF[dtype]
    rho = []
    for t, theta in enumerate(lin.thetas):
        normV = float(np.linalg.norm(theta[:nV]))
        dev = math.sqrt(max(float(np.trace(PV @ Sigma @ PV.T)), 0.0))
        rho.append(dev / normV if normV > 0 else 1.0)
        if t >= 1 and rho[-1] > threshold:
            break  # escaped: past here the linear growth is meaningless (and can overflow)
        if t < len(lin.C):
            C = lin.C[t]
            Sigma = C @ Sigma @ C.T
            q = (u * float(np.linalg.norm(lin.thetas[t + 1]))) ** 2 / coords.dim
            Sigma = Sigma + q * np.eye(n)
    return Escape(first_above(rho, threshold), rho)


def extrapolate_escape(
    lin: Linearisation, predicted: Escape, threshold: float = DEFAULT_THRESHOLD
) -> int | None:
    """The step at which the late growth rate carries a prediction's last ρ past τ, beyond the linearised steps.

    Applies when ``predicted`` (``predict_escape`` on ``lin``) does not cross τ within ``len(lin.C)`` steps,
    the manifold is repelling (``verdict``) and the last predicted ρ is above 0: then ρ(T + k) ≈ ρ(T)·e^{rate·k}
    and the crossing is T + ⌈ln(τ/ρ(T))/rate⌉. None otherwise (already crossed, or nothing grows). Used by
    ``stability_summary`` and by the sensitivity study of ``rw reproduce``; callers mark the step as
    extrapolated.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> from rwtoolkit.analyses.stability import linearise
    >>> lin = linearise(CircleWalk(3, 4, 1), steps=4, mu=500.0)
    >>> rounding = predict_escape(lin, dtype="float64")
    >>> rounding.step is None, extrapolate_escape(lin, rounding)
    (True, 8)
    >>> predict_escape(linearise(CircleWalk(3, 4, 1), steps=12, mu=500.0), dtype="float64").step
    7
    """
    from rwtoolkit.analyses.stability._linear import verdict

    v = verdict(lin)
    if predicted.step is not None or v.verdict is not Verdict.FAILS or predicted.rho[-1] <= 0:
        return None
    return len(lin.C) + math.ceil(math.log(threshold / predicted.rho[-1]) / v.rate)


def measure_escape(
    lin: Linearisation,
    sigma: float | None = None,
    dtype: str = "float64",
    seed: int = 0,
    threshold: float = DEFAULT_THRESHOLD,
    gram: str = "ideal",
) -> Escape:
    """ρ(t) and the final ``Selection`` of a real ``rwtoolkit.engines.numeric.train`` run (exact population, full W, ‖p_j‖² = μ).

    ``sigma`` None: zero init, so only rounding breaks the symmetry; else a Gaussian init of scale σ.
    ``gram``: "ideal" (PᵀP = μI exactly, one-hot P with M = N) or "computed" (the float Gram matrix of a
    sine P with M = 4N, whose ~1e-16 off-diagonal entries are an asymmetry rounding alone does not make).
    """
    from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train

    task = lin.task
    coords = lin.coords
    steps = len(lin.C)
    if gram == "ideal":
        model = ModelConfig(K=task.K, N=task.N, M=task.N, pos="onehot", mu=lin.mu)
    elif gram == "computed":
        model = ModelConfig(K=task.K, N=task.N, M=4 * task.N, pos="sine", mu=lin.mu, gram="computed")
    else:
        raise ValueError(f"gram={gram!r} is not one of ideal, computed")
    cfg = TrainConfig(
        steps=steps,
        eta=lin.eta,
        eps=lin.eps,
        init="zero" if sigma is None else "gaussian",
        sigma=0.01 if sigma is None else sigma,
        seed=seed,
        population=True,
        dtype=dtype,
        threads=1,
    )

    def observe(t: int, net) -> float:
        return v_residual(net.V.detach().cpu().numpy().astype(np.float64), coords)

    result = train(population_task(task), model, cfg, progress=False, observe=observe)
    rho = [float(result.observations[t]) for t in range(steps + 1)]
    final_V = np.asarray(result.final["V"], dtype=np.float64)
    chosen = selection(
        final_V,
        result.final["attention_profile"],
        result.history[-1]["test_accuracy"],
        coords,
        isinstance(task, CircleWalk),
    )
    return Escape(first_above(rho, threshold), rho, chosen)


@dataclass(frozen=True)
class StabilitySummary:
    """The stability of a stuck task's manifold in one line: verdict, rate, predicted escapes.

    ``rounding``: the predicted escape step at float64 rounding (None: not within ``steps``);
    ``rounding_extrapolated``: when None and the manifold repels, the step at which the late rate would
    carry the predicted ρ from its value at ``steps`` to τ (an extrapolation, marked as such);
    ``gaussian``: predicted escape step per Gaussian init scale σ.
    """

    kind: str
    rate: float
    tolerance: float
    steps: int
    eta: float
    mu: float
    eps: float
    rounding: int | None
    rounding_extrapolated: int | None
    gaussian: dict[float, int | None]

    def line(self) -> str:
        """E.g. "repelling (rate +3.4e-02/step); predicted escape at float64 rounding: step 170"."""
        if self.rounding is not None:
            when = f"step {self.rounding}"
        elif self.rounding_extrapolated is not None:
            when = f"about step {self.rounding_extrapolated} (extrapolated at the late rate)"
        else:
            when = f"none within {self.steps} steps"
        return (
            f"{self.kind} (rate {self.rate:+.2e}/step at eta={self.eta:g}, mu={self.mu:g}); "
            f"predicted escape at float64 rounding: {when}"
        )


def stability_summary(
    lin: Linearisation, sigmas: tuple[float, ...] = (), threshold: float = DEFAULT_THRESHOLD
) -> StabilitySummary:
    """Verdict, rate and predicted escapes (float64 rounding; each σ) of one linearisation.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> from rwtoolkit.analyses.stability import linearise
    >>> s = stability_summary(linearise(CircleWalk(3, 4, 1), steps=12, mu=500.0), sigmas=(1e-8,))
    >>> s.kind, s.rounding, s.gaussian
    ('repelling', 7, {1e-08: 3})
    """
    from rwtoolkit.analyses.stability._linear import verdict

    v = verdict(lin)
    rounding = predict_escape(lin, dtype="float64", threshold=threshold)
    extrapolated = extrapolate_escape(lin, rounding, threshold)
    gaussian = {s: predict_escape(lin, sigma=s, threshold=threshold).step for s in sigmas}
    return StabilitySummary(
        v.kind,
        v.rate,
        v.tolerance,
        len(lin.C),
        lin.eta,
        lin.mu,
        lin.eps,
        rounding.step,
        extrapolated,
        gaussian,
    )
