"""What a model is: its parameters, its initialisation, its forward pass and its read-outs, declared once.

A model of this toolkit maps an input X̃ = [X; P] ∈ R^{(K+M)×N} (one-hot tokens X with the zero query column N,
positional embeddings P) to attention logits over the N positions, the attention S = softmax(logits) and the
prediction f ∈ R^K (docs/notation.md). :class:`Model` subclasses declare the parameter shapes and write
``forward`` with the primitives of :class:`~rwtoolkit.models.Tape`; every engine evaluates and differentiates that one
method in its own arithmetic (docs/guide/models.md).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from rwtoolkit.models._arith import Arithmetic, Array
from rwtoolkit.models._tape import Tape, Var


@dataclass(frozen=True)
class Sizes:
    """Every size a model's parameters may depend on: K tokens, M positional coordinates, N positions.

    One object, so a model that needs a new size reads a new field and no caller changes its call
    (``Model.shapes(sizes)``, ``Model.parameter_count(sizes)``, ``Model.zeros(arithmetic, sizes)``).
    At P = √μ·I_N (the symmetry and induction engines) M = N.

    >>> Sizes(K=3, M=4, N=4).D
    7
    """

    K: int
    M: int
    N: int

    @property
    def D(self) -> int:
        """The input dimension K + M of x̃ = [x; p]."""
        return self.K + self.M


@dataclass(frozen=True)
class Inputs:
    """A batch of inputs in one arithmetic: X (n, K, N), X̃ = [X; P] (n, K+M, N), x̃_N (K+M,) and the token ids.

    Built by :func:`embed` from token ids; the query column N of X is zero, so x̃_N = [0; p_N]. ``tokens``
    (n, N-1) int64 are those ids, 0-based: a sequence model reads them (``rwtoolkit.models.SequenceModel``,
    its embedding is its own), the models of the paper's form read X̃.
    """

    X: Array
    Xt: Array
    xN: Array
    tokens: np.ndarray | None = None

    @property
    def K(self) -> int:
        return int(self.X.shape[1])

    @property
    def N(self) -> int:
        return int(self.X.shape[2])

    @property
    def sizes(self) -> Sizes:
        """K, M and N of these inputs."""
        return Sizes(K=self.K, M=int(self.Xt.shape[1]) - self.K, N=self.N)


def embed(arithmetic: Arithmetic, tokens: np.ndarray, K: int, P: Array) -> Inputs:
    """The inputs X̃ = [X; P] of token ids ``tokens`` (n, N-1), 0-based, in ``arithmetic``.

    ``P`` (M, N) is already an array of the arithmetic. X's entries are the arithmetic's 0 and 1.

    >>> from rwtoolkit.models import FLOAT64
    >>> inputs = embed(FLOAT64, np.array([[1, 0]]), 2, np.eye(3))
    >>> inputs.Xt[0].tolist()
    [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    tokens = np.asarray(tokens, dtype=np.int64)
    n, L = tokens.shape
    onehot = np.zeros((n, K, L + 1), dtype=np.int64)
    onehot[np.arange(n)[:, None], tokens, np.arange(L)[None, :]] = 1
    X = arithmetic.asarray(onehot)
    M = int(P.shape[0])
    Pn = P.reshape((1, M, L + 1)) + arithmetic.zeros((n, M, L + 1))
    Xt = _concat_rows(arithmetic, X, Pn)
    xN = _concat_rows(arithmetic, arithmetic.zeros((K,)), P[:, L])
    return Inputs(X=X, Xt=Xt, xN=xN, tokens=tokens)


def _concat_rows(arithmetic: Arithmetic, top: Array, bottom: Array) -> Array:
    """[top; bottom] along the second-to-last axis (the first for vectors): numpy arrays by numpy, another
    arithmetic's arrays by its ``concat`` (``ExtendedArithmetic``), else torch's."""
    if isinstance(top, np.ndarray):
        return np.concatenate([top, bottom], axis=-2 if top.ndim > 1 else 0)
    concat = getattr(arithmetic, "concat", None)
    if concat is not None:
        return concat([top, bottom], top.ndim - 2 if top.ndim > 1 else 0)
    import torch

    return torch.cat([top, bottom], dim=-2 if top.ndim > 1 else 0)


@dataclass
class Readouts:
    """What a forward pass gives per input: attention logits (n, N), attention S (n, N), prediction f (n, K),
    and the next-token logits at every position (n, N-1, K) of a model that has them.

    ``token_logits[:, i]`` are the logits of the token after position i + 1 (MATH §14); a model with them
    (``Model.TOKEN_LOGITS``) trains on the objectives of ``rwtoolkit.models.OBJECTIVES``, and its prediction is
    f = softmax(token_logits[:, -1]). A model without one attention over the N positions (a sequence model: its
    attention is per layer, head and query position) has ``logits`` and ``S`` None; what reads S refuses it.
    """

    logits: Var | None
    S: Var | None
    f: Var
    token_logits: Var | None = None


class Model(ABC):
    """One model of the registry: parameter shapes, forward pass, and what its zero initialisation does.

    Subclasses set ``name`` (their registry key) and ``AXES``, and implement ``shapes`` and ``forward``;
    hyperparameters (such as a head dimension) are constructor arguments, listed by ``hyperparameters``. What a
    single consumer needs to know about a model lives with that consumer (``rw check``'s start and tasks:
    ``rwtoolkit.analyses.check.check_settings``).
    """

    #: The registry name (``--model``).
    name: ClassVar[str]
    #: The names of the constructor's keyword arguments (``rwtoolkit.models.get_model`` passes only these).
    HYPERPARAMETERS: ClassVar[tuple[str, ...]] = ()
    #: What each axis of each parameter indexes: ``"label"`` (the K labels), ``"token"`` (the K tokens),
    #: ``"embed"`` (the K + M coordinates of x̃ = [x; p]), ``"position"`` (the N positions, or the positional
    #: coordinates where P = √μ·I_N), ``"head"`` or None (an internal axis, e.g. a head dimension).
    #: A relabelling of tokens, labels and positions acts on the parameters through these axes
    #: (``rwtoolkit.engines.exact.analysis.fixed_subspace``); a model whose forward pass uses its parameters only this
    #: way has a population loss invariant under every symmetry of the task.
    AXES: ClassVar[dict[str, tuple[str | None, ...]]]
    #: Whether a permutation of the key positions (P's columns moved with them) is a symmetry of the model:
    #: true when the keys are attended as a set, false for a model that sees their order (two_layer's
    #: causal layer 1), which keeps only the task's symmetries that fix every position
    #: (``rwtoolkit.models.acting_group``).
    POSITION_SYMMETRIC: ClassVar[bool] = True
    #: How ``--model`` named a model that is not registered, ``MODULE:ATTR`` or ``PATH.py:ATTR`` (set by
    #: ``rwtoolkit.models.get_model``; None for a registered model): written by :meth:`describe`, so an output
    #: file names the model a run can be repeated with.
    target: str | None = None
    #: Whether ``forward`` gives next-token logits at every position (``Readouts.token_logits``): such a model
    #: trains on the cross-entropy objectives ``rwtoolkit.models.OBJECTIVES`` (``"lm"`` by default), the others
    #: on a loss ℓ(e_yᵀ f) of their prediction.
    TOKEN_LOGITS: ClassVar[bool] = False

    @property
    def hyperparameters(self) -> dict[str, Any]:
        """The constructor arguments that fix the parameter shapes (written in every output file)."""
        return {}

    @abstractmethod
    def shapes(self, sizes: Sizes) -> dict[str, tuple[int, ...]]:
        """Every trained parameter's shape, in order (the order of the flat parameter vector), at ``sizes``."""

    @abstractmethod
    def forward(self, tape: Tape, params: Mapping[str, Var | Array], inputs: Inputs) -> Readouts:
        """Scores, attention and prediction of every input, written with ``tape``'s primitives."""

    def parameter_count(self, sizes: Sizes) -> int:
        """The number of trained parameters at ``sizes``: the length of the flat parameter vector.

        >>> from rwtoolkit.models import get_model
        >>> get_model("one_layer").parameter_count(Sizes(K=3, M=4, N=4))  # V 3×3, W 7×7
        58
        """
        return sum(math.prod(shape) for shape in self.shapes(sizes).values())

    def zeros(self, arithmetic: Arithmetic, sizes: Sizes) -> dict[str, Array]:
        """The zero initialisation: every parameter zero."""
        return {name: arithmetic.zeros(shape) for name, shape in self.shapes(sizes).items()}

    def initial(self, arithmetic: Arithmetic, sizes: Sizes) -> dict[str, Array] | None:
        """The model's own start (``--init own``), exact in an exact arithmetic, or None: it has none (the
        models of record start from zero or a drawn start; a sequence program brings its own)."""
        return None

    def own_start(self, arithmetic: Arithmetic, sizes: Sizes, others: str) -> dict[str, Array]:
        """``initial`` (``--init own``), or one line naming the starts ``others`` where the model has none.

        >>> from rwtoolkit.models import FLOAT64, get_model
        >>> get_model("one_layer").own_start(FLOAT64, Sizes(K=3, M=4, N=4), "zero")
        Traceback (most recent call last):
        ...
        ValueError: --init own: model one_layer has no start of its own (a sequence program's initial parameters); use --init zero
        """
        own = self.initial(arithmetic, sizes)
        if own is None:
            raise ValueError(
                f"--init own: model {self.name} has no start of its own (a sequence program's initial "
                f"parameters); use --init {others}"
            )
        return own

    def parameter_axes(self, sizes: Sizes) -> dict[str, tuple[str | None, ...]]:
        """What each axis of each parameter indexes at ``sizes``: ``AXES`` (a sequence model's program
        declares its own per sizes)."""
        return self.AXES

    def describe(self) -> dict[str, Any]:
        """The model as written in output files: name and hyperparameters, and the ``target`` that names a model
        that is not registered (``rwtoolkit.models.get_model(**model.describe())`` builds it again)."""
        described = {"name": self.name, **self.hyperparameters}
        if self.target is not None:
            described["target"] = self.target
        return described
