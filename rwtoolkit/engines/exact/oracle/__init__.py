"""Oracle files: an exact trajectory written once, read back as doubles or exact values.

``write_oracle(traj, path)`` writes version 3 of ``rw-oracle`` (the trajectory of ``derive``, or of any model
by ``derive_model``): a JSON header with the model (its parameters by its own names), the configuration,
one node table holding every exact value once and, per step, each value's node indices, double and
certified error bound; and, with per-input values, a columnar ``.npz`` beside it (readable with numpy
alone). ``load_oracle(path)`` reads versions 1 and 2 (``rwtoolkit-derive-oracle``) and 3; a damaged file
raises ``OracleFormatError`` (a ``ValueError``) naming the file and what is wrong.
``rwtoolkit.engines.exact.job_estimate`` says, before any work, what a ``rw derive --json`` job will cost.
"""

from rwtoolkit.engines.exact.oracle._read import Oracle, load_oracle, read_oracle
from rwtoolkit.engines.exact.oracle._write import SHORT_CHARS, verdict_json, write_oracle
from rwtoolkit.runtime.oracle_format import FORMAT as ORACLE_FORMAT
from rwtoolkit.runtime.oracle_format import VERSION as ORACLE_VERSION
from rwtoolkit.runtime.oracle_format import (
    OracleFormatError,
    PerInput,
    per_input_path,
    read_header,
    step_doubles,
)

__all__ = [
    "PerInput",
    "read_header",
    "step_doubles",
    "ORACLE_FORMAT",
    "ORACLE_VERSION",
    "SHORT_CHARS",
    "Oracle",
    "OracleFormatError",
    "load_oracle",
    "per_input_path",
    "read_oracle",
    "verdict_json",
    "write_oracle",
]
