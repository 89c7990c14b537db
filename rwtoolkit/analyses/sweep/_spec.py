"""The sweep spec (JSON or YAML, ``sweep.schema.json``): fields, axes, expansion into runs, config hashes.

The spec is read by ``rwtoolkit.io.read_data_file`` (every number exactly as written) and checked in full by the
fields of ``rwtoolkit.io`` before any run starts: a bad field is one line naming the file, the field's path and
what it allows (``SpecError``, a ``ValueError``). A run is one dict with every field of ``FIELDS`` (the
spec's value or the default), in canonical form: integers, floats (each the nearest float64 of the exact
value written, refused when that would change its meaning), booleans, strings, and p as an exact rational
string. Its ``config_hash`` is the first 16 hex digits of the SHA-256 of its canonical JSON: equal configs
have equal hashes across machines.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import warnings
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from rwtoolkit.engines.numeric import POS_KINDS
from rwtoolkit.io import (
    Anything,
    At,
    Boolean,
    Choice,
    ConfigError,
    Field,
    Integer,
    ListOf,
    MappingOf,
    Optional,
    Rational,
    Real,
    Record,
    Text,
    Variants,
    plain,
)
from rwtoolkit.models import DEFAULT_MODEL as _DEFAULT_MODEL

#: Runs computed together in one Dask task unless the spec says otherwise. For the shape of
#: ``benchmarks/sweep_batched.py``, 32 runs per pack cost less per run than 8 or 64 (the arrays of
#: larger packs outgrow the CPU caches).
DEFAULT_PACK_SIZE = 32
#: Largest number of runs one spec may declare (the expansion is held in memory by the driver).
MAX_RUNS = 2_000_000
#: Most entries of the positional embeddings P (M×N) of a run, checked before P is built (2^24 doubles:
#: 128 MiB, far above any run that trains on the exact population in reasonable time).
MAX_POSITION_ENTRIES = 2**24


class SpecError(ValueError):
    """A bad spec: one line naming the file, the field (``grid.N[0]``, ``fixed.eta``, ...) and the allowed values."""


class _Probability(Rational):
    """p as an exact rational string: "1/2", 0.25 (the decimal 1/4) or 1."""

    def check(self, value: object, at: At) -> str:  # type: ignore[override]
        return str(self.exact(value, at))


_POSITIVE = Real(0, low_open=True)

#: Every field a run has, with its check (which returns the canonical value).
FIELDS: dict[str, Field] = {
    "K": Integer(3),
    "N": Integer(2),
    "p": _Probability(0, 1),
    "M": Optional(Integer(2)),
    "pos": Choice(*POS_KINDS),
    "mu": Optional(_POSITIVE),
    "pos_seed": Integer(0),
    "gram": Choice("ideal", "computed"),
    "normalize_attention": Boolean(),
    "steps": Integer(0),
    "eta": _POSITIVE,
    "eps": _POSITIVE,
    "loss": Choice("log", "squared", "exp"),
    "init": Choice("zero", "gaussian"),
    "sigma": _POSITIVE,
    "seed": Integer(0),
    "dtype": Choice("float64", "float32"),
    "escape_threshold": Real(0, 1, low_open=True, high_open=True),
    "learned_fraction": Real(0, 1, low_open=True),
}
_FLOAT_FIELDS = {"p", "mu", "eta", "eps", "sigma", "escape_threshold", "learned_fraction"}
#: Fields that only the summaries of V, the value matrix (K×K), read: the escape and symmetry-break steps.
V_FIELDS = ("escape_threshold",)

_VALUE = Anything("a number, a text, true/false or null (the field's own values)")
_NUMBER = Rational()
_SIZE = Integer(2, MAX_RUNS)


def _axis_shape() -> Field:
    """A grid axis: a list of values, or {range}, {linspace}, {logspace} (the values are checked per field)."""
    shapes = {
        "range": ListOf(Integer(), 2, 3),
        "linspace": ListOf(_VALUE, 3, 3),
        "logspace": ListOf(_VALUE, 3, 3),
    }

    def keyed(name: str):
        return lambda v: isinstance(v, dict) and name in v

    return Variants(
        [(lambda v: isinstance(v, list), ListOf(_VALUE))]
        + [(keyed(name), Record({name: shape}, required=(name,))) for name, shape in shapes.items()],
        "a list of values, {range: [start, stop(, step)]}, {linspace: [start, stop, num]} or "
        "{logspace: [a, b, num]}",
    )


def _draw_shape() -> Field:
    bounds = ListOf(_NUMBER, 2, 2)
    shapes = {
        "uniform": bounds,
        "loguniform": ListOf(Rational(0, low_open=True), 2, 2),
        "choice": ListOf(_VALUE),
    }

    def keyed(name: str):
        return lambda v: isinstance(v, dict) and name in v

    return Variants(
        [(keyed(name), Record({name: shape}, required=(name,))) for name, shape in shapes.items()],
        "{uniform: [low, high]}, {loguniform: [low, high]} or {choice: [values]}",
    )


#: The whole spec: every key, its shape and range (per-field values are checked by ``FIELDS``).
SPEC = Record(
    {
        "name": Text(0),
        "task": Choice("circle"),
        "fixed": MappingOf(_VALUE, keys=tuple(FIELDS)),
        "grid": MappingOf(_axis_shape(), keys=tuple(FIELDS)),
        "random": Record(
            {
                "count": Integer(1, 1_000_000),
                "seed": Integer(0),
                "axes": MappingOf(_draw_shape(), keys=tuple(FIELDS), min_items=1),
            },
            required=("count", "axes"),
        ),
        "record_every": Integer(1),
        "pack_size": Integer(1, 4096),
        "metrics": Boolean(),
        "model": Text(1),  # a registered name, MODULE:ATTR or PATH.py:ATTR: _model reads it
        # rwtoolkit.models.OBJECTIVES, the cross-entropy of a sequence model: _objective reads it
        "objective": Choice("lm", "last"),
        "head_dim": Integer(1),
        "heads": Integer(1),
    },
    required=("task",),
)


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
    #: The registered model of every run (``rwtoolkit.models.MODELS``) and its head dimension (None without one).
    model: str = _DEFAULT_MODEL
    head_dim: int | None = None
    #: The model's number of heads H (None for a model with one head).
    heads: int | None = None
    #: The cross-entropy objective of a model with next-token logits (``rwtoolkit.models.OBJECTIVES``: the spec's
    #: ``objective``, default ``lm``), None for a model trained on a loss of its prediction f.
    objective: str | None = None


def config_hash(config: dict) -> str:
    """First 16 hex digits of the SHA-256 of the canonical JSON of a run's config.

    >>> config_hash({"K": 3, "N": 4}) == config_hash({"N": 4, "K": 3})
    True
    """
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _read(path: str | os.PathLike) -> dict:
    from rwtoolkit.io import read_data_file

    try:
        data = read_data_file(path, "SPEC")
    except ValueError as err:
        raise SpecError(str(err)) from None
    if not isinstance(data, dict):
        raise SpecError(f"SPEC {Path(path)} must hold a mapping (keys task, fixed, grid, random, ...)")
    return data


def _axis_values(field: str, axis: Any, at: At) -> list:
    """The values of one grid axis: a list, {range}, {linspace} (exact for p) or {logspace}."""
    check = FIELDS[field]
    if isinstance(axis, list):
        values = axis
        at_value = [at / i for i in range(len(values))]
    elif "range" in axis:
        start, stop, *step = axis["range"]
        at = at / "range"
        if step and step[0] < 1:
            raise (at / 2).bad(step[0], "is out of range", "a step >= 1")
        span = range(start, stop + 1, step[0] if step else 1)
        if not span:
            raise at.bad(axis["range"], "is empty", "start <= stop")
        if len(span) > MAX_RUNS:
            raise at.bad(axis["range"], f"has {len(span)} values", f"at most {MAX_RUNS} runs in a spec")
        values = list(span)
        at_value = [at] * len(values)
    else:
        kind = "linspace" if "linspace" in axis else "logspace"
        at = at / kind
        start, stop, num = axis[kind]
        num = _SIZE.check(num, at / 2)
        if kind == "linspace" and field == "p":
            a, b = (Rational(0, 1).check(v, at / i) for i, v in enumerate((start, stop)))
            values = [str(a + (b - a) * Fraction(i, num - 1)) for i in range(num)]
        else:
            a, b = (_NUMBER.check(v, at / i) for i, v in enumerate((start, stop)))
            if kind == "logspace":
                for i, bound in enumerate((a, b)):
                    if abs(bound) > 308:
                        raise (at / i).bad((start, stop)[i], "is out of range", "an exponent in [-308, 308]")
                values = [10.0 ** float(a + (b - a) * Fraction(i, num - 1)) for i in range(num)]
            elif field in _FLOAT_FIELDS:
                values = [float(a + (b - a) * Fraction(i, num - 1)) for i in range(num)]
            else:
                exact = [a + (b - a) * Fraction(i, num - 1) for i in range(num)]
                if any(v.denominator != 1 for v in exact):
                    raise at.bad(
                        axis[kind],
                        f"gives values that are not integers, but {field} takes integers",
                        "use range",
                    )
                values = [int(v) for v in exact]
        at_value = [at] * len(values)
    checked = [check.check(v, where) for v, where in zip(values, at_value, strict=True)]
    seen: dict[str, int] = {}
    for i, v in enumerate(checked):
        if repr(v) in seen:
            raise at.bad(
                axis, f"repeats the value {v} ({field} values [{seen[repr(v)]}] and [{i}])", "each value once"
            )
        seen[repr(v)] = i
    return checked


def _draws(random: dict, at: At) -> list[dict]:
    """``count`` assignments of the random axes, drawn from ``seed`` in sorted axis order."""
    import numpy as np

    rng = np.random.default_rng(random.get("seed", 0))
    axes = sorted(random["axes"].items())
    for field, draw in axes:
        for i, value in enumerate(draw.get("choice", [])):  # every choice, drawn or not
            FIELDS[field].check(value, at / "axes" / field / "choice" / i)
        if ("uniform" in draw or "loguniform" in draw) and field not in _FLOAT_FIELDS:
            kind = "uniform" if "uniform" in draw else "loguniform"
            raise (at / "axes" / field / kind).error(
                f"{field} is not continuous; allowed: {{choice: [values]}} for {field}"
            )
        for kind in ("uniform", "loguniform"):
            if kind in draw and not draw[kind][0] < draw[kind][1]:
                lo, hi = draw[kind]
                raise (at / "axes" / field / kind).bad(
                    [lo, hi], "has low >= high", "[low, high] with low < high"
                )
    out = []
    for _ in range(random["count"]):
        values: dict[str, Any] = {}
        for field, draw in axes:
            where = at / "axes" / field
            if "choice" in draw:
                i = int(rng.integers(len(draw["choice"])))
                values[field] = FIELDS[field].check(draw["choice"][i], where / "choice" / i)
                continue
            lo, hi = (float(v) for v in (draw.get("uniform") or draw["loguniform"]))
            x = (
                rng.uniform(lo, hi)
                if "uniform" in draw
                else math.exp(rng.uniform(math.log(lo), math.log(hi)))
            )
            values[field] = FIELDS[field].check(f"{x:.6f}" if field == "p" else float(x), where)
        out.append(values)
    return out


#: Fields under an old name, read for one release with a warning (docs/changelog.md): old -> new.
RENAMED_FIELDS = {"pos_norm": "mu"}


def _renamed_fields(data: dict, source: str) -> dict:
    """The spec with every old field name (``RENAMED_FIELDS``) in fixed, grid and random.axes renamed.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _renamed_fields({"fixed": {"pos_norm": 2}}, "spec")["fixed"], str(caught[0].message)
    ({'mu': 2}, 'spec: fixed.pos_norm is deprecated: call it mu (the same value)')
    """
    parts: list[tuple[tuple[str, ...], Any]] = [
        (("fixed",), data.get("fixed")),
        (("grid",), data.get("grid")),
    ]
    if isinstance(data.get("random"), dict):
        parts.append((("random", "axes"), data["random"].get("axes")))
    for where, part in parts:
        if not isinstance(part, dict):
            continue  # the fields name what is wrong
        for old, new in RENAMED_FIELDS.items():
            if old not in part:
                continue
            at = At(source, (*where, old))
            if new in part:
                raise SpecError(f"{at}: the deprecated name of {new}; allowed: one of {old}, {new}")
            warnings.warn(f"{at} is deprecated: call it {new} (the same value)", FutureWarning, stacklevel=3)
            part[new] = part.pop(old)
    return data


def load_spec(
    source: str | os.PathLike | dict,
    model: str | None = None,
    head_dim: int | None = None,
    heads: int | None = None,
) -> Spec:
    """Read, validate and expand a spec (a JSON/YAML file or a dict); ``SpecError`` names the bad field.

    ``model`` / ``head_dim`` / ``heads`` (``rw sweep --model/--head-dim/--heads``) replace the spec's. A run
    of a model other than the default ``one_layer`` also holds ``model`` and ``head_dim``, ``heads`` for a
    model with several and ``objective`` for a model with next-token logits (a sequence model: the spec's
    ``objective``, lm or last, default lm), so its config hash differs from the paper model's; a ``one_layer``
    run is as before.
    Every field is checked before anything is computed, and every registered model sweeps.

    >>> spec = load_spec({"task": "circle", "fixed": {"K": 3, "steps": 2},
    ...                   "grid": {"N": {"range": [3, 4]}, "p": {"linspace": [0, 1, 3]}}})
    >>> [(r["N"], r["p"]) for r in spec.runs], spec.varied
    ([(3, '0'), (3, '1/2'), (3, '1'), (4, '0'), (4, '1/2'), (4, '1')], ('N', 'p'))
    >>> load_spec({"task": "circle", "grid": {"N": [1]}})
    Traceback (most recent call last):
    ...
    rwtoolkit.analyses.sweep._spec.SpecError: spec: grid.N[0]: 1 is out of range; allowed: an integer >= 2
    """
    label = "spec" if isinstance(source, dict) else str(source)
    data = dict(source) if isinstance(source, dict) else _read(source)
    for key, value in (("model", model), ("head_dim", head_dim), ("heads", heads)):
        if value is not None:
            data[key] = value
    try:
        return _load(_renamed_fields(data, label), label)
    except ConfigError as err:
        raise SpecError(str(err)) from None


def _given(data: dict, field: str, at: At) -> At:
    """Where ``field`` is set in the spec (fixed, grid or random.axes), or the field's name for its default."""
    for where in (("fixed",), ("grid",), ("random", "axes")):
        part = data
        for key in where:
            part = part.get(key, {}) if isinstance(part, dict) else {}
        if field in part:
            return At(at.source, (*where, field))
    return At(at.source, (field,))  # not in the spec: its default


