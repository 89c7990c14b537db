"""The model protocol: what an implementation exposes, and running it on one ``CheckConfig``.

An implementation is a *factory*: a callable ``factory(config) -> implementation``, where the
implementation is one of

(a) a ``torch.nn.Module`` with parameters ``V`` (K×K) and ``W`` ((K+M)×(K+M)), and no others, whose
    ``forward(Xt)`` maps X̃ = [X; P] of every input, (n, K+M, N), to f, (n, K). The kit trains it:
    full-batch GD from the module's own initial V, W on Σ_n π_n ℓ(e_{y_n}ᵀ f_n) with the exact
    population probabilities π_n, one step θ ← θ - η ∇θ. An optional method ``attention(Xt)``
    returning S, (n, N), adds the attention read-out.
(b) an iterator (typically a generator running the user's own training loop) that yields the state
    at t = 0, 1, 2, …: a pair ``(V, W)``, or a mapping with keys ``"V"``, ``"W"`` and any of the
    optional read-outs ``"S"`` (n, N), ``"f"`` (n, K), ``"loss"`` (the objective at θ(t)),
    ``"accuracy"``. The kit reads T + 1 states and then closes the iterator.

A read-out the implementation does not provide is reported as not checked, never passed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from rwcheck._config import CheckConfig
from rwnumeric import DEFAULT_TIE_RTOL, predict

#: Read-outs in the order they are compared at each step.
QUANTITIES = ("V", "W_xN", "S", "f", "loss", "accuracy")
#: How each read-out is printed.
LABELS = {
    "V": "V",
    "W_xN": "W x̃_N",
    "S": "S",
    "f": "f",
    "loss": "loss",
    "accuracy": "accuracy",
    "W_first_columns": "W[:, :K]",
    "V1": "V(1)",
    "V_ones": "V (∝ 1_{K×K})",
    "S_tokens": "S_1..S_{N-1}",
    "w_tok": "w_tok",
    "c": "c (w_pos = Σ_j c_j p_j)",
}

Factory = Callable[[CheckConfig], object]


class ImplementationError(ValueError):
    """The implementation does not follow the protocol (type, shapes, non-finite outputs): one line."""


@dataclass
class Readouts:
    """What an implementation produced at t = 0..T: per quantity a list of float64 arrays, or None.

    ``W`` is kept whole (for W11 = W21 = 0); ``W_xN`` is W(t) x̃_N with the config's x̃_N = [0; p_N].
    """

    protocol: str
    steps: int
    values: dict[str, list[np.ndarray] | None] = field(default_factory=dict)
    W: list[np.ndarray] | None = None

    def provided(self, quantity: str) -> bool:
        return self.values.get(quantity) is not None

    def series(self, quantity: str) -> list[np.ndarray]:
        """The read-outs of ``quantity`` at t = 0..T; ValueError when the implementation does not provide it."""
        values = self.values.get(quantity)
        if values is None:
            raise ValueError(f"{quantity!r} is not provided: {self.missing_reason(quantity)}")
        return values

    def missing_reason(self, quantity: str) -> str:
        if self.protocol == "module":
            return "the module has no attention(Xt) method" if quantity == "S" else "not provided"
        return f"the training loop yields no {quantity!r}"


def _array(value: object, what: str, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` as a float64 array of ``shape``, or ImplementationError naming it."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().double().numpy()
    try:
        out = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ImplementationError(f"{what} is {type(value).__name__}, not an array of numbers") from None
    if out.shape != shape:
        raise ImplementationError(f"{what} has shape {out.shape}, expected {shape}")
    return out


def build(factory: Factory, config: CheckConfig) -> torch.nn.Module | Iterator[object]:
    """``factory(config)``; refuses anything that is neither protocol (a) nor (b)."""
    impl = factory(config)
    if isinstance(impl, (torch.nn.Module, Iterator)):
        return impl
    raise ImplementationError(
        f"the factory returned {type(impl).__name__}: expected a torch.nn.Module with parameters V and W, "
        "or an iterator yielding (V, W) per step"
    )


def run(factory: Factory, config: CheckConfig, steps: int) -> Readouts:
    """Run the implementation built by ``factory(config)`` for ``steps`` GD steps; its read-outs at t = 0..steps.

    Examples
    --------
    >>> from rwtasks import CircleWalk
    >>> def loop(config):  # protocol (b): a training loop that never moves
    ...     while True:
    ...         yield torch.zeros(config.K, config.K), torch.zeros(config.K + config.M, config.K + config.M)
    >>> cfg = CheckConfig.build(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10")
    >>> out = run(loop, cfg, 2)
    >>> len(out.values["V"]), out.provided("S")
    (3, False)
    """
    impl = build(factory, config)
    if isinstance(impl, torch.nn.Module):
        return _run_module(impl, config, steps)
    return _run_loop(impl, config, steps)


def _parameter(module: torch.nn.Module, name: str, shape: tuple[int, int]) -> torch.Tensor:
    value = getattr(module, name, None)
    if not isinstance(value, torch.nn.Parameter):
        raise ImplementationError(
            f"the module has no parameter {name} (a torch.nn.Parameter of shape {shape})"
        )
    if tuple(value.shape) != shape:
        raise ImplementationError(
            f"the module's parameter {name} has shape {tuple(value.shape)}, expected {shape}"
        )
    return value


def _start(protocol: str, steps: int) -> tuple[Readouts, dict[str, list[np.ndarray]], list[np.ndarray]]:
    """Empty read-outs of every quantity, plus the same lists (per quantity, and of W) for the caller to fill.

    A quantity the implementation turns out not to provide is set to None in ``Readouts.values`` only.
    """
    series: dict[str, list[np.ndarray]] = {q: [] for q in QUANTITIES}
    W_list: list[np.ndarray] = []
    return Readouts(protocol, steps, {q: series[q] for q in QUANTITIES}, W_list), series, W_list


def _run_module(module: torch.nn.Module, config: CheckConfig, steps: int) -> Readouts:
    K, M, N = config.K, config.M, config.N
    V = _parameter(module, "V", (K, K))
    W = _parameter(module, "W", (K + M, K + M))
    others = [name for name, p in module.named_parameters() if p is not V and p is not W]
    if others:
        raise ImplementationError(f"the module has parameters other than V and W: {', '.join(others)}")
    dt = config.torch_dtype
    Xt = config.inputs()  # (n, K+M, N)
    n = Xt.shape[0]
    labels = torch.as_tensor(config.labels)
    weights = torch.as_tensor(config.weights, dtype=dt)
    query = config.query()
    attention = getattr(module, "attention", None)
    out, series, W_list = _start("module", steps)
    if not callable(attention):
        out.values["S"] = None
    for t in range(steps + 1):
        for p in (V, W):
            p.grad = None
        f = module(Xt)
        if not isinstance(f, torch.Tensor):
            raise ImplementationError(
                f"forward(Xt) returned {type(f).__name__}, expected a tensor of shape {(n, K)}"
            )
        f_np = _array(f, "forward(Xt)", (n, K))
        loss = (weights * config.loss_fn(f.gather(1, labels[:, None])[:, 0])).sum()
        W_np = _array(W, "W", (K + M, K + M))
        series["V"].append(_array(V, "V", (K, K)))
        W_list.append(W_np)
        series["W_xN"].append(W_np @ query)
        series["f"].append(f_np)
        series["loss"].append(np.array(float(loss.detach())))
        series["accuracy"].append(np.array(accuracy(f_np, config)))
        if callable(attention):
            with torch.no_grad():
                series["S"].append(_array(attention(Xt), "attention(Xt)", (n, N)))
        if t == steps:
            break
        loss.backward()
        with torch.no_grad():
            for p in (V, W):
                if p.grad is not None:
                    p -= float(config.eta) * p.grad
    return out


def _run_loop(loop: Iterator[object], config: CheckConfig, steps: int) -> Readouts:
    K, M = config.K, config.M
    n, N = len(config.labels), config.N
    query = config.query()
    out, series, W_list = _start("loop", steps)
    shapes = {"S": (n, N), "f": (n, K), "loss": (), "accuracy": ()}
    try:
        for t in range(steps + 1):
            try:
                state = next(loop)
            except StopIteration:
                raise ImplementationError(
                    f"the training loop stopped after {t} states; {steps + 1} are needed"
                ) from None
            if isinstance(state, Mapping):
                if "V" not in state or "W" not in state:
                    raise ImplementationError(f"state {t} of the training loop has no 'V' or no 'W' key")
                extra = sorted(set(state) - {"V", "W", *shapes})
                if extra:
                    raise ImplementationError(
                        f"state {t} of the training loop has unknown keys {extra}; "
                        f"allowed: V, W, {', '.join(shapes)}"
                    )
            elif isinstance(state, tuple) and len(state) == 2:
                state = {"V": state[0], "W": state[1]}
            else:
                raise ImplementationError(
                    f"state {t} of the training loop is {type(state).__name__}, expected (V, W) or a dict"
                )
            W_np = _array(state["W"], f"W at t={t}", (K + M, K + M))
            series["V"].append(_array(state["V"], f"V at t={t}", (K, K)))
            W_list.append(W_np)
            series["W_xN"].append(W_np @ query)
            for key, shape in shapes.items():
                values = out.values[key]
                if values is None:
                    continue
                if key not in state:
                    if t > 0:
                        raise ImplementationError(
                            f"state {t} of the training loop has no {key!r} but state 0 had one"
                        )
                    out.values[key] = None
                    continue
                values.append(_array(state[key], f"{key} at t={t}", shape))
                if t > 0 and len(values) != t + 1:
                    raise ImplementationError(
                        f"state {t} of the training loop has {key!r} but state 0 had none"
                    )
    finally:
        close = getattr(loop, "close", None)
        if close is not None:
            close()
    return out


def accuracy(f: np.ndarray, config: CheckConfig) -> float:
    """P(ŷ = y) over the population, ŷ the smallest index within the dtype's tie tolerance of max f."""
    pred = predict(torch.as_tensor(f), DEFAULT_TIE_RTOL[config.dtype]).numpy()
    return float(np.sum(config.weights[pred == config.labels]))


def first_non_finite(readouts: Readouts, quantities: tuple[str, ...], t: int) -> str | None:
    """The first of ``quantities`` with a NaN or infinite entry at step t, or None."""
    for q in quantities:
        values = readouts.values.get(q)
        if values is not None and not np.all(np.isfinite(values[t])):
            return q
    return None


def probe(factory: Factory, dtype: str = "float64") -> Readouts:
    """Run the implementation on one small config for one step before any work starts.

    Returns its read-outs (which say the protocol and what it provides); raises ``ImplementationError`` (one line) when the
    factory fails, returns something else, has wrong shapes, or gives NaN/inf at t = 0.
    """
    from rwtasks import CircleWalk

    config = CheckConfig.build(
        CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10", embedding="onehot", M=3, dtype=dtype
    )
    try:
        readouts = run(factory, config, 1)
    except ImplementationError:
        raise
    except Exception as err:  # the user's code failed: one line naming the exception
        message = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise ImplementationError(
            f"the implementation raised {type(err).__name__}: {message} (on {config.describe()})"
        ) from None
    bad = first_non_finite(readouts, ("V", "W_xN", "S", "f"), 0)
    if bad is not None:
        raise ImplementationError(
            f"the implementation gives non-finite {LABELS[bad]} at t=0 (NaN or inf) on {config.describe()}"
        )
    return readouts


def finite_or_text(value: float) -> float | str:
    """A JSON-safe number: finite floats as they are, NaN/inf as "nan", "inf", "-inf"."""
    return value if math.isfinite(value) else str(value)
