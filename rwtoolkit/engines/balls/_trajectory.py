"""The one trajectory type of the ball engines and what their one signature shares.

Gradient descent in arb balls has two engines: the generic one, ``ball_model_trajectory`` (any model of record:
its forward pass differentiated by the tape, ``rwtoolkit.models.gradient_steps``), and its specialisation for the
paper's model from zero, ``run_trajectory`` (symmetry-preserving reduced coordinates, ``_engine.py``).
``rwtoolkit.engines.select(model.name, "balls", start)`` chooses between them, and both are called alike::

    engine(task, model, steps, eta=1, eps="1/10", mu=1, *, prec=None, walks=None, keep=None, progress=False)

``task`` gives K and N and, without ``walks``, the training and evaluation set (its exact population);
``walks`` is (training set, evaluation set) as ``WalkSet``\\ s; η, ε and μ are exact rationals (the positions
have PᵀP = μI); ``prec`` is the working precision in bits, or None for ``automatic_precision``; ``keep(t)``
selects the recorded steps (default every step; the last is always recorded). Both return a
``BallTrajectory``: at every recorded step the training loss and the read-outs on both sets (``Readout``), and
either θ(t) as the model of record names it (``StepRecord.state``, generic engine) or the reduced coordinates
(``StepRecord.reduced``, specialisation), whose exact zeros also certify the symmetry (``BallTrajectory.symmetry``).
A ``BallTrajectory`` is the ball arithmetic's ``rwtoolkit.engines.Trajectory``: ``value(t, name)`` reads either
engine's parameters by name (``parameter_names``) as arb balls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from flint import arb

from rwtoolkit.engines.balls._balls import relative_radius, sign
from rwtoolkit.engines.balls._walks import WalkSet
from rwtoolkit.io import Verdict

#: The working precision (bits) chosen by ``automatic_precision``: BASE_PREC + BITS_PER_STEP·steps, doubled
#: in the per-step part while a kept ball is not finite or wider than 2^-64 relative (naive interval GD
#: loses about 5 bits a step to the wrapping effect: measured on the two-layer model, N = 4).
BASE_PREC = 256
BITS_PER_STEP = 6
#: The per-step part for Adam's rules, whose update divides by √v: their ball runs lose more, 6 to 20 bits a step
#: and growing through a transition (measured on examples/papers/edelman_induction.py's two_layer, L = 6: 403
#: bits left of 1400 after 60 steps at η = 1/100, 180 left of 2256 after 180 steps at η = 1/2000).
ADAM_BITS_PER_STEP = 24


def bits_per_step(optimizer: Any = None) -> int:
    """The per-step part of the first automatic precision for an update rule (a ``rwtoolkit.models.Optimizer``;
    None: plain GD): ``ADAM_BITS_PER_STEP`` for Adam's rules, ``BITS_PER_STEP`` for the others.

    >>> from rwtoolkit.models import Optimizer
    >>> bits_per_step(), bits_per_step(Optimizer("momentum")), bits_per_step(Optimizer("adamw"))
    (6, 6, 24)
    """
    rational = optimizer is None or optimizer.rational_updates  # every rule but Adam's (its √v)
    return BITS_PER_STEP if rational else ADAM_BITS_PER_STEP


#: The largest precision ``automatic_precision`` tries before a run is reported as not certified.
MAX_MODEL_PREC = 2**15

#: The reduced engine's coordinates of the paper's model, as ``BallTrajectory.value`` names them.
REDUCED_COORDINATES = ("V", "w_tok", "c")

#: The per-input read-outs of the generic engine's records that ``BallTrajectory.value`` reads by name.
PER_INPUT = ("f", "token_logits")

#: (training set, evaluation set) of a ball run.
Walks = tuple[WalkSet, WalkSet]


@dataclass
class Readout:
    """What the model reads out on one set of inputs at one step (all balls; predictions where decided).

    ``predictions[i]``: the certified smallest argmax of f for distinct input i, or None when the
    balls cannot decide it; ``attention_profile[j]``: Σ_i w_i S_ij (N entries);
    ``profile_differences[j]``: Σ_i w_i (S_ij - S_i1) for token positions (exactly 0 under symmetry in the
    reduced engine; entry 0 is the exact 0).
    """

    predictions: list[int | None]
    attention_profile: list[arb]
    profile_differences: list[arb]


def predict(f: list[arb]) -> int | None:
    """The smallest argmax of the scores when the balls decide it (an exact tie goes to the smaller label).

    >>> predict([arb(1), arb(2), arb(2)]), predict([arb(1), arb("1 +/- 0.5")])
    (1, None)
    """
    best = max(range(len(f)), key=lambda k: (float(f[k].mid()), -k))
    for k in range(len(f)):
        if k != best:
            s = sign(f[best] - f[k])
            if not (s == 1 or (s == 0 and k > best)):
                return None
    return best


@dataclass
class Reduced:
    """The paper's model at one step in reduced coordinates (the reduced engine's view of a ``StepRecord``):
    V (K×K), w_tok (K,), c (N,) and the symmetry-preserving ``_engine.State`` they are computed from."""

    state: Any
    V: list[list[arb]]
    w_tok: list[arb]
    c: list[arb]


@dataclass
class StepRecord:
    """Everything certified at one recorded step t (balls; predictions None where undecided).

    Every ball engine gives the training loss and the read-outs on the evaluation and training sets
    (``train_evaluation`` is the same object as ``evaluation`` when training on the evaluation set). The
    generic engine adds ``state``: θ(t) as the model of record names it, evaluated on the training set (a
    ``rwtoolkit.models.Evaluation``: ``params``, ``S``, ``f``, ``loss``); the reduced engine adds ``reduced``:
    the paper's model in reduced coordinates (V, w_tok, c and its symmetry-preserving ``State``).
    """

    step: int
    train_loss: arb
    evaluation: Readout
    train_evaluation: Readout
    state: Any = None
    reduced: Reduced | None = None

    def coordinates(self) -> list[arb]:
        """The balls of θ(t) as the engine keeps them: the reduced engine's ``State``, else the model's
        parameters and f."""
        if self.reduced is not None:
            return self.reduced.state.balls()
        values = [*self.state.f.ravel()]
        for v in self.state.params.values():
            values += list(np.asarray(v).ravel())
        return values


@dataclass
class BallTrajectory:
    """A certified trajectory at one working precision: the recorded steps of either ball engine, of the
    model of record ``model``.

    Read as every engine's ``rwtoolkit.engines.Trajectory``: ``parameter_names`` are the model's parameters
    (generic engine) or the reduced coordinates V, w_tok, c (reduced engine), ``times`` the recorded steps,
    ``value(t, name)`` a parameter (a numpy object array of balls) or the read-out ``loss`` or
    ``mean_attention`` (on the evaluation set), ``loss(t)`` the training loss; ``reduced`` is the trajectory
    itself where the reduced engine ran (its records hold ``StepRecord.reduced``), else None.
    """

    #: The arithmetic of every ball engine (``rwtoolkit.engines.Trajectory``).
    arithmetic: ClassVar[str] = "balls"

    prec: int
    mu: Fraction
    records: list[StepRecord] = field(default_factory=list)
    #: (token and position logits equal, V's rows constant) at every step 0..steps, certified by exact zeros
    #: of the reduced coordinates; None when the engine keeps no such coordinates (the generic engine).
    symmetry: list[tuple[bool, bool]] | None = None
    #: why the run stopped early (balls too wide to continue, a ReLU input straddling 0), None when it reached
    #: the last step; the steps before ``stopped_at`` are certified (kept in ``records``), that one is not
    stopped: str | None = None
    stopped_at: int | None = None
    #: the undecided ball that stopped the run was already tight: ``automatic_precision`` does not raise the
    #: precision for it (a value within 2^-64 of 0, such as a ReLU input that is exactly 0 in exact arithmetic)
    settled: bool = False
    #: the model of record the engine ran (``rwtoolkit.models.Model``)
    model: Any = None

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """V, w_tok, c where the reduced engine ran, else the model's parameters; () with no record."""
        if not self.records:
            return ()
        if self.records[0].reduced is not None:
            return REDUCED_COORDINATES
        return tuple(self.records[0].state.params)

    @property
    def times(self) -> tuple[int, ...]:
        """The recorded steps."""
        return tuple(r.step for r in self.records)

    def value(self, t: int, name: str) -> Any:
        """Parameter ``name`` (``parameter_names``) at recorded step t as a numpy object array of balls, or
        the read-out ``loss`` (the training loss) or ``mean_attention`` (on the evaluation set); where the
        generic engine ran, also the per-input read-outs on the training set ``f`` (n, K) and, for a model
        with next-token logits, ``token_logits`` (n, L, K)."""
        record = self._record(t)
        if name == "loss":
            return record.train_loss
        if name == "mean_attention":
            return np.array(record.evaluation.attention_profile, dtype=object)
        if name in PER_INPUT and record.state is not None and getattr(record.state, name) is not None:
            return getattr(record.state, name)
        if name not in self.parameter_names:
            raise ValueError(
                f"no parameter or read-out {name!r}: use {', '.join(self.parameter_names)}, loss, mean_attention"
                + (", f, token_logits" if record.state is not None else "")
            )
        if record.reduced is not None:
            return np.array(getattr(record.reduced, name), dtype=object)
        return record.state.params[name]

    def loss(self, t: int) -> arb:
        """The training loss at recorded step t (a ball)."""
        return self._record(t).train_loss

    @property
    def reduced(self) -> BallTrajectory | None:
        """The trajectory itself where the reduced engine ran (the reduced coordinates are its records'
        ``StepRecord.reduced``), else None."""
        return self if self.records and self.records[0].reduced is not None else None

    def _record(self, t: int) -> StepRecord:
        for record in self.records:
            if record.step == t:
                return record
        raise ValueError(f"step {t} is not recorded: the recorded steps are {list(self.times)}")

    def max_relative_radius(self) -> float:
        """The widest ball (relative to its size, absolute below 1) over θ, the training loss and the mean
        attention of every recorded step; inf if stopped."""
        if self.stopped is not None:
            return float("inf")
        widest = 0.0
        for r in self.records:
            balls = [*r.coordinates(), r.train_loss, *r.evaluation.attention_profile]
            widest = max(widest, max(relative_radius(b) for b in balls))
        return widest

    @property
    def outcome(self) -> Verdict:
        """``Verdict.HOLDS`` when every step is certified, ``Verdict.INCONCLUSIVE`` when the run stopped
        (``stopped`` says at which step and why); never a pass for a stopped run."""
        return Verdict.HOLDS if self.stopped is None else Verdict.INCONCLUSIVE

    def tight(self) -> bool:
        """Every ball of θ (and of f, in the generic engine) finite and narrower than 2^-64 relative (or
        absolute near 0) at every recorded step, and the run not stopped (or stopped by a ``settled`` ball:
        then the steps before the stop are what is judged)."""
        if self.stopped is not None and not self.settled:
            return False
        for r in self.records:
            for x in r.coordinates():
                if not x.is_finite() or x.rad() > 2.0**-64 * max(1.0, abs(float(x.mid()))):
                    return False
        return True


def rational(value: object) -> Fraction:
    """An exact rational from an int, Fraction, SymPy Rational or its string ("1/10"; "0.1" is 1/10)."""
    return Fraction(value) if isinstance(value, (int, Fraction)) else Fraction(str(value))


def automatic_precision(
    run: Callable[[int], BallTrajectory], steps: int, per_step: int = BITS_PER_STEP
) -> BallTrajectory:
    """``run(bits)`` at BASE_PREC + per_step·steps bits (``bits_per_step`` of the run's rule), the per-step part
    doubled until the trajectory is ``tight``; ValueError if it is not by ``MAX_MODEL_PREC`` bits."""
    extra = per_step * max(steps, 1)
    while BASE_PREC + extra <= MAX_MODEL_PREC:
        traj = run(BASE_PREC + extra)
        if traj.tight():
            return traj
        extra *= 2
    raise ValueError(
        f"the certified run of {steps} steps lost every bit below {MAX_MODEL_PREC} bits of precision; "
        "take fewer steps"
    )
