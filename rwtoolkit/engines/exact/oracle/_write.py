"""Write an exact trajectory as an oracle: a JSON header (node table, per-step values) and per-input columns.

Version 2 of ``rwtoolkit-derive-oracle`` (schema ``rwtoolkit/schemas/oracle.schema.json``):

* one writer for every exact trajectory (``ExactTrajectory``, whichever engine ``rwtoolkit.engines.select``
  ran): the parts every trajectory has are written once (the model, its parameters and read-outs by name,
  the configuration, the population and the per-input S, f and logits), and the reduced view's parts
  where it exists (the reduced coordinates' description, the structure verdicts, per-input values expanded
  from the engine's groups), the full coordinates' where it does not (hyperparameters, the positions P);
* the header names the model, its parameters and read-outs (docs/notation.md), the configuration,
  and holds one node table (``rwtoolkit.engines.exact.oracle._nodes``) in which every exact value of every step
  is written once; each value is ``{"exact": node indices, "float": doubles, "error": bounds}`` with
  the certified bound |float - exact| <= error (``rwtoolkit.engines.exact.oracle._balls``);
* the per-input read-outs (S, f and the logits of every input, in ``task.population()`` order; a sequence
  model's next-token logits at every position ``token_logits`` (n, L, K) and f instead, it has no S: the
  trajectory's ``per_input_names``) go to the columnar file beside it (``rwtoolkit.runtime.oracle_format``),
  written step by step in chunks of inputs: the doubles, their bounds, and the exact value's node where it
  is short (it adds at most ``SHORT_CHARS`` characters to the table, e.g. every rational of a
  uniform-attention step).

Memory stays at the engine's own plus one step's per-group values: the per-input rows are expanded
from the engine's groups chunk by chunk, never held for the whole population.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import sympy as sp
from tqdm import tqdm

from rwtoolkit.engines.exact.arithmetic._json import long_integers
from rwtoolkit.engines.exact.engine._cost import PER_INPUT_LIMIT
from rwtoolkit.engines.exact.engine._derive import ReducedTrajectory, StepState
from rwtoolkit.engines.exact.engine._trajectory import READOUT_AXES, ExactTrajectory
from rwtoolkit.engines.exact.oracle._balls import BallTable
from rwtoolkit.engines.exact.oracle._nodes import NodeTable, nested_map
from rwtoolkit.io import write_files_atomic
from rwtoolkit.models import model_summary
from rwtoolkit.runtime.oracle_format import FORMAT, VERSION, ColumnWriter, per_input_path, sha256_of

#: A per-input exact value is written when it adds at most this many characters to the node table.
SHORT_CHARS = 512
#: Inputs per chunk of the per-input columns.
CHUNK_ROWS = 65536

#: The model section's description of the paper's model in reduced coordinates (its reduced view).
REDUCED_DEFINITION = (
    "f(X~) = V X S(X~^T W x~_N), S the softmax over the N positions; "
    "zero initialisation (Section 3 of the paper)"
)
REDUCED_COORDINATES = (
    "reduced (Lemma B.1; docs/theory.md#reduction): W(t) = w(t) x~_N^T / mu with w = [w_tok; sum_j c_j p_j]"
)
#: How the full coordinates' positions are built (``rwtoolkit.models.rational_positions``).
POSITIONS = "rwtoolkit.models.rational_positions(N, mu): entries 0 and ±1, PᵀP = μI exactly"


def model_header(traj: ExactTrajectory) -> dict:
    """The header's model section: its name and definition, then the reduced coordinates' description
    (reduced view) or the hyperparameters (full coordinates) and the ``target`` naming a model that is not
    registered (``Model.describe()``), then the parameters, read-outs and per-input values with their shapes
    (per input: ``traj.per_input_shapes()``)."""
    K, N = traj.K, traj.N
    section: dict[str, Any] = {"name": traj.model.name}
    if traj.reduced is not None:
        section.update(definition=REDUCED_DEFINITION, coordinates=REDUCED_COORDINATES)
    else:
        section.update(definition=model_summary(traj.model), hyperparameters=dict(traj.model.hyperparameters))
        if traj.model.target is not None:
            section["target"] = traj.model.target
    sizes = {"K": K, "N": N}
    section["parameters"] = traj.parameter_shapes()
    section["readouts"] = {name: [sizes[a] for a in READOUT_AXES[name]] for name in traj.readout_names}
    section["per_input"] = traj.per_input_shapes()
    return section


#: The header's notation of a trajectory in reduced coordinates.
NOTATION = {
    "V": "V(t), K x K, row = output token",
    "w_tok": "token part of w(t) = W(t) x~_N (K entries); W(t) = w(t) x~_N^T / mu, W11 = W21 = 0",
    "c": "positional part of w(t) in the basis p_1..p_N (N entries): w_pos = sum_j c_j p_j",
    "logits": "x~_j^T W x~_N = x_j^T w_tok + mu c_j, j = 1..N, per input in task.population() order",
    "S": "the attention over the N positions, per input",
    "f": "f = V X S (K entries), per input",
    "nodes": "exact values: node table, children first (rwtoolkit/engines/exact/oracle/_nodes.py); 'exact' holds indices",
    "error": "certified bound: |float - exact value| <= error",
    "abstract_loss": "loss 'any': ell(z) is the loss, dell(z) its derivative",
}
#: The header's notation of a trajectory in the model's own parameters.
MODEL_NOTATION = {
    "parameters": "the model's parameters by its own names (model.parameters; rwtoolkit.models, docs/guide/models.md)",
    "accuracy": "P(smallest argmax of f = y); absent at a step where a comparison of f is undecided",
    "logits": "the attention logits of the N positions, per input in task.population() order",
    "S": "the attention over the N positions, per input",
    "f": "the prediction (K entries), per input",
    "nodes": NOTATION["nodes"],
    "error": NOTATION["error"],
}
#: The header's notation of a sequence model's trajectory (a model with next-token logits, no attention S).
SEQUENCE_NOTATION = {
    "parameters": MODEL_NOTATION["parameters"],
    "objective": "the cross-entropy on token_logits (config.objective): lm, the mean over positions i = 1..L of "
    "-log softmax(token_logits_i)[x_(i+1)], last, at position L only; weighted by each input's exact "
    "probability (rwtoolkit.models.CrossEntropy); config.loss, config.eps and config.mu unused",
    "loss": "the objective's value",
    "accuracy": MODEL_NOTATION["accuracy"],
    "token_logits": "the next-token logits at every position, L = N - 1 rows of K, per input in "
    "task.population() order: row i predicts token i + 1 (the label x_N at row L)",
    "f": "the prediction softmax(token_logits[L]) (K entries), per input",
    "nodes": NOTATION["nodes"],
    "error": NOTATION["error"],
}


def _notation(traj: ExactTrajectory) -> dict[str, str]:
    """The header's notation: the reduced coordinates', a model's in its own parameters, or a sequence
    model's."""
    if traj.reduced is not None:
        return NOTATION
    return SEQUENCE_NOTATION if traj.model.TOKEN_LOGITS else MODEL_NOTATION


