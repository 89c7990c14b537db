"""Task specification files (JSON or YAML) for ``rw explore``: a catalogue family or an explicit finite task.

The file is read by ``rwtoolkit.io.read_data_file`` (every number exactly as written: ``1e-8`` is 1/10^8) and
checked strictly by the fields of ``TASK_SPEC`` (unknown keys are errors, as in ``task_spec.schema.json``),
then each value by the code that uses it (a family's parameters by its builder). Every error is one line
naming the file and the field, as a path such as ``task.sequences[2].prob`` or ``task.params.K``, and
says what is wrong and what is allowed.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rwtoolkit.io import (
    Anything,
    At,
    Boolean,
    Choice,
    ConfigError,
    Custom,
    Field,
    Integer,
    ListOf,
    MappingOf,
    Real,
    Record,
    Text,
    Variants,
    plain,
    read_data_file,
    unknown_key,
)
from rwtoolkit.tasks._catalogue import FAMILIES, make_task
from rwtoolkit.tasks._circle import CircleWalk
from rwtoolkit.tasks._exact import exact, is_numeric
from rwtoolkit.tasks._finite import FiniteTask
from rwtoolkit.tasks._graph import exact_expr

#: Explore settings used when the spec leaves them out (exact GD: docs/theory.md#model defaults η = 1, ε = 1/10).
EXPLORE_DEFAULTS: dict[str, Any] = {"steps": 3, "eta": 1, "eps": "1/10", "mu": "mu"}
#: Numeric training settings used by ``--train`` when the spec leaves them out (small and fast).
TRAIN_DEFAULTS: dict[str, Any] = {
    "steps": 200,
    "M": 64,
    "eta": 0.1,
    "eps": 0.1,
    "sigmas": [1e-2, 1e-4],
    "population": True,
    "train_size": 1000,
    "test_size": 1000,
    "seed": 0,
}


class SpecError(ValueError):
    """A task specification that does not parse: one line, ``<file>: <field path>: <what is wrong>``."""


def _exact_setting(name: str) -> Custom:
    """An exact GD setting (η, ε, μ): a number > 0 or one symbol name, as ``rwtoolkit.engines.exact.derive`` reads it."""

    def check(value: object) -> object:
        try:
            exact_value = exact(value, name)
        except ValueError:
            raise ValueError("is not a number or a symbol name") from None
        if is_numeric(exact_value) and not exact_value > 0:
            raise ValueError("is out of range")
        return value

    return Custom(check, f"a number > 0 (e.g. 1/10 or 0.1) or a symbol name such as {name}")


_POSITIVE = Real(0, low_open=True)
_TOKEN = Variants(
    [(lambda v: isinstance(v, str), Text(1)), (lambda v: not isinstance(v, (list, dict)), Integer(0))],
    "a word of vocab or a token id (an integer >= 0)",
)
_FAMILY_TASK = Record(
    {
        "family": Choice(*FAMILIES),
        "params": MappingOf(Anything("the family's parameters"), keys=None),
    },
    required=("family",),
)
_EXPLICIT_TASK = Record(
    {
        "vocab": ListOf(Text(1), unique=True),
        "labels": ListOf(Text(1), unique=True),
        "sequences": ListOf(
            Record(
                {
                    "tokens": ListOf(_TOKEN),
                    "label": _TOKEN,
                    "prob": Anything("an exact probability: a number or text such as 1/2 or 1-p"),
                },
                required=("tokens", "label", "prob"),
            )
        ),
    },
    required=("vocab", "sequences"),
)


class _Task(Field):
    """A catalogue task ({family, params}) or an explicit one ({vocab, labels, sequences})."""

    allowed = "a mapping {family, params} (a catalogue task) or {vocab, labels, sequences} (an explicit task)"

    def check(self, value: object, at: At) -> dict:
        if not isinstance(value, dict):
            raise at.bad(value, "is not a mapping", self.allowed)
        if set(value) & set(_FAMILY_TASK.fields):  # family and params: a catalogue task
            return _FAMILY_TASK.check(value, at)
        if set(value) & set(_EXPLICIT_TASK.fields):
            return _EXPLICIT_TASK.check(value, at)
        keys = [*_FAMILY_TASK.fields, *_EXPLICIT_TASK.fields]
        for key in value:
            raise unknown_key(at, key, keys)
        raise at.error("missing key family; required: family (a catalogue task) or vocab and sequences")


#: Every key of a task specification file, its shape and range (``task_spec.schema.json`` says the same).
TASK_SPEC = Record(
    {
        "name": Text(1),
        "description": Text(0),
        "task": _Task(),
        "sweep": MappingOf(ListOf(Anything("a value of the parameter"), 1, 64), min_items=1),
        "explore": Record(
            {
                "steps": Integer(1, 8),
                "eta": _exact_setting("eta"),
                "eps": _exact_setting("eps"),
                "mu": _exact_setting("mu"),
            }
        ),
        "train": Record(
            {
                "steps": Integer(1, 100_000),
                "M": Integer(2, 4096),
                "eta": _POSITIVE,
                "eps": _POSITIVE,
                "sigmas": ListOf(_POSITIVE, 1, 4),
                "population": Boolean(),
                "train_size": Integer(1, 1_000_000),
                "test_size": Integer(1, 1_000_000),
                "seed": Integer(0),
            }
        ),
    },
    required=("task",),
)


@dataclass(frozen=True)
class TaskSpec:
    """A parsed task specification: the task (family + params, or explicit), sweeps and settings.

    >>> spec = parse_task_spec({"task": {"family": "circle", "params": {"K": 3, "N": 4, "p": "p"}},
    ...                         "sweep": {"p": [0, "1/2", 1]}})
    >>> spec.name, [point["p"] for point in spec.points()], spec.task(p=1).p
    ('circle', [0, '1/2', 1], 1)
    """

    name: str
    family: str | None
    params: dict[str, Any]
    explicit: FiniteTask | None
    sweep: dict[str, list[Any]] = field(default_factory=dict)
    explore: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    #: The file the spec was read from (or "spec"), the first word of every error.
    source: str = "spec"

    def task(self, **overrides: Any) -> CircleWalk | FiniteTask:
        """The task at the spec's parameters, with ``overrides`` (a sweep point) replacing some."""
        if self.explicit is not None:
            if overrides:
                raise SpecError(
                    f"{self.source}: sweep: an explicit task has no parameters to set ({sorted(overrides)})"
                )
            return self.explicit
        assert self.family is not None
        try:
            return make_task(self.family, {**self.params, **overrides}, where=f"{self.source}: task.params")
        except ValueError as err:
            raise SpecError(str(err)) from None

    def points(self) -> list[dict[str, Any]]:
        """Every combination of the sweep values (one empty point when there is no sweep)."""
        keys = list(self.sweep)
        return [dict(zip(keys, values)) for values in itertools.product(*(self.sweep[k] for k in keys))]


