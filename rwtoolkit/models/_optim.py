"""The update rules of gradient descent, defined once on the arithmetic's arrays (docs/guide/optimizers.md).

``rwtoolkit.models.gradient_steps`` takes one ``Optimizer``; every engine runs it in its arithmetic (float64,
torch, arb balls, exact rationals), so the float, ball and exact trajectories of a rule are one definition.
With gradient g = ∇L(θ), learning rate η (one per parameter where given) and step t = 1, 2, ... (torch.optim's
conventions, so that a ``torch.optim`` loop is the same rule):

* ``gd``: θ ← θ − η g (with weight decay λ: g ← g + λθ first, as every rule but AdamW);
* ``momentum`` (heavy ball, ``torch.optim.SGD(momentum=μ)``): b ← g at t = 1, else b ← μ b + g; θ ← θ − η b;
* ``nesterov`` (``torch.optim.SGD(momentum=μ, nesterov=True)``): b as above; θ ← θ − η (g + μ b);
* ``adam`` (``torch.optim.Adam``): m ← β₁ m + (1 − β₁) g, v ← β₂ v + (1 − β₂) g² from m = v = 0;
  θ ← θ − η (m / (1 − β₁ᵗ)) / (√v / √(1 − β₂ᵗ) + ε), ε outside the square root; weight decay is L2 (g ← g + λθ);
* ``adamw`` (``torch.optim.AdamW``): θ ← θ (1 − η λ) (decoupled weight decay), then Adam's step without it.

``gradient_steps`` also reads a learning-rate ``schedule`` (``schedule_factor``) and training in ``stages``
(``stage_plan``), the step's ``scale`` and ``active`` parameters of the rule (``Optimizer.stepper``).
Momentum stays rational in rational arithmetic (the exact engine runs it); Adam's √v is irrational in general,
and the exact arithmetic refuses it in one line naming the ball engine. Hyperparameters are held as exact
rationals (a float is read as its shortest decimal: 0.9 is 9/10, whose float64 is 0.9 again).

>>> Optimizer("adam").describe()
{'name': 'adam', 'betas': [0.9, 0.999], 'eps': 1e-08, 'weight_decay': 0.0}
>>> Optimizer("momentum", momentum="9/10").momentum
Fraction(9, 10)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

#: The update rules, as ``--optimizer`` offers them.
OPTIMIZERS = ("gd", "momentum", "nesterov", "adam", "adamw")
#: The rules with a momentum buffer b (``momentum``), and those with Adam's moments m, v (``betas``, ``eps``).
MOMENTUM_RULES = ("momentum", "nesterov")
ADAM_RULES = ("adam", "adamw")
#: torch.optim's defaults: SGD's momentum (given here for the momentum rules), Adam's betas and eps, and the
#: weight decay (AdamW's is 1/100, every other rule's 0).
DEFAULT_MOMENTUM = Fraction(9, 10)
DEFAULT_BETAS = (Fraction(9, 10), Fraction(999, 1000))
DEFAULT_EPS = Fraction(1, 10**8)
DEFAULT_ADAMW_DECAY = Fraction(1, 100)

#: The state each rule keeps per parameter (``Optimizer.stepper``'s ``state``): the momentum buffer b, Adam's
#: step count t and moments m, v; plain GD none.
RULE_STATE_KEYS = {
    "gd": (),
    "momentum": ("b",),
    "nesterov": ("b",),
    "adam": ("t", "m", "v"),
    "adamw": ("t", "m", "v"),
}


def rational(value: Any, name: str) -> Fraction:
    """``value`` (int, Fraction, decimal or fraction string, or float read as its shortest decimal) as an exact
    rational; one line naming ``name`` otherwise.

    >>> rational("0.999", "beta2"), rational(1e-8, "eps")
    (Fraction(999, 1000), Fraction(1, 100000000))
    """
    if isinstance(value, bool):
        raise ValueError(f"{name}={value!r} is not a number")
    try:
        q = Fraction(repr(value)) if isinstance(value, float) else Fraction(str(value).strip())
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{name}={value!r} is not a number (a decimal or a fraction such as 9/10)") from None
    return q


@dataclass(frozen=True)
class Optimizer:
    """One update rule of ``OPTIMIZERS`` and its hyperparameters, as exact rationals (the module's formulas).

    ``momentum`` μ ∈ (0, 1) (the momentum rules; default 9/10), ``betas`` (β₁, β₂) ∈ [0, 1)² and ``eps`` ε > 0
    (the Adam rules; defaults torch's (0.9, 0.999), 1e-8), ``weight_decay`` λ ≥ 0 (default 0, AdamW's 1/100 as
    torch's). A hyperparameter of another rule is refused in one line, as is a value out of range.
    """

    name: str = "gd"
    momentum: Any = None
    betas: Any = None
    eps: Any = None
    weight_decay: Any = None

    def __post_init__(self) -> None:
        if self.name not in OPTIMIZERS:
            raise ValueError(f"optimizer={self.name!r} is not one of {', '.join(OPTIMIZERS)}")
        momentum, adam = self.name in MOMENTUM_RULES, self.name in ADAM_RULES
        for option, applies in (("momentum", momentum), ("betas", adam), ("eps", adam)):
            if getattr(self, option) is not None and not applies:
                raise ValueError(
                    f"{option} is out of place: optimizer {self.name} has no {option} (leave it out)"
                )
        set_ = object.__setattr__
        if momentum:
            mu = DEFAULT_MOMENTUM if self.momentum is None else rational(self.momentum, "momentum")
            if not 0 < mu < 1:
                raise ValueError(f"momentum={self.momentum} is out of range: must be in (0, 1)")
            set_(self, "momentum", mu)
        if adam:
            betas = DEFAULT_BETAS if self.betas is None else tuple(self.betas)
            if len(betas) != 2:
                raise ValueError(f"betas={self.betas!r} must be two numbers beta1,beta2")
            b1, b2 = (rational(b, f"beta{i}") for i, b in enumerate(betas, 1))
            for i, b in ((1, b1), (2, b2)):
                if not 0 <= b < 1:
                    raise ValueError(f"beta{i}={b} is out of range: must be in [0, 1)")
            set_(self, "betas", (b1, b2))
            eps = DEFAULT_EPS if self.eps is None else rational(self.eps, "eps")
            if not eps > 0:
                raise ValueError(f"eps={self.eps} is out of range: must be > 0")
            set_(self, "eps", eps)
        default = DEFAULT_ADAMW_DECAY if self.name == "adamw" else Fraction(0)
        decay = default if self.weight_decay is None else rational(self.weight_decay, "weight_decay")
        if decay < 0:
            raise ValueError(f"weight_decay={self.weight_decay} is out of range: must be >= 0")
        set_(self, "weight_decay", decay)

    @property
    def plain(self) -> bool:
        """Whether this is today's rule, θ ← θ − η ∇L (``gd`` without weight decay)."""
        return self.name == "gd" and self.weight_decay == 0

    @property
    def rational_updates(self) -> bool:
        """Whether the update is rational in the state (every rule but Adam's, whose √v is not)."""
        return self.name not in ADAM_RULES

    def describe(self, exact: bool = False) -> dict[str, Any]:
        """The rule and its hyperparameters as JSON values: floats, as output files record them, or with
        ``exact`` the rationals as strings (``"9/10"``), as an oracle records them; ``Optimizer(**d)`` reads
        either back (the exact form to the same rule).

        >>> Optimizer("nesterov", momentum="1/3").describe(exact=True)
        {'name': 'nesterov', 'momentum': '1/3', 'weight_decay': '0'}
        """
        number = str if exact else float
        out: dict[str, Any] = {"name": self.name}
        if self.name in MOMENTUM_RULES:
            out["momentum"] = number(self.momentum)
        if self.name in ADAM_RULES:
            out["betas"] = [number(b) for b in self.betas]
            out["eps"] = number(self.eps)
        out["weight_decay"] = number(self.weight_decay)
        return out

    def check(self, arithmetic: Any) -> None:
        """One line naming the rule and the ball engine where ``arithmetic`` is exact and the rule is not
        rational in the state (Adam's square root), as ``rwtoolkit.models.Tape`` refuses layer norm."""
        if not self.rational_updates and getattr(arithmetic, "exact", False):
            from rwtoolkit.models._arith import BALL_ENGINE

            raise ValueError(
                f"{self.name}: √v is irrational in general; the {arithmetic.name} arithmetic cannot run it; {BALL_ENGINE}"
            )

    def stepper(
        self, arithmetic: Any, rates: Mapping[str, Any], state: dict[str, dict[str, Any]] | None = None
    ) -> Callable[..., dict]:
        """The rule in ``arithmetic`` with learning rate ``rates[name]`` per parameter: a function
        ``step(θ, g, scale=None, active=None)`` ↦ θ' that keeps its state (the buffers, and Adam's step count t
        per parameter, as torch's) from one call to the next, in ``state`` where given: a dict read at the
        first step and updated in place after each, ``{name: {"b": b}}`` for the momentum rules and
        ``{name: {"t": t, "m": m, "v": v}}`` for Adam's (a parameter not yet stepped has no entry; plain GD keeps
        none), so that a run stopped after any step continues from θ and ``state`` as if it had not stopped
        (``rw train``'s checkpoints, ``RULE_STATE_KEYS``). ``scale`` (an element of the arithmetic; None: 1)
        multiplies every rate at this step (a schedule, ``schedule_factor``); ``active`` (None: all) names the
        parameters this step updates: the others keep their values and their state, as ``torch.optim`` skips a
        parameter without a gradient (a stage, ``stage_plan``).

        >>> import numpy as np
        >>> from rwtoolkit.models import FLOAT64
        >>> step = Optimizer("momentum", momentum="1/2").stepper(FLOAT64, {"w": 1.0})
        >>> step({"w": np.array([1.0])}, {"w": np.array([1.0])}), step({"w": np.array([0.0])}, {"w": np.array([1.0])})
        ({'w': array([0.])}, {'w': array([-1.5])})
        """
        self.check(arithmetic)
        one = self._rule(arithmetic, {} if state is None else state)

        def step(params: dict, grads: dict, scale: Any = None, active: Any = None) -> dict:
            out = {}
            for name, theta in params.items():
                if active is not None and name not in active:
                    out[name] = theta
                else:
                    eta = rates[name] if scale is None else rates[name] * scale
                    out[name] = one(name, theta, grads[name], eta)
            return out

        return step

    def _rule(self, ar: Any, buffers: dict[str, dict[str, Any]]) -> Callable[[str, Any, Any, Any], Any]:
        """The update of one parameter (name, θ, g, η) ↦ θ', its state kept by name in ``buffers``."""

        def element(q: Fraction) -> Any:
            return ar.asarray([q])[0]

        if self.plain:  # today's rule, operation for operation (bit-identical outputs)
            return lambda name, theta, g, eta: theta - eta * g
        decay = element(self.weight_decay) if self.weight_decay != 0 else None
        l2 = decay is not None and self.name != "adamw"  # g ← g + λθ; AdamW decays θ itself
        if self.name == "gd":
            return lambda name, theta, g, eta: theta - eta * (g + decay * theta if l2 else g)
        if self.name in MOMENTUM_RULES:
            mu = element(self.momentum)

            def momentum(name: str, theta: Any, g: Any, eta: Any) -> Any:
                if l2:
                    g = g + decay * theta
                b = g if name not in buffers else mu * buffers[name]["b"] + g
                buffers[name] = {"b": b}
                return theta - eta * (g + mu * b if self.name == "nesterov" else b)

            return momentum
        b1, b2 = self.betas
        beta1, beta2, eps = element(b1), element(b2), element(self.eps)
        one_minus1, one_minus2 = element(1 - b1), element(1 - b2)

        def adam(name: str, theta: Any, g: Any, eta: Any) -> Any:
            if l2:
                g = g + decay * theta
            elif decay is not None:  # AdamW: decoupled
                theta = theta * (1 - eta * decay)
            state = buffers.get(name)
            if state is None:
                state = {"t": 0, "m": ar.zeros(tuple(g.shape)), "v": ar.zeros(tuple(g.shape))}
            t = state["t"] + 1
            m = beta1 * state["m"] + one_minus1 * g
            v = beta2 * state["v"] + one_minus2 * (g * g)
            buffers[name] = {"t": t, "m": m, "v": v}
            c1 = element(1 - b1**t)  # bias corrections, exact before they enter the arithmetic
            root_c2 = ar.sqrt(ar.asarray([1 - b2**t]))[0]
            return theta - (eta / c1) * m / (ar.sqrt(v) / root_c2 + eps)

        return adam


def schedule_factor(arithmetic: Any, schedule: Callable[[int], Any], t: int) -> Any:
    """``schedule(t)``, the factor of every learning rate at the step from θ(t) (t = 0, 1, ...; as
    ``torch.optim.lr_scheduler.LambdaLR`` after t scheduler steps), as an element of ``arithmetic``: read as an
    exact rational (a float as its shortest decimal), so that the exact arithmetic stays exact; one line
    unless it is a number ≥ 0.

    >>> from rwtoolkit.models import FLOAT64
    >>> float(schedule_factor(FLOAT64, lambda t: 1 / (t + 1), 2))
    0.3333333333333333
    """
    q = rational(schedule(t), f"schedule({t})")
    if q < 0:
        raise ValueError(f"schedule({t})={q} is out of range: a learning-rate factor must be >= 0")
    return arithmetic.asarray([q])[0]


def stage_plan(
    stages: Sequence[tuple[int, Collection[str]]], names: Collection[str], steps: int
) -> list[frozenset[str]]:
    """The parameters each step t = 0..steps−1 updates: ``stages`` is (number of steps, the parameters it
    trains) in order, covering every step; one line for a stage of no steps or no parameters, a name the model
    has not, or stages whose steps are not ``steps`` in all.

    >>> [sorted(a) for a in stage_plan([(1, ["V"]), (2, ["V", "W"])], ["V", "W"], 3)]
    [['V'], ['V', 'W'], ['V', 'W']]
    """
    plan: list[frozenset[str]] = []
    for i, (count, chosen) in enumerate(stages):
        trained = frozenset(chosen)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"stages[{i}]: steps={count!r} must be an integer >= 1")
        if not trained:
            raise ValueError(f"stages[{i}]: no parameters to train; name some of {', '.join(names)}")
        unknown = sorted(trained - set(names))
        if unknown:
            raise ValueError(
                f"stages[{i}]: {unknown[0]!r} is not a parameter of the model ({', '.join(names)})"
            )
        plan.extend([trained] * count)
    if len(plan) != steps:
        raise ValueError(f"stages cover {len(plan)} steps; steps={steps}: they must cover every step")
    return plan


#: The forms of a named schedule (``Schedule``), as ``--schedule`` takes them.
SCHEDULE_FORMS = (
    "step:EVERY:FACTOR (the rate times FACTOR every EVERY steps; FACTOR a rational > 0, e.g. step:100:1/2)",
    "warmup:W (linear warmup: the factor (t + 1)/W for t < W, then 1)",
    "cosine:T (the factor (1 + cos(π min(t, T)/T))/2; floats: the float and ball engines)",
)
#: The alternative named where the exact arithmetic cannot run a schedule (the cosine's values are floats).
_FLOAT_ENGINES = "use the float engine (rw train) or the ball engine (rw certify --model)"


@dataclass(frozen=True)
class Schedule:
    """A named learning-rate schedule: ``schedule(t)`` is the factor of every rate at the step from θ(t), the
    callable ``gradient_steps(schedule=)`` reads through ``schedule_factor`` (as ``LambdaLR``).

    ``form`` is ``step`` (``every`` steps, ``factor``: factor^⌊t/every⌋), ``warmup`` (``length`` W:
    min(t + 1, W)/W) or ``cosine`` (``length`` T: (1 + cos(π min(t, T)/T))/2, a float64). ``step`` and
    ``warmup`` are exact rationals; the cosine's values are floats, which the exact arithmetic refuses
    (``check``). ``Schedule.parse`` reads the text ``--schedule`` takes (``SCHEDULE_FORMS``), ``text`` writes it.

    >>> s = Schedule.parse("step:2:1/2")
    >>> [s(t) for t in range(5)], s.text
    ([Fraction(1, 1), Fraction(1, 1), Fraction(1, 2), Fraction(1, 2), Fraction(1, 4)], 'step:2:1/2')
    >>> [str(Schedule.parse("warmup:3")(t)) for t in range(4)]
    ['1/3', '2/3', '1', '1']
    """

    form: str
    length: int = 1
    factor: Fraction = Fraction(1)

    def __call__(self, t: int) -> Any:
        if self.form == "step":
            return self.factor ** (t // self.length)
        if self.form == "warmup":
            return Fraction(min(t + 1, self.length), self.length)
        import math

        return (1 + math.cos(math.pi * min(t, self.length) / self.length)) / 2

    @property
    def exact(self) -> bool:
        """Whether every factor is an exact rational (``step``, ``warmup``; not the cosine)."""
        return self.form != "cosine"

    @property
    def text(self) -> str:
        """The schedule as ``--schedule`` takes it (and output files record it)."""
        return f"step:{self.length}:{self.factor}" if self.form == "step" else f"{self.form}:{self.length}"

    def check(self, arithmetic: Any) -> None:
        """One line naming the float and ball engines where ``arithmetic`` is exact and the schedule is not."""
        if not self.exact and getattr(arithmetic, "exact", False):
            raise ValueError(
                f"--schedule {self.text}: the cosine's factors are floats, not rationals; the "
                f"{arithmetic.name} arithmetic cannot run it; {_FLOAT_ENGINES}"
            )

    @classmethod
    def parse(cls, text: str) -> Schedule:
        """The schedule of ``text`` (``SCHEDULE_FORMS``); one line naming ``--schedule`` and the forms otherwise."""
        form, *rest = str(text).strip().split(":")
        counts = {"step": 2, "warmup": 1, "cosine": 1}
        try:
            if form not in counts or len(rest) != counts[form]:
                raise ValueError
            length = int(rest[0])
            factor = Fraction(rest[1]) if form == "step" else Fraction(1)
            if length < 1 or factor <= 0:
                raise ValueError
        except (ValueError, ZeroDivisionError):
            raise ValueError(
                f"--schedule={text!r} is not one of the forms {'; '.join(SCHEDULE_FORMS)}; EVERY, W, T integers >= 1"
            ) from None
        return cls(form, length, factor)


def parse_stages(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """``--stages``: comma-separated ``GLOBS=STEPS`` in order, GLOBS one or more parameter-name globs joined by
    ``|`` (fnmatch: ``*``, ``?``, ``[...]``), STEPS an integer ≥ 1; one line naming ``--stages`` and the form.

    >>> parse_stages("blocks.0.*=10, wte.*|wpe.*=5")
    [(10, ('blocks.0.*',)), (5, ('wte.*', 'wpe.*'))]
    """
    out: list[tuple[int, tuple[str, ...]]] = []
    for part in str(text).split(","):
        globs, sep, count = part.strip().rpartition("=")
        names = tuple(g.strip() for g in globs.split("|"))
        try:
            steps = int(count)
        except ValueError:
            steps = 0
        if not sep or steps < 1 or not all(names):
            raise ValueError(
                f"--stages={text!r} must be GLOBS=STEPS,... in order (parameter-name globs joined by |, an "
                "integer number of steps >= 1), e.g. 'blocks.0.*=1000,blocks.1.*=1000'"
            )
        out.append((steps, names))
    return out


def glob_stages(
    stages: Sequence[tuple[int, Sequence[str]]], names: Collection[str]
) -> list[tuple[int, frozenset[str]]]:
    """The stages of ``parse_stages`` with their globs matched against the model's parameter ``names`` (for
    ``gradient_steps(stages=)``); one line naming ``--stages``, the glob and the names for a glob matching none.

    >>> [(steps, sorted(chosen)) for steps, chosen in glob_stages([(2, ("W_*",)), (1, ("V",))], ["V", "W_K", "W_Q"])]
    [(2, ['W_K', 'W_Q']), (1, ['V'])]
    """
    from fnmatch import fnmatchcase

    out = []
    for steps, globs in stages:
        chosen: set[str] = set()
        for glob in globs:
            matched = {name for name in names if fnmatchcase(name, glob)}
            if not matched:
                raise ValueError(f"--stages: {glob!r} matches no parameter of the model ({', '.join(names)})")
            chosen |= matched
        out.append((steps, frozenset(chosen)))
    return out


#: Plain gradient descent, θ ← θ − η ∇L: the default of ``gradient_steps`` and every engine.
GD = Optimizer()