def _config(traj: ExactTrajectory, per_input: bool) -> dict:
    """The header's configuration; with the full coordinates' positions (M, how P is built) where the model
    reads them, the objective of a model with next-token logits (which reads token ids, not P), and the update
    rule where it is not plain GD (``Optimizer.describe(exact=True)``; a file without it is plain GD), and the
    learning-rate schedule and stages where given (absent: a constant rate on every parameter)."""
    task = traj.task
    config: dict[str, Any] = {
        "task": getattr(task, "name", "finite"),
        "K": traj.K,
        "N": traj.N,
        "p": task.describe().get("p"),
        "eta": str(traj.eta),
        "eps": str(traj.eps),
        "mu": str(traj.mu),
        "loss": traj.ell.name,
        "steps": len(traj.states) - 1,
        "population_size": traj.population_size,
        "per_input": per_input,
        "index_base": 0,
        "init": traj.init,
    }
    objective = getattr(traj, "objective", None)  # a model with next-token logits: its cross-entropy
    if objective is not None:  # a sequence model reads token ids, not the positions P
        config["objective"] = objective
    elif traj.M is not None:
        config.update(M=traj.M, positions=POSITIONS)
    rule = getattr(traj, "optimizer", None)  # an update rule other than plain GD: its exact hyperparameters
    if rule is not None and not rule.plain:
        config["optimizer"] = rule.describe(exact=True)
    schedule, stages = getattr(traj, "schedule", None), getattr(traj, "stages", None)
    if schedule is not None:  # the learning-rate schedule, as --schedule takes it
        config["schedule"] = schedule.text
    if stages is not None:  # the stages in order: [steps, [parameter names]]
        config["stages"] = [[int(k), list(names)] for k, names in stages]
    return config


