"""Run the `rw` commands whose outputs must not change, with two toolkits, and compare them leaf by leaf.

Issue 40 ("What must not change"): every value and verdict the toolkit prints or writes is compared before
and after a refactor. ``run`` runs a fixed list of ``rw`` command lines (derive, stability, zoo claims,
reproduce fig4, check on the examples, proofs, certify, explore, signal; ``list`` prints them) with one
``rw`` executable, each in a fresh folder, and records its exit code, stdout, stderr and every file it
wrote; ``compare`` compares two such runs:

    python tools/compare_outputs.py run --rw /tmp/ci/.venv/bin/rw --examples /tmp/ci/examples --out /tmp/outputs/old
    python tools/compare_outputs.py run --rw .venv/bin/rw --examples examples --out /tmp/outputs/new
    python tools/compare_outputs.py compare /tmp/outputs/old /tmp/outputs/new

JSON files are compared parsed, leaf by leaf (numbers exactly: same type and same ``repr``; strings
exactly), ``.npz``/``.npy`` arrays bit for bit (dtype, shape and bytes), text files and stdout/stderr line
by line, exit codes exactly, PNG files by existence (whether their image data is identical is printed
too, but does not count), any other file byte for byte. Volatile leaves are normalised first on both
sides (``NORMALISATIONS``, printed by ``compare``): wall times, dates, package versions, absolute paths
of the run, and the old import roots mapped to the new ones (``OLD_TO_NEW``), so that a module named in
prose compares equal after the package move. ``compare`` exits 0 when everything is the same after
that, 1 when something differs, 2 on bad input.

Plain Python and numpy only, no toolkit import: it runs against any version of the toolkit.
"""

from __future__ import annotations

import argparse
import difflib
import io
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: The format of run.json, the record a ``run`` leaves in its output folder.
RUN_FORMAT = "rw-compare-run"
RUN_VERSION = 1

#: Placeholder for the examples folder in a command line (the only part that differs between toolkits).
EXAMPLES = "{examples}"


@dataclass(frozen=True)
class Command:
    """One ``rw`` command line: ``name`` (its folder), ``argv`` after ``rw`` ({examples} = the examples
    folder), and whether it belongs to the ``--quick`` set (``quick_argv`` replaces ``argv`` there)."""

    name: str
    argv: tuple[str, ...]
    quick: bool = True
    quick_argv: tuple[str, ...] | None = None

    def line(self, quick: bool) -> tuple[str, ...]:
        """The arguments after ``rw`` in the full or the quick set."""
        return self.quick_argv if quick and self.quick_argv is not None else self.argv


def _a(text: str) -> tuple[str, ...]:
    return tuple(text.split())


