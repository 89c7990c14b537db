"""Models traced from PyTorch or JAX onto the tape (issue 41, item 2; docs/guide/bring-your-model.md).

A tracer maps the user's forward pass, op by op, to a :class:`TracedProgram` of the neutral ops of
:data:`OP_TABLE`; the program runs on :class:`~rwtoolkit.models.Tape` in every arithmetic. :func:`program_factory`
turns the factory a user writes (``ATTR(S, L)`` returning a PyTorch module, or a JAX ``(apply, params)`` pair) into
one that returns the traced program. Nothing here imports torch or JAX until a tracer runs, and numpy only on first
use of a name.
"""

from __future__ import annotations

import collections.abc as _abc
import importlib as _importlib
import threading as _threading
import typing as _typing

if _typing.TYPE_CHECKING:
    from collections.abc import Callable

    from rwtoolkit.models.traced._jax import trace_jax
    from rwtoolkit.models.traced._program import OP_TABLE, Node, Op, TracedProgram, unknown_op
    from rwtoolkit.models.traced._torch import trace_torch

#: Where each name lives (imported by :func:`__getattr__` on first use).
_LAZY = {
    **dict.fromkeys(
        ("OP_TABLE", "Node", "Op", "TracedProgram", "unknown_op"), "rwtoolkit.models.traced._program"
    ),
    "trace_jax": "rwtoolkit.models.traced._jax",
    "trace_torch": "rwtoolkit.models.traced._torch",
}


def __getattr__(name: str) -> _typing.Any:
    if name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rwtoolkit.models.traced' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


#: Tracing is not thread-safe (torch.export and JAX keep global tracing state: two torch.export calls at once in
#: one process put one's fake tensors among the other's constants), so a process traces one program at a time.
_TRACING = _threading.RLock()


def program_factory(obj: _typing.Any) -> Callable[[int, int], TracedProgram]:
    """The traced program of a user's factory, per (S, L): ``obj(S, L)`` returns a PyTorch ``nn.Module`` (traced
    by :func:`trace_torch`) or a JAX pair ``(apply, params)``, ``params`` a flat dict name -> array (traced by
    :func:`trace_jax`). Each (S, L) is traced once and kept.

    >>> program_factory(3)
    Traceback (most recent call last):
    ...
    ValueError: program_factory: expected a factory ATTR(S, L) returning a torch.nn.Module or a JAX (apply, params) pair, got int
    """
    if not callable(obj):
        raise ValueError(
            "program_factory: expected a factory ATTR(S, L) returning a torch.nn.Module or a JAX (apply, params) "
            f"pair, got {type(obj).__name__}"
        )
    name = getattr(obj, "__name__", type(obj).__name__)
    traced: dict[tuple[int, int], TracedProgram] = {}

    def program(S: int, L: int) -> TracedProgram:
        with _TRACING:  # one trace at a time in a process (rw sweep's worker threads trace alike)
            return _traced(S, L)

    def _traced(S: int, L: int) -> TracedProgram:
        if (S, L) not in traced:
            try:
                made = obj(S, L)
            except Exception as err:  # the user's own code: one line naming it, not a traceback
                raise ValueError(f"{name}({S}, {L}) raised {_where(err)}") from err
            if (
                isinstance(made, tuple)
                and len(made) == 2
                and callable(made[0])
                and isinstance(made[1], _abc.Mapping)
            ):
                traced[S, L] = __getattr__("trace_jax")(made[0], made[1], S, L)
            elif _is_torch_module(made):
                traced[S, L] = __getattr__("trace_torch")(made, S, L)
            else:
                raise ValueError(
                    f"{name}({S}, {L}) returned {type(made).__name__}: expected a torch.nn.Module or a JAX "
                    "(apply, params) pair with params a dict name -> array"
                )
        return traced[S, L]

    return program


def _where(err: BaseException) -> str:
    """``err`` as 'Type: message at FILE:LINE', the line the exception was raised from (one line)."""
    import os
    import traceback

    frames = traceback.extract_tb(err.__traceback__)
    at = f" at {os.path.relpath(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    message = " ".join(str(err).split()) or "(no message)"
    return f"{type(err).__name__}: {message}{at}"


def _is_torch_module(made: _typing.Any) -> bool:
    """Whether ``made`` is a torch.nn.Module (torch is loaded already where it is one)."""
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(made, torch.nn.Module)


__all__ = [
    "OP_TABLE",
    "Node",
    "Op",
    "TracedProgram",
    "program_factory",
    "trace_jax",
    "trace_torch",
    "unknown_op",
]
