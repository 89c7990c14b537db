"""The registry of models: ``--model NAME`` of every command reads it (docs/guide/models.md).

Adding a model is one module with a :class:`~rwmodels.Model` subclass and one line here.
"""

from __future__ import annotations

from typing import Any

from rwmodels._model import Model
from rwmodels.key_query import KeyQuery
from rwmodels.one_layer import OneLayer

#: Every registered model by name. The paper's model is first and the default of every command.
MODELS: dict[str, type[Model]] = {
    OneLayer.name: OneLayer,
    KeyQuery.name: KeyQuery,
}
#: The default of ``--model``.
DEFAULT_MODEL = OneLayer.name


def model_names() -> tuple[str, ...]:
    """The registered names, the default first."""
    return tuple(MODELS)


def get_model(name: str, **hyperparameters: Any) -> Model:
    """The model ``name`` with its hyperparameters; one line naming the allowed names otherwise.

    >>> get_model("key_query", d=3).describe()
    {'name': 'key_query', 'd': 3}
    """
    if name not in MODELS:
        raise ValueError(f"--model={name!r} is not a registered model: use one of {', '.join(MODELS)}")
    cls = MODELS[name]
    given = {key: value for key, value in hyperparameters.items() if value is not None}
    extra = sorted(set(given) - set(cls.HYPERPARAMETERS))
    if extra:
        raise ValueError(
            f"model {name!r} has no hyperparameter {extra[0]!r} (it takes: {', '.join(cls.HYPERPARAMETERS) or 'none'})"
        )
    return cls(**given)


def model_help() -> str:
    """One line per model for ``--help``."""
    return "; ".join(f"{name}: {cls.summary}" for name, cls in MODELS.items())
