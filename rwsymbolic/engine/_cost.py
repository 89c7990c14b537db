"""What a ``rw derive`` job costs, before any work: seconds, peak memory and bytes written (``--json``).

The exact engine's work per state t of the trajectory, G the number of inputs it sums over (the
rooted walks of a circle, 2^(N-1), or the whole population), measured on this project's 2-core
machines (``benchmarks/oracle_cost.py`` prints the measured costs beside these estimates):

* t = 0, 1 (uniform attention, grouped by token histograms, python-flint): well under a second;
* t = 2 (every input its own group; atoms on linear forms): about 5e-5 s per input and term,
  G·(N + K) terms, and the loss and accuracy sums over G groups (1.2e-3 s and 2.5e-3 s per group);
* t >= 3 (SymPy expressions whose size grows with G): about 3e-4 · G² · (t - 2) s per pass (each
  V entry is a sum over every input of the previous step, and every input's f reads all of them);
  the last state's loss adds about 0.3 of its pass.

With symbolic probabilities (a symbolic p) every value from t = 2 on holds rational functions of the
symbols inside the exponential atoms: up to twice the rational-p time (measured 0.6x to 1.6x with
this oracle writer at K <= 4, N <= 11; the former writer, which printed every value as an expanded
string, took 175x to over 1000x). Memory follows the same terms (about 15 KB per input and term at t = 2 and 50 KB · G^1.5 ·
(t - 2) from t = 3, on top of 110 MB for the interpreter and libraries); the file sizes follow the node
table (about 5 nodes per input at t = 2 and 3.5 per input and term from t = 3, 45 bytes each, plus
the digits of the exact rationals) and the per-input columns (about one byte per value once deflated,
at most 16).
"""

from __future__ import annotations

from dataclasses import dataclass

from rwtasks import CircleWalk, FiniteTask

#: Seconds of a uniform-attention pass (t = 0, 1), of the interpreter's start, per input·term at t = 2,
#: per input of the loss and of the accuracy at t >= 2, per G²·(t - 2) of a pass from t = 3 on.
_UNIFORM, _START, _ATOM_TERM, _LOSS, _ACCURACY, _QUADRATIC = 0.04, 0.5, 5e-5, 1.2e-3, 2.5e-3, 3e-4
#: The last state's loss costs this fraction of its pass (from t = 3; its z are the largest values).
_LAST_LOSS = 0.3
#: The oracle writer: this fraction of the passes from t = 3 with per-input values, of everything without.
_WRITE_PER_INPUT, _WRITE = 0.25, 0.05
#: Symbolic probabilities: this factor on every cost from two steps on.
SYMBOLIC_FACTOR = 2.0
#: Bytes: the interpreter and libraries; per input·term at t = 2; per G^1.5·(t - 2) from t = 3; the
#: writer's chunks of per-input rows.
_BASE_MEMORY, _ATOM_MEMORY, _QUADRATIC_MEMORY, _CHUNK_MEMORY = 110e6, 15e3, 50e3, 50e6
#: Node table: nodes per input at t = 2, per input·term per state from t = 3; bytes per node; bytes of
#: exact-rational digits per input and per-step value (t <= 2) and per input² and term (t >= 3).
_NODES_AT_2, _NODES_LATER, _NODE_BYTES, _DIGITS, _DIGITS_LATER = 5.0, 3.5, 45.0, 0.3, 0.05
#: Per-input columns: bytes per value once deflated (at most 16 raw), and per input for the population.
_VALUE_BYTES, _INPUT_BYTES = 1.0, 4.0


#: Per-input values are written by default up to this population size (``write_oracle(per_input=None)``).
PER_INPUT_LIMIT = 4096


@dataclass(frozen=True)
class JobEstimate:
    """Estimated cost of a job: ``seconds`` (derivation, read-outs and writing), peak ``memory`` and the
    bytes of the header and of the per-input file (0 without them)."""

    seconds: float
    memory: int
    header_bytes: int
    per_input_bytes: int

    @property
    def file_bytes(self) -> int:
        return self.header_bytes + self.per_input_bytes


def summed_inputs(task: CircleWalk | FiniteTask, rotate: bool = True) -> int:
    """G: the inputs the exact engine sums over (rooted walks of a circle with ``rotate``, else all)."""
    if rotate and task.rotation_invariant:
        return 2 ** (task.N - 1)  # the rooted walks (one per rotation orbit), zero-probability ones counted
    return task.population().size  # refuses a population beyond its enumeration limit


def symbolic_probabilities(task: CircleWalk | FiniteTask) -> bool:
    """True when the task's input probabilities have free symbols (a symbolic p)."""
    return bool(task.symbols)


def job_estimate(
    task: CircleWalk | FiniteTask,
    steps: int,
    json: bool = True,
    per_input: bool | None = None,
    rotate: bool = True,
) -> JobEstimate:
    """The estimated seconds, memory and file sizes of ``derive`` for ``steps`` steps with every state's
    loss, accuracy and mean attention and, with ``json``, ``write_oracle`` (per-input values as
    ``write_oracle`` decides when ``per_input`` is None).

    >>> est = job_estimate(CircleWalk(5, 6, "3/10"), 4)
    >>> 1 < est.seconds < 10, est.memory < 2**30, est.file_bytes < 50 * 2**20
    (True, True, True)
    >>> job_estimate(CircleWalk(5, 6, "3/10"), 8).seconds < 60
    True
    """
    G = summed_inputs(task, rotate)
    K, N = task.K, task.N
    terms = N + K
    n = G * K if rotate and task.rotation_invariant else G
    if per_input is None:
        per_input = n <= PER_INPUT_LIMIT
    seconds, memory = _START, _BASE_MEMORY
    late = 0.0
    for t in range(steps + 1):
        if t <= 1:
            seconds += _UNIFORM
            continue
        if t == 2:
            seconds += _ATOM_TERM * G * terms
            memory += _ATOM_MEMORY * G * terms
        else:
            work = _QUADRATIC * G * G * (t - 2)
            late += work
            seconds += work
            memory += _QUADRATIC_MEMORY * G**1.5 * (t - 2)
            if t == steps:
                seconds += _LAST_LOSS * work
        seconds += (_LOSS + _ACCURACY) * G
    if json:
        seconds += (_WRITE_PER_INPUT * late if per_input else _WRITE * (seconds - _START)) + 0.1
        if per_input:
            memory += _CHUNK_MEMORY
    if steps >= 2 and symbolic_probabilities(task):
        seconds = _START + (seconds - _START) * SYMBOLIC_FACTOR
    if not json:
        return JobEstimate(seconds, int(memory), 0, 0)
    states, early = steps + 1, min(steps + 1, 3)
    nodes = 5 * (K * K + K + N) * states
    nodes += _NODES_AT_2 * G * (steps >= 2) + _NODES_LATER * G * terms * max(0, steps - 2)
    header = _NODE_BYTES * nodes + _DIGITS * G * (K * K + K + N) * early
    header += _DIGITS_LATER * G * G * terms * max(0, steps - 2)
    columns = 0.0
    if per_input:
        values = n * states * (2 * N + K)
        columns = _VALUE_BYTES * values + _INPUT_BYTES * n + 2 * n * (N - 1) + 4096
    return JobEstimate(seconds, int(memory), int(header) + 4096, int(columns))
