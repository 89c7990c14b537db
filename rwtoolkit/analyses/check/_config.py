"""The one configuration of a check, built from a task: ``build_config``, ``for_model``, and what reads the model.

The configuration itself is ``rwtoolkit.runtime.CheckConfig`` (numpy alone: what a frozen fixture carries
too, and what every factory is handed). What needs the toolkit to make one lives here: the exact population
of a task, the positional embeddings, the tie tolerance of the dtype, another model's parameter shapes and
start (``rwtoolkit.models``, ``rwtoolkit.engines.exact.initial_parameters``), and the JSON a report writes.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np

from rwtoolkit.analyses.check._settings import check_settings
from rwtoolkit.engines.numeric import DEFAULT_TIE_RTOL, positional_embeddings
from rwtoolkit.models import (
    DEFAULT_MODEL,
    Model,
    Optimizer,
    Schedule,
    Sizes,
    get_model,
    rational_positions,
    stage_plan,
)
from rwtoolkit.runtime import DTYPES, START_SIGMA, CheckConfig
from rwtoolkit.tasks import CircleWalk, FiniteTask, check_loss

__all__ = [
    "DTYPES",
    "START_SIGMA",
    "CheckConfig",
    "build_config",
    "config_json",
    "exact_start",
    "for_model",
    "model_of",
    "optimizer_of",
    "schedule_of",
    "stages_of",
]


def build_config(
    task: CircleWalk | FiniteTask,
    mu: object,
    eta: object,
    eps: object,
    embedding: str = "sine",
    M: int | None = None,
    seed: int = 0,
    loss: str = "log",
    dtype: str = "float64",
    P: np.ndarray | None = None,
) -> CheckConfig:
    """The paper's model on ``task``: full-batch GD from zero on its exact population, with positional
    embeddings ``P = rwtoolkit.engines.numeric.positional_embeddings(embedding, M, N, μ, seed)`` (M = N + 1
    by default), or the given ``P`` (M×N, which ``embedding`` and ``seed`` then only name).

    μ, η, ε are read exactly (``Fraction(str(value))``: ``"1/10"``, ``0.5``, ``Fraction(3, 10)``); a value
    out of range is a one-line ValueError.

    Examples
    --------
    >>> cfg = build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10", embedding="onehot", M=3)
    >>> cfg.K, cfg.N, cfg.M, cfg.tokens.shape, float(cfg.weights.sum())
    (3, 3, 3, (12, 2), 1.0)
    >>> tuple(cfg.inputs().shape)  # X̃ for every input: (n, K+M, N)
    (12, 6, 3)
    """
    mu, eta, eps = Fraction(str(mu)), Fraction(str(eta)), Fraction(str(eps))
    for name, value in (("mu", mu), ("eta", eta), ("eps", eps)):
        if value <= 0:
            raise ValueError(f"{name}={value} must be > 0")
    check_loss(loss, callables=False)
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r} is not one of {', '.join(DTYPES)}")
    if P is None:
        P = positional_embeddings(embedding, task.N + 1 if M is None else M, task.N, float(mu), seed)
    population = task.population()
    return CheckConfig(
        K=task.K,
        N=task.N,
        P=P,
        tokens=population.tokens,
        labels=population.labels,
        weights=population.float_probs(),
        mu=mu,
        eta=eta,
        eps=eps,
        loss=loss,
        dtype=dtype,
        tie_rtol=DEFAULT_TIE_RTOL[dtype],
        task=task,
        embedding=embedding,
        seed=seed,
    )


def for_model(
    config: CheckConfig,
    model: str,
    head_dim: int | None = None,
    heads: int | None = None,
    objective: str | None = None,
    optimizer: Optimizer | None = None,
    schedule: Schedule | None = None,
    stages: Sequence[tuple[int, Collection[str]]] | None = None,
    steps: int | None = None,
) -> CheckConfig:
    """The same task, μ, η, ε, loss and dtype for ``model``, with P = ``rwtoolkit.models.rational_positions(N, μ)``.

    A model other than the paper's may see P itself (not only PᵀP = μI), so its exact trajectory needs
    one concrete P with rational entries; the implementation is handed that P as float64 (the nearest
    double of each entry), M = 4⌈N/4⌉. The model's parameters by name and shape (``shapes``), its start
    (``init``, ``check_settings(model).init``) and, when that is not zero, θ(0) in float64 (``start``: the
    exact dyadic start of ``exact_start``) come with it. The paper's model keeps the config as it is.

    A sequence model (next-token logits) reads token ids, not X̃: its config has no P (M = 0), μ = 1 and ε are
    not read, its ``objective`` is ``objective`` ("lm" by default) and its start its own (``init="own"``: the
    program's float64 initial values, each the dyadic rational it holds); ``optimizer`` (not plain GD) is its
    update rule, handed over as ``Optimizer.describe`` gives it; ``schedule`` (``rwtoolkit.models.Schedule``) and
    ``stages`` ((steps, parameter names) in order, ``gradient_steps``' stages) are resolved for ``steps`` steps
    into plain data, ``lr_factors`` (the schedule's factor at t = 0..steps−1 as floats) and ``trained`` (the
    parameters each step trains, ``rwtoolkit.models.stage_plan``), beside the schedule's text and the stages.

    >>> cfg = for_model(build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10"), "key_query")
    >>> cfg.M, cfg.head_dim, cfg.shapes
    (4, 2, {'V': (3, 3), 'W_K': (2, 7), 'W_Q': (2, 7)})
    """
    spec = get_model(model, d=head_dim, H=heads)  # one-line ValueError for an unknown model or hyperparameter
    if model == DEFAULT_MODEL:
        return replace(config, model=model, head_dim=None, heads=None, init="zero", start_values=None)
    if spec.TOKEN_LOGITS:
        from rwtoolkit.models import FLOAT64, objective_name

        sizes = Sizes(K=config.K, M=0, N=config.N)
        return replace(
            config,
            P=np.zeros((0, config.N)),
            embedding="none",
            seed=0,
            mu=Fraction(1),
            model=model,
            head_dim=None,
            heads=None,
            shapes=spec.shapes(sizes),
            init="own",
            start_values={
                name: np.asarray(value, dtype=np.float64)
                for name, value in spec.own_start(FLOAT64, sizes, "zero").items()
            },
            objective=objective_name(spec, objective),
            optimizer=None if optimizer is None or optimizer.plain else optimizer.describe(),
            **_plan(spec, sizes, schedule, stages, steps),
        )
    P = np.asarray(rational_positions(config.N, config.mu), dtype=np.float64)
    other = replace(
        config,
        P=P,
        embedding="rational",
        seed=0,
        model=model,
        head_dim=spec.hyperparameters.get("d"),  # the model's defaults when not given
        heads=spec.hyperparameters.get("H"),
        shapes=spec.shapes(Sizes(K=config.K, M=int(P.shape[0]), N=config.N)),
        init="zero",
        start_values=None,
    )
    init = check_settings(model).init
    if init == "zero":
        return other
    from rwtoolkit.engines.exact import EXACT

    start = {name: EXACT.to_float(value) for name, value in exact_start(other, init).items()}
    return replace(other, init=init, start_values=start)


def _plan(
    spec: Model,
    sizes: Sizes,
    schedule: Schedule | None,
    stages: Sequence[tuple[int, Collection[str]]] | None,
    steps: int | None,
) -> dict[str, Any]:
    """A sequence model's schedule and stages as ``CheckConfig`` carries them, for ``steps`` steps."""
    if schedule is None and stages is None:
        return {}
    if steps is None:
        raise ValueError("a schedule or stages need the steps they cover: give steps")
    out: dict[str, Any] = {}
    if schedule is not None:
        out["schedule"] = schedule.text
        out["lr_factors"] = tuple(float(schedule(t)) for t in range(steps))  # the nearest doubles
    if stages is not None:
        names = list(spec.shapes(sizes))
        out["trained"] = tuple(stage_plan(stages, names, steps))
        out["stages"] = tuple((int(n), tuple(sorted(chosen))) for n, chosen in stages)
    return out


def schedule_of(config: CheckConfig) -> Schedule | None:
    """The schedule of ``config`` as ``rwtoolkit.models.Schedule`` (read back from its text), None for a constant rate."""
    return None if config.schedule is None else Schedule.parse(config.schedule)


def stages_of(config: CheckConfig, steps: int) -> list[tuple[int, frozenset[str]]] | None:
    """The stages of ``config`` for its first ``steps`` steps (``gradient_steps(stages=)``), None without stages.

    >>> cfg = replace(build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps=1), stages=((1, ("V",)), (2, ("V", "W"))))
    >>> [(n, sorted(names)) for n, names in stages_of(cfg, 2)]
    [(1, ['V']), (1, ['V', 'W'])]
    """
    if config.stages is None:
        return None
    out, left = [], steps
    for count, names in config.stages:
        if left > 0:
            out.append((min(count, left), frozenset(names)))
            left -= min(count, left)
    return out


def model_of(config: CheckConfig) -> Model:
    """The ``rwtoolkit.models.Model`` ``config`` checks (its name and hyperparameters)."""
    return get_model(config.model, d=config.head_dim, H=config.heads)


def optimizer_of(config: CheckConfig) -> Optimizer | None:
    """The update rule of ``config`` as ``rwtoolkit.models.Optimizer`` (its hyperparameters read back as the exact
    decimals they were given as), None for plain GD."""
    return None if config.optimizer is None else Optimizer(**config.optimizer)


def exact_start(config: CheckConfig, init: str | None = None) -> dict[str, np.ndarray]:
    """θ(0) exactly (flint rationals by parameter name): zero, or the model's fixed dyadic start
    ``rwtoolkit.engines.exact.initial_parameters(model, sizes, "gaussian", START_SIGMA, seed=0)``; ``init``
    defaults to the config's."""
    from rwtoolkit.engines.exact import initial_parameters

    return initial_parameters(
        model_of(config),
        Sizes(K=config.K, M=config.M, N=config.N),
        config.init if init is None else init,
        START_SIGMA,
        0,
    )


def config_json(config: CheckConfig) -> dict[str, Any]:
    """The config as a report writes it (exact values as strings such as "3/10"): sizes, P's embedding and
    seed, μ, η, ε, loss, dtype, the model and its start when they are not the paper's, and the task."""
    task = config.task
    if config.objective is not None:  # a sequence model: no P, μ, ε or ℓ
        return {
            "K": config.K,
            "N": config.N,
            "eta": str(config.eta),
            "objective": config.objective,
            **({} if config.optimizer is None else {"optimizer": dict(config.optimizer)}),
            **({} if config.schedule is None else {"schedule": config.schedule}),
            **({} if config.stages is None else {"stages": [[n, list(names)] for n, names in config.stages]}),
            "dtype": config.dtype,
            "model": model_of(config).describe(),
            "init": {"name": config.init},
            "task": _finite_json(task),
        }
    out: dict[str, Any] = {
        "K": config.K,
        "N": config.N,
        "M": config.M,
        "embedding": config.embedding,
        "seed": config.seed,
        "mu": str(config.mu),
        "eta": str(config.eta),
        "eps": str(config.eps),
        "loss": config.loss,
        "dtype": config.dtype,
    }
    if config.model != DEFAULT_MODEL:
        out["model"] = model_of(config).describe()
    if config.init != "zero":
        out["init"] = {"name": config.init, "sigma": START_SIGMA, "seed": 0}
    if isinstance(task, CircleWalk):
        out["task"] = {"name": "circle", "p": str(task.p)}
    else:
        out["task"] = _finite_json(task)
    return out


def _finite_json(task: Any) -> dict[str, Any]:
    return {
        "name": "finite",
        "tokens": task.tokens.tolist(),
        "labels": task.labels.tolist(),
        "probs": [str(q) for q in task.prob_values],
    }
