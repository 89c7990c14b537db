"""How a symmetry of a task acts on a model's parameters, read from the model's ``AXES``.

A symmetry (τ, λ, π) of a task (``rwtoolkit.tasks.task_symmetries``: tokens renamed by τ, labels by λ, key
positions moved by π, the population law unchanged) acts on every parameter axis by axis: a label axis
by λ, a token axis by τ, an embedding axis by O = diag(T_τ, Q_π) with Q_π the orthogonal map taking p_j to
p_π(j) (the query p_N fixed), a position axis by π. At P = √μ·I_N, Q_π is the permutation Π_π, so the
action permutes the flat coordinates (docs/theory.md#invariant-manifolds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rwtoolkit.models._model import Model, Sizes


def coordinate_permutation(
    model: Model, symmetry: Any, K: int, N: int, heads: Sequence[int] | None = None
) -> np.ndarray:
    """The symmetry's action on the flat parameters at P = √μ·I_N: the image index of every coordinate.

    A label axis moves by λ, a token axis by τ, an embedding axis by O = diag(T_τ, Π_π) (positions p_j = √μ e_j,
    so Q_π is the permutation Π_π with the query fixed), a position axis by Π_π, a head axis by ``heads``
    (None: fixed), other axes not at all. Each parameter's multi-index moves axis by axis.

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import Symmetry
    >>> shift = Symmetry((1, 2, 0), (1, 2, 0), (0, 1, 2))
    >>> coordinate_permutation(get_model("one_layer"), shift, 3, 4)[:9].tolist()  # V[y, k] -> V[y+1, k+1]
    [4, 5, 3, 7, 8, 6, 1, 2, 0]
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
    images, start = [], 0
    for name, shape in model.shapes(Sizes(K=K, M=N, N=N)).items():
        roles = model.AXES[name]
        if len(roles) != len(shape):
            raise ValueError(
                f"model {model.name}: AXES[{name!r}] has {len(roles)} axes, the parameter {len(shape)}"
            )
        index = np.indices(shape).reshape(len(shape), -1)
        moved = []
        for axis, (role, size) in enumerate(zip(roles, shape, strict=True)):
            perm = np.asarray(per_role[role] if role in per_role else range(size), dtype=np.int64)
            if perm.shape[0] != size:
                raise ValueError(
                    f"model {model.name}: axis {role!r} of {name} has size {size}, not {perm.shape[0]}"
                )
            moved.append(perm[index[axis]])
        images.append(start + np.ravel_multi_index(tuple(moved), shape))
        start += index.shape[1]
    return np.concatenate(images)


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
