"""Oracle files with numpy alone: the JSON header's doubles and the per-input columns (``.npz``).

This module imports only the standard library and numpy, so that a frozen fixture (``rw check
--emit``) can carry a copy of it and read its oracle files where the toolkit, SymPy and python-flint
are not installed. It is the one reader of the format's numbers: ``rwtoolkit.engines.exact.load_oracle`` reads the
doubles through it and adds the exact values on request.

The per-input file is a zip of deflated ``.npy`` members (what ``numpy.savez_compressed`` writes, so
``numpy.load`` opens it), written member by member in chunks of inputs: the population (``tokens``,
``labels``, ``weight``, ``weight_error``, ``weight_exact``) and, per step t, ``S/t``, ``f/t``,
``logits/t`` (a sequence model's: ``token_logits/t``, n × L × K, and ``f/t``; the header's
``model.per_input`` names them with their shapes), each with ``…_error/t`` (a certified bound on the
distance of each double to the exact value) and ``…_exact/t`` (the index of the exact value in the
header's node table, -1 where it is not written). Members carry no time stamps: the same oracle always gives the same bytes.

A damaged file (cut or unreadable JSON, a missing or mistyped field, values of the wrong shape, a
missing, cut or altered ``.npz``, a member of the wrong shape or dtype) raises ``OracleFormatError``,
one line naming the file and what is wrong, whichever copy of this module reads it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
import zipfile
import zlib
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


class OracleFormatError(ValueError):
    """A damaged or truncated oracle file (JSON header or per-input ``.npz``) or fixture manifest.

    The message is one line: the file, where in it, and what is wrong. A ``ValueError``, so code that
    caught the reader's ``ValueError`` before still catches it.
    """


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
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise OracleFormatError(f"{path}: not a readable oracle file ({err})") from None
    if not isinstance(data, dict) or (data.get("format"), data.get("version")) not in READS:
        known = ", ".join(f"{name} version {version}" for name, version in READS)
        raise OracleFormatError(f"{path}: not an oracle file this reader knows ({known})")
    return data


def _shape(value: object, where: str) -> tuple[int, ...]:
    """A shape as the header writes it (a list of sizes), or OracleFormatError naming ``where``."""
    if not isinstance(value, list) or not all(type(n) is int and n >= 0 for n in value):
        raise OracleFormatError(f"{where}: expected a shape (a list of sizes), found {value!r:.60}")
    return tuple(value)


def value_shapes(header: dict, path: str | os.PathLike = "oracle") -> dict[str, tuple[int, ...]]:
    """The shape of each per-step value the header's model declares (its parameters and read-outs);
    empty for a version-1 file, which declares none."""
    model = header.get("model")
    if header.get("version") == 1 and model is None:
        return {}
    shapes: dict[str, tuple[int, ...]] = {}
    for part in ("parameters", "readouts"):
        table = model.get(part) if isinstance(model, dict) else None
        if not isinstance(table, dict):
            raise OracleFormatError(f"{path}: model.{part} is missing or not an object of shapes")
        shapes.update({k: _shape(v, f"{path}: model.{part}.{k}") for k, v in table.items()})
    return shapes


def doubles(value: object, where: str, shape: tuple[int, ...] | None) -> np.ndarray:
    """``value`` (a JSON number or nested list) as a float64 array of ``shape`` (when known), or
    OracleFormatError naming ``where``."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise OracleFormatError(f"{where}: not a number or an array of numbers") from None
    if shape is not None and array.shape != shape:
        raise OracleFormatError(f"{where}: shape {array.shape}, the model declares {shape}")
    return array


def _steps(header: dict, path: str | os.PathLike) -> list[dict]:
    steps = header.get("steps")
    if not isinstance(steps, list) or not steps:
        raise OracleFormatError(f"{path}: 'steps' is missing or empty (expected a list of steps t = 0..T)")
    for t, entry in enumerate(steps):
        if not isinstance(entry, dict) or entry.get("t") != t:
            raise OracleFormatError(f"{path}: steps[{t}] is not the object of step t = {t}")
    return steps


