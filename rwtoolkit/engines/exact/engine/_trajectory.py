"""The one interface of an exact trajectory, whichever exact engine derived it.

``rwtoolkit.engines.select(model, "exact", start)`` gives the generic exact engine (``derive_model``: any model
of record from any start) or the reduced one (``derive``: the paper's model from zero, in the reduced
coordinates of Lemma B.1). Both take the same keyword arguments (``EngineArguments``) and both return an
``ExactTrajectory``: the task, the settings, and at every step each parameter by its name and each read-out,
as exact SymPy values (``value``). That is what ``rw derive`` prints and what the oracle writer writes for
every trajectory. ``reduced`` is the trajectory in reduced coordinates where they exist (V, w_tok, c per
state, each state's group evaluation from which the per-input values are expanded, symbolic p, μ, η, ε or an
abstract loss, and the structure predicates' verdicts), else None. An ``ExactTrajectory`` is the exact
arithmetic's ``rwtoolkit.engines.Trajectory`` (``arithmetic``, ``model``, ``parameter_names``, ``times``,
``value``, ``loss(t)``, ``reduced``), read the same way as the torch and ball engines' results.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

if TYPE_CHECKING:
    import sympy as sp

    from rwtoolkit.engines.exact.engine._population import Loss
    from rwtoolkit.models import Model
    from rwtoolkit.tasks import CircleWalk, FiniteTask

#: Every read-out an exact trajectory may have, with its shape in terms of the sizes K and N.
READOUT_AXES: dict[str, tuple[str, ...]] = {
    "loss": (),
    "accuracy": (),
    "mean_attention": ("N",),
    "mean_logits": ("N",),
    "mean_f": ("K",),
}
#: Every per-input read-out an exact trajectory may have (one row per input of ``task.population()``), with its
#: shape per input in terms of K, N and L = N − 1: the attention logits and S over the N positions and the
#: prediction f of a model with one attention, or a sequence model's next-token logits at every position
#: (``rwtoolkit.models.Readouts.token_logits``) and its prediction f = softmax(token_logits[:, -1]).
PER_INPUT_AXES: dict[str, tuple[str, ...]] = {
    "logits": ("N",),
    "S": ("N",),
    "f": ("K",),
    "token_logits": ("L", "K"),
}


class EngineArguments(TypedDict, total=False):
    """The keyword arguments every exact engine takes besides ``task``, ``model`` and ``steps``
    (``engine.load()(task, model=model, steps=steps, **arguments)``): learning rate, ε, μ, loss, start,
    the scale and seed of a Gaussian start, the cross-entropy objective of a model with next-token logits
    (``rwtoolkit.models.OBJECTIVES``; None: the model's default), the update rule (``rwtoolkit.models.Optimizer``;
    None: plain GD, the only rule of the reduced engine), and a progress bar."""

    eta: object
    eps: object
    mu: object
    loss: str
    init: str
    sigma: object
    seed: int
    objective: str | None
    optimizer: object
    schedule: object
    stages: object
    progress: bool


@dataclass
class ExactTrajectory(ABC):
    """θ(0..T) of exact gradient descent of ``model`` on ``task``'s population, from ``init``, with the
    learning rate ``eta``, the ε of the loss ``eps``, μ = ‖p_i‖² ``mu`` and the per-sample loss ℓ ``ell`` as
    the engine read them.

    ``states`` holds one state per step, of the engine's own type; ``value(t, name)`` reads any parameter
    (``parameter_names``) or read-out (``readout_names``) at step t the same way for every engine, and
    ``loss(t)`` the population loss L at step t.
    """

    #: The arithmetic of every exact engine (``rwtoolkit.engines.Trajectory``).
    arithmetic: ClassVar[str] = "exact"

    task: CircleWalk | FiniteTask
    model: Model
    eta: sp.Expr
    eps: sp.Expr
    mu: sp.Expr
    ell: Loss
    init: str
    states: list[Any] = field(default_factory=list, kw_only=True)

    @property
    def times(self) -> tuple[int, ...]:
        """The recorded steps: every step 0..T."""
        return tuple(range(len(self.states)))

    def loss(self, t: int) -> Any:
        """The population loss L at step t (``value(t, "loss")``)."""
        return self.value(t, "loss")

    @property
    @abstractmethod
    def K(self) -> int:
        """The number of tokens."""

    @property
    @abstractmethod
    def N(self) -> int:
        """The number of positions."""

    @property
    @abstractmethod
    def population_size(self) -> int:
        """The number of inputs of the population (with the rotations of a circle)."""

    @property
    @abstractmethod
    def M(self) -> int | None:
        """The dimension of the exact positions P (PᵀP = μI) the parameters act on; None in reduced
        coordinates, where P enters only through μ (Lemma B.1)."""

    @property
    @abstractmethod
    def parameter_names(self) -> tuple[str, ...]:
        """The parameters of every state, in the order they are printed and written."""

    @abstractmethod
    def parameter_shapes(self) -> dict[str, list[int]]:
        """Each parameter's shape."""

    @property
    @abstractmethod
    def readout_names(self) -> tuple[str, ...]:
        """The read-outs of every state (names of ``READOUT_AXES``), in the order they are written."""

    @property
    def per_input_names(self) -> tuple[str, ...]:
        """The per-input read-outs of every state (names of ``PER_INPUT_AXES``), in the order they are written:
        the attention logits, S and f (a model with one attention over the N positions)."""
        return ("logits", "S", "f")

    def per_input_shapes(self) -> dict[str, list[int]]:
        """Each per-input read-out's shape per input (``PER_INPUT_AXES`` at the trajectory's K, N, L = N − 1)."""
        sizes = {"K": self.K, "N": self.N, "L": self.N - 1}
        return {name: [sizes[a] for a in PER_INPUT_AXES[name]] for name in self.per_input_names}

    @abstractmethod
    def value(self, t: int, name: str) -> Any:
        """The exact value of parameter or read-out ``name`` at step t: a SymPy scalar, a list (a vector) or
        a list of rows / Matrix (a matrix); None for an accuracy some comparison of which is undecided."""

    def element(self, t: int, name: str) -> Any:
        """``value(t, name)`` as the engine holds it (what the oracle writer writes and ``rw derive`` prints):
        the same SymPy values for the reduced engine, the arithmetic's own elements for the generic one (a value
        of the ``DAG`` arithmetic is a node of its program, written without SymPy)."""
        return self.value(t, name)

    @property
    @abstractmethod
    def reduced(self) -> Any:
        """The trajectory in reduced coordinates (V, w_tok, c) where they exist, else None: a
        ``rwtoolkit.engines.exact.ReducedTrajectory``, whose states are ``StepState``s."""


__all__ = ["PER_INPUT_AXES", "READOUT_AXES", "EngineArguments", "ExactTrajectory"]
