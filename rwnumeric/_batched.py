"""Many exact-population runs of equal shape as one computation: the fast path with a batch dimension.

``train`` runs one configuration; a sweep runs thousands that differ only in p, η, σ, μ, the seed or
the positional embeddings. They share the input set (every walk of the population), so ``train_batched``
keeps the reduced parameters of B runs side by side, batch last, V as (K, K, B), w_tok as (K, B) and
q as (N, B), and computes the forward pass and the gradient of all B runs in one pass over the inputs.

Each run is the ``FastModel`` of ``train`` (same initial parameters from the same seed, the same Gram
matrix G, the same rank-one map back to W, docs/theory.md#reduction); what differs is that the
gradient is written out instead of taken by autograd (only ℓ'(z) is differentiated by torch), so that
every large array is touched a fixed small number of times. With z_n = e_{y_n}ᵀ V X_n S_n,
g_n = (weight_n) ℓ'(z_n) and a_n the logits (layout (n, N, B)):

    ∂L/∂V = Σ_n g_n e_{y_n} (X_n S_n)ᵀ,   ∂L/∂S_{nj} = g_n V[y_n, s_{nj}]  (j < N, 0 for the query slot),
    ∂L/∂a_n = S_n ⊙ (∂L/∂S_n - S_nᵀ ∂L/∂S_n),   ∂L/∂q_j = scale_j Σ_n ∂L/∂a_{nj},
    ∂L/∂w_tok[k] = Σ_{n, j<N : s_{nj} = k} scale_j ∂L/∂a_{nj},

then the step of ``FastModel.step``. ``tests/test_sweep_batched.py`` checks each run against ``train``.

A run whose loss leaves its domain (log-loss z + ε ≤ 0) or stops being finite is frozen at its last
finite parameters and reported in ``BatchedResult.diverged``; the other runs of the batch go on.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import sympy as sp
import torch
from tqdm import tqdm

from rwnumeric._config import ModelConfig, TrainConfig, validate
from rwnumeric._embeddings import nominal_mu, positional_embeddings
from rwnumeric._losses import LOSS_FUNCTIONS
from rwnumeric._metrics import EvalSet, accuracy, circulant_projection, predict, v_direction_error
from rwnumeric._model import FastModel, initial_parameters
from rwnumeric._train import _eta, init_generator
from rwtasks import CircleWalk, is_numeric

#: The per-step records of ``train_batched``, named as in ``HISTORY_KEYS``; (B, steps + 1) arrays.
BATCHED_HISTORY_KEYS = (
    "train_loss",
    "test_accuracy",
    "parent_attention",
    "ones_residual",
    "circulant_residual",
)

Run = tuple[CircleWalk, ModelConfig, TrainConfig]


@dataclass
class BatchedResult:
    """What ``train_batched`` produced for B runs, in the order given.

    ``history[key]``: (B, steps + 1) float64 arrays, key in ``BATCHED_HISTORY_KEYS``, NaN after a run
    diverged. ``final[b]``: V (K×K nested list), ``attention_profile`` (N), ``test_accuracy`` (exact
    population accuracy as the nearest float, as in ``train``), ``v_direction_error`` (None when V = 0).
    ``diverged[b]``: the step at which run b left the loss domain or became non-finite, else None.
    """

    history: dict[str, np.ndarray]
    final: list[dict]
    diverged: list[int | None] = field(default_factory=list)


def batch_key(task: CircleWalk, model: ModelConfig, cfg: TrainConfig) -> tuple:
    """Runs with equal keys can share one ``train_batched`` call: same K, N, input set, loss, ε, steps, dtype.

    The input set of a circle-walk population is every walk for 0 < p < 1, and only the deterministic
    walks for p ∈ {0, 1}; p itself, η, σ, the seed, M, μ and the Gram choice may differ within a batch.

    >>> from rwtasks import CircleWalk
    >>> m, c = ModelConfig(K=3, N=4, M=5), TrainConfig(population=True)
    >>> batch_key(CircleWalk(3, 4, "1/3"), m, c) == batch_key(CircleWalk(3, 4, "1/2"), m, c)
    True
    >>> batch_key(CircleWalk(3, 4, 1), m, c) == batch_key(CircleWalk(3, 4, "1/2"), m, c)
    False
    """
    support = str(task.p) if is_numeric(task.p) and task.p in (0, 1) else "0<p<1"
    return (
        task.K,
        task.N,
        support,
        str(cfg.loss),
        float(cfg.eps),
        int(cfg.steps),
        cfg.dtype,
        cfg.device,
        cfg.effective_tie_rtol,
        bool(model.normalize_attention),
    )


def _check_runs(runs: Sequence[Run]) -> None:
    """Every run valid for ``train`` and batchable: a circle-walk population on the fast path, equal keys."""
    if not runs:
        raise ValueError("runs is empty: train_batched needs at least one (task, model, cfg)")
    for i, (task, model, cfg) in enumerate(runs):
        validate(task, model, cfg)
        why = None
        if not isinstance(task, CircleWalk) or not is_numeric(task.p):
            why = "the task must be a CircleWalk with a numeric p"
        elif not cfg.population:
            why = "population=False (the batched path trains on the exact population only)"
        elif not cfg.fast or cfg.rotate or model.relu_width is not None:
            why = "fast=True, rotate=False and relu_width=None are required"
        elif not isinstance(cfg.loss, str):
            why = f"loss={cfg.loss!r} must be one of the named losses"
        elif batch_key(task, model, cfg) != batch_key(*runs[0]):
            why = f"batch_key differs from run 0's: {batch_key(task, model, cfg)} != {batch_key(*runs[0])}"
        if why is not None:
            raise ValueError(f"runs[{i}] cannot be batched: {why}")


@lru_cache(maxsize=32)
def _embeddings(pos: str, M: int, N: int, pos_norm: float | None, pos_seed: int) -> tuple[np.ndarray, float]:
    """P (M, N) and μ of one positional-embedding choice, shared by the runs that use it."""
    P = positional_embeddings(pos, M, N, pos_norm, pos_seed)
    return P, nominal_mu(pos, M, P, pos_norm)


def _initial_model(model: ModelConfig, cfg: TrainConfig, dt: torch.dtype, dev: torch.device) -> FastModel:
    """The FastModel ``train`` builds for this run at step 0 (same seed stream, embeddings and Gram)."""
    if isinstance(model.pos, str):
        P_np, mu = _embeddings(model.pos, model.M, model.N, model.pos_norm, model.pos_seed)
    else:
        P_np = positional_embeddings(model.pos, model.M, model.N, model.pos_norm, model.pos_seed)
        mu = nominal_mu(model.pos, model.M, P_np, model.pos_norm)
    V0, W0, _ = initial_parameters(model.K, model.M, None, cfg.init, cfg.sigma, init_generator(cfg.seed))

    def tensor(a):
        return None if a is None else torch.as_tensor(a, dtype=dt, device=dev)

    return FastModel(
        tensor(P_np),
        model.K,
        model.normalize_attention,
        tensor(V0),
        tensor(W0),
        None,
        mu if model.gram == "ideal" else None,
    )


def _relative_to_V(residual: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """‖residual_b‖_F / ‖V_b‖_F per run (0 where V_b = 0), for (K, K, B) arrays, as in ``ones_residual``."""
    nv = torch.linalg.vector_norm(V, dim=(0, 1))
    nr = torch.linalg.vector_norm(residual, dim=(0, 1))
    return torch.where(nv > 0, nr / torch.where(nv > 0, nv, 1.0), 0.0)


def train_batched(runs: Sequence[Run], progress: bool = False, record_every: int = 1) -> BatchedResult:
    """Full-batch GD on the exact population for B runs at once; each run equals ``train(task, model, cfg)``.

    ``runs``: (task, model, cfg) triples with equal ``batch_key`` (validated as ``train`` does; the
    batch must fit in memory: about 8·B·n·N·10 bytes in float64 for n inputs); ``record_every``: the history holds
    the metrics at the steps t ≡ 0 (mod record_every) and at the last step (the others are NaN), except
    ``ones_residual`` and ``circulant_residual`` (V only, cheap), which are recorded at every step.

    >>> from rwtasks import CircleWalk
    >>> model, cfg = ModelConfig(K=3, N=4, M=5), TrainConfig(steps=2, population=True)
    >>> r = train_batched([(CircleWalk(3, 4, p), model, cfg) for p in ("1/2", "9/10")])
    >>> r.history["test_accuracy"].shape, [round(f["test_accuracy"], 3) for f in r.final]
    ((2, 3), [0.5, 0.9])
    """
    _check_runs(runs)
    if isinstance(record_every, bool) or not isinstance(record_every, int) or record_every < 1:
        raise ValueError(f"record_every={record_every!r} must be an integer >= 1")
    cfg0 = runs[0][2]
    previous_threads = torch.get_num_threads()
    if cfg0.threads is not None:
        torch.set_num_threads(cfg0.threads)
    try:
        with torch.no_grad():
            return _train_batched(runs, progress, record_every)
    finally:
        torch.set_num_threads(previous_threads)


def _train_batched(runs: Sequence[Run], progress: bool, record_every: int) -> BatchedResult:
    task0, model0, cfg0 = runs[0]
    K, N, B, T = task0.K, task0.N, len(runs), cfg0.steps
    dt = torch.float64 if cfg0.dtype == "float64" else torch.float32
    dev = torch.device(cfg0.device)
    if cfg0.device == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            "device='cuda' was requested but torch.cuda.is_available() is False; use device='cpu'"
        )

    # The shared input set, sorted by label so that each label's inputs are one slice, and per
    # distinct p the exact probabilities of the inputs.
    run_p = [sp.nsimplify(task.p) for task, _, _ in runs]
    pops = {p: task.population() for p, (task, _, _) in zip(run_p, runs, strict=True)}
    pop0 = next(iter(pops.values()))
    order = np.argsort(pop0.labels, kind="stable")
    tokens = torch.as_tensor(pop0.tokens[order], dtype=torch.int64, device=dev)  # (n, N-1)
    labels = torch.as_tensor(pop0.labels[order], dtype=torch.int64, device=dev)  # (n,)
    prob_index = pop0.prob_index[order]
    n = tokens.shape[0]
    bounds = np.searchsorted(pop0.labels[order], np.arange(K + 1))  # label i: inputs bounds[i]:bounds[i+1]
    weight_of = {
        p: torch.as_tensor(pop.float_probs()[order], dtype=dt, device=dev) for p, pop in pops.items()
    }
    weights = torch.stack([weight_of[p] for p in run_p], dim=1)  # (n, B)
    onehot = torch.nn.functional.one_hot(tokens, K).to(dt).reshape(n, (N - 1) * K)  # (n, (N-1)K) 1{s_nj = k}
    classes = len(pop0.prob_values)
    class_onehot = torch.nn.functional.one_hot(torch.as_tensor(prob_index, device=dev), classes)
    class_onehot = class_onehot.to(torch.float64)  # (n, classes)
    class_values = torch.tensor(
        [[float(v) for v in pops[p].prob_values] for p in run_p], dtype=torch.float64, device=dev
    )  # (B, classes) probability of one input of each class, per run
    rtol = cfg0.effective_tie_rtol

    # Initial reduced parameters of every run, exactly as ``train`` builds them.
    models = [_initial_model(model, cfg, dt, dev) for _, model, cfg in runs]
    VT = torch.stack([m.V.detach() for m in models], dim=2).clone()  # (K, K, B) V[i, k, b]
    wT = torch.stack([m.w_tok.detach() for m in models], dim=1).clone()  # (K, B)
    qT = torch.stack([m.q.detach() for m in models], dim=1).clone()  # (N, B)
    scT = torch.stack([m.scale for m in models], dim=1)  # (N, B)
    if not bool((scT[:-1] == scT[0]).all()):
        raise ValueError(
            "normalize_attention=True with unequal |p_j| (gram='computed') cannot be batched: "
            "use gram='ideal' or train()"
        )
    s, sN = scT[0], scT[-1]  # (B,) the token positions' common scale and the query's
    G = torch.stack([m.G for m in models])  # (B, N, N)
    nN = torch.tensor([m.nN for m in models], dtype=dt, device=dev)  # (B,)
    loss_fn = LOSS_FUNCTIONS[str(cfg0.loss)]
    eps = float(cfg0.eps)

    hist = {key: np.full((B, T + 1), np.nan) for key in BATCHED_HISTORY_KEYS}
    alive = torch.ones(B, dtype=torch.bool, device=dev)
    diverged: list[int | None] = [None] * B
    profile = torch.zeros(N, B, dtype=dt, device=dev)
    pred = torch.zeros(n, B, dtype=torch.int64, device=dev)
    bar = tqdm(total=T, disable=not (progress and sys.stderr.isatty()), desc="rw batched", unit="step")
    for t in range(T + 1):
        recorded = t % record_every == 0 or t == T
        # Factored attention: S_nj = E_j U_{s_nj} / Z_n (j < N), S_nN = e_N / Z_n, every factor <= 1.
        a_tok = s * qT[:-1]  # (N-1, B) positional part of the token logits
        a_w = s * wT  # (K, B) token part of the token logits
        a_w_max = a_w.max(0).values  # (B,)
        shift = torch.maximum(a_tok.max(0).values + a_w_max, sN * qT[-1])  # (B,)
        U = torch.exp(a_w - a_w_max)  # (K, B)
        E = torch.exp(a_tok - shift + a_w_max)  # (N-1, B)
        eN = torch.exp(sN * qT[-1] - shift)  # (B,)
        UE = (E[:, None, :] * U[None]).reshape((N - 1) * K, B)  # ((N-1)K, B)
        VUE = E[:, None, None, :] * (VT * U[None]).permute(1, 0, 2)[None]  # (N-1, K, K, B) [j, k, i, b]
        VUE = VUE.reshape((N - 1) * K, K, B)
        Z = torch.empty(n, B, dtype=dt, device=dev)
        A = torch.empty(n, B, dtype=dt, device=dev)  # Z·e_yᵀ f
        F = torch.empty(n, K, B, dtype=dt, device=dev) if recorded else None  # Z·f
        for i in range(K):
            lo, hi = int(bounds[i]), int(bounds[i + 1])
            if F is not None:
                out = onehot[lo:hi] @ torch.cat([UE, VUE.reshape(-1, K * B)], dim=1)  # (n_i, B + K·B)
                F[lo:hi] = out[:, B:].view(hi - lo, K, B)
                A[lo:hi] = F[lo:hi, i]
            else:
                out = onehot[lo:hi] @ torch.cat([UE, VUE[:, i]], dim=1)  # (n_i, 2B)
                A[lo:hi] = out[:, B:]
            Z[lo:hi] = out[:, :B]
        Z += eN
        z = A / Z  # (n, B) e_yᵀ f
        z.requires_grad_(True)
        with torch.enable_grad():
            weighted = weights * loss_fn(z, eps)  # (n, B)
            L = weighted.sum(0)  # (B,) the objective of each run
            L.sum().backward()
        g = z.grad  # (n, B) weight_n ℓ'(z_n)
        assert g is not None
        z, L = z.detach(), L.detach()
        # Outside the log-loss domain (z + ε <= 0) the loss is NaN or inf, so L is not finite either;
        # Z = 0 means every attention weight underflowed (logits apart by more than the dtype's range).
        bad = ~torch.isfinite(L) | (Z.min(0).values <= 0)
        for b in torch.nonzero(bad & alive).flatten().tolist():
            diverged[b] = t
        alive &= ~bad
        if F is not None:
            pred = predict(F, rtol)  # (n, B) ŷ of f = F / Z: the tie rule is invariant under Z > 0
            correct = (pred == labels[:, None]).to(torch.float64)  # (n, B)
            counts = class_onehot.T @ correct  # (classes, B) correct inputs per probability class
            hist["test_accuracy"][:, t] = (counts.T * class_values).sum(1).cpu().numpy()
            R = (onehot.T @ (weights / Z)).view(N - 1, K, B)  # Σ_n weight_n 1{s_nj = k} / Z_n
            profile = torch.cat([E * (U[None] * R).sum(1), (eN * (weights / Z).sum(0))[None]])  # (N, B)
            hist["parent_attention"][:, t] = profile[N - 2].cpu().numpy()
            hist["train_loss"][:, t] = L.cpu().numpy()
        hist["ones_residual"][:, t] = _relative_to_V(VT - VT.mean(dim=(0, 1)), VT).cpu().numpy()
        circ = torch.vmap(circulant_projection, in_dims=2, out_dims=2)(VT)
        hist["circulant_residual"][:, t] = _relative_to_V(VT - circ, VT).cpu().numpy()
        dead = torch.nonzero(~alive).flatten().cpu().numpy()
        for key in BATCHED_HISTORY_KEYS:
            hist[key][dead, t] = np.nan
        if t == T:
            break
        # Backward in the factors (module doc): with r = g / Z,
        # T1[i, j, k] = Σ_{n: y_n = i} 1{s_nj = k} r_n and T2[j, k] = Σ_n 1{s_nj = k} r_n z_n.
        r = g / Z if bool(alive.all()) else torch.where(alive, g / Z, 0.0)  # (n, B); frozen runs: none
        rz = r * z
        T1 = torch.stack(
            [
                onehot[int(bounds[i]) : int(bounds[i + 1])].T @ r[int(bounds[i]) : int(bounds[i + 1])]
                for i in range(K)
            ]
        ).view(K, N - 1, K, B)  # (K, N-1, K, B) [i, j, k, b]
        T2 = (onehot.T @ rz).view(N - 1, K, B)  # (N-1, K, B)
        gV = U[None] * (E[None, :, None] * T1).sum(1)  # (K, K, B) ∂L/∂V
        D = (VT[:, None] * T1).sum(0) - T2  # (N-1, K, B)
        gU = (E[:, None] * D).sum(0)  # (K, B) ∂L/∂U
        gE = (U[None] * D).sum(1)  # (N-1, B) ∂L/∂E
        gw = gU * U * s  # (K, B) ∂L/∂w_tok
        gq = torch.cat([gE * E * s, (-rz.sum(0) * eN * sN)[None]])  # (N, B) ∂L/∂q
        eta = torch.tensor([_eta(cfg, t) for _, _, cfg in runs], dtype=dt, device=dev)
        eta = torch.where(alive, eta, 0.0)  # (B,)
        VT -= eta * gV
        wT -= eta * nN * gw
        qT -= eta * nN * torch.einsum("bij,jb->ib", G, gq)
        bar.update(1)
    bar.close()

    final = []
    for b, (task, _, _) in enumerate(runs):
        V = VT[:, :, b].cpu().numpy().astype(np.float64)
        pop = pops[run_p[b]]
        ev = EvalSet(tokens, labels, weights[:, b], weights[:, b], prob_index, pop.prob_values)
        final.append(
            {
                "V": V.tolist(),
                "attention_profile": profile[:, b].cpu().tolist(),
                "test_accuracy": accuracy(pred[:, b], ev) if diverged[b] is None else None,
                "v_direction_error": v_direction_error(V, task.transition_matrix_float()),
            }
        )
    return BatchedResult(history=hist, final=final, diverged=diverged)
