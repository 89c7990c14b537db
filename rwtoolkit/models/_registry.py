"""The registry of models, and the one reading of ``--model`` of every command (docs/guide/models.md).

Adding a model is one module with a :class:`~rwtoolkit.models.Model` subclass and one line here: its name, where its
class lives and the line ``--help`` prints. A class is imported when first read, so ``rw --help`` lists the
models without loading numpy (``benchmarks/cli_startup.py``).

A model that is not registered enters every command the same way, named by ``MODULE:ATTR`` or ``PATH.py:ATTR``
(:func:`get_model`; docs/guide/models.md#your-own-model): a tape model (a ``Model`` subclass or instance), a
PyTorch module factory or a JAX function (``rwtoolkit.models.traced.program_factory``), with no file of the
toolkit edited.
"""

from __future__ import annotations

import importlib
import os
import sys
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


def model_summary(model: str | Model) -> str:
    """A model's one-line summary: a registered model's is the line ``--help`` prints; a model named by
    ``MODULE:ATTR`` or ``PATH.py:ATTR`` is summarised by that target and the first line of its class docstring, a
    model built in Python under a name of its own by that name and the same line.

    >>> model_summary("one_layer")
    "the paper's one-layer transformer f = V X S(X̃ᵀ W x̃_N) (merged key-query W)"
    """
    if isinstance(model, str):
        return REGISTRY[model].summary
    if model.target is None and model.name in REGISTRY:
        return REGISTRY[model.name].summary
    head = model.target if model.target is not None else model.name
    doc = (type(model).__doc__ or "").strip()
    return f"{head}: {doc.splitlines()[0]}" if doc else head


#: The two forms that name a model that is not registered (``--help`` and the refusals say them).
TARGET_FORMS = "MODULE:ATTR or PATH.py:ATTR"
#: What a ``--model MODULE:ATTR`` may name (docs/guide/models.md#your-own-model).
TARGET_KINDS = (
    "a rwtoolkit.models.Model subclass or instance (a tape model), a PyTorch factory ATTR(S, L) -> "
    "torch.nn.Module, or a JAX factory ATTR(S, L) -> (apply, params)"
)


def is_target(model: str) -> bool:
    """Whether ``--model`` names a model by ``MODULE:ATTR`` or ``PATH.py:ATTR`` rather than a registered name."""
    return ":" in model


def get_model(name: str, target: str | None = None, **hyperparameters: Any) -> Model:
    """The model ``--model name`` names, with its hyperparameters; one line naming ``--model`` otherwise.

    ``name`` is a registered name or a target, ``MODULE:ATTR`` (an importable module) or ``PATH.py:ATTR``
    (a file, relative to the working folder or absolute). ``target`` (with ``name`` the model's own name) is how
    :meth:`Model.describe` records a model that is not registered, so ``get_model(**model.describe())`` builds
    every model again. Hyperparameters given as None are left out; a model class is built with the others, each
    one it declares in ``HYPERPARAMETERS`` (a model instance or a traced factory takes none).

    >>> get_model("key_query", d=3).describe()
    {'name': 'key_query', 'd': 3}
    >>> get_model("rwtoolkit.models.key_query:KeyQuery", d=3).describe()  # the registered class itself
    {'name': 'key_query', 'd': 3}
    """
    given = {key: value for key, value in hyperparameters.items() if value is not None}
    if target is not None:
        model = _target_model(target, given)
        if model.name != name:
            raise ValueError(f"--model={target!r}: its model is named {model.name!r}, not {name!r}")
        return model
    if is_target(name):
        return _target_model(name, given)
    if name not in REGISTRY:
        raise ValueError(
            f"--model={name!r} is not a registered model: use one of {', '.join(REGISTRY)}, or {TARGET_FORMS}"
        )
    cls = MODELS[name]
    _refuse_extra(f"model {name!r}", cls.HYPERPARAMETERS, given)
    return cls(**given)


def model_hyperparameters(name: str) -> tuple[str, ...]:
    """The hyperparameters the model ``--model name`` is built with: its class's ``HYPERPARAMETERS``; none for a
    model instance or a traced factory. A target is imported (and refused in one line) here.

    >>> model_hyperparameters("key_query"), model_hyperparameters("one_layer")
    (('d',), ())
    """
    if not is_target(name):
        get_model(name)  # one line for an unknown name
        return MODELS[name].HYPERPARAMETERS
    obj = _load_target(name)
    from rwtoolkit.models._model import Model

    return obj.HYPERPARAMETERS if isinstance(obj, type) and issubclass(obj, Model) else ()


def is_registered(model: Model) -> bool:
    """Whether ``model`` is a registered model: its class is the one its name is registered with.

    The engines' specialisations are chosen by registered name (``rwtoolkit.engines.select``); :func:`get_model`
    refuses a model of another class that takes a registered name, so no other model reaches them.

    >>> is_registered(get_model("one_layer"))
    True
    """
    return model.name in REGISTRY and type(model) is MODELS[model.name]


