"""Many exact-population runs of equal shape as one computation: the fast path with a batch dimension.

``train`` runs one configuration; a sweep runs thousands that differ only in p, η, σ, μ, the seed or
the positional embeddings. They share the input set (every walk of the population), so ``train_batched``
keeps the reduced parameters of B runs side by side, batch last, V as (K, K, B), w_tok as (K, B) and
q as (N, B), and computes the forward pass and the gradient of all B runs in one pass over the inputs.

Each run is the ``FastModel`` of ``train`` (same initial parameters from the same seed, the same Gram
matrix G, the same rank-one map back to W, docs/theory.md#reduction); what differs is that the
gradient is written out instead of taken by autograd (ℓ'(z) in closed form, ``LOSS_DERIVATIVES``), so
that every large array is touched a fixed small number of times. With z_n = e_{y_n}ᵀ V X_n S_n,
g_n = (weight_n) ℓ'(z_n) and a_n the logits:

    ∂L/∂V = Σ_n g_n e_{y_n} (X_n S_n)ᵀ,   ∂L/∂S_{nj} = g_n V[y_n, s_{nj}]  (j < N, 0 for the query slot),
    ∂L/∂a_n = S_n ⊙ (∂L/∂S_n - S_nᵀ ∂L/∂S_n),   ∂L/∂q_j = scale_j Σ_n ∂L/∂a_{nj},
    ∂L/∂w_tok[k] = Σ_{n, j<N : s_{nj} = k} scale_j ∂L/∂a_{nj},

then the step of ``FastModel.step``. The softmax is factored, S_nj = E_j U_{s_nj} / Z_n, so the forward
pass needs per input only Z_n = e_N + Σ_j E_j U_{s_nj} and Z_n·f_n = Σ_j E_j U_{s_nj} V[:, s_nj], and
the backward pass only sums of r_n = g_n / Z_n and r_n z_n grouped by (label, position, token). The
inputs are walks, so their token sequences form K binary trees read from the last token back, and
the two labels s_{N-1} ± 1 share a sequence: the per-input sums are running sums down the trees and
the grouped sums are sums up the trees, each a few gathers per depth over (sequences × runs) arrays
(``_Forest``). ``tests/test_sweep_batched.py`` checks each run against ``train``.

A run whose loss leaves its domain (log-loss z + ε ≤ 0) or stops being finite is frozen at its last
finite parameters and reported in its ``TrainResult.diverged``; the other runs of the batch go on.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp
import torch
from tqdm import tqdm

from rwtoolkit.engines.numeric._config import ModelConfig, TrainConfig, registered_model, validate
from rwtoolkit.engines.numeric._embeddings import nominal_mu, positional_embeddings
from rwtoolkit.engines.numeric._losses import LOSS_DERIVATIVES, LOSS_FUNCTIONS, Diverged
from rwtoolkit.engines.numeric._metrics import (
    EvalSet,
    accuracy,
    circulant_residuals,
    ones_residuals,
    predict,
)
from rwtoolkit.engines.numeric._model import FastModel, initial_parameters
from rwtoolkit.engines.numeric._train import TrainResult, init_generator, learning_rate_at
from rwtoolkit.tasks import CircleWalk, is_numeric

#: What ``train_batched`` measures, named as in ``HISTORY_KEYS``: the first three at the recorded steps (the
#: history), V's two residuals at every step (``TrainResult.trace``).
BATCHED_HISTORY_KEYS = (
    "train_loss",
    "test_accuracy",
    "parent_attention",
    "ones_residual",
    "circulant_residual",
)
_RECORDED_KEYS = BATCHED_HISTORY_KEYS[:3]

#: A run of the batched engine: ``rwtoolkit.engines.numeric.Run`` on a circle walk (refused otherwise).
Run = tuple[CircleWalk, ModelConfig, TrainConfig]


def batch_key(task: CircleWalk, model: ModelConfig, cfg: TrainConfig) -> tuple:
    """Runs with equal keys can share one ``train_batched`` call: same K, N, input set, loss, ε, steps, dtype.

    The input set of a circle-walk population is every walk for 0 < p < 1, and only the deterministic
    walks for p ∈ {0, 1}; p itself, η, σ, the seed, M, μ and the Gram choice may differ within a batch.

    >>> from rwtoolkit.tasks import CircleWalk
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