def _load(data: dict, label: str) -> Spec:
    at = At(label)
    SPEC.check(data, at)
    fixed = {k: FIELDS[k].check(v, at / "fixed" / k) for k, v in data.get("fixed", {}).items()}
    grid = {k: _axis_values(k, v, at / "grid" / k) for k, v in data.get("grid", {}).items()}
    for field in grid:
        if field in fixed:
            raise (at / "grid" / field).error(f"{field} is also in fixed; allowed: each field in one place")
    random_axes = set(data.get("random", {}).get("axes", {}))
    for field in sorted(random_axes & (set(grid) | set(fixed))):
        raise (at / "random" / "axes" / field).error(
            f"{field} is also in grid or fixed; allowed: each field in one place"
        )
    count = math.prod(len(v) for v in grid.values()) * data.get("random", {}).get("count", 1)
    if count > MAX_RUNS:
        raise at.error(f"the spec declares {count} runs, above the limit of {MAX_RUNS}: split it into sweeps")
    model_name, d, H = _model(data, at)
    objective = _objective(data, at, model_name, d, H)
    for field in V_FIELDS:
        if not _has_value_matrix(model_name, d, H) and field in {*fixed, *grid, *random_axes}:
            raise _given(data, field, at).error(
                f"model {model_name} has no value matrix V (K×K), so the escape and symmetry-break steps it "
                f"sets are not computed; allowed: leave {field} out for this model"
            )
    draws = _draws(data["random"], at / "random") if "random" in data else [{}]
    defaults = _defaults()
    base = {k: FIELDS[k].check(defaults[k], At("defaults", (k,))) for k in FIELDS}
    base.update(fixed)
    extra = {}
    if model_name != _DEFAULT_MODEL:
        extra = {"model": model_name, "head_dim": d} | ({"heads": H} if H is not None else {})
        extra |= {"objective": objective} if objective is not None else {}
    runs = []
    for combo in itertools.product(*grid.values()):
        for draw in draws:
            run = dict(base)
            run.update(zip(grid, combo, strict=True))
            run.update(draw)
            if run["M"] is None:  # M = null: M = N (one-hot positions need it)
                run["M"] = run["N"]
            run.update(extra)
            runs.append(run)
    _check_runs(runs, data, at)
    if model_name != _DEFAULT_MODEL:
        for field, paper in (("normalize_attention", False), ("gram", "ideal")):
            if any(r[field] != paper for r in runs):
                raise _given(data, field, at).error(
                    f"{field} = {json.dumps(paper)} is the only value for model {model_name} (the other "
                    f"values are the paper model's, one_layer); allowed: {json.dumps(paper)}"
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
        source=plain(data),  # type: ignore[arg-type]
        model=model_name,
        head_dim=d,
        heads=H,
        objective=objective,
    )