#: Every command, in the order run. Sizes are small but reach each command's main path: exact values
#: (symbolic p and mu, rationals, per-input arrays), verdicts (proved / refuted / stuck / pass / fail),
#: the generic engine (another model, a Gaussian start), balls, floats and figures.
COMMANDS: tuple[Command, ...] = (
    Command("derive_one_layer", _a("derive --K 4 --N 3 --p 7/10 --steps 3 --json derive.json")),
    Command("derive_one_layer_symbolic", _a("derive --K 3 --N 3 --steps 2 --json derive.json")),
    Command(
        "derive_one_layer_verdict", _a("derive --K 3 --N 4 --p 1 --steps 2 --verdict --json derive.json")
    ),
    Command(
        "derive_key_query",
        _a("derive --model key_query --K 4 --N 3 --p 7/10 --mu 1 --steps 2 --json derive.json"),
    ),
    Command(
        "derive_gaussian_init",
        _a("derive --K 3 --N 3 --p 1/2 --mu 1 --init gaussian --seed 1 --steps 2 --json derive.json"),
    ),
    Command(
        "stability_one_layer",
        _a(
            "stability --K 4 --N 5 --p 1 --steps 20 --sigmas 1e-2,1e-4 --seeds 1"
            " --json stability.json --png stability.png"
        ),
    ),
    Command(
        "stability_key_query",
        _a(
            "stability --model key_query --K 4 --N 5 --p 1 --steps 20 --sigmas 1e-2,1e-4 --seeds 1"
            " --json stability.json --png stability.png"
        ),
    ),
    Command(
        "zoo_claims",
        _a("zoo claims --quick --out zoo"),
        quick_argv=_a(
            "zoo claims --quick --claim key_query_stuck --claim linear_zero_fixed"
            " --claim makkuva_unigram_point --out zoo"
        ),
    ),
    Command("reproduce_fig4", _a("reproduce fig4 --quick --jobs 1 --out repro")),
    Command("check_plain_torch", _a("check {examples}/plain_torch.py:model --json check.json")),
    Command("check_plain_numpy", _a("check {examples}/plain_numpy.py:model --json check.json")),
    Command("check_plain_jax", _a("check {examples}/plain_jax.py:model --json check.json"), quick=False),
    Command("check_bug", _a("check {examples}/bugs.py:eta_twice_on_W --json check.json")),
    Command(
        "check_key_query",
        _a("check --model key_query {examples}/key_query_torch.py:model --json check.json"),
        quick=False,
    ),
    Command(
        "proofs",
        _a("proofs --quick --out certificates"),
        quick_argv=_a("proofs --quick --only C.1 --only D.3 --only 4.1 --only E.5 --out certificates"),
    ),
    Command("certify_population", _a("certify --K 4 --N 5 --p 1 --M 8 --steps 3 --population --out certify")),
    Command(
        "certify_sampled",
        _a("certify --K 4 --N 4 --p 7/10 --M 16 --steps 4 --train-size 64 --test-size 64 --out certify"),
        quick=False,
    ),
    Command("explore", _a("explore --out explore {examples}/first_day/task.json")),
    Command("signal_symbolic", _a("signal --K 4 --N 3 --json signal.json")),
    Command("signal_stuck", _a("signal --K 4 --N 5 --p 1 --json signal.json")),
)

#: Old import roots (before issue 40) -> the new ones; applied to every string on both sides, in the
#: dotted form (``rwnumeric._model``) and the slash form (``rwnumeric/_model.py``).
OLD_TO_NEW: tuple[tuple[str, str], ...] = (
    ("rwio", "rwtoolkit.io"),
    ("rwtasks", "rwtoolkit.tasks"),
    ("rwmodels", "rwtoolkit.models"),
    ("rwsymbolic", "rwtoolkit.engines.exact"),
    ("rwnumeric", "rwtoolkit.engines.numeric"),
    ("rwcertify", "rwtoolkit.engines.balls"),
    ("rwcheck", "rwtoolkit.analyses.check"),
    ("rwstability", "rwtoolkit.analyses.stability"),
    ("rwexplore", "rwtoolkit.analyses.explore"),
    ("rwsweep", "rwtoolkit.analyses.sweep"),
    ("rwrepro", "rwtoolkit.analyses.repro"),
    ("rwzoo", "rwtoolkit.analyses.zoo"),
    ("proofs", "rwtoolkit.analyses.proofs"),
    ("rwcli", "rwtoolkit.cli"),
)

#: JSON keys whose value is volatile wherever they occur (replaced by "<volatile>" on both sides).
VOLATILE_KEYS = frozenset(
    {
        "seconds",
        "wall_seconds",
        "elapsed",
        "elapsed_s",
        "duration",
        "duration_s",
        "time_s",
        "wall_time",
        "timestamp",
        "created",
        "date",
        "python_version",
        "toolkit_version",
        "rwtoolkit_version",
        "platform",
        "hostname",
    }
)

#: Markdown table columns whose header names a time (their cells are volatile).
TIME_COLUMN = re.compile(r"^\s*(time|seconds|wall|elapsed|duration)\b.*$|.*\s\((s|seconds)\)\s*$", re.I)

