"""Reading the JSON or YAML files users write (specs, configuration lists), with one-line errors."""

from __future__ import annotations

import json
import os
from pathlib import Path


def read_data_file(path: str | os.PathLike, label: str) -> object:
    """The content of a JSON file, or of a YAML file (``.yaml``, ``.yml``); a one-line ValueError
    naming ``label`` and the path when it cannot be read or parsed.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.yaml"
    >>> _ = p.write_text("- {a: 1}\\n")
    >>> read_data_file(p, "--configs")
    [{'a': 1}]
    >>> _ = p.write_text("- {a: 1\\n")
    >>> read_data_file(p, "--configs")
    Traceback (most recent call last):
    ValueError: --configs ...c.yaml is not valid YAML: while parsing a flow mapping
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

            return yaml.safe_load(text)
        return json.loads(text)
    except Exception as err:  # any parse error becomes one line naming the file
        line = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ValueError(f"{label} {p} is not valid {'YAML' if yaml_file else 'JSON'}: {line}") from None
