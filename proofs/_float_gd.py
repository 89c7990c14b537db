"""Exact-population gradient descent in float64 for circle walks, in the reduced coordinates of MATH.md §3.

From zero init W(t) = w(t)x̃_Nᵀ/μ with w = (w_tok, Σ_j c_j p_j), so logit_j = w_tok[s_j] + μ c_j (j < N),
logit_N = μ c_N, and one step with δ_j = ℓ'(z) S_j (a_j − z), a_j = V[y, s_j], z = e_yᵀf is
  V −= η E[ℓ'(z) e_y (XS)ᵀ],  w_tok −= ημ E[Σ_{j<N} δ_j e_{s_j}],  c −= ημ E[δ]   (Lemma B.1).
Used for the evidence certificates (C.5, Theorem 3.1): a step costs O(#walks · N), so thousands of
steps on populations of 10^4 walks take seconds. Log-loss ℓ(z) = −log(z + ε). Cross-checked against
``rwsymbolic.derive`` (exact) and ``rwnumeric.train`` (float64) in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rwtasks import CircleWalk


@dataclass
class Run:
    """Metrics recorded at the steps in ``steps`` (all arrays indexed like ``steps``)."""

    K: int
    N: int
    p: float
    mu: float
    eta: float
    eps: float
    steps: list[int] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    log10_one_minus_parent: list[float] = field(default_factory=list)  # log10(E[1 − S_{N−1}])
    v_err_pi: list[float] = field(default_factory=list)  # ‖V/‖V‖_F − Πᵀ/‖Πᵀ‖_F‖_F
    v_err_sqrt: list[float] = field(default_factory=list)  # same against √Πᵀ (entrywise)
    f_err_pi: list[float] = field(default_factory=list)  # E‖f/‖f‖ − Πᵀx_{N−1}/‖·‖‖
    f_err_sqrt: list[float] = field(default_factory=list)  # same against √(Πᵀx_{N−1})
    V: np.ndarray | None = None  # V(steps)
    c: np.ndarray | None = None  # positional coefficients c(steps): logit_j = w_tok[s_j] + μ c_j


def _direction_error(a: np.ndarray, b: np.ndarray, axis=None) -> np.ndarray:
    na = np.linalg.norm(a, axis=axis, keepdims=axis is not None)
    nb = np.linalg.norm(b, axis=axis, keepdims=axis is not None)
    return np.linalg.norm(a / na - b / nb, axis=axis)


def _lse(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1)
    return m + np.log(np.exp(x - m[:, None]).sum(axis=1))


def _circulant_mean(G: np.ndarray) -> np.ndarray:
    """Average of G over the K simultaneous rotations of rows and columns (the circulant projection)."""
    K = G.shape[0]
    d = (np.arange(K)[:, None] - np.arange(K)[None, :]) % K
    return (np.bincount(d.ravel(), weights=G.ravel(), minlength=K) / K)[d]


def _forward(V, w_tok, c, mu, tok):
    n, L = tok.shape
    K = V.shape[0]
    logits = np.concatenate([w_tok[tok] + mu * c[None, :-1], np.full((n, 1), mu * c[-1])], axis=1)  # (n, N)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    S = e / e.sum(axis=1, keepdims=True)  # (n, N) attention
    flat = (np.arange(n)[:, None] * K + tok).ravel()
    XS = np.bincount(flat, weights=S[:, :-1].ravel(), minlength=n * K).reshape(n, K)  # (n, K) attended token
    return logits, S, XS, XS @ V.T  # f: (n, K)


def run_gd(K: int, N: int, p: str, steps: int, record: list[int], mu: float = 500.0, eta: float = 1.0,
           eps: float = 0.1, tie_rtol: float = 1e-9) -> Run:
    """Full-batch GD from zero init on the exact population of CircleWalk(K, N, p), log-loss, float64.

    The population is rotation invariant, so (exactly, as in ``rwsymbolic.derive(rotate=True)``) the
    gradients are computed on the walks starting at node 0 and projected: V's onto circulant matrices,
    w_tok's onto constants. Metrics at the ``record`` steps use the full population.

    >>> r = run_gd(5, 4, "7/10", 3, [0, 3], mu=2.0)
    >>> r.accuracy[0]  # zero init: all scores tie, the smallest label is predicted
    0.2
    """
    walk = CircleWalk(K, N, p)
    pop = walk.population()
    tok_all, y_all, w_all = pop.tokens, pop.labels, pop.float_probs()  # (n, N−1), (n,), (n,)
    rooted = tok_all[:, 0] == 0
    tok, y, w = tok_all[rooted], y_all[rooted], w_all[rooted] * K  # law of the walk given s_1 = 0
    n = len(y)
    Pi = walk.transition_matrix_float()
    V = np.zeros((K, K))
    w_tok, c = np.zeros(K), np.zeros(N)
    out = Run(K, N, float(walk.p), mu, eta, eps)
    rows = np.arange(n)
    record_set = set(record)
    for t in range(steps + 1):
        if t in record_set:
            _record(out, t, V, w_tok, c, mu, tok_all, y_all, w_all, Pi, N, tie_rtol)
        if t == steps:
            break
        logits, S, XS, f = _forward(V, w_tok, c, mu, tok)
        z = f[rows, y]
        if (z + eps <= 0).any():
            raise ValueError("the log-loss is undefined: z + eps <= 0 (lower eta)")
        g = -1.0 / (z + eps)  # ℓ'(z)
        gV = np.bincount((y[:, None] * K + np.arange(K)).ravel(), weights=((w * g)[:, None] * XS).ravel(),
                         minlength=K * K).reshape(K, K)  # E[ℓ' e_y (XS)ᵀ] on rooted walks
        a = np.concatenate([V[y[:, None], tok], np.zeros((n, 1))], axis=1)  # a_j = V[y, s_j], a_N = 0
        delta = (w * g)[:, None] * S * (a - z[:, None])  # (n, N)
        g_tok = np.bincount(tok.ravel(), weights=delta[:, :-1].ravel(), minlength=K)
        V = V - eta * _circulant_mean(gV)
        w_tok = w_tok - eta * mu * np.full(K, g_tok.mean())
        c = c - eta * mu * delta.sum(axis=0)
    out.V, out.c = V, c
    return out


def _record(out, t, V, w_tok, c, mu, tok, y, w, Pi, N, tie_rtol) -> None:
    logits, S, XS, f = _forward(V, w_tok, c, mu, tok)
    best = f.max(axis=1, keepdims=True)
    pred = np.argmax(f >= best - tie_rtol * np.abs(best), axis=1)  # smallest maximal index
    out.steps.append(t)
    out.accuracy.append(float(w @ (pred == y)))
    # log(1 − S_parent) = lse(other logits) − lse(all logits): exact even when 1 − S_parent underflows
    lo = _lse(np.delete(logits, N - 2, axis=1)) - _lse(logits)
    top = lo.max()
    out.log10_one_minus_parent.append(float((top + np.log(w @ np.exp(lo - top))) / np.log(10)))
    target = Pi[tok[:, -1]]  # (n, K): f_OPT = Πᵀx_{N−1}
    if np.linalg.norm(V) > 0 and (np.linalg.norm(f, axis=1) > 0).all():
        out.v_err_pi.append(float(_direction_error(V, Pi.T)))
        out.v_err_sqrt.append(float(_direction_error(V, np.sqrt(Pi.T))))
        out.f_err_pi.append(float(w @ _direction_error(f, target, axis=1)))
        out.f_err_sqrt.append(float(w @ _direction_error(f, np.sqrt(target), axis=1)))
    else:
        for values in (out.v_err_pi, out.v_err_sqrt, out.f_err_pi, out.f_err_sqrt):
            values.append(float("nan"))