def parse_task_spec(data: Any, source: str = "spec") -> TaskSpec:
    """Check a decoded task specification strictly and build its task(s); ``source`` names it in errors.

    >>> parse_task_spec({"task": {"family": "qa2"}, "explore": {"steps": 0}})
    Traceback (most recent call last):
    rwtoolkit.tasks._spec.SpecError: spec: explore.steps: 0 is out of range; allowed: an integer in 1..8
    """
    try:
        return _parse(data, At(source))
    except ConfigError as err:
        raise SpecError(str(err)) from None


def _parse(data: Any, at: At) -> TaskSpec:
    source = at.source
    TASK_SPEC.check(data, at)
    task_data = data["task"]
    family = task_data.get("family")
    explicit = None
    params: dict[str, Any] = {}
    if family is None:
        explicit = _explicit_task(task_data, at / "task")
    else:
        params = plain(dict(task_data.get("params", {})))  # type: ignore[assignment]
    sweep = plain(dict(data.get("sweep", {})))
    if sweep and explicit is not None:
        raise SpecError(f"{at / 'sweep'}: only a catalogue family has parameters to sweep; allowed: no sweep")
    explore = {**EXPLORE_DEFAULTS, **data.get("explore", {})}
    train = {**TRAIN_DEFAULTS, **TASK_SPEC.fields["train"].check(data.get("train", {}), at / "train")}
    name = data.get("name") or family or "task"
    spec = TaskSpec(name, family, params, explicit, sweep, explore, train, raw=plain(data), source=source)  # type: ignore[arg-type]
    spec.task()  # build once so a bad parameter fails here, naming its field
    for k, point in enumerate(spec.points()):
        try:
            spec.task(**point)
        except SpecError as err:
            values = ", ".join(f"{key}={value!r}" for key, value in point.items())
            where = str(err).removeprefix(f"{source}: ")
            raise SpecError(f"{at / 'sweep'} (point {k}: {values}): {where}") from None
    return spec


