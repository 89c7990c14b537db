"""Full-batch GD in torch on the exact population for any registered model (``rw train --model NAME``).

The paper's model (``one_layer``) keeps its fast paths (``rwtoolkit.engines.numeric.train``, ``train_batched``); every other
model of ``rwtoolkit.models.MODELS`` trains here with the model's one forward pass and the tape's gradient
(``rwtoolkit.models.evaluate``) on torch tensors of one dtype on one device. The data are the task's exact population
with float weights; the positions are any float (M, N) array P (``rw train`` passes its --pos embeddings).
The Gaussian init draws every parameter i.i.d. N(0, σ²) in the order of ``model.shapes`` from the init stream
of ``seed`` (``rwtoolkit.engines.numeric.init_generator``, the stream ``train`` draws from).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm import tqdm

from rwtoolkit.engines.numeric._arith import TorchArithmetic
from rwtoolkit.engines.numeric._losses import LOSS_FUNCTIONS, TensorLoss
from rwtoolkit.models import Model, Sizes, batch, gradient_steps
from rwtoolkit.tasks import CircleWalk, FiniteTask, check_loss

#: Keys of every history record of ``train_model``.
MODEL_HISTORY_KEYS = ("step", "train_loss", "test_accuracy", "parent_attention", "attention_profile")
#: Fixed memory for torch's first kernels and allocator (as ``memory_estimate``'s overhead).
_OVERHEAD_BYTES = 32 * 2**20


class Diverged(ValueError):
    """The run left the loss domain or stopped being finite at ``step`` (one line)."""

    def __init__(self, message: str, step: int) -> None:
        super().__init__(message)
        self.step = step


@dataclass
class ModelTrainResult:
    """``model`` (its description), ``config``, ``history`` (one record per recorded step, keys
    ``MODEL_HISTORY_KEYS``), ``final`` (every parameter at the last step, nested lists, and the attention
    profile) and, with ``keep_params``, ``params[t]``: every parameter (or those ``keep_params`` names) at each
    recorded step (float64 arrays).
    """

    model: dict
    config: dict
    history: list[dict]
    final: dict
    params: dict[int, dict[str, np.ndarray]] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"model": self.model, "config": self.config, "history": self.history, "final": self.final}


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


def population_size(task: CircleWalk | FiniteTask) -> int:
    from rwtoolkit.engines.numeric._config import population_size as size

    return size(task)


def initial_model_parameters(
    model: Model, sizes: Sizes, init: str, sigma: float, seed: int
) -> dict[str, np.ndarray]:
    """θ(0) as float64 arrays: zeros, or i.i.d. N(0, σ²) in the order of ``model.shapes`` (init stream of ``seed``)."""
    from rwtoolkit.engines.numeric._train import init_generator

    shapes = model.shapes(sizes)
    if init == "zero":
        return {name: np.zeros(shape) for name, shape in shapes.items()}
    if init != "gaussian":
        raise ValueError(f"init={init!r} is not one of zero, gaussian")
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
) -> ModelTrainResult:
    """Full-batch GD θ ← θ − η∇L of ``model`` on ``task``'s exact population, positions ``P`` (M, N).

    Records loss, accuracy (the first maximal class), parent attention (mean attention on position N-1) and
    the mean attention profile at every step of ``record_steps`` (default: every step) and at the last step. Raises ``Diverged`` (a ValueError) at the first step whose
    loss, accuracy, attention or parameters are not finite, or outside the log-loss domain.

    >>> from rwtoolkit.models import get_model, rational_positions
    >>> from rwtoolkit.tasks import CircleWalk
    >>> P = np.asarray(rational_positions(3, 1), dtype=float)
    >>> r = train_model(CircleWalk(3, 3, "1/2"), get_model("key_query", d=1), P, 2)
    >>> r.history[-1]["attention_profile"], r.final["W_K"]
    ([0.333..., 0.333..., 0.333...], [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    """
    check_loss(loss)
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
    K, N = task.K, task.N
    ar = TorchArithmetic(getattr(torch, dtype), device)
    pop = task.population()
    data = batch(ar, pop.tokens, pop.labels, ar.asarray(pop.float_probs()), K, ar.asarray(P))
    ell = TensorLoss(loss, eps)
    start = {
        k: ar.asarray(v)
        for k, v in initial_model_parameters(model, data.inputs.sizes, init, sigma, seed).items()
    }
    history: list[dict] = []
    kept: dict[int, dict[str, np.ndarray]] = {}
    bar = tqdm(total=steps, disable=not (progress and sys.stderr.isatty()), desc="rw train", unit="step")
    for t, state in enumerate(gradient_steps(model, ar, start, data, ell, eta, steps)):
        current = state.params
        if loss == "log" and bool((state.z + eps <= 0).any()):
            raise Diverged(
                f"log-loss -log(z+eps) is undefined at step {t}: z+eps <= 0 (lower eta or raise eps)", t
            )
        if not all(bool(torch.isfinite(v).all()) for v in current.values()):
            raise Diverged(f"the parameters are not finite at step {t}: the run diverged (lower eta)", t)
        if t == steps or record_steps is None or t in record_steps:
            profile = state.mean_attention(data.weights, ar)
            record = {
                "step": t,
                "train_loss": float(state.loss),
                "test_accuracy": float(state.accuracy(data, ar)),
                "parent_attention": float(profile[N - 2]),
                "attention_profile": [float(x) for x in profile.cpu().tolist()],
            }
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
    final["attention_profile"] = history[-1]["attention_profile"]
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
        **(config or {}),
    }
    return ModelTrainResult(model.describe(), cfg, history, final, kept)


def _check_finite(record: dict, t: int) -> None:
    """Refuse to emit NaN/inf: name the metric and the step."""
    for key, value in record.items():
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, float) and not math.isfinite(v) for v in values):
            raise Diverged(f"metric {key!r} is not finite at step {t}: the run diverged (lower eta)", t)
