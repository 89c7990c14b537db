"""The JSON Schema of a numeric run (``TrainResult.to_json()``, ``rw train``'s ``metrics.json``)."""

from __future__ import annotations

import json
from pathlib import Path

METRICS_SCHEMA_PATH = Path(__file__).with_name("metrics.schema.json")


def load_metrics_schema() -> dict:
    """The JSON Schema (draft 2020-12) that every ``metrics.json`` written by ``rw train`` satisfies.

    >>> import jsonschema
    >>> from rwtasks import CircleWalk
    >>> from rwnumeric import ModelConfig, TrainConfig, train
    >>> run = train(CircleWalk(3, 4, "1/2"), ModelConfig(K=3, N=4, M=5), TrainConfig(steps=1, population=True),
    ...             progress=False)
    >>> jsonschema.Draft202012Validator(load_metrics_schema()).validate(run.to_json())
    """
    return json.loads(METRICS_SCHEMA_PATH.read_text(encoding="utf-8"))
