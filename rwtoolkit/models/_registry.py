"""The registry of models: ``--model NAME`` of every command reads it (docs/guide/models.md).

Adding a model is one module with a :class:`~rwtoolkit.models.Model` subclass and one line here: its name, where its
class lives and the line ``--help`` prints. A class is imported when first read, so ``rw --help`` lists the
models without loading numpy (``benchmarks/cli_startup.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from rwtoolkit.models._model import Model


class Registered(NamedTuple):
    """One registry line: the class (``"module:Class"``) and its one-line summary for ``--help``.

    (A named tuple, not a dataclass: ``dataclasses`` imports ``inspect``, 8 ms of every ``rw --help``.)
    """

    target: str
    summary: str

    def load(self) -> type[Model]:
        """The model class (imported on first use)."""
        module, _, name = self.target.partition(":")
        cls: type[Model] = getattr(importlib.import_module(module), name)
        return cls


#: Every registered model by name. The paper's model is first and the default of every command.
REGISTRY: dict[str, Registered] = {
    "one_layer": Registered(
        "rwtoolkit.models.one_layer:OneLayer",
        "the paper's one-layer transformer f = V X S(X̃ᵀ W x̃_N) (merged key-query W)",
    ),
    "key_query": Registered(
        "rwtoolkit.models.key_query:KeyQuery",
        "separate key and query: logits X̃ᵀ W_Kᵀ W_Q x̃_N, W_K, W_Q of d rows (--head-dim)",
    ),
    "multi_head": Registered(
        "rwtoolkit.models.multi_head:MultiHead",
        "H heads f = Σ_h V_h X S(X̃ᵀ W_h x̃_N) (--heads; --head-dim d: separate key and query per head)",
    ),
    "linear_attention": Registered(
        "rwtoolkit.models.linear_attention:LinearAttention",
        "linear attention f = V X (X̃ᵀ W x̃_N) / N: the scores without the softmax",
    ),
    "learned_positions": Registered(
        "rwtoolkit.models.learned_positions:LearnedPositions",
        "the paper's model with the positions trained: X̃ = [X; P(0) + ΔP], ΔP (M×N) from 0",
    ),
    "two_layer": Registered(
        "rwtoolkit.models.two_layer:TwoLayer",
        "two-layer attention-only: causal layer 1 at every position, residual [x̃; a], layer 2 at the last",
    ),
    "tied_embedding": Registered(
        "rwtoolkit.models.tied_embedding:TiedEmbedding",
        "trained token embedding u = E x + p, the last token attends, f = softmax(Eᵀ z + b): weight tying",
    ),
    "untied_embedding": Registered(
        "rwtoolkit.models.tied_embedding:UntiedEmbedding",
        "tied_embedding with a read-out of its own: f = softmax(A z + b)",
    ),
    "normalized_attention": Registered(
        "rwtoolkit.models.normalized_attention:NormalizedAttention",
        "the paper's model with x̂_j = x̃_j/‖x̃_j‖ in the scores x̂_jᵀ W x̂_N (paper Fig 6)",
    ),
    "relu_head": Registered(
        "rwtoolkit.models.relu_head:ReluHead",
        "the paper's attention with a ReLU read-out f = A ReLU(V X S), V (m×K), A (K×m) (paper Fig 10)",
    ),
}
#: The default of ``--model``.
DEFAULT_MODEL = "one_layer"


class _Models(Mapping[str, "type[Model]"]):
    """Name → model class, each imported when first read."""

    def __getitem__(self, name: str) -> type[Model]:
        return REGISTRY[name].load()

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRY)

    def __len__(self) -> int:
        return len(REGISTRY)


#: The registered model classes by name (a read-only mapping over :data:`REGISTRY`).
MODELS: Mapping[str, type[Model]] = _Models()


def model_names() -> tuple[str, ...]:
    """The registered names, the default first."""
    return tuple(REGISTRY)


def model_summary(name: str) -> str:
    """The registered model's one-line summary (what ``--help`` prints).

    >>> model_summary("one_layer")
    "the paper's one-layer transformer f = V X S(X̃ᵀ W x̃_N) (merged key-query W)"
    """
    return REGISTRY[name].summary


def get_model(name: str, **hyperparameters: Any) -> Model:
    """The model ``name`` with its hyperparameters; one line naming the allowed names otherwise.

    >>> get_model("key_query", d=3).describe()
    {'name': 'key_query', 'd': 3}
    """
    if name not in REGISTRY:
        raise ValueError(f"--model={name!r} is not a registered model: use one of {', '.join(REGISTRY)}")
    cls = MODELS[name]
    given = {key: value for key, value in hyperparameters.items() if value is not None}
    extra = sorted(set(given) - set(cls.HYPERPARAMETERS))
    if extra:
        raise ValueError(
            f"model {name!r} has no hyperparameter {extra[0]!r} (it takes: {', '.join(cls.HYPERPARAMETERS) or 'none'})"
        )
    return cls(**given)


def model_help() -> str:
    """One line per model for ``--help`` (no model module is imported)."""
    return "; ".join(f"{name}: {entry.summary}" for name, entry in REGISTRY.items())
