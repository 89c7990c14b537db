"""The kit's core with numpy alone: run an implementation through the protocols, compare its read-outs.

This module imports only the standard library, numpy and the oracle reader
(``rwsymbolic.oracle``'s ``_columns``, itself numpy-only); torch is imported only when the implementation
is a ``torch.nn.Module``. ``rw check`` runs every implementation through it, and ``rw check --emit``
copies it (with the oracle reader) next to the frozen fixtures, so that a user's CI compares their
implementation against the oracle files in exactly the same way without the toolkit, SymPy or
python-flint installed.

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

A read-out the implementation does not provide is reported as not checked, never passed.

Another model of ``rwmodels`` (``rw check --model key_query``) is run by ``run_model``: the same two
protocols with the model's parameters by their own names (``config.shapes``: V, W_K, W_Q) instead of
V and W; what such an implementation must expose is written in ``rwcheck._models``.

The config handed to the factory has ``K``, ``M``, ``N``, ``P`` (M×N float64), ``tokens`` (n, N-1),
``labels`` (n,), ``weights`` (n,), ``mu``, ``eta``, ``eps`` (``fractions.Fraction``), ``loss``,
``dtype`` and ``torch_dtype``, ``inputs()`` (X̃ as a torch tensor), ``query()`` (x̃_N),
``loss_fn(z)`` (ℓ on a torch tensor) and ``tie_rtol`` (the accuracy's tie tolerance).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from rwsymbolic.oracle import PerInput, read_header, step_doubles

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
    if hasattr(value, "detach"):  # a torch tensor (possibly on a GPU, possibly requiring grad)
        value = value.detach().cpu().double().numpy()
    try:
        out = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ImplementationError(f"{what} is {type(value).__name__}, not an array of numbers") from None
    if out.shape != shape:
        raise ImplementationError(f"{what} has shape {out.shape}, expected {shape}")
    return out


def _is_module(impl: object) -> bool:
    torch = sys.modules.get("torch")  # a torch module exists only if torch has been imported
    return torch is not None and isinstance(impl, torch.nn.Module)


def build(factory: Factory, config: Any) -> object:
    """``factory(config)``; refuses anything that is neither protocol (a) nor (b)."""
    impl = factory(config)
    if _is_module(impl) or isinstance(impl, Iterator):
        return impl
    raise ImplementationError(
        f"the factory returned {type(impl).__name__}: expected a torch.nn.Module with parameters V and W, "
        "or an iterator yielding (V, W) per step"
    )


def run(factory: Factory, config: Any, steps: int) -> Readouts:
    """Run the implementation built by ``factory(config)`` for ``steps`` GD steps; its read-outs at t = 0..steps.

    The paper's model is ``run_model`` with the parameters V (K×K) and W ((K+M)×(K+M)); W is kept whole
    (``Readouts.W``) and compared through W x̃_N (``"W_xN"``).
    """
    K, M = config.K, config.M
    generic = run_model(factory, config, steps, {"V": (K, K), "W": (K + M, K + M)})
    W = generic.values.pop("W") or []
    query = config.query()
    values = {"V": generic.values["V"], "W_xN": [w @ query for w in W]}
    values.update({q: generic.values[q] for q in READOUTS})
    return Readouts(generic.protocol, steps, values, W)


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
    """
    impl = build(factory, config)
    if _is_module(impl):
        return _run_model_module(impl, config, steps, dict(shapes))
    return _run_model_loop(impl, config, steps, dict(shapes))  # type: ignore[arg-type]


def _listed(names: Mapping[str, object] | tuple[str, ...]) -> str:
    """'V and W', 'V, W_K and W_Q'."""
    items = list(names)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _model_start(
    protocol: str, steps: int, names: tuple[str, ...]
) -> tuple[Readouts, dict[str, list[np.ndarray]]]:
    series: dict[str, list[np.ndarray]] = {q: [] for q in names}
    return Readouts(protocol, steps, {q: series[q] for q in names}), series


