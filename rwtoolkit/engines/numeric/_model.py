"""The one-layer transformer f = V X S(X̃ᵀ W x̃_N) (docs/theory.md#model) and its gradient step, two ways.

``GenericModel`` is the faithful one: a model of record (``rwtoolkit.models``, the paper's with its variants) with
the full W ∈ R^{(K+M)×(K+M)} a parameter, the matrices X̃ built explicitly (in chunks of inputs, to bound
memory), the model's one forward pass, and torch autograd.
``FastModel`` uses docs/theory.md#reduction: the logits X̂ᵀ W x̂_N depend on W only through w = W x̂_N, and every
W-gradient is (∂L/∂w) x̂_Nᵀ. It keeps (V, w_tok ∈ R^K, q = Pᵀ w_pos ∈ R^N), differentiates
those with autograd and maps the step back exactly:
    W ← W - η g x̂_Nᵀ  ⇒  w ← w - η ‖x̂_N‖² g,   w_tok ← w_tok - η ‖x̂_N‖² ∂L/∂w_tok,   q ← q - η ‖x̂_N‖² (PᵀP) ∂L/∂q,
since ∂L/∂w_pos = P ∂L/∂q. The accumulated rank-one update D = -η Σ_t ∂L/∂w(t) (D_pos = P r) is kept
so that W(T) = W(0) + D x̂_Nᵀ can be rebuilt. Here x̂_j = x̃_j/‖x̃_j‖ with ``normalize`` (Fig 6, only
inside the softmax), else x̂_j = x̃_j. Token ids and positions are 0-based in code.
The stored q relates to the exact engine's coefficients c (w_pos = Σ_j c_j p_j) by q = Pᵀ w_pos = G c
with G = PᵀP (= μ I for ideal embeddings, so q = μ c); ``scale`` is the per-position factor 1/‖x̃_j‖
of x̂_j (ones without ``normalize``), so the logit of position j is scale_j (w_tok[s_j] + q_j).
"""

from __future__ import annotations

import numpy as np
import torch

from rwtoolkit.engines.numeric._arith import TorchArithmetic
from rwtoolkit.engines.numeric._losses import SampleLoss
from rwtoolkit.engines.numeric._metrics import circulant_projection
from rwtoolkit.models import Inputs, Model, Tape

#: Bytes of X̃ the reference path (``GenericModel``) materialises at once (n_chunk · (K+M) · N entries).
REFERENCE_CHUNK_BYTES = 32 * 2**20


def _head(h: torch.Tensor, A: torch.Tensor | None) -> torch.Tensor:
    """f = h, or f = A·ReLU(h) for the ReLU variant (paper Fig 10); h (n, m) -> f (n, K)."""
    return h if A is None else torch.relu(h) @ A.T


