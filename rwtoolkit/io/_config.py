"""The fields of a configuration file, declared once and checked with one line per error.

Every configuration a user writes (a task spec of ``rw explore``, a sweep spec of ``rw sweep``, the
``--configs`` of ``rw check --emit``) is read by ``read_data_file`` (exact numbers) and checked against a
tree of the fields below. A wrong value is one line::

    <file>: <field path>: <value as written> <problem>; allowed: <range or choices>

and an unknown key names that key alone, with the closest allowed key when there is one, and lists the
allowed keys separately: ``spec.json: task.parms: unknown key (did you mean params?); allowed: family,
params``. ``ConfigError`` is a ``ValueError``, so every command turns it into ``rw <cmd>: error: ...``
and exit code 2.

The vocabulary: :class:`Integer`, :class:`Rational` (an exact number, also written as text such as
``"1/3"``), :class:`Real` (a float64 setting, checked exactly and then rounded, refused when rounding
would change what it means: 1e-400 would train with 0), :class:`Choice`, :class:`Boolean`,
:class:`Text`, :class:`ListOf`, :class:`MappingOf`, :class:`Record`, :class:`Optional`,
:class:`Variants` and :class:`Custom`, and :class:`Anything` for a value checked later by its reader.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from rwtoolkit.io._read import Exact, Refused, exact_number, format_path  # noqa: F401 (Exact: the doctests)


class ConfigError(ValueError):
    """A configuration field that does not check: one line, ``<source>: <field path>: <what is wrong>``."""


@dataclass(frozen=True)
class At:
    """Where a value sits: the file (or a label such as ``spec`` for a dict given in Python) and its path."""

    source: str
    path: tuple = ()

    def __truediv__(self, key: object) -> At:
        return At(self.source, (*self.path, key))

    def __str__(self) -> str:
        return f"{self.source}: {format_path(self.path)}"

    def error(self, message: str) -> ConfigError:
        """``ConfigError("<source>: <path>: <message>")``."""
        return ConfigError(f"{self}: {message}")

    def bad(self, value: object, problem: str, allowed: str) -> ConfigError:
        """The one line of a wrong value: ``<source>: <path>: <value> <problem>; allowed: <allowed>``."""
        return self.error(f"{show(value)} {problem}; allowed: {allowed}")


def show(value: object, limit: int = 60) -> str:
    """A value as the user wrote it (numbers as their text, JSON spelling otherwise), cut at ``limit``.

    >>> show(Exact("1e-8")), show("fast"), show([1, Exact("0.5")]), show(None), show(True)
    ('1e-8', "'fast'", '[1, 0.5]', 'null', 'true')
    """
    if isinstance(value, str):
        text = repr(value)
    elif isinstance(value, bool) or value is None:
        text = json.dumps(value)
    elif isinstance(value, (int, Fraction, float)):
        text = str(value)
    elif isinstance(value, (list, tuple)):
        text = "[" + ", ".join(show(v, limit) for v in value) + "]"
    elif isinstance(value, Mapping):
        text = "{" + ", ".join(f"{k}: {show(v, limit)}" for k, v in value.items()) + "}"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kind(value: object) -> str | None:
    """What a value is when it is not a number: "is a list", "is text", ... (None for a number)."""
    if isinstance(value, bool):
        return "is true/false"
    if value is None:
        return "is null"
    if isinstance(value, (list, tuple)):
        return "is a list"
    if isinstance(value, Mapping):
        return "is a mapping"
    if isinstance(value, str):
        return "is text"
    if isinstance(value, (int, Fraction)):
        return None
    if isinstance(value, float):  # a float given in Python (files give exact numbers)
        return None if math.isfinite(value) else "is not a finite number"
    return f"is a {type(value).__name__}"


def _fraction(value: int | Fraction | float) -> Fraction:
    """The exact number: a float given in Python is read through its shortest form (0.1 is 1/10)."""
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


def suggestion(word: object, choices: Sequence[str]) -> str:
    """`` (did you mean X?)`` for the closest of ``choices`` to ``word``, or the empty string.

    >>> suggestion("parms", ["family", "params"]), suggestion("zzz", ["family", "params"])
    (' (did you mean params?)', '')
    >>> suggestion("probability", ["tokens", "label", "prob"])
    ' (did you mean prob?)'

    """
    text, names = str(word), [str(c) for c in choices]
    close = [n for n in names if n.lower() == text.lower()]  # P for p
    close = close or difflib.get_close_matches(text, names, n=1, cutoff=0.6)
    if not close:  # a longer or shorter form of a key: probability for prob, sigma for sigmas
        close = [
            n for n in names if len(min(n, text, key=len)) >= 3 and (n.startswith(text) or text.startswith(n))
        ]
    return f" (did you mean {close[0]}?)" if close else ""


class Field:
    """One field's check: ``check(value, at)`` returns the value in canonical form or raises ``ConfigError``."""

    #: What the field allows, in words (the ``allowed:`` part of its messages).
    allowed: str = "any value"

    def check(self, value: object, at: At) -> Any:
        raise NotImplementedError


