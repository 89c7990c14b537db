"""Models traced from PyTorch or JAX onto the tape (issue 41, item 2; docs/guide/bring-your-model.md).

A tracer maps the user's forward pass, op by op, to a :class:`TracedProgram` of the neutral ops of
:data:`OP_TABLE`; the program runs on :class:`~rwtoolkit.models.Tape` in every arithmetic. Nothing here imports
torch or JAX until a tracer runs, and numpy only on first use of a name.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from rwtoolkit.models.traced._program import OP_TABLE, Node, Op, TracedProgram, unknown_op

#: Where each name lives (imported by :func:`__getattr__` on first use).
_LAZY = {
    **dict.fromkeys(
        ("OP_TABLE", "Node", "Op", "TracedProgram", "unknown_op"), "rwtoolkit.models.traced._program"
    ),
}


def __getattr__(name: str) -> _typing.Any:
    if name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rwtoolkit.models.traced' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["OP_TABLE", "Node", "Op", "TracedProgram", "unknown_op"]
