"""The kit's core with numpy alone: run an implementation through the protocols, compare its read-outs.

This module imports only the standard library, numpy and the rest of its package (the config and the
oracle reader, numpy-only too); torch is imported only when the implementation is a ``torch.nn.Module``
or returns tensors. ``rw check`` runs every implementation through it, and ``rw check --emit`` copies the
package as it is next to the frozen fixtures, so that a user's CI compares their implementation against
the oracle files in exactly the same way without the toolkit, SymPy or python-flint installed.

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
    ``"accuracy"``. Arrays may be numpy, torch, JAX or anything ``numpy.asarray`` reads. The kit
    reads T + 1 states and then closes the iterator.

(c) a ``Functional``: the parameters as a mapping of arrays in any framework (numpy, JAX, torch, ...)
    and pure functions ``forward(params, Xt) -> f`` (and optionally ``attention(params, Xt) -> S``,
    ``loss(params, Xt) -> objective``). One step is the user's ``step(params, Xt) -> params``, else
    θ ← θ - η ``grad(params, Xt)`` (e.g. ``jax.grad`` of the user's loss), else θ ← θ - η ∇ of the kit's
    objective by torch autograd (a forward written in torch). ``Xt`` is X̃ as a numpy array in the dtype.
(d) a ``Supervised``: a ``torch.nn.Module`` as in (a) with the user's own objective
    ``loss(f, labels, weights) -> scalar tensor`` and the user's update: a ``torch.optim`` optimizer,
    or ``step(module)`` called after ``backward()`` (default: the kit's θ ← θ - η ∇θ).

Any implementation may keep its own positional embeddings and report them: ``Functional(P=...)``,
``Supervised(P=...)``, a module attribute ``P``, or a loop's ``"P"`` in its first state. The kit then
builds X̃ with that P, checks the paper's assumptions on it (``check_positions``) and compares against
the exact trajectory at its μ.

A read-out the implementation does not provide is reported as not checked, never passed. An
implementation checked in float64 that returns JAX float32 arrays (JAX with x64 off) is refused with
the reason.

Another model of ``rwtoolkit.models`` (``rw check --model key_query``) is run by ``run_model``: the same two
protocols with the model's parameters by their own names (``config.shapes``: V, W_K, W_Q) instead of
V and W; what such an implementation must expose is written in ``rwtoolkit.analyses.check._models``.

The config handed to the factory is a ``CheckConfig`` (``rwtoolkit.runtime._config``): the population,
P, μ, η, ε, the loss, the dtype, the model with its parameters' shapes and start, and the views of X̃.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ._config import NUMPY_LOSSES, drop_frozen, inputs_array, plan_steps, set_rates, torch_inputs
from .oracle_format import OracleFormatError, PerInput, read_header, step_doubles

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
    "P": "P",
    "token_logits": "token logits",
}
#: Accuracies are sums of at most a few thousand float probabilities: exact up to this.
ACCURACY_ATOL = 1e-12

Factory = Callable[[Any], object]


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
    #: The implementation's own positional embeddings (M'×N float64), when it reports them.
    P: np.ndarray | None = None

    def provided(self, quantity: str) -> bool:
        if quantity == "P":
            return self.P is not None
        return self.values.get(quantity) is not None

    def series(self, quantity: str) -> list[np.ndarray]:
        """The read-outs of ``quantity`` at t = 0..T; ValueError when the implementation does not provide it."""
        values = self.values.get(quantity)
        if values is None:
            raise ValueError(f"{quantity!r} is not provided: {self.missing_reason(quantity)}")
        return values

    def missing_reason(self, quantity: str) -> str:
        if quantity == "P":
            return "the implementation uses the config's P (it reports no P of its own)"
        if self.protocol == "module":
            return "the module has no attention(Xt) method" if quantity == "S" else "not provided"
        return f"the training loop yields no {quantity!r}"


def readout_array(value: object, what: str, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` as a float64 array of ``shape``, or ImplementationError naming it."""
    if hasattr(value, "detach"):  # a torch tensor (possibly on a GPU, possibly requiring grad)
        value = value.detach().cpu().double().numpy()
    try:
        out = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ImplementationError(f"{what} is {type(value).__name__}, not an array of numbers") from None
    if out.shape != shape:
        raise ImplementationError(f"{what} has shape {out.shape}, expected {shape}")
    return out


_LOW_PRECISION = ("float16", "bfloat16", "float32")


