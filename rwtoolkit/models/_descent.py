"""Gradient descent on the exact population loss, for any model of the registry, in any arithmetic.

The population loss is L(θ) = Σ_n w_n ℓ(e_{y_n}ᵀ f_θ(X_n)) over a finite population with exact weights w_n
(a task's inputs and probabilities, docs/theory.md#task), or for a model with next-token logits the
cross-entropy at every position (``rwtoolkit.models.CrossEntropy``, MATH §14). Its gradient is the tape's reverse
pass of the model's forward, seeded by the objective (``rwtoolkit.models.Objective``): ∂L/∂f = w_n ℓ'(z_n) e_{y_n}
for a loss of the prediction, ∂L/∂logits_i = w_n (softmax(logits_i) − e_{x_{i+1}}) / L for the cross-entropy;
one step is θ ← θ − η ∇L. This is the generic path of every engine; the hand-tuned fast paths of the paper's model
are specialisations tested equal to it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rwtoolkit.models._arith import Arithmetic, Array
from rwtoolkit.models._losses import ElementLoss, Objective, as_objective
from rwtoolkit.models._model import Inputs, Model, embed
from rwtoolkit.models._optim import GD, Optimizer, schedule_factor, stage_plan
from rwtoolkit.models._tape import Tape, Var


@dataclass(frozen=True)
class Batch:
    """A population in one arithmetic: the inputs, the labels (n,) and the exact weights (n,) summing to 1."""

    inputs: Inputs
    labels: np.ndarray
    weights: Array

    @property
    def size(self) -> int:
        return int(self.labels.shape[0])


def batch(
    arithmetic: Arithmetic, tokens: np.ndarray, labels: np.ndarray, weights: Any, K: int, P: Array
) -> Batch:
    """The population (token ids, labels, weights) embedded with positions ``P`` in ``arithmetic``."""
    return Batch(
        inputs=embed(arithmetic, tokens, K, P),
        labels=np.asarray(labels, dtype=np.int64),
        weights=arithmetic.asarray(weights) if isinstance(weights, (list, tuple, np.ndarray)) else weights,
    )


@dataclass
class Evaluation:
    """A state θ and everything evaluated at it: read-outs per input, the population loss and its gradient.

    ``logits`` and ``S`` are None for a model without one attention over the N positions (a sequence model),
    ``token_logits`` None for a model without next-token logits (``rwtoolkit.models.Readouts``)."""

    params: dict[str, Array]
    logits: Array | None  # (n, N) attention logits
    S: Array | None  # (n, N)
    f: Array  # (n, K)
    z: Array  # (n,) e_yᵀ f
    loss: Any  # the objective: Σ_n w_n ℓ(z_n), or the cross-entropy on token_logits
    gradient: dict[str, Array] | None
    token_logits: Array | None = None  # (n, N-1, K) next-token logits at every position

    def mean_attention(self, weights: Array, arithmetic: Arithmetic) -> Array:
        """E[S_j], j = 1..N; one line for a model without S."""
        if self.S is None:
            raise ValueError(
                "mean attention: this model has no attention S over the N positions (a sequence model's "
                "attention is per layer, head and position); read its loss, accuracy and prediction f"
            )
        return arithmetic.sum(self.S * weights.reshape((-1, 1)), 0)

    def accuracy(self, batch: Batch, arithmetic: Arithmetic) -> Any:
        """P(smallest argmax of f = y), or None where the arithmetic cannot decide a comparison."""
        predicted = arithmetic.predict(self.f)
        if predicted is None:
            return None
        correct = np.asarray(predicted) == batch.labels
        return arithmetic.sum(batch.weights * arithmetic.asarray(correct.astype(np.int64)), 0)


def evaluate(
    model: Model,
    arithmetic: Arithmetic,
    params: Mapping[str, Array],
    batch: Batch,
    loss: ElementLoss | Objective,
    gradient: bool = True,
) -> Evaluation:
    """The model's read-outs at ``params`` on ``batch``, the population loss and (if asked) its gradient.

    ``loss`` is the objective (``rwtoolkit.models.Objective``: a ``CrossEntropy`` on next-token logits) or a
    loss ℓ of the label score (an ``ElementLoss``, read as its ``PredictionLoss``); the objective gives the
    loss and the cotangent the tape's reverse pass starts from.
    """
    tape = Tape(arithmetic)
    inputs = {name: tape.input(value) for name, value in params.items()}
    out = model.forward(tape, inputs, batch.inputs)
    f = out.f.value
    z = f[np.arange(batch.size), batch.labels]
    total, seeded, seed = as_objective(loss).apply(arithmetic, out, batch, gradient)
    grads = tape.gradient(seeded, seed, inputs) if seeded is not None else None
    return Evaluation(
        dict(params), _value(out.logits), _value(out.S), f, z, total, grads, _value(out.token_logits)
    )


def _value(v: Var | None) -> Array | None:
    return None if v is None else v.value


def gradient_steps(
    model: Model,
    arithmetic: Arithmetic,
    params: Mapping[str, Array],
    batch: Batch,
    loss: ElementLoss | Objective,
    eta: Any | Mapping[str, Any],
    steps: int,
    optimizer: Optimizer = GD,
    schedule: Callable[[int], Any] | None = None,
    stages: Sequence[tuple[int, Collection[str]]] | None = None,
    rule_state: dict[str, dict[str, Any]] | None = None,
) -> Iterator[Evaluation]:
    """θ(0), θ(1), ..., θ(steps) of full-batch GD θ ← θ − η ∇L from ``params``, each evaluated, one at a time.

    The one gradient-descent loop of the generic path, in every arithmetic: ``descend`` keeps every state,
    ``rwtoolkit.engines.numeric.train_model`` and the ball engine's model trajectories keep the steps they record.
    ``eta`` is one rate or one per parameter; step t + 1 is computed when the caller asks for it (after it has
    read, checked or dropped step t); the last evaluation has no gradient (no step is taken from it).
    ``optimizer`` is the update rule (``rwtoolkit.models.Optimizer``: momentum, Nesterov, Adam, AdamW; default
    plain GD, the rule above), refused before the first evaluation where the arithmetic cannot run it;
    ``schedule``: t ↦ the factor of every rate at the step from θ(t) (a rational ≥ 0; ``schedule_factor``);
    ``stages``: (number of steps, the parameters trained) in order, covering the steps (``stage_plan``): the
    others keep their values and the rule's state (docs/guide/optimizers.md);
    ``rule_state``: the rule's state, read at the first step and updated in place (``Optimizer.stepper``): when
    θ(t) is yielded it holds the state after the step to θ(t) (a checkpoint's, to continue from).
    """
    rates = eta if isinstance(eta, Mapping) else {name: eta for name in params}
    update = optimizer.stepper(arithmetic, rates, rule_state)
    check = getattr(schedule, "check", None)  # a named Schedule: the cosine's floats refused where exact
    if callable(check):
        check(arithmetic)
    plan = None if stages is None else stage_plan(stages, list(params), steps)
    current = dict(params)
    for t in range(steps + 1):
        state = evaluate(model, arithmetic, current, batch, loss, gradient=t < steps)
        yield state
        if t < steps:
            assert state.gradient is not None
            scale = None if schedule is None else schedule_factor(arithmetic, schedule, t)
            current = update(current, state.gradient, scale, None if plan is None else plan[t])


def descend(
    model: Model,
    arithmetic: Arithmetic,
    params: Mapping[str, Array],
    batch: Batch,
    loss: ElementLoss | Objective,
    eta: Any | Mapping[str, Any],
    steps: int,
    progress: Callable[[int], None] | None = None,
    optimizer: Optimizer = GD,
    schedule: Callable[[int], Any] | None = None,
    stages: Sequence[tuple[int, Collection[str]]] | None = None,
) -> list[Evaluation]:
    """θ(0..steps) of full-batch GD θ ← θ − η ∇L (or ``optimizer``'s rule) from ``params`` (``gradient_steps``),
    every state kept.

    Returns ``steps + 1`` evaluations; the last has no gradient (no step is taken from it).
    """
    states = []
    for t, state in enumerate(
        gradient_steps(model, arithmetic, params, batch, loss, eta, steps, optimizer, schedule, stages)
    ):
        states.append(state)
        if progress is not None:
            progress(t)
    return states
