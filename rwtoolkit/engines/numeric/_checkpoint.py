"""Checkpoints of the generic torch engine's long runs: θ(t), the update rule's state, the step, the RNG state
and the metrics so far.

``train_model(checkpoint=Checkpoints(path, every))`` writes ``path`` (``CHECKPOINT_NAME`` in ``rw train``'s
--out) atomically every ``every`` steps (``rwtoolkit.io.write_files_atomic``: a failure leaves the previous
checkpoint as it was, never a partial file); one file, overwritten, so its size does not grow with the number of
checkpoints. ``Checkpoints(path, every, resume=True)`` continues from it: the parameters are restored bit for
bit, the run evaluates θ(t) again and goes on, so the outputs are the same bytes as a run that was never
interrupted (full-batch GD on the exact population draws nothing after the start; torch's RNG state is restored
all the same). A rule with state (``rwtoolkit.models.Optimizer``: the momentum buffers b, Adam's m, v and step
count t per parameter, ``RULE_STATE_KEYS``) has it saved beside θ(t) and restored bit for bit. A checkpoint of
another run (another config, model or task) is refused in one line naming the first field that differs
(``resume_fields``); one of another update rule or other hyperparameters names both rules (``rule_line``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rwtoolkit.io import write_files_atomic

#: The checkpoint file in ``rw train``'s --out.
CHECKPOINT_NAME = "checkpoint.pt"
#: The format id of a checkpoint (its key ``"format"``).
CHECKPOINT_FORMAT = "rw-train-checkpoint/1"


@dataclass(frozen=True)
class Checkpoints:
    """Where and how often ``train_model`` writes its checkpoint, and whether it resumes from it.

    ``every``: write θ(t) at every t = every, 2·every, ... below the last step (None: only read it, with
    ``resume``); ``resume``: continue from ``path`` (one line if it is missing or of another run); ``note``: a
    line for stderr once the checkpoint is read and found of this run (``rw train``'s estimate).
    """

    path: Path
    every: int | None = None
    resume: bool = False
    note: str | None = None

    def __post_init__(self) -> None:
        if self.every is not None and (isinstance(self.every, bool) or self.every < 1):
            raise ValueError(f"--checkpoint-every={self.every!r} is out of range: must be an integer >= 1")

    def due(self, t: int, steps: int) -> bool:
        """Whether θ(t) is written: a multiple of ``every`` strictly between 0 and the last step."""
        return self.every is not None and 0 < t < steps and t % self.every == 0


def checkpoint_bytes(parameters: int, tensors: int, records: int, record_bytes: int) -> int:
    """Bytes of one checkpoint file (an upper estimate): the float64 parameters with torch.save's per-tensor
    overhead (about 600 bytes measured), and the metrics recorded so far at ``record_bytes`` a record."""
    return 8192 + 8 * parameters + 1024 * tensors + records * record_bytes


def save_checkpoint(
    checkpoint: Checkpoints,
    fields: dict[str, Any],
    t: int,
    params: dict[str, torch.Tensor],
    history: list[dict],
    kept: dict[int, dict[str, np.ndarray]],
    rule_state: dict[str, dict[str, Any]] | None = None,
) -> None:
    """Write θ(t) with the metrics of the steps before t and the run's ``fields`` atomically to ``checkpoint.path``;
    ``rule_state``: the update rule's state after the step to θ(t) (``Optimizer.stepper``'s), tensors and step
    counts by parameter (key ``"rule"``; absent for plain GD, as in checkpoints written before it existed)."""
    state: dict[str, Any] = {
        "format": CHECKPOINT_FORMAT,
        "fields": fields,
        "step": t,
        "params": {k: v.detach().cpu().clone() for k, v in params.items()},
        "history": history,
        "kept": {int(s): {k: torch.from_numpy(np.array(v)) for k, v in p.items()} for s, p in kept.items()},
        "rng": torch.get_rng_state(),
    }
    if rule_state:
        state["rule"] = {
            name: {
                k: v.detach().cpu().clone() if isinstance(v, torch.Tensor) else int(v)
                for k, v in kept_.items()
            }
            for name, kept_ in rule_state.items()
        }
    write_files_atomic({checkpoint.path: lambda tmp: torch.save(state, tmp)})


def load_checkpoint(checkpoint: Checkpoints, fields: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint of ``checkpoint.path`` for a run of ``fields``; one line (ValueError) where the file is
    missing, not a checkpoint, or of a run whose fields differ (the first such field by name, both values)."""
    path = checkpoint.path
    if not path.is_file():
        raise ValueError(
            f"--resume: no checkpoint {path}; run without --resume (and with --checkpoint-every)"
        )
    try:
        state = torch.load(path, weights_only=True)
    except Exception as err:  # a damaged or foreign file: one line, never a traceback
        raise ValueError(f"--resume: {path} is not a readable checkpoint ({type(err).__name__})") from None
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"--resume: {path} is not a checkpoint of rw train ({CHECKPOINT_FORMAT})")
    differing = resume_fields(state["fields"], fields)
    rules = [d for d in differing if d[0] == "config.optimizer" or d[0].startswith("config.optimizer.")]
    if rules:
        was, now = (rule_line(f.get("config", {}).get("optimizer")) for f in (state["fields"], fields))
        raise ValueError(
            f"--resume: the checkpoint {path} was written with {was}, now {now}; resume with the same --optimizer "
            "and hyperparameters, or start afresh without --resume"
        )
    if differing:
        name, was, now = differing[0]
        raise ValueError(
            f"--resume: the checkpoint {path} is of another run: {name} was {was!r}, now {now!r}; "
            "resume with the same options or start afresh without --resume"
        )
    torch.set_rng_state(state["rng"])
    return state