def _run_model_module(module: Any, config: Any, steps: int, shapes: dict[str, tuple[int, ...]]) -> Readouts:
    import torch

    params = {name: _parameter(module, name, shape) for name, shape in shapes.items()}
    ids = {id(p) for p in params.values()}
    others = [name for name, p in module.named_parameters() if id(p) not in ids]
    if others:
        raise ImplementationError(
            f"the module has parameters other than {_listed(shapes)}: {', '.join(others)}"
        )
    K, N = config.K, config.N
    Xt = config.inputs()
    n = Xt.shape[0]
    labels = torch.as_tensor(config.labels)
    weights = torch.as_tensor(config.weights, dtype=config.torch_dtype)
    attention = getattr(module, "attention", None)
    out, series = _model_start("module", steps, model_quantities(shapes))
    if not callable(attention):
        out.values["S"] = None
    for t in range(steps + 1):
        for p in params.values():
            p.grad = None
        f = module(Xt)
        if not isinstance(f, torch.Tensor):
            raise ImplementationError(
                f"forward(Xt) returned {type(f).__name__}, expected a tensor of shape {(n, K)}"
            )
        f_np = _array(f, "forward(Xt)", (n, K))
        loss = (weights * config.loss_fn(f.gather(1, labels[:, None])[:, 0])).sum()
        for name, p in params.items():
            series[name].append(_array(p, name, shapes[name]))
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
            for p in params.values():
                if p.grad is not None:
                    p -= float(config.eta) * p.grad
    return out


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
            missing = [name for name in names if name not in state]
            if missing:
                raise ImplementationError(f"state {t} of the training loop has no {missing[0]!r} key")
            extra = sorted(set(state) - {*names, *optional})
            if extra:
                raise ImplementationError(
                    f"state {t} of the training loop has unknown keys {extra}; "
                    f"allowed: {', '.join(names)}, {', '.join(optional)}"
                )
            for name in names:
                series[name].append(_array(state[name], f"{name} at t={t}", shapes[name]))
            _append_optional(out, state, optional, t)
    finally:
        close = getattr(loop, "close", None)
        if close is not None:
            close()
    return out


def _append_optional(out: Readouts, state: Mapping, shapes: Mapping[str, tuple[int, ...]], t: int) -> None:
    """State t's optional read-outs (S, f, loss, ...): given at every step from state 0 on, or at none."""
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
            raise ImplementationError(f"state {t} of the training loop has {key!r} but state 0 had none")