def _refuse_extra(what: str, takes: tuple[str, ...], given: Mapping[str, Any]) -> None:
    extra = sorted(set(given) - set(takes))
    if extra:
        raise ValueError(
            f"{what} has no hyperparameter {extra[0]!r} (it takes: {', '.join(takes) or 'none'})"
        )


#: Targets already imported, by (working folder, target): one import, so one class, per process.
_LOADED: dict[tuple[str, str], Any] = {}
#: Models of traced factories, by (working folder, target): each traces once per sizes (its own cache).
_TRACED: dict[tuple[str, str], Model] = {}


def _load_target(target: str) -> Any:
    """The object ``MODULE:ATTR`` or ``PATH.py:ATTR`` names, imported once; one line naming ``--model`` otherwise."""
    key = (os.getcwd(), target)
    if key not in _LOADED:
        from rwtoolkit.runtime import load_attribute

        try:
            _LOADED[key] = load_attribute(target)
        except ValueError as err:
            raise ValueError(f"--model={err}") from None
    return _LOADED[key]


def _target_model(target: str, given: Mapping[str, Any]) -> Model:
    """The model of ``--model target``: a Model subclass built with ``given``, a Model instance, or a PyTorch or
    JAX factory traced onto the tape; refused in one line when it is none of them, has no name, or takes a
    registered model's name without being that model."""
    from rwtoolkit.models._model import Model

    obj = _load_target(target)
    what = f"--model={target!r}"
    model: Model
    if isinstance(obj, type) and issubclass(obj, Model):
        _refuse_extra(what, obj.HYPERPARAMETERS, given)
        try:
            model = obj(**given)
        except Exception as err:  # the user's constructor: one line
            first = str(err).strip().splitlines()[0] if str(err).strip() else ""
            raise ValueError(f"{what}: {obj.__name__}() raised {type(err).__name__}: {first}") from None
    elif isinstance(obj, Model):
        _refuse_extra(what, (), given)
        model = obj
    elif _is_factory(obj, what):
        _refuse_extra(what, (), given)
        model = _traced_model(target, obj)
    else:
        raise ValueError(f"{what} is {_kind(obj)}; it must be {TARGET_KINDS}")
    name = getattr(model, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(
            f"{what}: {type(model).__name__} sets no name (a class attribute name = '...': the "
            "model's name in output files)"
        )
    if name in REGISTRY and type(model) is not MODELS[name]:
        raise ValueError(
            f"{what}: its name {name!r} is the registered model {REGISTRY[name].target}'s; give it a name of its own"
        )
    if not is_registered(model):
        model.target = target
    return model


def _is_factory(obj: Any, what: str) -> bool:
    """Whether ``obj`` is a PyTorch or JAX factory ATTR(S, L): a function of two arguments, or a torch.nn.Module
    class (built as ATTR(S, L)). Torch is looked at only when the user's module loaded it already; a module
    instance is refused in one line (give the factory that builds it)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(obj, torch.nn.Module):
            raise ValueError(
                f"{what} is a torch.nn.Module instance; give the factory ATTR(S, L) that builds it (a function or "
                "the module's class)"
            )
        if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
            return True
    if isinstance(obj, type) or not callable(obj):
        return False
    import inspect

    try:
        inspect.signature(obj).bind(2, 2)
    except TypeError:
        raise ValueError(
            f"{what} is a function that cannot be called as ATTR(S, L); it must be {TARGET_KINDS}"
        ) from None
    except ValueError:  # no signature to read (a builtin): let the tracer call it
        pass
    return True


def _kind(obj: Any) -> str:
    """How a refusal names the kind of a wrong object."""
    if isinstance(obj, type):
        return f"the class {obj.__name__}"
    return f"a {type(obj).__name__}"


def _traced_model(target: str, factory: Any) -> Model:
    """The sequence model of a PyTorch or JAX factory (``rwtoolkit.models.traced.program_factory``), named
    ``MODULE.ATTR`` (the file's stem for a path: never a registered name), one per target and working folder, so
    it is traced once per sizes."""
    key = (os.getcwd(), target)
    if key not in _TRACED:
        from rwtoolkit.models._sequence import SequenceModel
        from rwtoolkit.models.traced import program_factory

        module, _, attr = target.rpartition(":")
        stem = (
            os.path.splitext(os.path.basename(module))[0]
            if module.endswith(".py") or "/" in module
            else module
        )
        _TRACED[key] = SequenceModel(program_factory(factory), name=f"{stem}.{attr}")
    return _TRACED[key]


def model_help() -> str:
    """One line per model for ``--help`` (no model module is imported)."""
    return "; ".join(f"{name}: {entry.summary}" for name, entry in REGISTRY.items())
