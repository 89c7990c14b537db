"""Typed configuration of the model (ModelConfig) and of a gradient-descent run (TrainConfig)."""

from __future__ import annotations

import functools
import hashlib
import math
import warnings
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rwtoolkit.tasks import MAX_EXACT_WALKS, CircleWalk, FiniteTask, check_loss

if TYPE_CHECKING:
    from rwtoolkit.models import Model, Optimizer, Schedule

INIT_NAMES = ("zero", "gaussian")
DTYPES = ("float64", "float32")
DEVICES = ("cpu", "cuda")
KL_NORMS = ("softmax", "shift")
GRAMS = ("ideal", "computed")
#: Default tie tolerance of the accuracy tie rule, per dtype: scores within rtol·max|f| of the maximum tie,
#: so that exact ties (zero init, the symmetric p ∈ {0, 1} runs) survive float rounding.
DEFAULT_TIE_RTOL = {"float64": 1e-9, "float32": 1e-5}


@dataclass
class ModelConfig:
    """f = V X S(X̃ᵀ W x̃_N) (docs/theory.md#model), or A·ReLU(V X S(·)) when ``relu_width`` = m is set.

    ``pos``: "sine" | "onehot" | "random" | an (M, N) matrix; ``mu`` = μ = ‖p_i‖² (None: the
    construction's own, M/2 for sine, 1 for onehot/random; ``pos_norm`` is its deprecated name); ``normalize_attention`` divides each
    x̃_i by its length inside the softmax only (paper Fig 6). ``gram``: the fast path uses
    PᵀP = μI exactly ("ideal", the spec's P) or the float Gram matrix of P ("computed", which carries
    the ~1e-16 rounding a direct implementation sees; the reference path always sees the float P).
    ``registered``: the model of record to train (``rwtoolkit.models.get_model``); None is the paper's model
    with the options above (``one_layer``, ``normalized_attention`` or ``relu_head``; ``registered_model``).
    It selects the engine (``rwtoolkit.engines.select``) and is not part of ``to_dict``.
    """

    K: int
    N: int
    M: int = 1000
    pos: str | np.ndarray = "sine"
    mu: float | None = None
    pos_seed: int = 0
    normalize_attention: bool = False
    relu_width: int | None = None
    gram: str = "ideal"
    registered: Model | None = None

    def to_dict(self) -> dict:
        """JSON-able description; a user matrix is recorded as "user" plus the SHA-256 of its float64 bytes."""
        out = {
            "K": self.K,
            "N": self.N,
            "M": self.M,
            "pos": self.pos if isinstance(self.pos, str) else "user",
            "mu": None if self.mu is None else float(self.mu),
            "pos_seed": self.pos_seed,
            "normalize_attention": bool(self.normalize_attention),
            "relu_width": self.relu_width,
            "gram": self.gram,
        }
        if not isinstance(self.pos, str):
            data = np.ascontiguousarray(np.asarray(self.pos, dtype=np.float64))
            out["pos_sha256"] = hashlib.sha256(data.tobytes()).hexdigest()
        return out


# ``pos_norm``, the old name of ``mu``, kept one release (docs/changelog.md): given or read, it warns.
_dataclass_init = ModelConfig.__init__


def _init_with_pos_norm(self: ModelConfig, *args: Any, pos_norm: float | None = None, **kwargs: Any) -> None:
    if pos_norm is not None:
        warnings.warn("ModelConfig(pos_norm=...) is deprecated: use mu=...", DeprecationWarning, stacklevel=2)
        if kwargs.get("mu") is not None and kwargs["mu"] != pos_norm:
            raise ValueError(
                f"pos_norm={pos_norm!r} is the deprecated name of mu={kwargs['mu']!r}: give one of them"
            )
        kwargs["mu"] = pos_norm
    _dataclass_init(self, *args, **kwargs)


def _read_pos_norm(self: ModelConfig) -> float | None:
    warnings.warn("ModelConfig.pos_norm is deprecated: use ModelConfig.mu", DeprecationWarning, stacklevel=2)
    return self.mu


ModelConfig.__init__ = functools.wraps(_dataclass_init)(_init_with_pos_norm)  # type: ignore[method-assign]
ModelConfig.pos_norm = property(_read_pos_norm)  # type: ignore[attr-defined]