def check_precision(value: object, what: str, dtype: str) -> None:
    """Refuse a JAX array of lower precision than the check's float64: JAX computes in float32 unless
    x64 is on, so every value would miss the float64 tolerances by rounding alone."""
    found = str(getattr(value, "dtype", ""))
    if dtype == "float64" and "jax" in type(value).__module__ and found in _LOW_PRECISION:
        raise ImplementationError(
            f"{what} is a JAX {found} array but the check runs in float64: JAX computes in float32 unless "
            "x64 is on (jax.config.update('jax_enable_x64', True) before any array is made); or check at "
            "float32 tolerances with --dtype float32"
        )


def is_torch_module(impl: object) -> bool:
    torch = sys.modules.get("torch")  # a torch module exists only if torch has been imported
    return torch is not None and isinstance(impl, torch.nn.Module)


@dataclass
class Functional:
    """Protocol (c): parameters and pure functions in any framework (module docstring).

    ``params``: name -> array (the initial parameters); ``forward(params, Xt) -> f`` (n, K);
    ``attention(params, Xt) -> S`` (n, N), optional; ``loss(params, Xt)`` the user's objective at θ,
    optional (else the kit's Σ_n π_n ℓ(e_{y_n}ᵀ f_n) from f); ``grad(params, Xt) -> {name: gradient}``,
    or ``step(params, Xt) -> params``, optional (else torch autograd of the kit's objective, which needs a
    torch forward); ``P``: the implementation's own positional embeddings, optional. ``Xt`` is X̃ as a
    numpy array (n, K+M, N) in the check's dtype.
    """

    params: Mapping[str, Any]
    forward: Callable[[Mapping[str, Any], Any], Any]
    attention: Callable[[Mapping[str, Any], Any], Any] | None = None
    loss: Callable[[Mapping[str, Any], Any], Any] | None = None
    grad: Callable[[Mapping[str, Any], Any], Mapping[str, Any]] | None = None
    step: Callable[[Mapping[str, Any], Any], Mapping[str, Any]] | None = None
    P: Any = None


@dataclass
class Supervised:
    """Protocol (d): a ``torch.nn.Module`` (as in (a)) with the user's objective and update.

    ``loss(f, labels, weights) -> scalar tensor``: the objective from the module's output f (n, K), the
    labels (n,) and the population probabilities (n,) as tensors; ``optimizer``: a ``torch.optim``
    optimizer over the module's parameters, or ``step(module)``: called after ``backward()``; neither:
    the kit's θ ← θ - η ∇θ. ``P``: the implementation's own positional embeddings, optional.
    """

    module: Any
    loss: Callable[[Any, Any, Any], Any]
    optimizer: Any = None
    step: Callable[[Any], Any] | None = None
    P: Any = None


PROTOCOLS = ("module", "loop", "functional", "supervised")


def _adopt(impl: object) -> object:
    """A ``Functional`` or ``Supervised`` made by another copy of this package (the toolkit's ``rwtoolkit.runtime``
    in a frozen fixture's ``rwcheck_runtime``, or the other way round) as this package's own class."""
    import dataclasses

    for kind in (Functional, Supervised):
        if (
            type(impl).__name__ == kind.__name__
            and dataclasses.is_dataclass(impl)
            and not isinstance(impl, kind)
        ):
            return kind(**{f.name: getattr(impl, f.name) for f in dataclasses.fields(kind)})
    return impl


def build(factory: Factory, config: Any) -> object:
    """``factory(config)``; refuses anything that is none of the protocols (a)-(d)."""
    impl = _adopt(factory(config))
    if is_torch_module(impl) or isinstance(impl, (Iterator, Functional)):
        return impl
    if isinstance(impl, Supervised) and is_torch_module(impl.module):
        return impl
    raise ImplementationError(
        f"the factory returned {type(impl).__name__}: expected a torch.nn.Module with parameters V and W, "
        "an iterator yielding (V, W) per step, an rwtoolkit.analyses.check.Functional or an rwtoolkit.analyses.check.Supervised"
    )


def with_steps(config: Any, steps: int) -> Any:
    """The config with ``steps`` = T set (what the factory is told), if it has the field, and with it the
    schedule's ``lr_factors`` and the stages' ``trained`` for t = 0..T−1 (``plan_steps``)."""
    import dataclasses

    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        fields = {f.name for f in dataclasses.fields(config)}
        if "steps" in fields:
            plan = plan_steps(config, steps) if {"lr_factors", "trained"} <= fields else {}
            return dataclasses.replace(config, steps=steps, **plan)
    return config


