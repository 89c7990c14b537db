"""A sequence model's implementation run through the protocols: token ids in, next-token logits out.

A sequence model (``config.objective`` set: a model traced from PyTorch or JAX, or written on the tape with
next-token logits) reads the population's token ids x_1..x_L (``config.tokens``, (n, L), L = N − 1) and gives
logits (n, L, S) at every position, S = ``config.K``; it trains on ``config.objective``: "lm", the
cross-entropy at every position against x_2..x_N (``config.targets``), or "last", at position L only, each
sequence weighted by its exact probability (``config.weights``; ``CheckConfig.sequence_loss``). An
implementation is handed the config and is one of

(a) a ``torch.nn.Module`` whose named parameters are exactly ``config.shapes`` (the names
    ``module.named_parameters()`` gives, e.g. ``blocks.0.attn.query.weight``), at ``config.start`` (the
    model's own start: a module built by the same factory and seed starts there), mapping token ids (n, L)
    int64 to logits (n, L, S). The kit trains it: θ ← θ − η ∇θ of ``config.sequence_loss``, or the config's
    update rule (``config.optimizer``: momentum, Nesterov, Adam, AdamW) as ``config.torch_optimizer`` builds it,
    at the rate η · ``config.lr_factors[t]`` and on the parameters ``config.trained[t]`` (the others left
    without a gradient: ``rw check --schedule``, ``--stages``).
(b) an iterator (the user's own training loop) yielding at t = 0, 1, … a mapping with every parameter's
    name and optionally ``"token_logits"`` (n, L, S) and ``"loss"`` (the objective at θ(t)); under a schedule
    or stages it takes step t at lr η · ``config.lr_factors[t]`` and moves only ``config.trained[t]``
    (``CheckConfig.scheduled`` does both for a ``torch.optim`` optimizer).
(d) a ``Supervised``: a module as in (a) with the user's objective ``loss(logits, targets, weights)`` and
    update (a ``torch.optim`` optimizer, or ``step(module)``).

Compared at each step: the parameters by name, then ``token_logits``, then ``loss``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ._runner import (
    Functional,
    ImplementationError,
    Readouts,
    Supervised,
    append_optional,
    build,
    check_precision,
    is_torch_module,
    listed_names,
    readout_array,
    take_step,
    with_steps,
)

#: What a sequence model reads out after its parameters at each step, in the order compared.
SEQUENCE_READOUTS = ("token_logits", "loss")


def sequence_quantities(shapes: Mapping[str, tuple[int, ...]]) -> tuple[str, ...]:
    """What is compared at each step for a sequence model: its parameters in order, then ``SEQUENCE_READOUTS``.

    >>> sequence_quantities({"wte.weight": (2, 4)})
    ('wte.weight', 'token_logits', 'loss')
    """
    return (*shapes, *SEQUENCE_READOUTS)


def run_sequence(factory: Any, config: Any, steps: int) -> Readouts:
    """Run a sequence model's implementation (module docstring) for ``steps`` steps: its read-outs at t = 0..steps
    by parameter name, ``token_logits`` and ``loss``."""
    shapes = dict(config.shapes)
    config = with_steps(config, steps)  # with the schedule's lr_factors and the stages' trained, t < steps
    impl = build(factory, config)
    if isinstance(impl, Functional):
        raise ImplementationError(
            "a Functional is read with X̃ inputs (the paper's protocol); a sequence model's implementation is a "
            "torch.nn.Module, a Supervised or a training loop yielding its parameters by name"
        )
    if isinstance(impl, Supervised):
        return _run_module(impl.module, config, steps, shapes, impl)
    if is_torch_module(impl):
        return _run_module(impl, config, steps, shapes)
    return _run_loop(impl, config, steps, shapes)  # type: ignore[arg-type]


def _start(protocol: str, steps: int, shapes: Mapping[str, tuple[int, ...]]) -> tuple[Readouts, dict]:
    series: dict[str, list[np.ndarray]] = {q: [] for q in sequence_quantities(shapes)}
    return Readouts(protocol, steps, dict(series)), series


def _run_module(
    module: Any,
    config: Any,
    steps: int,
    shapes: dict[str, tuple[int, ...]],
    supervised: Supervised | None = None,
) -> Readouts:
    import torch

    params = dict(module.named_parameters())
    missing = [name for name in shapes if name not in params]
    if missing:
        raise ImplementationError(
            f"the module has no parameter {missing[0]!r} (expected {listed_names(shapes)})"
        )
    others = [name for name in params if name not in shapes]
    if others:
        raise ImplementationError(
            f"the module has parameters other than {listed_names(shapes)}: {', '.join(others)}"
        )
    for name, shape in shapes.items():
        if tuple(params[name].shape) != shape:
            raise ImplementationError(
                f"the module's parameter {name} has shape {tuple(params[name].shape)}, expected {shape}"
            )
    n, L, S = len(config.labels), config.L, config.K
    tokens = torch.as_tensor(np.asarray(config.tokens), dtype=torch.long)
    targets, weights = torch.as_tensor(config.targets), torch.as_tensor(config.weights)
    protocol = "module" if supervised is None else "supervised"
    out, series = _start(protocol, steps, shapes)
    # the kit's own update: θ ← θ − η ∇θ, or the config's rule as torch.optim runs it
    kit = (
        None
        if supervised is not None or config.optimizer is None
        else config.torch_optimizer([params[name] for name in shapes])
    )
    for t in range(steps + 1):
        for p in params.values():
            p.grad = None
        logits = module(tokens)
        if not isinstance(logits, torch.Tensor):
            raise ImplementationError(
                f"forward(tokens) returned {type(logits).__name__}, expected a tensor of shape {(n, L, S)}"
            )
        if supervised is None:
            loss = config.sequence_loss(logits)
        else:
            loss = supervised.loss(logits, targets, weights.to(logits.dtype))
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise ImplementationError(
                    f"loss(logits, targets, weights) returned {type(loss).__name__}, expected a scalar tensor"
                )
        for name in shapes:
            series[name].append(readout_array(params[name], name, shapes[name]))
        series["token_logits"].append(readout_array(logits, f"forward(tokens) at t={t}", (n, L, S)))
        series["loss"].append(np.array(float(loss.detach())))
        if t == steps:
            break
        scheduled = getattr(config, "schedule", None) is not None
        factors, trained = getattr(config, "lr_factors", None), getattr(config, "trained", None)
        take_step(
            module,
            [params[name] for name in shapes],
            loss,
            float(config.eta),
            supervised,
            kit,
            factors[t] if scheduled and factors is not None else None,
            None if trained is None else {k: p for k, p in params.items() if k not in trained[t]},
        )
    return out


def _run_loop(
    loop: Iterator[object], config: Any, steps: int, shapes: dict[str, tuple[int, ...]]
) -> Readouts:
    n, L, S = len(config.labels), config.L, config.K
    optional = {"token_logits": (n, L, S), "loss": ()}
    out, series = _start("loop", steps, shapes)
    try:
        for t in range(steps + 1):
            try:
                state = next(loop)
            except StopIteration:
                raise ImplementationError(
                    f"the training loop stopped after {t} states; {steps + 1} are needed"
                ) from None
            if not isinstance(state, Mapping):
                raise ImplementationError(
                    f"state {t} of the training loop is {type(state).__name__}, expected a dict with "
                    f"{listed_names(shapes)}"
                )
            missing = [name for name in shapes if name not in state]
            if missing:
                raise ImplementationError(f"state {t} of the training loop has no {missing[0]!r} key")
            extra = sorted(set(state) - {*shapes, *optional})
            if extra:
                raise ImplementationError(
                    f"state {t} of the training loop has unknown keys {extra}; allowed: the parameters' names, "
                    f"{', '.join(optional)}"
                )
            for name, shape in shapes.items():
                check_precision(state[name], f"{name} at t={t}", config.dtype)
                series[name].append(readout_array(state[name], f"{name} at t={t}", shape))
            append_optional(out, state, optional, t)
    finally:
        close = getattr(loop, "close", None)
        if close is not None:
            close()
    return out
