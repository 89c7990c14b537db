"""Reading the JSON or YAML files users write (specs, configuration lists): exact numbers, one-line errors.

Every number comes back as the exact value the user wrote: an integer literal as an ``int``, any other
number literal (``0.1``, ``1e-8``, ``2.50``) as an :class:`Exact`, a ``Fraction`` of exactly the decimal
written that remembers its text (``Exact("1e-400") == Fraction(1, 10**400)``), never a float in between.
In YAML, ``1e-8`` is a number (YAML 1.2; PyYAML's YAML 1.1 rules read it as the text "1e-8"), integers are
decimal, ``0x..`` or ``0o..`` (a leading zero does not make an octal number), and ``true``/``false``,
``yes``/``no``, ``on``/``off`` are booleans as in YAML 1.1. What no configuration field accepts is refused
by ``read_data_file`` itself, with the file and the field's path: ``.inf``, ``.nan``, ``NaN``,
``Infinity``, a number of more than ``MAX_DIGITS`` digits or a decimal exponent beyond ±``MAX_DIGITS``,
and a key given twice in one mapping.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

#: Most digits a number literal may have, and the largest decimal exponent (in absolute value): an exact
#: value keeps every digit, so 1e-400 is 1/10^400 and 1e1000000000 would be a billion-digit integer.
MAX_DIGITS = 1000

_DECIMAL = re.compile(r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?")


class Exact(Fraction):
    """A number read from a configuration file: exactly the decimal written, and the text it was written as.

    ``str`` and ``repr`` give the text (what error messages repeat), arithmetic gives plain ``Fraction``s.

    >>> x = Exact("1e-8")
    >>> x == Fraction(1, 10**8), str(x), x * 2
    (True, '1e-8', Fraction(1, 50000000))
    """

    __slots__ = ("literal",)
    literal: str

    def __new__(cls, literal: str) -> Exact:
        self = super().__new__(cls, literal.replace("_", ""))
        self.literal = literal
        return self

    def __repr__(self) -> str:
        return self.literal

    def __str__(self) -> str:
        return self.literal

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return (type(self), (self.literal,))

    def __copy__(self) -> Exact:
        return self

    def __deepcopy__(self, memo: object) -> Exact:
        return self


class Refused:
    """A literal no field accepts (``.inf``, a number too long, a repeated key), reported with its path."""

    def __init__(self, text: str, problem: str, allowed: str) -> None:
        self.text, self.problem, self.allowed = text, problem, allowed


_FINITE = "a finite number (the field's own range applies)"
_SHORT = f"numbers of at most {MAX_DIGITS} digits with a decimal exponent within ±{MAX_DIGITS}"


def exact_number(text: str) -> int | Exact | Refused:
    """The exact value of a number literal (``int`` when written as an integer), or why it is refused.

    >>> exact_number("10"), exact_number("0.10"), exact_number("1e-400") == Fraction(1, 10**400)
    (10, 0.10, True)
    >>> exact_number("1e99999").problem
    'has a decimal exponent beyond ±1000'
    """
    plain = text.replace("_", "")
    mantissa, _, exponent = plain.lower().partition("e")
    digits = sum(c.isdigit() for c in mantissa)
    if digits > MAX_DIGITS:
        return Refused(text, f"has {digits} digits, more than {MAX_DIGITS}", _SHORT)
    if exponent and (len(exponent.lstrip("+-")) > 6 or abs(int(exponent)) > MAX_DIGITS):
        return Refused(text, f"has a decimal exponent beyond ±{MAX_DIGITS}", _SHORT)
    if re.fullmatch(r"[-+]?[0-9]+", plain):
        return int(plain)
    return Exact(text)


def _not_finite(text: str) -> Refused:
    return Refused(text, "is not a finite number", _FINITE)


def _pairs(pairs: list[tuple[Any, Any]]) -> dict:
    """A mapping from its (key, value) pairs; a key given twice is refused (its value is marked)."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            out[key] = Refused(str(key), "is given twice in the same mapping", "each key once")
        else:
            out[key] = value
    return out