@dataclass
class TrainConfig:
    """Full-batch gradient descent: ``steps`` updates with learning rate ``eta`` (a number or eta(t)).

    The objective is the (probability-)weighted MEAN of ℓ(e_yᵀf) over the training set.
    ``loss``: "log" (-log(z+ε)), "squared" ((1-z)²), "exp" (exp(-z)) or a callable ℓ on torch
    tensors. ``population=True`` trains and evaluates on the exact population; otherwise
    ``train_size`` / ``test_size`` walks are drawn from ``seed``. ``kl_norm`` chooses how the
    output f is turned into a distribution for the ``kl`` metric. ``threads``: torch intra-op
    threads during the run (restored afterwards); None leaves torch's setting alone.
    ``record_steps``: the steps whose metrics go into ``history`` (None: every step); the others are
    not evaluated, which is most of a step's cost. ``rotate``: circle-walk populations from zero init
    only, train on the walks rooted at node 0 (weights ×K) and project the gradients onto the
    rotation-invariant parameters (V circulant, u = w_tok constant), exact by the rotation symmetry
    as in ``rwtoolkit.engines.exact.derive(rotate=True)``; K times fewer training inputs. ``record_params``: keep
    the parameters (V, w = W x̃_N and, with the ReLU head, A) at every recorded step in
    ``TrainResult.params`` (JSON key "params"), not only at the end in ``final``. ``objective``: the
    cross-entropy objective of a model with next-token logits (``rwtoolkit.models.OBJECTIVES``; None: the
    model's default), trained by the generic engine (``train_model_runs``) and written by ``to_dict`` where set.
    ``optimizer``: the update rule (``rwtoolkit.models.Optimizer``: momentum, Nesterov, Adam, AdamW; None: plain
    GD), run by the generic engine only (the reduced engines refuse another) and written by ``to_dict`` where
    it is not plain GD. ``schedule`` (``rwtoolkit.models.Schedule``) and ``stages`` ((steps, parameter names)
    in order, covering ``steps``): the learning-rate schedule and the training in stages of
    ``rwtoolkit.models.gradient_steps``, run by the generic engine only and written by ``to_dict`` where given.
    """

    steps: int = 50
    eta: float | Callable[[int], float] = 1.0
    eps: float = 0.1
    loss: str | Callable = "log"
    init: str = "zero"
    sigma: float = 0.01
    seed: int = 0
    population: bool = False
    train_size: int = 1000
    test_size: int = 1000
    dtype: str = "float64"
    device: str = "cpu"
    fast: bool = True
    tie_rtol: float | None = None
    snapshots: Sequence[int] = field(default_factory=tuple)
    kl_norm: str = "softmax"
    threads: int | None = None
    record_steps: Sequence[int] | None = None
    rotate: bool = False
    record_params: bool = False
    objective: str | None = None
    optimizer: Optimizer | None = None
    schedule: Schedule | None = None
    stages: Sequence[tuple[int, Collection[str]]] | None = None

    @property
    def effective_tie_rtol(self) -> float:
        """``tie_rtol``, or the dtype's default (1e-9 float64, 1e-5 float32)."""
        return DEFAULT_TIE_RTOL[self.dtype] if self.tie_rtol is None else float(self.tie_rtol)

    def to_dict(self) -> dict:
        """JSON-able description; callables are recorded by name as "callable:<name>"."""
        return {
            "steps": self.steps,
            "eta": _describe(self.eta),
            "eps": float(self.eps),
            "loss": _describe(self.loss),
            "init": self.init,
            "sigma": float(self.sigma),
            "seed": self.seed,
            "population": bool(self.population),
            "train_size": None if self.population else self.train_size,
            "test_size": None if self.population else self.test_size,
            "dtype": self.dtype,
            "device": self.device,
            "fast": bool(self.fast),
            "tie_rtol": self.effective_tie_rtol,
            "snapshots": sorted(int(s) for s in self.snapshots),
            "kl_norm": self.kl_norm,
            "threads": self.threads,
            "record_steps": None
            if self.record_steps is None
            else sorted({int(s) for s in self.record_steps}),
            "rotate": bool(self.rotate),
            "record_params": bool(self.record_params),
            **({} if self.objective is None else {"objective": self.objective}),
            **(
                {}
                if self.optimizer is None or self.optimizer.plain
                else {"optimizer": self.optimizer.describe()}
            ),
            **({} if self.schedule is None else {"schedule": self.schedule.text}),
            **({} if self.stages is None else {"stages": stages_record(self.stages)}),
        }