#: The paper's assumptions on P that ``check_positions`` tests, by name.
POSITION_ASSUMPTIONS = ("shape", "orthogonality", "equal norms", "query column", "rational mu")


@dataclass(frozen=True)
class PositionCheck:
    """The outcome of ``check_positions``: μ, and for a failed assumption its name, where, and the values."""

    mu: float
    assumption: str | None = None
    text: str = ""
    expected: float = 0.0
    got: float = 0.0
    tolerance: float = 0.0


def check_positions(P: np.ndarray, N: int, dtype: str = "float64") -> PositionCheck:
    """Whether P (M×N) meets the paper's assumptions PᵀP = μI, the query column p_N included; the first
    assumption that fails (``POSITION_ASSUMPTIONS``) is named with where and by how much.

    μ is the mean of ‖p_j‖² over the key columns j < N. Tolerance: 1e3 · u · max(1, μ) on every entry
    of PᵀP − μI (u the unit roundoff of ``dtype``): the Gram matrix of a float P made from sines carries
    rounding of a few u·M·μ, and a shifted or rescaled P is off by far more.

    >>> import numpy as np
    >>> check_positions(2 * np.eye(3), 3).mu, check_positions(2 * np.eye(3), 3).assumption
    (4.0, None)
    >>> check_positions(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]), 3).assumption
    'shape'
    """
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] != N or P.shape[0] < N:
        return PositionCheck(
            0.0, "shape", f"P has shape {P.shape}: expected (M, {N}) with M >= N orthogonal columns"
        )
    G = P.T @ P
    diag = np.diag(G)
    mu = float(np.mean(diag[: N - 1])) if N > 1 else float(G[0, 0])
    unit = 2.0**-53 if dtype == "float64" else 2.0**-24
    tol = 1e3 * unit * max(1.0, abs(mu))
    off = np.abs(G - np.diag(diag))
    if off.max() > tol:
        i, j = (int(v) for v in np.unravel_index(int(np.argmax(off)), off.shape))
        return PositionCheck(
            mu,
            "orthogonality",
            f"p_{i + 1}·p_{j + 1} = {G[i, j]:.6g}, not 0 (the paper assumes PᵀP = μI; tolerance {tol:.2g})",
            0.0,
            float(G[i, j]),
            tol,
        )
    keys = np.abs(diag[: N - 1] - mu)
    if N > 1 and keys.max() > tol:
        j = int(np.argmax(keys))
        return PositionCheck(
            mu,
            "equal norms",
            f"‖p_{j + 1}‖² = {G[j, j]:.17g} but the key columns' mean is μ = {mu:.17g} (the paper assumes "
            "‖p_j‖² = μ for every j)",
            mu,
            float(G[j, j]),
            tol,
        )
    if abs(G[N - 1, N - 1] - mu) > tol:
        return PositionCheck(
            mu,
            "query column",
            f"the query column has ‖p_N‖² = {G[N - 1, N - 1]:.17g}, the key columns μ = {mu:.17g} "
            "(x̃_N = [0; p_N] must be a positional embedding like the others)",
            mu,
            float(G[N - 1, N - 1]),
            tol,
        )
    exact = Fraction(mu).limit_denominator(10**6)
    if abs(float(exact) - mu) > tol:
        return PositionCheck(
            mu,
            "rational mu",
            f"μ = {mu:.17g} is no fraction of denominator ≤ 10⁶ within {tol:.2g}: the exact engine needs a "
            "rational μ",
            float(exact),
            mu,
            tol,
        )
    return PositionCheck(mu)


def _reported_positions(value: object, config: Any) -> np.ndarray:
    """The implementation's P as float64 (M', N), or ImplementationError naming its shape."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().double().numpy()
    try:
        P = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ImplementationError(f"P is {type(value).__name__}, not an array of numbers") from None
    if P.ndim != 2 or P.shape[1] != config.N:
        raise ImplementationError(f"P has shape {P.shape}, expected (M, N) = (M, {config.N})")
    return P


def _resized(
    shapes: Mapping[str, tuple[int, ...]], config: Any, P: np.ndarray | None
) -> dict[str, tuple[int, ...]]:
    """The parameter shapes with the embedding size K + M of the config replaced by K + M' of ``P``."""
    if P is None or P.shape[0] == config.M:
        return dict(shapes)
    old, new = config.K + config.M, config.K + P.shape[0]
    return {name: tuple(new if d == old else d for d in shape) for name, shape in shapes.items()}