_DURATION = re.compile(
    r"(?<![\w.~])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\s?(?:ms|µs|us|s|sec|secs|seconds?|min|minutes?)(?![\w/])"
)
_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
    r"|\b\d{2}:\d{2}:\d{2}\b"
)
_TQDM = re.compile(r"\[\d+:\d+(?::\d+)?<[^\]]*\]|\d+(?:\.\d+)?\s?(?:it/s|s/it)")
_VERSION = re.compile(
    r"\b(rwtoolkit|python|numpy|torch|sympy|matplotlib|jax|jaxlib|python-flint|flint)"
    r"([ =/-]+v?)\d+\.\d+(?:\.\d+)?(?:[\w.+-]*)",
    re.I,
)


def _module_rules() -> list[tuple[re.Pattern[str], str]]:
    rules: list[tuple[re.Pattern[str], str]] = []
    for old, new in OLD_TO_NEW:
        slash = new.replace(".", "/")
        if old == "proofs":
            # 'proofs' is also a word, a command, a folder and a file name (proofs.json, rw proofs, and
            # rwtoolkit/analyses/proofs/ itself): only a module path maps, proofs/<file>.py or proofs/_x
            # at the start of a path or under the checkout (<REPO>/proofs/...), and proofs._x or
            # proofs.<module> (not .json, .md).
            start = r"(?:(?<![\w./-])|(?<=<REPO>/))"
            rules.append((re.compile(start + r"proofs/(?=_|[\w/]*\.py\b)"), slash + "/"))
            rules.append((re.compile(r"(?<![\w./-])proofs\.(?!json\b|md\b)(?=_?[a-z])"), new + "."))
        else:
            rules.append((re.compile(rf"(?<![\w.-]){old}/"), slash + "/"))
            rules.append((re.compile(rf"(?<![\w./-]){old}\b(?![-])"), new))
    return rules


_MODULE_RULES = _module_rules()

#: What ``compare`` normalises before comparing (printed by ``compare`` and documented in
#: docs/testing.md).
NORMALISATIONS = (
    "absolute paths of the run: the examples folder -> <EXAMPLES>, the checkout above it -> <REPO>, the "
    "rw executable's venv -> <VENV>, the output folder -> <OUT>, the command's folder -> <CWD> (each side "
    "its own, as given and resolved)",
    "old import roots -> new, dotted and slash forms: " + ", ".join(f"{o}->{n}" for o, n in OLD_TO_NEW),
    "wall times: a number with a unit of time (0.2 s, 1.9s, 3 ms, 2 min) -> <T>; in Markdown tables the "
    "cells of a column headed time/seconds/'(s)'; tqdm's clock and rate",
    "dates and clock times (2026-12-03, 14:33:37) -> <DATE>",
    "package versions in text (python 3.11.7, numpy 2.4.6, rwtoolkit 0.1.0) -> <VERSION>",
    "JSON values under the keys " + ", ".join(sorted(VOLATILE_KEYS)) + " -> <volatile> (file format "
    "versions such as an oracle's 'version' stay compared)",
    "in a line where a time was replaced, runs of spaces collapse to one (column alignment); carriage "
    "returns: only the text after a line's last \\r is kept (progress bars)",
)


class BadInput(Exception):
    """Bad input: one line, exit code 2."""


# ----------------------------------------------------------------------------------------------- run


def _examples_dir(path: str) -> Path:
    examples = Path(path).resolve()
    if not (examples / "plain_torch.py").is_file():
        raise BadInput(f"--examples {path}: not an examples folder (no plain_torch.py in it)")
    return examples


def _out_dir(path: str) -> Path:
    out = Path(path).resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BadInput(f"--out {path}: exists and is not an empty folder (each run writes a fresh folder)")
    return out


def _rw_path(path: str) -> Path:
    found = shutil.which(path)
    if found is None:
        raise BadInput(f"--rw {path}: not an executable file")
    return Path(found).absolute()