def step_doubles(header: dict, path: str | os.PathLike = "oracle") -> list[dict[str, np.ndarray]]:
    """Per step, every per-step value as a float64 array (any version); refuses symbolic values.

    Version 1's per-input values (inside the JSON) are included under their names, as before. A value
    that is not an object with a ``float``, not numbers, or not of the shape the model declares raises
    ``OracleFormatError``; a symbolic value (``float`` null) a ``ValueError`` saying how to write one.
    """
    shapes = value_shapes(header, path)
    out_steps = []
    for t, entry in enumerate(_steps(header, path)):
        out: dict[str, Any] = {"t": t}
        fields = {k: v for k, v in entry.items() if k not in ("t", "per_input", "verdict")}
        if header["version"] == 1:
            per_input = entry.get("per_input", {})
            if not isinstance(per_input, dict):
                raise OracleFormatError(f"{path}: steps[{t}].per_input is not an object")
            fields.update(per_input)
        for key, value in fields.items():
            where = f"{path}: steps[{t}].{key}"
            if not isinstance(value, dict) or "float" not in value:
                raise OracleFormatError(f"{where}: expected an object with exact, float and error")
            if value["float"] is None:
                raise ValueError(
                    f"{path}: step {t} {key} is symbolic (float is null); write the oracle "
                    "with numeric p, eta, eps, mu and a concrete --loss"
                )
            out[key] = doubles(value["float"], f"{where}.float", shapes.get(key))
        out_steps.append(out)
    return out_steps


#: The per-input file's fields the reader needs, with their types.
_INFO_FIELDS = {
    "file": str,
    "bytes": int,
    "members": list,
    "rows": int,
    "steps": int,
    "sha256": str,
    "floats": bool,
}
#: Members of integer dtype: node indices and the population's tokens and labels; every other is floats.
_INTEGER_MEMBERS = ("tokens", "labels")
#: Bytes read from a member at a time.
_CHUNK = 1 << 24
#: The population's members, and the three members of each per-input value at each step.
_POPULATION = ("tokens", "labels", "weight", "weight_error", "weight_exact")
_PARTS = ("", "_error", "_exact")