def _recorded(cfg: TrainConfig) -> frozenset[int] | None:
    return None if cfg.record_steps is None else frozenset(int(s) for s in cfg.record_steps)


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
        elif _recorded(cfg) != _recorded(runs[0][2]):
            why = "record_steps differs from run 0's"
        elif cfg.snapshots or cfg.record_params or cfg.kl_norm != "softmax":
            why = "snapshots, record_params and kl_norm are options of train (one run), not of the batch"
        if why is not None:
            raise ValueError(f"runs[{i}] cannot be batched: {why}")


@lru_cache(maxsize=32)
def _embeddings(pos: str, M: int, N: int, mu: float | None, pos_seed: int) -> tuple[np.ndarray, float]:
    """P (M, N) and μ of one positional-embedding choice, shared by the runs that use it."""
    P = positional_embeddings(pos, M, N, mu, pos_seed)
    return P, nominal_mu(pos, M, P, mu)


def _initial_model(model: ModelConfig, cfg: TrainConfig, dt: torch.dtype, dev: torch.device) -> FastModel:
    """The FastModel ``train`` builds for this run at step 0 (same seed stream, embeddings and Gram)."""
    if isinstance(model.pos, str):
        P_np, mu = _embeddings(model.pos, model.M, model.N, model.mu, model.pos_seed)
    else:
        P_np = positional_embeddings(model.pos, model.M, model.N, model.mu, model.pos_seed)
        mu = nominal_mu(model.pos, model.M, P_np, model.mu)
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


def batched_peak_bytes(K: int, n: int, B: int) -> int:
    """Peak memory of ``train_batched`` in float64 for B runs over n inputs: about 8·B·n·(2K + 8) bytes.

    The recorded step's class scores (n × K × B, once per label slot) and a few (n × B) arrays; float32
    needs about half. ``rw sweep`` budgets each worker's packs with it.

    >>> batched_peak_bytes(6, 24576, 32) / 2**20  # K = 6, N = 13: the benchmark's pack, 126 MB measured
    120.0
    """
    return 8 * B * n * (2 * K + 8)


def train_batched(runs: Sequence[Run], progress: bool = False, trace: bool = False) -> list[TrainResult]:
    """Full-batch GD on the exact population for B runs at once; each run equals ``train(task, model, cfg)``.

    The torch engines' one signature (``rwtoolkit.engines.select`` with ``many=True``). ``runs``: (task,
    model, cfg) triples with equal ``batch_key`` and ``record_steps`` (validated as ``train`` does; the batch
    must fit in memory: ``batched_peak_bytes``). Each run's ``TrainResult`` holds in ``history`` loss,
    accuracy and parent attention at the steps of ``record_steps`` (None: every step) and at the last; in
    ``trace`` V's ones and circulant residuals at every step (V only, cheap here: measured whatever
    ``trace`` says); in ``final`` V, the attention
    profile and ``test_accuracy``, the exact population accuracy as the nearest float (None after a
    divergence), as ``train`` counts it; in ``diverged`` the step at which it left the loss domain or
    became non-finite (its values NaN from there).

    >>> from rwtoolkit.tasks import CircleWalk
    >>> model, cfg = ModelConfig(K=3, N=4, M=5), TrainConfig(steps=2, population=True)
    >>> r = train_batched([(CircleWalk(3, 4, p), model, cfg) for p in ("1/2", "9/10")])
    >>> len(r[0].history), [round(x.final["test_accuracy"], 3) for x in r]
    (3, [0.5, 0.9])
    """
    _check_runs(runs)
    cfg0 = runs[0][2]
    previous_threads = torch.get_num_threads()
    if cfg0.threads is not None:
        torch.set_num_threads(cfg0.threads)
    try:
        with torch.no_grad():
            return _train_batched(runs, progress)
    finally:
        torch.set_num_threads(previous_threads)