def verdict_json(state: StepState, table: NodeTable | None = None) -> dict:
    """{predicate: {"outcome": proved|refuted|undecided, "detail": str, "witness": str or null}}.

    With a node table, an exact witness difference is written as its node index
    (``"witness": {"name": index}``) instead of its text, and strings stay strings.
    """
    from rwtoolkit.engines.exact.analysis._structure import outcome, structure_verdicts
    from rwtoolkit.engines.exact.arithmetic._json import exact_string

    out: dict[str, dict] = {}
    for name, check in structure_verdicts(state).items():
        witness: object = None
        if check.witness is not None:
            if table is None:
                witness = ", ".join(
                    f"{k}: {exact_string(v) if isinstance(v, sp.Basic) else v}"
                    for k, v in check.witness.items()
                )
            else:
                witness = {
                    k: (table.add(v) if isinstance(v, sp.Basic) else str(v)) for k, v in check.witness.items()
                }
        out[name] = {"outcome": outcome(check), "detail": check.detail, "witness": witness}
    return out


def _flat(value: object) -> list[int]:
    if isinstance(value, list):
        return [i for v in value for i in _flat(v)]
    return [value]  # type: ignore[list-item]


def value_entry(table: NodeTable, balls: BallTable, value: object) -> dict:
    """{"exact": indices, "float": doubles or null, "error": bounds or null} of a scalar, list or Matrix."""
    ids = table.add_nested(value)
    flat = _flat(ids)
    doubles = dict(zip(flat, balls.doubles(flat)))  # a node's double and bound, wherever it appears
    if any(d is None for d in doubles.values()):
        return {"exact": ids, "float": None, "error": None}
    return {
        "exact": ids,
        "float": nested_map(ids, lambda i: doubles[i][0]),  # type: ignore[index]
        "error": nested_map(ids, lambda i: doubles[i][1]),  # type: ignore[index]
    }


def _step_entry(traj: ExactTrajectory, t: int, table: NodeTable, balls: BallTable, verdict: bool) -> dict:
    """Step t: every parameter and read-out (an undecided accuracy left out), and with ``verdict`` the
    structure predicates of the reduced view."""
    entry: dict[str, Any] = {"t": t}
    for name in (*traj.parameter_names, *traj.readout_names):
        value = traj.element(t, name)
        if value is not None:
            entry[name] = value_entry(table, balls, value)
    if verdict:
        assert traj.reduced is not None  # write_oracle refuses verdict=True without it
        entry["verdict"] = verdict_json(traj.reduced.states[t], table)
    return entry


def bounds_float32(bounds: list[float]) -> np.ndarray:
    """Error bounds as float32, each rounded up (an upper bound stays an upper bound).

    >>> b = bounds_float32([1e-17, 0.0, 1e-300])
    >>> bool(np.all(b.astype(np.float64) >= [1e-17, 0.0, 1e-300])), b.dtype.name
    (True, 'float32')
    """
    wide = np.asarray(bounds, dtype=np.float64)
    narrow = wide.astype(np.float32)
    low = narrow.astype(np.float64) < wide
    narrow[low] = np.nextafter(narrow[low], np.float32(np.inf))
    return narrow