def _objective(f: np.ndarray, config: Any) -> float:
    """The kit's objective Σ_n π_n ℓ(e_{y_n}ᵀ f_n) in numpy, from read-out f."""
    z = f[np.arange(len(config.labels)), np.asarray(config.labels)]
    with np.errstate(all="ignore"):
        return float(np.sum(config.weights * NUMPY_LOSSES[config.loss](z, float(config.eps))))


def run(factory: Factory, config: Any, steps: int) -> Readouts:
    """Run the implementation built by ``factory(config)`` for ``steps`` GD steps; its read-outs at t = 0..steps.

    The paper's model is ``run_model`` with the parameters V (K×K) and W ((K+M)×(K+M)); W is kept whole
    (``Readouts.W``) and compared through W x̃_N (``"W_xN"``).
    """
    K, M = config.K, config.M
    generic = run_model(factory, config, steps, {"V": (K, K), "W": (K + M, K + M)})
    W = generic.values.pop("W") or []
    own = generic.P
    query = config.query() if own is None else np.concatenate([np.zeros(K), own[:, -1]])
    values = {"V": generic.values["V"], "W_xN": [w @ query for w in W]}
    values.update({q: generic.values[q] for q in READOUTS})
    return Readouts(generic.protocol, steps, values, W, own)


def _parameter(module: Any, name: str, shape: tuple[int, ...]) -> Any:
    import torch

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


# ------------------------------------------------------------------------------------------------
#: The model-independent read-outs, compared after a model's parameters at each step.
READOUTS = ("S", "f", "loss", "accuracy")


def model_quantities(shapes: Mapping[str, tuple[int, ...]]) -> tuple[str, ...]:
    """What is compared at each step for a model with these parameters: the parameters in their order, then
    ``READOUTS``."""
    return (*shapes, *READOUTS)


def run_model(factory: Factory, config: Any, steps: int, shapes: Mapping[str, tuple[int, ...]]) -> Readouts:
    """``run`` for a model whose parameters are ``shapes`` (name -> shape, ``config.shapes``).

    (a) a ``torch.nn.Module`` with exactly these parameters, ``forward(Xt)`` -> f and optionally
    ``attention(Xt)`` -> S, trained by the kit as in ``run``; (b) an iterator yielding at t = 0, 1, … a
    mapping with every parameter's name and any of ``"S"``, ``"f"``, ``"loss"``, ``"accuracy"`` (or a tuple
    of the parameters in the order of ``shapes``). The read-outs are keyed by the parameters' names.
    A sequence model's config (``config.objective`` set) is run by ``run_sequence`` instead.
    """
    impl = build(factory, with_steps(config, steps))
    if isinstance(impl, Functional):
        return _run_functional(impl, config, steps, dict(shapes))
    if isinstance(impl, Supervised):
        return _run_model_module(impl.module, config, steps, dict(shapes), impl)
    if is_torch_module(impl):
        return _run_model_module(impl, config, steps, dict(shapes))
    return _run_model_loop(impl, config, steps, dict(shapes))  # type: ignore[arg-type]


def listed_names(names: Mapping[str, object] | tuple[str, ...]) -> str:
    """'V and W', 'V, W_K and W_Q'."""
    items = list(names)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _model_start(
    protocol: str, steps: int, names: tuple[str, ...]
) -> tuple[Readouts, dict[str, list[np.ndarray]]]:
    series: dict[str, list[np.ndarray]] = {q: [] for q in names}
    return Readouts(protocol, steps, {q: series[q] for q in names}), series


