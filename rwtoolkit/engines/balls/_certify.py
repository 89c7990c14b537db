"""``certify``: the certified trajectory of a task's training set, with automatic precision and typed statements.

The training set is the task's population (exact probabilities) or ``train_size`` walks sampled
exactly as ``rwtoolkit.engines.numeric.train`` samples them (``SeedSequence(seed).spawn(3)``: train, test, init), each
with the exact weight 1/n. The precision starts at ``prec`` bits and doubles until the widest ball
(relative to its size, absolute below 1) is at most ``tol`` or ``max_prec`` is reached.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp
from flint import arb

from rwtoolkit.engines import select
from rwtoolkit.engines.balls._balls import MAX_PREC, MIN_PREC, ball_interval, precision, sign
from rwtoolkit.engines.balls._gram import CERTIFIED_POS, GramEnclosure, enclose_gram
from rwtoolkit.engines.balls._model_certify import BallEstimate, recorded_count
from rwtoolkit.engines.balls._trajectory import BallTrajectory
from rwtoolkit.engines.balls._walks import WalkSet
from rwtoolkit.io import CERTIFIED_WORDS, Verdict
from rwtoolkit.models import get_model
from rwtoolkit.tasks import CircleWalk, FiniteTask, exact


@dataclass(frozen=True)
class Statement:
    """One certified claim: its name, what it says, the outcome and the evidence (``detail``)."""

    name: str
    claim: str
    outcome: Verdict
    detail: str

    def to_json(self) -> dict:
        """JSON-able form; the outcome as certify.json writes it: verified, refuted or inconclusive."""
        outcome = CERTIFIED_WORDS.word(self.outcome)
        return {"name": self.name, "claim": self.claim, "outcome": outcome, "detail": self.detail}


@dataclass
class Certification:
    """The certified trajectory (``trajectory``), the precision attempts, the Gram check and the statements."""

    task: CircleWalk | FiniteTask
    config: dict
    gram: GramEnclosure
    trajectory: BallTrajectory
    attempts: list[dict]
    tolerance_met: bool
    eval_set: WalkSet
    statements: list[Statement] = field(default_factory=list)


def _fraction(value: object, name: str) -> Fraction:
    """An exact positive rational from a number or a string such as "1/10" or "0.1" (read as a decimal)."""
    q = exact(value, name)
    if not q.is_Rational or not q > 0:
        raise ValueError(f"{name}={value!r} must be a positive rational number, e.g. 1, 0.1 or 1/10")
    return Fraction(int(q.p), int(q.q))


def _check_int(value: object, name: str, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")
    if high is not None and value > high:
        raise ValueError(f"{name}={value!r} is out of range: must be <= {high}")
    return int(value)


#: The model certified: the paper's one-layer transformer (its statements are Theorems 3.1 and 4.1's).
MODEL = "one_layer"

#: Largest incidence matrix (inputs × tokens × positions balls) the engine builds: about 1 GB of memory.
MAX_INCIDENCE = 2 * 10**7


def _check_size(n: int, task: CircleWalk | FiniteTask, what: str) -> None:
    entries = n * task.K * (task.N - 1)
    if entries > MAX_INCIDENCE:
        raise ValueError(
            f"{what}={n} needs an incidence matrix of {entries:.3g} balls (about {entries * 48 / 1e9:.1f} GB) at "
            f"K={task.K}, N={task.N}; the limit is {MAX_INCIDENCE:.0e}: use at most "
            f"{MAX_INCIDENCE // (task.K * (task.N - 1))} walks"
        )


def _attempt(bits: int, widest: float) -> dict:
    """One precision attempt as JSON: its widest relative radius, or null and "unbounded": true when it is inf.

    The radius is inf when a ball is not finite or the run stopped; JSON has no inf, and ``rw proofs``
    copies the attempts into its output as they are.

    >>> _attempt(64, 1e-9), _attempt(16, float("inf"))
    ({'prec': 64, 'max_relative_radius': 1e-09}, {'prec': 16, 'max_relative_radius': None, 'unbounded': True})
    """
    if math.isfinite(widest):
        return {"prec": bits, "max_relative_radius": widest}
    return {"prec": bits, "max_relative_radius": None, "unbounded": True}


def walk_sets(task: CircleWalk | FiniteTask, population: bool, train_size: int, test_size: int, seed: int):
    """(training set, evaluation set): the population twice, or the samples ``rwtoolkit.engines.numeric.train`` draws.

    >>> tr, ev = walk_sets(CircleWalk(3, 4, 1), population=False, train_size=10, test_size=5, seed=0)
    >>> tr.size <= 3, sum(tr.weights) == 1
    (True, True)
    """
    if population:
        pop = task.population()
        _check_size(pop.size, task, "population size")
        ws = WalkSet.population(pop)
        return ws, ws
    train_seq, test_seq, _ = np.random.SeedSequence(seed).spawn(
        3
    )  # as rwtoolkit.engines.numeric.train: train, test, init
    tr = task.sample(train_size, generator=np.random.default_rng(train_seq))
    te = task.sample(test_size, generator=np.random.default_rng(test_seq))
    return (
        WalkSet.build(*tr, [Fraction(1, train_size)] * train_size, task.K),
        WalkSet.build(*te, [Fraction(1, test_size)] * test_size, task.K),
    )


#: Seconds of one step of the paper model's ball engine: a part per step, and per (walk, token) a part and a part
#: per position (measured on 2 cores at 128 bits: 18-34 µs per walk and token at N = 8-97, 1.9 ms a step for
#: 24 walks at K = 3, N = 4); the walks and the Gram enclosure before the first step, about a second.
_SECONDS_PER_STEP, _SECONDS_PER_WALK_TOKEN, _SECONDS_PER_POSITION, _SECONDS_SETUP = 1e-3, 2e-5, 2.5e-7, 1.0
#: Interpreter with python-flint and SymPy loaded; bytes of one recorded step per (input, token) at ``bits``
#: (measured: 10 KB a step for 24 inputs, K = 3, at 1024 bits); certify.json and CERTIFY.md: a header, and per
#: recorded step a part and a part per token and position (measured 2.4 KB a step at K = 3, N = 4; 5.6 KB at
#: K = 6, N = 8).
_BASE_BYTES, _BALL_BYTES = 200 * 2**20, 64
_FILE_BYTES_HEADER, _FILE_BYTES_PER_STEP, _FILE_BYTES_PER_ENTRY = 8192, 400, 200


def certify_estimate(
    task: CircleWalk | FiniteTask,
    *,
    steps: int,
    population: bool = False,
    train_size: int = 1000,
    test_size: int = 1000,
    prec: int = 128,
    max_prec: int = 2048,
    record_steps: set[int] | None = None,
) -> BallEstimate:
    """``certify``'s cost before any work: seconds at its first precision ``prec`` (a rerun at a doubled
    precision, up to ``max_prec``, is not counted, as in ``ball_model_job``), peak memory (the recorded steps'
    balls, at ``max_prec``) and bytes of certify.json and CERTIFY.md.

    Distinct walks are bounded by the samples' sizes and the population's. Counted, not listed: a refused
    ``steps`` of 10⁹ costs nothing.

    >>> e = certify_estimate(CircleWalk(3, 4, "1/2"), steps=100, population=True, prec=128, max_prec=128)
    >>> 0.05 < e.seconds < 2, e.memory < 2**30
    (True, True)
    """
    size = task.population_size()
    n = size if population else min(train_size, size) + min(test_size, size)
    per_step = _SECONDS_PER_STEP + n * task.K * (_SECONDS_PER_WALK_TOKEN + _SECONDS_PER_POSITION * task.N)
    seconds = _SECONDS_SETUP + (steps + 1) * per_step * max(1.0, (prec / 1024) ** 0.5)
    recorded = recorded_count(steps, record_steps)
    memory = _BASE_BYTES + recorded * n * task.K * (max(prec, max_prec) // 8 + _BALL_BYTES)
    file_bytes = 2 * _FILE_BYTES_HEADER + recorded * (
        _FILE_BYTES_PER_STEP + _FILE_BYTES_PER_ENTRY * task.K * task.N
    )
    return BallEstimate(seconds, int(memory), file_bytes)


def certify_steps_that_fit(limit: float, **arguments: Any) -> int:
    """The most steps whose ``certify_estimate`` takes at most ``limit`` seconds (its cost is linear in steps).

    >>> certify_steps_that_fit(10.0, task=CircleWalk(3, 4, "1/2"), population=True) > 100
    True
    """
    setup = certify_estimate(steps=0, **arguments).seconds
    one = certify_estimate(steps=1, **arguments).seconds - setup  # the cost of a step
    return max(0, int((limit - setup) / one)) if limit > setup else 0


def certify(
    task: CircleWalk | FiniteTask,
    *,
    M: int = 1000,
    pos: str = "sine",
    eta: object = 1,
    eps: object = "1/10",
    steps: int = 50,
    population: bool = False,
    train_size: int = 1000,
    test_size: int = 1000,
    seed: int = 0,
    prec: int = 128,
    tol: float = 1e-20,
    max_prec: int = 2048,
    record_steps: set[int] | None = None,
    parent_threshold: object = "1/2",
    progress: bool = False,
    plan: Callable[[BallEstimate], None] | None = None,
) -> Certification:
    """Certify the exact log-loss GD trajectory from zero init (every quantity a ball) and its statements.

    Implements the model of the paper's §2 with the sine embeddings (Gram enclosed, Lemma E.5) and
    checks Theorem 4.1's conclusions (equal attention, chance accuracy) and Theorem 3.1's (accuracy,
    parent attention) as typed statements; see ``statements``. ``plan``, where given, receives the run's
    ``certify_estimate`` once every argument is checked and before any work (it may refuse the run by raising).

    Examples
    --------
    >>> c = certify(CircleWalk(3, 4, 1), M=8, steps=2, population=True, prec=64, tol=1e-12)
    >>> [(s.name, s.to_json()["outcome"]) for s in c.statements][:2]
    [('equal_attention', 'verified'), ('chance', 'verified')]
    """
    if not isinstance(task, (CircleWalk, FiniteTask)):
        raise ValueError(f"task={task!r} must be a rwtoolkit.tasks CircleWalk or FiniteTask")
    if task.symbols:
        names = ", ".join(map(str, task.symbols))
        raise ValueError(
            f"{names} must be a number (the certified engine has no symbolic parameters): {task!r}"
        )
    M = _check_int(M, "M", 2)
    if pos not in CERTIFIED_POS:
        raise ValueError(
            f"pos={pos!r} is not one of {', '.join(CERTIFIED_POS)} (embeddings the engine encloses)"
        )
    steps = _check_int(steps, "steps", 0)
    eta_q, eps_q = _fraction(eta, "eta"), _fraction(eps, "eps")
    threshold = _fraction(parent_threshold, "parent_threshold")
    if threshold > 1:
        raise ValueError(f"parent_threshold={parent_threshold!r} is out of range: must be in (0, 1]")
    if not population:
        train_size = _check_int(train_size, "train_size", 1)
        test_size = _check_int(test_size, "test_size", 1)
        _check_size(train_size, task, "train_size")
        _check_size(test_size, task, "test_size")
    seed = _check_int(seed, "seed", 0)
    prec = _check_int(prec, "prec", MIN_PREC, MAX_PREC)
    max_prec = _check_int(max_prec, "max_prec", prec, MAX_PREC)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < 1:
        raise ValueError(f"tol={tol!r} is out of range: must be a number in (0, 1)")
    for s in record_steps or ():
        _check_int(s, "record_steps entry", 0, steps)
    if pos == "sine" and M <= task.N:
        raise ValueError(f"M={M} is out of range: pos='sine' needs M > N = {task.N}")
    if pos == "onehot" and M != task.N:
        raise ValueError(f"M={M} is out of range: pos='onehot' needs M = N = {task.N}")
    if plan is not None:  # every argument checked: the estimate, before any work (it may refuse the run)
        plan(
            certify_estimate(
                task,
                steps=steps,
                population=population,
                train_size=train_size,
                test_size=test_size,
                prec=prec,
                max_prec=max_prec,
                record_steps=record_steps,
            )
        )
    train_set, eval_set = walk_sets(task, population, train_size, test_size, seed)
    model = get_model(MODEL)
    # the ball engine of (one_layer, zero): the reduced one, registered in rwtoolkit.engines.SPECIALISATIONS
    engine = select(model.name, "balls", "zero").load()
    keep = None if record_steps is None else record_steps.__contains__
    attempts: list[dict] = []
    bits = prec
    while True:
        with precision(bits):
            gram = enclose_gram(pos, M, task.N)
        traj = engine(
            task,
            model,
            steps,
            eta_q,
            eps_q,
            gram.mu,
            prec=bits,
            walks=(train_set, eval_set),
            keep=keep,
            progress=progress,
        )
        widest = traj.max_relative_radius()
        attempts.append(_attempt(bits, widest))
        if widest <= tol or bits * 2 > max_prec:
            break
        bits *= 2
    config = {
        "M": M,
        "pos": pos,
        "mu": str(gram.mu),
        "eta": str(eta_q),
        "eps": str(eps_q),
        "steps": steps,
        "population": population,
        "train_size": None if population else train_size,
        "test_size": None if population else test_size,
        "seed": seed,
        "prec": prec,
        "tol": tol,
        "max_prec": max_prec,
        "parent_threshold": str(threshold),
        "distinct_train_inputs": train_set.size,
        "distinct_eval_inputs": eval_set.size,
    }
    cert = Certification(task, config, gram, traj, attempts, widest <= tol, eval_set)
    cert.statements = statements(task, traj, eval_set, threshold)
    return cert


def accuracy_bounds(
    preds: list[int | None], labels: np.ndarray, weights: list[Fraction]
) -> tuple[Fraction, Fraction]:
    lo = sum((w for p, y, w in zip(preds, labels, weights) if p is not None and p == y), Fraction(0))
    undecided = sum((w for p, w in zip(preds, weights) if p is None), Fraction(0))
    return lo, lo + undecided


def _names(task: object) -> list[str]:
    circle = isinstance(task, CircleWalk)
    return (
        ["equal_attention"]
        + ["chance"] * circle
        + ["accuracy"]
        + ["bayes_optimal", "parent_attention"] * circle
    )


def statements(
    task: CircleWalk | FiniteTask, traj: BallTrajectory, eval_set: WalkSet, parent_threshold: Fraction
) -> list[Statement]:
    """The typed statements of a certified trajectory (Theorem 4.1 over all steps, Theorem 3.1 at the last)."""
    if traj.stopped is not None:
        return [
            Statement(name, "not reached", Verdict.INCONCLUSIVE, f"the certified run stopped: {traj.stopped}")
            for name in _names(task)
        ]
    out = []
    K, steps = eval_set.K, traj.records[-1].step
    # Theorem 4.1: equal token attention for every input at every step (certified only by the exact zeros of
    # the reduced coordinates: traj.symmetry is None for an engine that keeps none).
    symmetry = traj.symmetry
    if symmetry is not None and all(logits for logits, _ in symmetry):
        out.append(
            Statement(
                "equal_attention",
                f"S_1 = … = S_(N-1) for every input at every step t ≤ {steps}",
                Verdict.HOLDS,
                "w_tok and c_1..c_(N-1) are exactly constant (balls of radius 0)",
            )
        )
    else:
        witness = None
        for rec in traj.records:
            for name, ev in (("training", rec.train_evaluation), ("evaluation", rec.evaluation)):
                j = next((j for j, x in enumerate(ev.profile_differences) if sign(x) not in (0, None)), None)
                if j is not None and witness is None:
                    witness = f"step {rec.step}: mean attention on the {name} set at position {j + 1} differs from position 1"
        out.append(
            Statement(
                "equal_attention",
                f"S_1 = … = S_(N-1) for every input at every step t ≤ {steps}",
                Verdict.REFUTED if witness else Verdict.INCONCLUSIVE,
                witness
                or (
                    "the logit differences are not exact zeros and no ball excludes 0"
                    if symmetry is not None
                    else "the engine keeps no exact logit differences and no ball excludes 0"
                ),
            )
        )
    # Theorem 4.1: chance accuracy (the prediction is the same for every input).
    claim = (
        f"every input gets the same prediction at every step t ≤ {steps}, so the population accuracy is 1/{K}"
    )
    if isinstance(task, CircleWalk):
        if symmetry is not None and all(rows for _, rows in symmetry):
            out.append(
                Statement(
                    "chance",
                    claim,
                    Verdict.HOLDS,
                    "V's rows are exactly constant (V[y, k] - V[y, 0] is the exact 0), so f(X) = (1 - S_N(X))·V[:, 0] "
                    "with 1 - S_N > 0: the argmax does not depend on X, and a circle walk's label is uniform",
                )
            )
        else:
            witness = None
            for rec in traj.records:
                decided = {p for p in rec.evaluation.predictions if p is not None}
                if len(decided) > 1 and witness is None:
                    witness = f"step {rec.step}: evaluation inputs are certified to get different predictions {sorted(decided)}"
            out.append(
                Statement(
                    "chance",
                    claim,
                    Verdict.REFUTED if witness else Verdict.INCONCLUSIVE,
                    witness
                    or (
                        "V's rows are not exact constants and no two predictions are certified to differ"
                        if symmetry is not None
                        else "the engine keeps no exact differences of V's columns and no two predictions are "
                        "certified to differ"
                    ),
                )
            )
    last = traj.records[-1]
    ev = last.evaluation
    lo, hi = accuracy_bounds(ev.predictions, eval_set.labels, eval_set.weights)
    undecided = sum(p is None for p in ev.predictions)
    if lo == hi:
        out.append(
            Statement(
                "accuracy",
                f"evaluation accuracy at step {steps}",
                Verdict.HOLDS,
                f"accuracy = {lo} = {float(lo):.6g}: every argmax is decided",
            )
        )
    else:
        out.append(
            Statement(
                "accuracy",
                f"evaluation accuracy at step {steps}",
                Verdict.INCONCLUSIVE,
                f"{undecided} of {len(ev.predictions)} distinct inputs have an ambiguous argmax: accuracy in [{lo}, {hi}]",
            )
        )
    if isinstance(task, CircleWalk):
        Pi = task.transition_matrix()
        optimal = []
        for i in range(eval_set.size):
            row = [sp.Rational(Pi[int(eval_set.tokens[i, -1]), k]) for k in range(K)]
            optimal.append({k for k in range(K) if row[k] == max(row)})
        wrong = [i for i, p in enumerate(ev.predictions) if p is not None and p not in optimal[i]]
        claim = f"at step {steps} every evaluation input's prediction maximises Π[s_(N-1), ·] (Bayes-optimal)"
        if wrong:
            outcome, detail = (
                Verdict.REFUTED,
                f"{len(wrong)} distinct inputs are certified to predict outside the argmax of Π",
            )
        elif undecided:
            outcome, detail = Verdict.INCONCLUSIVE, f"{undecided} distinct inputs have an ambiguous argmax"
        else:
            outcome, detail = (
                Verdict.HOLDS,
                "every argmax is decided and lies in the argmax of Π[s_(N-1), ·]",
            )
        out.append(Statement("bayes_optimal", claim, outcome, detail))
        parent = ev.attention_profile[-2]
        with precision(traj.prec):
            gap = parent - arb(parent_threshold.numerator) / parent_threshold.denominator
        s = sign(gap)
        outcome = Verdict.HOLDS if s in (0, 1) else Verdict.REFUTED if s == -1 else Verdict.INCONCLUSIVE
        out.append(
            Statement(
                "parent_attention",
                f"mean attention on position N-1 at step {steps} is ≥ {parent_threshold}",
                outcome,
                f"parent attention ∈ {ball_interval(parent)}",
            )
        )
    return out