class PerInput:
    """The per-input columns of a version-2 or -3 oracle, read member by member from the ``.npz``.

    ``column(name)`` gives one member as an array: the population (``tokens``, ``labels``,
    ``weight``) and per step ``"S/2"``, ``"S_error/2"``, ``"S_exact/2"`` and so on. Each member's shape
    and dtype are checked against the header (``OracleFormatError`` when they differ, when the file is
    missing, cut or altered, or when it lacks a member the header lists).
    """

    def __init__(self, header_path: str | os.PathLike, header: dict, verify: bool = False) -> None:
        where = f"{header_path}: per_input"
        if "per_input" not in header:
            raise OracleFormatError(
                f"{where} is missing (null for an oracle written without per-input values)"
            )
        info = header["per_input"]
        if info is None:
            raise ValueError(f"{header_path}: the oracle has no per-input values (written without them)")
        if not isinstance(info, dict):
            raise OracleFormatError(f"{where} is not an object")
        for key, kind in _INFO_FIELDS.items():
            value = info.get(key)
            if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
                raise OracleFormatError(f"{where}.{key} is missing or not of type {kind.__name__}")
        if not all(isinstance(m, str) for m in info["members"]) or "/" in info["file"]:
            raise OracleFormatError(f"{where}: members must be names and file a name beside the header")
        steps = len(_steps(header, header_path))
        if info["steps"] != steps:
            raise OracleFormatError(f"{where}.steps is {info['steps']}, the header has {steps} steps")
        self.path = Path(header_path).with_name(info["file"])
        if not self.path.is_file():
            raise OracleFormatError(f"{header_path}: its per-input file {self.path} is missing")
        size = self.path.stat().st_size
        if size != info["bytes"]:
            raise OracleFormatError(
                f"{self.path}: {size} bytes, the header {header_path} says {info['bytes']}: not the pair "
                "written together (or cut)"
            )
        if verify and sha256_of(self.path) != info["sha256"]:
            raise OracleFormatError(f"{self.path}: its SHA-256 differs from the one in {header_path}")
        self.info = info
        self.header_path = Path(header_path)
        self._shapes = _member_shapes(header, header_path)
        # Node indices are always written; doubles and bounds of every value only when all are numbers.
        parts = _PARTS if info["floats"] else ("_exact",)
        per_step = [name for name in self._shapes if name not in _POPULATION]
        expected = [
            *(name for name in _POPULATION if info["floats"] or name in ("tokens", "labels", "weight_exact")),
            *(f"{q}{part}/{t}" for t in range(steps) for q in per_step for part in parts),
        ]
        unlisted = [name for name in expected if name not in info["members"]]
        if unlisted:
            raise OracleFormatError(
                f"{where}.members lacks {', '.join(unlisted[:3])}{' ...' if len(unlisted) > 3 else ''}"
            )
        self._zip: zipfile.ZipFile | None = None

    @property
    def members(self) -> list[str]:
        return list(self.info["members"])

    def column(self, name: str) -> np.ndarray:
        """The member ``name`` as an array of the shape and dtype kind the header implies."""
        if name not in self.info["members"]:
            raise OracleFormatError(
                f"{self.path}: no member {name!r} in the list of its header {self.header_path}"
            )
        try:
            if self._zip is None:
                self._zip = zipfile.ZipFile(self.path)
            return self._read(self._zip, name)
        except OracleFormatError:
            raise
        except (
            zipfile.BadZipFile,
            zlib.error,
            struct.error,
            EOFError,
            OSError,
            KeyError,
            ValueError,
            NotImplementedError,
            RuntimeError,
            OverflowError,
        ) as err:
            raise OracleFormatError(
                f"{self.path}: member {name} is damaged ({type(err).__name__}: {err})"
            ) from None

    def _read(self, archive: zipfile.ZipFile, name: str) -> np.ndarray:
        """One ``.npy`` member, its header checked before its data is read (a damaged header can not
        ask for more memory than the member holds); the zip's CRC is checked at its end."""
        info = archive.getinfo(name + ".npy")
        with archive.open(info) as handle:
            version = np.lib.format.read_magic(handle)
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran, dtype = read_header(handle)
            integer = name.split("/")[0].endswith("_exact") or name in _INTEGER_MEMBERS
            kinds = "iu" if integer else "f"
            if dtype.kind not in kinds or dtype.hasobject:
                raise OracleFormatError(
                    f"{self.path}: member {name} has dtype {dtype}, expected {kinds!r} kind"
                )
            expected = self._expected_shape(name)
            if shape[:1] != (self.info["rows"],) or (expected is not None and shape != expected):
                want = expected if expected is not None else f"({self.info['rows']}, ...)"
                raise OracleFormatError(
                    f"{self.path}: member {name} has shape {shape}, its header {self.header_path} says {want}"
                )
            if math.prod(shape) * dtype.itemsize > info.file_size:
                raise OracleFormatError(f"{self.path}: member {name} holds fewer bytes than its shape needs")
            array = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
            data = array.reshape(-1, order="A").view(np.uint8)  # the array's own bytes, filled in place
            got = 0
            while got < data.size:
                chunk = handle.read(min(_CHUNK, data.size - got))
                if not chunk:
                    break
                data[got : got + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
                got += len(chunk)
            if got != array.nbytes or handle.read(1):
                raise OracleFormatError(
                    f"{self.path}: member {name} has {got} bytes of data, its shape needs {array.nbytes}"
                )
        return array

    def _expected_shape(self, name: str) -> tuple[int, ...] | None:
        base, _, step = name.partition("/")
        if step:
            base = base.removesuffix("_exact").removesuffix("_error")
        return self._shapes.get(base if step else name)

    def steps(self, quantity: str) -> Iterator[np.ndarray]:
        """``quantity`` (S, f, logits; a sequence model's token_logits, f) at t = 0, 1, … as float64 arrays."""
        for t in range(int(self.info["steps"])):
            yield self.column(f"{quantity}/{t}")

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()
            self._zip = None


def _member_shapes(header: dict, path: str | os.PathLike) -> dict[str, tuple[int, ...]]:
    """The shape of each member the header implies: the population's by the number of inputs and N,
    each per-input value's by the model (``model.per_input``)."""
    rows = header["per_input"]["rows"]
    config = header.get("config")
    N = config.get("N") if isinstance(config, dict) else None
    if type(N) is not int or N < 1:
        raise OracleFormatError(f"{path}: config.N is missing or not a positive integer")
    shapes: dict[str, tuple[int, ...]] = {name: (rows,) for name in _POPULATION}
    shapes["tokens"] = (rows, N - 1)
    model = header.get("model")
    table = model.get("per_input") if isinstance(model, dict) else None
    if not isinstance(table, dict):
        raise OracleFormatError(f"{path}: model.per_input is missing or not an object of shapes")
    shapes.update({k: (rows, *_shape(v, f"{path}: model.per_input.{k}")) for k, v in table.items()})
    return shapes