def rule_line(described: dict[str, Any] | None) -> str:
    """An update rule as metrics.json's config records it (``Optimizer.describe``; None: plain GD) in words.

    >>> rule_line({"name": "momentum", "momentum": 0.9, "weight_decay": 0.0}), rule_line(None)
    ('--optimizer momentum (momentum 0.9, weight_decay 0.0)', '--optimizer gd (weight_decay 0.0)')
    """
    rule = {"name": "gd", "weight_decay": 0.0} if described is None else described
    options = ", ".join(
        f"{k} {','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in rule.items() if k != "name"
    )
    return f"--optimizer {rule.get('name')} ({options})"


def restored_rule_state(state: dict[str, Any], dtype: torch.dtype, device: Any) -> dict[str, dict[str, Any]]:
    """The update rule's state of a checkpoint read by ``load_checkpoint`` (empty for plain GD), its tensors
    in ``dtype`` on ``device``, the step counts as ints: what ``gradient_steps(rule_state=)`` continues from."""
    return {
        name: {
            k: v.to(device=device, dtype=dtype) if isinstance(v, torch.Tensor) else int(v)
            for k, v in kept.items()
        }
        for name, kept in state.get("rule", {}).items()
    }


def checkpoint_step(path: Path) -> int:
    """The step of the checkpoint at ``path`` (0 where there is none readable: ``load_checkpoint`` says why),
    read before the run to estimate the steps left."""
    try:
        state = torch.load(path, weights_only=True)
        return (
            int(state["step"]) if isinstance(state, dict) and state.get("format") == CHECKPOINT_FORMAT else 0
        )
    except Exception:  # missing or damaged: refused in one line by load_checkpoint
        return 0


def resume_fields(saved: Any, current: Any, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """The fields (dotted names) where two runs' descriptions differ, as (name, saved, current), in key order.

    >>> resume_fields({"eta": 0.3, "task": {"N": 7}}, {"eta": 0.3, "task": {"N": 5}})
    [('task.N', 7, 5)]
    """
    if isinstance(saved, dict) and isinstance(current, dict):
        out = []
        for key in sorted(set(saved) | set(current), key=str):
            out += resume_fields(
                saved.get(key), current.get(key), f"{prefix}{key}" if not prefix else f"{prefix}.{key}"
            )
        return out
    return [] if saved == current else [(prefix or "config", saved, current)]
