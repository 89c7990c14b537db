"""How a symmetry of a task acts on a model's parameters, read from the model's ``AXES``.

A symmetry (τ, λ, π) of a task (``rwtoolkit.tasks.task_symmetries``: tokens renamed by τ, labels by λ, key
positions moved by π, the population law unchanged) acts on every parameter axis by axis: a label axis
by λ, a token axis by τ, an embedding axis by O = diag(T_τ, Q_π) with Q_π the orthogonal map taking p_j to
p_π(j) (the query p_N fixed), a position axis by π. At P = √μ·I_N, Q_π is the permutation Π_π, so the
action permutes the flat coordinates (docs/theory.md#invariant-manifolds).
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
    fixed), a head axis by ``heads`` (None: fixed), other axes not at all.

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
            raise ValueError(f"{model}: AXES[{name!r}] has {len(roles)} axes, the parameter {len(shape)}")
        index = np.indices(shape).reshape(len(shape), -1)
        moved = []
        for axis, (role, size) in enumerate(zip(roles, shape, strict=True)):
            perm = np.asarray(per_role[role] if role in per_role else range(size), dtype=np.int64)
            if perm.shape[0] != size:
                raise ValueError(f"{model}: axis {role!r} of {name} has size {size}, not {perm.shape[0]}")
            moved.append(perm[index[axis]])
        images[name] = np.ravel_multi_index(tuple(moved), shape)
    return images


def coordinate_permutation(
    model: Model, symmetry: Any, K: int, N: int, heads: Sequence[int] | None = None
) -> np.ndarray:
    """The symmetry's action on the flat parameters at P = √μ·I_N: the image index of every coordinate.

    Each parameter moves axis by axis as its ``model.AXES`` says (``parameter_images``), the parameters laid
    end to end in the order of ``model.shapes``.

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import Symmetry
    >>> shift = Symmetry((1, 2, 0), (1, 2, 0), (0, 1, 2))
    >>> coordinate_permutation(get_model("one_layer"), shift, 3, 4)[:9].tolist()  # V[y, k] -> V[y+1, k+1]
    [4, 5, 3, 7, 8, 6, 1, 2, 0]
    """
    shapes = model.shapes(Sizes(K=K, M=N, N=N))
    images = parameter_images(model.AXES, shapes, symmetry, K, N, heads, f"model {model.name}")
    out, start = [], 0
    for name, shape in shapes.items():
        out.append(start + images[name])
        start += int(np.prod(shape))
    return np.concatenate(out)


def acting_group(model: Model, group: Any) -> Any:
    """The part of a task's symmetry group (an ``rwtoolkit.tasks.TaskGroup``) that is a symmetry of ``model``: all of
    it, or, for a model that sees the order of its positions (``Model.POSITION_SYMMETRIC`` false), the
    symmetries that fix every key position (``TaskGroup.fixing_positions``).

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk, task_symmetries
    >>> G = task_symmetries(CircleWalk(3, 4, 1))
    >>> acting_group(get_model("one_layer"), G).order, acting_group(get_model("two_layer"), G).order
    (18, 3)
    """
    return group if model.POSITION_SYMMETRIC else group.fixing_positions()
