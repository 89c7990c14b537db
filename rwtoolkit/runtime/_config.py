"""The one configuration an implementation is checked on: what ``rw check`` and a frozen fixture hand a factory.

``CheckConfig`` holds the data of one check (the population as arrays, the positional embeddings P, μ, η, ε,
the loss, the dtype, the model and its parameters' shapes and start) and the views an implementation reads
(X̃ as numpy or torch, x̃_N, ℓ on numpy or torch, μ, η, ε as floats). It needs numpy alone (torch is imported
by the views that return tensors), so the toolkit builds it from a task (``rwtoolkit.analyses.check.build_config``,
``for_model``) and a frozen fixture from its manifest and oracle file (``fixture_config``): one class, one
interface, in ``rw check`` and in a user's CI alike.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

#: The paper's model (``rwtoolkit.models.DEFAULT_MODEL``, tested equal): V (K×K) and W ((K+M)×(K+M)).
PAPER_MODEL = "one_layer"
#: The dtypes a check runs in (torch.float64 / torch.float32, numpy and JAX alike).
DTYPES = ("float64", "float32")
#: The scale of the dyadic start of a model checked from ``init="gaussian"``
#: (``rwtoolkit.engines.exact.initial_parameters(model, sizes, "gaussian", START_SIGMA, seed=0)``).
START_SIGMA = "1/2"


class Floats(NamedTuple):
    """μ, η, ε of a config as Python floats (the config's fields are exact ``Fraction``s)."""

    mu: float
    eta: float
    eps: float


#: ℓ on numpy arrays by name (``rwtoolkit.engines.numeric.LOSS_FUNCTIONS``' formulas; tested equal).
NUMPY_LOSSES: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    "log": lambda z, eps: -np.log(z + eps),
    "squared": lambda z, eps: (1 - z) ** 2,
    "exp": lambda z, eps: np.exp(-z),
}


def torch_losses() -> dict[str, Callable]:
    """ℓ on torch tensors by name (``rwtoolkit.engines.numeric.LOSS_FUNCTIONS``' operations; tested equal)."""
    import torch

    return {
        "log": lambda z, eps: torch.log(z + eps).neg_(),
        "squared": lambda z, eps: (1 - z) ** 2,
        "exp": lambda z, eps: torch.exp(-z),
    }


def paper_shapes(K: int, M: int) -> dict[str, tuple[int, ...]]:
    """The paper's model's parameters: V (K×K) and W ((K+M)×(K+M)).

    >>> paper_shapes(3, 4)
    {'V': (3, 3), 'W': (7, 7)}
    """
    return {"V": (K, K), "W": (K + M, K + M)}


