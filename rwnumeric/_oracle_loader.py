"""Load an exact oracle of ``rw derive --json`` as float64 numpy arrays, for numeric comparisons.

The file's ``float`` fields are the nearest doubles of the exact values (rwsymbolic/oracle.schema.json),
so a numeric implementation compares against them with a tolerance it states.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from rwsymbolic._oracle import ORACLE_FORMAT as _FORMAT
from rwsymbolic._oracle import ORACLE_VERSION as _VERSION


def load_oracle(path: str | os.PathLike) -> dict:
    """{"config": dict, "steps": [{"t": int, "V": (K, K), "w_tok": (K,), "c": (N,), "loss": (), ...}]}.

    Per-step keys: V, w_tok, c, loss, accuracy, mean_attention (N,), mean_logits (N,), mean_f (K,) and,
    when the file has them, logits (n, N), S (n, N), f (n, K) per input in ``task.population()`` order.
    Refuses files whose values contain symbols (their floats are null): substitute numbers first.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("format") != _FORMAT or data.get("version") != _VERSION:
        raise ValueError(f"{path}: not a version-{_VERSION} {_FORMAT} file")
    steps = []
    for entry in data["steps"]:
        out: dict[str, object] = {"t": int(entry["t"])}
        fields = {k: v for k, v in entry.items() if k not in ("t", "per_input")}
        fields.update(entry.get("per_input", {}))
        for key, value in fields.items():
            if value["float"] is None:
                raise ValueError(
                    f"{path}: step {entry['t']} {key} is symbolic (float is null); write the oracle "
                    "with numeric p, eta, eps, pos-norm and --loss log"
                )
            out[key] = np.asarray(value["float"], dtype=np.float64)
        steps.append(out)
    return {"config": data["config"], "steps": steps}
