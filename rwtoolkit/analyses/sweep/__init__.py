"""Sweeps of exact-population runs on dask.distributed: spec, batched packs, one Parquet table, phase diagrams.

>>> spec = load_spec({"task": "circle", "fixed": {"K": 3, "N": 4, "steps": 2}, "grid": {"p": [0, "1/2"]}})
>>> len(spec.runs), spec.varied
(2, ('p',))
"""

from rwtoolkit.analyses.sweep._driver import (
    TIMING_COLUMNS,
    Pack,
    SweepEstimate,
    SweepOutcome,
    assemble,
    estimate_sweep,
    finished_hashes,
    pack_memory,
    plan_packs,
    run_pack,
    run_sweep,
)
from rwtoolkit.analyses.sweep._plots import plot_sweep
from rwtoolkit.analyses.sweep._spec import FIELDS, MAX_RUNS, Spec, SpecError, config_hash, load_spec
from rwtoolkit.analyses.sweep._summaries import SUMMARY_COLUMNS, run_summaries, signal_summary
from rwtoolkit.io import schema_deprecations as _schema_deprecations

__all__ = [
    "FIELDS",
    "MAX_RUNS",
    "SUMMARY_COLUMNS",
    "TIMING_COLUMNS",
    "Pack",
    "Spec",
    "SpecError",
    "SweepEstimate",
    "SweepOutcome",
    "assemble",
    "config_hash",
    "estimate_sweep",
    "finished_hashes",
    "load_spec",
    "pack_memory",
    "plan_packs",
    "plot_sweep",
    "run_pack",
    "run_summaries",
    "run_sweep",
    "signal_summary",
]

# Kept one release (docs/changelog.md): the schema is rwtoolkit.io.load_schema("sweep").
__getattr__ = _schema_deprecations("rwtoolkit.analyses.sweep", {}, {"SCHEMA_PATH": "sweep"})