def _explicit_task(task: dict[str, Any], at: At) -> FiniteTask:
    vocab = list(task["vocab"])
    index = {w: i for i, w in enumerate(vocab)}
    allowed = task.get("labels")
    for k, word in enumerate(allowed or []):
        if word not in index:
            raise (at / "labels" / k).bad(word, "is not in vocab", f"words of vocab: {', '.join(vocab)}")
    sequences, labels, probs = [], [], []
    length = len(task["sequences"][0]["tokens"])
    for n, item in enumerate(task["sequences"]):
        where = at / "sequences" / n
        if len(item["tokens"]) != length:
            raise (where / "tokens").error(
                f"has {len(item['tokens'])} tokens, sequences[0] has {length}; allowed: sequences of one "
                "length N-1"
            )
        ids = []
        for i, token in enumerate([*item["tokens"], item["label"]]):
            token_at = where / "tokens" / i if i < length else where / "label"
            if isinstance(token, str):
                if token not in index:
                    raise token_at.bad(token, "is not in vocab", f"words of vocab: {', '.join(vocab)}")
                ids.append(index[token])
            elif not 0 <= token < len(vocab):
                raise token_at.bad(
                    token, "is out of range", f"a word of vocab or a token id in 0..{len(vocab) - 1}"
                )
            else:
                ids.append(int(token))
        if allowed is not None and vocab[ids[-1]] not in allowed:
            raise (where / "label").bad(vocab[ids[-1]], "is not one of labels", ", ".join(allowed))
        try:
            prob = exact_expr(plain(item["prob"]), "prob")
        except ValueError as err:
            raise (where / "prob").error(str(err)) from None
        if is_numeric(prob) and not 0 <= prob <= 1:
            raise (where / "prob").bad(item["prob"], "is out of range", "a probability in [0, 1]")
        probs.append(prob)
        sequences.append(ids[:-1])
        labels.append(ids[-1])
    seen: dict[tuple[int, ...], int] = {}
    for n, seq in enumerate(sequences):
        key = (*seq, labels[n])
        if key in seen:
            raise (at / "sequences" / n).error(
                f"repeats sequences[{seen[key]}] (same tokens and label); allowed: each input once "
                "(merge them and add their probabilities)"
            )
        seen[key] = n
    try:
        return FiniteTask(sequences, labels, probs, vocab=vocab, name="explicit")
    except ValueError as err:
        raise (at / "sequences").error(str(err)) from None


def load_task_spec(path: str | Path) -> TaskSpec:
    """Read and parse a task specification file, JSON or YAML (``.yaml``, ``.yml``): see ``parse_task_spec``."""
    try:
        data = read_data_file(path, "spec file")
    except ValueError as err:
        raise SpecError(str(err)) from None
    return parse_task_spec(data, source=str(path))
