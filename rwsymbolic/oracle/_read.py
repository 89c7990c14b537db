"""``load_oracle``: the one reader of oracle files, float64 arrays by default and exact values on request."""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import sympy as sp

from rwio import load_schema
from rwsymbolic.oracle._columns import PerInput, read_header, step_doubles
from rwsymbolic.oracle._nodes import decode_nodes, nested_map

#: The schema of each oracle version (``rwio.load_schema``): 3 is the one written, 1 and 2 the ones before.
SCHEMA_NAMES = {1: "oracle-v1", 2: "oracle-v2", 3: "oracle"}
#: The per-step values of a version-1 file (versions 2 and 3 name theirs in the header's model section).
STEP_VALUES = ("V", "w_tok", "c", "loss", "accuracy", "mean_attention", "mean_logits", "mean_f")
PER_INPUT_VALUES = ("logits", "S", "f")


class Oracle:
    """An oracle file, opened by ``load_oracle``: the configuration, the model, every step's values.

    ``steps[t]`` maps each per-step value to a float64 array, or to its exact SymPy value when the file
    was loaded with ``exact=True``: the model's parameters by its own names (``model["parameters"]``: V,
    w_tok, c for the paper's model in reduced coordinates; V, W_K, W_Q for key_query, ...) and the
    read-outs (``model["readouts"]``: loss, accuracy, mean_attention, ...; version 1 files also their
    per-input logits, S, f). ``value`` / ``error`` / ``exact`` read one quantity, per-step or per-input,
    at step t.
    """

    def __init__(self, path: Path, header: dict, exact: bool, verify: bool) -> None:
        self.path = path
        self.header = header
        self.version: int = header["version"]
        self.config: dict = header["config"]
        self.model: dict | None = header.get("model")
        self._per_input: PerInput | None = None
        self._decoded: dict[str, list[sp.Basic]] = {}
        if self.version >= 2 and header.get("per_input"):
            self._per_input = PerInput(path, header, verify=verify)
        self.steps: list[dict[str, Any]]
        if exact:
            self.steps = [
                {"t": t, **{k: self.exact(k, t) for k in self._step_keys(t)}} for t in range(self.T + 1)
            ]
        else:
            self.steps = step_doubles(header, path)

    @property
    def T(self) -> int:
        """The last step written (states t = 0..T)."""
        return len(self.header["steps"]) - 1

    @property
    def has_per_input(self) -> bool:
        if self.version == 1:
            return "per_input" in self.header["steps"][0]
        return self._per_input is not None

    @property
    def step_values(self) -> tuple[str, ...]:
        """The names of the per-step values: the model's parameters, then its read-outs."""
        if self.model is None:  # version 1
            return STEP_VALUES
        return (*self.model["parameters"], *self.model["readouts"])

    @property
    def per_input_values(self) -> tuple[str, ...]:
        return PER_INPUT_VALUES if self.model is None else tuple(self.model["per_input"])

    def _step_keys(self, t: int) -> list[str]:
        entry = self.header["steps"][t]
        keys = [k for k in self.step_values if k in entry]
        if self.version == 1 and "per_input" in entry:
            keys += list(PER_INPUT_VALUES)
        return keys

    def _entry(self, name: str, t: int) -> dict:
        if not 0 <= t <= self.T:
            raise ValueError(f"t={t} is out of range: the oracle has steps 0..{self.T}")
        entry = self.header["steps"][t]
        if name in entry:
            return entry[name]
        if self.version == 1 and name in entry.get("per_input", {}):
            return entry["per_input"][name]
        raise KeyError(f"{self.path}: no value {name!r} at step {t}")

    def _columns(self, name: str) -> PerInput:
        if self._per_input is None:
            raise ValueError(f"{self.path}: the oracle has no per-input values (written without them)")
        if name not in self.per_input_values:
            raise KeyError(f"{name!r} is not a per-input value; they are {', '.join(self.per_input_values)}")
        return self._per_input

    def value(self, name: str, t: int) -> np.ndarray:
        """The doubles of ``name`` at step t (per-input values: one row per input, population order)."""
        if self.version >= 2 and name in self.per_input_values:
            return self._columns(name).column(f"{name}/{t}")
        value = self._entry(name, t)["float"]
        if value is None:
            raise ValueError(f"{self.path}: step {t} {name} is symbolic (float is null)")
        return np.asarray(value, dtype=np.float64)

    def error(self, name: str, t: int) -> np.ndarray:
        """The certified bound |value - exact| <= error of each double of ``name`` at step t (version 2)."""
        if self.version == 1:
            raise ValueError(f"{self.path}: version-1 oracles carry no error bounds")
        if name in self.per_input_values:
            return self._columns(name).column(f"{name}_error/{t}")
        bound = self._entry(name, t)["error"]
        if bound is None:
            raise ValueError(f"{self.path}: step {t} {name} is symbolic (no double, no bound)")
        return np.asarray(bound, dtype=np.float64)

    def exact(self, name: str, t: int, atoms: str = "exp") -> Any:
        """The exact SymPy value of ``name`` at step t: V as a Matrix, vectors as lists.

        Per-input values (version 2) are nested lists with None where the file has no exact form (the
        value was not short; its double and bound are there). ``atoms="named"`` returns the exact
        engine's named atoms instead of ``exp(...)`` (version 2).
        """
        if self.version == 1:
            value = _parse(self._entry(name, t)["exact"], self._v1_names)
        elif name in self.per_input_values:
            ids = self._columns(name).column(f"{name}_exact/{t}")
            nodes = self._nodes(atoms)
            return [[nodes[int(i)] if i >= 0 else None for i in row] for row in ids]
        else:
            nodes = self._nodes(atoms)
            value = nested_map(self._entry(name, t)["exact"], lambda i: nodes[i])
        return sp.Matrix(value) if self._is_matrix(name) else value

    def _is_matrix(self, name: str) -> bool:
        """A parameter or read-out of two axes (V; W_K, W_Q, ...) is read as a SymPy Matrix."""
        if self.model is None:
            return name == "V"
        shape = {**self.model["parameters"], **self.model["readouts"]}.get(name, [])
        return len(shape) == 2

    def node(self, index: int, atoms: str = "exp") -> sp.Basic:
        """The exact value of node ``index`` of the table (a verdict's witness names one, version 2)."""
        if self.version == 1:
            raise ValueError(f"{self.path}: version-1 oracles have no node table")
        return self._nodes(atoms)[index]

    def population(self) -> dict[str, np.ndarray]:
        """The inputs in order: ``tokens`` (n, N-1), ``labels`` (n,), ``weight`` (n,) (version 2)."""
        columns = self._columns("S")
        return {k: columns.column(k) for k in ("tokens", "labels", "weight") if k in columns.members}

    def _nodes(self, atoms: str) -> list[sp.Basic]:
        """The node table decoded once per kind of atoms ("exp" or "named")."""
        from rwsymbolic.arithmetic._json import long_integers

        if atoms not in self._decoded:
            with long_integers():
                self._decoded[atoms] = decode_nodes(self.header["nodes"], atoms)
        return self._decoded[atoms]

    @cached_property
    def _v1_names(self) -> dict[str, object]:
        from rwsymbolic.engine._derive import DELL, ELL
        from rwtasks import symbol

        names: dict[str, object] = {"ell": ELL, "dell": DELL}
        for key in ("p", "eta", "eps", "mu"):
            text = self.config.get(key)
            if text is not None:
                for s in sp.sympify(text).free_symbols:
                    names[str(s)] = symbol(str(s))
        return names

    def close(self) -> None:
        if self._per_input is not None:
            self._per_input.close()

    def __repr__(self) -> str:
        c = self.config
        return (
            f"Oracle({str(self.path)!r}, version {self.version}, {c.get('task')} K={c.get('K')} N={c.get('N')}, "
            f"steps 0..{self.T}, per-input {'yes' if self.has_per_input else 'no'})"
        )


