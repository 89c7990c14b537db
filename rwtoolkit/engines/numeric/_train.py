"""Full-batch gradient descent on an exact population or sampled walks, with metrics at every (recorded) step."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch
from tqdm import tqdm

from rwtoolkit.engines.numeric._config import (
    ModelConfig,
    TrainConfig,
    memory_estimate,
    registered_model,
    validate,
)
from rwtoolkit.engines.numeric._embeddings import nominal_mu, positional_embeddings
from rwtoolkit.engines.numeric._losses import Diverged, SampleLoss
from rwtoolkit.engines.numeric._metrics import (
    EvalSet,
    accuracy,
    circulant_residual,
    f_direction_error,
    kl_divergence,
    ones_residual,
    predict,
    v_direction_error,
)
from rwtoolkit.engines.numeric._model import FastModel, GenericModel, initial_parameters
from rwtoolkit.io import check_memory
from rwtoolkit.tasks import CircleWalk, FiniteTask

HISTORY_KEYS = (
    "step",
    "train_loss",
    "test_accuracy",
    "parent_attention",
    "attention_profile",
    "attention_spread",
    "kl",
    "v_direction_error",
    "f_direction_error",
    "circulant_residual",
    "ones_residual",
)


#: The format id and version of ``metrics.json`` (``TrainResult.to_json``; schema ``rwtoolkit.io.load_schema("metrics")``).
#: Version 2 names μ ``mu`` in ``config.model`` (version 1, without these two keys, called it ``pos_norm``).
METRICS_FORMAT = "rw-metrics"
METRICS_VERSION = 2


#: A run of a torch engine: the task, the model (``ModelConfig``, its ``registered`` model of record) and
#: the gradient descent (``TrainConfig``). Every torch engine takes a sequence of runs and returns one
#: ``TrainResult`` per run: ``engine(runs, progress=False) -> list[TrainResult]``.
Run = tuple[CircleWalk | FiniteTask, ModelConfig, TrainConfig]


@dataclass
class TrainResult:
    """What a run of any torch engine produced (the one trajectory type of the torch arithmetic).

    ``config``, ``history`` (one record per recorded step), ``final`` (the parameters at the last step and the
    attention profile), ``snapshots``, and with ``record_params`` the parameters at every recorded step,
    ``params[t]``. The generic engine (``train_model``) records every parameter of the model of record and
    sets ``description`` (the model's ``describe()``); the reduced engines record the reduced view of the
    paper's model: V, w = W x̃_N (and A with the ReLU head), and the metrics of ``HISTORY_KEYS``.

    ``history[i]["train_loss"]`` is the training objective, the weighted mean of ℓ(z) over the training
    set; for the log-loss ℓ(z) = -log(z + ε) it is negative whenever z + ε > 1 (z = e_yᵀf can reach 1),
    so values down to -log(1 + ε) are expected, not a bug.

    ``trace[key]``: a (steps + 1,) float64 array of a quantity of V measured at EVERY step (``ones_residual``,
    ``circulant_residual``), where the engine measures it: the batched engine and the generic engine of a
    model with a K×K value matrix V (rw sweep's escape and symmetry-break steps read it).
    ``diverged``: the ``Diverged`` of a run that left the loss domain or stopped being finite (its history
    then ends there); ``observations[t]`` holds what ``train``'s ``observe(t, model)`` returned at recorded
    step t. ``net`` is the trained FastModel/GenericModel of ``train``; ``model`` the model of record every
    torch engine ran (``rwtoolkit.models.Model``). None of these is in the JSON.

    A ``TrainResult`` is the torch arithmetic's ``rwtoolkit.engines.Trajectory``: ``parameter_names`` (the
    model's parameters in the generic engine; V, w and, with the ReLU head, A in the reduced ones), ``times``
    (the recorded steps), ``value(t, name)`` and ``loss(t)`` as float64, and ``reduced`` (the result itself
    where a reduced engine ran, else None).
    """

    #: The arithmetic of every torch engine (``rwtoolkit.engines.Trajectory``).
    arithmetic: ClassVar[str] = "torch"

    config: dict
    history: list[dict]
    final: dict
    snapshots: dict[int, dict] = field(default_factory=dict)
    net: Any = field(default=None, repr=False, compare=False)  # the trained FastModel/GenericModel
    observations: dict[int, Any] = field(default_factory=dict, repr=False, compare=False)
    params: dict[int, dict] | None = None
    description: dict | None = None
    trace: dict[str, np.ndarray] | None = field(default=None, repr=False, compare=False)
    diverged: Diverged | None = None
    model: Any = field(default=None, repr=False, compare=False)  # the model of record

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """The parameters ``value`` reads, in the engine's order: those of ``final`` (none if it diverged)."""
        return tuple(k for k in self.final if k not in _FINAL_READOUTS)

    @property
    def times(self) -> tuple[int, ...]:
        """The recorded steps (those of ``history``)."""
        return tuple(int(record["step"]) for record in self.history)

    def value(self, t: int, name: str) -> np.ndarray:
        """Parameter ``name`` (``parameter_names``) or the read-out ``loss``, ``accuracy`` or
        ``mean_attention`` at recorded step t, as float64: a parameter at every recorded step with
        ``record_params``, else at the last step (``final``)."""
        if name in _READOUT_KEYS:
            return np.asarray(self._record(t)[_READOUT_KEYS[name]], dtype=np.float64)
        if name not in self.parameter_names:
            raise ValueError(
                f"no parameter or read-out {name!r}: use {', '.join((*self.parameter_names, *_READOUT_KEYS))}"
            )
        if self.params is not None and t in self.params:
            return np.asarray(self.params[t][name], dtype=np.float64)
        if t == self._last_step():
            return np.asarray(self.final[name], dtype=np.float64)
        raise ValueError(
            f"{name} at step {t}: the parameters are kept at the last step only; "
            "record them at every recorded step with TrainConfig(record_params=True)"
        )

    def loss(self, t: int) -> float:
        """The training loss at recorded step t (``history``'s ``train_loss``)."""
        return float(self._record(t)["train_loss"])

    @property
    def reduced(self) -> TrainResult | None:
        """The result itself where a reduced engine ran (``description`` None), else None."""
        return self if self.description is None else None

    def _record(self, t: int) -> dict:
        for record in self.history:
            if record["step"] == t:
                return record
        raise ValueError(f"step {t} is not recorded: the recorded steps are {list(self.times)}")

    def _last_step(self) -> int:
        """The run's last step, at which ``final`` holds the parameters."""
        return int(self.config["train"]["steps"] if "train" in self.config else self.config["steps"])

    def to_json(self) -> dict:
        """JSON-able dict, the one writer of every engine's ``metrics.json``.

        The reduced view (no ``description``): format, version, config, history, final, snapshots (steps as
        string keys) and, with ``record_params``, "params". The generic engine: model, config, history, final.
        """
        if self.description is not None:
            return {
                "model": self.description,
                "config": self.config,
                "history": self.history,
                "final": self.final,
            }
        out = {
            "format": METRICS_FORMAT,
            "version": METRICS_VERSION,
            "config": self.config,
            "history": self.history,
            "final": self.final,
            "snapshots": {str(k): v for k, v in sorted(self.snapshots.items())},
        }
        if self.params is not None:
            out["params"] = {str(k): v for k, v in sorted(self.params.items())}
        return out

    def series(self, key: str, steps: int) -> np.ndarray:
        """``key`` at the steps 0..steps as a float64 array: ``trace[key]`` where measured at every step, else
        the recorded steps' values (NaN at the others, and where a record holds None)."""
        if self.trace is not None and key in self.trace:
            return self.trace[key]
        out = np.full(steps + 1, np.nan)
        for record in self.history:
            value = record.get(key)
            if value is not None:
                out[record["step"]] = value
        return out

    @property
    def final_accuracy(self) -> float:
        """The accuracy at the last step: ``final``'s where the engine counts it exactly (the batched
        engine), else the last record's."""
        if "test_accuracy" in self.final:
            return self.final["test_accuracy"]
        return self.history[-1]["test_accuracy"]

    def W(self) -> np.ndarray:
        """The full trained W ∈ R^{(K+M)×(K+M)} (rebuilt from the rank-one updates on the fast path)."""
        return self.net.full_W().cpu().numpy()


#: The read-outs ``TrainResult.value`` reads, by the exact trajectory's names, and their ``history`` keys.
_READOUT_KEYS = {"loss": "train_loss", "accuracy": "test_accuracy", "mean_attention": "attention_profile"}
#: The entries of ``TrainResult.final`` that are not parameters.
_FINAL_READOUTS = ("attention_profile", "test_accuracy")


def _seed_sequences(seed: int) -> list[np.random.SeedSequence]:
    """The train, test and init streams of a run: one SeedSequence(seed) spawns the three."""
    return np.random.SeedSequence(seed).spawn(3)


def init_generator(seed: int) -> np.random.Generator:
    """The generator ``train`` draws a Gaussian init from (the third stream of ``seed``)."""
    return np.random.default_rng(_seed_sequences(seed)[2])


def _data(task, cfg: TrainConfig, dt, dev) -> tuple[EvalSet, EvalSet, np.random.Generator]:
    """(train set, test set, init generator). Seeds: one SeedSequence(seed) spawns train, test, init."""
    train_seq, test_seq, init_seq = _seed_sequences(cfg.seed)

    def make(tokens: np.ndarray, labels: np.ndarray, weights: np.ndarray, pop: Any = None) -> EvalSet:
        return EvalSet(
            tokens=torch.as_tensor(tokens, dtype=torch.int64, device=dev),
            labels=torch.as_tensor(labels, dtype=torch.int64, device=dev),
            weights=torch.as_tensor(weights, dtype=dt, device=dev),
            true_law=torch.as_tensor(task.bayes_scores(tokens), dtype=dt, device=dev),
            prob_index=None if pop is None else pop.prob_index,
            prob_values=None if pop is None else pop.prob_values,
        )

    if cfg.population:
        pop = task.population()
        ev = make(pop.tokens, pop.labels, pop.float_probs(), pop)
        if cfg.rotate:  # the walks rooted at node 0 with weights ×K: the law of the walk given s_1 = 0
            rooted = task.rooted_population()
            train_set = make(rooted.tokens, rooted.labels, rooted.float_probs() * task.K)
            return train_set, ev, np.random.default_rng(init_seq)
        return ev, ev, np.random.default_rng(init_seq)
    tr_tokens, tr_labels = task.sample(cfg.train_size, generator=np.random.default_rng(train_seq))
    te_tokens, te_labels = task.sample(cfg.test_size, generator=np.random.default_rng(test_seq))
    train_set = make(tr_tokens, tr_labels, np.full(cfg.train_size, 1.0 / cfg.train_size))
    test_set = make(te_tokens, te_labels, np.full(cfg.test_size, 1.0 / cfg.test_size))
    return train_set, test_set, np.random.default_rng(init_seq)


def learning_rate_at(cfg: TrainConfig, t: int) -> float:
    eta = cfg.eta(t) if callable(cfg.eta) else cfg.eta
    if isinstance(eta, bool) or not isinstance(eta, (int, float)) or not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"eta({t}) = {eta!r} is out of range: the learning rate must be a finite number > 0")
    return float(eta)


def train(
    task: CircleWalk | FiniteTask,
    model: ModelConfig,
    cfg: TrainConfig,
    progress: bool = True,
    observe: Callable[[int, object], object] | None = None,
    trace: bool = False,
) -> TrainResult:
    """Full-batch GD on f = V X S(X̃ᵀWx̃_N) (docs/theory.md#model); history holds the metrics at each recorded step t.

    ``observe(t, model)``, if given, is called at each recorded step with the model at step t (for
    metrics of one's own); its return value is kept in ``result.observations[t]``. ``trace``: V's ones and
    circulant residuals at every step in ``result.trace`` (V is K×K: without ``relu_width``).

    >>> from rwtoolkit.tasks import CircleWalk
    >>> r = train(CircleWalk(3, 4, "1/2"), ModelConfig(K=3, N=4, M=5), TrainConfig(steps=2, population=True),
    ...           progress=False)
    >>> [h["step"] for h in r.history], r.history[0]["test_accuracy"]
    ([0, 1, 2], 0.333...)
    """
    _check(task, model, cfg)
    previous_threads = torch.get_num_threads()
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    try:
        return _train(task, model, cfg, progress, observe, trace)
    finally:
        torch.set_num_threads(previous_threads)


def train_runs(runs: Sequence[Run], progress: bool = False, trace: bool = False) -> list[TrainResult]:
    """The reduced engine (``FastModel``; the faithful path with ``fast=False``) on each run: ``train(*run)``.

    The torch engines' one signature (``rwtoolkit.engines.select``): ``engine(runs, progress=, trace=)``,
    runs of (task, ``ModelConfig``, ``TrainConfig``), one ``TrainResult`` per run; ``trace``: V's residuals
    at every step in ``TrainResult.trace`` where V is K×K. Every run is checked and its memory estimated
    before the first one trains; a run that diverges is reported in ``diverged``, the others go on.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> [r] = train_runs([(CircleWalk(3, 4, "1/2"), ModelConfig(K=3, N=4, M=5), TrainConfig(steps=1, population=True))])
    >>> r.history[-1]["step"], r.diverged
    (1, None)
    """
    for task, model, cfg in runs:
        _check(task, model, cfg)
    results = []
    for task, model, cfg in runs:
        try:
            results.append(train(task, model, cfg, progress=progress, trace=trace))
        except Diverged as err:
            config = {"task": task.describe(), "model": model.to_dict(), "train": cfg.to_dict()}
            results.append(
                TrainResult(config=config, history=[], final={}, diverged=err, model=registered_model(model))
            )
    return results


def _check(task: CircleWalk | FiniteTask, model: ModelConfig, cfg: TrainConfig) -> None:
    """Every argument valid and the run's memory estimate fits (one line otherwise), before any work."""
    validate(task, model, cfg)
    parts = memory_estimate(task, model, cfg)
    largest = max(parts, key=parts.__getitem__)
    check_memory(
        sum(parts.values()),
        f"training K={model.K}, N={model.N}, M={model.M} (largest part: {largest})",
        _MEMORY_ALTERNATIVES[largest],
    )


#: What to lower when a part of ``memory_estimate`` dominates a refused request.
_MEMORY_ALTERNATIVES = {
    "inputs": "use a smaller train_size/test_size (--train-size, --test-size) or N",
    "activations": "use a smaller train_size/test_size (--train-size, --test-size) or N",
    "embeddings": "use a smaller M or N (and the fast path with zero init, which never builds W)",
    "history": "record fewer steps (record_steps, --record-steps) or drop record_params",
    "overhead": "free some memory",
}


def _train(
    task: CircleWalk | FiniteTask, model: ModelConfig, cfg: TrainConfig, progress: bool, observe, trace: bool
) -> TrainResult:
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            "device='cuda' was requested but torch.cuda.is_available() is False; use device='cpu'"
        )
    dt = torch.float64 if cfg.dtype == "float64" else torch.float32
    dev = torch.device(cfg.device)
    K, N = model.K, model.N
    is_circle = isinstance(task, CircleWalk)
    Pi = task.transition_matrix_float() if isinstance(task, CircleWalk) else None

    P_np = positional_embeddings(model.pos, model.M, N, model.mu, model.pos_seed)
    mu = nominal_mu(model.pos, model.M, P_np, model.mu)
    train_set, test_set, init_rng = _data(task, cfg, dt, dev)
    V0, W0, A0 = initial_parameters(K, model.M, model.relu_width, cfg.init, cfg.sigma, init_rng)

    def tensor(a):
        return None if a is None else torch.as_tensor(a, dtype=dt, device=dev)

    P = tensor(P_np)
    net: FastModel | GenericModel
    if cfg.fast:
        net = FastModel(
            P,
            K,
            model.normalize_attention,
            tensor(V0),
            tensor(W0),
            tensor(A0),
            mu if model.gram == "ideal" else None,
        )
    else:  # the model of record, full W, always the float P
        W_full = np.zeros((K + model.M, K + model.M)) if W0 is None else W0
        start = {"V": V0, "W": W_full, **({} if A0 is None else {"A": A0})}
        net = GenericModel(registered_model(model), P, K, {k: tensor(v) for k, v in start.items()})
    loss = SampleLoss(cfg.loss, cfg.eps)
    rtol = cfg.effective_tie_rtol
    snap_steps = set(int(s) for s in cfg.snapshots)
    record_steps = None if cfg.record_steps is None else {int(s) for s in cfg.record_steps}
    observations: dict[int, object] = {}

    config = {
        "task": task.describe(),
        "model": model.to_dict(),
        "train": cfg.to_dict(),
        "mu": mu,
        "history_keys": list(HISTORY_KEYS),
    }
    history: list[dict] = []
    snapshots: dict[int, dict] = {}
    params: dict[int, dict] | None = {} if cfg.record_params else None
    residuals = trace_arrays(cfg.steps) if trace and model.relu_width is None else None
    bar = tqdm(total=cfg.steps, disable=not (progress and sys.stderr.isatty()), desc="rw train", unit="step")
    for t in range(cfg.steps + 1):
        L = net.loss_and_grad(train_set.tokens, train_set.labels, train_set.weights, loss, t)
        if residuals is not None:
            trace_step(residuals, t, net.V.detach().cpu().numpy().astype(np.float64))
        recorded = record_steps is None or t in record_steps
        if not (recorded or t in snap_steps or t == cfg.steps):  # the final step is evaluated for ``final``
            _advance(net, cfg, t)
            bar.update(1)
            continue
        f, S, XS = net.evaluate(test_set.tokens)
        V = net.V.detach().cpu().numpy().astype(np.float64)
        square = model.relu_width is None  # V is K×K only without the ReLU layer
        profile = (test_set.weights[:, None] * S).sum(0)  # (N,) mean attention per position
        spread = (S[:, :-1].max(1).values - S[:, :-1].min(1).values).max()
        record = {
            "step": t,
            "train_loss": L,
            "test_accuracy": accuracy(predict(f, rtol), test_set),
            "parent_attention": float(profile[N - 2]),
            "attention_profile": profile.cpu().tolist(),
            "attention_spread": float(spread),
            "kl": kl_divergence(f, test_set, cfg.kl_norm, cfg.eps),
            "v_direction_error": v_direction_error(V, Pi) if Pi is not None and square else None,
            "f_direction_error": f_direction_error(f, test_set),
            "circulant_residual": circulant_residual(V) if is_circle and square else None,
            "ones_residual": ones_residual(V) if square else None,
        }
        _check_finite(record, t)
        if recorded:
            history.append(record)
            if params is not None:
                params[t] = _parameters(net, V)
            if observe is not None:
                observations[t] = observe(t, net)
        if t in snap_steps:
            snapshots[t] = {
                "V": V.tolist(),
                "attention_profile": record["attention_profile"],
                "attended_token": (test_set.weights[:, None] * XS).sum(0).cpu().tolist(),
            }
        if t < cfg.steps:
            _advance(net, cfg, t)
            bar.update(1)
    bar.close()
    final = {"attention_profile": record["attention_profile"], **_parameters(net, V)}
    return TrainResult(
        config=config,
        history=history,
        final=final,
        snapshots=snapshots,
        net=net,
        observations=observations,
        trace=residuals,
        params=params,
        model=registered_model(model),
    )