def _defaults() -> dict[str, Any]:
    """Defaults of the model and training fields are those of ``ModelConfig`` and ``TrainConfig``."""
    from dataclasses import MISSING, fields

    from rwtoolkit.analyses.stability import DEFAULT_THRESHOLD
    from rwtoolkit.engines.numeric import ModelConfig, TrainConfig

    out: dict[str, Any] = {"K": 3, "N": 4, "p": "1/2"}
    for cls in (ModelConfig, TrainConfig):
        out.update({f.name: f.default for f in fields(cls) if f.default is not MISSING})
    out["escape_threshold"] = DEFAULT_THRESHOLD
    out["learned_fraction"] = 0.99
    return out


def _model(data: dict, at: At) -> tuple[str, int | None, int | None]:
    """The spec's ``model`` (a registered name, or ``MODULE:ATTR`` / ``PATH.py:ATTR`` of a model of your own,
    ``rwtoolkit.models.get_model``), its head dimension d and heads H (None without)."""
    import rwtoolkit.models

    name = data.get("model", rwtoolkit.models.DEFAULT_MODEL)
    try:
        takes = rwtoolkit.models.model_hyperparameters(name)
    except ValueError as err:
        raise (at / "model").error(str(err)) from None
    for key, letter, what in (("head_dim", "d", "head dimension"), ("heads", "H", "number of heads")):
        if data.get(key) is not None and letter not in takes:
            raise (at / key).error(f"model {name} has no {what}; allowed: leave {key} out for this model")
    try:
        model = rwtoolkit.models.get_model(name, d=data.get("head_dim"), H=data.get("heads"))
    except ValueError as err:  # the target (a module, a file, an attribute) or its head dimension
        field = "model" if "--model" in str(err) or data.get("head_dim") is None else "head_dim"
        raise (at / field).error(str(err)) from None
    return name, model.hyperparameters.get("d"), model.hyperparameters.get("H")