def _run_model_module(
    module: Any,
    config: Any,
    steps: int,
    shapes: dict[str, tuple[int, ...]],
    supervised: Supervised | None = None,
) -> Readouts:
    import torch

    own = supervised.P if supervised is not None and supervised.P is not None else getattr(module, "P", None)
    P = None if own is None else _reported_positions(own, config)
    shapes = _resized(shapes, config, P)
    params = {name: _parameter(module, name, shape) for name, shape in shapes.items()}
    ids = {id(p) for p in params.values()}
    others = [name for name, p in module.named_parameters() if id(p) not in ids]
    if others:
        raise ImplementationError(
            f"the module has parameters other than {listed_names(shapes)}: {', '.join(others)}"
        )
    K, N = config.K, config.N
    Xt = torch_inputs(config, P)
    n = Xt.shape[0]
    labels = torch.as_tensor(config.labels)
    weights = torch.as_tensor(config.weights, dtype=config.torch_dtype)
    attention = getattr(module, "attention", None)
    protocol = "module" if supervised is None else "supervised"
    out, series = _model_start(protocol, steps, model_quantities(shapes))
    out.P = P
    if not callable(attention):
        out.values["S"] = None
    # the kit's own update: θ ← θ − η ∇θ, or the config's rule (a frozen oracle's) as torch.optim runs it
    kit = (
        None
        if supervised is not None or getattr(config, "optimizer", None) is None
        else config.torch_optimizer(list(params.values()))
    )
    for t in range(steps + 1):
        for p in params.values():
            p.grad = None
        f = module(Xt)
        if not isinstance(f, torch.Tensor):
            raise ImplementationError(
                f"forward(Xt) returned {type(f).__name__}, expected a tensor of shape {(n, K)}"
            )
        f_np = readout_array(f, "forward(Xt)", (n, K))
        if supervised is None:
            loss = (weights * config.loss_fn(f.gather(1, labels[:, None])[:, 0])).sum()
        else:
            loss = supervised.loss(f, labels, weights)
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise ImplementationError(
                    f"loss(f, labels, weights) returned {type(loss).__name__}, expected a scalar tensor"
                )
        for name, p in params.items():
            series[name].append(readout_array(p, name, shapes[name]))
        series["f"].append(f_np)
        series["loss"].append(np.array(float(loss.detach())))
        series["accuracy"].append(np.array(accuracy(f_np, config)))
        if callable(attention):
            with torch.no_grad():
                series["S"].append(readout_array(attention(Xt), "attention(Xt)", (n, N)))
        if t == steps:
            break
        take_step(module, list(params.values()), loss, float(config.eta), supervised, kit)
    return out


def take_step(
    module: Any,
    params: list[Any],
    loss: Any,
    eta: float,
    supervised: Supervised | None,
    optimizer: Any = None,
    factor: float | None = None,
    frozen: Mapping[str, Any] | None = None,
) -> None:
    """One update of a module the kit runs, after its loss: the user's (``Supervised``: its optimizer, or its
    ``step(module)`` after ``backward()``), else ``optimizer`` (a ``torch.optim`` optimizer over ``params``), else
    the kit's θ ← θ − η ∇θ. A schedule and stages (``CheckConfig.lr_factors``, ``trained``): ``factor`` (None:
    no schedule) times the rate of this step (an optimizer's groups through ``set_rates``, as ``LambdaLR``), and
    the parameters of
    ``frozen`` (name → parameter) left without a gradient, so that they keep their values and their rule's state
    (``torch.optim`` skips them; a ``step(module)`` should skip a parameter whose ``grad`` is None)."""
    import torch

    user = supervised.optimizer if supervised is not None else optimizer
    if user is not None:
        user.zero_grad()
    loss.backward()
    if frozen:
        drop_frozen(frozen, ())
    if user is not None:
        if factor is not None:
            set_rates(user, factor)
        user.step()
    elif supervised is not None and supervised.step is not None:
        supervised.step(module)
    else:
        rate = eta if factor is None else eta * factor
        with torch.no_grad():
            for p in params:
                if p.grad is not None:
                    p -= rate * p.grad


def _run_functional(
    impl: Functional, config: Any, steps: int, shapes: dict[str, tuple[int, ...]]
) -> Readouts:
    """Protocol (c): read the parameters, evaluate the user's functions, take the user's (or the kit's) step."""
    P = None if impl.P is None else _reported_positions(impl.P, config)
    shapes = _resized(shapes, config, P)
    K, n, N = config.K, len(config.labels), config.N
    Xt = inputs_array(config, P)
    if not isinstance(impl.params, Mapping):
        raise ImplementationError(
            f"Functional.params is {type(impl.params).__name__}, expected a mapping of arrays"
        )
    missing = [name for name in shapes if name not in impl.params]
    if missing:
        raise ImplementationError(
            f"Functional.params has no {missing[0]!r} (expected {listed_names(shapes)})"
        )
    extra = sorted(set(impl.params) - set(shapes))
    if extra:
        raise ImplementationError(
            f"Functional.params has parameters other than {listed_names(shapes)}: {extra}"
        )
    out, series = _model_start("functional", steps, model_quantities(shapes))
    out.P = P
    if impl.attention is None:
        out.values["S"] = None
    params: Mapping[str, Any] = impl.params
    for t in range(steps + 1):
        for name in shapes:
            check_precision(params[name], f"{name} at t={t}", config.dtype)
            series[name].append(readout_array(params[name], f"{name} at t={t}", shapes[name]))
        f = impl.forward(params, Xt)
        check_precision(f, f"forward(params, Xt) at t={t}", config.dtype)
        f_np = readout_array(f, f"forward(params, Xt) at t={t}", (n, K))
        series["f"].append(f_np)
        if impl.loss is not None:
            value = impl.loss(params, Xt)
            check_precision(value, f"loss(params, Xt) at t={t}", config.dtype)
            series["loss"].append(readout_array(value, f"loss(params, Xt) at t={t}", ()))
        else:
            series["loss"].append(np.array(_objective(f_np, config)))
        series["accuracy"].append(np.array(accuracy(f_np, config)))
        if impl.attention is not None:
            S = impl.attention(params, Xt)
            check_precision(S, f"attention(params, Xt) at t={t}", config.dtype)
            series["S"].append(readout_array(S, f"attention(params, Xt) at t={t}", (n, N)))
        if t == steps:
            break
        params = _functional_step(impl, params, Xt, config, shapes, t)
    return out


