"""The check kit's runtime with numpy alone: the config, the protocol runner, the comparison, the oracle format.

This package imports nothing of the toolkit, only the standard library and numpy (torch where an
implementation is a ``torch.nn.Module`` or returns tensors), and its modules import each other
relatively. So ``rw check`` runs every implementation through it, and ``rw check --emit`` copies the
folder as it is into the frozen fixtures (``rwcheck_runtime/``), where a user's CI runs the same code
without the toolkit, SymPy or python-flint:

- ``CheckConfig``: the one configuration an implementation is handed (``_config``);
- ``run``, ``run_model``, ``Functional``, ``Supervised``, ``check_positions``, ``first_difference``, ...:
  the protocols and the comparison (``_runner``);
- ``load_manifest``, ``fixture_config``: a frozen fixture folder read back (``_fixtures``);
- ``oracle_format``: the oracle format, its writer's building blocks and its reader (the exact engine
  writes oracles through it, ``rwtoolkit.engines.exact.write_oracle``).

No docstring here names the package: in a fixture folder it is ``rwcheck_runtime``, and its examples run
there too (``pytest --doctest-modules``).
"""

from ._config import (
    DTYPES,
    NUMPY_LOSSES,
    PAPER_MODEL,
    START_SIGMA,
    CheckConfig,
    Floats,
    inputs_array,
    paper_shapes,
    torch_inputs,
    torch_losses,
)
from ._fixtures import (
    MANIFEST_ENTRY_KEYS,
    MANIFEST_FORMAT,
    MANIFEST_READS,
    MANIFEST_VERSION,
    RUNTIME_FOLDER,
    fixture_config,
    load_manifest,
)
from ._runner import (
    ACCURACY_ATOL,
    LABELS,
    POSITION_ASSUMPTIONS,
    PROTOCOLS,
    QUANTITIES,
    READOUTS,
    Difference,
    Factory,
    Functional,
    ImplementationError,
    PositionCheck,
    Readouts,
    Supervised,
    accuracy,
    build,
    check_positions,
    expected_readouts,
    finite_or_text,
    first_difference,
    first_non_finite,
    load_attribute,
    load_factory,
    model_quantities,
    predict,
    readouts_from_oracle,
    run,
    run_model,
    scaled_error,
    with_steps,
)
from ._sequence import SEQUENCE_READOUTS, run_sequence, sequence_quantities
from .oracle_format import OracleFormatError

__all__ = [
    "ACCURACY_ATOL",
    "DTYPES",
    "LABELS",
    "MANIFEST_ENTRY_KEYS",
    "MANIFEST_FORMAT",
    "MANIFEST_READS",
    "MANIFEST_VERSION",
    "NUMPY_LOSSES",
    "PAPER_MODEL",
    "POSITION_ASSUMPTIONS",
    "PROTOCOLS",
    "QUANTITIES",
    "READOUTS",
    "SEQUENCE_READOUTS",
    "RUNTIME_FOLDER",
    "START_SIGMA",
    "CheckConfig",
    "Difference",
    "Factory",
    "Floats",
    "Functional",
    "ImplementationError",
    "OracleFormatError",
    "PositionCheck",
    "Readouts",
    "Supervised",
    "accuracy",
    "build",
    "check_positions",
    "expected_readouts",
    "finite_or_text",
    "first_difference",
    "first_non_finite",
    "fixture_config",
    "inputs_array",
    "load_attribute",
    "load_factory",
    "load_manifest",
    "model_quantities",
    "paper_shapes",
    "predict",
    "readouts_from_oracle",
    "run",
    "run_model",
    "run_sequence",
    "scaled_error",
    "sequence_quantities",
    "torch_inputs",
    "torch_losses",
    "with_steps",
]