class Anything(Field):
    """Any value, kept as written (checked later by the code that reads it)."""

    def __init__(self, allowed: str = "any value") -> None:
        self.allowed = allowed

    def check(self, value: object, at: At) -> Any:
        return value


def _range_words(low: object, high: object, low_open: bool, high_open: bool, noun: str) -> str:
    if low is not None and high is not None:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        return f"{noun} in {left}{low}, {high}{right}"
    if low is not None:
        return f"{noun} {'>' if low_open else '>='} {low}"
    if high is not None:
        return f"{noun} {'<' if high_open else '<='} {high}"
    return noun


def _outside(value: Fraction, low: object, high: object, low_open: bool, high_open: bool) -> bool:
    if low is not None and (value <= low if low_open else value < low):  # type: ignore[operator]
        return True
    return high is not None and (value >= high if high_open else value > high)  # type: ignore[operator]


class Integer(Field):
    """An integer in [low, high] (either end optional); an exact number with an integer value counts (1e3).

    >>> Integer(2).check(Exact("1e3"), At("f")), Integer(2).check(4, At("f"))
    (1000, 4)
    >>> Integer(2, 8).check(9, At("spec.json", ("steps",)))
    Traceback (most recent call last):
    rwtoolkit.io._config.ConfigError: spec.json: steps: 9 is out of range; allowed: an integer in 2..8
    """

    def __init__(self, low: int | None = None, high: int | None = None) -> None:
        self.low, self.high = low, high
        if low is not None and high is not None:
            self.allowed = f"an integer in {low}..{high}"
        else:
            self.allowed = _range_words(low, high, False, False, "an integer")

    def check(self, value: object, at: At) -> int:
        kind = _kind(value)
        if kind is not None:
            raise at.bad(value, kind, self.allowed)
        exact = _fraction(value)  # type: ignore[arg-type]
        if exact.denominator != 1:
            raise at.bad(value, "is not an integer", self.allowed)
        number = int(exact)
        if _outside(Fraction(number), self.low, self.high, False, False):
            raise at.bad(value, "is out of range", self.allowed)
        return number


def exact_text(text: str) -> Fraction:
    """The exact number a text writes: an integer, a decimal (``0.1``, ``1e-8``) or a fraction of two of them
    (``7/10``, ``1.5/2``); a ValueError saying why not (not a number, more than ``MAX_DIGITS`` digits, ...).

    >>> exact_text("7/10"), exact_text(" 1e-3 "), exact_text("1.5/2")
    (Fraction(7, 10), Fraction(1, 1000), Fraction(3, 4))
    >>> exact_text("1e-99999")
    Traceback (most recent call last):
    ValueError: has a decimal exponent beyond ±1000
    """
    parts = [part.strip() for part in text.strip().split("/")]
    if len(parts) > 2:
        raise ValueError("is not a number")
    values = []
    for part in parts:
        try:
            number = exact_number(part)
        except ValueError:  # not a decimal literal
            raise ValueError("is not a number") from None
        if isinstance(number, Refused):
            raise ValueError(number.problem)
        values.append(Fraction(number))
    if len(values) == 2 and values[1] == 0:
        raise ValueError("divides by zero")
    return values[0] / values[1] if len(values) == 2 else values[0]