class _GroupValues:
    """One step's per-group values of one quantity: doubles, bounds and exact node indices by key."""

    def __init__(self, values: list[Any], table: NodeTable, balls: BallTable) -> None:
        base = len(table)
        ids, sizes = [], []
        for v in values:  # a scratch extension of the table: every value, to evaluate it
            before = len(table)
            ids.append(table.add(v))
            sizes.append(sum(len(json.dumps(n, separators=(",", ":"))) for n in table.nodes[before:]))
        doubles = balls.doubles(ids)
        self.floats = all(d is not None for d in doubles)
        self.value = np.array([d[0] if d else 0.0 for d in doubles], dtype=np.float64)
        self.error = bounds_float32([d[1] if d else 0.0 for d in doubles])
        short = [size <= SHORT_CHARS for size in sizes]  # a value already in the table adds 0
        table.truncate(base)
        balls.truncate(base)
        # Keep the short values only (re-added in the same order: the same indices every time).
        self.exact = np.array(
            [table.add(v) if keep else -1 for v, keep in zip(values, short)], dtype=np.int32
        )


def _step_columns(
    state: StepState, traj: ReducedTrajectory, table: NodeTable, balls: BallTable
) -> dict[str, Any]:
    """The per-group tables of one step and the maps that expand them to inputs."""
    ev = state.evaluated
    inputs = traj.inputs
    K = inputs.K
    n_cls = int(ev.cls.max()) + 1 if ev.cls.size else 1
    codes, S_vals, logit_vals = [], [], []
    for g, S_of in enumerate(ev.S_of):
        for (c, s), value in S_of.items():
            codes.append((g * n_cls + c) * K + s)
            S_vals.append(value)
            logit_vals.append(ev.logit_of[g][(c, s)])
    code_arr = np.asarray(codes, dtype=np.int64)
    order = np.argsort(code_arr, kind="stable")
    G = len(ev.f)
    return {
        "n_cls": n_cls,
        "codes": code_arr[order],
        "order": order,
        "S": _GroupValues(S_vals, table, balls),
        "S_query": _GroupValues(list(ev.S_query), table, balls),
        "logits": _GroupValues(logit_vals, table, balls),
        "logits_query": _GroupValues([ev.logit_query], table, balls),
        "f": _GroupValues([v for f in ev.f for v in f], table, balls),
        "groups": G,
    }


def _rows(traj: ReducedTrajectory, chunk: int) -> Iterable[tuple[int, np.ndarray]]:
    """(rotation r, rooted input indices) chunks in ``task.population()`` order (input r·n + i)."""
    inputs = traj.inputs
    for r in range(inputs.K if inputs.rotation else 1):
        for start in range(0, inputs.size, chunk):
            yield r, np.arange(start, min(start + chunk, inputs.size))


def _expand(
    cols: dict[str, Any], ev: Any, traj: ReducedTrajectory, quantity: str, part: str, r: int, rows: np.ndarray
) -> np.ndarray:
    """Rows of the per-input ``quantity`` (S, logits, f) for rooted inputs ``rows`` rotated by r."""
    inputs = traj.inputs
    K, L = inputs.K, inputs.N - 1
    g = ev.inverse[rows]
    if quantity == "f":
        table = getattr(cols["f"], part).reshape(cols["groups"], K)
        return table[g[:, None], (np.arange(K)[None, :] - r) % K]
    keys = (g[:, None] * cols["n_cls"] + ev.cls[None, :]) * K + inputs.tokens[rows]
    where = cols["order"][np.searchsorted(cols["codes"], keys)]
    body = getattr(cols[quantity], part)[where]
    query = getattr(cols[quantity + "_query"], part)
    last = query[g] if quantity == "S" else np.broadcast_to(query[0], g.shape)
    out = np.empty((len(rows), L + 1), dtype=body.dtype)
    out[:, :L] = body
    out[:, L] = last
    return out