def registered_model(model: ModelConfig) -> Model:
    """The model of record of a ``ModelConfig``: ``registered`` when given, else the paper's (``one_layer``),
    with ``normalize_attention`` ``normalized_attention``, with ``relu_width`` m ``relu_head`` (width m,
    normalised or not).

    >>> registered_model(ModelConfig(K=3, N=4, relu_width=5, normalize_attention=True)).describe()
    {'name': 'relu_head', 'width': 5, 'normalize': True}
    """
    return _paper_model(model) if model.registered is None else model.registered


def _paper_model(model: ModelConfig) -> Model:
    """The paper's model with the options of ``model`` (what the reduced engines run)."""
    from rwtoolkit.models import get_model

    if model.relu_width is not None:
        return get_model("relu_head", width=model.relu_width, normalize=bool(model.normalize_attention))
    return get_model("normalized_attention" if model.normalize_attention else "one_layer")


def _describe(value: object) -> object:
    if callable(value):
        return f"callable:{getattr(value, '__name__', type(value).__name__)}"
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _positive(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{name}={value!r} must be a number > 0")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}={value!r} is out of range: {name} must be a finite number > 0")


def stages_record(stages: Sequence[tuple[int, Collection[str]]]) -> list[list]:
    """Stages as output files record them: [[steps, [parameter names, sorted]], ...] in order.

    >>> stages_record([(2, {"W_Q", "W_K"}), (1, {"V"})])
    [[2, ['W_K', 'W_Q']], [1, ['V']]]
    """
    return [[int(steps), sorted(names)] for steps, names in stages]


def check_seed_and_record_steps(cfg: TrainConfig) -> None:
    """``seed`` an integer >= 0 and ``record_steps`` None or integers in [0, steps]: one line naming the
    argument otherwise (``validate``'s checks that the generic torch engine shares).

    >>> check_seed_and_record_steps(TrainConfig(steps=1, record_steps=[9]))
    Traceback (most recent call last):
    ValueError: record_steps entry 9 is out of range: must be an integer in [0, steps=1]
    """
    if not _is_int(cfg.seed) or cfg.seed < 0:
        raise ValueError(f"seed={cfg.seed!r} must be an integer >= 0")
    if cfg.record_steps is not None:
        if isinstance(cfg.record_steps, (str, bytes)) or not hasattr(cfg.record_steps, "__iter__"):
            raise ValueError(
                f"record_steps={cfg.record_steps!r} must be a sequence of integers in [0, steps] (or None)"
            )
        for s in cfg.record_steps:
            if not _is_int(s) or not 0 <= s <= cfg.steps:
                raise ValueError(
                    f"record_steps entry {s!r} is out of range: must be an integer in [0, steps={cfg.steps}]"
                )


