"""Oracle files with numpy alone: the JSON header's doubles and the per-input columns (``.npz``).

This module imports only the standard library and numpy, so that a frozen fixture (``rw check
--emit``) can carry a copy of it and read its oracle files where the toolkit, SymPy and python-flint
are not installed. It is the one reader of the format's numbers: ``rwsymbolic.load_oracle`` reads the
doubles through it and adds the exact values on request.

The per-input file is a zip of deflated ``.npy`` members (what ``numpy.savez_compressed`` writes, so
``numpy.load`` opens it), written member by member in chunks of inputs: the population (``tokens``,
``labels``, ``weight``, ``weight_error``, ``weight_exact``) and, per step t, ``S/t``, ``f/t``,
``logits/t``, each with ``…_error/t`` (a certified bound on the distance of each double to the exact
value) and ``…_exact/t`` (the index of the exact value in the header's node table, -1 where it is
not written). Members carry no time stamps: the same oracle always gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

#: The format written and its version: 3 is version 2's layout under the toolkit's one style of format
#: names (``rw-…``), with the model's own parameter names (any model of the registry, not only the paper's).
FORMAT = "rw-oracle"
VERSION = 3
#: Every (format, version) this module reads: 1 exact strings, 2 node table + columns, 3 as 2, any model.
READS = (("rwtoolkit-derive-oracle", 1), ("rwtoolkit-derive-oracle", 2), (FORMAT, VERSION))
#: Fixed member time stamp (zip's earliest date): no clock in the bytes.
_EPOCH = (1980, 1, 1, 0, 0, 0)
#: zlib level of the members: 1 is fast and already shrinks the columns 10-15x (values repeat across
#: the inputs of a group and the rotations of a walk).
_LEVEL = 1


def per_input_path(header: str | os.PathLike) -> Path:
    """The per-input file beside a header: ``oracle.json`` -> ``oracle.inputs.npz``.

    >>> per_input_path("out/oracle.json").name, per_input_path("o").name
    ('oracle.inputs.npz', 'o.inputs.npz')
    """
    header = Path(header)
    stem = header.name[: -len(".json")] if header.name.endswith(".json") else header.name
    return header.with_name(stem + ".inputs.npz")


class ColumnWriter:
    """Writes ``.npy`` members into a zip (deflated), each member streamed in chunks.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "x.npz"
    >>> with ColumnWriter(path) as out:
    ...     with out.member("a/0", (2, 3), "<f8") as put:
    ...         put(np.ones((1, 3))); put(np.zeros((1, 3)))
    >>> np.load(path)["a/0"].tolist()
    [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self._zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True)
        self.members: list[str] = []

    def __enter__(self) -> ColumnWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._zip.close()

    def member(self, name: str, shape: tuple[int, ...], dtype: str) -> _Member:
        """A context whose value ``put(chunk)`` appends rows; the rows must add up to ``shape``."""
        self.members.append(name)
        return _Member(self._zip, name, tuple(int(s) for s in shape), np.dtype(dtype))


class _Member:
    def __init__(self, zf: zipfile.ZipFile, name: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.zf, self.name, self.shape, self.dtype = zf, name, shape, dtype
        self.written = 0

    def __enter__(self) -> Any:
        info = zipfile.ZipInfo(self.name + ".npy", date_time=_EPOCH)
        info.compress_type = zipfile.ZIP_DEFLATED
        # The level's slot is ``_compresslevel`` up to Python 3.12, ``compress_level`` from 3.13.
        slot = "compress_level" if "compress_level" in zipfile.ZipInfo.__slots__ else "_compresslevel"
        setattr(info, slot, _LEVEL)
        info.external_attr = 0o644 << 16
        self.handle = self.zf.open(info, "w", force_zip64=True)
        header = {
            "descr": np.lib.format.dtype_to_descr(self.dtype),
            "fortran_order": False,
            "shape": self.shape,
        }
        np.lib.format.write_array_header_1_0(self.handle, header)

        def put(chunk: np.ndarray) -> None:
            data = np.ascontiguousarray(chunk, dtype=self.dtype)
            self.written += data.size
            self.handle.write(data.tobytes())

        return put

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.handle.close()
        expected = int(np.prod(self.shape, dtype=np.int64))
        if exc_type is None and self.written != expected:
            raise ValueError(f"member {self.name}: {self.written} values written, the shape needs {expected}")


def sha256_of(path: str | os.PathLike) -> str:
    """The SHA-256 digest of a file, read in 16 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


def read_header(path: str | os.PathLike) -> dict:
    """The JSON header of an oracle, checked for its format and a version this module reads."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a readable oracle file ({err})") from None
    if not isinstance(data, dict) or (data.get("format"), data.get("version")) not in READS:
        known = ", ".join(f"{name} version {version}" for name, version in READS)
        raise ValueError(f"{path}: not an oracle file this reader knows ({known})")
    return data


def step_doubles(header: dict, path: str | os.PathLike = "oracle") -> list[dict[str, np.ndarray]]:
    """Per step, every per-step value as a float64 array (any version); refuses symbolic values.

    Version 1's per-input values (inside the JSON) are included under their names, as before.
    """
    steps = []
    for entry in header["steps"]:
        out: dict[str, Any] = {"t": int(entry["t"])}
        fields = {k: v for k, v in entry.items() if k not in ("t", "per_input", "verdict")}
        if header["version"] == 1:
            fields.update(entry.get("per_input", {}))
        for key, value in fields.items():
            if value["float"] is None:
                raise ValueError(
                    f"{path}: step {entry['t']} {key} is symbolic (float is null); write the oracle "
                    "with numeric p, eta, eps, mu and a concrete --loss"
                )
            out[key] = np.asarray(value["float"], dtype=np.float64)
        steps.append(out)
    return steps


class PerInput:
    """The per-input columns of a version-2 or -3 oracle, opened lazily (``numpy.load`` of the ``.npz``).

    ``column(name)`` gives one member as an array: the population (``tokens``, ``labels``,
    ``weight``) and per step ``"S/2"``, ``"S_error/2"``, ``"S_exact/2"`` and so on.
    """

    def __init__(self, header_path: str | os.PathLike, header: dict, verify: bool = False) -> None:
        info = header.get("per_input")
        if not info:
            raise ValueError(f"{header_path}: the oracle has no per-input values (written without them)")
        self.path = Path(header_path).with_name(info["file"])
        if not self.path.is_file():
            raise ValueError(f"{header_path}: its per-input file {self.path} is missing")
        size = self.path.stat().st_size
        if size != info["bytes"]:
            raise ValueError(
                f"{self.path}: {size} bytes, the header {header_path} says {info['bytes']}: not the pair written together"
            )
        if verify and sha256_of(self.path) != info["sha256"]:
            raise ValueError(f"{self.path}: its SHA-256 differs from the one in {header_path}")
        self.info = info
        self._npz: Any = None

    @property
    def members(self) -> list[str]:
        return list(self.info["members"])

    def column(self, name: str) -> np.ndarray:
        if name not in self.info["members"]:
            raise KeyError(f"{self.path} has no member {name!r}; it has {', '.join(self.info['members'])}")
        if self._npz is None:
            self._npz = np.load(self.path, allow_pickle=False)
        return np.asarray(self._npz[name])

    def steps(self, quantity: str) -> Iterator[np.ndarray]:
        """``quantity`` (S, f, logits) at t = 0, 1, … as float64 arrays."""
        for t in range(int(self.info["steps"])):
            yield self.column(f"{quantity}/{t}")

    def close(self) -> None:
        if self._npz is not None:
            self._npz.close()
            self._npz = None