@dataclass(frozen=True, kw_only=True)
class CheckConfig:
    """One configuration an implementation is checked on: full-batch GD on the exact population of a task.

    The paper's model is f(X̃) = V X S(X̃ᵀ W x̃_N) with X̃ = [X; P] ((K+M)×N, x_N = 0), V (K×K) and W
    ((K+M)×(K+M)) zero at t = 0; the objective is the probability-weighted mean Σ_n π_n ℓ(e_{y_n}ᵀ f_n) over
    the population, and one step is θ ← θ - η ∇θ. ``P`` (M×N) has orthogonal columns with ‖p_i‖² = ``mu``;
    ``embedding`` names how it was built ("sine", "onehot", "random"; "rational" for another model, "own"
    for the implementation's own P). Read-outs are indexed like ``tokens``/``labels``/``weights``: input n
    of the population.

    ``model`` names the model checked (``one_layer``, the paper's, by default), ``head_dim`` and ``heads`` its
    hyperparameters d and H, ``shapes`` its trained parameters by name and shape in the order they are
    compared, ``init`` its start ("zero", or "gaussian" for a model whose zero start never moves) and
    ``start`` θ(0) as float64 arrays (a fresh copy on each read). For the paper's model ``shapes`` follows
    from K and M (whatever is passed), so ``dataclasses.replace`` with another P stays consistent.

    ``task`` is what the population came from, for the description: the toolkit's task object under
    ``rw check`` (``rwtoolkit.tasks.CircleWalk`` or ``FiniteTask``), the manifest's family and parameters
    (a dict) in a frozen fixture. ``tie_rtol`` is the accuracy's tie tolerance for ``dtype``.

    Build one with ``rwtoolkit.analyses.check.build_config`` (from a task) or read one from a frozen fixture
    with ``fixture_config``; every field is set there together (``dataclasses.replace`` of ``dtype`` keeps
    ``tie_rtol``: build the config again for another dtype).

    Examples
    --------
    >>> import numpy as np
    >>> cfg = CheckConfig(K=2, N=2, P=np.eye(2), tokens=np.array([[0], [1]]), labels=np.array([1, 0]),
    ...                   weights=np.array([0.5, 0.5]), mu=Fraction(1), eta=Fraction(1), eps=Fraction(1, 10),
    ...                   tie_rtol=1e-9, task={"family": "swap"})
    >>> cfg.M, cfg.shapes, cfg.inputs_array().shape
    (2, {'V': (2, 2), 'W': (4, 4)}, (2, 4, 2))
    >>> cfg.describe()
    'family=swap, P=sine M=2 seed=0, mu=1, eta=1, eps=1/10, loss=log, dtype=float64'
    """

    K: int
    N: int
    P: np.ndarray = field(repr=False, compare=False)
    #: The population: (n, N-1) token ids (0-based), (n,) labels, (n,) probabilities π_n as float64 (sum 1).
    tokens: np.ndarray = field(repr=False, compare=False)
    labels: np.ndarray = field(repr=False, compare=False)
    weights: np.ndarray = field(repr=False, compare=False)
    mu: Fraction
    eta: Fraction
    eps: Fraction
    loss: str = "log"
    dtype: str = "float64"
    tie_rtol: float
    task: Any = None
    embedding: str = "sine"
    seed: int = 0
    model: str = PAPER_MODEL
    head_dim: int | None = None
    #: H, the number of heads (``multi_head`` only).
    heads: int | None = None
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict, compare=False)
    init: str = "zero"
    #: θ(0) of a model not started from zero (``init`` other than "zero"), float64 arrays by parameter name;
    #: read through ``start``. None for the zero start.
    start_values: Mapping[str, np.ndarray] | None = field(default=None, repr=False, compare=False)
    #: T, the steps the kit reads (a loop yields T + 1 states); set when the factory is called.
    steps: int | None = field(default=None, compare=False)
    #: A sequence model's objective ("lm": the cross-entropy at every position; "last": at position L only),
    #: None for a model trained on ℓ(e_yᵀ f). A sequence model reads token ids, not X̃: see ``sequences``.
    objective: str | None = None
    #: A sequence model's update rule other than plain GD, as torch.optim takes it: ``{"name": "momentum" |
    #: "nesterov" | "adam" | "adamw", "momentum": μ, "betas": [β₁, β₂], "eps": ε, "weight_decay": λ}`` (the
    #: rule's keys only; ``rwtoolkit.models.Optimizer.describe``), the learning rate being ``eta``; None: θ ← θ − η∇θ.
    optimizer: Mapping[str, Any] | None = field(default=None, compare=False)
    #: A sequence model's learning-rate schedule as ``rw check --schedule`` names it (``step:EVERY:FACTOR``,
    #: ``warmup:W``, ``cosine:T``), None for a constant rate; what the loop reads is ``lr_factors``.
    schedule: str | None = field(default=None, compare=False)
    #: A sequence model's stages (``rw check --stages``): (number of steps, the parameters trained) in order,
    #: covering the steps, None for every parameter at every step; what the loop reads is ``trained``.
    stages: tuple[tuple[int, tuple[str, ...]], ...] | None = field(default=None, compare=False)
    #: The factor of the learning rate at the step from θ(t), t = 0..T−1 (floats; the schedule's, as
    #: ``torch.optim.lr_scheduler.LambdaLR`` stepped after each step), all 1.0 without a schedule: a loop takes
    #: step t at lr = η · lr_factors[t] (``scheduled``). Set with ``steps``.
    lr_factors: tuple[float, ...] | None = field(default=None, repr=False, compare=False)
    #: The parameters (by name) the step from θ(t) trains, t = 0..T−1, every parameter without stages. A
    #: parameter outside ``trained[t]`` neither moves nor updates its rule's state (momentum buffer, Adam's
    #: moments and step count) at that step: a torch loop drops its gradient (``p.grad = None``) before
    #: ``optimizer.step()``, which ``torch.optim`` then skips (``scheduled``). Set with ``steps``.
    trained: tuple[frozenset[str], ...] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.model == PAPER_MODEL:
            object.__setattr__(self, "shapes", paper_shapes(self.K, self.M))
        elif not self.shapes:
            raise ValueError(f"model={self.model!r}: its parameters' shapes must be given")
        if (self.init == "zero") != (self.start_values is None):
            raise ValueError(f"init={self.init!r}: start_values are given exactly when the start is not zero")

    # sizes ----------------------------------------------------------------------------------------
    @property
    def M(self) -> int:
        """Rows of P: the positional embeddings' dimension."""
        return int(self.P.shape[0])

    @property
    def start(self) -> dict[str, np.ndarray]:
        """θ(0) as float64 arrays by parameter name: where the implementation must start (zero for every
        model but one whose zero start never moves, ``init``); a fresh copy on each read, so an implementation
        may train it in place. The entries of a non-zero start are dyadic, so exact in float64."""
        if self.start_values is None:
            return {name: np.zeros(shape) for name, shape in self.shapes.items()}
        return {name: np.array(value, dtype=np.float64) for name, value in self.start_values.items()}

    # a sequence model's views ------------------------------------------------------------------------
    @property
    def L(self) -> int:
        """The tokens a sequence model reads: x_1..x_L, L = N − 1 (``tokens`` has L columns)."""
        return self.N - 1

    @property
    def sequences(self) -> np.ndarray:
        """Every sequence x_1..x_N of the population, (n, N) int64: ``tokens`` then ``labels``."""
        return np.concatenate([np.asarray(self.tokens), np.asarray(self.labels).reshape(-1, 1)], axis=1)

    @property
    def targets(self) -> np.ndarray:
        """The next token at every position, x_2..x_N (n, L): the logits at position i predict x_{i+1}."""
        return self.sequences[:, 1:]

    def sequence_loss(self, logits: Any) -> Any:
        """A sequence model's objective on torch logits (n, L, S), as ``rwtoolkit.models.CrossEntropy`` defines
        it (tested equal): "lm", Σ_n π_n (1/L) Σ_i CE(logits_{n,i}, x_{n,i+1}); "last", Σ_n π_n CE(logits_{n,L},
        x_{n,N}); the cross-entropy CE(l, y) = −log softmax(l)_y, π_n the population's exact probabilities."""
        import torch
        import torch.nn.functional as F

        if self.objective not in ("lm", "last"):
            raise ValueError(f"objective={self.objective!r}: this config's model is not a sequence model")
        targets = torch.as_tensor(self.targets)
        if self.objective == "last":
            logits, targets = logits[:, -1:, :], targets[:, -1:]
        n, m, S = logits.shape
        ce = F.cross_entropy(logits.reshape(n * m, S), targets.reshape(n * m), reduction="none")
        weights = torch.as_tensor(self.weights, dtype=logits.dtype)
        return (weights * ce.reshape(n, m).mean(dim=1)).sum()

    def torch_optimizer(self, params: Any) -> Any:
        """The config's update rule as a ``torch.optim`` optimizer over ``params`` at lr η (``optimizer``; plain GD
        when None): SGD (with momentum, or Nesterov), Adam or AdamW, with the rule's hyperparameters."""
        import torch

        rule, lr = dict(self.optimizer or {"name": "gd", "weight_decay": 0.0}), float(self.eta)
        name, decay = rule["name"], float(rule.get("weight_decay", 0.0))
        if name in ("adam", "adamw"):
            kind = torch.optim.Adam if name == "adam" else torch.optim.AdamW
            return kind(params, lr=lr, betas=tuple(rule["betas"]), eps=rule["eps"], weight_decay=decay)
        momentum = float(rule.get("momentum", 0.0))
        return torch.optim.SGD(
            params, lr=lr, momentum=momentum, nesterov=name == "nesterov", weight_decay=decay
        )

    def scheduled(self, optimizer: Any, t: int, named_parameters: Any = None) -> None:
        """Make ``optimizer`` (``torch.optim``) take the step from θ(t) as the schedule and stages say; call it
        after ``loss.backward()``, before ``optimizer.step()``. Each param group's lr becomes its first lr (kept
        as ``initial_lr``, as ``LambdaLR`` keeps it) times ``lr_factors[t]``; given ``named_parameters`` (the
        module's ``named_parameters()``), the gradient of each parameter not in ``trained[t]`` is dropped, so
        that ``torch.optim`` skips it and keeps its state. Without a schedule or stages it changes nothing.

        In a loop's step t::

            optimizer.zero_grad()
            loss.backward()
            config.scheduled(optimizer, t, net.named_parameters())
            optimizer.step()
        """
        factors, trained = self.lr_factors, self.trained
        if factors is None or trained is None:
            raise ValueError("config.steps is not set: lr_factors and trained are filled with the steps")
        set_rates(optimizer, factors[t])
        if named_parameters is not None:
            drop_frozen(named_parameters, trained[t])

    # views ----------------------------------------------------------------------------------------
    @property
    def floats(self) -> Floats:
        """μ, η, ε as Python floats (the fields are exact ``Fraction``s: torch and JAX do not take those)."""
        return Floats(float(self.mu), float(self.eta), float(self.eps))

    @property
    def torch_dtype(self) -> Any:
        """``torch.float64`` or ``torch.float32`` (imports torch: the kit loads it only where it is used)."""
        import torch

        return getattr(torch, self.dtype)

    def inputs_array(self) -> np.ndarray:
        """X̃ = [X; P] (n, K+M, N) as a numpy array in ``dtype`` (for numpy, JAX and other frameworks)."""
        return inputs_array(self)

    def inputs(self) -> Any:
        """X̃ = [X; P] for every input, (n, K+M, N) torch tensor in ``dtype``: one-hot tokens in columns 1..N-1, x_N = 0."""
        return torch_inputs(self)

    def query(self) -> np.ndarray:
        """x̃_N = [0; p_N] (K+M,) as float64: the column whose logits the attention uses."""
        return np.concatenate([np.zeros(self.K), self.P[:, -1]])

    def loss_np(self, z: np.ndarray) -> np.ndarray:
        """ℓ(z) per input on a numpy array: -log(z + ε), (1 - z)² or exp(-z)."""
        return NUMPY_LOSSES[self.loss](z, float(self.eps))

    def loss_fn(self, z: Any) -> Any:
        """ℓ(z) per input on a torch tensor for the config's loss: -log(z + ε), (1 - z)² or exp(-z)."""
        return torch_losses()[self.loss](z, float(self.eps))

    def describe(self) -> str:
        """One line naming every value the trajectory depends on."""
        task = self.task
        name = ", ".join(f"{k}={v}" for k, v in task.items()) if isinstance(task, Mapping) else repr(task)
        if self.objective is not None:  # a sequence model: no P, μ or ε
            rule = "" if self.optimizer is None else f", optimizer={self.optimizer['name']}"
            if self.schedule is not None:
                rule += f", schedule={self.schedule}"
            if self.stages is not None:
                rule += ", stages=" + ",".join(f"{'|'.join(names)}={n}" for n, names in self.stages)
            return (
                f"{name}, eta={self.eta}, objective={self.objective}{rule}, dtype={self.dtype}, model={self.model}, "
                f"init={self.init}"
            )
        text = (
            f"{name}, P={self.embedding} M={self.M} seed={self.seed}, mu={self.mu}, eta={self.eta}, "
            f"eps={self.eps}, loss={self.loss}, dtype={self.dtype}"
        )
        if self.model != PAPER_MODEL:
            hyperparameters = {"H": self.heads, "d": self.head_dim}
            text += ", model=" + " ".join(
                [self.model] + [f"{k}={v}" for k, v in hyperparameters.items() if v is not None]
            )
        if self.init != "zero":
            text += f", init={self.init} sigma={START_SIGMA} seed=0"
        return text