def validate(task: object, model: ModelConfig, cfg: TrainConfig) -> None:
    """Check every argument at the public boundary; each failure names the argument and its range."""
    if not isinstance(task, (CircleWalk, FiniteTask)):
        raise ValueError(f"task={task!r} must be a rwtoolkit.tasks CircleWalk or FiniteTask")
    if not isinstance(model, ModelConfig):
        raise ValueError(f"model={model!r} must be a ModelConfig")
    if not isinstance(cfg, TrainConfig):
        raise ValueError(f"cfg={cfg!r} must be a TrainConfig")
    if cfg.optimizer is not None and not cfg.optimizer.plain:
        raise ValueError(
            f"optimizer={cfg.optimizer.name}: the reduced engines of the paper's model run plain GD; train it "
            "with the generic torch engine (train_model_runs; rw train --optimizer --population selects it)"
        )
    for name in ("schedule", "stages"):
        if getattr(cfg, name) is not None:
            raise ValueError(
                f"{name}: the reduced engines of the paper's model run a constant rate on every parameter; train "
                f"it with the generic torch engine (train_model_runs; rw train --{name} --population selects it)"
            )
    for name in ("K", "N", "M"):
        if not _is_int(getattr(model, name)):
            raise ValueError(f"{name}={getattr(model, name)!r} must be an integer")
    if model.K != task.K:
        raise ValueError(f"K={model.K} differs from the task's vocabulary size K={task.K}")
    if model.N != task.N:
        raise ValueError(f"N={model.N} differs from the task's sequence length N={task.N}")
    if model.M < model.N:
        raise ValueError(f"M={model.M} is out of range: M must be >= N={model.N}")
    if model.mu is not None:
        _positive(model.mu, "mu")
    if not _is_int(model.pos_seed) or model.pos_seed < 0:
        raise ValueError(f"pos_seed={model.pos_seed!r} must be an integer >= 0")
    if model.relu_width is not None and (not _is_int(model.relu_width) or model.relu_width < 1):
        raise ValueError(f"relu_width={model.relu_width!r} must be an integer >= 1 (or None)")
    if model.gram not in GRAMS:
        raise ValueError(f"gram={model.gram!r} is not one of {', '.join(GRAMS)}")
    if model.registered is not None and model.registered.describe() != _paper_model(model).describe():
        raise ValueError(
            f"registered={model.registered.describe()} is not the paper's model these options describe "
            f"({_paper_model(model).describe()}): the reduced engines run one_layer, normalized_attention "
            "(normalize_attention=True) and relu_head (relu_width); train another model with train_model_runs"
        )
    if not _is_int(cfg.steps) or cfg.steps < 0:
        raise ValueError(f"steps={cfg.steps!r} must be an integer >= 0")
    if not callable(cfg.eta):
        _positive(cfg.eta, "eta")
    _positive(cfg.eps, "eps")
    check_loss(cfg.loss)
    if cfg.init not in INIT_NAMES:
        raise ValueError(f"init={cfg.init!r} is not one of {', '.join(INIT_NAMES)}")
    if cfg.objective is not None:
        raise ValueError(
            f"objective={cfg.objective!r}: the paper's model trains on a loss of its prediction f (loss=); "
            "the cross-entropy objectives are a sequence model's (train_model_runs)"
        )
    if cfg.init == "gaussian":
        _positive(cfg.sigma, "sigma")
    check_seed_and_record_steps(cfg)
    if not cfg.population:
        for name in ("train_size", "test_size"):
            value = getattr(cfg, name)
            if not _is_int(value) or value < 1:
                raise ValueError(f"{name}={value!r} must be an integer >= 1")
    if cfg.dtype not in DTYPES:
        raise ValueError(f"dtype={cfg.dtype!r} is not one of {', '.join(DTYPES)}")
    if cfg.device not in DEVICES:
        raise ValueError(f"device={cfg.device!r} is not one of {', '.join(DEVICES)}")
    if cfg.tie_rtol is not None:
        if isinstance(cfg.tie_rtol, bool) or not isinstance(cfg.tie_rtol, (int, float)):
            raise ValueError(f"tie_rtol={cfg.tie_rtol!r} must be a number >= 0")
        if not (math.isfinite(cfg.tie_rtol) and 0 <= cfg.tie_rtol < 1):
            raise ValueError(f"tie_rtol={cfg.tie_rtol!r} is out of range: must be in [0, 1)")
    for s in cfg.snapshots:
        if not _is_int(s) or not 0 <= s <= cfg.steps:
            raise ValueError(
                f"snapshots entry {s!r} is out of range: must be an integer in [0, steps={cfg.steps}]"
            )
    if not isinstance(cfg.record_params, bool):
        raise ValueError(f"record_params={cfg.record_params!r} must be True or False")
    if not isinstance(cfg.rotate, bool):
        raise ValueError(f"rotate={cfg.rotate!r} must be True or False")
    if cfg.rotate:
        _check_rotation(task, model, cfg)
    if cfg.threads is not None and (not _is_int(cfg.threads) or cfg.threads < 1):
        raise ValueError(f"threads={cfg.threads!r} must be an integer >= 1 (or None)")
    if cfg.kl_norm not in KL_NORMS:
        raise ValueError(f"kl_norm={cfg.kl_norm!r} is not one of {', '.join(KL_NORMS)}")


