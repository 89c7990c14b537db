"""Oracle files: an exact trajectory written once, read back as doubles or exact values.

``write_oracle(traj, path)`` writes version 2 of ``rwtoolkit-derive-oracle``: a JSON header with the
model, the configuration, one node table holding every exact value once and, per step, each value's
node indices, double and certified error bound; and, with per-input values, a columnar ``.npz``
beside it (readable with numpy alone). ``load_oracle(path)`` reads versions 1 and 2.
``rwsymbolic.job_estimate`` says, before any work, what a ``rw derive --json`` job will cost.
"""

from rwsymbolic.oracle._columns import FORMAT as ORACLE_FORMAT
from rwsymbolic.oracle._columns import VERSION as ORACLE_VERSION
from rwsymbolic.oracle._columns import per_input_path
from rwsymbolic.oracle._read import SCHEMA_PATHS, Oracle, load_oracle, load_oracle_schema, read_oracle
from rwsymbolic.oracle._write import SHORT_CHARS, verdict_json, write_oracle

ORACLE_SCHEMA_PATH = SCHEMA_PATHS[ORACLE_VERSION]

__all__ = [
    "ORACLE_FORMAT",
    "ORACLE_SCHEMA_PATH",
    "ORACLE_VERSION",
    "SHORT_CHARS",
    "Oracle",
    "load_oracle",
    "load_oracle_schema",
    "per_input_path",
    "read_oracle",
    "verdict_json",
    "write_oracle",
]
