"""Exact population gradient descent for any model of the registry (``rw derive --model``).

The generic path: the model's one definition (``rwtoolkit.models``) evaluated and differentiated in the exact arithmetic
(``rwtoolkit.engines.exact.arithmetic._models.EXACT``) on the task's whole population, positions P rational with PᵀP = μI
(``rwtoolkit.models.rational_positions``). The paper's model from zero init has its fast path, the reduced engine
``rwtoolkit.engines.exact.derive`` (tests/test_models.py shows it equal to this one); every other model, and any model from a
non-zero start, runs here.

Initialisations: ``zero`` (every parameter 0), ``gaussian``: i.i.d. N(0, σ²) entries drawn by numpy's
``default_rng(seed)`` parameter by parameter in the model's order, each rounded to the nearest multiple of 2^-20
so that the start is an exact rational (the same seed gives the same rationals on every machine), or ``own``: the
model's own start (``Model.initial``: a sequence program's float64 initial values, each the exact dyadic rational
it holds).

Objectives: a model of record trains on its loss ℓ(e_yᵀ f) (``loss``); a model with next-token logits (a
``rwtoolkit.models.SequenceModel``) on the cross-entropy ``objective`` (``"lm"`` by default, or ``"last"``;
``rwtoolkit.models.CrossEntropy``), whose value holds SymPy's exact logarithms (``exact_log``) and whose
gradient none.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Unpack

import numpy as np
import sympy as sp
from tqdm import tqdm

from rwtoolkit.engines.exact.arithmetic._dag import DAG, dag_log_array
from rwtoolkit.engines.exact.arithmetic._models import EXACT, exact_element, exact_log, to_sympy
from rwtoolkit.engines.exact.engine._cost import (
    DAG_ENTRY_BYTES,
    DAG_TABLE_MEMORY,
    PER_INPUT_LIMIT,
    DeriveJob,
    JobEstimate,
    dag_entries,
    dag_print_seconds,
    dag_write_seconds,
    exact_arithmetic,
    model_job_estimate,
    sequence_multiply_adds,
)
from rwtoolkit.engines.exact.engine._derive import make_loss
from rwtoolkit.engines.exact.engine._trajectory import EngineArguments, ExactTrajectory
from rwtoolkit.models import (
    Batch,
    CrossEntropy,
    Model,
    ObjectArithmetic,
    Optimizer,
    Schedule,
    Sizes,
    Tape,
    batch,
    descend,
    objective_name,
    rational_positions,
    stage_plan,
)
from rwtoolkit.tasks import CircleWalk, FiniteTask, check_int, exact

#: Initialisations of the generic path.
INITS = ("zero", "gaussian", "own")
#: Grid of a Gaussian start: entries are multiples of 2^-GRID_BITS.
GRID_BITS = 20
#: Most steps from a non-zero start (nested exponentials grow with every step).
MAX_EXP_STEPS = 3
#: Most steps of a model with next-token logits (a sequence model) from a non-zero start in the SymPy arithmetic
#: (``arithmetic="sympy"``): its logits are exponential atoms from step 0 and nest one level deeper at every step.
#: In its own arithmetic, ``DAG``, the estimate alone bounds the steps (``model_job_estimate``).
MAX_SEQUENCE_EXP_STEPS = 2


#: The read-outs of a generic trajectory, in the order they are written.
MODEL_READOUTS = ("loss", "accuracy", "mean_attention", "mean_f")


@dataclass
class ModelTrajectory(ExactTrajectory):
    """θ(0..T) of exact GD for ``model`` on ``task``: one ``Evaluation`` per step (parameters and read-outs).

    An ``ExactTrajectory`` in the model's own parameters, with no reduced view; ``readout`` gives a read-out
    in the exact arithmetic's arrays, ``value`` any parameter or read-out as SymPy values. ``states`` holds
    one ``Evaluation`` per step, ``P`` the exact positions, ``batch`` the population as the model reads it."""

    P: np.ndarray
    batch: Batch
    #: The cross-entropy objective of a model with next-token logits (``"lm"``, ``"last"``), else None: the loss
    #: ``ell`` of its prediction.
    objective: str | None = None
    #: The update rule where it is not plain GD (``rwtoolkit.models.Optimizer``), else None.
    optimizer: Optimizer | None = None
    #: The exact arithmetic the states' values are elements of (``exact_arithmetic``): ``EXACT`` (fmpq and SymPy)
    #: or ``DAG`` (fmpq and program nodes).
    exact: ObjectArithmetic = EXACT
    #: The learning-rate schedule (``rwtoolkit.models.Schedule``) and the stages ((steps, parameter names) in
    #: order) where given, else None.
    schedule: Schedule | None = None
    stages: list[tuple[int, list[str]]] | None = None

    @property
    def K(self) -> int:
        return self.batch.inputs.K

    @property
    def N(self) -> int:
        return self.batch.inputs.N

    @property
    def population_size(self) -> int:
        return self.batch.size

    def readout(self, t: int, name: str) -> Any:
        """loss, accuracy (None when a comparison is undecided), mean_attention (N) or mean_f (K) at step t."""
        state = self.states[t]
        if name == "loss":
            return state.loss
        if name == "accuracy":
            return state.accuracy(self.batch, self.exact)
        if name == "mean_attention":
            return state.mean_attention(self.batch.weights, self.exact)
        if name == "mean_f":
            return self.exact.sum(state.f * self.batch.weights.reshape((-1, 1)), 0)
        raise ValueError(f"no read-out {name!r}: use loss, accuracy, mean_attention, mean_f")

    @property
    def M(self) -> int:
        return int(self.P.shape[0])

    @property
    def parameter_names(self) -> tuple[str, ...]:
        return tuple(self.states[0].params)

    def parameter_shapes(self) -> dict[str, list[int]]:
        return {name: list(shape) for name, shape in self.model.shapes(self.batch.inputs.sizes).items()}

    @property
    def readout_names(self) -> tuple[str, ...]:
        """``MODEL_READOUTS``; without ``mean_attention`` for a model with no attention S (a sequence model)."""
        if self.states and self.states[0].S is None:
            return tuple(name for name in MODEL_READOUTS if name != "mean_attention")
        return MODEL_READOUTS

    @property
    def per_input_names(self) -> tuple[str, ...]:
        """The attention logits, S and f; a model with next-token logits (a sequence model, no attention S)
        has its ``token_logits`` (n, L, K) and f instead."""
        if self.model.TOKEN_LOGITS:
            return ("token_logits", "f")
        return super().per_input_names

    def value(self, t: int, name: str) -> Any:
        """A parameter (by the model's name) or read-out at step t in SymPy: an array as nested lists (a
        value of the ``DAG`` arithmetic built into SymPy now, ``to_sympy``)."""
        value = self.element(t, name)
        if value is None:  # an undecided accuracy
            return None
        return np.vectorize(to_sympy, otypes=[object])(np.asarray(value, dtype=object)).tolist()

    def element(self, t: int, name: str) -> Any:
        """A parameter or read-out at step t as the arithmetic's own elements (fmpq, SymPy or ``DAG`` nodes),
        an array as nested lists; None for an undecided accuracy. What the oracle writer writes (a ``DAG``
        value straight from its program, no SymPy) and ``rw derive`` prints."""
        params = self.states[t].params
        value = params[name] if name in params else self.readout(t, name)
        return value.tolist() if isinstance(value, np.ndarray) else value

    @property
    def reduced(self) -> None:
        return None


def initial_parameters(
    model: Model, sizes: Sizes, init: str, sigma: object, seed: int
) -> dict[str, np.ndarray]:
    """The exact start of ``init`` (see the module text).

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.models import Sizes, get_model
    >>> start = initial_parameters(get_model("key_query", d=1), Sizes(K=2, M=1, N=2), "gaussian", "1/10", 0)
    >>> start["W_K"][0, 0]
    -56169/1048576
    """
    if init not in INITS:
        raise ValueError(f"--init={init!r} is not one of {', '.join(INITS)}")
    if init == "zero":
        return model.zeros(EXACT, sizes)
    if init == "own":
        return model.own_start(EXACT, sizes, "zero or gaussian")
    scale = Fraction(str(sigma))
    if not scale > 0:
        raise ValueError(f"--sigma={sigma} is out of range: sigma must be > 0")
    rng = np.random.default_rng(seed)
    grid = 2**GRID_BITS
    out = {}
    for name, shape in model.shapes(sizes).items():
        draws = rng.standard_normal(shape)
        out[name] = EXACT.asarray(
            np.vectorize(lambda x: Fraction(round(float(x) * float(scale) * grid), grid), otypes=[object])(
                draws
            )
        )
    return out


def model_estimate(
    task: CircleWalk | FiniteTask, model: Model, steps: int, init: str, mu: object = 1
) -> float:
    """Estimated seconds of ``derive_model`` (``rwtoolkit.engines.exact.engine._cost.model_job_estimate``: multiply-adds of one
    pass times a measured rate per step)."""
    return model_job_estimate(task, model, steps, init).seconds


#: Characters per exact value in the oracle's node table at steps 0..2, doubling with every step after
#: (the rationals of the log-loss grow); measured 10-33 KB headers for key_query at K = 3, N = 4, 2-4 steps,
#: which this bound exceeds by 1.5-3x.
CHARS_PER_VALUE, CHARS_PER_INPUT_VALUE, HEADER_BASE = 80, 20, 4096
#: A model with next-token logits (a sequence model) from a non-zero start: every state's values hold the
#: exponential atoms of a whole pass, so its node table grows with the pass's multiply-adds
#: (``sequence_multiply_adds``): bytes per multiply-add at t = 0, 1, 2. Measured with a one-layer attention-only
#: program (d = 2) from its own start on binary_markov (N = 3, 4) and icl_markov (S = 2, N = 4): 1.2-3.5 at
#: t = 0, 28-32 at t = 1 (21 from a Gaussian start); t = 2 (a run of 900 s) is taken as four times t = 1.
#: From zero only the read-out's bias moves and the values stay short: ``CHARS_PER_VALUE`` covers them
#: (measured 8-16 KB headers at 1-4 steps, 1.5-3x below the bound).
SEQUENCE_BYTES_PER_OP = (4.0, 60.0, 240.0)
#: Writing a sequence model's oracle, as a fraction of its derivation's estimated seconds (measured 2-8 % from
#: its own start, 0.01-0.25 s from zero, within the interpreter's start).
SEQUENCE_WRITE = 0.1


def model_file_bytes(
    task: CircleWalk | FiniteTask, model: Model, steps: int, per_input: bool, init: str = "zero"
) -> tuple[int, int]:
    """Estimated bytes of the oracle ``write_oracle`` makes of ``derive_model``'s trajectory: (header, columns).

    The header holds every parameter and read-out of every step once (``CHARS_PER_VALUE`` each, doubling
    per step from t = 3) and the short per-input exact values; the columns are bounded by their
    uncompressed size (16 bytes per double with its bound and node index, the population's tokens and labels).
    The per-input values are the logits, S (N each) and f (K) of every input, or a sequence model's
    token_logits (L·K, L = N − 1) and f; its header adds, in the ``DAG`` arithmetic (``exact_arithmetic``),
    ``DAG_ENTRY_BYTES`` per entry of the program (``dag_entries``), else from a non-zero start (``init``)
    ``SEQUENCE_BYTES_PER_OP`` per multiply-add of a pass at each step.

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> model_file_bytes(CircleWalk(3, 4, "3/10"), get_model("key_query", d=2), 4, True)
    (63616, 28288)
    """
    population = task.population()
    n, K, N = population.size, population.K, population.N
    parameters = model.parameter_count(Sizes(K=K, M=4 * -(-N // 4), N=N))
    if model.TOKEN_LOGITS:  # loss, accuracy, mean_f; per input token_logits and f
        values, per_input_values = parameters + 2 + K, n * ((N - 1) * K + K)
    else:  # loss, accuracy, mean_attention, mean_f; per input logits, S and f
        values, per_input_values = parameters + 2 + N + K, n * (2 * N + K)
    dag = model.TOKEN_LOGITS and exact_arithmetic(model, task) == "dag"
    # a value's rationals grow with the steps in the SymPy arithmetic; in the DAG's they stay the program's
    growth = [1 if dag else 2 ** max(0, t - 2) for t in range(steps + 1)]
    header = HEADER_BASE + sum(values * CHARS_PER_VALUE * g for g in growth)
    if dag:  # one node a line per program entry
        header += DAG_ENTRY_BYTES * dag_entries(task, model, steps, init)
    elif model.TOKEN_LOGITS and init != "zero":
        ops = sequence_multiply_adds(task, model)
        rates = SEQUENCE_BYTES_PER_OP
        header += int(sum(ops * rates[min(t, len(rates) - 1)] * 4 ** max(0, t - 2) for t in range(steps + 1)))
    if per_input:
        header += per_input_values * CHARS_PER_INPUT_VALUE * (steps + 1)
    columns = (
        (4 * n * N + 16 * n + 16 * per_input_values * (steps + 1) + 128 * (5 + 9 * (steps + 1)))
        if per_input
        else 0
    )
    return header, columns


def positive_rational(value: object, name: str) -> sp.Rational:
    """``value`` read by ``rwtoolkit.tasks.exact``; one line naming ``--name`` unless it is a rational > 0.

    >>> positive_rational("7/2", "mu")
    7/2
    """
    x = exact(value, name)
    if not (x.is_Rational and x > 0):
        raise ValueError(f"--{name}={value} is out of range: the generic engine needs a rational > 0")
    return x


def derive_model(
    task: CircleWalk | FiniteTask,
    model: Model,
    steps: int,
    *,
    eta: object = 1,
    eps: object = "1/10",
    mu: object = 1,
    loss: str = "log",
    init: str = "zero",
    sigma: object = "1/100",
    seed: int = 0,
    objective: str | None = None,
    progress: bool = False,
    optimizer: Optimizer | None = None,
    arithmetic: str | None = None,
    schedule: Schedule | None = None,
    stages: Sequence[tuple[int, Collection[str]]] | None = None,
) -> ModelTrajectory:
    """The exact GD trajectory of ``model`` on ``task``'s population (docs/guide/models.md).

    ``eta``, ``eps`` as for ``derive``; ``mu`` must be a positive rational (the positions are built from it).
    ``objective``: the cross-entropy of a model with next-token logits (None: its default, ``"lm"``; refused for
    a model without them, which trains on ``loss``). ``optimizer``: the update rule (``rwtoolkit.models.Optimizer``;
    None: plain GD), exact where it is rational in the state (momentum, Nesterov), Adam refused in one line
    naming the ball engine. ``schedule`` (``rwtoolkit.models.Schedule``: rational factors; the cosine refused in
    one line naming the float and ball engines) and ``stages`` ((steps, parameter names) in order, covering
    ``steps``): as ``rwtoolkit.models.gradient_steps`` reads them. ``arithmetic``: the exact arithmetic
    (``exact_arithmetic``; None: ``"dag"`` for a sequence model on a task with rational probabilities, else ``"sympy"``); the two give the same exact values
    (tests/test_exact_dag.py). The generic exact engine
    (``rwtoolkit.engines.GENERIC["exact"]``): its specialisation ``derive`` takes the same keyword arguments and
    returns the same interface, ``ExactTrajectory``.

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> traj = derive_model(CircleWalk(3, 3, "1/2"), get_model("key_query", d=1), 2)
    >>> traj.states[2].params["W_K"].tolist(), traj.readout(2, "mean_attention").tolist()
    ([[0, 0, 0, 0, 0, 0, 0]], [1/3, 1/3, 1/3])
    """
    steps = check_int(steps, "steps", 0)
    rule = Optimizer() if optimizer is None else optimizer
    rule.check(EXACT)  # Adam's √v: one line naming the ball engine, before any work
    if schedule is not None:
        schedule.check(EXACT)  # the cosine's floats: one line naming the float and ball engines
    name = objective_name(model, objective)
    which = exact_arithmetic(model, task, arithmetic)
    ar = DAG if which == "dag" else EXACT
    most = _most_steps(model, which)
    if init != "zero" and most is not None and steps > most:
        raise ValueError(
            f"--steps {steps} from --init {init}: the exact generic engine takes at most {most} steps "
            f"from a non-zero start (nested exponentials); {_beyond(model)}"
        )
    eta_x, eps_x, mu_x = (positive_rational(v, n) for v, n in ((eta, "eta"), (eps, "eps"), (mu, "mu")))
    lossfn = make_loss(loss, eps_x)
    population = task.population()
    K = population.K
    P = ar.asarray(rational_positions(population.N, Fraction(int(mu_x.p), int(mu_x.q))))
    data = batch(ar, population.tokens, population.labels, population.exact_probs(), K, P)
    start = {
        key: ar.asarray(value)
        for key, value in initial_parameters(model, data.inputs.sizes, init, sigma, seed).items()
    }
    bar = tqdm(total=steps + 1, desc="rw derive", unit="step", disable=not (progress and sys.stderr.isatty()))
    log = dag_log_array if ar is DAG else exact_log
    states = descend(
        model,
        ar,
        start,
        data,
        lossfn.elementwise() if name is None else CrossEntropy(name, log=log),
        exact_element(eta_x),
        steps,
        lambda t: bar.update(1),
        rule,
        schedule,
        stages,
    )
    bar.close()
    return ModelTrajectory(
        task,
        model,
        eta_x,
        eps_x,
        mu_x,
        lossfn,
        _label(init, sigma, seed),
        P,
        data,
        name,
        None if rule.plain else rule,
        ar,
        states=states,
        schedule=schedule,
        stages=None if stages is None else [(int(k), sorted(names)) for k, names in stages],
    )


def _label(init: str, sigma: object, seed: int) -> str:
    """How a trajectory names its start."""
    if init == "gaussian":
        return f"gaussian(sigma={sigma}, seed={seed}, grid=2^-{GRID_BITS})"
    if init == "own":
        return "own (the model's initial values, each float64 the exact dyadic rational it holds)"
    return init


def _most_steps(model: Model, arithmetic: str) -> int | None:
    """The most steps from a non-zero start in ``arithmetic`` (None: the estimate alone bounds them)."""
    if arithmetic == "dag":
        return None
    return MAX_SEQUENCE_EXP_STEPS if model.TOKEN_LOGITS else MAX_EXP_STEPS


def _beyond(model: Model) -> str:
    """What to run instead beyond the exact engine's steps from a non-zero start."""
    if model.TOKEN_LOGITS:
        return (
            'use fewer steps, or the certified ball engine (rwtoolkit.engines.select(model, "balls", init))'
        )
    return "use fewer steps or rw train for a float trajectory"


def exact_ops(model: Model, population: Any) -> None:
    """One line, before any work, where ``model`` has an op the exact arithmetic cannot run (layer norm, GELU:
    ``Tape._inexact``, naming the ball engine): its forward pass at θ = 0 on the population's first sequence,
    in exact arithmetic, where every value is 0 or a small rational and no exponential nests (milliseconds)."""
    P = EXACT.asarray(rational_positions(population.N, Fraction(1)))
    one = batch(EXACT, population.tokens[:1], population.labels[:1], [Fraction(1)], population.K, P)
    model.forward(Tape(EXACT), model.zeros(EXACT, one.inputs.sizes), one.inputs)


def derive_model_job(
    task: CircleWalk | FiniteTask,
    model: Model,
    steps: int,
    *,
    json: bool = False,
    per_input: bool | None = None,
    verdict: bool = False,
    readouts: bool = False,
    **arguments: Unpack[EngineArguments],
) -> DeriveJob:
    """``derive_model``'s run planned before any work (``derive_job``'s signature): one line refusing what the
    generic engine cannot do (the structure predicates of ``verdict``, more than ``MAX_EXP_STEPS`` steps from a
    non-zero start in the SymPy arithmetic, an objective the model has not, ``--init own`` for a model without
    a start of its own, the abstract loss, a value that is not a positive rational; the symbol ``mu`` becomes 1,
    with a note), then ``model_estimate`` and, with ``json``, ``model_file_bytes``. A sequence model in the
    ``DAG`` arithmetic (``exact_arithmetic``) adds the certified doubles ``rw derive`` prints and, with ``json``,
    the time and memory of writing its program's node table (``_cost``'s ``dag_*``); in the SymPy arithmetic
    ``SEQUENCE_WRITE`` of the time to write it. With ``readouts`` (rw check's reference) the time and memory are those of the trajectory read out as floats, all of it kept
    (``model_job_estimate(readouts=True)``). ``arguments`` are ``derive_model``'s keyword arguments (its
    defaults where one is not given).

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> job = derive_model_job(CircleWalk(3, 3, "1/2"), get_model("key_query"), 2, mu="mu")
    >>> job.arguments["mu"], job.notes
    ('1', ('the generic engine needs a rational mu; using --mu 1',))
    """
    init, loss, mu = arguments.get("init", "zero"), arguments.get("loss", "log"), arguments.get("mu", 1)
    optimizer = arguments.get("optimizer")
    if isinstance(optimizer, Optimizer):  # Adam's √v is refused, naming the ball engine
        optimizer.check(EXACT)
    schedule, stages = arguments.get("schedule"), arguments.get("stages")
    if isinstance(schedule, Schedule):  # the cosine's floats, naming the float and ball engines
        schedule.check(EXACT)
    if verdict:
        raise ValueError(
            "--verdict applies to the paper's model from zero init (its structure predicates are statements "
            "about the reduced coordinates); drop it"
        )
    objective_name(model, arguments.get("objective"))
    most = _most_steps(model, exact_arithmetic(model, task))
    if init != "zero" and most is not None and steps > most:
        raise ValueError(
            f"--steps={steps} is out of range with --init {init}: at most {most}"
            + (f" (nested exponentials); {_beyond(model)}" if model.TOKEN_LOGITS else "")
        )
    if loss == "any":
        raise ValueError("--loss any applies to the paper's model from zero init: use log, squared or exp")
    notes = ()
    if mu == "mu":  # a model with next-token logits reads token ids, no positions: no note about μ
        mu = "1"
        notes = () if model.TOKEN_LOGITS else ("the generic engine needs a rational mu; using --mu 1",)
    for value, name in ((arguments.get("eta", 1), "eta"), (arguments.get("eps", "1/10"), "eps"), (mu, "mu")):
        positive_rational(value, name)
    if init == "gaussian":
        positive_rational(arguments.get("sigma", "1/100"), "sigma")
    population = task.population()
    if model.TOKEN_LOGITS:
        exact_ops(model, population)
    sizes = Sizes(K=population.K, M=4 * -(-population.N // 4), N=population.N)
    if init == "own":  # refused before any work where the model has no start of its own
        initial_parameters(model, sizes, init, 0, 0)
    if stages is not None:  # the stages cover the steps, of parameters the model has
        stage_plan(stages, list(model.shapes(sizes)), steps)  # type: ignore[arg-type]
    n = population.size
    per_input = n <= PER_INPUT_LIMIT if per_input is None else per_input
    header, columns = model_file_bytes(task, model, steps, per_input, init) if json else (0, 0)
    dag = model.TOKEN_LOGITS and exact_arithmetic(model, task) == "dag"
    if readouts:
        read = model_job_estimate(task, model, steps, init, readouts=True)
        seconds, memory = read.seconds, read.memory
    elif dag:  # the run, the certified doubles rw derive prints, the program held (_cost's measurements)
        run = model_job_estimate(task, model, steps, init)
        seconds, memory = run.seconds + dag_print_seconds(task, model, steps, init), run.memory
    else:
        seconds, memory = (
            model_estimate(task, model, steps, init),
            64 * n * population.N * 40 * (steps + 1) + 200 * 2**20,
        )
    if json and dag:  # the oracle's node table, its balls and JSON, held while it is written
        seconds += dag_write_seconds(task, model, steps, init)
        memory += DAG_TABLE_MEMORY * dag_entries(task, model, steps, init)
    elif json and model.TOKEN_LOGITS:  # the certified doubles of its nested values (the module's measurement)
        seconds += SEQUENCE_WRITE * seconds
    return DeriveJob(
        {**arguments, "mu": mu},
        JobEstimate(seconds, memory, header, columns),
        f"--steps {steps} with --model {model.name} on {task!r}",
        "use fewer --steps, smaller K or N"
        + (", --no-per-input" if json and per_input else "")
        + (
            ', the certified ball engine (rwtoolkit.engines.select(model, "balls", init))'
            if model.TOKEN_LOGITS
            else ""
        )
        + ", or rw train --model for a float trajectory",
        notes,
    )


__all__ = [
    "INITS",
    "MODEL_READOUTS",
    "ModelTrajectory",
    "derive_model",
    "derive_model_job",
    "exact_arithmetic",
    "initial_parameters",
    "model_estimate",
    "model_file_bytes",
    "positive_rational",
]
