"""The sweep spec (JSON or YAML, ``sweep.schema.json``): fields, axes, expansion into runs, config hashes.

A run is one dict with every field of ``FIELDS`` (the spec's value or the default), in canonical form:
integers, floats, booleans, strings, and p as an exact rational string. Its ``config_hash`` is the first
16 hex digits of the SHA-256 of its canonical JSON: equal configs have equal hashes across machines.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rwio import load_schema
from rwmodels import DEFAULT_MODEL as _DEFAULT_MODEL

#: Runs computed together in one Dask task unless the spec says otherwise. For the shape of
#: ``benchmarks/sweep_batched.py``, 32 runs per pack cost less per run than 8 or 64 (the arrays of
#: larger packs outgrow the CPU caches).
DEFAULT_PACK_SIZE = 32
#: Largest number of runs one spec may declare (the expansion is held in memory by the driver).
MAX_RUNS = 2_000_000


class SpecError(ValueError):
    """A bad spec: one line naming the field (``grid.N``, ``fixed.eta``, ...) and the allowed values."""


def _choice(*allowed: str):
    def check(v: object) -> str:
        if v not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return str(v)

    return check


def _integer(low: int):
    def check(v: object) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"must be an integer >= {low}")
        return int(v)

    return check


def _number(low: float, high: float = math.inf, low_open: bool = True, high_open: bool = False):
    def check(v: object) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError("must be a finite number")
        if (v <= low if low_open else v < low) or (v >= high if high_open else v > high):
            left, right = "(" if low_open else "[", ")" if high_open else "]"
            raise ValueError(f"is out of range: must be in {left}{low:g}, {high:g}{right}")
        return float(v)

    return check


def _optional(check):
    def wrapped(v: object):
        return None if v is None else check(v)

    return wrapped


def _boolean(v: object) -> bool:
    if not isinstance(v, bool):
        raise ValueError("must be true or false")
    return v


def _probability(v: object) -> str:
    """p as an exact rational string: "1/2", 0.25 (read as the decimal 1/4) or 1."""
    import sympy as sp

    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError("must be a number or a fraction string in [0, 1] such as 1/3")
    try:
        value = sp.Rational(str(v))
    except (TypeError, ValueError, SyntaxError, sp.SympifyError):
        raise ValueError("is not a number: must be in [0, 1], e.g. 1/3 or 0.25") from None
    if not 0 <= value <= 1:
        raise ValueError("is out of range: must be in [0, 1]")
    return str(value)


def _defaults() -> dict[str, Any]:
    """Defaults of the model and training fields are those of ``ModelConfig`` and ``TrainConfig``."""
    from dataclasses import MISSING, fields

    from rwnumeric import ModelConfig, TrainConfig
    from rwstability import DEFAULT_THRESHOLD

    out: dict[str, Any] = {"K": 3, "N": 4, "p": "1/2"}
    for cls in (ModelConfig, TrainConfig):
        out.update({f.name: f.default for f in fields(cls) if f.default is not MISSING})
    out["escape_threshold"] = DEFAULT_THRESHOLD
    out["learned_fraction"] = 0.99
    return out


#: Every field a run has, with its check (which returns the canonical value).
FIELDS: dict[str, Any] = {
    "K": _integer(3),
    "N": _integer(2),
    "p": _probability,
    "M": _optional(_integer(2)),
    "pos": _choice("sine", "onehot", "random"),
    "mu": _optional(_number(0)),
    "pos_seed": _integer(0),
    "gram": _choice("ideal", "computed"),
    "normalize_attention": _boolean,
    "steps": _integer(0),
    "eta": _number(0),
    "eps": _number(0),
    "loss": _choice("log", "squared", "exp"),
    "init": _choice("zero", "gaussian"),
    "sigma": _number(0),
    "seed": _integer(0),
    "dtype": _choice("float64", "float32"),
    "escape_threshold": _number(0, 1, high_open=True),
    "learned_fraction": _number(0, 1),
}
_FLOAT_FIELDS = {"p", "mu", "eta", "eps", "sigma", "escape_threshold", "learned_fraction"}


@dataclass(frozen=True)
class Spec:
    """A validated spec: ``runs`` (canonical config dicts, spec order), ``hashes`` and the sweep settings."""

    name: str
    runs: tuple[dict, ...]
    hashes: tuple[str, ...]
    varied: tuple[str, ...]  # fields with more than one value
    record_every: int
    pack_size: int
    metrics: bool
    source: dict
    #: The registered model of every run (``rwmodels.MODELS``) and its head dimension (None without one).
    model: str = _DEFAULT_MODEL
    head_dim: int | None = None


def config_hash(config: dict) -> str:
    """First 16 hex digits of the SHA-256 of the canonical JSON of a run's config.

    >>> config_hash({"K": 3, "N": 4}) == config_hash({"N": 4, "K": 3})
    True
    """
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _read(path: str | os.PathLike) -> dict:
    from rwio import read_data_file

    try:
        data = read_data_file(path, "SPEC")
    except ValueError as err:
        raise SpecError(str(err)) from None
    if not isinstance(data, dict):
        raise SpecError(f"SPEC {Path(path)} must hold a mapping (keys task, fixed, grid, random, ...)")
    return data


def _schema_errors(data: dict) -> None:
    import jsonschema

    schema = load_schema("sweep")
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path))
    if errors:
        err = errors[0]
        where = ".".join(str(x) for x in err.path) or "(top level)"
        if err.validator == "propertyNames":
            raise SpecError(f"spec field {where}: {err.message}; fields are {', '.join(FIELDS)}")
        raise SpecError(f"spec field {where}: {err.message}")


def _check(field: str, value: object, where: str) -> Any:
    try:
        return FIELDS[field](value)
    except ValueError as err:
        raise SpecError(f"spec field {where}: {field}={value!r} {err}") from None


def _axis_values(field: str, axis: Any, where: str) -> list:
    """The values of one grid axis: a list, {range}, {linspace} (exact for p) or {logspace}."""
    import numpy as np
    import sympy as sp

    if isinstance(axis, list):
        values = axis
    elif "range" in axis:
        start, stop, *step = axis["range"]
        values = list(range(start, stop + 1, step[0] if step else 1))
        if not values:
            raise SpecError(f"spec field {where}.range: {axis['range']} is empty (start must be <= stop)")
    elif "linspace" in axis:
        start, stop, num = axis["linspace"]
        if field == "p":
            a, b = (sp.Rational(_check("p", v, f"{where}.linspace")) for v in (start, stop))
            values = [str(a + (b - a) * sp.Rational(i, num - 1)) for i in range(num)]
        else:
            if isinstance(start, str) or isinstance(stop, str):
                raise SpecError(f"spec field {where}.linspace: start and stop must be numbers for {field}")
            values = [float(x) for x in np.linspace(start, stop, num)]
            if field not in _FLOAT_FIELDS:
                if any(v != int(v) for v in values):
                    raise SpecError(f"spec field {where}.linspace: {field} takes integers; use range")
                values = [int(v) for v in values]
    else:
        start, stop, num = axis["logspace"]
        values = [float(10.0**x) for x in np.linspace(start, stop, num)]
    checked = [_check(field, v, f"{where}[{i}]") for i, v in enumerate(values)]
    if len(set(map(repr, checked))) != len(checked):
        raise SpecError(f"spec field {where}: repeated values {values}")
    return checked


def _draws(random: dict) -> list[dict]:
    """``count`` assignments of the random axes, drawn from ``seed`` in sorted axis order."""
    import numpy as np

    rng = np.random.default_rng(random.get("seed", 0))
    axes = sorted(random["axes"].items())
    for field, draw in axes:
        if ("uniform" in draw or "loguniform" in draw) and field not in _FLOAT_FIELDS:
            raise SpecError(f"spec field random.axes.{field}: {field} is not continuous; use choice")
    out = []
    for _ in range(random["count"]):
        values: dict[str, Any] = {}
        for field, draw in axes:
            where = f"random.axes.{field}"
            if "choice" in draw:
                values[field] = _check(field, draw["choice"][int(rng.integers(len(draw["choice"])))], where)
                continue
            lo, hi = draw.get("uniform") or draw["loguniform"]
            if not lo < hi:
                raise SpecError(f"spec field {where}: bounds [{lo}, {hi}] must satisfy low < high")
            x = (
                rng.uniform(lo, hi)
                if "uniform" in draw
                else math.exp(rng.uniform(math.log(lo), math.log(hi)))
            )
            values[field] = _check(field, f"{x:.6f}" if field == "p" else float(x), where)
        out.append(values)
    return out


#: Fields under an old name, read for one release with a warning (docs/changelog.md): old -> new.
RENAMED_FIELDS = {"pos_norm": "mu"}


def _renamed_fields(data: dict) -> dict:
    """The spec with every old field name (``RENAMED_FIELDS``) in fixed, grid and random.axes renamed.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _renamed_fields({"fixed": {"pos_norm": 2}})["fixed"], str(caught[0].message)
    ({'mu': 2}, 'spec field fixed.pos_norm is deprecated: call it mu (the same value)')
    """
    parts = [("fixed", data.get("fixed")), ("grid", data.get("grid"))]
    if isinstance(data.get("random"), dict):
        parts.append(("random.axes", data["random"].get("axes")))
    for where, part in parts:
        if not isinstance(part, dict):
            continue  # the schema names what is wrong
        for old, new in RENAMED_FIELDS.items():
            if old not in part:
                continue
            if new in part:
                raise SpecError(
                    f"spec field {where}.{old}: it is the deprecated name of {new}; give one of them"
                )
            warnings.warn(
                f"spec field {where}.{old} is deprecated: call it {new} (the same value)",
                FutureWarning,
                stacklevel=3,
            )
            part[new] = part.pop(old)
    return data


def load_spec(
    source: str | os.PathLike | dict, model: str | None = None, head_dim: int | None = None
) -> Spec:
    """Read, validate and expand a spec (a JSON/YAML file or a dict); ``SpecError`` names the bad field.

    ``model`` / ``head_dim`` (``rw sweep --model/--head-dim``) replace the spec's ``model`` / ``head_dim``.
    A run of a model other than the default ``one_layer`` also holds ``model`` and ``head_dim`` (so its
    config hash differs from the paper model's); a ``one_layer`` run is as before.

    >>> spec = load_spec({"task": "circle", "fixed": {"K": 3, "steps": 2},
    ...                   "grid": {"N": {"range": [3, 4]}, "p": {"linspace": [0, 1, 3]}}})
    >>> [(r["N"], r["p"]) for r in spec.runs], spec.varied
    ([(3, '0'), (3, '1/2'), (3, '1'), (4, '0'), (4, '1/2'), (4, '1')], ('N', 'p'))
    >>> load_spec({"task": "circle", "grid": {"N": [1]}})
    Traceback (most recent call last):
    ...
    rwsweep._spec.SpecError: spec field grid.N[0]: N=1 must be an integer >= 2
    """
    data = _renamed_fields(dict(source) if isinstance(source, dict) else _read(source))
    if model is not None:
        data["model"] = model
    if head_dim is not None:
        data["head_dim"] = head_dim
    _schema_errors(data)
    model_name, d = _model(data)
    defaults = _defaults()
    fixed = {k: _check(k, v, f"fixed.{k}") for k, v in data.get("fixed", {}).items()}
    grid = {k: _axis_values(k, v, f"grid.{k}") for k, v in data.get("grid", {}).items()}
    draws = _draws(data["random"]) if "random" in data else [{}]
    for field in grid:
        if field in fixed:
            raise SpecError(f"spec field grid.{field}: {field} is also in fixed; give it in one place")
    random_axes = set(data.get("random", {}).get("axes", {}))
    for field in random_axes & (set(grid) | set(fixed)):
        raise SpecError(f"spec field random.axes.{field}: {field} is also in grid or fixed")
    count = math.prod(len(v) for v in grid.values()) * len(draws)
    if count > MAX_RUNS:
        raise SpecError(f"spec declares {count} runs, above the limit of {MAX_RUNS}: split it into sweeps")
    base = {k: FIELDS[k](defaults[k]) for k in FIELDS}
    base.update(fixed)
    runs = []
    for combo in itertools.product(*grid.values()):
        for draw in draws:
            run = dict(base)
            run.update(zip(grid, combo, strict=True))
            run.update(draw)
            if run["M"] is None:  # M = null: M = N (one-hot positions need it)
                run["M"] = run["N"]
            if model_name != _DEFAULT_MODEL:
                run["model"], run["head_dim"] = model_name, d
            runs.append(run)
    _check_runs(runs)
    if model_name != _DEFAULT_MODEL:
        for field, paper in (("normalize_attention", False), ("gram", "ideal")):
            if any(r[field] != paper for r in runs):
                raise SpecError(
                    f"spec field {field}: {field}={paper!r} is the only value for model {model_name} "
                    "(the other values are the paper model's, one_layer)"
                )
    varied = tuple(k for k in FIELDS if len({repr(r[k]) for r in runs}) > 1)
    return Spec(
        name=str(data.get("name", "sweep")),
        runs=tuple(runs),
        hashes=tuple(config_hash(r) for r in runs),
        varied=varied,
        record_every=int(data.get("record_every", 1)),
        pack_size=int(data.get("pack_size", DEFAULT_PACK_SIZE)),
        metrics=bool(data.get("metrics", False)),
        source=data,
        model=model_name,
        head_dim=d,
    )


def _model(data: dict) -> tuple[str, int | None]:
    """The spec's ``model`` (checked against ``rwmodels.MODELS``) and ``head_dim`` (its ``d``, or None)."""
    import rwmodels

    name = data.get("model", rwmodels.DEFAULT_MODEL)
    head_dim = data.get("head_dim")
    if name not in rwmodels.MODELS:
        raise SpecError(
            f"spec field model: {name!r} is not a registered model; use one of {', '.join(rwmodels.MODELS)}"
        )
    if head_dim is not None and "d" not in rwmodels.MODELS[name].HYPERPARAMETERS:
        raise SpecError(f"spec field head_dim: model {name} has no head dimension (leave head_dim out)")
    try:
        model = rwmodels.get_model(name, d=head_dim)
    except ValueError as err:
        raise SpecError(f"spec field head_dim: {err}") from None
    return name, model.hyperparameters.get("d")


def _check_runs(runs: list[dict]) -> None:
    """Cross-field checks on each distinct combination (M >= N, exact population size, record steps)."""
    from rwtasks import MAX_EXACT_WALKS

    for K, N, p in sorted({(r["K"], r["N"], r["p"]) for r in runs}):
        walks = K * 2 ** (N - 1) if p not in ("0", "1") else K
        if walks > MAX_EXACT_WALKS:
            raise SpecError(
                f"spec field N: K={K}, N={N} has an exact population of K*2^(N-1) = {walks} walks, above "
                f"the limit of {MAX_EXACT_WALKS}: sweeps train on the exact population; use a smaller N"
            )
    for N, M in sorted({(r["N"], r["M"]) for r in runs}):
        if M < N:
            raise SpecError(f"spec field M: M={M} is out of range: M must be >= N={N}")
    from rwnumeric import positional_embeddings

    for pos, M, N, mu, seed in sorted(
        {(r["pos"], r["M"], r["N"], r["mu"], r["pos_seed"]) for r in runs}, key=repr
    ):
        try:
            positional_embeddings(pos, M, N, mu, seed)
        except ValueError as err:
            raise SpecError(f"spec field pos: {err} (M = null in the spec means M = N)") from None
