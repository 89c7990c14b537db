"""``rw stability --model NAME``: is a registered model's stuck manifold stable? Generic, from its definition.

The generic linearisation of ``rw stability`` (``rwtoolkit.analyses.stability._views``): ``ModelView`` is what the one
report builder ``stability_report`` reads for every model of record but the paper's, whose Lemma D.3 reduced map
is the registered specialisation of this one (``_lemma.ReducedView``).

Statement. The report linearises the GD map F(θ) = θ − η∇L(θ) around an invariant linear manifold 𝓜
(``rwtoolkit.analyses.stability._manifold``): the *zero* manifold {θ_off = 0}, θ_off the parameters full-batch GD from zero
leaves exactly zero at every step of the run (key_query's W_K and W_Q: their gradients W_Q Gᵀ and W_K G
vanish when both factors do), or the *symmetric* manifold Fix(G) of the task's symmetry group acting on
the parameters (``--manifold symmetry``; ``auto`` takes it when every parameter moves: two_layer,
learned_positions). With orthonormal bases ``on`` of 𝓜 and ``off`` of its complement, F's Jacobian J at a
point θ*(t) of 𝓜 is block triangular and an off-manifold perturbation δ evolves to first order by
δ(t+1) = A_t δ(t),

    A_t = offᵀ J(θ*(t)) off = I − η offᵀ ∇²L(θ*(t)) off,

along the float64 trajectory θ*(t) of ``rwtoolkit.models.descend`` from zero on the exact population (positions
``rational_positions(N, μ)`` as floats on the zero manifold; √μ·I_N on the symmetric one, where the symmetry
permutes the coordinates). J is ``torch.func.jacrev`` of the tape's gradient of the model's one forward
pass; ``leak`` = ‖offᵀ J on‖₂ checks the block triangularity (0 exactly on the zero manifold, rounding on
the symmetric one). Φ_T = A_{T−1}⋯A_0 bounds every perturbation: ‖δ(T)‖ ≤ σ_max(Φ_T)‖δ(0)‖. Verdict:
``unstable`` if ln σ_max(Φ_T) > T·MARGIN, ``stable`` if < −T·MARGIN, else ``marginal``. MARGIN = 1e-9 per
step: A_t is computed in float64 from population sums of at most a few 10⁵ terms, so a zero Hessian comes
back with rounding ≲ 1e-12 (A_0 = I exactly when the Hessian vanishes at zero); growth below 1e-9 per step
is rounding, not dynamics. The report also says whether the trajectory on 𝓜 is *stuck* (every input's
scores f agree to STUCK_TOL = 1e-9 at every step) or learns on it: an invariant manifold need not be a
stuck one (two_layer learns on its symmetric manifold).

For ``key_query``, ∂²L/∂θ_off² at W_K = W_Q = 0 is [[0, G], [Gᵀ, 0]] per head row, G = ∂L/∂W of the merged
model at (V*(t), W = 0): A_t's eigenvalues are 1 ± η σ_i(G_t), its spectral radius 1 + η σ_max(G_t), a saddle
as soon as G_t ≠ 0 (tests/test_stability_models.py checks this against ``one_layer``'s gradient).

Escape. Every parameter starts i.i.d. N(0, σ²) (numpy ``default_rng(seed)``, cast to the dtype) and GD runs
with ``descend`` in that dtype. With r(t) = ‖offᵀθ(t)‖ / ‖offᵀθ(0)‖ (the Euclidean norm of the off-manifold
part, on the zero manifold √(‖W_K‖²_F + ‖W_Q‖²_F): the norm σ_max(Φ_t) bounds), escape is the first t ≥ 1 with
r(t) > 1/τ, τ = ``--threshold`` (default 1e-3: a thousandfold growth). The linear prediction is the first
t ≥ 1 with σ_max(Φ_t) > 1/τ, the earliest step first-order dynamics allows (r(t) ≤ σ_max(Φ_t)).

>>> from rwtoolkit.analyses.stability import stability_report
>>> from rwtoolkit.tasks import CircleWalk
>>> r = stability_report(CircleWalk(3, 4, 1), steps=3, sigmas=[1e-3], seeds=1, model="key_query")
>>> r["model"], r["manifold"]["parameters"], r["verdict"]["kind"]
({'name': 'key_query', 'd': 2}, ['W_K', 'W_Q'], 'unstable')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from rwtoolkit.analyses.stability._escape import finite_or_none, first_above
from rwtoolkit.analyses.stability._linear import STABILITY_WORDS_GENERIC, attracts
from rwtoolkit.analyses.stability._manifold import (
    MANIFOLDS,
    SYMMETRY,
    ZERO,
    Manifold,
    symmetric_manifold,
    zero_manifold,
)
from rwtoolkit.analyses.stability._reduced import population_arrays
from rwtoolkit.analyses.stability._report import MAX_SECONDS, check_run_options, duration_text
from rwtoolkit.analyses.stability._views import StabilityOptions
from rwtoolkit.models import (
    Batch,
    CrossEntropy,
    ElementLoss,
    Model,
    Objective,
    Sizes,
    batch,
    descend,
    evaluate,
    flatten,
    objective_name,
    rational_positions,
    unflatten,
)
from rwtoolkit.tasks import CircleWalk, FiniteTask

#: Per-step log-growth below which the off-manifold block is rounding, not dynamics (module text).
MARGIN = 1e-9
#: Refusal limits (the run length and the time are every view's, ``rwtoolkit.analyses.stability._report``):
#: parameters, and the estimated work in multiply-adds (measured: about 30 s per 1e11 on one CPU thread, qa1 at
#: d = 2) and memory of one step's Jacobian.
MAX_PARAMS = 2000
MAX_WORK = 2e11
#: Seconds per multiply-add (the measurement above), and the fixed cost of a step whatever the task's size:
#: per linearised step (the trajectory's step, jacrev, two matrix norms) plus per parameter (one reverse
#: pass each), and per step of a measured run plus per parameter. Measured on CircleWalk(3, 4, 1), 40 steps,
#: one torch thread, on the 2-core machine: 12, 19, 22 and 101 ms per linearised step and 1.3, 1.6, 2.0 and
#: 4.3 ms per run step for key_query (37 parameters), learned_positions (74), multi_head (116), two_layer (254).
WORK_SECONDS = 3e-10
STEP_SECONDS, PARAM_SECONDS, RUN_STEP_SECONDS, RUN_PARAM_SECONDS = 1e-2, 4e-4, 1e-3, 1.3e-5


def rational_mu(mu: float) -> Fraction:
    """The μ of ``rational_positions``: the decimal as written, or its nearest fraction of denominator ≤ 10⁴.

    >>> rational_mu(2.5), rational_mu(31.622776601683793)
    (Fraction(5, 2), Fraction(282676, 8939))
    """
    exact = Fraction(repr(float(mu)))
    return exact if exact.denominator <= 10**4 else exact.limit_denominator(10**4)


def _sizes(
    model: Model, task: CircleWalk | FiniteTask, steps: int, runs: int
) -> tuple[int, float, int, float]:
    """(parameters, multiply-adds, bytes, seconds) of one μ of a report: jacrev costs one reverse pass per
    parameter per step; the seconds add the fixed cost per step (constants: module text)."""
    n = len(population_arrays(task)[1])
    M = 4 * -(-task.N // 4)
    D = task.K + M
    params = model.parameter_count(Sizes(K=task.K, M=M, N=task.N))
    forward = n * task.N * params  # each parameter entry meets each input column at most once
    work = float(steps) * 3 * forward * (params + runs)
    memory = 8 * 8 * params * n * task.N * max(D, task.K)  # jacrev's batched intermediates, 8 alive
    fixed = STEP_SECONDS + PARAM_SECONDS * params + runs * (RUN_STEP_SECONDS + RUN_PARAM_SECONDS * params)
    return params, work, memory, steps * fixed + WORK_SECONDS * work


def check_model_report_args(
    task: object,
    model: Model,
    steps: int,
    sigmas: Sequence[float],
    seeds: int,
    threshold: float,
    mus: Sequence[float] = (1.0,),
    dtypes: Sequence[str] = ("float64",),
    manifold: str = "auto",
) -> CircleWalk | FiniteTask:
    """One-line ValueErrors for every bad argument and for a report estimated too large, before any work.

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> check_model_report_args(CircleWalk(3, 4, "3/10"), get_model("key_query"), 4, [1e-3], 1, 1e-3).N
    4
    """
    from rwtoolkit.io import check_memory, format_bytes

    if not isinstance(task, (CircleWalk, FiniteTask)):
        raise ValueError(f"task={task!r} is not a circle walk or a finite task")  # noqa: TRY004 - usage error
    if task.symbols:
        raise ValueError("p is a symbol (give --p): rw stability needs a number p")
    n = len(population_arrays(task)[1])  # symbolic probabilities are refused here, in one line
    check_run_options(steps, sigmas, seeds, threshold, mus, dtypes)
    if manifold not in MANIFOLDS:
        raise ValueError(f"--manifold={manifold!r} must be one of {', '.join(MANIFOLDS)}")
    params, work, memory, seconds = _sizes(model, task, steps, len(sigmas) * seeds * len(dtypes))
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
    if seconds * len(mus) > MAX_SECONDS:
        raise ValueError(
            f"{where}: about {duration_text(seconds * len(mus))} ({params} parameters, {n} inputs, {steps} steps, "
            f"{len(sigmas) * seeds * len(dtypes)} measured runs, {len(mus)} mu), above {MAX_SECONDS:.0f} s: "
            "use fewer --steps, --sigmas, --seeds, --dtypes or --mus (--grid quick)"
        )
    check_memory(memory, f"{where} (one step's Jacobian, {format_bytes(memory)})", "use a smaller K or N")
    if manifold == SYMMETRY:
        symmetric_manifold(model, task)  # refuses a task whose group moves no parameter, before any work
    return task


def off_manifold_jacobian(
    model: Model,
    arithmetic: Any,
    params: Mapping[str, Any],
    data: Batch,
    loss: ElementLoss | Objective,
    eta: float,
    off: Sequence[str] | Manifold,
) -> tuple[Any, Any]:
    """(A, B) at ``params``: A = offᵀ J off, B = offᵀ J on, J the Jacobian of F(θ) = θ − η∇L(θ).

    θ is flattened in ``params`` order; ``off`` is a :class:`Manifold` or the names of a zero manifold's
    parameters (then A = ∂F_off/∂θ_off and B = ∂F_off/∂θ_on). ∇L is the tape's gradient
    (``rwtoolkit.models.evaluate``) on torch tensors, J its ``torch.func.jacrev``.
    """
    import torch
    from torch.func import jacrev

    shapes = {n: tuple(params[n].shape) for n in params}
    manifold = off if isinstance(off, Manifold) else zero_manifold(shapes, off)

    def step(x: Any) -> Any:
        gradient = evaluate(model, arithmetic, unflatten(x, shapes), data, loss).gradient
        assert gradient is not None
        return x - eta * flatten({n: gradient[n] for n in shapes}, arithmetic)

    J = jacrev(step)(flatten({n: params[n] for n in shapes}, arithmetic))
    Q, B = (torch.as_tensor(m, dtype=J.dtype) for m in (manifold.off, manifold.on))
    return Q.T @ J @ Q, Q.T @ J @ B


def _population(task: CircleWalk | FiniteTask, arithmetic: Any, P: np.ndarray) -> Batch:
    tokens, labels, probs = population_arrays(task)
    return batch(arithmetic, tokens, labels, [float(q) for q in probs], task.K, arithmetic.asarray(P))


#: Largest difference of two inputs' scores f along the float64 trajectory on the manifold still called stuck
#: (the trajectory at chance): population sums of a few 10⁵ float64 terms round at ≲ 1e-12.
STUCK_TOL = 1e-9


def _positions(task: CircleWalk | FiniteTask, mu_q: Fraction, kind: str) -> tuple[np.ndarray, str]:
    """P of the run: ``rational_positions(N, μ)`` on the zero manifold, √μ·I_N on the symmetric one (where the
    symmetry permutes the coordinates, ``rwtoolkit.models.coordinate_permutation``)."""
    if kind == SYMMETRY:
        return math.sqrt(mu_q) * np.eye(task.N), "sqrt(mu) I_N"
    return np.asarray(rational_positions(task.N, mu_q), dtype=np.float64), "rational_positions(N, mu)"


def _loss(model: Model, eps: float) -> Any:
    """The loss GD runs on: the log-loss −log(f_y + ε) of the prediction, or, for a model with next-token logits
    (a sequence model), its cross-entropy objective (``rwtoolkit.models.objective_name``: ``"lm"``; ε unused)."""
    from rwtoolkit.engines.numeric import TensorLoss

    objective = objective_name(model, None)
    return TensorLoss("log", eps) if objective is None else CrossEntropy(objective)


def _trajectory(
    model: Model, task: CircleWalk | FiniteTask, P: np.ndarray, eps: float, eta: float, steps: int
):
    import torch

    from rwtoolkit.engines.numeric import TorchArithmetic

    ar, loss = TorchArithmetic(torch.float64), _loss(model, eps)
    data = _population(task, ar, P)
    states = descend(model, ar, model.zeros(ar, data.inputs.sizes), data, loss, eta, steps)
    if not all(bool(torch.isfinite(v).all()) for s in states for v in s.params.values()):
        raise ValueError(f"the trajectory from zero diverged within {steps} steps (lower --eta)")
    return ar, loss, data, states


def _manifold_of(
    model: Model, task: CircleWalk | FiniteTask, states: list[Any], kind: str
) -> Manifold | None:
    """The zero manifold of ``states`` (None when every parameter moves and ``kind`` is auto), or Fix(G)."""
    if kind == SYMMETRY:
        return symmetric_manifold(model, task)
    off = [n for n in states[0].params if all(not bool(s.params[n].any()) for s in states)]
    if off:
        shapes = {n: tuple(v.shape) for n, v in states[0].params.items()}
        return zero_manifold(shapes, off)
    if kind == ZERO:
        raise ValueError(
            f"--manifold zero: GD from zero moves every parameter of --model {model.name}, so no parameter "
            "stays exactly zero (--manifold symmetry linearises around the task's symmetric manifold)"
        )
    return None


def _per_mu(
    task: CircleWalk | FiniteTask,
    model: Model,
    mu: float,
    opts: StabilityOptions,
    tick: Callable[..., object] | None = None,
) -> dict[str, Any]:
    """The block of ``results`` at ``mu``: the trajectory on the manifold (``opts.manifold``), the off-manifold
    linearisation along it, the verdict and the Gaussian escape table."""
    steps, eta, eps, threshold, kind = opts.steps, opts.eta, opts.eps, opts.threshold, opts.manifold
    sigmas, seeds, dtypes = opts.sigmas, opts.seeds, opts.dtypes
    import torch

    mu_q = rational_mu(mu)
    P, positions = _positions(task, mu_q, kind)
    ar, loss, data, states = _trajectory(model, task, P, eps, eta, steps)
    manifold = _manifold_of(model, task, states, kind)
    if manifold is None:  # auto, and every parameter moves: the symmetric manifold, at its positions
        try:
            manifold = symmetric_manifold(model, task)
        except ValueError:
            raise ValueError(
                f"--model {model.name}: GD from zero moves every parameter and the task's symmetry group "
                "moves none, so there is no invariant manifold to linearise around (neither --manifold zero "
                "nor --manifold symmetry)"
            ) from None
        P, positions = _positions(task, mu_q, SYMMETRY)
        ar, loss, data, states = _trajectory(model, task, P, eps, eta, steps)
    spread = max(float((s.f - s.f[0]).abs().max()) for s in states)  # every input has probability > 0
    rows, log_phi, Phi = [], 0.0, None
    for t, state in enumerate(states[:-1]):
        A, B = off_manifold_jacobian(model, ar, state.params, data, loss, eta, manifold)
        Phi = A if Phi is None else A @ Phi
        s = float(torch.linalg.matrix_norm(Phi, ord=2))
        if not (math.isfinite(s) and s > 0):
            raise ValueError(f"the off-manifold product vanished or overflowed at step {t} (lower --eta)")
        Phi, log_phi, previous = Phi / s, log_phi + math.log(s), log_phi
        if tick is not None:
            tick()
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
    kind_of = STABILITY_WORDS_GENERIC.word(attracts(log_phi, tol))
    on_it = (
        f"the trajectory on it is stuck: scores agree across inputs to {spread:.1e}"
        if spread <= STUCK_TOL
        else f"the trajectory on it learns: scores differ across inputs by up to {spread:.3g}"
    )
    line = (
        f"{kind_of} {manifold.kind} manifold (off-manifold growth sigma_max(Phi_T) = "
        f"10^{log_phi / math.log(10):.3f} over {steps} steps, ln {log_phi:+.3e}, marginal band ±{tol:.1e}; "
        f"largest radius of A_t {max(r['radius'] for r in rows):.6f}; {on_it})"
    )
    predicted = first_above([0.0] + [r["log_sigma_Phi"] for r in rows], math.log(1 / threshold))
    gaussian = []
    for sigma in sigmas:
        for dtype in dtypes:
            runs = []
            for k in range(seeds):
                runs.append(_escape(task, model, P, eps, eta, steps, sigma, dtype, k, manifold, threshold))
                if tick is not None:
                    tick(steps)
            gaussian.append({"sigma": sigma, "dtype": dtype, "predicted": predicted, **_columns(runs)})
    return {
        "mu": mu,
        "mu_rational": str(mu_q),
        "positions": positions,
        "verdict": {"kind": kind_of, "log_growth": log_phi, "tolerance": tol, "line": line, "mu": mu},
        "manifold": manifold.to_json(),
        "max_leak": max(r["leak"] for r in rows),
        "score_spread": spread,
        "stuck": spread <= STUCK_TOL,
        "off_parameters": manifold.parameters,
        "off_dim": int(manifold.off.shape[1]),
        "steps": rows,
        "escape": {"quantity": "off_manifold_growth", "gaussian": gaussian},
    }


def _columns(runs: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {key: [r[key] for r in runs] for key in ("measured", "final_growth", "final_attention_deviation")}


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
    manifold: Manifold,
    threshold: float,
) -> dict[str, Any]:
    """One Gaussian-init run: its escape step (None within the run), final r(T) and max |S − 1/N| at T."""
    import torch

    from rwtoolkit.engines.numeric import TorchArithmetic

    ar = TorchArithmetic(getattr(torch, dtype))
    rng = np.random.default_rng(seed)
    init = {
        n: ar.asarray(sigma * rng.standard_normal(s))
        for n, s in model.shapes(Sizes(K=task.K, M=P.shape[0], N=task.N)).items()
    }
    states = descend(model, ar, init, _population(task, ar, P), _loss(model, eps), eta, steps)
    Q = torch.as_tensor(manifold.off, dtype=torch.float64)
    norms = [
        float(torch.linalg.vector_norm(Q.T @ flatten({n: v.double() for n, v in s.params.items()}, ar)))
        for s in states
    ]
    r = [x / norms[0] for x in norms]
    return {
        "measured": first_above(r, 1 / threshold),
        "final_growth": finite_or_none(r[-1]),
        "final_attention_deviation": None  # a model without attention S (a sequence model)
        if states[-1].S is None
        else finite_or_none(float((states[-1].S.double() - 1 / task.N).abs().max())),
    }


class ModelView:
    """The generic off-manifold linearisation of ``model`` on ``task``: a ``StabilityView`` (module text).

    Made with every refusal raised first (``--sum`` and ``--predict-only`` are the reduced view's options;
    ``check_model_report_args``); one block of ``results`` per μ, the manifold the first block's.
    """

    def __init__(self, task: object, model: Model, opts: StabilityOptions) -> None:
        if opts.sums != "auto" or not opts.measure:
            raise ValueError(
                f"--sum and --predict-only apply to the paper's model; --model {model.name} sums over "
                "every input (its report's size is estimated and refused beyond the budget)"
            )
        self.model, self.opts = model, opts
        self.task = check_model_report_args(
            task,
            model,
            opts.steps,
            opts.sigmas,
            opts.seeds,
            opts.threshold,
            opts.mus,
            opts.dtypes,
            opts.manifold,
        )
        self.runs = len(opts.sigmas) * opts.seeds * len(opts.dtypes)
        self.first: dict[str, Any] | None = None

    def prepare(self) -> float:
        """The estimated seconds of the report (``_sizes``, once per μ)."""
        return _sizes(self.model, self.task, self.opts.steps, self.runs)[3] * len(self.opts.mus)

    def per_mu(self, mu: float, tick: Callable[..., object] | None) -> dict[str, Any]:
        block = _per_mu(self.task, self.model, mu, self.opts, tick)
        self.first = self.first or block
        return block

    def head(self) -> dict[str, Any]:
        return {"model": self.model.describe()}

    def config(self) -> dict[str, Any]:
        objective = objective_name(self.model, None)
        return {
            "margin_per_step": MARGIN,
            "manifold": self.opts.manifold,
            "stuck_tolerance": STUCK_TOL,
            **({} if objective is None else {"objective": objective}),
        }

    def body(self) -> dict[str, Any]:
        """The manifold of the first μ (each block of ``results`` has its own)."""
        if self.first is None:
            raise ValueError("the generic view has no result yet: per_mu makes one per mu")
        return {"manifold": self.first["manifold"]}