def command_lines(quick: bool) -> list[tuple[str, tuple[str, ...]]]:
    """The (name, arguments after ``rw``) of every command in the full or the quick set."""
    return [(c.name, c.line(quick)) for c in COMMANDS if c.quick or not quick]


#: The environment variables ``run`` sets for every command, on top of its own environment (recorded in
#: run.json with PYTHONPATH, which can point ``rw`` at another source tree): the same hash seed, backend,
#: time zone, encoding, thread count and terminal width on both sides.
FIXED_ENV = {
    "PYTHONHASHSEED": "0",
    "MPLBACKEND": "Agg",
    "TZ": "UTC",
    "PYTHONIOENCODING": "utf-8",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "COLUMNS": "100",
}


def run(
    rw: str, examples: str, out: str, quick: bool, only: list[str] | None, timeout: float
) -> dict[str, Any]:
    """Run every command with ``rw`` into ``out`` and write ``out/run.json``; returns that record."""
    rw_path, examples_path, out_path = _rw_path(rw), _examples_dir(examples), _out_dir(out)
    lines = command_lines(quick)
    if only:
        unknown = sorted(set(only) - {name for name, _ in lines})
        if unknown:
            raise BadInput(f"--only {unknown[0]}: not a command of this set (see 'list')")
        lines = [(name, argv) for name, argv in lines if name in only]
    out_path.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **FIXED_ENV}
    record: dict[str, Any] = {
        "format": RUN_FORMAT,
        "version": RUN_VERSION,
        "rw": str(rw_path),
        "examples": str(examples_path),
        "examples_given": examples,
        "out": str(out_path),
        "quick": quick,
        "environment": {k: env[k] for k in (*FIXED_ENV, "PYTHONPATH") if k in env},
        "commands": [],
    }
    start = time.perf_counter()
    for i, (name, argv) in enumerate(lines, 1):
        folder = out_path / name
        cwd = folder / "files"
        cwd.mkdir(parents=True)
        args = [str(rw_path)] + [a.replace(EXAMPLES, str(examples_path)) for a in argv]
        t0 = time.perf_counter()
        with open(folder / "stdout.txt", "wb") as so, open(folder / "stderr.txt", "wb") as se:
            try:
                exit_code: int | str = subprocess.run(
                    args, cwd=cwd, env=env, stdout=so, stderr=se, timeout=timeout, check=False
                ).returncode
            except subprocess.TimeoutExpired:
                exit_code = f"timeout after {timeout:g} s"
        seconds = time.perf_counter() - t0
        print(f"[{i}/{len(lines)}] {name}: exit {exit_code} in {seconds:.1f} s", file=sys.stderr, flush=True)
        record["commands"].append(
            {
                "name": name,
                "argv": ["rw", *argv],
                "exit_code": exit_code,
                "seconds": round(seconds, 2),
                "files": sorted(p.relative_to(cwd).as_posix() for p in cwd.rglob("*") if p.is_file()),
            }
        )
    record["seconds"] = round(time.perf_counter() - start, 1)
    (out_path / "run.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(lines)} commands in {record['seconds']} s; record {out_path / 'run.json'}", file=sys.stderr)
    return record


# ------------------------------------------------------------------------------------- normalising


