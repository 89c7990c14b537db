"""The one trajectory type of every engine, whichever arithmetic it runs in.

``rwtoolkit.engines.select(model, arithmetic, start)`` gives an engine of the exact, torch or ball arithmetic;
what it returns is read through one contract, ``Trajectory``: the arithmetic, the model, the parameters by
name, the recorded steps, any parameter or read-out at a recorded step in the engine's own arithmetic, the
loss, and the reduced coordinates as a view where the engine keeps them. The three arithmetics' result types
implement it: ``rwtoolkit.engines.exact.ExactTrajectory`` (SymPy rationals and exponential atoms),
``rwtoolkit.engines.numeric.TrainResult`` (float64 arrays) and ``rwtoolkit.engines.balls.BallTrajectory``
(python-flint arb balls). Each keeps its own further fields (the exact trajectory's ``states``, the torch
run's ``history`` and ``to_json``, the certified run's ``records`` and ``prec``).

>>> from rwtoolkit.engines import Trajectory, select
>>> from rwtoolkit.models import get_model
>>> from rwtoolkit.tasks import CircleWalk
>>> engine = select("one_layer", "balls", "zero")
>>> traj = engine.load()(CircleWalk(3, 3, "1/2"), get_model("one_layer"), 1)
>>> isinstance(traj, Trajectory), traj.arithmetic, traj.parameter_names, traj.times
(True, 'balls', ('V', 'w_tok', 'c'), (0, 1))
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Trajectory(Protocol):
    """θ(t) of gradient descent at the recorded steps, read the same way in every arithmetic.

    ``arithmetic``: ``"exact"``, ``"torch"`` or ``"balls"`` (``rwtoolkit.engines.ARITHMETICS``).
    ``model``: the model of record (``rwtoolkit.models.Model``; ``describe()`` gives its JSON form).
    ``parameter_names``: the names ``value`` reads as the engine keeps them: the model's parameters in a
    generic engine, the reduced coordinates in a specialisation that keeps only those (V, w_tok, c of the
    paper's model in the exact and ball engines; V, w = W x̃_N and, with the ReLU head, A in the torch ones).
    ``times``: the recorded steps, increasing. ``value(t, name)``: the parameter or read-out ``name`` at the
    recorded step t in the engine's own arithmetic (exact SymPy values; float64 arrays; arb balls).
    ``loss(t)``: the training loss at step t, in the same arithmetic. ``reduced``: the trajectory in reduced
    coordinates where the engine keeps them (a trajectory that keeps only those is its own view), else None.
    """

    @property
    def arithmetic(self) -> str: ...

    @property
    def model(self) -> Any: ...

    @property
    def parameter_names(self) -> tuple[str, ...]: ...

    @property
    def times(self) -> tuple[int, ...]: ...

    def value(self, t: int, name: str) -> Any: ...

    def loss(self, t: int) -> Any: ...

    @property
    def reduced(self) -> Any: ...


__all__ = ["Trajectory"]
