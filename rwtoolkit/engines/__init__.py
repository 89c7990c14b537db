"""The engines (layer 3): gradient descent of a model on a task in one arithmetic each.

``exact`` (SymPy and python-flint rationals, the source of truth), ``numeric`` (PyTorch floats) and
``balls`` (certified ball arithmetic on python-flint's arb). Importing this package loads none of them.
``select(model, arithmetic, start)`` is the one entry point's choice: the arithmetic's generic engine or a
registered specialisation of it (``SPECIALISATIONS``), each pinned equal to the generic one by its tests.
Every engine's result is read through one contract, ``Trajectory`` (arithmetic, model, parameter names, the
recorded steps, ``value(t, name)``, ``loss(t)`` and the reduced view).
"""

from rwtoolkit.engines._registry import ARITHMETICS, GENERIC, SPECIALISATIONS, STARTS, Engine, select
from rwtoolkit.engines._trajectory import Trajectory

__all__ = ["ARITHMETICS", "GENERIC", "SPECIALISATIONS", "STARTS", "Engine", "Trajectory", "select"]
