"""The certified trajectory of any model (``rw certify --model``): its plan before any work, and its report.

``ball_model_job`` checks the arguments of a run of the generic ball engine (``ball_model_trajectory``) and
estimates its time (``ball_estimate``), memory and output size, so that a run that cannot fit is refused in one
line with the alternative (fewer steps) before any ball is computed. ``model_certify_json`` writes, per recorded
step, the training loss's enclosure (mid, rad) and the widest parameter radius, and the run's outcome: verified
when every step is certified, inconclusive at the step where the balls could not decide what the next step needs
(a ReLU input straddling 0), the steps before it kept. ``model_certify_markdown`` is the readable report.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from flint import arb

from rwtoolkit.engines.balls._balls import ball_json, interval_text, precision
from rwtoolkit.engines.balls._models import (
    BALL_INITS,
    MAX_BALL_SECONDS,
    ball_arithmetic,
    ball_estimate,
    ball_step_ops,
)
from rwtoolkit.engines.balls._trajectory import BASE_PREC, BallTrajectory, bits_per_step, rational
from rwtoolkit.io import CERTIFIED_WORDS

#: certify.json of a model's certified trajectory: its format name and version.
MODEL_FORMAT, MODEL_VERSION = "rw-certify-model", 1

#: Memory of the interpreter with numpy, python-flint and (for a traced model) torch loaded: measured 350 MiB.
_BASE_MEMORY = 400 * 2**20
#: Bytes of one ball (``arb``) held at ``bits`` of precision: the mantissa and the object around it.
_BALL_OVERHEAD = 64
#: Bytes of the tape of one step per counted ball operation (``ball_step_ops``) and 512 bits: measured 1.1-3.9.
_TAPE_BYTES_PER_OP = 4
#: Bytes of certify.json and CERTIFY.md: the header and one entry per recorded step (each file, at most).
_FILE_HEADER, _FILE_PER_STEP = 4096, 400


@dataclass(frozen=True)
class BallEstimate:
    """Estimated cost of a certified run: seconds (at its first precision), peak memory, bytes of its files."""

    seconds: float
    memory: int
    file_bytes: int


@dataclass(frozen=True)
class BallJob:
    """A run of the generic ball engine planned before any work (``ball_model_job``): its checked arguments
    (``ball_model_trajectory``'s keywords), the first precision it tries, its estimate, what to say when it
    cannot fit (``what`` names it, ``alternatives`` what to do instead)."""

    steps: int
    arguments: dict[str, Any]
    bits: int
    estimate: BallEstimate
    what: str
    alternatives: str
    recorded: list[int] = field(default_factory=list)


def _positive(value: object, name: str) -> Fraction:
    """An exact positive rational of ``--name`` ("1/10", "0.1" is 1/10), or a one-line ValueError."""
    try:
        q = rational(value)
    except (ValueError, ZeroDivisionError):
        q = None
    if q is None or q <= 0:
        raise ValueError(f"--{name}={value!r} must be a positive rational number, e.g. 1, 0.1 or 1/10")
    return q


def most_steps(
    task: Any, model: Any, limit: float, mu: object = 1, prec: int | None = None, init: str = "zero"
) -> int:
    """The most steps whose ``ball_estimate`` is at most ``limit`` seconds (0 when even none fits).

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> task, model = CircleWalk(3, 3, "1/2"), get_model("one_layer")
    >>> s = most_steps(task, model, 10)
    >>> ball_estimate(task, model, s) <= 10 < ball_estimate(task, model, s + 1)
    True
    """
    if ball_estimate(task, model, 0, mu, prec, None, init) > limit:
        return 0
    low, high = 0, 1
    while ball_estimate(task, model, high, mu, prec, None, init) <= limit:
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        if ball_estimate(task, model, middle, mu, prec, None, init) <= limit:
            low = middle
        else:
            high = middle
    return low


def recorded_count(steps: int, record_steps: Collection[int] | None) -> int:
    """How many of the states 0..``steps`` a run records (``record_steps``, None for every one, and always the
    last), counted without listing them: the plan of a refused ``steps`` of 10⁹ costs nothing.

    >>> recorded_count(10**9, None), recorded_count(5, {0, 2, 5, 7})
    (1000000001, 3)
    """
    return steps + 1 if record_steps is None else len({t for t in record_steps if 0 <= t < steps} | {steps})


def ball_model_job(
    task: Any,
    model: Any,
    steps: int,
    *,
    eta: object = 1,
    eps: object = "1/10",
    mu: object = 1,
    prec: int | None = None,
    init: str = "zero",
    objective: str | None = None,
    record_steps: set[int] | None = None,
    max_seconds: float = MAX_BALL_SECONDS,
    optimizer: Any = None,
    schedule: Any = None,
    stages: Any = None,
) -> BallJob:
    """``ball_model_trajectory``'s run on the task's population planned before any work.

    Refuses in one line (ValueError) a start other than zero or the model's own (and ``own`` for a model
    without one), an objective the model has not, η, ε or μ not a positive rational, and a run estimated above
    ``max_seconds`` (at most ``MAX_BALL_SECONDS``), naming the most steps that fit. ``optimizer`` (a
    ``rwtoolkit.models.Optimizer``; None: plain GD) goes into the arguments, and certify.json's config, where given
    (the estimate is plain GD's: a rule's update is a few operations per parameter beside the gradient's tape);
    so do ``schedule`` (``rwtoolkit.models.Schedule``) and ``stages`` ((steps, parameter names) in order, checked
    against the model's parameters and ``steps`` here, before any work). The estimate: seconds by
    ``ball_estimate`` at the first precision the engine tries (``prec``, or the automatic
    BASE_PREC + ``bits_per_step(optimizer)``·steps bits, more for Adam's rules; a run whose balls are not tight
    there is run again at a higher precision, which the estimate does not count); memory of the interpreter, one step's tape and the
    recorded steps' balls; bytes of certify.json and CERTIFY.md.

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> job = ball_model_job(CircleWalk(3, 3, "1/2"), get_model("key_query"), 2)
    >>> job.bits, job.recorded, job.estimate.seconds < 5
    (268, [0, 1, 2], True)
    """
    from rwtoolkit.models import Sizes, objective_name, stage_plan

    name = objective_name(model, objective)
    if init not in BALL_INITS:
        raise ValueError(f"--init {init} is not one of {', '.join(BALL_INITS)} (the ball engine's starts)")
    eta_q, eps_q, mu_q = _positive(eta, "eta"), _positive(eps, "eps"), _positive(mu, "mu")
    limit = min(float(max_seconds), MAX_BALL_SECONDS)
    population = task.population()  # refuses a population beyond its enumeration limit
    sizes = Sizes(K=population.K, M=4 * -(-population.N // 4), N=population.N)
    if init == "own":  # refused before any work where the model has no start of its own
        model.own_start(ball_arithmetic(), sizes, "zero")
    bits = BASE_PREC + bits_per_step(optimizer) * max(steps, 1) if prec is None else prec
    seconds = ball_estimate(task, model, steps, mu_q, bits, None, init)
    n_recorded = recorded_count(steps, record_steps)
    ops = ball_step_ops(task, model, mu_q)
    ball_bytes = bits // 8 + _BALL_OVERHEAD
    per_record = (
        2 * model.parameter_count(sizes) + population.size * (population.N + 1) * population.K
    ) * ball_bytes
    memory = int(_BASE_MEMORY + _TAPE_BYTES_PER_OP * ops * max(1.0, bits / 512) + per_record * n_recorded)
    file_bytes = 2 * (_FILE_HEADER + _FILE_PER_STEP * n_recorded)
    what = f"the certified run of {model.name} ({steps} steps at {bits} bits)"
    fits = most_steps(task, model, limit, mu_q, prec, init)
    alternatives = (
        f"take at most --steps {fits}"
        if fits > 0
        else "take a smaller task (the step before the first is over)"
    )
    if seconds > limit:
        raise ValueError(
            f"{what} is estimated at {seconds:.3g} s, above the limit of {limit:.0f} s; {alternatives}"
        )
    recorded = sorted({t for t in range(steps + 1) if record_steps is None or t in record_steps} | {steps})
    arguments = dict(eta=eta_q, eps=eps_q, mu=mu_q, prec=prec, init=init, objective=name)
    if optimizer is not None:  # the update rule (rwtoolkit.models.Optimizer); None: plain GD
        arguments["optimizer"] = optimizer
    if schedule is not None:
        arguments["schedule"] = schedule
    if stages is not None:
        stage_plan(stages, list(model.shapes(sizes)), steps)  # one line before any work
        arguments["stages"] = stages
    return BallJob(
        steps, arguments, bits, BallEstimate(seconds, memory, file_bytes), what, alternatives, recorded
    )


def _upper(x: arb) -> float | None:
    """The smallest float64 at or above every real of ``x`` (None when ``x`` is not finite or beyond float64).

    >>> _upper(arb(0)), _upper(arb(1) / 3) > 1 / 3, _upper(arb("0 +/- inf"))
    (0.0, True, None)
    """
    if not x.is_finite():
        return None
    top = x.upper()
    value = float(top)
    if math.isfinite(value) and arb(value) < top:
        value = math.nextafter(value, math.inf)
    return value if math.isfinite(value) else None


def model_certify_json(task: Any, model: Any, job: BallJob, traj: BallTrajectory) -> dict:
    """The certified run as plain JSON types (format ``rw-certify-model``).

    Per recorded step: ``loss`` ({"mid", "rad"}, ``ball_json``: [mid ± rad] contains the exact training loss)
    and ``widest_parameter_radius`` (the largest radius over θ(t)'s balls, rounded up); the run's ``outcome``
    (``verified`` when every step is certified, ``inconclusive`` when it stopped, with ``stopped_at`` and
    ``reason``), the precision that ran and the estimate made before it.
    """
    import numpy as np

    steps = []
    with precision(traj.prec):
        for record in traj.records:
            widest = arb(0)
            for value in record.state.params.values():
                for x in np.asarray(value).ravel():
                    widest = widest.max(arb(x.rad()) if x.is_finite() else arb("0 +/- inf"))
            steps.append(
                {
                    "step": record.step,
                    "loss": ball_json(record.train_loss),
                    "widest_parameter_radius": _upper(widest),
                }
            )
    a = job.arguments
    return {
        "format": MODEL_FORMAT,
        "version": MODEL_VERSION,
        "model": model.describe(),
        "task": task.describe(),
        "config": {
            "steps": job.steps,
            "eta": str(a["eta"]),
            "eps": str(a["eps"]),
            "mu": str(a["mu"]),
            "init": a["init"],
            "objective": a["objective"],
            "recorded_steps": len(job.recorded),
            **({"optimizer": a["optimizer"].describe()} if a.get("optimizer") is not None else {}),
            **({"schedule": a["schedule"].text} if a.get("schedule") is not None else {}),
            **(
                {"stages": [[int(k), sorted(names)] for k, names in a["stages"]]}
                if a.get("stages") is not None
                else {}
            ),
        },
        "estimate": {
            "seconds": round(job.estimate.seconds, 3),
            "memory_bytes": job.estimate.memory,
            "file_bytes": job.estimate.file_bytes,
            "prec": job.bits,
        },
        "prec": traj.prec,
        "outcome": CERTIFIED_WORDS.word(traj.outcome),
        "stopped_at": traj.stopped_at,
        "reason": traj.stopped,
        "steps": steps,
    }


def model_certify_markdown(data: dict) -> str:
    """CERTIFY.md of ``model_certify_json``'s data: the run, its outcome, and per recorded step the loss as an
    interval rounded outward (``interval_text``) and the widest parameter radius."""
    c = data["config"]
    objective = f"objective {c['objective']}" if c["objective"] else f"loss -log(z + {c['eps']})"
    lines = [
        f"# Certified trajectory of {data['model'].get('name', data['model'])}",
        "",
        f"Task {data['task']}; {c['steps']} steps of population GD, η = {c['eta']}, {objective}, "
        f"μ = {c['mu']}, from {'zero' if c['init'] == 'zero' else 'the model’s own start'}; "
        f"ball arithmetic at {data['prec']} bits.",
        "",
        f"Outcome: **{data['outcome']}**"
        + (
            f" — {data['reason']}; the steps before {data['stopped_at']} are certified."
            if data["reason"]
            else ""
        ),
        "",
        f"Estimated before the run: {data['estimate']['seconds']} s at {data['estimate']['prec']} bits.",
        "",
        "| step | training loss ∈ | widest parameter radius |",
        "| --- | --- | --- |",
    ]
    for s in data["steps"]:
        widest = s["widest_parameter_radius"]
        lines.append(
            f"| {s['step']} | {interval_text(s['loss'])} | {'∞' if widest is None else f'{widest:.3g}'} |"
        )
    return "\n".join(lines) + "\n"


def model_certify_summary(data: dict, seconds: float | None = None) -> str:
    """What ``rw certify --model`` prints: the outcome, its precision (and the run's ``seconds``), why it stopped,
    and the last recorded step's loss interval and widest parameter radius."""
    took = "" if seconds is None else f" ({seconds:.3g} s)"
    lines = [
        f"certified trajectory of {data['model'].get('name')}: {data['outcome']} at {data['prec']} bits{took}"
    ]
    if data["reason"]:
        lines.append(data["reason"])
    if data["steps"]:
        last = data["steps"][-1]
        widest = last["widest_parameter_radius"]
        lines.append(
            f"step {last['step']}: training loss ∈ {interval_text(last['loss'])}, widest parameter radius "
            + ("unbounded" if widest is None else f"{widest:.3g}")
        )
    return "\n".join(lines)
