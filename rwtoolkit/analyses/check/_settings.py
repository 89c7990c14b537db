"""What ``rw check --model`` needs to know about a model beyond its definition: where to start and what to draw.

The model of record (``rwtoolkit.models``) says what a model is; how the conformance kit checks it is the
kit's business, so it lives here, one row per model that differs from the default. A model without a row
is checked from zero on circle walks, so a new model needs no line here unless one of these holds:

- its zero start never moves (every gradient vanishes there), so a check from zero would compare zeros with
  zeros: it starts from ``rwtoolkit.engines.exact.initial_parameters``' exact dyadic start instead
  (``init="gaussian"``, every entry exact in float64);
- it does not move from zero when the next symbol is uniform (every circle walk), so the kit draws finite
  tasks, whose labels are not uniform (``task="finite"``).

>>> check_settings("linear_attention").init, check_settings("one_layer").init
('gaussian', 'zero')
"""

from __future__ import annotations

from typing import NamedTuple


class CheckSettings(NamedTuple):
    """How ``rw check`` checks one model: its start (``init``: "zero", "gaussian" or "own") and the tasks it
    draws unless told (``task``: "circle", "finite" or "sequence")."""

    init: str = "zero"
    task: str = "circle"


#: The models checked otherwise than from zero on circle walks, with the reason in the comment.
MODEL_CHECK_SETTINGS: dict[str, CheckSettings] = {
    # zero is a stationary point of every loss: the scores vanish, so X S = 0 and ∂L/∂W carries V
    "linear_attention": CheckSettings(init="gaussian"),
    # from zero h = V X S = 0 and ReLU'(0) = 0: neither V nor A ever gets a gradient
    "relu_head": CheckSettings(init="gaussian"),
    # from zero with a uniform next symbol nothing moves: f = 1/K and the read-out's gradient E[f − e_y] zᵀ
    # vanishes (z = p_q for every input); from a random start the exact read-out nests exponentials at once
    # (12 s for one step at K = N = 3), so the kit draws finite tasks from zero instead
    "tied_embedding": CheckSettings(task="finite"),
    "untied_embedding": CheckSettings(task="finite"),
}


#: A sequence model (next-token logits: traced from PyTorch or JAX, or written on the tape) is checked from its
#: own start on sequence tasks: from zero a bias-free one never moves (every embedding and map is 0, so is every
#: gradient), and its logits are over the S symbols of a sequence, not a circle walk's next node.
SEQUENCE_SETTINGS = CheckSettings(init="own", task="sequence")


def check_settings(model: str) -> CheckSettings:
    """How ``rw check`` checks ``model`` (a registry name or a target, ``MODULE:ATTR`` / ``PATH.py:ATTR``): its row
    of ``MODEL_CHECK_SETTINGS``; ``SEQUENCE_SETTINGS`` for a model with next-token logits; else the default (from
    zero, on circle walks)."""
    if model in MODEL_CHECK_SETTINGS:
        return MODEL_CHECK_SETTINGS[model]
    from rwtoolkit.models import get_model, is_target

    if is_target(model) and get_model(model).TOKEN_LOGITS:
        return SEQUENCE_SETTINGS
    return CheckSettings()


__all__ = ["MODEL_CHECK_SETTINGS", "SEQUENCE_SETTINGS", "CheckSettings", "check_settings"]