class _ReducedColumns:
    """The per-input values of a trajectory in reduced coordinates: expanded chunk by chunk from the
    engine's groups (rooted inputs, rotated by r for a circle)."""

    def __init__(self, traj: ReducedTrajectory) -> None:
        self.traj, self.inputs = traj, traj.inputs

    def weights(self) -> list[sp.Expr]:
        return list(self.inputs.prob_values)

    def chunks(self) -> Iterable[tuple[int, np.ndarray]]:
        return _rows(self.traj, CHUNK_ROWS)

    def tokens(self, r: int, rows: np.ndarray) -> np.ndarray:
        inputs = self.inputs
        return (inputs.tokens[rows] + r) % inputs.K if inputs.rotation else inputs.tokens[rows]

    def labels(self, r: int, rows: np.ndarray) -> np.ndarray:
        inputs = self.inputs
        return (inputs.labels[rows] + r) % inputs.K if inputs.rotation else inputs.labels[rows]

    def weight_index(self, rows: np.ndarray) -> np.ndarray:
        return self.inputs.prob_index[rows]

    def step(self, t: int, table: NodeTable, balls: BallTable) -> tuple[bool, Callable[..., np.ndarray]]:
        """Whether step t's values all have doubles, and its rows: (quantity, part, r, rows) -> array."""
        state = self.traj.states[t]
        cols = _step_columns(state, self.traj, table, balls)
        floats = all(cols[q].floats for q in ("S", "S_query", "logits", "logits_query", "f"))
        return floats, lambda quantity, part, r, rows: _expand(
            cols, state.evaluated, self.traj, quantity, part, r, rows
        )


class _FullColumns:
    """The per-input values of a trajectory in the model's own parameters: every input's, in one chunk."""

    def __init__(self, traj: ExactTrajectory) -> None:
        self.traj, self.population = traj, traj.task.population()

    def weights(self) -> list[sp.Expr]:
        return list(self.population.prob_values)

    def chunks(self) -> Iterable[tuple[int, np.ndarray]]:
        return [(0, np.arange(self.traj.population_size))]

    def tokens(self, r: int, rows: np.ndarray) -> np.ndarray:
        return self.population.tokens[rows]

    def labels(self, r: int, rows: np.ndarray) -> np.ndarray:
        return self.population.labels[rows]

    def weight_index(self, rows: np.ndarray) -> np.ndarray:
        return self.population.prob_index[rows]

    def step(self, t: int, table: NodeTable, balls: BallTable) -> tuple[bool, Callable[..., np.ndarray]]:
        state, n = self.traj.states[t], self.traj.population_size
        shapes = {q: (n, *shape) for q, shape in self.traj.per_input_shapes().items()}
        values = {  # the arithmetic's elements: a DAG node enters the table straight from its program
            q: _GroupValues(list(np.asarray(getattr(state, q), dtype=object).ravel()), table, balls)
            for q in shapes
        }
        return all(v.floats for v in values.values()), lambda quantity, part, r, rows: getattr(
            values[quantity], part
        ).reshape(shapes[quantity])[rows]


def _write_columns(path: str, traj: ExactTrajectory, table: NodeTable, balls: BallTable, bar: Any) -> dict:
    """Stream the per-input file to ``path`` (the population, then the per-input read-outs of every step:
    the logits, S and f, or a sequence model's token_logits and f); returns its description for the header."""
    source = _ReducedColumns(traj.reduced) if traj.reduced is not None else _FullColumns(traj)
    n, N = traj.population_size, traj.N
    shapes = {q: (n, *shape) for q, shape in traj.per_input_shapes().items()}
    weights = _GroupValues(source.weights(), table, balls)
    floats = weights.floats
    with ColumnWriter(path) as out:
        with out.member("tokens", (n, N - 1), "<i2") as put:
            for r, rows in source.chunks():
                put(source.tokens(r, rows))
        with out.member("labels", (n,), "<i2") as put:
            for r, rows in source.chunks():
                put(source.labels(r, rows))
        parts = [("weight", "value", "<f8"), ("weight_error", "error", "<f4")] if weights.floats else []
        for name, part, dtype in [*parts, ("weight_exact", "exact", "<i4")]:
            with out.member(name, (n,), dtype) as put:
                for _, rows in source.chunks():
                    put(getattr(weights, part)[source.weight_index(rows)])
        for t in range(len(traj.states)):
            step_floats, step_rows = source.step(t, table, balls)
            floats &= step_floats
            for quantity in shapes:
                parts = [("", "value", "<f8"), ("_error", "error", "<f4")] if step_floats else []
                for suffix, part, dtype in [*parts, ("_exact", "exact", "<i4")]:
                    with out.member(f"{quantity}{suffix}/{t}", shapes[quantity], dtype) as put:
                        for r, rows in source.chunks():
                            put(step_rows(quantity, part, r, rows))
            bar.update(1)
        members = list(out.members)
    return {
        "rows": n,
        "order": "task.population()",
        "steps": len(traj.states),
        "floats": floats,
        "members": members,
    }


