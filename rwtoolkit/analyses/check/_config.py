"""One configuration an implementation is checked on: task, positional embeddings, η, ε, loss, dtype."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from rwtoolkit.analyses.check._runtime import NUMPY_LOSSES, Floats, inputs_array, torch_inputs
from rwtoolkit.analyses.check._settings import check_settings
from rwtoolkit.engines.numeric import DEFAULT_TIE_RTOL, positional_embeddings
from rwtoolkit.models import DEFAULT_MODEL, Sizes, get_model, rational_positions
from rwtoolkit.tasks import CircleWalk, FiniteTask, check_loss

#: The dtypes a check runs in (torch.float64 / torch.float32, numpy and JAX alike).
DTYPES = ("float64", "float32")
#: The scale of the dyadic start of a model checked from ``init="gaussian"``.
START_SIGMA = "1/2"


@dataclass(frozen=True)
class CheckConfig:
    """Full-batch GD from zero init on the exact population of ``task`` (the paper's setting).

    The model is f(X̃) = V X S(X̃ᵀ W x̃_N) with X̃ = [X; P] ((K+M)×N, x_N = 0), V (K×K) and W
    ((K+M)×(K+M)) zero at t = 0; the objective is the probability-weighted mean Σ_n π_n ℓ(e_{y_n}ᵀ f_n)
    over the population, and one step is θ ← θ - η ∇θ. ``P`` (M×N) has orthogonal columns with
    ‖p_i‖² = ``mu``; ``embedding`` names how it was built ("sine", "onehot", "random").

    Read-outs are indexed like ``tokens``/``labels``/``weights``: input n of the population.

    ``model`` names the model of ``rwtoolkit.models`` checked (``one_layer``, the paper's, by default) and
    ``head_dim`` its head dimension d (``key_query`` only); ``for_model`` makes the config of another model.

    Examples
    --------
    >>> cfg = CheckConfig.build(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10", embedding="onehot", M=3)
    >>> cfg.K, cfg.N, cfg.M, cfg.tokens.shape, float(cfg.weights.sum())
    (3, 3, 3, (12, 2), 1.0)
    >>> tuple(cfg.inputs().shape)  # X̃ for every input: (n, K+M, N)
    (12, 6, 3)
    """

    task: CircleWalk | FiniteTask
    mu: Fraction
    eta: Fraction
    eps: Fraction
    P: np.ndarray = field(repr=False, compare=False)
    embedding: str = "sine"
    seed: int = 0
    loss: str = "log"
    dtype: str = "float64"
    model: str = DEFAULT_MODEL
    head_dim: int | None = None
    #: H, the number of heads (``multi_head`` only).
    heads: int | None = None
    #: T, the steps the kit reads (a loop yields T + 1 states); set when the factory is called.
    steps: int | None = field(default=None, compare=False)

    @classmethod
    def build(
        cls,
        task: CircleWalk | FiniteTask,
        mu: object,
        eta: object,
        eps: object,
        embedding: str = "sine",
        M: int | None = None,
        seed: int = 0,
        loss: str = "log",
        dtype: str = "float64",
    ) -> CheckConfig:
        """A config whose P is ``rwtoolkit.engines.numeric.positional_embeddings(embedding, M, N, μ, seed)``."""
        mu, eta, eps = Fraction(str(mu)), Fraction(str(eta)), Fraction(str(eps))
        for name, value in (("mu", mu), ("eta", eta), ("eps", eps)):
            if value <= 0:
                raise ValueError(f"{name}={value} must be > 0")
        check_loss(loss, callables=False)
        if dtype not in DTYPES:
            raise ValueError(f"dtype={dtype!r} is not one of {', '.join(DTYPES)}")
        M = task.N + 1 if M is None else M
        P = positional_embeddings(embedding, M, task.N, float(mu), seed)
        return cls(task, mu, eta, eps, P, embedding, seed, loss, dtype)

    def for_model(self, model: str, head_dim: int | None = None, heads: int | None = None) -> CheckConfig:
        """The same task, μ, η, ε, loss and dtype for ``model``, with P = ``rwtoolkit.models.rational_positions(N, μ)``.

        A model other than the paper's may see P itself (not only PᵀP = μI), so its exact trajectory needs
        one concrete P with rational entries; the implementation is handed that P as float64 (the nearest
        double of each entry), M = 4⌈N/4⌉. The paper's model keeps the config as it is.
        """
        spec = get_model(
            model, d=head_dim, H=heads
        )  # one-line ValueError for an unknown model or hyperparameter
        if model == DEFAULT_MODEL:
            return replace(self, model=model, head_dim=None, heads=None)
        head_dim = spec.hyperparameters.get("d")  # the model's defaults when not given
        heads = spec.hyperparameters.get("H")
        P = np.asarray(rational_positions(self.N, self.mu), dtype=np.float64)
        return replace(
            self,
            P=P,
            embedding="rational",
            seed=0,
            model=model,
            head_dim=head_dim,
            heads=heads,
        )

    @property
    def init(self) -> str:
        """The initialisation, ``check_settings(model).init``: "zero", or "gaussian" for a model whose zero start
        never moves (``start``)."""
        return check_settings(self.model).init

    def exact_start(self) -> dict[str, np.ndarray]:
        """θ(0) exactly (flint rationals by parameter name): zero, or the model's fixed dyadic start
        (``rwtoolkit.engines.exact.initial_parameters(model, sizes, "gaussian", START_SIGMA, seed=0)``)."""
        from rwtoolkit.engines.exact import initial_parameters

        return initial_parameters(
            self.model_spec, Sizes(K=self.K, M=self.M, N=self.N), self.init, START_SIGMA, 0
        )

    @property
    def start(self) -> dict[str, np.ndarray]:
        """θ(0) as float64 arrays by parameter name: where the implementation must start (zero for every
        model but one whose zero start never moves, ``init``). The entries are dyadic, so exact in float64."""
        from rwtoolkit.engines.exact import EXACT

        return {name: EXACT.to_float(value) for name, value in self.exact_start().items()}

    @property
    def model_spec(self) -> Any:
        """The ``rwtoolkit.models.Model`` checked (its parameter names and shapes: ``shapes``)."""
        return get_model(self.model, d=self.head_dim, H=self.heads)

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every trained parameter's name and shape for this config, in the order they are compared."""
        return self.model_spec.shapes(Sizes(K=self.K, M=self.M, N=self.N))

    # sizes ----------------------------------------------------------------------------------------
    @property
    def K(self) -> int:
        return self.task.K

    @property
    def N(self) -> int:
        return self.task.N

    @property
    def M(self) -> int:
        return int(self.P.shape[0])

    @property
    def torch_dtype(self) -> Any:
        """``torch.float64`` or ``torch.float32`` (imports torch: the kit loads it only where it is used)."""
        import torch

        return getattr(torch, self.dtype)

    @property
    def tie_rtol(self) -> float:
        """The accuracy's tie tolerance for ``dtype`` (``rwtoolkit.engines.numeric.DEFAULT_TIE_RTOL``)."""
        return DEFAULT_TIE_RTOL[self.dtype]

    # the population -----------------------------------------------------------------------------
    @property
    def tokens(self) -> np.ndarray:
        """(n, N-1) token ids of every input of the population (0-based)."""
        return self._population.tokens

    @property
    def labels(self) -> np.ndarray:
        """(n,) label ids."""
        return self._population.labels

    @property
    def weights(self) -> np.ndarray:
        """(n,) exact probabilities π_n of the inputs as float64 (they sum to 1)."""
        return self._population.float_probs()

    @property
    def _population(self):
        cached = self.__dict__.get("_pop")
        if cached is None:
            cached = self.task.population()
            object.__setattr__(self, "_pop", cached)
        return cached

    def inputs(self) -> Any:
        """X̃ = [X; P] for every input, (n, K+M, N) torch tensor in ``dtype``: one-hot tokens in columns 1..N-1, x_N = 0."""
        return torch_inputs(self)

    @property
    def floats(self) -> Floats:
        """μ, η, ε as Python floats (the fields are exact ``Fraction``s: torch and JAX do not take those)."""
        return Floats(float(self.mu), float(self.eta), float(self.eps))

    def inputs_array(self) -> np.ndarray:
        """X̃ = [X; P] (n, K+M, N) as a numpy array in ``dtype`` (for numpy, JAX and other frameworks)."""
        return inputs_array(self)

    def loss_np(self, z: np.ndarray) -> np.ndarray:
        """ℓ(z) per input on a numpy array: -log(z + ε), (1 - z)² or exp(-z)."""
        return NUMPY_LOSSES[self.loss](z, float(self.eps))

    def query(self) -> np.ndarray:
        """x̃_N = [0; p_N] (K+M,) as float64: the column whose logits the attention uses."""
        return np.concatenate([np.zeros(self.K), self.P[:, -1]])

    def loss_fn(self, z: Any) -> Any:
        """ℓ(z) per input on a torch tensor for the config's loss: -log(z + ε), (1 - z)² or exp(-z)."""
        from rwtoolkit.engines.numeric import (
            LOSS_FUNCTIONS,  # torch's, loaded here: a NumPy or JAX check never needs them
        )

        return LOSS_FUNCTIONS[self.loss](z, float(self.eps))

    def describe(self) -> str:
        """One line naming every value the trajectory depends on."""
        task = self.task
        name = repr(task)
        text = (
            f"{name}, P={self.embedding} M={self.M} seed={self.seed}, mu={self.mu}, eta={self.eta}, "
            f"eps={self.eps}, loss={self.loss}, dtype={self.dtype}"
        )
        if self.model != DEFAULT_MODEL:
            text += ", model=" + " ".join(
                [self.model] + [f"{k}={v}" for k, v in self.model_spec.hyperparameters.items()]
            )
        if self.init != "zero":
            text += f", init={self.init} sigma={START_SIGMA} seed=0"
        return text

    def to_json(self) -> dict:
        """JSON-able description (exact values as strings such as "3/10")."""
        task = self.task
        out: dict = {
            "K": self.K,
            "N": self.N,
            "M": self.M,
            "embedding": self.embedding,
            "seed": self.seed,
            "mu": str(self.mu),
            "eta": str(self.eta),
            "eps": str(self.eps),
            "loss": self.loss,
            "dtype": self.dtype,
        }
        if self.model != DEFAULT_MODEL:
            out["model"] = self.model_spec.describe()
        if self.init != "zero":
            out["init"] = {"name": self.init, "sigma": START_SIGMA, "seed": 0}
        if isinstance(task, CircleWalk):
            out["task"] = {"name": "circle", "p": str(task.p)}
        else:
            out["task"] = {
                "name": "finite",
                "tokens": task.tokens.tolist(),
                "labels": task.labels.tolist(),
                "probs": [str(q) for q in task.prob_values],
            }
        return out