def _yaml_loader() -> type:
    """A ``yaml.SafeLoader`` whose numbers are exact (module text) and whose repeated keys are marked."""
    import yaml

    float_tag, int_tag = "tag:yaml.org,2002:float", "tag:yaml.org,2002:int"

    class ExactLoader(yaml.SafeLoader):
        pass

    ExactLoader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in (float_tag, int_tag)]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    ExactLoader.add_implicit_resolver(
        int_tag, re.compile(r"^(?:[-+]?[0-9][0-9_]*|0x[0-9a-fA-F_]+|0o[0-7_]+)$"), list("-+0123456789")
    )
    ExactLoader.add_implicit_resolver(
        float_tag,
        re.compile(rf"^(?:{_DECIMAL.pattern}|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
        list("-+0123456789."),
    )

    def number(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> object:
        text = loader.construct_scalar(node)
        if re.fullmatch(r"0x[0-9a-fA-F_]+", text):
            return int(text.replace("_", ""), 16)
        if re.fullmatch(r"0o[0-7_]+", text):
            return int(text[2:].replace("_", ""), 8)
        if _DECIMAL.fullmatch(text):
            return exact_number(text)
        if text.lstrip("+-").lower() in (".inf", ".nan"):
            return _not_finite(text)
        return Refused(text, "is not a number", _FINITE)  # an explicit !!int / !!float tag on text

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Iterator[dict]:
        data: dict = {}
        yield data
        loader.flatten_mapping(node)
        pairs = []
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "a key that is a list or a mapping", key_node.start_mark
                ) from None
            pairs.append((key, loader.construct_object(value_node, deep=True)))
        data.update(_pairs(pairs))

    ExactLoader.add_constructor(float_tag, number)
    ExactLoader.add_constructor(int_tag, number)
    ExactLoader.add_constructor("tag:yaml.org,2002:map", mapping)
    return ExactLoader


def _located(data: object, path: tuple = ()) -> Iterator[tuple[tuple, Refused]]:
    """Every refused literal of ``data`` with its path (keys and list indices), in file order."""
    if isinstance(data, Refused):
        yield path, data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from _located(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _located(value, (*path, i))


def format_path(path: tuple) -> str:
    """A field's path as written in messages: ``task.params.K``, ``grid.N[0]``, ``(top level)``.

    >>> format_path(("grid", "N", 0)), format_path(("adjacency", "a b")), format_path(())
    ('grid.N[0]', "adjacency['a b']", '(top level)')
    """
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out or "(top level)"


def read_data_file(path: str | os.PathLike, label: str) -> object:
    """The content of a JSON file, or of a YAML file (``.yaml``, ``.yml``), with exact numbers (module text);
    a one-line ValueError naming ``label`` and the path when it cannot be read or parsed, and naming the field
    of a literal no field accepts.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.yaml"
    >>> _ = p.write_text("- {a: 1, b: 1e-8, c: 0.10}\\n")
    >>> read_data_file(p, "--configs")
    [{'a': 1, 'b': 1e-8, 'c': 0.10}]
    >>> _ = p.write_text("- {a: 1\\n")
    >>> read_data_file(p, "--configs")
    Traceback (most recent call last):
    ValueError: --configs ...c.yaml is not valid YAML: while parsing a flow mapping
    >>> _ = p.write_text("- {a: .inf}\\n")
    >>> read_data_file(p, "--configs")
    Traceback (most recent call last):
    ValueError: ...c.yaml: [0].a: .inf is not a finite number; allowed: a finite number (the field's own range applies)
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{label} {p} is not a file")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{label} {p} cannot be read: {getattr(err, 'strerror', None) or err}") from None
    yaml_file = p.suffix in (".yaml", ".yml")
    try:
        if yaml_file:
            import yaml

            data = yaml.load(text, Loader=_yaml_loader())  # noqa: S506 (a SafeLoader subclass)
        else:
            data = json.loads(
                text,
                parse_float=exact_number,
                parse_int=exact_number,
                parse_constant=_not_finite,
                object_pairs_hook=_pairs,
            )
    except Exception as err:  # any parse error becomes one line naming the file
        line = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ValueError(f"{label} {p} is not valid {'YAML' if yaml_file else 'JSON'}: {line}") from None
    for where, refused in _located(data):
        raise ValueError(
            f"{p}: {format_path(where)}: {refused.text} {refused.problem}; allowed: {refused.allowed}"
        )
    return data


def plain(data: object) -> object:
    """``data`` with every :class:`Exact` as JSON writes it without changing its value: an integer as an
    ``int`` (2.0 and 1e3 are 2 and 1000), else the float whose shortest form is the same decimal (0.1 stays
    0.1), else the text written ("1e-400", which the toolkit's exact readers read exactly: ``rwtoolkit.tasks.exact``,
    ``rwtoolkit.io.exact_value``); for the values a builder reads and the copies kept in output files.

    >>> plain({"a": [Exact("0.1"), Exact("1e-400"), Exact("2.0"), 3]})
    {'a': [0.1, '1e-400', 2, 3]}
    """
    if isinstance(data, Exact):
        if data.denominator == 1:
            return int(data)
        try:
            value = float(data)
        except OverflowError:
            return data.literal
        return value if Fraction(repr(value)) == data else data.literal
    if isinstance(data, dict):
        return {key: plain(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [plain(value) for value in data]
    return data