def exact_value(value: object) -> Fraction | None:
    """The exact number ``value`` is (an int, an exact literal, or a text read by ``exact_text``), else None.

    >>> exact_value("7/10"), exact_value(" 1e-3 "), exact_value("p"), exact_value("1/0"), exact_value(True)
    (Fraction(7, 10), Fraction(1, 1000), None, None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    if isinstance(value, float):
        return _fraction(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            return exact_text(value)
        except ValueError:
            return None
    return None


class Rational(Field):
    """An exact number in a range: a number, or text such as "1/3" or "0.25" (``text=True``); a ``Fraction``.

    >>> Rational(0, 1).check("1/3", At("f")), Rational(0, 1).check(Exact("0.25"), At("f"))
    (Fraction(1, 3), Fraction(1, 4))
    >>> Rational(0, 1).check("3/2", At("spec", ("grid", "p", 0)))
    Traceback (most recent call last):
    rwtoolkit.io._config.ConfigError: spec: grid.p[0]: '3/2' is out of range; allowed: a number in [0, 1]
    """

    def __init__(
        self,
        low: object = None,
        high: object = None,
        low_open: bool = False,
        high_open: bool = False,
        text: bool = True,
        noun: str = "a number",
    ) -> None:
        self.low, self.high, self.low_open, self.high_open, self.text = low, high, low_open, high_open, text
        self.allowed = _range_words(low, high, low_open, high_open, noun)

    def exact(self, value: object, at: At) -> Fraction:
        if isinstance(value, str) and self.text:
            number = exact_value(value)
            if number is None:
                raise at.bad(value, "is not a number", self.allowed + ", e.g. 1/3 or 0.25")
        else:
            kind = _kind(value)
            if kind is not None:
                raise at.bad(value, kind, self.allowed)
            number = _fraction(value)  # type: ignore[arg-type]
        if _outside(number, self.low, self.high, self.low_open, self.high_open):
            raise at.bad(value, "is out of range", self.allowed)
        return number

    def check(self, value: object, at: At) -> Fraction:
        return self.exact(value, at)


class Real(Rational):
    """A float64 setting (a learning rate, a scale): checked exactly against its range, then rounded to the
    nearest float64, and refused when that float is not the same kind of value (0 for a non-zero number,
    infinite, or outside the range).

    >>> Real(0, low_open=True).check(Exact("0.1"), At("f"))
    0.1
    >>> Real(0, low_open=True).check(Exact("1e-400"), At("spec.yaml", ("fixed", "sigma")))
    Traceback (most recent call last):
    rwtoolkit.io._config.ConfigError: spec.yaml: fixed.sigma: 1e-400 is below the smallest float64 (about 4.9e-324) and would be 0; allowed: a number > 0
    """

    def check(self, value: object, at: At) -> float:  # type: ignore[override]
        number = self.exact(value, at)
        try:
            rounded = float(number)
        except OverflowError:
            rounded = math.inf
        if math.isinf(rounded):
            raise at.bad(value, "is above the largest float64 (about 1.8e308)", self.allowed)
        if rounded == 0 and number != 0:
            raise at.bad(value, "is below the smallest float64 (about 4.9e-324) and would be 0", self.allowed)
        if _outside(Fraction(rounded), self.low, self.high, self.low_open, self.high_open):
            raise at.bad(value, f"rounds to the float64 {rounded!r}, which is out of range", self.allowed)
        return rounded


class Choice(Field):
    """One of a fixed set of values (texts, or numbers compared exactly).

    >>> Choice("log", "squared").check("lgo", At("c.yaml", (0, "loss")))
    Traceback (most recent call last):
    rwtoolkit.io._config.ConfigError: c.yaml: [0].loss: 'lgo' is not one of the choices (did you mean log?); allowed: log, squared
    """

    def __init__(self, *choices: object) -> None:
        self.choices = choices
        self.allowed = ", ".join(str(c) for c in choices)

    def check(self, value: object, at: At) -> Any:
        if not isinstance(value, (list, dict, bool)):
            for choice in self.choices:
                if value == choice and not isinstance(choice, bool):
                    return choice
        hint = suggestion(value, [str(c) for c in self.choices]) if isinstance(value, str) else ""
        raise at.bad(value, f"is not one of the choices{hint}", self.allowed)


class Boolean(Field):
    """true or false."""

    allowed = "true or false"

    def check(self, value: object, at: At) -> bool:
        if not isinstance(value, bool):
            raise at.bad(value, _kind(value) or "is a number", self.allowed)
        return value


class Text(Field):
    """A non-empty text (at least ``min_length`` characters)."""

    def __init__(self, min_length: int = 1) -> None:
        self.min_length = min_length
        self.allowed = "text" if min_length == 0 else "a non-empty text"

    def check(self, value: object, at: At) -> str:
        if not isinstance(value, str):
            raise at.bad(value, _kind(value) or "is a number", self.allowed)
        if len(value) < self.min_length:
            raise at.bad(value, "is empty", self.allowed)
        return value


class ListOf(Field):
    """A list of ``item``s, ``min_items`` to ``max_items`` long, with no repeated item when ``unique``.

    >>> ListOf(Integer(0), max_items=2).check([1, 2, 3], At("f", ("seeds",)))
    Traceback (most recent call last):
    rwtoolkit.io._config.ConfigError: f: seeds: [1, 2, 3] has 3 items; allowed: a list of 1 to 2 items, each an integer >= 0
    """

    def __init__(
        self, item: Field, min_items: int = 1, max_items: int | None = None, unique: bool = False
    ) -> None:
        self.item, self.min_items, self.max_items, self.unique = item, min_items, max_items, unique
        size = (
            f"{min_items} to {max_items} items"
            if max_items is not None
            else f"at least {min_items} item{'s' if min_items != 1 else ''}"
        )
        self.allowed = f"a list of {size}, each {item.allowed}"

    def check(self, value: object, at: At) -> list:
        if not isinstance(value, list):
            raise at.bad(value, f"{_kind(value) or 'is a number'}, not a list", self.allowed)
        if len(value) < self.min_items or (self.max_items is not None and len(value) > self.max_items):
            raise at.bad(value, f"has {len(value)} item{'s' if len(value) != 1 else ''}", self.allowed)
        out = [self.item.check(v, at / i) for i, v in enumerate(value)]
        if self.unique:
            seen: dict[str, int] = {}
            for i, v in enumerate(out):
                key = json.dumps(v, sort_keys=True, default=str)
                if key in seen:
                    raise (at / i).bad(v, f"repeats item [{seen[key]}]", "each value once")
                seen[key] = i
        return out


class Optional(Field):
    """``null``, or a value of ``item``."""

    def __init__(self, item: Field) -> None:
        self.item = item
        self.allowed = f"null or {item.allowed}"

    def check(self, value: object, at: At) -> Any:
        return None if value is None else self.item.check(value, at)


def unknown_key(at: At, key: object, allowed: Sequence[str]) -> ConfigError:
    """The one line of a key that is not allowed: the key alone, the closest allowed key, then the allowed keys.

    >>> str(unknown_key(At("spec.json", ("task",)), "parms", ["family", "params"]))
    'spec.json: task.parms: unknown key (did you mean params?); allowed: family, params'
    """
    return (at / key).error(f"unknown key{suggestion(key, allowed)}; allowed: {', '.join(allowed)}")


class MappingOf(Field):
    """A mapping of keys (any text, or those of ``keys``) to values of ``value``, at least ``min_items``."""

    def __init__(self, value: Field, keys: Sequence[str] | None = None, min_items: int = 0) -> None:
        self.value, self.keys, self.min_items = value, keys, min_items
        self.allowed = f"a mapping {'{name: value}' if keys is None else 'of ' + ', '.join(keys)}"

    def check(self, value: object, at: At) -> dict:
        if not isinstance(value, Mapping):
            raise at.bad(value, f"{_kind(value) or 'is a number'}, not a mapping", self.allowed)
        if len(value) < self.min_items:
            raise at.bad(value, "is empty", self.allowed)
        out = {}
        for key, item in value.items():
            if not isinstance(key, str) or (self.keys is not None and key not in self.keys):
                if self.keys is None:
                    raise (at / key).error(f"{show(key)} is not a name; allowed: text keys")
                raise unknown_key(at, key, self.keys)
            out[key] = self.value.check(item, at / key)
        return out


class Record(Field):
    """A mapping with known keys: ``fields`` (key -> Field), those of ``required`` required, no other key.

    Returns the checked values of the keys present (defaults are the caller's).

    >>> r = Record({"family": Text(), "params": MappingOf(Anything())}, required=("family",))
    >>> r.check({"family": "circle", "parms": {}}, At("spec.json", ("task",)))
    Traceback (most recent call last):
    rwtoolkit.io._config.ConfigError: spec.json: task.parms: unknown key (did you mean params?); allowed: family, params
    >>> r.check({"params": {}}, At("spec.json", ("task",)))
    Traceback (most recent call last):
    rwtoolkit.io._config.ConfigError: spec.json: task: missing key family; required: family
    """

    def __init__(self, fields: Mapping[str, Field], required: Sequence[str] = ()) -> None:
        self.fields, self.required = dict(fields), tuple(required)
        self.allowed = f"a mapping of {', '.join(self.fields)}"

    def check(self, value: object, at: At) -> dict:
        if not isinstance(value, Mapping):
            raise at.bad(value, f"{_kind(value) or 'is a number'}, not a mapping", self.allowed)
        for key in value:
            if key not in self.fields:
                raise unknown_key(at, key, list(self.fields))
        for key in self.required:
            if key not in value:
                raise at.error(f"missing key {key}; required: {', '.join(self.required)}")
        return {key: self.fields[key].check(item, at / key) for key, item in value.items()}


@dataclass
class Variants(Field):
    """One of several shapes, told apart by ``(test, field)`` pairs tried in order; ``allowed`` says them all.

    >>> axis = Variants([(lambda v: isinstance(v, list), ListOf(Integer()))], "a list of integers")
    >>> axis.check("x", At("f", ("grid", "N")))
    Traceback (most recent call last):
    rwtoolkit.io._config.ConfigError: f: grid.N: 'x' is text; allowed: a list of integers
    """

    options: list[tuple[Callable[[object], bool], Field]]
    allowed: str = "any value"

    def check(self, value: object, at: At) -> Any:
        for test, option in self.options:
            if test(value):
                return option.check(value, at)
        raise at.bad(value, _kind(value) or "is a number", self.allowed)


@dataclass
class Custom(Field):
    """A field checked by ``function(value)``, which returns the canonical value or raises ``ValueError`` with
    the problem ("is not a symbol name"); the message adds the value and ``allowed``."""

    function: Callable[[object], Any]
    allowed: str = "any value"
    kinds: tuple[type, ...] = field(default=(int, Fraction, float, str))

    def check(self, value: object, at: At) -> Any:
        if isinstance(value, bool) or not isinstance(value, self.kinds):
            raise at.bad(value, _kind(value) or "is a number", self.allowed)
        try:
            return self.function(value)
        except ValueError as err:
            raise at.bad(value, str(err), self.allowed) from None


def check_config(data: object, schema: Field, source: str) -> Any:
    """``schema.check(data)`` at the top of ``source`` (a file's path, or a label such as ``spec``).

    >>> check_config({"steps": 0}, Record({"steps": Integer(1)}), "spec.yaml")
    Traceback (most recent call last):
    rwtoolkit.io._config.ConfigError: spec.yaml: steps: 0 is out of range; allowed: an integer >= 1
    """
    return schema.check(data, At(source))