def _parse(node: object, names: dict) -> object:
    from rwsymbolic.arithmetic._json import long_integers

    if isinstance(node, list):
        return [_parse(n, names) for n in node]
    with long_integers():
        return sp.sympify(node, locals=names)


def load_oracle(path: str | os.PathLike, exact: bool = False, verify: bool = False) -> Oracle:
    """Open an oracle written by ``rw derive --json`` or ``write_oracle`` (version 3, or 2, or 1).

    The header is validated against the schema of its version. By default ``steps[t]`` holds float64
    arrays (refused, with the reason, when the values are symbolic); ``exact=True`` gives the exact
    SymPy values instead. ``verify`` also checks the per-input file's SHA-256 against the header.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from rwtasks import CircleWalk
    >>> from rwsymbolic import derive, write_oracle
    >>> path = write_oracle(derive(CircleWalk(3, 3, "1/2"), 1, mu=1), pathlib.Path(tempfile.mkdtemp()) / "o.json")
    >>> oracle = load_oracle(path)
    >>> float(oracle.steps[1]["V"][0, 0]), bool(oracle.error("V", 1)[0, 0] <= 1e-16)
    (0.5555555555555556, True)
    >>> load_oracle(path, exact=True).steps[1]["V"][0, 0]
    5/9
    >>> oracle.value("S", 1).shape  # per input: 12 inputs x N = 3 positions
    (12, 3)
    """
    path = Path(path)
    header = read_header(path)
    # The node table is checked while it is decoded; validating it entry by entry here would cost
    # more than reading it.
    body = {**header, "nodes": []} if header["version"] >= 2 else header
    try:
        jsonschema.validate(body, load_schema(SCHEMA_NAMES[header["version"]]))
    except jsonschema.ValidationError as err:
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        raise ValueError(f"{path}: not a valid oracle header at {where}: {err.message[:200]}") from None
    return Oracle(path, header, exact, verify)


def read_oracle(path: str | os.PathLike) -> dict:
    """Deprecated: ``load_oracle(path, exact=True)``; returns {"config", "steps"} as before."""
    import warnings

    warnings.warn(
        "rwsymbolic.read_oracle is deprecated: use rwsymbolic.load_oracle(path, exact=True)",
        DeprecationWarning,
        stacklevel=2,
    )
    oracle = load_oracle(path, exact=True)
    return {"config": oracle.config, "steps": oracle.steps}
