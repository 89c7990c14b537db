"""How a symmetry of a task acts on a model's parameters, read from the model's axes (``Model.parameter_axes``).

A symmetry (τ, λ, π) of a task (``rwtoolkit.tasks.task_symmetries``: tokens renamed by τ, labels by λ, key
positions moved by π, the population law unchanged) acts on every parameter axis by axis: a label axis
by λ, a token axis by τ, an embedding axis by O = diag(T_τ, Q_π) with Q_π the orthogonal map taking p_j to
p_π(j) (the query p_N fixed), a position axis by π, an axis of no role (None) not at all. At P = √μ·I_N,
Q_π is the permutation Π_π, so the action permutes the flat coordinates (docs/theory.md#invariant-manifolds).

The axes are read through one accessor, ``Model.parameter_axes(sizes)``: a registered model's class-level
``AXES``, a sequence model's (``rwtoolkit.models.SequenceModel``: a traced PyTorch or JAX program) per sizes, as
its program declares or its tracer inferred them. For a sequence model a relabelling τ of the tokens moves the
rows of its token embedding and of its unembedding (both ``"token"`` axes) and nothing else; its positional
embedding (a ``"position"`` axis of L = N − 1 rows) would move by π, but a causal model sees the order of its
positions (``POSITION_SYMMETRIC`` false: nothing proves a causal mask symmetric in the positions), so only the
task's symmetries with π the identity act on it; and its targets are tokens (the next token at every
position, the label x_N the last), read by one unembedding, so only those that rename the labels as the
tokens (λ = τ) do (:func:`acting_group`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rwtoolkit.models._model import Model, Sizes

#: The axes of the paper's reduced coordinates of ``one_layer`` (V, w_tok, c: docs/theory.md#reduction),
#: which its fast paths run in: the symmetry acts on them as on any parameter, axis by axis.
REDUCED_AXES: dict[str, tuple[str, ...]] = {"V": ("label", "token"), "w_tok": ("token",), "c": ("position",)}


def parameter_images(
    axes: Mapping[str, Sequence[str | None]],
    shapes: Mapping[str, tuple[int, ...]],
    symmetry: Any,
    K: int,
    N: int,
    heads: Sequence[int] | None = None,
    model: str = "the model",
) -> dict[str, np.ndarray]:
    """The symmetry's action on each parameter, axis by axis: the flat image index of every entry.

    A label axis moves by λ, a token axis by τ, an embedding axis by O = diag(T_τ, Π_π) (positions
    p_j = √μ e_j, so Q_π is the permutation Π_π with the query fixed), a position axis by Π_π (the query
    fixed; an axis of N − 1 rows, a sequence model's L positions, by π alone), a head axis by ``heads`` (None:
    fixed), other axes (None) not at all.

    >>> from rwtoolkit.tasks import Symmetry
    >>> shift = Symmetry((1, 2, 0), (1, 2, 0), (0, 1, 2))
    >>> images = parameter_images(REDUCED_AXES, {"V": (3, 3), "w_tok": (3,), "c": (4,)}, shift, 3, 4)
    >>> images["V"].tolist(), images["w_tok"].tolist(), images["c"].tolist()  # V[y, k] -> V[y+1, k+1]
    ([4, 5, 3, 7, 8, 6, 1, 2, 0], [1, 2, 0], [0, 1, 2, 3])
    """
    embed = list(symmetry.tokens) + [K + j for j in symmetry.positions] + [K + N - 1]
    per_role: dict[str, list[int]] = {
        "label": list(symmetry.labels),
        "token": list(symmetry.tokens),
        "embed": embed,
        "position": list(symmetry.positions) + [N - 1],  # the N positions, the query fixed
    }
    if heads is not None:
        per_role["head"] = list(heads)
    images = {}
    for name, shape in shapes.items():
        roles = axes[name]
        if len(roles) != len(shape):
            raise ValueError(
                f"{model}: the axes of {name!r} name {len(roles)} axes, the parameter has {len(shape)}"
            )
        index = np.indices(shape).reshape(len(shape), -1)
        moved = []
        for axis, (role, size) in enumerate(zip(roles, shape, strict=True)):
            moves = per_role.get(role, range(size)) if role is not None else range(size)
            if role == "position" and size == N - 1:  # the L = N - 1 positions of a sequence model's tokens
                moves = list(symmetry.positions)
            perm = np.asarray(moves, dtype=np.int64)
            if perm.shape[0] != size:
                raise ValueError(f"{model}: axis {role!r} of {name} has size {size}, not {perm.shape[0]}")
            moved.append(perm[index[axis]])
        images[name] = np.ravel_multi_index(tuple(moved), shape)
    return images


def coordinate_permutation(
    model: Model, symmetry: Any, K: int, N: int, heads: Sequence[int] | None = None
) -> np.ndarray:
    """The symmetry's action on the flat parameters at P = √μ·I_N: the image index of every coordinate.

    Each parameter moves axis by axis as ``model.parameter_axes`` says (``parameter_images``), the parameters
    laid end to end in the order of ``model.shapes``.

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import Symmetry
    >>> shift = Symmetry((1, 2, 0), (1, 2, 0), (0, 1, 2))
    >>> coordinate_permutation(get_model("one_layer"), shift, 3, 4)[:9].tolist()  # V[y, k] -> V[y+1, k+1]
    [4, 5, 3, 7, 8, 6, 1, 2, 0]
    """
    sizes = Sizes(K=K, M=N, N=N)
    shapes = model.shapes(sizes)
    images = parameter_images(
        model.parameter_axes(sizes), shapes, symmetry, K, N, heads, f"model {model.name}"
    )
    out, start = [], 0
    for name, shape in shapes.items():
        out.append(start + images[name])
        start += int(np.prod(shape))
    return np.concatenate(out)


def acting_group(model: Model, group: Any) -> Any:
    """The part of a task's symmetry group (an ``rwtoolkit.tasks.TaskGroup``) that is a symmetry of ``model``: all of
    it, or, for a model that sees the order of its positions (``Model.POSITION_SYMMETRIC`` false), the
    symmetries that fix every key position (``TaskGroup.fixing_positions``); for a model with next-token logits
    (``Model.TOKEN_LOGITS``: its targets are tokens, the label the last, read by one unembedding) of those the
    ones that rename the labels as the tokens (λ = τ), the subgroup that leaves its objective unchanged.

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk, task_symmetries
    >>> G = task_symmetries(CircleWalk(3, 4, 1))
    >>> acting_group(get_model("one_layer"), G).order, acting_group(get_model("two_layer"), G).order
    (18, 3)
    """
    acting = group if model.POSITION_SYMMETRIC else group.fixing_positions()
    return _labels_as_tokens(acting) if model.TOKEN_LOGITS else acting


def _labels_as_tokens(group: Any) -> Any:
    """The subgroup of ``group``'s elements with λ = τ, with a small generating set (each generator an element
    that the earlier ones do not generate), as a group of the same kind (``dataclasses.replace``)."""
    from dataclasses import replace

    kept = [g for g in group.elements() if g.labels == g.tokens]
    generators: list[Any] = []
    generated = {kept[0]} if kept else set()  # the identity comes first
    for g in kept:
        if g in generated:
            continue
        generators.append(g)
        generated = _closure(generators, kept[0])
    if len(kept) == group.order:
        return group
    free = tuple(k for k in group.free_tokens if k in group.free_labels)  # ids that occur nowhere
    return replace(group, generators=tuple(generators), order=len(kept), free_tokens=free, free_labels=free)


def _closure(generators: Sequence[Any], identity: Any) -> set[Any]:
    """Every product of ``generators`` (symmetries with ``compose``)."""
    seen, frontier = {identity}, [identity]
    while frontier:
        fresh = []
        for h in frontier:
            for g in generators:
                e = g.compose(h)
                if e not in seen:
                    seen.add(e)
                    fresh.append(e)
        frontier = fresh
    return seen
