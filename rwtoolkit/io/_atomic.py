"""Write-to-temp-then-rename, once for every kind of output file."""

from __future__ import annotations

import errno
import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any


class WriteError(OSError):
    """Writing an output file failed (a full disk, a folder made read-only meanwhile); nothing was left behind.

    The message names the path and the reason in one line; ``errno`` is the underlying error's.
    """


def _temp_beside(path: Path) -> str:
    """Create an empty temporary file next to ``path`` with mode 0666 less the umask (what ``open`` gives).

    ``tempfile.mkstemp`` would create it 0600, and the rename keeps that mode: others could not read it.
    """
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return str(tmp)
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path.parent))


def _replace_atomically(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call ``write(tmp)`` on a temp file beside ``path``, then rename it onto ``path``.

    An ``OSError`` on the way becomes a one-line ``WriteError`` naming ``path``; the temp file is removed
    and an existing ``path`` is left as it was.
    """
    return write_files_atomic({Path(path): write})[0]


def write_files_atomic(writers: dict[Path, Callable[[str], None]]) -> list[Path]:
    """Write several files that belong together: each ``writer(tmp)`` fills a temporary file beside its
    path, in order, and only when all have succeeded are they renamed onto their paths (in order).

    A failure leaves every target as it was (the temporary files are removed) and raises a one-line
    ``WriteError`` for an ``OSError``. Returns the paths.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> def text(s):
    ...     return lambda tmp: pathlib.Path(tmp).write_text(s)
    >>> [p.read_text() for p in write_files_atomic({folder / "a": text("1"), folder / "b": text("2")})]
    ['1', '2']
    """
    temps: list[tuple[Path, str]] = []
    current = None
    try:
        for path, write in writers.items():
            current = Path(path)
            current.parent.mkdir(parents=True, exist_ok=True)
            tmp = _temp_beside(current)
            temps.append((current, tmp))
            write(tmp)
        for path, tmp in temps:
            current = path
            os.replace(tmp, path)
    except BaseException as err:
        for _, tmp in temps:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError) and not isinstance(err, WriteError):
            failure = WriteError(f"cannot write {current}: {err.strerror or err}")
            failure.errno = err.errno
            raise failure from None
        raise
    return [path for path, _ in temps]


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