def _objective(data: dict, at: At, name: str, d: int | None, H: int | None) -> str | None:
    """The spec's ``objective`` for a model with next-token logits (default ``lm``), None for another model;
    one line naming the field where the model has no next-token logits (``rwtoolkit.models.objective_name``)."""
    import rwtoolkit.models

    model = rwtoolkit.models.get_model(name, d=d, H=H)
    try:
        return rwtoolkit.models.objective_name(model, data.get("objective"))
    except ValueError:
        raise (at / "objective").error(
            f"model {name} gives a prediction f, no next-token logits, and trains on its loss; allowed: leave "
            "objective out for this model (lm or last are a sequence model's)"
        ) from None


def _has_value_matrix(name: str, d: int | None, H: int | None) -> bool:
    """Whether the model has one value matrix V of shape (K, K), the matrix the V summaries read."""
    import rwtoolkit.models

    shapes = rwtoolkit.models.get_model(name, d=d, H=H).shapes(rwtoolkit.models.Sizes(K=3, M=4, N=4))
    return shapes.get("V") == (3, 3)


def _check_runs(runs: list[dict], data: dict, at: At) -> None:
    """Cross-field checks on each distinct combination (M >= N, exact population size, positions)."""
    from rwtoolkit.tasks import MAX_EXACT_WALKS

    for K, N, p in sorted({(r["K"], r["N"], r["p"]) for r in runs}):
        # K·2^(N-1) (K at p in {0, 1}), compared by bit lengths first: N may be 10^10
        if p in ("0", "1"):
            too_many = K > MAX_EXACT_WALKS
        else:
            too_many = N - 1 >= MAX_EXACT_WALKS.bit_length() or K * 2 ** (N - 1) > MAX_EXACT_WALKS
        if too_many:
            field = "N" if p not in ("0", "1") else "K"
            raise _given(data, field, at).error(
                f"K={K}, N={N}, p={p} has an exact population of {'K' if field == 'K' else 'K*2^(N-1)'} "
                f"walks, above the limit of {MAX_EXACT_WALKS}: sweeps train on the exact population; "
                f"allowed: a smaller {field}"
            )
    for N, M in sorted({(r["N"], r["M"]) for r in runs}):
        if M < N:
            raise _given(data, "M", at).error(
                f"M={M} is out of range; allowed: M >= N={N} (or null for M = N)"
            )
    for N, M in sorted({(r["N"], r["M"]) for r in runs}):
        if M * N > MAX_POSITION_ENTRIES:
            raise _given(data, "M", at).error(
                f"M={M}, N={N}: the positional embeddings P (M×N) have {M * N} entries, above the limit "
                f"of {MAX_POSITION_ENTRIES}; allowed: a smaller M"
            )
    from rwtoolkit.engines.numeric import check_embedding

    for pos, M, N, mu in sorted({(r["pos"], r["M"], r["N"], r["mu"]) for r in runs}, key=repr):
        try:
            check_embedding(pos, M, N, mu)
        except ValueError as err:
            raise _given(data, "pos", at).error(f"{err} (M = null in the spec means M = N)") from None
