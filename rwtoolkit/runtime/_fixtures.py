"""A frozen fixture folder (``rw check --emit``) read back: its manifest and each entry's ``CheckConfig``.

The folder holds ``manifest.json``, per configuration an oracle file (``oracles/<id>.json`` with its
``.inputs.npz``) and the positional embeddings (``oracles/<id>.P.npy``), the test file, and this package
copied as it is (``rwcheck_runtime/``). A damaged file raises ``OracleFormatError``, one line naming it.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np

from ._config import CheckConfig
from .oracle_format import OracleFormatError, PerInput, read_header

#: The manifest written: its format id and version. Version 3 carries the runtime as the package folder
#: ``rwcheck_runtime/`` (version 2: the modules ``rwcheck_runtime.py`` and ``rwcheck_columns.py``); the
#: manifest's keys and entries are those of version 2, which was version 1 (``rwtoolkit-fixtures``) renamed.
MANIFEST_FORMAT = "rw-fixtures"
MANIFEST_VERSION = 3
#: Manifest formats this runtime reads: every version written so far (their entries are the same).
MANIFEST_READS = {(MANIFEST_FORMAT, MANIFEST_VERSION), ("rw-fixtures", 2), ("rwtoolkit-fixtures", 1)}
#: The folder the runtime is copied to, beside the manifest (what the emitted test file imports).
RUNTIME_FOLDER = "rwcheck_runtime"
#: What each manifest entry holds (``rwtoolkit.analyses.check.emit_fixtures`` writes them).
MANIFEST_ENTRY_KEYS = ("id", "oracle", "P", "steps", "config", "rtol", "tie_rtol", "accuracy_not_compared")


def fixture_config(folder: str | Path, entry: dict, dtype: str) -> CheckConfig:
    """The ``CheckConfig`` of one manifest entry, its population read from its oracle file, and the update rule
    the oracle's trajectory ran (``config.optimizer``; None: plain GD), which the kit's loop then runs and an
    implementation's own loop reads (``CheckConfig.optimizer``, ``CheckConfig.torch_optimizer``).

    ``OracleFormatError`` naming the file when the entry, the oracle or the P file is damaged.
    """
    folder = Path(folder)
    where = f"{folder / 'manifest.json'}: configs entry {entry.get('id')!r}"
    try:
        settings = entry["config"]
        K, N = int(settings["K"]), int(settings["N"])
        mu, eta, eps = (Fraction(settings[k]) for k in ("mu", "eta", "eps"))
        loss, embedding = str(settings["loss"]), str(settings["embedding"])
        task, seed, tie_rtol = dict(settings["task"]), int(settings["seed"]), float(entry["tie_rtol"][dtype])
        header_path, P_path = folder / entry["oracle"], folder / entry["P"]
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:
        raise OracleFormatError(f"{where}: {type(err).__name__}: {err}") from None
    header = read_header(header_path)
    named_by = header.get("config")
    if not isinstance(named_by, dict) or (named_by.get("K"), named_by.get("N")) != (K, N):
        raise OracleFormatError(f"{header_path}: not the oracle of K={K}, N={N} the manifest names")
    optimizer = _fixture_rule(named_by.get("optimizer"), header_path)
    columns = PerInput(header_path, header)
    try:
        tokens, labels, weights = (columns.column(k) for k in ("tokens", "labels", "weight"))
    finally:
        columns.close()
    return CheckConfig(
        K=K,
        N=N,
        P=_fixture_positions(P_path, N),
        tokens=tokens.astype(np.int64),
        labels=labels.astype(np.int64),
        weights=weights,
        mu=mu,
        eta=eta,
        eps=eps,
        loss=loss,
        dtype=dtype,
        tie_rtol=tie_rtol,
        task=task,
        embedding=embedding,
        seed=seed,
        optimizer=optimizer,
    )


def _fixture_rule(rule: object, path: Path) -> dict | None:
    """The oracle's update rule (``config.optimizer``: its name and exact hyperparameters, written by
    ``rwtoolkit.models.Optimizer.describe(exact=True)``) as torch.optim takes it (floats), or None for plain GD
    (an oracle without the field); ``OracleFormatError`` naming the file for one that is not a rule's record."""
    if rule is None:
        return None
    try:
        if not isinstance(rule, dict) or rule.get("name") not in (
            "gd",
            "momentum",
            "nesterov",
            "adam",
            "adamw",
        ):
            raise ValueError("no rule name of gd, momentum, nesterov, adam, adamw")
        out: dict = {"name": rule["name"]}
        for key, value in rule.items():
            if key != "name":
                out[key] = [float(Fraction(v)) for v in value] if key == "betas" else float(Fraction(value))
    except (TypeError, ValueError, ZeroDivisionError) as err:
        raise OracleFormatError(f"{path}: config.optimizer is not an update rule ({err})") from None
    return None if out == {"name": "gd", "weight_decay": 0.0} else out


def _fixture_positions(path: Path, N: int) -> np.ndarray:
    """A fixture's P (M×N floats), or OracleFormatError naming the file."""
    try:
        P = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise OracleFormatError(f"{path}: not a readable .npy of positional embeddings ({reason})") from None
    if not isinstance(P, np.ndarray) or P.ndim != 2 or P.shape[1] != N or P.dtype.kind != "f":
        raise OracleFormatError(f"{path}: P of shape {np.shape(P)}, expected (M, {N}) floats")
    return P


def load_manifest(folder: str | Path) -> dict:
    """The fixture folder's manifest.json; ``OracleFormatError`` (a ValueError) naming the file when it
    is missing, cut, not JSON, of a format this runtime does not read, or lacks what the tests use."""
    path = Path(folder) / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise OracleFormatError(f"{path}: not a readable fixture manifest ({err})") from None
    found = (manifest.get("format"), manifest.get("version")) if isinstance(manifest, dict) else (None, None)
    if found not in MANIFEST_READS:
        raise OracleFormatError(
            f"{path}: format {found[0]!r} version {found[1]!r} is not a fixture manifest this runtime reads"
        )
    files, configs = manifest.get("files"), manifest.get("configs")
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise OracleFormatError(f"{path}: 'files' is missing or not an object of SHA-256 digests")
    if not isinstance(configs, list) or not isinstance(manifest.get("tolerance_rule"), dict):
        raise OracleFormatError(f"{path}: 'configs' (a list) or 'tolerance_rule' (an object) is missing")
    for i, entry in enumerate(configs):
        missing = [k for k in MANIFEST_ENTRY_KEYS if not isinstance(entry, dict) or k not in entry]
        if missing:
            raise OracleFormatError(f"{path}: configs[{i}] lacks {', '.join(missing)}")
    return manifest
