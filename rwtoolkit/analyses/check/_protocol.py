"""The model protocol and the probe that runs an implementation once before any work.

The protocol itself (what a factory returns, how the kit runs it, the read-outs it collects) lives in
``rwtoolkit.runtime``, which needs numpy alone and is what frozen fixtures carry: see its docstring.
"""

from __future__ import annotations

from typing import Any

from rwtoolkit.analyses.check._config import build_config, for_model
from rwtoolkit.models import DEFAULT_MODEL
from rwtoolkit.runtime import (
    LABELS,
    QUANTITIES,
    Factory,
    ImplementationError,
    Readouts,
    accuracy,
    build,
    finite_or_text,
    first_non_finite,
    model_quantities,
    run,
    run_model,
    run_sequence,
    sequence_quantities,
)

__all__ = [
    "LABELS",
    "QUANTITIES",
    "Factory",
    "ImplementationError",
    "Readouts",
    "accuracy",
    "build",
    "finite_or_text",
    "first_non_finite",
    "probe",
    "quantities",
    "run",
    "run_config",
]


def quantities(config: Any) -> tuple[str, ...]:
    """What ``run_config`` reads out at each step, in the order compared: the paper's V and W x̃_N
    (``QUANTITIES``), or another model's parameters by name (``config.shapes``), then S, f, loss, accuracy.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> config = build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10")
    >>> quantities(config), quantities(for_model(config, "key_query"))[:3]
    (('V', 'W_xN', 'S', 'f', 'loss', 'accuracy'), ('V', 'W_K', 'W_Q'))
    """
    if config.objective is not None:  # a sequence model: its parameters, the token logits, the objective
        return sequence_quantities(config.shapes)
    return QUANTITIES if config.model == DEFAULT_MODEL else model_quantities(config.shapes)


def run_config(factory: Factory, config: Any, steps: int) -> Readouts:
    """The implementation's read-outs at t = 0..steps on ``config``, through its model's protocol: the paper's
    (``rwtoolkit.runtime.run``: V and W, read out as W x̃_N), a sequence model's (``rwtoolkit.runtime.run_sequence``:
    its parameters by name, token logits, objective) or another model's parameters by their names
    (``rwtoolkit.runtime.run_model`` with ``config.shapes``)."""
    if config.model == DEFAULT_MODEL:
        return run(factory, config, steps)
    if config.objective is not None:  # a sequence model: token ids in, next-token logits out
        return run_sequence(factory, config, steps)
    return run_model(factory, config, steps, config.shapes)


def probe(
    factory: Factory,
    dtype: str = "float64",
    model: str = DEFAULT_MODEL,
    head_dim: int | None = None,
    heads: int | None = None,
    objective: str | None = None,
    optimizer: Any = None,
    schedule: Any = None,
    stages: Any = None,
    steps: int = 1,
) -> Readouts:
    """Run the implementation on one small config for one step before any work starts.

    ``model``, ``head_dim``: another model of ``rwtoolkit.models`` (``rw check --model``, ``rwtoolkit.analyses.check._models``); the
    config is then ``for_model`` of the same small one and the parameters go by the model's names.

    ``optimizer``, ``schedule``, ``stages``: a sequence model's update rule, schedule and stages for the check's
    ``steps`` (the probe runs the first of them).

    Returns its read-outs (which say the protocol and what it provides); raises ``ImplementationError`` (one line) when the
    factory fails, returns something else, has wrong shapes, or gives NaN/inf at t = 0.
    """
    from rwtoolkit.analyses.check._settings import check_settings
    from rwtoolkit.tasks import CircleWalk, binary_markov_task

    task = (
        binary_markov_task("1/3", "3/5", 3)
        if check_settings(model).task == "sequence"
        else CircleWalk(3, 3, "1/2")
    )
    config = build_config(task, mu=1, eta=1, eps="1/10", embedding="onehot", M=3, dtype=dtype)
    generic = model != DEFAULT_MODEL
    if generic:
        config = for_model(
            config, model, head_dim, heads, objective, optimizer, schedule, stages, max(1, steps)
        )
    try:
        readouts = run_config(factory, config, 1)
    except ImplementationError:
        raise
    except Exception as err:  # the user's code failed: one line naming the exception
        message = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise ImplementationError(
            f"the implementation raised {type(err).__name__}: {message} (on {config.describe()})"
        ) from None
    checked = tuple(q for q in quantities(config) if q not in ("loss", "accuracy"))
    bad = first_non_finite(readouts, checked, 0)
    if bad is not None:
        raise ImplementationError(
            f"the implementation gives non-finite {LABELS.get(bad, bad)} at t=0 (NaN or inf) on {config.describe()}"
        )
    return readouts
