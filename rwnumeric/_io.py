"""Atomic, reproducible JSON output."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_json_atomic(obj: object, path: str | os.PathLike) -> None:
    """Write ``obj`` as JSON (sorted keys, no NaN/inf allowed) to ``path`` via a temp file and os.replace.

    Same object ⇒ same bytes; readers never see a half-written file.
    """
    path = Path(path)
    try:
        text = json.dumps(obj, sort_keys=True, indent=1, allow_nan=False) + "\n"
    except ValueError as err:  # NaN or inf somewhere in obj: never write it
        raise ValueError(f"refusing to write {path}: {err}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