def _check_rotation(task: object, model: ModelConfig, cfg: TrainConfig) -> None:
    """The rotation reduction is exact only while every parameter is rotation invariant: refuse otherwise."""
    why = None
    if not getattr(task, "rotation_invariant", False):
        why = "the task is not rotation invariant, not a CircleWalk (only circle-walk populations are)"
    elif not cfg.population:
        why = "population=False (a sampled training set is not rotation invariant; use population=True)"
    elif cfg.init != "zero":
        why = f"init={cfg.init!r} (a random init breaks the rotation symmetry; use init='zero')"
    elif model.relu_width is not None:
        why = f"relu_width={model.relu_width} (the ReLU model's V is not square; use relu_width=None)"
    elif not cfg.fast:
        why = "fast=False (the reduction is implemented on the fast path only)"
    elif model.gram != "ideal":
        why = f"gram={model.gram!r} (the reduction is offered for the spec's P^T P = mu*I only; use 'ideal')"
    if why is not None:
        raise ValueError(f"rotate=True is exact only for circle-walk populations from zero init: {why}")


#: Fixed memory of a run beyond its arrays: torch kernels and allocator pools at first use.
_OVERHEAD_BYTES = 64 * 2**20
#: Bytes per entry of a Python float held in a list (8-byte pointer + 24-byte float object).
_PY_FLOAT_BYTES = 32


def memory_estimate(task: CircleWalk | FiniteTask, model: ModelConfig, cfg: TrainConfig) -> dict[str, int]:
    """Bytes ``train`` allocates at its peak, by part, counted from the arrays it builds (an upper estimate).

    Parts: ``inputs`` (sampled walks as NumPy int64 and their torch copies, the sampling temporaries,
    the true law of y per input), ``activations`` (logits, attention and their gradients over the
    larger data set), ``embeddings`` (P, the Gram matrix, W(0) of a Gaussian init, the full W of the
    reference path), ``history`` (recorded metrics, snapshots and parameters as Python floats), and a
    fixed ``overhead`` for torch's first kernels and allocator (about 30 MiB measured; see
    ``benchmarks/train_memory.py``, which compares the estimate with the peak memory of real runs).

    >>> from rwtoolkit.tasks import CircleWalk
    >>> parts = memory_estimate(CircleWalk(6, 97, "1/2"), ModelConfig(K=6, N=97, M=200_000), TrainConfig())
    >>> parts["embeddings"] > 200_000 * 97 * 8 > parts["inputs"]
    True
    """
    K, N, M = model.K, model.N, model.M
    m = K if model.relu_width is None else model.relu_width
    b = 8 if cfg.dtype == "float64" else 4
    if cfg.population:
        size = population_size(task)
        n_train = n_test = size
        walk_bytes = 8 * N * size * 2 + 8 * N * size  # tokens, labels and their torch copies
    else:
        n_train, n_test = cfg.train_size, cfg.test_size
        # Kept walks (n, N) and their torch copies, plus the temporaries of one sampling call:
        # uniform draws, moves, cumulative sums and offsets, (n, N-1) or (n, N) each.
        walk_bytes = 2 * 8 * N * (n_train + n_test) + 4 * 8 * N * max(n_train, n_test)
    inputs = walk_bytes + (8 + b) * K * (n_train + n_test)
    n = max(n_train, n_test)
    activations = b * n * (6 * N + 4 * (K + m))  # logits, exp, S, saved and gradient copies; X S, f
    embeddings = (8 + b) * M * N * 2 + b * N * N + 3 * b * (m * K + K * m) + b * (K + M) * 2
    if cfg.init == "gaussian" or not cfg.fast:
        embeddings += (8 + b + 2 * b) * (K + M) ** 2  # W(0) in NumPy and torch; W and its gradient
    if not cfg.fast:
        from rwtoolkit.engines.numeric._model import REFERENCE_CHUNK_BYTES

        embeddings += 3 * REFERENCE_CHUNK_BYTES  # the explicit X̃ of one chunk, its attention and gradient
    recorded = cfg.steps + 1 if cfg.record_steps is None else len(set(cfg.record_steps)) + 1
    per_step = N + 12 + (m * K + K + M + K * m if cfg.record_params else 0)
    history = _PY_FLOAT_BYTES * (recorded * per_step + len(set(cfg.snapshots)) * (m * K + N + K))
    return {
        "inputs": inputs,
        "activations": activations,
        "embeddings": embeddings,
        "history": 2 * history,
        "overhead": _OVERHEAD_BYTES,
    }


def population_size(task: CircleWalk | FiniteTask) -> int:
    """Inputs of the exact population without building it; a circle walk beyond ``MAX_EXACT_WALKS`` counts
    as that limit, since ``population()`` refuses it (with its own message) before allocating anything."""
    return min(task.population_size(), MAX_EXACT_WALKS)