def _dump(header: dict, nodes: list, handle: Any) -> None:
    """The header as JSON, one node of the table per line (compact), the rest indented."""
    text = json.dumps({**header, "nodes": "@NODES@"}, indent=1, allow_nan=False)
    before, after = text.split('"@NODES@"')
    handle.write(before)
    handle.write("[\n")
    for i, node in enumerate(nodes):
        handle.write(json.dumps(node, separators=(",", ":")))
        handle.write(",\n" if i + 1 < len(nodes) else "\n")
    handle.write("]")
    handle.write(after)
    handle.write("\n")


def write_oracle(
    traj: ExactTrajectory,
    path: str | os.PathLike,
    per_input: bool | None = None,
    verdict: bool = False,
    progress: bool = False,
) -> Path:
    """Write the trajectory's oracle atomically: the header at ``path`` and, with per-input values, the
    columns at ``per_input_path(path)``; returns the header's path.

    ``per_input=None`` writes the per-input values when the population has at most
    ``PER_INPUT_LIMIT`` inputs. With ``verdict`` every step also carries the structure predicates'
    outcomes (the paper's model in reduced coordinates only). The same trajectory always gives the same
    bytes. A ``ModelTrajectory`` (any model, ``derive_model``) is written by its parameters' own names.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from rwtoolkit.tasks import CircleWalk
    >>> from rwtoolkit.engines.exact import derive, load_oracle
    >>> traj = derive(CircleWalk(3, 3, "1/2"), 1, mu=1)
    >>> path = write_oracle(traj, pathlib.Path(tempfile.mkdtemp()) / "o.json")
    >>> load_oracle(path).value("V", 1)[0].tolist()
    [0.5555555555555556, 0.8333333333333334, 0.8333333333333334]
    """
    path = Path(path)
    if per_input is None:
        per_input = traj.population_size <= PER_INPUT_LIMIT
    if verdict and traj.reduced is None:
        raise ValueError(
            "verdict=True: the structure predicates are statements about the paper's model (derive)"
        )
    header = {
        "format": FORMAT,
        "version": VERSION,
        "model": model_header(traj),
        "config": _config(traj, per_input),
        "notation": _notation(traj),
    }
    table = NodeTable()
    balls = BallTable(table.nodes)
    columns_path = per_input_path(path)
    states = len(traj.states)
    bar = tqdm(
        total=states * (2 if per_input else 1),
        desc="oracle",
        unit="step",
        disable=not (progress and sys.stderr.isatty()),
    )
    info: dict[str, Any] = {}

    def write_columns(tmp: str) -> None:
        info.update(_write_columns(tmp, traj, table, balls, bar))
        info["file"] = columns_path.name
        info["bytes"] = os.path.getsize(tmp)
        info["sha256"] = sha256_of(tmp)

    def write_header(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as handle:
            _dump({**header, "steps": steps, "per_input": info or None}, table.nodes, handle)
            handle.flush()
            os.fsync(handle.fileno())

    with long_integers():  # the header and the columns from one node table, written together atomically
        steps = []
        for t in range(states):
            steps.append(_step_entry(traj, t, table, balls, verdict))
            bar.update(1)
        writers: dict[Path, Callable[[str], None]] = {}
        if per_input:
            writers[columns_path] = write_columns
        writers[path] = write_header
        write_files_atomic(writers)
    bar.close()
    if not per_input:
        columns_path.unlink(missing_ok=True)  # a file of an earlier write would not match this header
    return path
