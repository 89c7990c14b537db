"""Write-to-temp-then-rename, once for every kind of output file."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _replace_atomically(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call ``write(tmp)`` on a temp file beside ``path``, then rename it onto ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_bytes_atomic(data: bytes, path: str | os.PathLike) -> Path:
    """Write ``data`` to ``path`` atomically; returns the path."""

    def write(tmp: str) -> None:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())

    return _replace_atomically(path, write)


def write_text_atomic(text: str, path: str | os.PathLike) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "sub" / "a.txt"
    >>> write_text_atomic("hi\\n", target).read_text()
    'hi\\n'
    """
    return write_bytes_atomic(text.encode("utf-8"), path)


def write_json_atomic(obj: Any, path: str | os.PathLike) -> Path:
    """Write ``obj`` as JSON (sorted keys, indent 1, no NaN/inf) atomically: same object, same bytes."""
    try:
        text = json.dumps(obj, sort_keys=True, indent=1, allow_nan=False) + "\n"
    except ValueError as err:  # NaN or inf somewhere in obj: never write it
        raise ValueError(f"refusing to write {path}: {err}") from None
    return write_text_atomic(text, path)


def save_figure_atomic(fig: Any, path: str | os.PathLike, **savefig_kwargs: Any) -> Path:
    """Save a matplotlib figure as PNG atomically; ``savefig_kwargs`` go to ``fig.savefig``."""
    return _replace_atomically(path, lambda tmp: fig.savefig(tmp, format="png", **savefig_kwargs))