def _functional_step(
    impl: Functional, params: Mapping[str, Any], Xt: np.ndarray, config: Any, shapes: Mapping, t: int
) -> Mapping[str, Any]:
    eta = float(config.eta)
    if impl.step is not None:
        new = impl.step(params, Xt)
        if not isinstance(new, Mapping):
            raise ImplementationError(
                f"step(params, Xt) at t={t} returned {type(new).__name__}, expected a mapping"
            )
        return new
    if impl.grad is not None:
        grads = impl.grad(params, Xt)
        if not isinstance(grads, Mapping) or any(name not in grads for name in shapes):
            raise ImplementationError(
                f"grad(params, Xt) at t={t} must return a mapping with {listed_names(shapes)}, got {type(grads).__name__}"
            )
        return {name: params[name] - eta * grads[name] for name in shapes}
    import torch

    leaves = {name: torch.as_tensor(np.asarray(params[name])).requires_grad_(True) for name in shapes}
    f = impl.forward(leaves, torch.as_tensor(Xt))
    if not isinstance(f, torch.Tensor) or not f.requires_grad:
        raise ImplementationError(
            "Functional without grad or step: the kit differentiates a torch forward only (forward(params, Xt) "
            "returned no torch tensor depending on params); give grad= (e.g. jax.grad of your loss) or step="
        )
    labels = torch.as_tensor(config.labels)
    weights = torch.as_tensor(config.weights, dtype=f.dtype)
    loss = (weights * config.loss_fn(f.gather(1, labels[:, None])[:, 0])).sum()
    grads = torch.autograd.grad(loss, list(leaves.values()), allow_unused=True)
    return {
        name: (leaf - eta * (g if g is not None else 0)).detach()
        for (name, leaf), g in zip(leaves.items(), grads, strict=True)
    }


def _run_model_loop(
    loop: Iterator[object], config: Any, steps: int, shapes: dict[str, tuple[int, ...]]
) -> Readouts:
    K, n, N = config.K, len(config.labels), config.N
    optional = {"S": (n, N), "f": (n, K), "loss": (), "accuracy": ()}
    names = tuple(shapes)
    out, series = _model_start("loop", steps, model_quantities(shapes))
    try:
        for t in range(steps + 1):
            try:
                state = next(loop)
            except StopIteration:
                raise ImplementationError(
                    f"the training loop stopped after {t} states; {steps + 1} are needed"
                ) from None
            if isinstance(state, tuple) and len(state) == len(names):
                state = dict(zip(names, state))
            if not isinstance(state, Mapping):
                raise ImplementationError(
                    f"state {t} of the training loop is {type(state).__name__}, expected ({', '.join(names)}) "
                    "or a dict"
                )
            if t == 0 and "P" in state:  # the loop's own positional embeddings
                out.P = _reported_positions(state["P"], config)
                shapes = _resized(shapes, config, out.P)
            missing = [name for name in names if name not in state]
            if missing:
                raise ImplementationError(f"state {t} of the training loop has no {missing[0]!r} key")
            extra = sorted(set(state) - {*names, *optional, "P"})
            if extra:
                raise ImplementationError(
                    f"state {t} of the training loop has unknown keys {extra}; "
                    f"allowed: {', '.join(names)}, {', '.join(optional)}, P"
                )
            for name in names:
                check_precision(state[name], f"{name} at t={t}", config.dtype)
                series[name].append(readout_array(state[name], f"{name} at t={t}", shapes[name]))
            append_optional(out, state, optional, t)
    finally:
        close = getattr(loop, "close", None)
        if close is not None:
            close()
    return out


