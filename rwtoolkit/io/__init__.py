"""Output safety shared by every package: paths checked before work, a memory check, atomic files.

``check_output_dir`` / ``check_output_file`` refuse an output path that could not be written
(an existing file where a folder is needed and vice versa, a read-only or permission-denied folder)
before a command starts its work; ``check_memory`` refuses a request whose estimated memory exceeds
``available_memory()``, ``check_disk`` one whose files exceed the free disk. Each writer puts the content in a temporary file in the target's folder,
created with the user's umask, and then ``os.replace``s it onto the target (atomic on POSIX),
creating the folder if needed; a failure raises ``WriteError`` and leaves no partial file.
``load_schema(name)`` is the one loader of the JSON Schemas the toolkit ships (``SCHEMAS``).
``read_data_file`` is the one reader of the configuration files users write (JSON or YAML, every number
exactly as written: ``Exact``), and ``check_config`` checks them against a tree of fields (``Integer``,
``Rational``, ``Real``, ``Choice``, ``Boolean``, ``Text``, ``ListOf``, ``MappingOf``, ``Record``, ...),
each error one line naming the file, the field and what is allowed (``ConfigError``).
``Claim`` and ``Verdict`` are the one claim type and the one verdict vocabulary of every report
(proved / refuted / holds at the sizes checked / does not hold at the sizes checked / inconclusive), and a
``Wording`` is how a file format written before the vocabulary spells it (``DECISION_WORDS``, ``STUCK_WORDS``,
``CERTIFIED_WORDS``).
"""

import importlib as _importlib
import typing as _typing

from rwtoolkit.io._atomic import (
    WriteError,
    save_figure_atomic,
    write_bytes_atomic,
    write_files_atomic,
    write_json_atomic,
    write_text_atomic,
)
from rwtoolkit.io._memory import (
    MemoryEstimateError,
    available_memory,
    check_disk,
    check_memory,
    format_bytes,
    free_disk,
)
from rwtoolkit.io._paths import OutputPathError, check_output_dir, check_output_file
from rwtoolkit.io._schemas import (
    SCHEMAS,
    deprecated_attributes,
    load_schema,
    schema_deprecations,
    schema_path,
)

if _typing.TYPE_CHECKING:
    from rwtoolkit.io._claims import CERTIFIED_WORDS, DECISION_WORDS, STUCK_WORDS, Claim, Verdict, Wording
    from rwtoolkit.io._config import (
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
        Optional,
        Rational,
        Real,
        Record,
        Text,
        Variants,
        check_config,
        exact_text,
        exact_value,
        show,
        suggestion,
        unknown_key,
    )
    from rwtoolkit.io._read import MAX_DIGITS, Exact, format_path, plain, read_data_file

#: The reader of configuration files and its fields, imported on first use (``rw --help`` loads rwtoolkit.io for its
#: path checks, and the fields need ``dataclasses``, ``difflib`` and ``fractions``: about 25 ms).
_LAZY = {
    **dict.fromkeys(
        (
            "Anything",
            "At",
            "Boolean",
            "Choice",
            "ConfigError",
            "Custom",
            "Field",
            "Integer",
            "ListOf",
            "MappingOf",
            "Optional",
            "Rational",
            "Real",
            "Record",
            "Text",
            "Variants",
            "check_config",
            "exact_text",
            "exact_value",
            "show",
            "suggestion",
            "unknown_key",
        ),
        "rwtoolkit.io._config",
    ),
    **dict.fromkeys(("MAX_DIGITS", "Exact", "format_path", "plain", "read_data_file"), "rwtoolkit.io._read"),
    **dict.fromkeys(
        ("CERTIFIED_WORDS", "DECISION_WORDS", "STUCK_WORDS", "Claim", "Verdict", "Wording"),
        "rwtoolkit.io._claims",
    ),
}


def __getattr__(name: str) -> _typing.Any:
    if name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rwtoolkit.io' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CERTIFIED_WORDS",
    "DECISION_WORDS",
    "MAX_DIGITS",
    "SCHEMAS",
    "STUCK_WORDS",
    "Anything",
    "At",
    "Boolean",
    "Choice",
    "Claim",
    "ConfigError",
    "Custom",
    "Exact",
    "Field",
    "Integer",
    "ListOf",
    "MappingOf",
    "Optional",
    "Rational",
    "Real",
    "Record",
    "Text",
    "Variants",
    "Verdict",
    "Wording",
    "MemoryEstimateError",
    "OutputPathError",
    "WriteError",
    "available_memory",
    "check_config",
    "check_disk",
    "check_memory",
    "check_output_dir",
    "check_output_file",
    "deprecated_attributes",
    "exact_text",
    "exact_value",
    "format_bytes",
    "format_path",
    "free_disk",
    "load_schema",
    "plain",
    "read_data_file",
    "schema_deprecations",
    "schema_path",
    "save_figure_atomic",
    "show",
    "suggestion",
    "unknown_key",
    "write_bytes_atomic",
    "write_files_atomic",
    "write_json_atomic",
    "write_text_atomic",
]
