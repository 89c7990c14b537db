"""Memory available to this process and free disk, and the refusals used before allocating or writing much."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


class MemoryEstimateError(ValueError):
    """A request whose memory estimate exceeds the memory available; the message gives both and an alternative."""


def available_memory() -> int | None:
    """Bytes a new allocation can use now: ``MemAvailable`` of /proc/meminfo (Linux), else the free
    physical pages from ``os.sysconf``; None when neither is known.

    >>> available_memory() is None or available_memory() > 0
    True
    """
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # the value is in kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def format_bytes(n: float) -> str:
    """A byte count in binary units, three significant digits.

    >>> format_bytes(1536), format_bytes(160e9)
    ('1.5 KiB', '149 GiB')
    """
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def check_memory(estimate: int, what: str, alternative: str, available: int | None = None) -> None:
    """Refuse ``what`` before any allocation when ``estimate`` bytes exceed the memory available.

    ``available`` defaults to ``available_memory()``; when that is unknown nothing is refused.

    >>> check_memory(2 * 2**30, "rw train", "use a smaller --train-size", available=2**30)
    Traceback (most recent call last):
    rwtoolkit.io._memory.MemoryEstimateError: rw train needs about 2 GiB of memory, more than the 1 GiB available: use a smaller --train-size
    """
    free = available_memory() if available is None else available
    if free is not None and estimate > free:
        raise MemoryEstimateError(
            f"{what} needs about {format_bytes(estimate)} of memory, more than the {format_bytes(free)} available: "
            f"{alternative}"
        )


def free_disk(path: str | os.PathLike) -> tuple[Path, int]:
    """The folder where ``path`` (a file or folder, possibly not created yet) would live (its nearest
    existing ancestor) and the bytes free there.

    >>> import tempfile
    >>> folder, free = free_disk(tempfile.mkdtemp() + "/not/yet")
    >>> folder.exists() and free > 0
    True
    """
    folder = Path(path).resolve()
    while not folder.exists():
        folder = folder.parent
    return folder, shutil.disk_usage(folder).free


def check_disk(need: int, path: str | os.PathLike, what: str, alternative: str) -> None:
    """Refuse ``what`` before writing when ``need`` bytes exceed the free disk where ``path`` (a file or
    folder, possibly not created yet: its nearest existing ancestor) lives.

    >>> import tempfile
    >>> check_disk(10**20, tempfile.mkdtemp() + "/out", "rw check --emit", "use fewer configurations")
    Traceback (most recent call last):
    ValueError: rw check --emit writes about ... TiB, more than the ... free in ...: use fewer configurations
    """
    folder, free = free_disk(path)
    if need > free:
        raise ValueError(
            f"{what} writes about {format_bytes(need)}, more than the {format_bytes(free)} free in {folder}: "
            f"{alternative}"
        )