class Normaliser:
    """Turns one side's text into the form both sides are compared in (``NORMALISATIONS``).

    ``roots`` maps an absolute path of that side's run to its placeholder; the longest path is replaced
    first, so a folder inside another gets its own placeholder.
    """

    def __init__(self, roots: dict[str, str]):
        pairs = {(p, tok) for p, tok in roots.items() if p and p != "/"}
        self.roots = sorted(pairs, key=lambda pair: -len(pair[0]))

    def text(self, s: str) -> str:
        """One string (a JSON leaf or a line)."""
        for path, token in self.roots:
            s = s.replace(path, token)
        for pattern, new in _MODULE_RULES:
            s = pattern.sub(new, s)
        s = _VERSION.sub(lambda m: f"{m.group(1)}{m.group(2)}<VERSION>", s)
        s = _DATE.sub("<DATE>", s)
        s = _TQDM.sub("<T>", s)
        timed = _DURATION.sub("<T>", s)
        if timed != s:
            timed = re.sub(r" {2,}", " ", timed)
        return timed

    def lines(self, content: str) -> list[str]:
        """A text file's lines, each normalised, with the time columns of Markdown tables masked."""
        raw = [line.rsplit("\r", 1)[-1] if "\r" in line else line for line in content.split("\n")]
        out = [self.text(line) for line in raw]
        masked: set[int] = set()
        for i, line in enumerate(raw):
            if _is_row(line) and i + 1 < len(raw) and _is_separator(raw[i + 1]):
                masked = {j for j, cell in enumerate(_cells(line)) if TIME_COLUMN.match(cell)}
            elif not _is_row(line):
                masked = set()
            elif masked and not _is_separator(line):
                cells = _cells(out[i])
                out[i] = "|" + "|".join("<T>" if j in masked else c for j, c in enumerate(cells)) + "|"
        return out

    def json(self, value: Any, key: str | None = None) -> Any:
        """A parsed JSON value with volatile keys and every string normalised."""
        if key is not None and key in VOLATILE_KEYS:
            return "<volatile>"
        if isinstance(value, dict):
            return {self.text(k): self.json(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.json(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value


class Raw(Normaliser):
    """No normalisation at all (``compare --raw``)."""

    def __init__(self) -> None:
        super().__init__({})

    def text(self, s: str) -> str:
        return s

    def lines(self, content: str) -> list[str]:
        return content.split("\n")

    def json(self, value: Any, key: str | None = None) -> Any:
        return value


def _is_row(line: str) -> bool:
    return line.strip().startswith("|") and line.strip().endswith("|")


def _is_separator(line: str) -> bool:
    return _is_row(line) and all(re.fullmatch(r"\s*:?-{3,}:?\s*", c) for c in _cells(line))


def _cells(line: str) -> list[str]:
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def normaliser_for(record: dict[str, Any], command: str) -> Normaliser:
    """The normaliser of one command of one side's run (its own paths)."""
    roots: dict[str, str] = {}
    rw = Path(record["rw"])
    venv = rw.parent.parent
    examples = Path(record["examples"])
    out = Path(record["out"])
    cwd = out / command / "files"
    for path, token in (
        (examples.parent, "<REPO>"),
        (venv, "<VENV>"),
        (venv.parent, "<REPO>"),
        (examples, "<EXAMPLES>"),
        (out, "<OUT>"),
        (cwd, "<CWD>"),
    ):
        for form in {str(path), os.path.realpath(path)}:
            roots.setdefault(form, token)
    given = record.get("examples_given")
    if given and os.path.isabs(given):
        roots.setdefault(given.rstrip("/"), "<EXAMPLES>")
    return Normaliser(roots)


# ------------------------------------------------------------------------------------- comparing


def _json_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if re.fullmatch(r"[A-Za-z_]\w*", key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _render(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _line(value: str | None) -> str:
    return "(no line)" if value is None else _render(value)


def _pair(old: Any, new: Any, width: int = 60, render: Callable[[Any], str] = _render) -> str:
    """'old vs new', each cut to ``width`` characters around the first character where they differ."""
    a, b = render(old), render(new)
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    start = max(0, first - width // 3) if max(len(a), len(b)) > width else 0

    def cut(text: str) -> str:
        piece = text[start : start + width]
        return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")

    return f"{cut(a)} vs {cut(b)}"


def json_differences(old: Any, new: Any, path: str = "$") -> Iterator[str]:
    """Every leaf where two parsed JSON values differ: numbers of the same type with the same repr
    (so 1 != 1.0, 0.0 != -0.0, NaN == NaN), strings exactly, keys and lengths."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                yield f"{_json_path(path, key)}: only in old"
            else:
                yield from json_differences(old[key], new[key], _json_path(path, key))
        for key in new:
            if key not in old:
                yield f"{_json_path(path, key)}: only in new"
    elif isinstance(old, list) and isinstance(new, list):
        for i, (a, b) in enumerate(zip(old, new)):
            yield from json_differences(a, b, _json_path(path, i))
        if len(old) != len(new):
            yield f"{path}: length {len(old)} vs {len(new)}"
    elif type(old) is not type(new) or (repr(old) != repr(new) if isinstance(old, float) else old != new):
        yield f"{path}: {_pair(old, new)}"


def _load_arrays(path: Path) -> dict[str, np.ndarray]:
    if path.suffix == ".npy":
        return {"": np.load(path, allow_pickle=False)}
    with np.load(path, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def array_differences(old: np.ndarray, new: np.ndarray, name: str) -> Iterator[str]:
    """Where two arrays are not bit-identical: dtype, shape, then the elements whose bytes differ."""
    label = name or "array"
    if old.dtype != new.dtype or old.shape != new.shape:
        yield f"{label}: {old.dtype}{list(old.shape)} vs {new.dtype}{list(new.shape)}"
        return
    size = old.dtype.itemsize
    if old.size == 0 or size == 0:
        return
    a = np.ascontiguousarray(old).reshape(-1).view(np.uint8).reshape(-1, size)
    b = np.ascontiguousarray(new).reshape(-1).view(np.uint8).reshape(-1, size)
    wrong = np.flatnonzero((a != b).any(axis=1))
    for flat in wrong[:3]:
        index = list(map(int, np.unravel_index(int(flat), old.shape)))
        yield (
            f"{label}{index}: {old.reshape(-1)[flat]!r} vs {new.reshape(-1)[flat]!r}"
            + (f" ({wrong.size} of {old.size} elements differ)" if flat == wrong[0] else "")
        )


def _png_image(path: Path) -> bytes | None:
    """The header and decompressed image data of a PNG (None when it is not one)."""
    data = path.read_bytes()
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    pos, header, idat = 8, b"", io.BytesIO()
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        chunk = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = chunk
        elif kind == b"IDAT":
            idat.write(chunk)
        pos += 12 + length
    try:
        return header + zlib.decompress(idat.getvalue())
    except zlib.error:
        return None


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def text_differences(old: list[str], new: list[str]) -> Iterator[str]:
    """Line-by-line differences of two normalised texts (line numbers of the old and the new file)."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            a = old[i1 + k] if i1 + k < i2 else None
            b = new[j1 + k] if j1 + k < j2 else None
            where = f"line {i1 + k + 1}" if a is not None else f"new line {j1 + k + 1}"
            yield f"{where}: {_pair(a, b, 70, _line)}"


@dataclass
class Row:
    """One line of the table: a command, a file (or 'exit code', 'stdout', ...) and its result."""

    command: str
    item: str
    same: bool
    detail: str
    counts: bool = True


def compare_file(
    old: Path, new: Path, norm_old: Normaliser, norm_new: Normaliser, max_diffs: int
) -> tuple[bool, str, bool]:
    """(same, detail, counts) for one file present on both sides."""
    suffix = old.suffix.lower()
    diffs: list[str] = []
    if suffix == ".json":
        try:
            a, b = json.loads(old.read_text(encoding="utf-8")), json.loads(new.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
            return False, f"not JSON on one side ({error})", True
        diffs = list(_take(json_differences(norm_old.json(a), norm_new.json(b)), max_diffs + 1))
    elif suffix in (".npz", ".npy"):
        arrays_a, arrays_b = _load_arrays(old), _load_arrays(new)
        for key in sorted(set(arrays_a) | set(arrays_b)):
            if key not in arrays_b or key not in arrays_a:
                diffs.append(f"{key}: only in {'old' if key in arrays_a else 'new'}")
            else:
                diffs.extend(array_differences(arrays_a[key], arrays_b[key], key))
        if not diffs:
            count = sum(v.size for v in arrays_a.values())
            return True, f"same ({len(arrays_a)} arrays, {count} elements, bit-identical)", True
    elif suffix == ".png":
        image_a, image_b = _png_image(old), _png_image(new)
        note = "image data identical" if image_a is not None and image_a == image_b else "image data differs"
        return True, f"exists on both sides ({note}; not counted)", False
    else:
        ta, tb = _text(old), _text(new)
        if ta is None or tb is None:
            same = old.read_bytes() == new.read_bytes()
            return same, "same bytes" if same else "bytes differ", True
        diffs = list(_take(text_differences(norm_old.lines(ta), norm_new.lines(tb)), max_diffs + 1))
    if not diffs:
        return True, "same", True
    shown = "; ".join(diffs[:max_diffs]) + ("; …" if len(diffs) > max_diffs else "")
    return False, "differs at " + shown, True


def _take(items: Iterator[str], n: int) -> list[str]:
    out = []
    for item in items:
        out.append(item)
        if len(out) >= n:
            break
    return out


def _load_run(folder: str) -> dict[str, Any]:
    path = Path(folder) / "run.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise BadInput(f"{folder}: no run.json of 'compare_outputs.py run' in it") from None
    if not isinstance(record, dict) or record.get("format") != RUN_FORMAT:
        raise BadInput(f"{path}: not a run record (format {RUN_FORMAT!r})")
    record["_folder"] = str(Path(folder).resolve())
    return record


def compare(old_dir: str, new_dir: str, max_diffs: int = 3, raw: bool = False) -> list[Row]:
    """Every row of the comparison of two runs (``raw``: nothing normalised, to see what the
    normalisations absorb)."""
    old, new = _load_run(old_dir), _load_run(new_dir)
    by_name_old = {c["name"]: c for c in old["commands"]}
    by_name_new = {c["name"]: c for c in new["commands"]}
    rows: list[Row] = []
    for name in list(by_name_old) + [n for n in by_name_new if n not in by_name_old]:
        if name not in by_name_new or name not in by_name_old:
            side = "old" if name in by_name_old else "new"
            rows.append(Row(name, "command", False, f"run only in {side}"))
            continue
        a, b = by_name_old[name], by_name_new[name]
        if a["argv"] != b["argv"]:
            rows.append(Row(name, "command line", False, f"{' '.join(a['argv'])} vs {' '.join(b['argv'])}"))
        same_exit = a["exit_code"] == b["exit_code"]
        rows.append(
            Row(
                name,
                "exit code",
                same_exit,
                f"{a['exit_code']}" + ("" if same_exit else f" vs {b['exit_code']}"),
            )
        )
        norm_a, norm_b = (Raw(), Raw()) if raw else (normaliser_for(old, name), normaliser_for(new, name))
        folder_a, folder_b = Path(old["_folder"]) / name, Path(new["_folder"]) / name
        for stream in ("stdout.txt", "stderr.txt"):
            same, detail, counts = compare_file(
                folder_a / stream, folder_b / stream, norm_a, norm_b, max_diffs
            )
            rows.append(Row(name, stream[:-4], same, detail, counts))
        files_a = _files(folder_a / "files")
        files_b = _files(folder_b / "files")
        for rel in sorted(files_a | files_b):
            if rel not in files_b or rel not in files_a:
                rows.append(Row(name, rel, False, f"written only by {'old' if rel in files_a else 'new'}"))
                continue
            same, detail, counts = compare_file(
                folder_a / "files" / rel, folder_b / "files" / rel, norm_a, norm_b, max_diffs
            )
            rows.append(Row(name, rel, same, detail, counts))
    return rows


def _files(folder: Path) -> set[str]:
    return (
        {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
        if folder.is_dir()
        else set()
    )


def print_table(
    rows: list[Row], old: dict[str, Any], new: dict[str, Any], out: Callable[[str], None], raw: bool = False
) -> None:
    """The table, one row per command and file, then the summary."""
    out("--raw: nothing normalised" if raw else "normalised on both sides before comparing:")
    for item in () if raw else NORMALISATIONS:
        out(f"  - {item}")
    out("")
    seconds_a = {c["name"]: c["seconds"] for c in old["commands"]}
    seconds_b = {c["name"]: c["seconds"] for c in new["commands"]}
    width = max([len(r.item) for r in rows] + [4])
    current = None
    for row in rows:
        if row.command != current:
            current = row.command
            timing = f"  (old {seconds_a.get(current, '-')} s, new {seconds_b.get(current, '-')} s)"
            out(f"{current}{timing}")
        mark = "same" if row.same else "DIFFERS"
        detail = row.detail if row.detail not in ("same", "") else ""
        out(f"  {row.item:<{width}}  {mark:<7}  {detail}".rstrip())
    differing = [r for r in rows if r.counts and not r.same]
    counted = [r for r in rows if r.counts]
    commands = len({r.command for r in rows})
    out("")
    out(
        f"{commands} commands, {len(counted)} items compared, {len(differing)} differ"
        + (f" (in: {', '.join(sorted({r.command for r in differing}))})" if differing else "")
        + f"; runs took old {old.get('seconds', '-')} s, new {new.get('seconds', '-')} s"
    )
    out("SAME" if not differing else "DIFFERENT")


# ------------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="compare_outputs.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="action", required=True)
    p_run = sub.add_parser("run", help="run every command with one rw executable into a fresh folder")
    p_run.add_argument("--rw", required=True, help="the rw executable (e.g. /tmp/ci/.venv/bin/rw)")
    p_run.add_argument("--examples", required=True, help="that toolkit's examples/ folder")
    p_run.add_argument("--out", required=True, help="output folder (must not exist or be empty)")
    p_run.add_argument("--quick", action="store_true", help="the quick set: fewer commands, smaller sizes")
    p_run.add_argument("--only", action="append", metavar="NAME", help="run only this command (repeatable)")
    p_run.add_argument("--timeout", type=float, default=600.0, help="seconds per command (default 600)")
    p_cmp = sub.add_parser(
        "compare", help="compare two runs leaf by leaf; exit 0 when everything is the same"
    )
    p_cmp.add_argument("old", help="folder of the run of the old toolkit")
    p_cmp.add_argument("new", help="folder of the run of the new toolkit")
    p_cmp.add_argument("--max-diffs", type=int, default=3, help="differences shown per file (default 3)")
    p_cmp.add_argument(
        "--raw", action="store_true", help="normalise nothing (shows what the normalisations absorb)"
    )
    p_list = sub.add_parser("list", help="print the command lines of the full (or --quick) set")
    p_list.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    try:
        if args.action == "run":
            if not (args.timeout > 0 and math.isfinite(args.timeout)):
                raise BadInput(f"--timeout {args.timeout}: must be a positive number of seconds")
            record = run(args.rw, args.examples, args.out, args.quick, args.only, args.timeout)
            return 0 if all(isinstance(c["exit_code"], int) for c in record["commands"]) else 1
        if args.action == "list":
            for name, line in command_lines(args.quick):
                print(f"{name:<28} rw {' '.join(line)}")
            return 0
        if args.max_diffs < 1:
            raise BadInput(f"--max-diffs {args.max_diffs}: must be an integer >= 1")
        rows = compare(args.old, args.new, args.max_diffs, args.raw)
        print_table(rows, _load_run(args.old), _load_run(args.new), print, args.raw)
        return 0 if all(r.same or not r.counts for r in rows) else 1
    except BadInput as error:
        print(f"compare_outputs.py {args.action}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
