"""Task specification files (JSON) for ``rw explore``: a catalogue family or an explicit finite task.

Parsing is strict: the file is checked against ``task_spec.schema.json`` (unknown fields are
errors), then each value is checked by the code that uses it. Every error names the field, as a
path such as ``task.sequences[2].prob`` or ``task.params.K``, and says what is wrong.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rwio import load_schema
from rwtasks._catalogue import make_task
from rwtasks._circle import CircleWalk
from rwtasks._exact import exact, is_numeric
from rwtasks._finite import FiniteTask
from rwtasks._graph import exact_expr

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
    """A task specification that does not parse; the message starts with the field's path."""


def _path(parts: Any) -> str:
    out = "spec"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


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

    def task(self, **overrides: Any) -> CircleWalk | FiniteTask:
        """The task at the spec's parameters, with ``overrides`` (a sweep point) replacing some."""
        if self.explicit is not None:
            if overrides:
                raise SpecError(
                    f"spec.sweep: an explicit task has no parameters to set ({sorted(overrides)})"
                )
            return self.explicit
        assert self.family is not None
        try:
            return make_task(self.family, {**self.params, **overrides}, where="spec.task.params")
        except ValueError as err:
            raise SpecError(str(err)) from None

    def points(self) -> list[dict[str, Any]]:
        """Every combination of the sweep values (one empty point when there is no sweep)."""
        keys = list(self.sweep)
        return [dict(zip(keys, values)) for values in itertools.product(*(self.sweep[k] for k in keys))]


def parse_task_spec(data: Any) -> TaskSpec:
    """Check a decoded JSON task specification strictly and build its task(s).

    >>> parse_task_spec({"task": {"family": "qa2"}, "explore": {"steps": 0}})
    Traceback (most recent call last):
    rwtasks._spec.SpecError: spec.explore.steps: 0 is less than the minimum of 1
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema("task_spec"))
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        # oneOf failures say little: re-check against the branch the object was meant to be.
        if error.validator == "oneOf" and isinstance(error.instance, dict):
            branch = "family_task" if "family" in error.instance else "explicit_task"
            sub = jsonschema.Draft202012Validator(
                {**load_schema("task_spec"), "$ref": f"#/$defs/{branch}"}
            ).iter_errors(error.instance)
            inner = jsonschema.exceptions.best_match(sub)
            if inner is not None:
                raise SpecError(f"{_path([*error.absolute_path, *inner.absolute_path])}: {inner.message}")
        raise SpecError(f"{_path(error.absolute_path)}: {error.message}")
    task_data = data["task"]
    family = task_data.get("family")
    explicit = None
    params: dict[str, Any] = {}
    if family is None:
        explicit = _explicit_task(task_data)
    else:
        params = dict(task_data.get("params", {}))
    sweep = dict(data.get("sweep", {}))
    if sweep and explicit is not None:
        raise SpecError("spec.sweep: only a catalogue family has parameters to sweep")
    explore = {**EXPLORE_DEFAULTS, **data.get("explore", {})}
    for key in ("eta", "eps", "mu"):
        try:
            value = exact(explore[key], key)  # what rwsymbolic.derive reads: a number or one symbol
        except ValueError as err:
            raise SpecError(f"spec.explore.{key}: {err}") from None
        if is_numeric(value) and not value > 0:
            raise SpecError(f"spec.explore.{key}: {key}={value} must be > 0")
    train = {**TRAIN_DEFAULTS, **data.get("train", {})}
    name = data.get("name") or family or "task"
    spec = TaskSpec(name, family, params, explicit, sweep, explore, train, raw=data)
    spec.task()  # build once so a bad parameter fails here, naming its field
    for k, point in enumerate(spec.points()):
        try:
            spec.task(**point)
        except SpecError as err:
            values = ", ".join(f"{key}={value!r}" for key, value in point.items())
            raise SpecError(f"spec.sweep (point {k}: {values}): {err}") from None
    return spec


def _explicit_task(task: dict[str, Any]) -> FiniteTask:
    vocab = list(task["vocab"])
    index = {w: i for i, w in enumerate(vocab)}
    allowed = task.get("labels")
    for k, word in enumerate(allowed or []):
        if word not in index:
            raise SpecError(f"spec.task.labels[{k}]: {word!r} is not in vocab")
    sequences, labels, probs = [], [], []
    length = len(task["sequences"][0]["tokens"])
    for n, item in enumerate(task["sequences"]):
        where = f"spec.task.sequences[{n}]"
        if len(item["tokens"]) != length:
            raise SpecError(
                f"{where}.tokens: has {len(item['tokens'])} tokens, sequences[0] has {length} "
                "(all sequences have the same length N-1)"
            )
        ids = []
        for i, token in enumerate([*item["tokens"], item["label"]]):
            at = f"{where}.tokens[{i}]" if i < length else f"{where}.label"
            if isinstance(token, str):
                if token not in index:
                    raise SpecError(f"{at}: {token!r} is not in vocab")
                ids.append(index[token])
            elif not 0 <= token < len(vocab):
                raise SpecError(f"{at}: token id {token} is outside [0, {len(vocab)})")
            else:
                ids.append(int(token))
        if allowed is not None and vocab[ids[-1]] not in allowed:
            raise SpecError(f"{where}.label: {vocab[ids[-1]]!r} is not one of labels {allowed}")
        try:
            probs.append(exact_expr(item["prob"], "prob"))
        except ValueError as err:
            raise SpecError(f"{where}.prob: {err}") from None
        sequences.append(ids[:-1])
        labels.append(ids[-1])
    seen: dict[tuple[int, ...], int] = {}
    for n, seq in enumerate(sequences):
        key = (*seq, labels[n])
        if key in seen:
            raise SpecError(
                f"spec.task.sequences[{n}]: repeats sequences[{seen[key]}] (same tokens and label); "
                "merge them and add their probabilities"
            )
        seen[key] = n
    try:
        return FiniteTask(sequences, labels, probs, vocab=vocab, name="explicit")
    except ValueError as err:
        raise SpecError(f"spec.task.sequences: {err}") from None


def load_task_spec(path: str | Path) -> TaskSpec:
    """Read and parse a JSON task specification file (see ``parse_task_spec``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SpecError(f"spec file {str(path)!r} cannot be read: {err.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(
            f"spec file {str(path)!r} is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}"
        ) from None
    return parse_task_spec(data)