def set_rates(optimizer: Any, factor: float) -> None:
    """Every param group's lr set to its first lr (kept as ``initial_lr``, the key ``LambdaLR`` keeps it under)
    times ``factor``: the rate of one step of a schedule (``CheckConfig.lr_factors``)."""
    for group in optimizer.param_groups:
        group.setdefault("initial_lr", group["lr"])
        group["lr"] = group["initial_lr"] * factor


def drop_frozen(named_parameters: Any, trained: Collection[str]) -> None:
    """``p.grad = None`` for each (name, p) whose name is not in ``trained``: ``torch.optim`` skips such a
    parameter, which keeps its value and its rule's state (a stage, ``CheckConfig.trained``)."""
    items = named_parameters.items() if isinstance(named_parameters, Mapping) else named_parameters
    for name, p in items:
        if name not in trained:
            p.grad = None


def plan_steps(config: Any, steps: int) -> dict[str, Any]:
    """``lr_factors`` and ``trained`` of ``config`` for T = ``steps``: the first T of the kit's plan where it
    set one (``rwtoolkit.analyses.check.for_model``), else 1.0 and every parameter at each step; one line where
    the plan covers fewer steps."""
    names = frozenset(config.shapes)
    out: dict[str, Any] = {}
    for key, default in (("lr_factors", 1.0), ("trained", names)):
        plan = getattr(config, key, None)
        if plan is None:
            out[key] = (default,) * steps
        elif len(plan) < steps:
            what = "schedule" if key == "lr_factors" else "stages"
            raise ValueError(f"the config's {what} cover {len(plan)} steps; steps={steps} asks for more")
        else:
            out[key] = tuple(plan[:steps])
    return out


def inputs_array(config: Any, P: np.ndarray | None = None) -> np.ndarray:
    """X̃ = [X; P] (n, K+M, N) as numpy in the check's dtype, with the implementation's P if it has one:
    one-hot tokens in columns 1..N-1, x_N = 0."""
    P = np.asarray(config.P if P is None else P, dtype=np.float64)
    n, K, N = len(config.labels), config.K, config.N
    X = np.zeros((n, K, N))
    X[np.arange(n)[:, None], np.asarray(config.tokens), np.arange(N - 1)[None, :]] = 1.0
    out = np.concatenate([X, np.broadcast_to(P, (n, P.shape[0], N))], axis=1)
    return out.astype(np.float64 if config.dtype == "float64" else np.float32)


def torch_inputs(config: Any, P: np.ndarray | None = None) -> Any:
    """``inputs_array`` as a torch tensor (the module protocol's X̃)."""
    import torch

    return torch.from_numpy(inputs_array(config, P))