@dataclass
class _Forest:
    """The input sequences as K trees read from the last token back, and each input's place in them.

    A node at depth d is a suffix (s_{N-1-d}, ..., s_{N-1}) of the token sequences (depth 0: the last
    token, the root); its children extend it by one token to the left, and the leaves (depth N-2) are
    the L distinct sequences. A sum over inputs of a per-position term is then a running sum down the
    tree (one gather per depth), and a sum of per-input values grouped by (position, token) a sum up
    the tree, instead of a product with the (n, (N-1)·K) one-hot matrix. On a circle the label is the
    last token ± 1, so each leaf carries two inputs, slot 0 (label root + 1) and slot 1 (root - 1).
    """

    parent: list[torch.Tensor]  # depth d >= 1: (M_d,) node at depth d - 1 above each node
    index: list[torch.Tensor]  # depth d: (M_d,) position·K + token of each node
    index_root: list[torch.Tensor]  # depth d: ((position·K + token)·K + root) of each node
    slot_label: torch.Tensor  # (L, 2) the label of each slot: root + 1, root - 1 (mod K)
    root_bounds: np.ndarray  # (K + 1,) the leaves under root c are root_bounds[c]:root_bounds[c + 1]
    slot_of_input: np.ndarray  # (n,) 2·leaf + slot of each input
    binary: bool  # every node above the leaves has two children, nodes 2m and 2m + 1 under node m


