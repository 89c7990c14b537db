"""The generic torch engine: full-batch GD on the exact population for any registered model.

Every model of ``rwtoolkit.models.MODELS`` trains here with the model's one forward pass and the tape's
gradient (``rwtoolkit.models.gradient_steps``) on torch tensors of one dtype on one device; the paper's model
keeps registered specialisations (``train_runs``, ``train_batched``) that ``rwtoolkit.engines.select`` picks
and that return the same ``TrainResult``. ``train_model_runs`` is the engine in the torch engines' one
signature (runs of (task, ModelConfig, TrainConfig)); ``train_model`` one run with an explicit P. The data are the task's exact population
with float weights; the positions are any float (M, N) array P (``rw train`` passes its --pos embeddings).
The Gaussian init draws every parameter i.i.d. N(0, σ²) in the order of ``model.shapes`` from the init stream
of ``seed`` (``rwtoolkit.engines.numeric.init_generator``, the stream ``train`` draws from); ``own`` is the model's
own start (``Model.initial``: a sequence program's float64 initial values). A model with next-token logits (a
``rwtoolkit.models.SequenceModel``) trains on its cross-entropy objective (``"lm"`` by default, ``"last"``;
``rwtoolkit.models.CrossEntropy``) and records no attention (it has no S over the N positions).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from rwtoolkit.engines.numeric._arith import TorchArithmetic
from rwtoolkit.engines.numeric._checkpoint import (
    Checkpoints,
    checkpoint_bytes,
    load_checkpoint,
    restored_rule_state,
    save_checkpoint,
)
from rwtoolkit.engines.numeric._config import (
    ModelConfig,
    TrainConfig,
    check_seed_and_record_steps,
    registered_model,
    stages_record,
)
from rwtoolkit.engines.numeric._embeddings import positional_embeddings
from rwtoolkit.engines.numeric._losses import LOSS_FUNCTIONS, Diverged, TensorLoss
from rwtoolkit.engines.numeric._train import Run, TrainResult, trace_arrays, trace_step
from rwtoolkit.io import check_memory, format_bytes
from rwtoolkit.models import (
    RULE_STATE_KEYS,
    CrossEntropy,
    Model,
    Optimizer,
    Schedule,
    Sizes,
    batch,
    gradient_steps,
    objective_name,
    stage_plan,
)
from rwtoolkit.tasks import CircleWalk, FiniteTask, check_loss

#: Keys of every history record of ``train_model`` (the last two for a model with an attention S).
MODEL_HISTORY_KEYS = ("step", "train_loss", "test_accuracy", "parent_attention", "attention_profile")
#: Fixed memory for torch's first kernels and allocator (as ``memory_estimate``'s overhead).
_OVERHEAD_BYTES = 32 * 2**20


def model_memory_estimate(task: CircleWalk | FiniteTask, model: Model, M: int, steps: int, dtype: str) -> int:
    """Bytes of one ``train_model`` run at its peak (an upper estimate): the embedded population
    X, X̃ (n, K+M, N) with its NumPy temporaries, the tape's activations and gradients, parameters and history.
    """
    n = population_size(task)
    K, N = task.K, task.N
    b = 8 if dtype == "float64" else 4
    D = K + M
    params = model.parameter_count(Sizes(K=K, M=M, N=N))
    width = max(model.hyperparameters.get("d", 1), 1)
    inputs = b * n * N * (K + 2 * D) + 3 * 8 * n * K * N  # X, P broadcast, X̃; one-hot in NumPy
    activations = b * n * N * (4 * width + 12 + 2 * K)  # keys and their gradient, logits, S, XS, f
    history = 8 * 4 * (steps + 1) * (N + 8)
    return inputs + activations + 8 * b * params + history + _OVERHEAD_BYTES


#: Seconds of one step (evaluation, gradient and update on the whole population, one torch thread, float64)
#: as ``_STEP_SECONDS + seconds-per-operation × operations``: a model with next-token logits counts three
#: forward passes of its program per sequence (``rwtoolkit.models.forward_operations``), another model
#: 3·n·N·D·(1 + parameters/D) multiply-adds (its matrix products, which torch runs faster per operation).
#: Measured on the 2-core machine shared by four jobs (load 1.5-2.4), 200 steps each after 5 of warm-up:
#: examples/nanogpt_attention.py's two_layer on icl_markov S = 2, N = 7 (128 sequences, 1.44e6 operations)
#: 15.5 ms a step, N = 5 (32, 2.1e5) 5.7 ms, one_layer N = 4 (16, 4.1e4) 3.7 ms; key_query (d = 1) on the
#: circle walk K = 3, N = 6, M = 1000 (96 walks, 8.7e6 multiply-adds) 2.6 ms. The constants are that fit
#: (4.0 ms + 8.0e-9 s an operation) with a quarter more per operation, an upper estimate;
#: benchmarks/train_long.py times 10^4 steps against it.
_STEP_SECONDS = 4e-3
_SECONDS_PER_SEQUENCE_OP = 1.0e-8
_SECONDS_PER_MULTIPLY_ADD = 1.0e-10
#: Bytes of one recorded step in metrics.json (step, train_loss, test_accuracy at indent 1), of one float in
#: it (an attention profile's entry, a parameter's), and its fixed part (config, model, keys).
_RECORD_BYTES = 128
_FLOAT_BYTES = 26
_HEADER_BYTES = 4096


@dataclass(frozen=True)
class TrainEstimate:
    """A generic-engine run planned before any work: ``seconds`` of its steps, peak ``memory`` (bytes,
    ``model_memory_estimate``), and ``file_bytes`` of metrics.json plus its checkpoint where it writes one."""

    seconds: float
    memory: int
    file_bytes: int

    def describe(self) -> str:
        return (
            f"{_duration(self.seconds)}, {format_bytes(self.memory)} of memory, "
            f"{format_bytes(self.file_bytes)} of files"
        )


def _duration(seconds: float) -> str:
    return (
        f"{seconds:.3g} s"
        if seconds < 120
        else f"{seconds / 60:.3g} min"
        if seconds < 7200
        else f"{seconds / 3600:.3g} h"
    )


def model_train_estimate(
    task: CircleWalk | FiniteTask,
    model: Model,
    M: int,
    steps: int,
    dtype: str = "float64",
    record_steps: Collection[int] | None = None,
    record_params: bool = False,
    checkpoint_every: int | None = None,
    first: int = 0,
    optimizer: Optimizer | None = None,
) -> TrainEstimate:
    """Seconds, memory and output bytes of a ``train_model`` run of ``steps`` steps from step ``first`` (a
    resumed run's), recording ``record_steps`` (None: every step) and the last, with every parameter at those
    steps where ``record_params``, and one checkpoint file where ``checkpoint_every`` is given (overwritten:
    it holds θ and the records so far, so its size is bounded by the run's records, not by the number of
    checkpoints; with the state of ``optimizer``'s rule, one more copy of the parameters per buffer: momentum's
    b, Adam's m and v). The seconds are this machine's (the constants above); a float32 or CUDA run is counted as
    float64 on the CPU (an upper estimate for these small tensors).

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> e = model_train_estimate(CircleWalk(3, 6, "1/2"), get_model("key_query"), 1000, 10**5, record_steps=[0])
    >>> round(e.seconds), e.file_bytes < 200_000
    (487, True)
    """
    from rwtoolkit.models import forward_operations

    n = population_size(task)
    sizes = Sizes(K=task.K, M=M, N=task.N)
    params = model.parameter_count(sizes)
    if getattr(model, "TOKEN_LOGITS", False):
        per_step = _STEP_SECONDS + _SECONDS_PER_SEQUENCE_OP * 3 * n * forward_operations(model, sizes)  # type: ignore[arg-type]
        attention = 0
    else:
        per_step = _STEP_SECONDS + _SECONDS_PER_MULTIPLY_ADD * 3 * n * task.N * sizes.D * (
            1 + params / sizes.D
        )
        attention = task.N + 1  # parent_attention and the profile
    recorded = (
        steps + 1 if record_steps is None else len({t for t in record_steps if 0 <= t <= steps} | {steps})
    )
    tensors = len(model.shapes(sizes))
    record = (
        _RECORD_BYTES
        + _FLOAT_BYTES * attention
        + ((_FLOAT_BYTES * params + 1024 * tensors) if record_params else 0)
    )
    metrics = _HEADER_BYTES + recorded * record + _FLOAT_BYTES * (params + attention)
    files = metrics
    if checkpoint_every is not None:
        copies = 1 + sum(k != "t" for k in RULE_STATE_KEYS[optimizer.name]) if optimizer is not None else 1
        files += checkpoint_bytes(copies * params, copies * tensors, recorded, record)
    memory = model_memory_estimate(task, model, M, steps, dtype)
    return TrainEstimate(per_step * max(steps - first, 0), memory, files)


def population_size(task: CircleWalk | FiniteTask) -> int:
    from rwtoolkit.engines.numeric._config import population_size as size

    return size(task)


def initial_model_parameters(
    model: Model, sizes: Sizes, init: str, sigma: float, seed: int
) -> dict[str, np.ndarray]:
    """θ(0) as float64 arrays: zeros, i.i.d. N(0, σ²) in the order of ``model.shapes`` (init stream of ``seed``),
    or the model's own start (``own``; one line for a model without one)."""
    from rwtoolkit.engines.numeric._train import init_generator
    from rwtoolkit.models import FLOAT64

    shapes = model.shapes(sizes)
    if init == "zero":
        return {name: np.zeros(shape) for name, shape in shapes.items()}
    if init == "own":
        return model.own_start(FLOAT64, sizes, "zero or gaussian")
    if init != "gaussian":
        raise ValueError(f"init={init!r} is not one of zero, gaussian, own")
    rng = init_generator(seed)
    return {name: rng.normal(0.0, sigma, size=shape) for name, shape in shapes.items()}


def train_model(
    task: CircleWalk | FiniteTask,
    model: Model,
    P: np.ndarray,
    steps: int,
    eta: float = 1.0,
    eps: float = 0.1,
    loss: str = "log",
    init: str = "zero",
    sigma: float = 0.01,
    seed: int = 0,
    dtype: str = "float64",
    device: str = "cpu",
    record_steps: set[int] | None = None,
    keep_params: bool | tuple[str, ...] = False,
    progress: bool = False,
    config: dict | None = None,
    trace: bool = False,
    objective: str | None = None,
    optimizer: Optimizer | None = None,
    checkpoint: Checkpoints | None = None,
    schedule: Schedule | None = None,
    stages: Sequence[tuple[int, Collection[str]]] | None = None,
) -> TrainResult:
    """Full-batch GD θ ← θ − η∇L of ``model`` on ``task``'s exact population, positions ``P`` (M, N).

    ``objective``: the cross-entropy of a model with next-token logits (None: its default, ``"lm"``; refused
    for a model without them, which trains on ``loss``), recorded in the config where it is one.
    ``optimizer``: the update rule (``rwtoolkit.models.Optimizer``; None: plain GD θ ← θ − η∇L), the one
    definition every engine runs, here in torch arithmetic; recorded in the config (``"optimizer"``) where it
    is not plain GD.
    ``schedule`` (``rwtoolkit.models.Schedule``) and ``stages`` ((steps, parameter names) in order, covering
    ``steps``): the learning-rate schedule and the training in stages of ``gradient_steps``, recorded in the
    config where given (a resumed run goes on at the checkpoint's step of both).
    ``checkpoint``: write θ(t), the step, torch's RNG state and the metrics so far atomically every
    ``checkpoint.every`` steps, and with ``checkpoint.resume`` continue from the checkpoint (``Checkpoints``; one
    line for one of another run): the result is the same, bit for bit, as the uninterrupted run's (the rule's
    state, momentum buffers or Adam's moments and step counts, is saved and restored with θ; ``trace`` is refused
    with it).

    Records loss, accuracy (the first maximal class), parent attention (mean attention on position N-1) and
    the mean attention profile at every step of ``record_steps`` (default: every step) and at the last step
    (keys ``MODEL_HISTORY_KEYS``); with ``keep_params`` every parameter (or those it names) at those steps in
    ``params`` (float64 arrays); with ``trace``, V's ones and circulant residuals at every step in
    ``trace`` (a model with a K×K value matrix V). Raises ``Diverged`` (a ValueError) at the first step whose loss, accuracy,
    attention or parameters are not finite, or outside the log-loss domain.

    >>> from rwtoolkit.models import get_model, rational_positions
    >>> from rwtoolkit.tasks import CircleWalk
    >>> P = np.asarray(rational_positions(3, 1), dtype=float)
    >>> r = train_model(CircleWalk(3, 3, "1/2"), get_model("key_query", d=1), P, 2)
    >>> r.history[-1]["attention_profile"], r.final["W_K"]
    ([0.333..., 0.333..., 0.333...], [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    """
    check_loss(loss)
    chosen = objective_name(model, objective)
    if loss not in LOSS_FUNCTIONS:
        raise ValueError(f"loss={loss!r} is not one of {', '.join(LOSS_FUNCTIONS)}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps={steps!r} must be an integer >= 0")
    for name, value in (("eta", eta), ("eps", eps), ("sigma", sigma)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name}={value!r} is out of range: must be a finite number > 0")
    if dtype not in ("float64", "float32"):
        raise ValueError(f"dtype={dtype!r} is not one of float64, float32")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            "device='cuda' was requested but torch.cuda.is_available() is False; use device='cpu'"
        )
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] != task.N:
        raise ValueError(f"P has shape {P.shape}: positions must be (M, N) with N={task.N}")
    rule = Optimizer() if optimizer is None else optimizer
    K, N = task.K, task.N
    ar = TorchArithmetic(getattr(torch, dtype), device)
    pop = task.population()
    data = batch(ar, pop.tokens, pop.labels, ar.asarray(pop.float_probs()), K, ar.asarray(P))
    ell = TensorLoss(loss, eps) if chosen is None else CrossEntropy(chosen)
    start = {
        k: ar.asarray(v)
        for k, v in initial_model_parameters(model, data.inputs.sizes, init, sigma, seed).items()
    }
    history: list[dict] = []
    kept: dict[int, dict[str, np.ndarray]] = {}
    square_v = model.shapes(data.inputs.sizes).get("V") == (K, K)
    residuals = trace_arrays(steps) if trace and square_v else None
    cfg = {
        "steps": steps,
        "eta": eta,
        "eps": eps,
        "loss": loss,
        "init": init,
        "sigma": sigma,
        "seed": seed,
        "dtype": dtype,
        "device": device,
        "population": True,
        "inputs": data.size,
        **({} if chosen is None else {"objective": chosen}),
        **({} if rule.plain else {"optimizer": rule.describe()}),
        **({} if schedule is None else {"schedule": schedule.text}),
        **({} if stages is None else {"stages": stages_record(stages)}),
        **(config or {}),
    }
    plan = None if stages is None else stage_plan(stages, list(start), steps)  # one line before any step
    first = 0
    rule_state: dict[str, dict[str, Any]] = {}  # the rule's buffers (momentum, Adam), saved with θ(t)
    if checkpoint is not None:
        if trace:
            raise ValueError(
                "checkpoints hold θ and the rule's state, not a trace: drop --checkpoint-every/--resume or trace"
            )
        fields = {
            "config": cfg,
            "model": model.describe(),
            "record_steps": None if record_steps is None else sorted(record_steps),
            "keep_params": keep_params if isinstance(keep_params, bool) else list(keep_params),
            "threads": torch.get_num_threads(),
        }
        if checkpoint.resume:
            saved = load_checkpoint(checkpoint, fields)
            first = int(saved["step"])
            start = {k: v.to(device=ar.device, dtype=ar.dtype) for k, v in saved["params"].items()}
            history = list(saved["history"])
            kept = {int(s): {k: v.numpy() for k, v in p.items()} for s, p in saved["kept"].items()}
            rule_state = restored_rule_state(saved, ar.dtype, ar.device)
        if checkpoint.note is not None:
            print(checkpoint.note, file=sys.stderr)
    bar = tqdm(
        total=steps,
        initial=first,
        disable=not (progress and sys.stderr.isatty()),
        desc="rw train",
        unit="step",
    )
    # from step `first` on (a resumed run): the schedule's factor and the stages of the steps left
    at = schedule if schedule is None or first == 0 else (lambda t: schedule(t + first))
    left = None if plan is None else [(len(list(g)), names) for names, g in groupby(plan[first:])]
    descent = gradient_steps(
        model, ar, start, data, ell, eta, steps - first, rule, at, left or None, rule_state=rule_state
    )
    for t, state in enumerate(descent, first):
        current = state.params
        if checkpoint is not None and checkpoint.due(t, steps) and t > first:
            save_checkpoint(checkpoint, fields, t, current, history, kept, rule_state)
        if chosen is None and loss == "log" and bool((state.z + eps <= 0).any()):
            raise Diverged(
                f"log-loss -log(z+eps) is undefined at step {t}: z+eps <= 0 (lower eta or raise eps)", t
            )
        if not all(bool(torch.isfinite(v).all()) for v in current.values()):
            why = (
                "the start is not finite (lower --sigma)"
                if t == 0
                else "the run diverged (lower --eta, or --weight-decay)"
            )
            raise Diverged(f"the parameters are not finite at step {t}: {why}", t)
        if residuals is not None:
            trace_step(residuals, t, ar.to_float(current["V"]))
        if t == steps or record_steps is None or t in record_steps:
            record: dict[str, Any] = {
                "step": t,
                "train_loss": float(state.loss),
                "test_accuracy": float(state.accuracy(data, ar)),
            }
            if state.S is not None:
                profile = state.mean_attention(data.weights, ar)
                record["parent_attention"] = float(profile[N - 2])
                record["attention_profile"] = [float(x) for x in profile.cpu().tolist()]
            _check_finite(record, t)
            history.append(record)
            if keep_params:
                keep = (
                    list(current)
                    if isinstance(keep_params, bool)
                    else [k for k in keep_params if k in current]
                )
                kept[t] = {k: ar.to_float(current[k]) for k in keep}
        if t < steps:
            bar.update(1)
    bar.close()
    final = {k: ar.to_float(v).tolist() for k, v in current.items()}
    if "attention_profile" in history[-1]:
        final["attention_profile"] = history[-1]["attention_profile"]
    return TrainResult(
        cfg,
        history,
        final,
        params=kept if keep_params else None,
        description=model.describe(),
        trace=residuals,
        model=model,
    )