def append_optional(out: Readouts, state: Mapping, shapes: Mapping[str, tuple[int, ...]], t: int) -> None:
    """State t's optional read-outs (S, f, loss, token_logits, ...): given at every step from state 0 on, or at
    none."""
    for key, shape in shapes.items():
        values = out.values[key]
        if values is None:
            if key in state:
                raise ImplementationError(f"state {t} of the training loop has {key!r} but state 0 had none")
            continue
        if key not in state:
            if t > 0:
                raise ImplementationError(
                    f"state {t} of the training loop has no {key!r} but state 0 had one"
                )
            out.values[key] = None
            continue
        values.append(readout_array(state[key], f"{key} at t={t}", shape))
        if t > 0 and len(values) != t + 1:
            raise ImplementationError(f"state {t} of the training loop has {key!r} but state 0 had none")


def predict(f: np.ndarray, rtol: float) -> np.ndarray:
    """ŷ: the smallest index within rtol·max_k|f_k| of max_k f_k per row of f (n, K); K for a NaN row.

    The tie rule of ``rwtoolkit.engines.numeric.predict``, on numpy arrays (tested equal).

    >>> predict(np.array([[1.0, 1.0 + 1e-12, 0.0], [0.0, 2.0, 3.0]]), 1e-9).tolist()
    [0, 2]
    """
    K = f.shape[1]
    with np.errstate(invalid="ignore"):
        top = f.max(axis=1, keepdims=True)
        scale = np.maximum(np.abs(top), np.abs(f.min(axis=1, keepdims=True)))
        tied = f >= top - rtol * scale
    return np.where(tied.any(axis=1), np.argmax(tied, axis=1), K)


def accuracy(f: np.ndarray, config: Any) -> float:
    """P(ŷ = y) over the population, ŷ the smallest index within the dtype's tie tolerance of max f."""
    pred = predict(f, config.tie_rtol)
    return float(np.sum(config.weights[pred == config.labels]))


def first_non_finite(readouts: Readouts, quantities: tuple[str, ...], t: int) -> str | None:
    """The first of ``quantities`` with a NaN or infinite entry at step t, or None."""
    for q in quantities:
        values = readouts.values.get(q)
        if values is not None and not np.all(np.isfinite(values[t])):
            return q
    return None


def finite_or_text(value: float) -> float | str:
    """A JSON-safe number: finite floats as they are, NaN/inf as "nan", "inf", "-inf"."""
    return value if math.isfinite(value) else str(value)


