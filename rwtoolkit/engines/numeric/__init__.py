"""PyTorch implementation: model, fast and autograd gradients, training, metrics (docs/theory.md#model, #reduction, docs/reproduction.md#experiments).

>>> from rwtoolkit.tasks import CircleWalk
>>> from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train
>>> result = train(CircleWalk(3, 4, "1/2"), ModelConfig(K=3, N=4, M=5), TrainConfig(steps=1, population=True),
...                progress=False)
>>> sorted(result.history[1])[:3]
['attention_profile', 'attention_spread', 'circulant_residual']
"""

import importlib as _importlib
import typing as _typing

from rwtoolkit.engines.exact.oracle import load_oracle  # the one reader of oracle files (float64 by default)
from rwtoolkit.engines.numeric._config import (
    DEFAULT_TIE_RTOL,
    ModelConfig,
    TrainConfig,
    memory_estimate,
    registered_model,
)
from rwtoolkit.engines.numeric._embeddings import (
    POS_KINDS,
    POS_RTOL,
    check_embedding,
    check_orthogonal_equal_norm,
    positional_embeddings,
)
from rwtoolkit.io import schema_deprecations as _schema_deprecations
from rwtoolkit.io import write_json_atomic

if _typing.TYPE_CHECKING:
    from rwtoolkit.engines.numeric._arith import TorchArithmetic
    from rwtoolkit.engines.numeric._batched import (
        BATCHED_HISTORY_KEYS,
        batch_key,
        batched_peak_bytes,
        train_batched,
    )
    from rwtoolkit.engines.numeric._checkpoint import CHECKPOINT_NAME, Checkpoints, checkpoint_step
    from rwtoolkit.engines.numeric._losses import (
        LOSS_FUNCTIONS,
        Diverged,
        TensorLoss,
        exp_loss,
        log_loss,
        squared_loss,
    )
    from rwtoolkit.engines.numeric._metrics import (
        circulant_residual,
        ones_residual,
        predict,
        v_direction_error,
    )
    from rwtoolkit.engines.numeric._model_train import (
        MODEL_HISTORY_KEYS,
        TrainEstimate,
        model_memory_estimate,
        model_train_estimate,
        train_model,
        train_model_runs,
    )
    from rwtoolkit.engines.numeric._train import (
        HISTORY_KEYS,
        Run,
        TrainResult,
        init_generator,
        train,
        train_runs,
    )

#: The names that need torch, by the module that defines them: imported on first use, so that what needs
#: numpy alone (the configurations, the embeddings; ``rw check`` of a NumPy or JAX implementation) never
#: loads torch (about 1.5 s of a process).
_TORCH_NAMES = {
    "_arith": ("TorchArithmetic",),
    "_batched": ("BATCHED_HISTORY_KEYS", "batch_key", "batched_peak_bytes", "train_batched"),
    "_losses": ("LOSS_FUNCTIONS", "Diverged", "TensorLoss", "exp_loss", "log_loss", "squared_loss"),
    "_metrics": ("circulant_residual", "ones_residual", "predict", "v_direction_error"),
    "_checkpoint": ("CHECKPOINT_NAME", "Checkpoints", "checkpoint_step"),
    "_model_train": (
        "MODEL_HISTORY_KEYS",
        "TrainEstimate",
        "model_memory_estimate",
        "model_train_estimate",
        "train_model",
        "train_model_runs",
    ),
    "_train": ("HISTORY_KEYS", "Run", "TrainResult", "init_generator", "train", "train_runs"),
}
_HOME = {name: module for module, names in _TORCH_NAMES.items() for name in names}

__all__ = [
    "circulant_residual",
    "ones_residual",
    "v_direction_error",
    "BATCHED_HISTORY_KEYS",
    "CHECKPOINT_NAME",
    "Checkpoints",
    "batch_key",
    "batched_peak_bytes",
    "train_batched",
    "DEFAULT_TIE_RTOL",
    "Diverged",
    "HISTORY_KEYS",
    "LOSS_FUNCTIONS",
    "TensorLoss",
    "TorchArithmetic",
    "MODEL_HISTORY_KEYS",
    "POS_KINDS",
    "POS_RTOL",
    "ModelConfig",
    "Run",
    "TrainConfig",
    "TrainEstimate",
    "TrainResult",
    "check_embedding",
    "checkpoint_step",
    "check_orthogonal_equal_norm",
    "exp_loss",
    "init_generator",
    "load_oracle",
    "log_loss",
    "memory_estimate",
    "model_memory_estimate",
    "model_train_estimate",
    "positional_embeddings",
    "predict",
    "registered_model",
    "squared_loss",
    "train",
    "train_model",
    "train_model_runs",
    "train_runs",
    "write_json_atomic",
]

# Kept one release (docs/changelog.md): the schema is rwtoolkit.io.load_schema("metrics").
_deprecated = _schema_deprecations(
    "rwtoolkit.engines.numeric", {"load_metrics_schema": "metrics"}, {"METRICS_SCHEMA_PATH": "metrics"}
)


def __getattr__(name: str) -> _typing.Any:
    """A torch-bound name, imported from its module on first use (PEP 562); else a deprecated one."""
    module = _HOME.get(name)
    if module is None:
        return _deprecated(name)
    value = getattr(_importlib.import_module(f"rwtoolkit.engines.numeric.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