def train_model_runs(
    runs: Sequence[Run], progress: bool = False, trace: bool = False, checkpoint: Checkpoints | None = None
) -> list[TrainResult]:
    """The generic torch engine in the torch engines' one signature: ``train_model`` on each run.

    Each run's model of record is ``registered_model(model)`` (``ModelConfig.registered``, else the paper's
    model of its options), its positions ``positional_embeddings`` of (pos, M, N, mu, pos_seed); ``cfg``
    gives steps, eta, eps, loss, init, sigma, seed, dtype, device, threads and record_steps, and
    ``record_params`` keeps every parameter at the recorded steps; ``trace`` V's residuals at every step. The population is exact
    (``population=True``); the options of the reduced engines alone are refused in one line. Every run is
    checked and its memory estimated before the first one trains; a run that diverges is reported in
    ``diverged`` (its history left empty), the others go on. ``checkpoint``: the checkpoints of a single run
    (``train_model``), whose output size ``model_train_estimate`` counts.

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> model = ModelConfig(K=3, N=3, M=4, registered=get_model("key_query", d=1))
    >>> [r] = train_model_runs([(CircleWalk(3, 3, "1/2"), model, TrainConfig(steps=2, population=True))])
    >>> r.description, r.history[-1]["step"]
    ({'name': 'key_query', 'd': 1}, 2)
    """
    if checkpoint is not None and len(runs) != 1:
        raise ValueError(f"checkpoints are of one run, not {len(runs)}: train the runs one at a time")
    for task, model, cfg in runs:
        _check_run(task, model, cfg)
    results = []
    for task, model, cfg in runs:
        net = registered_model(model)
        P = positional_embeddings(model.pos, model.M, model.N, model.mu, model.pos_seed)
        positions = {"pos": model.to_dict()["pos"], "M": model.M, "mu": model.mu, "pos_seed": model.pos_seed}
        config = {"task": task.describe(), "positions": positions}
        previous = torch.get_num_threads()
        if cfg.threads is not None:
            torch.set_num_threads(cfg.threads)
        try:
            result = train_model(
                task, net, P, cfg.steps, eta=cfg.eta, eps=cfg.eps, loss=cfg.loss, init=cfg.init,  # type: ignore[arg-type]
                sigma=cfg.sigma, seed=cfg.seed, dtype=cfg.dtype, device=cfg.device,
                record_steps=None if cfg.record_steps is None else {int(s) for s in cfg.record_steps},
                keep_params=cfg.record_params, progress=progress, config=config, trace=trace,
                objective=cfg.objective, optimizer=cfg.optimizer, checkpoint=checkpoint,
                schedule=cfg.schedule, stages=cfg.stages,
            )  # fmt: skip
        except Diverged as err:
            result = TrainResult(config, [], {}, description=net.describe(), diverged=err, model=net)
        finally:
            torch.set_num_threads(previous)
        results.append(result)
    return results


