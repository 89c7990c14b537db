"""Output paths checked before any work: a command refuses a path it could not write, naming it and why.

``check_output_dir`` and ``check_output_file`` look at the file system only; they create nothing
(the folder is made by the atomic writer when the first file goes in). Writability is probed with an
anonymous temporary file in the nearest existing folder, so a read-only mount, a folder without
write permission and a file standing where a folder is needed are all caught the same way.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path


class OutputPathError(ValueError):
    """An output path that cannot be written; the message names the option, the path and the reason."""


def _label(path: str | os.PathLike, option: str | None) -> str:
    return f"{option} {os.fspath(path)}" if option else os.fspath(path)


def _nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists (a relative path ends at the current folder)."""
    while not (path.exists() or path.is_symlink()):
        if path.parent == path:
            break
        path = path.parent
    return path


def _unwritable_reason(folder: Path) -> str | None:
    """Why a new file cannot be created in the existing ``folder``, or None if it can."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        return err.strerror or str(err)
    return None


def _check_creatable_folder(folder: Path, label: str) -> None:
    """``folder`` exists and is writable, or can be created inside a writable existing ancestor."""
    base = _nearest_existing(folder)
    if base.is_symlink() and not base.exists():
        raise OutputPathError(f"{label}: {base} is a link to a missing target")
    if not base.is_dir():
        raise OutputPathError(f"{label}: {base} is a file, not a folder")
    reason = _unwritable_reason(base)
    if reason is not None:
        where = "" if base == folder else f" (its nearest existing folder {base})"
        raise OutputPathError(f"{label}: cannot write in {folder}{where}: {reason}")


def check_output_dir(path: str | os.PathLike, option: str | None = None, files: Sequence[str] = ()) -> Path:
    """Refuse a folder the command could not fill: an existing file, an unwritable folder or ancestor,
    or one of ``files`` (names written inside it) standing there as a folder. Returns the path.

    >>> import tempfile, pathlib
    >>> base = pathlib.Path(tempfile.mkdtemp())
    >>> (base / "taken").write_text("x")
    1
    >>> check_output_dir(base / "new" / "run", "--out") == base / "new" / "run"
    True
    >>> check_output_dir(base / "taken", "--out")
    Traceback (most recent call last):
    rwtoolkit.io._paths.OutputPathError: --out ...taken: exists and is a file, not a folder
    """
    folder = Path(path)
    label = _label(path, option)
    if folder.exists() and not folder.is_dir():
        raise OutputPathError(f"{label}: exists and is a file, not a folder")
    _check_creatable_folder(folder, label)
    for name in files:
        if (folder / name).is_dir():
            raise OutputPathError(
                f"{label}: {folder / name} is a folder, but the file {name} is written there"
            )
    return folder


def check_output_file(path: str | os.PathLike, option: str | None = None) -> Path:
    """Refuse a file the command could not write: an existing folder, a name ending in a separator,
    or a folder (or ancestor) that cannot be written. An existing file is replaced. Returns the path.

    >>> import tempfile, pathlib
    >>> base = pathlib.Path(tempfile.mkdtemp())
    >>> check_output_file(base / "sub" / "a.json", "--json").name
    'a.json'
    >>> check_output_file(base, "--json")
    Traceback (most recent call last):
    rwtoolkit.io._paths.OutputPathError: --json ...: is a folder; give a file name
    """
    text = os.fspath(path)
    label = _label(path, option)
    target = Path(text)
    if target.is_dir() or text.endswith((os.sep, "/")):
        raise OutputPathError(f"{label}: is a folder; give a file name")
    _check_creatable_folder(target.parent, label)
    return target