def _forest(tokens: np.ndarray, labels: np.ndarray, K: int, dev: torch.device) -> _Forest:
    """The ``_Forest`` of a circle-walk input set (tokens (n, N-1), labels (n,) with y = s_{N-1} ± 1)."""
    seqs, leaf_of = np.unique(tokens[:, ::-1], axis=0, return_inverse=True)  # (L, N-1) root first, sorted
    leaf_of = leaf_of.reshape(-1)
    L, depth = seqs.shape
    parent: list[torch.Tensor] = []
    index: list[torch.Tensor] = []
    index_root: list[torch.Tensor] = []
    above = np.zeros(L, dtype=np.int64)  # node at depth d - 1 of each leaf
    for d in range(depth):
        # Rows are sorted, so the leaves under one depth-d node are consecutive.
        new = np.concatenate([[True], (seqs[1:, : d + 1] != seqs[:-1, : d + 1]).any(axis=1)])
        first = np.flatnonzero(new)  # (M_d,) first leaf under each node
        j = depth - 1 - d  # token position of depth d
        key = j * K + seqs[first, d]
        if d > 0:
            parent.append(torch.as_tensor(above[first], device=dev))
        index.append(torch.as_tensor(key, device=dev))
        index_root.append(torch.as_tensor(key * K + seqs[first, 0], device=dev))
        above = np.cumsum(new) - 1
    root = seqs[:, 0]
    slot_label = np.stack([(root + 1) % K, (root - 1) % K], axis=1)  # (L, 2)
    slot = np.where(labels == slot_label[leaf_of, 0], 0, 1)
    if not np.array_equal(slot_label[leaf_of, slot], labels):
        raise ValueError("the labels of a circle-walk input set must be the last token ± 1")
    slot_of_input = 2 * leaf_of + slot
    if len(np.unique(slot_of_input)) != len(slot_of_input):
        raise ValueError("a circle-walk input set holds each (sequence, label) once")
    bounds = np.searchsorted(root, np.arange(K + 1))
    binary = all(
        len(up) % 2 == 0 and torch.equal(up, torch.arange(len(up), device=dev) // 2) for up in parent
    )
    return _Forest(
        parent, index, index_root, torch.as_tensor(slot_label, device=dev), bounds, slot_of_input, binary
    )


def _down(table: torch.Tensor, forest: _Forest, index: list[torch.Tensor]) -> torch.Tensor:
    """Per leaf, Σ over the positions j of ``table[index row of (j, s_j)]``: (L, Q, B) from a (rows, Q, B) table."""
    rows, Q, B = table.shape
    flat = table.reshape(rows, Q * B)  # 2-D gathers copy whole rows
    total = flat.index_select(0, index[0])
    for at, up in zip(index[1:], forest.parent, strict=True):
        if forest.binary:  # children 2m, 2m + 1 of node m
            total = flat.index_select(0, at).view(-1, 2, Q * B).add_(total[:, None]).view(-1, Q * B)
        else:
            total = total.index_select(0, up).add_(flat.index_select(0, at))
    return total.view(-1, Q, B)


def _up(values: torch.Tensor, forest: _Forest, index: list[torch.Tensor], rows: int) -> torch.Tensor:
    """Σ over the leaves under each node of ``values`` (L, Q, B), added up per ``index`` row: (rows, Q, B)."""
    out = values.new_zeros((rows, *values.shape[1:]))
    for d in range(len(index) - 1, -1, -1):
        _add_rows(out, index[d], values)
        if d == 0:
            break
        if forest.binary:
            pairs = values.view(-1, 2, *values.shape[1:])
            values = pairs[:, 0] + pairs[:, 1]
        else:
            values = _add_rows(
                values.new_zeros((len(index[d - 1]), *values.shape[1:])), forest.parent[d - 1], values
            )
    return out


def _add_rows(out: torch.Tensor, index: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """out[index[m]] += values[m] for every m, in place, in the same order at every call (same bytes)."""
    if out.device.type == "cpu":  # the CPU index_add_ adds in index order
        return out.index_add_(0, index, values)
    return _add_rows_dense(out, index, values)  # elsewhere index_add_ adds atomically, in no fixed order


def _add_rows_dense(out: torch.Tensor, index: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``_add_rows`` as a product with the (M, rows) one-hot matrix of ``index``."""
    onehot = torch.nn.functional.one_hot(index, len(out)).to(values.dtype)  # (M, rows)
    return out.add_((onehot.T @ values.reshape(len(index), -1)).view_as(out))


def _train_batched(runs: Sequence[Run], progress: bool) -> list[TrainResult]:
    task0, model0, cfg0 = runs[0]
    K, N, B, T = task0.K, task0.N, len(runs), cfg0.steps
    dt = torch.float64 if cfg0.dtype == "float64" else torch.float32
    dev = torch.device(cfg0.device)
    if cfg0.device == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            "device='cuda' was requested but torch.cuda.is_available() is False; use device='cpu'"
        )

    # The shared input set as a forest of token sequences with two label slots per leaf, and per
    # distinct p the exact probabilities of the inputs.
    run_p = [sp.nsimplify(task.p) for task, _, _ in runs]
    pops = {p: task.population() for p, (task, _, _) in zip(run_p, runs, strict=True)}
    pop0 = next(iter(pops.values()))
    forest = _forest(pop0.tokens, pop0.labels, K, dev)
    L = len(forest.slot_label)
    slot_of_input = torch.as_tensor(forest.slot_of_input, device=dev)
    present = torch.zeros(2 * L, dtype=torch.bool, device=dev)
    present[slot_of_input] = True
    absent = None if bool(present.all()) else ~present.view(L, 2, 1)  # slots without an input
    weight_of = {p: torch.as_tensor(pop.float_probs(), dtype=dt, device=dev) for p, pop in pops.items()}
    weights = torch.stack([weight_of[p] for p in run_p], dim=1)  # (n, B) per input, population order
    w = weights.new_zeros(2 * L, B).index_copy_(0, slot_of_input, weights).view(L, 2, B)  # per slot
    w_leaf = w.sum(1)  # (L, B)
    classes = len(pop0.prob_values)
    slot_class = torch.full((2 * L,), classes, dtype=torch.int64, device=dev)  # (2L,) absent slot: classes
    slot_class[slot_of_input] = torch.as_tensor(pop0.prob_index, device=dev)
    class_values = torch.tensor(
        [[float(v) for v in pops[p].prob_values] for p in run_p], dtype=torch.float64, device=dev
    )  # (B, classes) probability of one input of each class, per run
    slot_label = forest.slot_label[:, :, None].expand(L, 2, B)  # (L, 2, B)
    rtol = cfg0.effective_tie_rtol
    record_steps = _recorded(cfg0)
    up, down = (torch.arange(K, device=dev) + 1) % K, (torch.arange(K, device=dev) - 1) % K

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
    loss_derivative = LOSS_DERIVATIVES[str(cfg0.loss)]
    eps = float(cfg0.eps)
    eta_all = torch.tensor(
        [[learning_rate_at(cfg, t) for _, _, cfg in runs] for t in range(T)], dtype=dt, device=dev
    )

    hist = {key: np.full((B, T + 1), np.nan) for key in BATCHED_HISTORY_KEYS}
    alive = torch.ones(B, dtype=torch.bool, device=dev)
    diverged: list[int | None] = [None] * B
    profile = torch.zeros(N, B, dtype=dt, device=dev)
    pred = torch.zeros(L, B, dtype=torch.int64, device=dev)
    up_values = {
        recorded: torch.empty(L, 4 if recorded else 3, B, dtype=dt, device=dev) for recorded in (False, True)
    }
    bar = tqdm(total=T, disable=not (progress and sys.stderr.isatty()), desc="rw batched", unit="step")
    for t in range(T + 1):
        recorded = record_steps is None or t in record_steps or t == T
        # Factored attention: S_nj = E_j U_{s_nj} / Z_n (j < N), S_nN = e_N / Z_n, every factor <= 1.
        a_tok = s * qT[:-1]  # (N-1, B) positional part of the token logits
        a_w = s * wT  # (K, B) token part of the token logits
        a_w_max = a_w.max(0).values  # (B,)
        shift = torch.maximum(a_tok.max(0).values + a_w_max, sN * qT[-1])  # (B,)
        U = torch.exp(a_w - a_w_max)  # (K, B)
        E = torch.exp(a_tok - shift + a_w_max)  # (N-1, B)
        eN = torch.exp(sN * qT[-1] - shift)  # (B,)
        UE = E[:, None, :] * U[None]  # (N-1, K, B) [j, k]
        VUE = E[:, None, None, :] * (VT * U[None]).permute(1, 0, 2)[None]  # (N-1, K, K, B) [j, k, i]
        if recorded:  # Z and Z·f for every class, then Z·e_yᵀ f of each slot
            table = torch.cat([UE[:, :, None], VUE], dim=2).view((N - 1) * K, K + 1, B)
            leaf = _down(table, forest, forest.index)  # (L, 1 + K, B)
            F = leaf[:, 1:]  # (L, K, B) Z·f
            A = torch.empty(L, 2, B, dtype=dt, device=dev)  # (L, 2, B) F at the labels root ± 1
            for c in range(K):
                lo, hi = int(forest.root_bounds[c]), int(forest.root_bounds[c + 1])
                A[lo:hi, 0] = F[lo:hi, (c + 1) % K]
                A[lo:hi, 1] = F[lo:hi, (c - 1) % K]
        else:  # Z and Z·e_yᵀ f of both slots; table row (j, k, root): U E, V U E at labels root ± 1
            table = torch.stack(
                [UE[:, :, None].expand(N - 1, K, K, B), VUE[:, :, up], VUE[:, :, down]], dim=3
            )
            leaf = _down(table.view((N - 1) * K * K, 3, B), forest, forest.index_root)  # (L, 3, B)
            A = leaf[:, 1:]  # (L, 2, B)
        Z = leaf[:, 0] + eN  # (L, B)
        z = A.div_(Z[:, None])  # (L, 2, B) e_yᵀ f, in place of A
        weighted = loss_fn(z, eps).mul_(w)  # (L, 2, B)
        g = loss_derivative(z, eps).mul_(w)  # (L, 2, B) weight ℓ'(z)
        if absent is not None:
            weighted, g = weighted.masked_fill(absent, 0.0), g.masked_fill(absent, 0.0)
        L_run = weighted.sum((0, 1))  # (B,) the objective of each run
        # Outside the log-loss domain (z + ε <= 0) the loss is NaN or inf, so L is not finite either;
        # Z = 0 means every attention weight underflowed (logits apart by more than the dtype's range).
        bad = ~torch.isfinite(L_run) | (Z.amin(0) <= 0)
        for b in torch.nonzero(bad & alive).flatten().tolist():
            diverged[b] = t
        alive &= ~bad
        if recorded:
            pred = predict(F, rtol)  # (L, B) ŷ of f = F / Z: the tie rule is invariant under Z > 0
            correct = (pred[:, None] == slot_label).to(torch.float64).view(2 * L, B)
            counts = _add_rows(correct.new_zeros(classes + 1, B), slot_class, correct)  # (classes + 1, B)
            counts = counts[:classes]  # correct inputs per probability class
            hist["test_accuracy"][:, t] = (counts.T * class_values).sum(1).cpu().numpy()
            hist["train_loss"][:, t] = L_run.cpu().numpy()
        hist["ones_residual"][:, t] = ones_residuals(VT).cpu().numpy()
        hist["circulant_residual"][:, t] = circulant_residuals(VT).cpu().numpy()
        # Backward in the factors (module doc): with r = g / Z, sums up the forest give
        # T1[i, j, k] = Σ_{n: y_n = i} 1{s_nj = k} r_n, T2[j, k] = Σ_n 1{s_nj = k} r_n z_n and, when
        # recorded, R[j, k] = Σ_n weight_n 1{s_nj = k} / Z_n.
        values = up_values[recorded]  # (L, 3 or 4, B): r of both slots, Σ_slots r·z[, weight / Z]
        r = torch.div(g, Z[:, None], out=values[:, :2])  # (L, 2, B)
        if not bool(alive.all()):
            r.masked_fill_(~alive, 0.0)  # frozen runs: no step
        torch.mul(r[:, 0], z[:, 0], out=values[:, 2]).addcmul_(r[:, 1], z[:, 1])
        if recorded:
            torch.div(w_leaf, Z, out=values[:, 3])
        acc = _up(values, forest, forest.index_root, (N - 1) * K * K).view(N - 1, K, K, -1, B)
        if recorded:
            R = acc[:, :, :, 3].sum(2)  # (N-1, K, B)
            profile = torch.cat([E * (U[None] * R).sum(1), (eN * R[-1].sum(0))[None]])  # (N, B)
            hist["parent_attention"][:, t] = profile[N - 2].cpu().numpy()
        dead = torch.nonzero(~alive).flatten().cpu().numpy()
        for key in BATCHED_HISTORY_KEYS:
            hist[key][dead, t] = np.nan
        if t == T:
            break
        T1 = (acc[:, :, down, 0] + acc[:, :, up, 1]).permute(2, 0, 1, 3)  # (K, N-1, K, B) [i, j, k, b]
        T2 = acc[:, :, :, 2].sum(2)  # (N-1, K, B)
        gV = U[None] * (E[None, :, None] * T1).sum(1)  # (K, K, B) ∂L/∂V
        D = (VT[:, None] * T1).sum(0) - T2  # (N-1, K, B)
        gU = (E[:, None] * D).sum(0)  # (K, B) ∂L/∂U
        gE = (U[None] * D).sum(1)  # (N-1, B) ∂L/∂E
        gw = gU * U * s  # (K, B) ∂L/∂w_tok
        gq = torch.cat([gE * E * s, (-T2[-1].sum(0) * eN * sN)[None]])  # (N, B) ∂L/∂q
        eta = torch.where(alive, eta_all[t], 0.0)  # (B,)
        VT -= eta * gV
        wT -= eta * nN * gw
        qT -= eta * nN * torch.einsum("bij,jb->ib", G, gq)
        bar.update(1)
    bar.close()

    pred = pred[slot_of_input // 2]  # (n, B) per input, population order
    tokens = torch.as_tensor(pop0.tokens, dtype=torch.int64, device=dev)
    labels = torch.as_tensor(pop0.labels, dtype=torch.int64, device=dev)
    results = []
    steps = [t for t in range(T + 1) if record_steps is None or t in record_steps or t == T]
    for b, (task, model, cfg) in enumerate(runs):
        V = VT[:, :, b].cpu().numpy().astype(np.float64)
        pop = pops[run_p[b]]
        ev = EvalSet(tokens, labels, weights[:, b], weights[:, b], pop0.prob_index, pop.prob_values)
        final = {
            "V": V.tolist(),
            "attention_profile": profile[:, b].cpu().tolist(),
            "test_accuracy": accuracy(pred[:, b], ev) if diverged[b] is None else None,
        }
        history = [{"step": t, **{key: float(hist[key][b, t]) for key in _RECORDED_KEYS}} for t in steps]
        step = diverged[b]
        results.append(
            TrainResult(
                config={"task": task.describe(), "model": model.to_dict(), "train": cfg.to_dict()},
                history=history,
                final=final,
                trace={key: hist[key][b] for key in BATCHED_HISTORY_KEYS[3:]},
                model=registered_model(model),
                diverged=None
                if step is None
                else Diverged(f"the run left the loss domain or stopped being finite at step {step}", step),
            )
        )
    return results