#: What the reduced engines alone do, as (option, is it set?): refused by the generic engine.
_REDUCED_ONLY = (
    ("population=False", lambda m, c: not c.population),
    ("fast=False", lambda m, c: not c.fast),
    ("rotate=True", lambda m, c: c.rotate),
    ("snapshots", lambda m, c: len(c.snapshots) > 0),
    ("kl_norm", lambda m, c: c.kl_norm != "softmax"),
    ("tie_rtol", lambda m, c: c.tie_rtol is not None),
    ("a callable eta", lambda m, c: callable(c.eta)),
    ("a callable loss", lambda m, c: callable(c.loss)),
    ("gram='computed'", lambda m, c: m.gram != "ideal"),
)


def _check_run(task: CircleWalk | FiniteTask, model: ModelConfig, cfg: TrainConfig) -> None:
    """One line for an option the generic engine has not, or a run whose memory estimate does not fit."""
    net = registered_model(model)
    for option, given in _REDUCED_ONLY:
        if given(model, cfg):
            raise ValueError(
                f"{option} is an option of the paper model's reduced engines: the generic engine trains "
                f"{net.name} on the exact population with a number eta and a named loss"
            )
    objective_name(net, cfg.objective)
    check_seed_and_record_steps(cfg)
    if cfg.init == "own":  # one line for a model without a start of its own
        initial_model_parameters(net, Sizes(K=task.K, M=model.M, N=task.N), "own", 0.0, 0)
    memory = model_memory_estimate(task, net, model.M, cfg.steps, cfg.dtype)
    check_memory(
        memory,
        f"training {net.name} on K={task.K}, N={task.N}, M={model.M} ({format_bytes(memory)})",
        "use a smaller M, N or --head-dim",
    )


def _check_finite(record: dict, t: int) -> None:
    """Refuse to emit NaN/inf: name the metric and the step."""
    for key, value in record.items():
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, float) and not math.isfinite(v) for v in values):
            raise Diverged(f"metric {key!r} is not finite at step {t}: the run diverged (lower eta)", t)