def predict(f: np.ndarray, rtol: float) -> np.ndarray:
    """ŷ: the smallest index within rtol·max_k|f_k| of max_k f_k per row of f (n, K); K for a NaN row.

    The tie rule of ``rwnumeric.predict``, on numpy arrays (tested equal).

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

    def describe(self) -> str:
        """One line: the quantity, its entry, the step, both values and the error against the limit.

        >>> Difference(2, "S", (0, 1), 0.25, float("nan"), float("inf"), 1e-13).describe()
        'S[0, 1] at t=2: expected 0.25, got NaN (the implementation gave NaN)'
        """
        where = f"[{', '.join(map(str, self.index))}]" if self.index else ""
        head = f"{LABELS.get(self.quantity, self.quantity)}{where} at t={self.step}: expected {self.expected:.17g}, "
        if not math.isfinite(self.got):
            word = "NaN" if math.isnan(self.got) else ("inf" if self.got > 0 else "-inf")
            return head + f"got {word} (the implementation gave {word})"
        return head + f"got {self.got:.17g} (scaled error {self.error:.3g} > rtol {self.limit:.3g})"


def first_difference(
    readouts: Readouts,
    expected: list[dict[str, np.ndarray]],
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
    """``readouts_from_oracle`` of the oracle file at ``header_path`` (with per-input values)."""
    header = read_header(header_path)
    columns = PerInput(header_path, header)
    try:
        return readouts_from_oracle(step_doubles(header, header_path), columns, P)
    finally:
        columns.close()


def load_factory(target: str) -> Factory:
    """The factory named by ``module:name`` or ``path/to/file.py:name``; one-line ValueError otherwise."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{target!r} is not MODULE:FACTORY or path/to/file.py:FACTORY")
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
    except Exception as err:  # the user's module failed to import: one line
        raise ValueError(f"{target!r}: importing {module_name} raised {type(err).__name__}: {err}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ValueError(f"{target!r}: {module_name} has no callable {attr}")
    return factory


# ------------------------------------------------------------------------------------------------
# frozen fixtures (rw check --emit): a configuration read back from its manifest entry
# ------------------------------------------------------------------------------------------------
def _torch_losses() -> dict[str, Callable]:
    """ℓ on torch tensors by name (``rwnumeric.LOSS_FUNCTIONS``' formulas; tested equal)."""
    import torch

    return {
        "log": lambda z, eps: torch.log(z + eps).neg_(),
        "squared": lambda z, eps: (1 - z) ** 2,
        "exp": lambda z, eps: torch.exp(-z),
    }


@dataclass(frozen=True)
class FixtureConfig:
    """One configuration of a frozen fixture, with the attributes ``rw check`` gives a factory."""

    K: int
    N: int
    P: np.ndarray = field(repr=False)
    tokens: np.ndarray = field(repr=False)
    labels: np.ndarray = field(repr=False)
    weights: np.ndarray = field(repr=False)
    mu: Fraction
    eta: Fraction
    eps: Fraction
    loss: str
    dtype: str
    tie_rtol: float
    task: dict = field(default_factory=dict)
    embedding: str = "sine"
    seed: int = 0

    @property
    def M(self) -> int:
        return int(self.P.shape[0])

    @property
    def torch_dtype(self) -> Any:
        import torch

        return {"float64": torch.float64, "float32": torch.float32}[self.dtype]

    def inputs(self) -> Any:
        """X̃ = [X; P] for every input, (n, K+M, N) torch tensor in ``dtype``: x_N = 0."""
        import torch

        n, K, N = len(self.labels), self.K, self.N
        X = torch.zeros(n, K, N, dtype=torch.float64)
        X[:, :, :-1] = (
            torch.nn.functional.one_hot(torch.as_tensor(self.tokens).long(), K).transpose(1, 2).double()
        )
        P = torch.as_tensor(self.P, dtype=torch.float64).expand(n, self.M, N)
        return torch.cat([X, P], dim=1).to(self.torch_dtype)

    def query(self) -> np.ndarray:
        """x̃_N = [0; p_N] (K+M,) as float64."""
        return np.concatenate([np.zeros(self.K), self.P[:, -1]])

    def loss_fn(self, z: Any) -> Any:
        return _torch_losses()[self.loss](z, float(self.eps))

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.task.items()) + (
            f", P={self.embedding} M={self.M} seed={self.seed}, mu={self.mu}, eta={self.eta}, eps={self.eps}, "
            f"loss={self.loss}, dtype={self.dtype}"
        )


def fixture_config(folder: Path, entry: dict, dtype: str) -> FixtureConfig:
    """The ``FixtureConfig`` of one manifest entry, its population read from its oracle file."""
    header_path = folder / entry["oracle"]
    header = read_header(header_path)
    columns = PerInput(header_path, header)
    try:
        tokens, labels, weights = (columns.column(k) for k in ("tokens", "labels", "weight"))
    finally:
        columns.close()
    return FixtureConfig(
        K=int(entry["config"]["K"]),
        N=int(entry["config"]["N"]),
        P=np.load(folder / entry["P"], allow_pickle=False),
        tokens=tokens.astype(np.int64),
        labels=labels.astype(np.int64),
        weights=weights,
        mu=Fraction(entry["config"]["mu"]),
        eta=Fraction(entry["config"]["eta"]),
        eps=Fraction(entry["config"]["eps"]),
        loss=entry["config"]["loss"],
        dtype=dtype,
        tie_rtol=float(entry["tie_rtol"][dtype]),
        task=dict(entry["config"]["task"]),
        embedding=entry["config"]["embedding"],
        seed=int(entry["config"]["seed"]),
    )


#: Manifest formats this runtime reads: ``rw-fixtures`` version 2 and its first form, ``rwtoolkit-fixtures`` 1.
MANIFEST_READS = {("rw-fixtures", 2), ("rwtoolkit-fixtures", 1)}


def load_manifest(folder: str | Path) -> dict:
    """The fixture folder's manifest.json (ValueError naming the file for a format this runtime does not read)."""
    path = Path(folder) / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    found = (manifest.get("format"), manifest.get("version"))
    if found not in MANIFEST_READS:
        raise ValueError(
            f"{path}: format {found[0]!r} version {found[1]!r} is not a fixture manifest this runtime reads"
        )
    return manifest