def scaled_error(got: np.ndarray, expected: np.ndarray) -> tuple[float, tuple[int, ...]]:
    """max |got - expected| / max(1, max |expected|) and the index of the worst entry (NaN counts as worst)."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN: counted as the worst error below
        diff = np.abs(got - expected)
    diff = np.where(got == expected, 0.0, np.where(np.isnan(diff), np.inf, diff))  # equal infinities agree
    index = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
    scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
    return float(diff[index]) / scale, tuple(int(i) for i in index)


@dataclass(frozen=True)
class Difference:
    """The first step and quantity where read-outs leave the expected values, with both values."""

    step: int
    quantity: str
    index: tuple[int, ...]
    expected: float
    got: float
    error: float
    limit: float
    #: A failed assumption in words (``check_positions``); replaces the value comparison in ``describe``.
    text: str = ""

    def describe(self) -> str:
        """One line: the quantity, its entry, the step, both values and the error against the limit.

        >>> Difference(2, "S", (0, 1), 0.25, float("nan"), float("inf"), 1e-13).describe()
        'S[0, 1] at t=2: expected 0.25, got NaN (the implementation gave NaN)'
        """
        if self.text:
            return f"{LABELS.get(self.quantity, self.quantity)} at t={self.step}: {self.text}"
        where = f"[{', '.join(map(str, self.index))}]" if self.index else ""
        head = f"{LABELS.get(self.quantity, self.quantity)}{where} at t={self.step}: expected {self.expected:.17g}, "
        if not math.isfinite(self.got):
            word = "NaN" if math.isnan(self.got) else ("inf" if self.got > 0 else "-inf")
            return head + f"got {word} (the implementation gave {word})"
        return head + f"got {self.got:.17g} (scaled error {self.error:.3g} > rtol {self.limit:.3g})"


def first_difference(
    readouts: Readouts,
    expected: Sequence[Mapping[str, np.ndarray]],
    rtol: float,
    skip_accuracy: frozenset[int] = frozenset(),
    quantities: tuple[str, ...] = QUANTITIES,
) -> Difference | None:
    """The first (step, quantity), in the order t = 0, 1, … and ``quantities``, outside the tolerance.

    Every quantity but the accuracy is compared by ``scaled_error`` against ``rtol``; the accuracy is
    compared up to ``ACCURACY_ATOL`` except at the steps of ``skip_accuracy`` (exact near-ties in f,
    where the float tie rule may differ from the exact one). Quantities the implementation does not
    provide are skipped (the caller reports them as not checked).
    """
    for t, want in enumerate(expected):
        for q in quantities:
            values = readouts.values.get(q)
            if values is None:
                continue
            got = values[t]
            if q == "accuracy":
                if t in skip_accuracy:
                    continue
                error, index = abs(float(got) - float(want[q])), ()
                error = float("inf") if np.isnan(error) else error
                limit = ACCURACY_ATOL
            else:
                error, index = scaled_error(got, want[q])
                limit = rtol
            if not error <= limit:
                return Difference(t, q, index, float(want[q][index]), float(got[index]), error, limit)
    return None


def readouts_from_oracle(
    steps: list[dict[str, np.ndarray]], per_input: PerInput, P: np.ndarray
) -> list[dict[str, np.ndarray]]:
    """The kit's expected read-outs per step from an oracle's doubles: V, W x̃_N = [w_tok; P c], S, f,
    loss, accuracy (the layout ``first_difference`` compares)."""
    out = []
    for t, step in enumerate(steps):
        out.append(
            {
                "V": step["V"],
                "W_xN": np.concatenate([step["w_tok"], P @ step["c"]]),
                "S": per_input.column(f"S/{t}"),
                "f": per_input.column(f"f/{t}"),
                "loss": step["loss"],
                "accuracy": step["accuracy"],
            }
        )
    return out


def expected_readouts(header_path: str | Path, P: np.ndarray) -> list[dict[str, np.ndarray]]:
    """``readouts_from_oracle`` of the oracle file at ``header_path`` (with per-input values);
    ``OracleFormatError`` naming the file when it is damaged or lacks a value the comparison needs."""
    header = read_header(header_path)
    columns = PerInput(header_path, header)
    try:
        return readouts_from_oracle(step_doubles(header, header_path), columns, P)
    except KeyError as err:
        raise OracleFormatError(f"{header_path}: a step lacks the value {err} the comparison needs") from None
    finally:
        columns.close()


def _import_target(target: str, what: str) -> tuple[Any, str, str]:
    """(module, its name as written, attribute name) of ``module:name`` or ``path/to/file.py:name``, the module
    imported; one-line ValueError starting with ``target`` otherwise (``what`` names the attribute in it)."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{target!r} is not MODULE:{what} or path/to/file.py:{what}")
    try:
        if module_name.endswith(".py") or "/" in module_name:
            path = Path(module_name)
            if not path.is_file():
                raise ValueError(f"{target!r}: the file {path} does not exist")
            folder = str(path.resolve().parent)  # importable from the file, as under `python file.py`
            if folder not in sys.path:
                sys.path.insert(0, folder)
            name = f"rwcheck_user_{path.stem}"
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ValueError(f"{target!r}: {path} cannot be imported as a Python module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except ValueError:
        raise
    except Exception as err:  # the user's module failed to import: one line (the error's first)
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise ValueError(
            f"{target!r}: importing {module_name} raised {type(err).__name__}: {first}"
        ) from None
    return module, module_name, attr


def load_factory(target: str) -> Factory:
    """The factory named by ``module:name`` or ``path/to/file.py:name``; one-line ValueError otherwise."""
    module, module_name, attr = _import_target(target, "FACTORY")
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ValueError(f"{target!r}: {module_name} has no callable {attr}")
    return factory


def load_attribute(target: str) -> Any:
    """The object named by ``module:name`` or ``path/to/file.py:name`` (any object: ``--model`` reads a model
    class, instance or factory this way, ``rwtoolkit.models.get_model``); one-line ValueError otherwise.

    >>> load_attribute("fractions:Fraction").__name__
    'Fraction'
    """
    module, module_name, attr = _import_target(target, "ATTR")
    if not hasattr(module, attr):
        raise ValueError(f"{target!r}: {module_name} has no attribute {attr}")
    return getattr(module, attr)
