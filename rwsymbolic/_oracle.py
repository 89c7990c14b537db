"""Exact oracles: a trajectory as versioned JSON (schema: ``rwsymbolic/oracle.schema.json``).

Every value is stored as ``{"exact": <SymPy string>, "float": <number or null>}`` arrays: the exact
string parses back with SymPy (``read_oracle``), the float is the nearest double (JSON prints it with
up to 17 significant digits, enough to round-trip) and is null when the value contains symbols.
Files are written atomically (temporary file in the same folder, then ``os.replace``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import sympy as sp

from rwio import write_text_atomic
from rwsymbolic._derive import DELL, ELL, StepState, Trajectory
from rwsymbolic._json import exact_json, exact_string, long_integers
from rwtasks import CircleWalk, symbol

ORACLE_FORMAT = "rwtoolkit-derive-oracle"
ORACLE_VERSION = 1
ORACLE_SCHEMA_PATH = Path(__file__).with_name("oracle.schema.json")
#: Per-input values (logits, S, f) are written by default up to this population size.
PER_INPUT_LIMIT = 4096


def _config(traj: Trajectory, per_input: bool) -> dict:
    task = traj.task
    config = {
        "task": getattr(task, "name", "finite"),
        "K": traj.K,
        "N": traj.N,
        "p": exact_string(task.p) if isinstance(task, CircleWalk) else None,
        "eta": exact_string(traj.eta),
        "eps": exact_string(traj.eps),
        "mu": exact_string(traj.mu),
        "loss": traj.loss.name,
        "steps": len(traj.states) - 1,
        "population_size": traj.population_size,
        "per_input": per_input,
        "index_base": 0,
        "init": "zero",
    }
    return config


def verdict_json(state: StepState) -> dict:
    """{predicate: {"outcome": proved|refuted|undecided, "detail": str, "witness": str or null}}."""
    from rwsymbolic._structure import outcome, structure_verdicts  # _structure builds on this module's peers

    out = {}
    for name, check in structure_verdicts(state).items():
        witness = None
        if check.witness is not None:
            witness = ", ".join(
                f"{k}: {exact_string(v) if isinstance(v, sp.Basic) else v}" for k, v in check.witness.items()
            )
        out[name] = {"outcome": outcome(check), "detail": check.detail, "witness": witness}
    return out


def oracle_dict(traj: Trajectory, per_input: bool | None = None, verdict: bool = False) -> dict:
    """The oracle as a JSON-ready dict; per-input values when the population is small or on request.

    With ``verdict`` every step also carries the structure predicates' outcomes (``verdict_json``).
    """
    if per_input is None:
        per_input = traj.population_size <= PER_INPUT_LIMIT
    steps = []
    with long_integers():
        for state in traj.states:
            value = state.atom_form  # exact values with named atoms: printed as exp(...), evaluated fast
            entry = {
                "t": state.t,
                "V": exact_json(value("V")),
                "w_tok": exact_json(list(value("w_tok"))),
                "c": exact_json(list(value("c"))),
                "loss": exact_json(value("loss")),
                "accuracy": exact_json(value("accuracy")),
                "mean_attention": exact_json(value("mean_attention")),
                "mean_logits": exact_json(value("mean_logits")),
                "mean_f": exact_json(value("mean_f")),
            }
            if per_input:
                entry["per_input"] = {
                    "logits": exact_json(value("logits")),
                    "S": exact_json(value("S")),
                    "f": exact_json([list(f) for f in value("f")]),
                }
            if verdict:
                entry["verdict"] = verdict_json(state)
            steps.append(entry)
    return {
        "format": ORACLE_FORMAT,
        "version": ORACLE_VERSION,
        "config": _config(traj, per_input),
        "notation": {
            "V": "V(t), K x K, row = output token",
            "w_tok": "token part of W(t) x~_N (K entries); W(t) = w(t) x~_N^T / mu, W11 = W21 = 0",
            "c": "positional part of W(t) x~_N in the basis p_1..p_N (N entries)",
            "logits": "x~_j^T W x~_N = x_j^T w_tok + mu c_j, j = 1..N, per input in task.population() order",
            "abstract_loss": "loss 'any': ell(z) is the loss, dell(z) its derivative",
        },
        "steps": steps,
    }


def write_oracle(
    traj: Trajectory, path: str | os.PathLike, per_input: bool | None = None, verdict: bool = False
) -> Path:
    """Write the trajectory's oracle JSON atomically to ``path``; returns the path."""
    path = Path(path)
    data = oracle_dict(traj, per_input, verdict)
    text = json.dumps(data, indent=1, allow_nan=False)
    return write_text_atomic(text + "\n", path)


def load_oracle_schema() -> dict:
    """The JSON Schema of oracle files."""
    return json.loads(ORACLE_SCHEMA_PATH.read_text(encoding="utf-8"))


def _parse(node: object, names: dict) -> object:
    if isinstance(node, list):
        return [_parse(n, names) for n in node]
    return sp.sympify(node, locals=names)


def read_oracle(path: str | os.PathLike) -> dict:
    """Read an oracle file back with exact SymPy values: {"config", "steps": [{"t", "V": Matrix, ...}]}.

    Symbols are the toolkit's real symbols (``rwtasks.symbol``); ``ell``/``dell`` the abstract loss.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("format") != ORACLE_FORMAT or data.get("version") != ORACLE_VERSION:
        raise ValueError(f"{path}: not a version-{ORACLE_VERSION} {ORACLE_FORMAT} file")
    names: dict[str, object] = {"ell": ELL, "dell": DELL}
    for key in ("p", "eta", "eps", "mu"):
        text = data["config"].get(key)
        if text is not None:
            for s in sp.sympify(text).free_symbols:
                names[str(s)] = symbol(str(s))
    steps = []
    with long_integers():
        for entry in data["steps"]:
            out: dict[str, object] = {"t": entry["t"]}
            for key, value in entry.items():
                if key == "t":
                    continue
                if key == "verdict":
                    out[key] = value
                    continue
                if key == "per_input":
                    out[key] = {k: _parse(v["exact"], names) for k, v in value.items()}
                    continue
                parsed = _parse(value["exact"], names)
                out[key] = sp.Matrix(parsed) if key == "V" else parsed
            steps.append(out)
    return {"config": data["config"], "steps": steps}


def state_values(state: StepState) -> dict:
    """The exact values of one state as ``read_oracle`` returns them (for comparisons in tests)."""
    return {
        "V": state.V,
        "w_tok": list(state.w_tok),
        "c": list(state.c),
        "loss": state.loss,
        "accuracy": state.accuracy,
        "mean_attention": state.mean_attention,
        "mean_logits": state.mean_logits,
        "mean_f": state.mean_f,
    }
