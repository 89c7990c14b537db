"""Sequence models: any program mapping token ids to next-token logits at every position, as a model of record.

A *sequence program* (:class:`SequenceProgram`) has trained ``parameters`` (name -> shape, in order), its own
``initial`` values (float64), the ``axes`` each parameter's axes index, and ``run(tape, params, tokens)``: the logits
(n, L, S) of n sequences of L token ids, written with the tape's primitives. A program traced from PyTorch or JAX
(``rwtoolkit.models.traced.TracedProgram``) is one; a program written by hand with the tape is another.

:class:`SequenceModel` makes one a :class:`~rwtoolkit.models.Model`: a task's population gives sequences
x_1..x_{N-1} (the tokens the program reads, L = N − 1) and the label x_N; the program (built once per
S = K symbols and L, ``program_for(S, L)``) gives the logits at every position (``Readouts.token_logits``), the prediction is
f = softmax(logits_L), and the model trains on the cross-entropy objectives (``rwtoolkit.models.CrossEntropy``:
``"lm"`` at every position by default, ``"last"``) in every engine through the generic loop
``rwtoolkit.models.gradient_steps`` (MATH §14). A sequence model has no single attention over the N positions:
its ``Readouts.logits`` and ``S`` are None, and what reads S (the mean attention, the attention claims) refuses it
in one line.

Its starts: zero, any exact start the caller declares, or the program's own ``initial`` (``--init own``),
whose float64 values enter an exact arithmetic as the dyadic rationals they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, ClassVar, Protocol

import numpy as np

from rwtoolkit.models._arith import Arithmetic, Array
from rwtoolkit.models._model import Inputs, Model, Readouts, Sizes
from rwtoolkit.models._tape import Tape, Var


class SequenceProgram(Protocol):
    """A program mapping token ids (n, L) to next-token logits (n, L, S), written with the tape's primitives.

    ``parameters``: the trained parameters, name -> shape, in order; ``initial``: the program's own start,
    float64 arrays by name; ``axes``: per parameter, what each axis indexes (``"token"``, ``"position"``,
    ``"head"`` or None); ``run``: the logits of the tokens at ``params`` (tape values or arrays of the tape's
    arithmetic), the token ids a constant (not differentiated).
    """

    @property
    def parameters(self) -> Mapping[str, tuple[int, ...]]: ...

    @property
    def initial(self) -> Mapping[str, np.ndarray]: ...

    @property
    def axes(self) -> Mapping[str, tuple[str | None, ...]]: ...

    def run(self, tape: Tape, params: Mapping[str, Var | Array], tokens: np.ndarray) -> Var: ...


def exact_start(values: Mapping[str, Any], arithmetic: Arithmetic) -> dict[str, Array]:
    """``values`` (float64 arrays, or arrays of exact rationals) in ``arithmetic``, each float as the exact
    rational it holds (``fractions.Fraction(float)``: a dyadic rational), so an exact arithmetic starts exactly
    where the floats do.

    >>> from rwtoolkit.models import ObjectArithmetic
    >>> ar = ObjectArithmetic("fractions", Fraction, exp=None, sign=lambda x: (x > 0) - (x < 0))
    >>> exact_start({"a": np.array([0.1])}, ar)["a"][0]
    Fraction(3602879701896397, 36028797018963968)
    """
    out = {}
    for name, value in values.items():
        raw = np.asarray(value)
        if raw.dtype.kind == "f" and not np.isfinite(raw).all():
            raise ValueError(
                f"the model's own start (--init own): parameter {name!r} is not finite (NaN or inf)"
            )
        exact = raw.astype(object) if raw.dtype.kind != "f" else np.vectorize(Fraction, otypes=[object])(raw)
        out[name] = arithmetic.asarray(exact if raw.size else raw.astype(object))
    return out


class SequenceModel(Model):
    """A sequence program as a model of record (the module text): ``program_for(S, L)`` gives the program of
    S symbols and sequences of L tokens (at a task's sizes S = K, L = N − 1), built once per (S, L)
    (``rwtoolkit.models.traced.program_factory`` gives one for a PyTorch or JAX factory).

    ``name`` is how the model is written in output files and messages, ``hyperparameters`` what fixes its
    parameters besides the sizes (written with it).
    """

    name = "sequence"
    AXES: ClassVar[dict[str, tuple[str | None, ...]]] = {}  # per sizes: parameter_axes
    POSITION_SYMMETRIC = False  # a causal mask and positional embeddings see the order of the positions
    TOKEN_LOGITS = True

    def __init__(
        self,
        program_for: Callable[[int, int], SequenceProgram],
        name: str = "sequence",
        hyperparameters: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name  # type: ignore[misc]  # a sequence model's name is its own, not the registry's
        self._program_for = program_for
        self._hyperparameters = dict(hyperparameters or {})
        self._programs: dict[tuple[int, int], SequenceProgram] = {}

    @property
    def hyperparameters(self) -> dict[str, Any]:
        return dict(self._hyperparameters)

    def program(self, sizes: Sizes) -> SequenceProgram:
        """The program of S = ``sizes.K`` tokens and L = ``sizes.N`` − 1 positions (built on first use)."""
        key = (sizes.K, sizes.N - 1)
        if key not in self._programs:
            if key[1] < 1:
                raise ValueError(f"N={sizes.N}: a sequence model reads N - 1 >= 1 tokens")
            self._programs[key] = self._program_for(*key)
        return self._programs[key]

    def shapes(self, sizes: Sizes) -> dict[str, tuple[int, ...]]:
        return {name: tuple(int(x) for x in shape) for name, shape in self.program(sizes).parameters.items()}

    def parameter_axes(self, sizes: Sizes) -> dict[str, tuple[str | None, ...]]:
        return {name: tuple(axes) for name, axes in self.program(sizes).axes.items()}

    def initial(self, arithmetic: Arithmetic, sizes: Sizes) -> dict[str, Array]:
        """The program's own start in ``arithmetic``, every float64 the exact rational it holds."""
        shapes = self.shapes(sizes)
        own = self.program(sizes).initial
        if set(own) != set(shapes):
            raise ValueError(
                f"model {self.name}: its initial values name {sorted(own)}, its parameters {sorted(shapes)}"
            )
        for key, shape in shapes.items():
            if tuple(np.shape(own[key])) != shape:
                raise ValueError(
                    f"model {self.name}: initial value of {key!r} has shape {tuple(np.shape(own[key]))}, "
                    f"the parameter {shape}"
                )
        return exact_start({key: own[key] for key in shapes}, arithmetic)

    def forward(self, tape: Tape, params: Mapping[str, Var | Array], inputs: Inputs) -> Readouts:
        """The program's logits (n, L, S) of the inputs' token ids, and f = softmax(logits_L)."""
        tokens = inputs.tokens
        if tokens is None:
            raise ValueError(
                f"model {self.name} reads token ids: build the inputs with rwtoolkit.models.embed"
            )
        sizes = inputs.sizes
        n, L, S = int(tokens.shape[0]), int(tokens.shape[1]), sizes.K
        logits = self.program(sizes).run(tape, params, tokens)
        if logits.shape != (n, L, S):
            raise ValueError(
                f"model {self.name}: its program gives logits of shape {logits.shape} for {n} sequences of "
                f"{L} tokens over {S} symbols; a sequence program gives (n, L, S) = {(n, L, S)}"
            )
        last = tape.gather(logits, np.full((1, 1, 1), L - 1, dtype=np.int64), axis=1)  # (n, 1, S)
        f = tape.softmax(tape.reshape(last, (n, S)))
        return Readouts(logits=None, S=None, f=f, token_logits=logits)


class _CountingTape(Tape):
    """A tape that counts the multiply-adds of what it records: a matrix product's output entries times its
    inner size, one per output entry of every other primitive; and its exponential primitives (softmax,
    log_softmax, exp), one per call."""

    def __init__(self, arithmetic: Arithmetic) -> None:
        super().__init__(arithmetic)
        self.operations = 0
        self.exponentials = 0

    def _var(self, value: Array, *parents: Any) -> Var:
        self.operations += int(np.size(value))
        return super()._var(value, *parents)

    def matmul(self, a: Var | Array, b: Var | Array) -> Var:
        out = super().matmul(a, b)
        inner = int((a.value if isinstance(a, Var) else a).shape[-1])
        self.operations += int(np.size(out.value)) * (inner - 1)
        return out

    def softmax(self, a: Var | Array, mask: Any = None) -> Var:
        self.exponentials += 1
        return super().softmax(a, mask)

    def log_softmax(self, a: Var | Array) -> Var:
        self.exponentials += 1
        return super().log_softmax(a)

    def exp(self, a: Var | Array) -> Var:
        self.exponentials += 1
        return super().exp(a)


def _counted(model: SequenceModel, sizes: Sizes) -> _CountingTape:
    """The counting tape of one forward pass of ``model``'s program: run once in float64 at zero on one
    sequence of L = N − 1 tokens."""
    from rwtoolkit.models._arith import FLOAT64

    tape = _CountingTape(FLOAT64)
    params = {name: tape.input(np.zeros(shape)) for name, shape in model.shapes(sizes).items()}
    tape.operations = 0
    model.program(sizes).run(tape, params, np.zeros((1, sizes.N - 1), dtype=np.int64))
    return tape


def forward_operations(model: SequenceModel, sizes: Sizes) -> int:
    """Multiply-adds of one forward pass of ``model``'s program on one sequence of L = N − 1 tokens: the
    program run once in float64 at zero on a counting tape (matrix products counted by their inner size). A
    pass with its gradient is about three forward passes; n sequences cost n times one. The basis of the
    exact and ball engines' estimates for a sequence model.

    >>> from rwtoolkit.models import FLOAT64
    >>> class Unigram:
    ...     parameters, initial, axes = {"b": (2,)}, {"b": np.zeros(2)}, {"b": ("token",)}
    ...     def run(self, tape, params, tokens):
    ...         return tape.add(tape.ar.zeros(tokens.shape + (2,)), params["b"])
    >>> forward_operations(SequenceModel(lambda S, L: Unigram()), Sizes(K=2, M=4, N=4))
    6
    """
    return _counted(model, sizes).operations


def forward_exponentials(model: SequenceModel, sizes: Sizes) -> int:
    """The exponential primitives (``softmax``, ``log_softmax``, ``exp``) of one forward pass of ``model``'s
    program, one per call of the tape (an attention layer's softmax over all its heads is one): in exact
    arithmetic each makes exponentials of what the ones before it made, so the exact engine's estimate reads
    them as levels of nesting (``rwtoolkit.engines.exact.model_job_estimate``).

    >>> class Attention:
    ...     parameters = {"b": (2,), "w": (2, 2)}
    ...     initial, axes = {"b": np.zeros(2), "w": np.zeros((2, 2))}, {"b": (None,), "w": (None, None)}
    ...     def run(self, tape, params, tokens):
    ...         h = tape.softmax(tape.add(tape.ar.zeros(tokens.shape + (2,)), params["b"]))
    ...         return tape.matmul(h, params["w"])
    >>> forward_exponentials(SequenceModel(lambda S, L: Attention()), Sizes(K=2, M=4, N=4))
    1
    """
    return _counted(model, sizes).exponentials


def stays_at_zero(model: Model, population: Any, objective: str | None = None) -> bool:
    """Whether ``model`` (next-token logits) stays at θ = 0 under GD on ``population`` (a task's population:
    ``tokens``, ``labels``, ``K``, ``N``, ``float_probs()``): its ``objective``'s gradient at zero (None: the
    model's default), in float64, is 0 in every entry, so every step keeps θ = 0 and every value of the run is
    0 or a rational of the objective. The nanoGPT-style examples do (each parameter enters the logits in a
    product of two zeros); a program with a read-out bias does not. A probe for the engines' estimates
    (milliseconds), not a proof (``rwtoolkit.engines.exact``'s ``stuck_proof`` proves it).

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import binary_markov_task
    >>> population = binary_markov_task("1/3", "3/5", 3).population()
    >>> stays_at_zero(get_model("examples/nanogpt_attention.py:one_layer"), population)
    True
    """
    from rwtoolkit.models._arith import FLOAT64
    from rwtoolkit.models._descent import batch, evaluate
    from rwtoolkit.models._losses import CrossEntropy, objective_name
    from rwtoolkit.models._positions import rational_positions

    P = FLOAT64.asarray(np.asarray(rational_positions(population.N, 1), dtype=np.float64))
    data = batch(FLOAT64, population.tokens, population.labels, population.float_probs(), population.K, P)
    state = evaluate(
        model,
        FLOAT64,
        model.zeros(FLOAT64, data.inputs.sizes),
        data,
        CrossEntropy(objective_name(model, objective) or "lm"),
    )
    return state.gradient is not None and not any(np.any(g) for g in state.gradient.values())


__all__ = [
    "SequenceModel",
    "SequenceProgram",
    "exact_start",
    "forward_exponentials",
    "forward_operations",
    "stays_at_zero",
]
