"""The properties an implementation is checked against, each one hypothesis search over configurations.

A property body takes the hypothesis ``data`` object (``st.data()``: draws happen inside the test,
so shrinking and replay work), draws its configuration, runs the implementation and raises
``Mismatch`` at the first step and quantity that violate the statement.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

import numpy as np
import sympy as sp
from hypothesis import reject
from hypothesis import strategies as st

from rwtoolkit.analyses.check._compare import Divergence, Mismatch, compare, scaled_error, tolerance
from rwtoolkit.analyses.check._config import CheckConfig, config_json, for_model
from rwtoolkit.analyses.check._protocol import Factory, ImplementationError, Readouts, run_config
from rwtoolkit.analyses.check._settings import check_settings
from rwtoolkit.analyses.check.strategies import balanced_check_configs, check_configs, embeddings
from rwtoolkit.engines.exact import MAX_EXP_STEPS
from rwtoolkit.engines.numeric import positional_embeddings
from rwtoolkit.models import (
    DEFAULT_MODEL,
    Model,
    Optimizer,
    Schedule,
    Sizes,
    get_model,
    glob_stages,
    objective_name,
    stage_plan,
)
from rwtoolkit.tasks import LOSSES, CircleWalk


@dataclass(frozen=True)
class CheckOptions:
    """How much to check: GD steps t = 0..``steps``, hypothesis ``examples`` per property, ``dtype``, ``task``.

    ``task``: "circle" (circle walks, K in 3..5, N in 2..5), "finite" (small finite tasks) or "any";
    "sequence" (sequence tasks, the one kind of a sequence model); None (the default): the model's own
    (``check_settings(model).task``).
    """

    steps: int = 2
    examples: int = 10
    dtype: str = "float64"
    task: str | None = None
    losses: tuple[str, ...] = ("log",)
    #: The model of ``rwtoolkit.models`` checked (``rw check --model``) and its head dimension (key_query only).
    model: str = DEFAULT_MODEL
    head_dim: int | None = None
    heads: int | None = None
    #: A sequence model's objective ("lm" or "last"; None: "lm" for a sequence model, refused for another).
    objective: str | None = None
    #: A sequence model's update rule (``rwtoolkit.models.Optimizer``; None: plain GD, every model's).
    optimizer: Optimizer | None = None
    #: A sequence model's learning-rate schedule (``rwtoolkit.models.Schedule``, ``rw check --schedule``; None:
    #: a constant rate) and stages ((steps, parameter-name globs) in order, covering ``steps``; ``rw check
    #: --stages``): matched against the model's parameter names here (``rwtoolkit.models.glob_stages``).
    schedule: Schedule | None = None
    stages: Sequence[tuple[int, Collection[str]]] | None = None

    def __post_init__(self) -> None:
        if (
            isinstance(self.steps, bool)
            or not isinstance(self.steps, int)
            or not 0 <= self.steps <= MAX_STEPS
        ):
            raise ValueError(
                f"steps={self.steps!r} is out of range: steps must be an integer in 0..{MAX_STEPS} "
                "(beyond, the exact log-loss evaluation takes minutes per configuration)"
            )
        if isinstance(self.examples, bool) or not isinstance(self.examples, int) or self.examples < 1:
            raise ValueError(f"examples={self.examples!r} is out of range: examples must be an integer >= 1")
        if self.dtype not in ("float64", "float32"):
            raise ValueError(f"dtype={self.dtype!r} is not one of float64, float32")
        bad = [name for name in self.losses if name not in LOSSES]
        if bad or not self.losses:
            raise ValueError(f"losses={self.losses!r} must be a non-empty tuple of {', '.join(LOSSES)}")
        spec = get_model(
            self.model, d=self.head_dim, H=self.heads
        )  # one line: unknown model or hyperparameter
        init = check_settings(self.model).init
        # a sequence model's objective ("lm" unless told); one line for another model's
        object.__setattr__(self, "objective", objective_name(spec, self.objective))
        if self.optimizer is not None and self.optimizer.plain:
            object.__setattr__(self, "optimizer", None)
        if self.optimizer is not None and not spec.TOKEN_LOGITS:
            raise ValueError(
                f"--optimizer {self.optimizer.name}: rw check runs another update rule for a model with next-token "
                f"logits (a traced or sequence model); model {self.model!r} is checked under plain GD"
            )
        for flag, given in (("--schedule", self.schedule), ("--stages", self.stages)):
            if given is not None and not spec.TOKEN_LOGITS:
                raise ValueError(
                    f"{flag}: rw check runs a schedule and stages for a model with next-token logits (a traced or "
                    f"sequence model); model {self.model!r} is checked at a constant rate on every parameter"
                )
        if self.stages is not None:  # the globs against the model's names (the sizes of a sequence task)
            names = list(spec.shapes(Sizes(K=2, M=0, N=3)))
            stages = tuple(glob_stages([(n, tuple(globs)) for n, globs in self.stages], names))
            try:
                stage_plan(stages, names, self.steps)
            except ValueError as why:
                raise ValueError(f"--stages: {why}") from None
            object.__setattr__(self, "stages", stages)
        if init == "gaussian" and self.steps > MAX_EXP_STEPS:
            raise ValueError(
                f"steps={self.steps} is out of range for model={self.model!r}: it is checked from its exact "
                f"dyadic start (init {init}), from which the exact generic engine takes at most {MAX_EXP_STEPS} "
                f"steps (nested exponentials); steps must be an integer in 0..{MAX_EXP_STEPS}"
            )
        if self.task is None:  # the model's own (a frozen dataclass: set once, here)
            object.__setattr__(self, "task", check_settings(self.model).task)
        allowed = ("sequence",) if spec.TOKEN_LOGITS else ("circle", "finite", "any")
        if self.task not in allowed:
            raise ValueError(
                f"task={self.task!r} is not one of {', '.join(allowed)}"
                + (" (the tasks of a model with next-token logits)" if spec.TOKEN_LOGITS else "")
            )

    @property
    def model_spec(self) -> Model:
        """The ``rwtoolkit.models.Model`` checked."""
        return get_model(self.model, d=self.head_dim, H=self.heads)

    @property
    def generic(self) -> bool:
        """Whether the model is checked through the generic exact engine (any model but the paper's)."""
        return self.model != DEFAULT_MODEL

    def configs(self) -> st.SearchStrategy[CheckConfig]:
        drawn = check_configs(task=str(self.task), dtype=self.dtype, loss_names=self.losses)
        if not self.generic:
            return drawn
        return drawn.map(
            lambda config: for_model(
                config,
                self.model,
                self.head_dim,
                self.heads,
                self.objective,
                self.optimizer,
                self.schedule,
                self.stages,
                self.steps,
            )
        )


#: The exact engine reaches t = 4 on the drawn configurations (K, N <= 7) in seconds; its work grows about
#: fourfold per step beyond that.
MAX_STEPS = 4


def _run(factory: Factory, config: CheckConfig, steps: int) -> Readouts:
    """Run the implementation; a crash of the user's code fails the property on this config."""
    try:
        return run_config(factory, config, steps)
    except (ImplementationError, Mismatch):
        raise
    except Exception as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise ImplementationCrash(
            f"the implementation raised {type(err).__name__}: {first} on {config.describe()}", config
        ) from err


class ImplementationCrash(AssertionError):
    """The user's code raised on one configuration (the property fails there; hypothesis shrinks it)."""

    def __init__(self, message: str, config: CheckConfig) -> None:
        super().__init__(message)
        self.config = config


def _fail(
    t: int,
    quantity: str,
    got: np.ndarray,
    expected: np.ndarray,
    rtol: float,
    config: CheckConfig,
    note: str = "",
) -> None:
    """Raise ``Mismatch`` if ``got`` is farther than ``rtol`` (scaled) from ``expected``."""
    error, index = scaled_error(got, expected)
    if not error <= rtol:
        raise Mismatch(
            Divergence(
                t,
                quantity,
                index,
                float(expected[index]),
                float(got[index]),
                error,
                rtol,
                config=config.describe() + note,
                config_json=config_json(config),
            )
        )


# ------------------------------------------------------------------------------------------------
# the properties
# ------------------------------------------------------------------------------------------------
def trajectory(factory: Factory, data: st.DataObject, options: CheckOptions) -> list[str]:
    """Every read-out at t = 0..T equals the exact trajectory of the exact engine ``select`` gives (``compare``)."""
    config = data.draw(options.configs(), label="config")
    readouts = _run(factory, config, options.steps)
    try:
        return compare(readouts, config, options.steps)
    except ValueError as err:  # the exact log-loss is undefined on this config (z + ε ≤ 0): not a claim
        if "undefined" in str(err):
            reject()
        raise


def w_token_columns_zero(factory: Factory, data: st.DataObject, options: CheckOptions) -> list[str]:
    """W11 = W21 = 0: the first K columns of W(t) stay zero (every W-gradient is a multiple of x̃_Nᵀ)."""
    config = data.draw(options.configs(), label="config")
    readouts = _run(factory, config, options.steps)
    rtol = tolerance(config, options.steps).rtol
    K = config.K
    for t, W in enumerate(readouts.W or []):
        _fail(t, "W_first_columns", W[:, :K], np.zeros_like(W[:, :K]), rtol, config)
    return []


def first_value_step(factory: Factory, data: st.DataObject, options: CheckOptions) -> list[str]:
    """Lemma C.1: V(1) = -η ℓ'(0) E[e_y (X·1/N)ᵀ]; for circle walks (η(-ℓ'(0))/(NK)) Σ_{i=1}^{N-1} (Πᵀ)^{N-i}."""
    config = data.draw(options.configs(), label="config")
    readouts = _run(factory, config, 1)
    expected = np.array(first_value_step_closed_form(config).tolist(), dtype=np.float64)
    got = readouts.series("V")[1]
    # a model with a head axis (multi_head, V (H, K, K)): every head's V_h(1) is the one-head V(1), since
    # ∂L/∂V_h = E[ℓ'(z) e_y (X S_h)ᵀ] and every S_h(0) is uniform
    _fail(1, "V1", got, np.broadcast_to(expected, got.shape).copy(), tolerance(config, 1).rtol, config)
    return []


def first_value_step_closed_form(config: CheckConfig) -> sp.Matrix:
    """V(1) of Lemma C.1, exact: from the transition matrix for circle walks, else summed over the population.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> from rwtoolkit.analyses.check import build_config
    >>> cfg = build_config(CircleWalk(3, 2, 1), mu=1, eta=1, eps="1/10")
    >>> first_value_step_closed_form(cfg)  # (η/(εNK)) Πᵀ: label = the next node
    Matrix([
    [  0,   0, 5/3],
    [5/3,   0,   0],
    [  0, 5/3,   0]])
    """
    K, N = config.K, config.N
    eta, eps = sp.Rational(config.eta), sp.Rational(config.eps)
    minus_dell0 = {"log": 1 / eps, "squared": sp.Integer(2), "exp": sp.Integer(1)}[config.loss]  # -ℓ'(0)
    task = config.task
    if isinstance(task, CircleWalk):
        PiT = task.transition_matrix().T
        total = sp.zeros(K, K)
        for i in range(1, N):
            total += PiT ** (N - i)
        return eta * minus_dell0 / (N * K) * total
    pop = task.population()
    outer = sp.zeros(K, K)
    for tokens, y, prob in zip(pop.tokens.tolist(), pop.labels.tolist(), pop.exact_probs()):
        for s in tokens:
            outer[y, s] += prob
    return eta * minus_dell0 / N * outer


def theorem_4_1(factory: Factory, data: st.DataObject, options: CheckOptions) -> list[str]:
    """Theorem 4.1 (p ∈ {0, 1}, N = rK + 1): V(t) ∝ 1_{K×K}, S_1(t) = … = S_{N-1}(t), accuracy(t) = 1/K."""
    config = data.draw(balanced_check_configs(dtype=options.dtype, loss_names=options.losses), label="config")
    readouts = _run(factory, config, options.steps)
    rtol = tolerance(config, options.steps).rtol
    for t in range(options.steps + 1):
        V = readouts.series("V")[t]
        _fail(t, "V_ones", V, np.full_like(V, V.mean()), rtol, config)
        if readouts.provided("S"):
            S = readouts.series("S")[t][:, :-1]
            _fail(
                t, "S_tokens", S, np.repeat(S.mean(axis=1, keepdims=True), S.shape[1], axis=1), rtol, config
            )
        if readouts.provided("accuracy"):
            _fail(t, "accuracy", readouts.series("accuracy")[t], np.array(1 / config.K), 1e-12, config)
    return []


def depends_on_P_only_through_mu(factory: Factory, data: st.DataObject, options: CheckOptions) -> list[str]:
    """Two embeddings P, P' with the same μ = ‖p_i‖² give the same V, W x̃_N (as w_tok, c), S, f, loss, accuracy."""
    first = data.draw(options.configs(), label="config")
    emb = data.draw(
        embeddings(first.N, first.mu).filter(
            lambda e: (e.kind, e.M, e.seed) != (first.embedding, first.M, first.seed)
        ),
        label="second embedding",
    )
    P = positional_embeddings(emb.kind, emb.M, first.N, float(first.mu), emb.seed)
    second = replace(first, P=P, embedding=emb.kind, seed=emb.seed)
    a, b = _run(factory, first, options.steps), _run(factory, second, options.steps)
    if (
        a.P is not None or b.P is not None
    ):  # its own P: the config's two P never reach it (reported not checked)
        return []
    rtol = tolerance(first, options.steps).rtol
    K, mu = first.K, float(first.mu)
    note = f"; second P={emb.kind} M={emb.M} seed={emb.seed} (expected: the first P's value)"
    for t in range(options.steps + 1):
        for q in ("V", "W_xN", "S", "f", "loss", "accuracy"):
            if not (a.provided(q) and b.provided(q)):
                continue
            x, y = a.series(q)[t], b.series(q)[t]
            if q == "W_xN":  # token part, then the positional coefficients c = Pᵀ w_pos / μ
                _fail(t, "w_tok", y[:K], x[:K], rtol, first, note)
                x, y, q = first.P.T @ x[K:] / mu, second.P.T @ y[K:] / mu, "c"
            _fail(t, q, y, x, rtol, first, note)
    return []


@dataclass(frozen=True)
class Property:
    """One checked statement: its id, its text, the hypothesis body, the read-outs it needs."""

    id: str
    statement: str
    body: Callable[[Factory, st.DataObject, CheckOptions], list[str]]
    needs: tuple[str, ...] = ()
    min_steps: int = 0


#: The trajectory read-outs, each reported as its own property (one hypothesis search covers them).
TRAJECTORY = {
    "V": "V(t) equals the exact trajectory, t = 0..T",
    "W_xN": "W(t) x̃_N equals [w_tok(t); Σ_j c_j(t) p_j] of the exact trajectory",
    "S": "the attention S(t) of every input equals the exact one",
    "f": "the output f(t) = V X S of every input equals the exact one",
    "loss": "the population loss E[ℓ(e_yᵀ f)] equals the exact one",
    "accuracy": "the population accuracy (smallest argmax of f = y) equals the exact one",
    "P": "the implementation's own P (when it reports one) meets PᵀP = μI, the query column included "
    "(checked before the trajectory, which is then compared at its μ)",
}

PROPERTIES = (
    Property(
        "trajectory",
        "V, W x̃_N, S, f, loss, accuracy at t = 0..T equal rwtoolkit.engines.exact.derive",
        trajectory,
    ),
    Property(
        "W_first_columns_zero", "W11 = W21 = 0: the first K columns of W(t) are zero", w_token_columns_zero
    ),
    Property(
        "lemma_C1_first_value_step",
        "Lemma C.1: V(1) = -η ℓ'(0) E[e_y (X·1/N)ᵀ]",
        first_value_step,
        min_steps=1,
    ),
    Property(
        "theorem_4_1_symmetry",
        "Theorem 4.1 (p ∈ {0, 1}, N = rK+1): V(t) ∝ 1_{K×K}, S_1 = … = S_{N-1}, accuracy 1/K",
        theorem_4_1,
    ),
    Property(
        "P_only_through_mu",
        "the trajectory depends on P only through μ = ‖p_i‖²",
        depends_on_P_only_through_mu,
    ),
)
