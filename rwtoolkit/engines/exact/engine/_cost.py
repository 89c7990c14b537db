"""What a ``rw derive`` job costs, before any work: seconds, peak memory and bytes written (``--json``).

``job_estimate`` is the reduced engine's (the paper's model from zero, ``rwtoolkit.engines.exact.derive``);
``model_job_estimate`` the generic engine's (any model, ``rwtoolkit.engines.exact.derive_model``, ``rw check --model``).
Each engine plans its run as a ``DeriveJob`` (``derive_job``, ``derive_model_job``: one signature, registered
beside the engine in ``rwtoolkit.engines.GENERIC`` / ``SPECIALISATIONS``), which ``rw derive`` refuses or runs.

The exact engine's work per state t of the trajectory, G the number of inputs it sums over (the
rooted walks of a circle, 2^(N-1), or the whole population), measured on this project's 2-core
machines (``benchmarks/oracle_cost.py`` prints the measured costs beside these estimates):

* t = 0, 1 (uniform attention, grouped by token histograms, python-flint): 0.04 s plus about 3e-6 s
  (t = 0) and 6e-6 s (t = 1) per summed input (the rooted walks are enumerated and grouped);
* t = 2 (every input its own group; atoms on linear forms): about 5e-5 s per input and term,
  G·(N + K) terms, and the loss and accuracy sums over G groups (1.2e-3 s and 2.5e-3 s per group);
* t >= 3 (SymPy expressions whose size grows with G): about 3e-4 · G² · (t - 2) s per pass (each
  V entry is a sum over every input of the previous step, and every input's f reads all of them);
  the last state's loss adds about 0.3 of its pass.

With symbolic probabilities (a symbolic p) every value from t = 2 on holds rational functions of the
symbols inside the exponential atoms: up to twice the rational-p time (measured 0.6x to 1.6x with
this oracle writer at K <= 4, N <= 11; the former writer, which printed every value as an expanded
string, took 175x to over 1000x). Memory follows the same terms (about 15 KB per input and term at t = 2 and 50 KB · G^1.5 ·
(t - 2) from t = 3, on top of 110 MB for the interpreter and libraries, and 250 bytes per input of the
population with per-input values); the file sizes follow the node table (about 5 nodes per input at t = 2
and 3.5 per input and term from t = 3, 45 bytes each, plus the digits of the exact rationals) and the
per-input columns (once deflated: about one byte per value from t = 2, a quarter at t = 1, nothing at t = 0,
where every S is 1/N and every f is 0; half a byte per token). Writing the per-input columns
costs about 1.5e-7 s per value (n inputs, 2N + K values per state), plus, from t = 2 on, the certified
doubles of every group's values (about 3e-4 s per value at t = 2; from t = 3 a quarter of the pass).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rwtoolkit.engines.exact.engine._population import MAX_INPUTS, rooted_walks
from rwtoolkit.engines.exact.engine._trajectory import EngineArguments
from rwtoolkit.tasks import CircleWalk, FiniteTask

if TYPE_CHECKING:
    from rwtoolkit.models import Model

#: Seconds of a uniform-attention pass (t = 0, 1), of the interpreter's start, per input·term at t = 2,
#: per input of the loss and of the accuracy at t >= 2, per G²·(t - 2) of a pass from t = 3 on.
_UNIFORM, _START, _ATOM_TERM, _LOSS, _ACCURACY, _QUADRATIC = 0.04, 0.5, 5e-5, 1.2e-3, 2.5e-3, 3e-4
#: Seconds per summed input of the uniform passes at t = 0 and t = 1 (enumerating and grouping the inputs).
_UNIFORM_INPUT = (3e-6, 6e-6)
#: The per-input writer: seconds per value of the columns (n inputs · (2N + K) per state), and per value
#: of the groups' certified doubles at t = 2 (G · (2N + K)); bytes per input of the population it holds.
_WRITE_VALUE, _WRITE_ATOM_VALUE, _INPUT_MEMORY = 1.5e-7, 3e-4, 250
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
#: Per-input columns: bytes per value once deflated (at most 16 raw) at t = 0 (S = 1/N and f = 0 for every
#: input: nothing left), t = 1 (few distinct values) and t >= 2; per input and per token of the population.
_VALUE_BYTES, _INPUT_BYTES, _TOKEN_BYTES = (0.0, 0.25, 1.0), 1.0, 0.45


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


@dataclass(frozen=True)
class DeriveJob:
    """A run of an exact engine planned before any work (``derive_job``, ``derive_model_job``; the same
    signature for every exact engine): the keyword arguments to run it with (values checked), its estimate
    (with ``json``, of the oracle's files too), and what to say when it cannot fit: ``what`` names the job,
    ``alternatives`` what to do instead, ``notes`` what was decided for the user (one line each)."""

    arguments: EngineArguments
    estimate: JobEstimate
    what: str
    alternatives: str
    notes: tuple[str, ...] = ()


#: What every estimate counts before any work: the interpreter's start and the memory of its libraries.
START_ESTIMATE = JobEstimate(_START, int(_BASE_MEMORY), 0, 0)


def summed_inputs(task: CircleWalk | FiniteTask, rotate: bool = True) -> int:
    """G: the inputs the exact engine sums over (rooted walks of a circle with ``rotate``, else all); beyond the
    engine's enumeration limit its own one-line refusal (before any estimate: no time makes it possible)."""
    if rotate and task.rotation_invariant:
        if 2 ** (task.N - 1) > MAX_INPUTS:
            rooted_walks(task)  # raises the limit's ValueError before enumerating anything
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
            seconds += _UNIFORM + _UNIFORM_INPUT[t] * G
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
            values = 2 * N + K
            seconds += _WRITE_VALUE * n * (steps + 1) * values + _WRITE_ATOM_VALUE * G * values * (steps >= 2)
            memory += _CHUNK_MEMORY + _INPUT_MEMORY * n
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
        values = sum(_VALUE_BYTES[min(t, 2)] for t in range(states)) * n * (2 * N + K)
        columns = values + (_INPUT_BYTES + _TOKEN_BYTES * (N - 1)) * n + 4096
    return JobEstimate(seconds, int(memory), int(header) + 4096, int(columns))


# The generic engine ------------------------------------------------------------------------------
#: ``model_job_estimate``'s rates, seconds per multiply-add of one pass (evaluation and gradient) counted over
#: the population plus ``_FIXED_INPUTS`` (work per parameter entry that does not grow with the inputs), measured
#: on the 2-core machine with ``descend`` on circle walks K = N = 3, 4, 5 (12, 32, 80 inputs) and a finite task of
#: 5 inputs: while every logit is zero the values stay rationals (0.5-1.4e-6 s measured); from the first step
#: with non-zero logits (t = 2 for a model whose logits come from W or P moved by V's gradient) each pass holds
#: exponential atoms, nested one level deeper per step: about 1e-5 s at that step, growing about tenfold per
#: step (learned_positions 6-13e-6, 27-118e-6 and 0.5-1.6e-3 s at t = 2, 3, 4; two_layer 6-17e-6, 5-28e-5 at
#: t = 2, 3).
_FIXED_INPUTS, _RATIONAL_OP, _ATOM_OP, _NESTING = 20, 1e-6, 1e-5, 10.0
#: Models whose rates differ (measured as above): key_query's logits stay zero from zero (W_K, W_Q get no
#: gradient while both are zero), as do multi_head's with key-query heads (--head-dim); multi_head's one-layer
#: heads hold atoms from t = 2 without the deeper nesting (2-5e-6 s at t = 2, 3); tied_embedding and
#: untied_embedding from t = 1 (3-5e-6, 4-5e-5, 3-9e-4 s at t = 1, 2, 3); linear_attention starts at a non-zero
#: point without exponentials and its rationals grow fast (2.5-4.7e-6 s at t = 0, 1; 3.5e-5 at t = 2; 1.7e-3 at
#: t = 3). Per model: (first step with atoms or None, rate before it, rate at it, growth per step).
_MODEL_RATES: dict[str, tuple[int | None, float, float, float]] = {
    "key_query": (None, _RATIONAL_OP, _ATOM_OP, _NESTING),
    "multi_head": (2, _RATIONAL_OP, 3e-6, 1.5),
    "tied_embedding": (1, _RATIONAL_OP, 5e-6, 12.0),
    "untied_embedding": (1, _RATIONAL_OP, 4e-6, 10.0),
    "linear_attention": (2, 4e-6, 3.5e-5, 50.0),
}
#: From a non-zero start (``--init gaussian``) of any other model every logit is a new exponential atom:
#: about 1e-4 s per multiply-add and step (key_query, K = 3, N = 4: 0.9, 2.0, 3.4 s for 1..3 steps).
_START_ATOM_OP = 1e-4
#: The last state is evaluated without its gradient: this fraction of a pass.
_FORWARD = 1 / 3
#: Reading a trajectory out as floats (certified doubles of every parameter, S and f), its accuracy's exact
#: argmax decisions and near-ties (``rw check``): this fraction of the derivation (0.1-0.25 measured).
_READOUTS = 0.25
#: A model with next-token logits (``rwtoolkit.models.SequenceModel``): seconds per multiply-add, counted by
#: ``sequence_multiply_adds`` for a pass (its forward and its gradient; a forward alone is a third of it), measured
#: on the project's 2-core machine (x86_64, load average 1-2, 2026-12-03) with the state-by-state times of
#: ``rwtoolkit.models.gradient_steps`` (the loop of ``derive_model``) for the traced examples of
#: examples/nanogpt_attention.py and its JAX port (benchmarks/traced_models.py prints the measured times beside
#: the estimates). T = n·(N − 1), the (sequence, position) terms that every gradient entry sums, scales them:
#:
#: * the run's set-up (the population's batch, the start): 0.02 s (0.02-0.08 s measured), ``_SEQUENCE_SETUP``;
#: * from zero, where the gradient at zero is 0 (``rwtoolkit.models.stays_at_zero``: every parameter of the nanoGPT-style
#:   examples enters the logits in a product of two zeros, so the trajectory stays at 0 and every value is a
#:   rational 0): 0.9-2.6e-7 s per multiply-add (one_layer, icl_markov and binary_markov at N = 5, 15 steps in
#:   0.23-0.36 s), ``_SEQUENCE_STUCK_OP``;
#: * from zero otherwise (a read-out bias moves; a hand-written one-layer program, tests/test_sequence_model.py):
#:   0.6e-6 to 3.3e-5 s over five steps, ``_SEQUENCE_ZERO_OP``;
#: * from a non-zero start (``--init gaussian``, ``own``) every logit is an exponential atom from state 0 and
#:   each of the program's E exponential primitives (``rwtoolkit.models.forward_exponentials``: one per attention
#:   layer, the objective's softmax besides) takes exponentials of the ones before it, so state t holds atoms
#:   nested to level t + E - 1 (level t for one attention layer). The forward pass of state 0 (rational
#:   parameters) costs 1.1e-5 (one_layer) to 2.6e-5 (two_layer) s per forward multiply-add at N = 5 (0.41 s and
#:   1.86 s), 5.1e-5 at N = 3, ``_SEQUENCE_FORWARD_0``; a pass at level 0 (one_layer's state 0) 1.2e-4, 2.1e-4,
#:   4.7e-4 s at T = 16, 48, 128 (icl_markov N = 3, 4, 5: 1.6 s, 8.4 s, 53.9 s), about T^0.65; at level 1 (one_layer's
#:   state 1, two_layer's state 0) 8e-4 to 1.8e-3 at T = 16 (one_layer 12.6 s, two_layer 19.7 s on binary_markov
#:   N = 3), taken to grow as its forward; a forward at level 1 (one_layer's state 1, whose parameters are sums of
#:   T terms with atoms) 6.4e-4 to 1.6e-3, 2.1e-3 (the JAX port: 6.0e-3), 1.7e-2 s per forward multiply-add at T =
#:   16, 48, 128 (icl_markov N = 5: 651 s, the step from a Gaussian start 705 s in all), about T^1.4; at level 2
#:   1.27 s at T = 16 (the hand-written program on binary_markov N = 3: 895 s for its third state). Each level
#:   beyond the table costs ``_SEQUENCE_NESTING`` times the one before (level 2 over level 1 of a pass: 235x
#:   measured). Rates as (seconds per multiply-add at T = 128, exponent of T / 128), per level.
_SEQUENCE_SETUP = 0.02
_SEQUENCE_STUCK_OP = 1.6e-7
_SEQUENCE_ZERO_OP = 3.3e-5
_SEQUENCE_FORWARD_0 = 1.7e-5
_SEQUENCE_PASS = ((4.7e-4, 0.65), (2.2e-2, 1.4))
_SEQUENCE_FORWARD = ((_SEQUENCE_FORWARD_0, 0.0), (1.8e-2, 1.4), (23.0, 1.4))
_SEQUENCE_NESTING = 250.0
_SEQUENCE_TERMS = 128
#: Peak memory besides the interpreter's: bytes per second of exact work (expressions kept for later steps;
#: 12 MB after 12 s and 85 MB after 200 s measured for learned_positions).
_MODEL_MEMORY_PER_SECOND = 1e6


#: The exact arithmetics of the generic engine: ``"dag"`` (``rwtoolkit.engines.exact.arithmetic._dag.DAG``:
#: rationals and nodes of one straight-line program) and ``"sympy"`` (``EXACT``: rationals and SymPy expressions).
ARITHMETICS = ("dag", "sympy")


def exact_arithmetic(model: Model, task: CircleWalk | FiniteTask, arithmetic: str | None = None) -> str:
    """The exact arithmetic ``derive_model`` runs ``model`` on ``task`` in: ``arithmetic`` where given (one of
    ``ARITHMETICS``), else ``"dag"`` for a model with next-token logits (``Model.TOKEN_LOGITS``: a sequence model,
    whose values are exponentials of its whole state from a non-zero start on, where building SymPy trees is the
    whole cost) on a task with rational probabilities, and ``"sympy"`` for every other (the registered models:
    their oracles as before, byte for byte; symbolic probabilities).

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import binary_markov_task
    >>> task = binary_markov_task("1/3", "3/5", 3)
    >>> exact_arithmetic(get_model("examples/nanogpt_attention.py:one_layer"), task)
    'dag'
    >>> exact_arithmetic(get_model("key_query"), task), exact_arithmetic(get_model("one_layer"), task, "sympy")
    ('sympy', 'sympy')
    """
    if arithmetic is not None:
        if arithmetic not in ARITHMETICS:
            raise ValueError(f"arithmetic={arithmetic!r} is not one of {', '.join(ARITHMETICS)}")
        return arithmetic
    return "dag" if model.TOKEN_LOGITS and not task.symbols else "sympy"


#: The generic engine in the ``DAG`` arithmetic (``exact_arithmetic`` "dag": a sequence model on a task with
#: rational probabilities; rwtoolkit.engines.exact.arithmetic._dag), measured on the project's 2-core machine
#: (x86_64, load average 2-3, 2026-12-04) state by state with ``rwtoolkit.models.gradient_steps`` in ``DAG`` for
#: the traced examples of examples/nanogpt_attention.py (one_layer, two_layer) and its JAX port (one_layer) on
#: icl_markov (S = 2, N = 5) and binary_markov (1/3, 3/5, N = 5) from --init gaussian and own, 6 and 30 steps:
#:
#: * a pass (evaluation and gradient) from a non-zero start costs 1.2-7.8e-6 s per multiply-add of
#:   ``sequence_multiply_adds`` (mean about 3e-6; the spikes are the interpreter's garbage collector), the same at
#:   every step: no value is simplified, so nesting costs nothing (one_layer, 30 steps: 2.1-8.6e-6, no trend),
#:   ``_DAG_PASS``; the last state's forward 0.4-1.3e-6, ``_DAG_FORWARD`` (benchmarks/traced_models.py --part exact
#:   prints the measured steps beside these estimates);
#: * a pass adds 0.41-0.61 entries to the program per multiply-add (0.04-0.05 the last forward),
#:   ``_DAG_ENTRIES``: the program grows linearly in the steps, and with it the memory and the oracle;
#: * from zero, where the model stays at zero (``rwtoolkit.models.stays_at_zero``), every value is the fmpq 0:
#:   0.11e-6 s per multiply-add (the SymPy arithmetic's ``_SEQUENCE_STUCK_OP`` covers it).
_DAG_PASS, _DAG_FORWARD, _DAG_ENTRIES = 3e-6, 1e-6, 0.5
#: ``rw derive``'s print and ``--json``'s oracle of a ``DAG`` trajectory, per entry of the program (measured in one
#: process for one_layer on icl_markov N = 5 from --init gaussian, 10 and 20 steps: printing 2.2-4.2e-6 s, writing
#: 1.5-3.7e-5 s per entry): the certified doubles of the printed values, each entry's ball once; the oracle's node
#: table, its balls and JSON.
_DAG_PRINT, _DAG_WRITE = 4e-6, 2.5e-5
#: Bytes per entry: held by the run (the program, its hash-consing key, the node, a 128-bit ball; measured 230
#: without the balls, 370 with them, in rw derive's peak resident memory at 20 steps), held while the oracle is
#: written (its table's node and ball; 750 in all measured), and written to the oracle's header (one node a line:
#: 20-25 measured from a Gaussian start, more from a float64 start, whose leaves are longer rationals).
_DAG_ENTRY_MEMORY, DAG_TABLE_MEMORY, DAG_ENTRY_BYTES = 600, 600, 40
#: Resident memory of ``rw derive`` on a traced model before any exact work (the interpreter, torch or JAX, the
#: traced program): 360 MB measured for examples/nanogpt_attention.py.
DAG_SEQUENCE_BASE_MEMORY = 400 * 2**20


def dag_entries(task: CircleWalk | FiniteTask, model: Model, steps: int, init: str = "zero") -> int:
    """Entries the ``DAG`` arithmetic's program holds after ``steps`` steps of a sequence model from ``init``:
    ``_DAG_ENTRIES`` per multiply-add of each pass and of the last forward; 0 from zero where the model stays
    at zero (every value the rational 0)."""
    from rwtoolkit.models import stays_at_zero

    if init == "zero" and stays_at_zero(model, task.population(), None):
        return 0
    return int(sequence_multiply_adds(task, model) * _DAG_ENTRIES * (steps + _FORWARD))


def dag_print_seconds(task: CircleWalk | FiniteTask, model: Model, steps: int, init: str = "zero") -> float:
    """Seconds of the certified doubles ``rw derive`` prints of a ``DAG`` trajectory (every entry's ball once)."""
    return _DAG_PRINT * dag_entries(task, model, steps, init)


def dag_write_seconds(task: CircleWalk | FiniteTask, model: Model, steps: int, init: str = "zero") -> float:
    """Seconds of writing the oracle of a ``DAG`` trajectory: its node table, the table's balls and its JSON."""
    return _DAG_WRITE * dag_entries(task, model, steps, init)


def multiply_adds(task: CircleWalk | FiniteTask, model: Model) -> int:
    """Multiply-adds of one pass of the generic engine: 3·n·N·D·(1 + parameters/D), n the population, D = K + M
    with M = 4⌈N/4⌉ (``rwtoolkit.models.rational_positions``).

    >>> from rwtoolkit.models import get_model
    >>> multiply_adds(CircleWalk(3, 3, "1/2"), get_model("key_query", d=2))
    4752
    """
    from rwtoolkit.models import Sizes

    population = task.population()
    n, K, N = population.size, population.K, population.N
    sizes = Sizes(K=K, M=4 * -(-N // 4), N=N)
    return int(3 * n * N * sizes.D * (1 + model.parameter_count(sizes) / sizes.D))


def sequence_multiply_adds(task: CircleWalk | FiniteTask, model: Model) -> int:
    """Multiply-adds of one pass (evaluation and gradient) of a model with next-token logits on the task's
    population: three forward passes of its program (``rwtoolkit.models.forward_operations``) per sequence."""
    from rwtoolkit.models import Sizes, forward_operations

    population = task.population()
    sizes = Sizes(K=population.K, M=4 * -(-population.N // 4), N=population.N)
    return 3 * population.size * forward_operations(model, sizes)  # type: ignore[arg-type]


def sequence_seconds(
    task: CircleWalk | FiniteTask,
    model: Model,
    steps: int,
    init: str = "zero",
    objective: str | None = None,
    arithmetic: str | None = None,
) -> float:
    """Seconds of the exact engine's trajectory of a model with next-token logits: a pass per state t < ``steps``
    and the last state's forward, each ``sequence_multiply_adds`` times the rate of its arithmetic
    (``exact_arithmetic``), start and, in the SymPy arithmetic, nesting level (the ``_DAG_*`` and ``_SEQUENCE_*``
    constants and the measurements above them).

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import icl_markov_task
    >>> model, task = get_model("examples/nanogpt_attention.py:one_layer"), icl_markov_task(2, 5, 1)
    >>> [round(sequence_seconds(task, model, k, "gaussian"), 2) for k in (0, 1, 10)]
    [0.13, 0.47, 3.54]
    >>> [round(sequence_seconds(task, model, k, "gaussian", arithmetic="sympy")) for k in (0, 1)]
    [1, 735]
    """
    from rwtoolkit.models import Sizes, forward_exponentials, stays_at_zero

    ops = sequence_multiply_adds(task, model)
    dag = exact_arithmetic(model, task, arithmetic) == "dag"
    if init == "zero" and stays_at_zero(model, task.population(), objective):
        return _SEQUENCE_SETUP + ops * _SEQUENCE_STUCK_OP * (steps + _FORWARD)
    if dag:  # every pass the same cost: nothing is simplified (the module text's measurements)
        return _SEQUENCE_SETUP + ops * (_DAG_PASS * steps + _DAG_FORWARD)
    if init == "zero":
        return _SEQUENCE_SETUP + ops * _SEQUENCE_ZERO_OP * (steps + _FORWARD)
    population = task.population()
    sizes = Sizes(K=population.K, M=4 * -(-population.N // 4), N=population.N)
    scale = population.size * (population.N - 1) / _SEQUENCE_TERMS
    first = max(0, forward_exponentials(model, sizes) - 1)  # type: ignore[arg-type]  # state 0's pass's level

    def per_op(table: tuple[tuple[float, float], ...], level: int) -> float:
        base, exponent = table[min(level, len(table) - 1)]
        return base * scale**exponent * _SEQUENCE_NESTING ** max(0, level - len(table) + 1)

    seconds = sum(ops * per_op(_SEQUENCE_PASS, first + t) for t in range(steps))
    last = 0 if steps == 0 else first + steps  # state 0's forward reads rational parameters only
    return _SEQUENCE_SETUP + seconds + ops * _FORWARD * per_op(_SEQUENCE_FORWARD, last)


def model_job_estimate(
    task: CircleWalk | FiniteTask,
    model: Model,
    steps: int,
    init: str = "zero",
    readouts: bool = False,
    objective: str | None = None,
    arithmetic: str | None = None,
) -> JobEstimate:
    """Seconds and peak memory of the generic engine's trajectory (``rwtoolkit.engines.exact.derive_model``, or ``rw check``'s
    reference with ``readouts``: every state read out as floats, with its accuracy), without files.

    Each pass costs ``multiply_adds`` times the rate of its step (the module text's constants): rationals while
    the logits are zero, exponential atoms nesting deeper with every step after.

    >>> from rwtoolkit.models import get_model
    >>> est = model_job_estimate(CircleWalk(5, 5, "1/3"), get_model("learned_positions"), 3)
    >>> 3 < est.seconds < 60, est.memory < 2**30
    (True, True)

    A model with next-token logits costs ``sequence_seconds`` (``objective``: its cross-entropy, None for the
    default; read where the start is zero, by ``rwtoolkit.models.stays_at_zero``; ``arithmetic``: the exact
    arithmetic, ``exact_arithmetic``'s choice by default), and in the ``DAG`` arithmetic holds its program
    (``dag_entries``) besides the interpreter and the traced model (``DAG_SEQUENCE_BASE_MEMORY``).
    """
    n = task.population().size
    if model.TOKEN_LOGITS:
        seconds = sequence_seconds(task, model, steps, init, objective, arithmetic)
        if readouts:
            seconds *= 1 + _READOUTS
        if exact_arithmetic(model, task, arithmetic) == "dag":  # the program grows with every pass
            memory = DAG_SEQUENCE_BASE_MEMORY + _DAG_ENTRY_MEMORY * dag_entries(task, model, steps, init)
            return JobEstimate(_START + seconds, int(memory), 0, 0)
        return JobEstimate(_START + seconds, int(_BASE_MEMORY + _MODEL_MEMORY_PER_SECOND * seconds), 0, 0)
    ops = multiply_adds(task, model) * (n + _FIXED_INPUTS) / n
    name = model.name
    first, rational, atom, growth = _MODEL_RATES.get(name, (2, _RATIONAL_OP, _ATOM_OP, _NESTING))
    if name == "multi_head" and model.hyperparameters.get("d") is not None:
        first = None  # key-query heads: zero logits from zero, as key_query
    seconds = 0.0
    for t in range(steps + 1):
        if init != "zero" and name not in _MODEL_RATES:
            rate = _START_ATOM_OP
        elif first is None or t < first:
            rate = rational
        else:
            rate = atom * growth ** (t - first)
        seconds += ops * rate * (_FORWARD if t == steps else 1.0)
    if readouts:
        seconds *= 1 + _READOUTS
    memory = _BASE_MEMORY + _MODEL_MEMORY_PER_SECOND * seconds
    return JobEstimate(_START + seconds, int(memory), 0, 0)