class FastModel:
    """Reduced parameters (V, w_tok, q[, A]) with the exact rank-one map back to W (see module doc)."""

    def __init__(
        self,
        P: torch.Tensor,  # (M, N) positional embeddings
        K: int,
        normalize: bool,
        V0: torch.Tensor,  # (m, K) with m = K unless ReLU
        W0: torch.Tensor | None,  # (K+M, K+M) initial W, None for zero init
        A0: torch.Tensor | None,  # (K, m) for the ReLU variant
        mu: float | None = None,  # use PᵀP = μI exactly ("ideal" Gram), else the float Gram of P
    ) -> None:
        M, N = P.shape
        self.K, self.N, self.P = K, N, P
        # (N, N) Gram matrix: all the model ever sees of P. The float PᵀP of the sine basis has
        # off-diagonal rounding ~1e-13·μ, which breaks the exact symmetry of Theorem 4.1 (p ∈ {0,1})
        # and is amplified along training; the ideal μI keeps the spec's exact orthogonality.
        self.G = P.T @ P if mu is None else mu * torch.eye(N, dtype=P.dtype, device=P.device)
        sq = torch.diagonal(self.G)  # (N,) ‖p_j‖²
        if normalize:
            # ‖x̃_j‖² = 1 + ‖p_j‖² (one-hot token) for j < N, ‖x̃_N‖² = ‖p_N‖² (zero query token)
            self.scale = torch.cat([1 / torch.sqrt(1 + sq[:-1]), 1 / torch.sqrt(sq[-1:])])
            self.nN = 1.0  # ‖x̂_N‖²
            self.xhat_dot_xtilde = float(torch.sqrt(sq[-1]))  # x̂_Nᵀ x̃_N = ‖x̃_N‖
        else:
            self.scale = torch.ones(N, dtype=P.dtype, device=P.device)
            self.nN = float(sq[-1])
            self.xhat_dot_xtilde = float(sq[-1])
        self.V = V0.clone().requires_grad_(True)
        self.A = None if A0 is None else A0.clone().requires_grad_(True)
        self.W0 = W0
        xhat_N = P[:, -1] * (self.scale[-1] if normalize else 1.0)  # (M,) position block of x̂_N
        self.xhat_N_pos = xhat_N
        if W0 is None:
            w_tok0 = torch.zeros(K, dtype=P.dtype, device=P.device)
            q0 = torch.zeros(N, dtype=P.dtype, device=P.device)
        else:
            w0 = W0[:, K:] @ xhat_N  # (K+M,) = W(0) x̂_N; the token block of x̂_N is 0
            w_tok0, q0 = w0[:K], P.T @ w0[K:]
        self.w_tok = w_tok0.clone().requires_grad_(True)
        self.q = q0.clone().requires_grad_(True)
        self.D_tok = torch.zeros(K, dtype=P.dtype, device=P.device)  # token block of D
        self.r = torch.zeros(N, dtype=P.dtype, device=P.device)  # D_pos = P r

    def parameters(self) -> list[torch.Tensor]:
        return [t for t in (self.V, self.w_tok, self.q, self.A) if t is not None]

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """(n, N) attention logits X̂ᵀ W x̂_N for token ids ``tokens`` (n, N-1)."""
        n = tokens.shape[0]
        a_tok = (self.w_tok[tokens] + self.q[:-1]) * self.scale[:-1]  # (n, N-1) logits x̂_jᵀ w, j < N
        a_last = (self.q[-1] * self.scale[-1]).expand(n, 1)  # (n, 1) logit of the query slot
        return torch.cat([a_tok, a_last], dim=1)

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(f (n, K), S (n, N), X S (n, K)) for token ids ``tokens`` (n, N-1)."""
        n = tokens.shape[0]
        S = torch.softmax(self.logits(tokens), dim=1)  # (n, N) attention
        XS = torch.zeros(n, self.K, dtype=S.dtype, device=S.device).scatter_add(
            1, tokens, S[:, :-1]
        )  # (n, K)
        return _head(XS @ self.V.T, self.A), S, XS

    def loss_and_grad(
        self, tokens: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor, loss: SampleLoss, step: int
    ) -> float:
        """L = Σ_n weights_n ℓ(e_yᵀ f_n); fills .grad of the reduced parameters; returns L."""
        for t in self.parameters():
            t.grad = None
        f, _, _ = self.forward(tokens)
        z = f.gather(1, labels[:, None])[:, 0]  # (n,) e_yᵀ f
        L = (weights * loss(z, step)).sum()
        L.backward()
        return float(L.detach())

    @torch.no_grad()
    def project_rotation(self) -> None:
        """Average the gradients over the K rotations of the circle: V's onto circulant matrices, w_tok's onto constants.

        With gradients taken on the walks rooted at node 0 (weights ×K) this gives the exact full-population
        gradients while V is circulant and w_tok constant (rotation symmetry; ``TrainConfig.rotate``).
        """
        g, gu = self.V.grad, self.w_tok.grad
        assert g is not None and gu is not None
        self.V.grad = circulant_projection(g)
        self.w_tok.grad = gu.mean().expand(self.K).clone()

    @torch.no_grad()
    def step(self, eta: float) -> None:
        """One GD step on (V, W[, A]) expressed in the reduced parameters."""
        gV, gu, gq = self.V.grad, self.w_tok.grad, self.q.grad
        assert gV is not None and gu is not None and gq is not None
        self.V -= eta * gV
        if self.A is not None:
            assert self.A.grad is not None
            self.A -= eta * self.A.grad
        self.w_tok -= eta * self.nN * gu
        self.q -= eta * self.nN * (self.G @ gq)
        self.D_tok -= eta * gu
        self.r -= eta * gq

    @torch.no_grad()
    def evaluate(self, tokens: torch.Tensor):
        return self.forward(tokens)

    @torch.no_grad()
    def _D(self) -> torch.Tensor:
        return torch.cat([self.D_tok, self.P @ self.r])  # (K+M,)

    @torch.no_grad()
    def w(self) -> torch.Tensor:
        """W x̃_N (K+M,), with x̃_N = [0; p_N] un-normalised."""
        w = self._D() * self.xhat_dot_xtilde
        if self.W0 is not None:
            w = w + self.W0[:, self.K :] @ self.P[:, -1]
        return w

    @torch.no_grad()
    def full_W(self) -> torch.Tensor:
        """The full W(t) = W(0) + D x̂_Nᵀ, (K+M, K+M)."""
        xhat = torch.cat([torch.zeros(self.K, dtype=self.P.dtype, device=self.P.device), self.xhat_N_pos])
        W = torch.outer(self._D(), xhat)
        return W if self.W0 is None else W + self.W0


class GenericModel:
    """A model of record (``rwtoolkit.models``) trained by ``train``'s loop (``fast=False``): its full parameters,
    the matrices X̃ built explicitly in chunks of inputs (to bound memory), the model's one forward pass and
    torch autograd. ``rwtoolkit.engines.numeric._train.registered_model`` names the model of a ``ModelConfig``:
    the paper's (``one_layer``), with normalised attention (``normalized_attention``) or a ReLU read-out
    (``relu_head``).
    """

    def __init__(self, model: Model, P: torch.Tensor, K: int, params: dict[str, torch.Tensor]) -> None:
        M, N = P.shape
        self.model, self.K, self.N, self.M, self.P = model, K, N, M, P
        self.ar = TorchArithmetic(P.dtype, P.device)
        self.params = {name: value.clone().requires_grad_(True) for name, value in params.items()}
        self.xt_N = torch.cat([torch.zeros(K, dtype=P.dtype, device=P.device), P[:, -1]])  # x̃_N = [0; p_N]
        self.chunk = max(1, REFERENCE_CHUNK_BYTES // ((K + M) * N * P.element_size()))

    @property
    def V(self) -> torch.Tensor:
        return self.params["V"]

    @property
    def A(self) -> torch.Tensor | None:
        return self.params.get("A")

    def parameters(self) -> list[torch.Tensor]:
        return list(self.params.values())

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(f, S, X S) for one chunk of inputs, building X̃ = [X; P] explicitly."""
        n, K, N, M = tokens.shape[0], self.K, self.N, self.M
        X = torch.zeros(n, K, N, dtype=self.P.dtype, device=self.P.device)  # (n, K, N), column N zero
        X[:, :, :-1] = torch.nn.functional.one_hot(tokens, K).transpose(1, 2).to(X.dtype)
        Xt = torch.cat([X, self.P.expand(n, M, N)], dim=1)  # (n, K+M, N) the matrices X̃
        out = self.model.forward(Tape(self.ar), self.params, Inputs(X=X, Xt=Xt, xN=self.xt_N))
        if out.S is None:
            raise ValueError(
                f"model {self.model.name} has no attention S: the reduced torch engines run the paper's models "
                "(rwtoolkit.engines.select gives the generic engine for another)"
            )
        S = out.S.value
        return out.f.value, S, torch.einsum("nkj,nj->nk", X, S)

    def loss_and_grad(
        self, tokens: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor, loss: SampleLoss, step: int
    ) -> float:
        for t in self.parameters():
            t.grad = None
        total = 0.0
        zs = []
        # First all z (the loss domain check needs the whole training set), then chunked backward.
        with torch.no_grad():
            for s in range(0, tokens.shape[0], self.chunk):
                f, _, _ = self.forward(tokens[s : s + self.chunk])
                zs.append(f.gather(1, labels[s : s + self.chunk, None])[:, 0])
            loss(torch.cat(zs), step)
        for s in range(0, tokens.shape[0], self.chunk):
            f, _, _ = self.forward(tokens[s : s + self.chunk])
            z = f.gather(1, labels[s : s + self.chunk, None])[:, 0]
            L = (weights[s : s + self.chunk] * loss(z, step)).sum()
            L.backward()  # accumulates into .grad across chunks
            total += float(L.detach())
        return total

    @torch.no_grad()
    def step(self, eta: float) -> None:
        for t in self.parameters():
            assert t.grad is not None
            t -= eta * t.grad

    @torch.no_grad()
    def evaluate(self, tokens: torch.Tensor):
        parts = [self.forward(tokens[s : s + self.chunk]) for s in range(0, tokens.shape[0], self.chunk)]
        return tuple(torch.cat([p[i] for p in parts]) for i in range(3))

    @torch.no_grad()
    def w(self) -> torch.Tensor:
        return self.params["W"] @ self.xt_N

    @torch.no_grad()
    def full_W(self) -> torch.Tensor:
        """The full W(t) (K+M, K+M)."""
        return self.params["W"].detach().clone()


def initial_parameters(
    K: int, M: int, relu_width: int | None, init: str, sigma: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(V(0), W(0), A(0)) as float64: zeros (W(0) = None), or i.i.d. N(0, σ²) drawn in the order V, W, A."""
    m = K if relu_width is None else relu_width
    if init == "zero":
        V0 = np.zeros((m, K))
        A0 = None if relu_width is None else np.zeros((K, m))
        return V0, None, A0
    V0 = rng.normal(0.0, sigma, size=(m, K))
    W0 = rng.normal(0.0, sigma, size=(K + M, K + M))
    A0 = None if relu_width is None else rng.normal(0.0, sigma, size=(K, m))
    return V0, W0, A0
