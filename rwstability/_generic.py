"""``rw stability --model NAME``: is a registered model's stuck manifold stable? Generic, from its definition.

Statement. Split θ = (θ_on, θ_off), θ_off being the parameters that full-batch GD from the zero
initialisation leaves exactly zero at every step of the run (for ``key_query`` W_K and W_Q: their gradients
W_Q Gᵀ and W_K G vanish when both factors do). The stuck manifold 𝓜 = {θ_off = 0} is then invariant under
the GD map F(θ) = θ − η∇L(θ), F's Jacobian at a point θ*(t) of 𝓜 is block triangular, and an off-manifold
perturbation δ evolves to first order by δ(t+1) = A_t δ(t),

    A_t = ∂F_off/∂θ_off (θ*(t)) = I − η ∂²L/∂θ_off² (θ*(t)),

along the float64 trajectory θ*(t) of ``rwmodels.descend`` from zero on the exact population (positions
``rational_positions(N, μ)`` as floats). A_t is ``torch.func.jacrev`` of the tape's gradient of the model's one
forward pass; ``leak`` = ‖∂F_off/∂θ_on‖₂ checks the block triangularity (0 exactly at every step here).
Φ_T = A_{T−1}⋯A_0 bounds every perturbation: ‖δ(T)‖ ≤ σ_max(Φ_T)‖δ(0)‖. Verdict: ``unstable`` if
ln σ_max(Φ_T) > T·MARGIN, ``stable`` if < −T·MARGIN, else ``marginal``. MARGIN = 1e-9 per step: A_t is computed
in float64 from population sums of at most a few 10⁵ terms, so a zero Hessian comes back with rounding
≲ 1e-12 (A_0 = I exactly: V(0) = 0); growth below 1e-9 per step is rounding, not dynamics.

For ``key_query``, ∂²L/∂θ_off² at W_K = W_Q = 0 is [[0, G], [Gᵀ, 0]] per head row, G = ∂L/∂W of the merged
model at (V*(t), W = 0): A_t's eigenvalues are 1 ± η σ_i(G_t), its spectral radius 1 + η σ_max(G_t), a saddle
as soon as G_t ≠ 0 (tests/test_stability_models.py checks this against ``one_layer``'s gradient).

Escape. Every parameter starts i.i.d. N(0, σ²) (numpy ``default_rng(seed)``, cast to the dtype) and GD runs
with ``descend`` in that dtype. With r(t) = ‖θ_off(t)‖ / ‖θ_off(0)‖ (Euclidean norm of all off-manifold
entries together, √(‖W_K‖²_F + ‖W_Q‖²_F): the norm σ_max(Φ_t) bounds), escape is the first t ≥ 1 with
r(t) > 1/τ, τ = ``--threshold`` (default 1e-3: a thousandfold growth). The linear prediction is the first
t ≥ 1 with σ_max(Φ_t) > 1/τ, the earliest step first-order dynamics allows (r(t) ≤ σ_max(Φ_t)).

>>> from rwtasks import CircleWalk
>>> r = model_stability_report(CircleWalk(3, 4, 1), "key_query", steps=3, sigmas=[1e-3], seeds=1)
>>> r["model"], r["manifold"]["parameters"], r["verdict"]["kind"]
({'name': 'key_query', 'd': 2}, ['W_K', 'W_Q'], 'unstable')
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from rwmodels import Batch, ElementLoss, Model, batch, descend, evaluate, get_model, rational_positions
from rwstability._escape import DEFAULT_THRESHOLD, first_above
from rwstability._reduced import population_arrays
from rwstability._report import check_run_options
from rwtasks import CircleWalk, FiniteTask

#: Per-step log-growth below which the off-manifold block is rounding, not dynamics (module text).
MARGIN = 1e-9
#: Refusal limits: run length, parameters, and the estimated work in multiply-adds
#: (measured: about 30 s per 1e11 on one CPU thread, qa1 at d = 2) and memory of one step's Jacobian.
MAX_STEPS = 2000
MAX_PARAMS = 2000
MAX_WORK = 2e11


def rational_mu(mu: float) -> Fraction:
    """The μ of ``rational_positions``: the decimal as written, or its nearest fraction of denominator ≤ 10⁴.

    >>> rational_mu(2.5), rational_mu(31.622776601683793)
    (Fraction(5, 2), Fraction(282676, 8939))
    """
    exact = Fraction(repr(float(mu)))
    return exact if exact.denominator <= 10**4 else exact.limit_denominator(10**4)


def _sizes(model: Model, task: CircleWalk | FiniteTask, steps: int, runs: int) -> tuple[int, float, int]:
    """(parameters, multiply-adds, bytes) of a report: jacrev costs one reverse pass per parameter per step."""
    n = len(population_arrays(task)[1])
    M = 4 * -(-task.N // 4)
    D = task.K + M
    params = sum(math.prod(s) for s in model.shapes(task.K, D, task.N).values())
    forward = n * task.N * params  # each parameter entry meets each input column at most once
    work = float(steps) * 3 * forward * (params + runs)
    memory = 8 * 8 * params * n * task.N * max(D, task.K)  # jacrev's batched intermediates, 8 alive
    return params, work, memory


def check_model_report_args(
    task: object,
    model: Model,
    steps: int,
    sigmas: Sequence[float],
    seeds: int,
    threshold: float,
    mus: Sequence[float] = (1.0,),
    dtypes: Sequence[str] = ("float64",),
) -> CircleWalk | FiniteTask:
    """One-line ValueErrors for every bad argument and for a report estimated too large, before any work.

    >>> from rwtasks import CircleWalk
    >>> check_model_report_args(CircleWalk(3, 4, "3/10"), get_model("key_query"), 4, [1e-3], 1, 1e-3).N
    4
    """
    from rwio import check_memory, format_bytes

    if not isinstance(task, (CircleWalk, FiniteTask)):
        raise ValueError(f"task={task!r} is not a circle walk or a finite task")  # noqa: TRY004 - usage error
    if task.symbols:
        raise ValueError("p is a symbol (give --p): rw stability needs a number p")
    n = len(population_arrays(task)[1])  # symbolic probabilities are refused here, in one line
    check_run_options(steps, sigmas, seeds, threshold, mus, dtypes)
    params, work, memory = _sizes(model, task, steps, len(sigmas) * seeds * len(dtypes))
    hyper = ", ".join(f"{k}={v}" for k, v in model.hyperparameters.items())
    where = f"--model {model.name}" + (f" ({hyper})" if hyper else "")
    if params > MAX_PARAMS:
        raise ValueError(
            f"{where} has {params} parameters, above {MAX_PARAMS}: use a smaller K, N or --head-dim"
        )
    if work * len(mus) > MAX_WORK:
        raise ValueError(
            f"{where}: about {work * len(mus):.1e} multiply-adds ({params} parameters, {n} inputs, "
            f"{steps} steps, {len(mus)} mu), above {MAX_WORK:.0e}: use fewer --steps, --sigmas, --seeds or a smaller task"
        )
    check_memory(memory, f"{where} (one step's Jacobian, {format_bytes(memory)})", "use a smaller K or N")
    return task


def _flat(values: Mapping[str, Any], names: Sequence[str]) -> Any:
    import torch

    parts = [values[n].reshape(-1) for n in names]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64)


def _unflat(x: Any, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    out, start = {}, 0
    for name, shape in shapes.items():
        size = math.prod(shape)
        out[name] = x[start : start + size].reshape(shape)
        start += size
    return out


def off_manifold_jacobian(
    model: Model,
    arithmetic: Any,
    params: Mapping[str, Any],
    data: Batch,
    loss: ElementLoss,
    eta: float,
    off: Sequence[str],
) -> tuple[Any, Any]:
    """(A, B) at ``params``: A = ∂F_off/∂θ_off, B = ∂F_off/∂θ_on, F(θ) = θ − η∇L(θ), θ flattened in ``params`` order.

    ∇L is the tape's gradient (``rwmodels.evaluate``) on torch tensors; both blocks are ``torch.func.jacrev``.
    """
    from torch.func import jacrev

    on = [n for n in params if n not in off]
    shapes = {n: tuple(params[n].shape) for n in params}

    def f_off(x_on: Any, x_off: Any) -> Any:
        state = {**_unflat(x_on, {n: shapes[n] for n in on}), **_unflat(x_off, {n: shapes[n] for n in off})}
        gradient = evaluate(model, arithmetic, state, data, loss).gradient
        assert gradient is not None
        return x_off - eta * _flat(gradient, off)

    B, A = jacrev(f_off, argnums=(0, 1))(_flat(params, on), _flat(params, off))
    return A, B


def _population(task: CircleWalk | FiniteTask, arithmetic: Any, P: np.ndarray) -> Batch:
    tokens, labels, probs = population_arrays(task)
    return batch(arithmetic, tokens, labels, [float(q) for q in probs], task.K, arithmetic.asarray(P))


def _per_mu(
    task: CircleWalk | FiniteTask,
    model: Model,
    steps: int,
    eta: float,
    mu: float,
    eps: float,
    sigmas: Sequence[float],
    seeds: int,
    threshold: float,
    dtypes: Sequence[str],
) -> dict[str, Any]:
    import torch

    from rwnumeric import TensorLoss, TorchArithmetic

    mu_q = rational_mu(mu)
    P = np.asarray(rational_positions(task.N, mu_q), dtype=np.float64)
    D = task.K + P.shape[0]
    ar, loss = TorchArithmetic(torch.float64), TensorLoss("log", eps)
    data = _population(task, ar, P)
    states = descend(model, ar, model.zeros(ar, task.K, D, task.N), data, loss, eta, steps)
    if not all(bool(torch.isfinite(v).all()) for s in states for v in s.params.values()):
        raise ValueError(f"the trajectory from zero diverged within {steps} steps (lower --eta)")
    off = [n for n in states[0].params if all(not bool(s.params[n].any()) for s in states)]
    if not off:
        raise ValueError(
            f"--model {model.name}: GD from zero moves every parameter, and the generic report linearises only "
            "around parameters that stay exactly zero (a symmetric stuck manifold is linearised for one_layer; "
            "rw explore and rwsymbolic.stuck_proof decide it for any model)"
        )
    rows, log_phi, Phi = [], 0.0, None
    for t, state in enumerate(states[:-1]):
        A, B = off_manifold_jacobian(model, ar, state.params, data, loss, eta, off)
        Phi = A if Phi is None else A @ Phi
        s = float(torch.linalg.matrix_norm(Phi, ord=2))
        if not (math.isfinite(s) and s > 0):
            raise ValueError(f"the off-manifold product vanished or overflowed at step {t} (lower --eta)")
        Phi, log_phi, previous = Phi / s, log_phi + math.log(s), log_phi
        rows.append(
            {
                "t": t,
                "radius": float(torch.linalg.eigvals(A).abs().max()),
                "sigma_max": float(torch.linalg.matrix_norm(A, ord=2)),
                "log_sigma_Phi": log_phi,
                "growth": math.exp(log_phi - previous),
                "leak": float(torch.linalg.matrix_norm(B, ord=2)) if B.numel() else 0.0,
            }
        )
    tol = MARGIN * steps
    kind = "unstable" if log_phi > tol else "stable" if log_phi < -tol else "marginal"
    line = (
        f"{kind} (off-manifold growth sigma_max(Phi_T) = 10^{log_phi / math.log(10):.3f} over {steps} steps, "
        f"ln {log_phi:+.3e}, marginal band ±{tol:.1e}; largest radius of A_t {max(r['radius'] for r in rows):.6f})"
    )
    predicted = first_above([0.0] + [r["log_sigma_Phi"] for r in rows], math.log(1 / threshold))
    gaussian = []
    for sigma in sigmas:
        for dtype in dtypes:
            runs = [
                _escape(task, model, P, eps, eta, steps, sigma, dtype, k, off, threshold)
                for k in range(seeds)
            ]
            gaussian.append({"sigma": sigma, "dtype": dtype, "predicted": predicted, **_columns(runs)})
    return {
        "mu": mu,
        "mu_rational": str(mu_q),
        "verdict": {"kind": kind, "log_growth": log_phi, "tolerance": tol, "line": line, "mu": mu},
        "max_leak": max(r["leak"] for r in rows),
        "off_parameters": off,
        "off_dim": int(sum(states[0].params[n].numel() for n in off)),
        "steps": rows,
        "escape": {"quantity": "off_manifold_growth", "gaussian": gaussian},
    }


def _columns(runs: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {key: [r[key] for r in runs] for key in ("measured", "final_growth", "final_attention_deviation")}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _escape(
    task: CircleWalk | FiniteTask,
    model: Model,
    P: np.ndarray,
    eps: float,
    eta: float,
    steps: int,
    sigma: float,
    dtype: str,
    seed: int,
    off: Sequence[str],
    threshold: float,
) -> dict[str, Any]:
    """One Gaussian-init run: its escape step (None within the run), final r(T) and max |S − 1/N| at T."""
    import torch

    from rwnumeric import TensorLoss, TorchArithmetic

    ar = TorchArithmetic(getattr(torch, dtype))
    rng = np.random.default_rng(seed)
    init = {
        n: ar.asarray(sigma * rng.standard_normal(s))
        for n, s in model.shapes(task.K, P.shape[0] + task.K, task.N).items()
    }
    states = descend(model, ar, init, _population(task, ar, P), TensorLoss("log", eps), eta, steps)
    norms = [math.sqrt(sum(float((s.params[n].double() ** 2).sum()) for n in off)) for s in states]
    r = [x / norms[0] for x in norms]
    return {
        "measured": first_above(r, 1 / threshold),
        "final_growth": _finite(r[-1]),
        "final_attention_deviation": _finite(float((states[-1].S.double() - 1 / task.N).abs().max())),
    }


def model_stability_report(
    task: CircleWalk | FiniteTask,
    model: Model | str = "key_query",
    steps: int = 200,
    eta: float = 1.0,
    eps: float = 0.1,
    sigmas: Sequence[float] = (1e-2, 1e-4, 1e-6, 1e-8),
    seeds: int = 2,
    threshold: float = DEFAULT_THRESHOLD,
    mus: Sequence[float] = (1.0,),
    dtypes: Sequence[str] = ("float64",),
) -> dict[str, Any]:
    """The off-manifold linearisation, verdict and escape table of ``model`` (schema ``stability_generic``).

    One block of ``results`` per μ; the headline ``verdict`` is the first's (see the module text).
    """
    from rwstability._report import task_info

    model = get_model(model) if isinstance(model, str) else model
    mu_list = [float(m) for m in mus]
    check_model_report_args(task, model, steps, sigmas, seeds, threshold, mu_list, dtypes)
    results = [_per_mu(task, model, steps, eta, m, eps, sigmas, seeds, threshold, dtypes) for m in mu_list]
    return {
        "model": model.describe(),
        "task": task_info(task),
        "config": {
            "steps": steps,
            "eta": eta,
            "mus": mu_list,
            "eps": eps,
            "sigmas": [float(s) for s in sigmas],
            "dtypes": list(dtypes),
            "seeds": seeds,
            "threshold": threshold,
            "margin_per_step": MARGIN,
        },
        "manifold": {
            "parameters": results[0]["off_parameters"],
            "definition": "the parameters GD from zero leaves exactly zero at every step, all set to 0",
        },
        "verdict": results[0]["verdict"],
        "results": results,
    }