#: What ``TrainResult.trace`` holds at every step: V's ones and circulant residuals (V K×K).
TRACE_KEYS = ("ones_residual", "circulant_residual")


def trace_arrays(steps: int) -> dict[str, np.ndarray]:
    """An empty ``TrainResult.trace`` of a run of ``steps`` steps (NaN until measured)."""
    return {key: np.full(steps + 1, np.nan) for key in TRACE_KEYS}


def trace_step(trace: dict[str, np.ndarray], t: int, V: np.ndarray) -> None:
    """V's residuals at step t into ``trace`` (float64 V, as every engine measures them)."""
    trace["ones_residual"][t] = ones_residual(V)
    trace["circulant_residual"][t] = circulant_residual(V)


def _parameters(net, V: np.ndarray) -> dict:
    """V, w = W x̃_N (all of W the model uses at the query) and, with the ReLU head, A, as nested lists."""
    out = {"V": V.tolist(), "w": net.w().cpu().tolist()}
    if net.A is not None:
        out["A"] = net.A.detach().cpu().tolist()
    return out


def _advance(net, cfg: TrainConfig, t: int) -> None:
    """The GD update from step t to t+1 (gradients already computed), rotation-projected if ``cfg.rotate``."""
    if cfg.rotate:
        net.project_rotation()
    net.step(learning_rate_at(cfg, t))


def _check_finite(record: dict, t: int) -> None:
    """Refuse to emit NaN/inf: name the metric and the step."""
    for key, value in record.items():
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, float) and not math.isfinite(v) for v in values):
            raise Diverged(f"metric {key!r} is not finite at step {t}: the run diverged (lower eta)", t)
