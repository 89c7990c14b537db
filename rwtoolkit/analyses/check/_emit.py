"""``rw check --emit DIR``: frozen exact oracles and a standalone pytest file for a user's CI.

For each chosen configuration the folder gets the oracle of the exact trajectory (``write_oracle``,
per-input values included) and the positional embeddings P the implementation is handed; a
``manifest.json`` with the configurations, their tolerances per dtype, the steps whose accuracy is not
compared (exact near-ties), the toolkit version, the tolerance rule and the SHA-256 digest of every
file; and the test itself: ``test_rwcheck_fixtures.py`` with ``conftest.py`` (its options), and the
kit's numpy-only runtime ``rwtoolkit.runtime`` (the config, the protocol runner, the comparison and the
oracle reader), its package folder copied as it is to ``rwcheck_runtime/``. The user's CI then runs
``pytest DIR`` with numpy, pytest and their framework, without SymPy or python-flint.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

import rwtoolkit.runtime
from rwtoolkit.analyses.check._compare import exact_trajectory, near_tie_steps, tolerance
from rwtoolkit.analyses.check._config import DTYPES, CheckConfig, build_config
from rwtoolkit.engines.exact import START_ESTIMATE, JobEstimate, job_estimate, write_oracle
from rwtoolkit.engines.numeric import DEFAULT_TIE_RTOL, check_embedding
from rwtoolkit.io import check_memory, read_data_file, write_bytes_atomic, write_json_atomic
from rwtoolkit.runtime import MANIFEST_FORMAT, MANIFEST_VERSION, RUNTIME_FOLDER
from rwtoolkit.tasks import LOSSES, CircleWalk, FiniteTask, make_task

#: The test file and its options, copied beside the runtime: (module of this package, name in the folder).
_TEST_FILES = (("_fixture_test.py", "test_rwcheck_fixtures.py"), ("_fixture_conftest.py", "conftest.py"))


@dataclass(frozen=True)
class FixtureSpec:
    """One configuration of a fixture: a catalogue task (family and parameters) and the model's settings."""

    family: str
    params: dict
    mu: str
    eta: str
    eps: str
    loss: str = "log"
    embedding: str = "sine"
    M: int | None = None
    seed: int = 0

    def task(self) -> CircleWalk | FiniteTask:
        return make_task(self.family, self.params)

    def check_positions(self, task: CircleWalk | FiniteTask) -> None:
        """A one-line ValueError when this configuration's M×N positional embeddings cannot be built for
        ``task`` (M against N for the embedding, ``rwtoolkit.engines.numeric.check_embedding``), or cannot fit in the memory
        available (``rwtoolkit.io.MemoryEstimateError``); nothing is built."""
        M = task.N + 1 if self.M is None else self.M  # build_config's default
        check_embedding(self.embedding, M, task.N, float(Fraction(self.mu)))
        check_memory(
            positions_memory(self.embedding, M, task.N),
            f"M={M}: building the positional embeddings ({self.embedding}, M×N = {M}×{task.N})",
            "use a smaller M",
        )

    def check_config(self, dtype: str = "float64") -> CheckConfig:
        """The configuration, its M×N positional embeddings built; refused first (``check_positions``) when
        they cannot be built or cannot fit in the memory available."""
        task = self.task()
        self.check_positions(task)
        return build_config(
            task, self.mu, self.eta, self.eps, self.embedding, self.M, self.seed, self.loss, dtype
        )


#: The configurations written when none are chosen: the paper's log-loss -log(z + ε) (what a training
#: loop of the paper implements; other losses through ``--configs``) on circle walks with 0 < p < 1 and
#: the stuck p ∈ {0, 1}, and finite tasks, with the three embeddings and several μ, η, ε.
DEFAULT_SPECS = (
    FixtureSpec("circle", {"K": 3, "N": 3, "p": "1/2"}, "1", "1", "1/10", embedding="onehot", M=3),
    FixtureSpec("circle", {"K": 4, "N": 5, "p": "3/10"}, "7/2", "1", "1/10", M=7),
    FixtureSpec("circle", {"K": 5, "N": 4, "p": "1"}, "5/2", "1/2", "1/10", M=5),
    FixtureSpec("circle", {"K": 3, "N": 4, "p": "7/10"}, "2", "2", "1/4", embedding="random", M=6, seed=1),
    FixtureSpec("circle", {"K": 5, "N": 5, "p": "1/3"}, "3", "1", "1/10", M=6),
    FixtureSpec("circle", {"K": 4, "N": 4, "p": "0"}, "2", "1", "1/2", embedding="onehot", M=4),
    FixtureSpec("first_of_two", {"L": 3}, "1", "1", "1/10", M=5),
    FixtureSpec("majority", {"L": 3}, "2", "1/2", "1/2", embedding="onehot", M=4),
)


def read_specs(path: str | Path) -> list[FixtureSpec]:
    """The configurations of a JSON or YAML file: a list (or {"configs": [...]}) of objects with
    ``family``, ``params`` (a catalogue task, as in a task spec) and ``mu``, ``eta``, ``eps``, and
    optionally ``loss``, ``embedding``, ``M``, ``seed``, read by ``rwtoolkit.io.read_data_file`` (numbers exactly as
    written). An error is one line naming the file, the entry's key (``[0].loss``) and what is allowed."""
    from rwtoolkit.engines.numeric import POS_KINDS
    from rwtoolkit.io import (
        Anything,
        At,
        Choice,
        ConfigError,
        Integer,
        ListOf,
        MappingOf,
        Optional,
        Rational,
        Record,
        plain,
    )
    from rwtoolkit.tasks import FAMILIES

    positive = Rational(0, low_open=True)
    entry_fields = {
        "family": Choice(*FAMILIES),
        "params": MappingOf(Anything("the family's parameters")),
        "mu": positive,
        "eta": positive,
        "eps": positive,
        "loss": Choice(*LOSSES),
        "embedding": Choice(*POS_KINDS),
        "M": Optional(Integer(1)),
        "seed": Integer(0),
    }
    entries = ListOf(Record(entry_fields, required=("family", "params", "mu", "eta", "eps")))
    path = Path(path)
    data = read_data_file(path, "--configs")
    at = At(str(path))
    if isinstance(data, dict):  # {configs: [...]}
        Record({"configs": Anything("a list of configurations")}, required=("configs",)).check(data, at)
        at, data = at / "configs", data["configs"]
    checked = entries.check(data, at)
    specs = []
    for i, entry in enumerate(checked):
        where = at / i
        params = plain(entry["params"])
        try:
            task = make_task(entry["family"], params, where=str(where / "params"))  # type: ignore[arg-type]
        except ValueError as err:
            raise ConfigError(str(err)) from None
        spec = FixtureSpec(
            family=entry["family"],
            params=params,  # type: ignore[arg-type]
            mu=str(entry["mu"]),
            eta=str(entry["eta"]),
            eps=str(entry["eps"]),
            loss=entry.get("loss", "log"),
            embedding=entry.get("embedding", "sine"),
            M=entry.get("M"),
            seed=entry.get("seed", 0),
        )
        try:
            spec.check_positions(task)
        except ValueError as err:
            raise where.error(str(err)) from None
        if not all(v.is_number for v in task.population().prob_values):
            raise (where / "params").error(
                "the task's probabilities must be numbers (no symbols) for float oracles; allowed: numbers"
            )
        specs.append(spec)
    return specs


def _task_json(spec: FixtureSpec, config: CheckConfig) -> dict:
    return {
        "family": spec.family,
        **{k: str(v) for k, v in spec.params.items()},
        "K": config.K,
        "N": config.N,
    }


def fixture_id(index: int, spec: FixtureSpec) -> str:
    """A file-safe id: index, family and the task's parameters.

    >>> fixture_id(1, FixtureSpec("circle", {"K": 4, "N": 5, "p": "3/10"}, "1", "1", "1/10"))
    '01-circle-K4-N5-p3_10'
    """
    parts = [f"{k}{str(v).replace('/', '_')}" for k, v in spec.params.items()]
    return "-".join([f"{index:02d}", spec.family, *parts])


#: The positional embeddings of a fixture (M×N float64, ``rwtoolkit.engines.numeric.positional_embeddings``), per entry:
#: seconds to build them by kind (a QR for "random", sines for "sine") and to save them as .npy, and the peak
#: memory while they are built and saved, in units of the array's 8·M·N bytes (measured on the 2-core
#: machine, M = 10^6 and 10^7, N = 4: 1.0e-7, 1.75e-7 and 4e-8 s; 2.5 and 5 arrays).
_P_SECONDS = {"sine": 1.0e-7, "random": 1.75e-7, "onehot": 1e-8}
_P_SAVE_SECONDS = 4e-8
_P_ARRAYS = {"sine": 2.5, "random": 5.0, "onehot": 3.0}
#: Bytes of a manifest entry (the files every folder gets are counted as they are: ``runtime_files``).
_MANIFEST_ENTRY_BYTES = 2_000


def positions_memory(kind: str, M: int, N: int) -> int:
    """Peak bytes of building and saving M×N positional embeddings of ``kind`` (``_P_ARRAYS`` arrays of 8·M·N).

    >>> positions_memory("random", 10**6, 4) / 2**20
    152.587890625
    """
    return int(_P_ARRAYS.get(kind, _P_ARRAYS["random"]) * 8 * M * N)


def estimate_fixtures(specs: Sequence[FixtureSpec], steps: int) -> JobEstimate:
    """What writing the fixtures of ``specs`` at t = 0..``steps`` costs, before any work: seconds, peak memory
    and bytes written (``header_bytes``: the oracles' headers, manifest and copied files; ``per_input_bytes``:
    the per-input columns and the positional embeddings).

    Every size of a configuration counts: the exact job of its task (``rwtoolkit.engines.exact.job_estimate`` with per-input
    values: K, N, the population, the steps; the near-tie test of each dtype, on the groups' f, is a few
    percent of it), and its M×N positional embeddings (built, saved and written). One configuration is in
    memory at a time (its trajectory is not kept once written). Nothing is built here but the tasks (their
    constructors refuse sizes they cannot enumerate).

    >>> est = estimate_fixtures(DEFAULT_SPECS, 2)
    >>> est.seconds < 60, est.memory < 2**30, est.file_bytes < 2**20
    (True, True, True)
    >>> huge = FixtureSpec("circle", {"K": 3, "N": 4, "p": "1/2"}, "1", "1", "1/10", M=10**12)
    >>> estimate_fixtures([huge], 0).memory > 10**13
    True
    """
    seconds, memory = START_ESTIMATE.seconds, START_ESTIMATE.memory
    header, columns = sum(source.stat().st_size for source, _ in runtime_files()), 0
    for spec in specs:
        task = spec.task()
        est = job_estimate(task, steps, per_input=True)
        N = task.N
        M = N + 1 if spec.M is None else spec.M  # build_config's default
        entries = M * N
        seconds += est.seconds - START_ESTIMATE.seconds
        seconds += (_P_SECONDS.get(spec.embedding, _P_SECONDS["random"]) + _P_SAVE_SECONDS) * entries
        memory = max(memory, est.memory + positions_memory(spec.embedding, M, N))
        header += est.header_bytes + _MANIFEST_ENTRY_BYTES
        columns += est.per_input_bytes + 8 * entries + 128
    return JobEstimate(seconds, memory, header, columns)


def runtime_files() -> list[tuple[Path, str]]:
    """What ``emit_fixtures`` copies into a fixture folder, as it is: (source, name in the folder) for every
    module of the package ``rwtoolkit.runtime`` (to ``rwcheck_runtime/``), the test file and its conftest.py.

    >>> sorted(name for _, name in runtime_files())[:3]
    ['conftest.py', 'rwcheck_runtime/__init__.py', 'rwcheck_runtime/_config.py']
    """
    package = Path(rwtoolkit.runtime.__file__).parent
    here = Path(__file__).parent
    return [(path, f"{RUNTIME_FOLDER}/{path.name}") for path in sorted(package.glob("*.py"))] + [
        (here / source, name) for source, name in _TEST_FILES
    ]


def _toolkit_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rwtoolkit")
    except PackageNotFoundError:
        return "unknown"


def emit_fixtures(
    folder: str | Path,
    specs: Sequence[FixtureSpec] = DEFAULT_SPECS,
    steps: int = 2,
    implementation: str | None = None,
    command: str = "",
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Write the frozen fixtures of ``specs`` (t = 0..``steps``) into ``folder``; returns the manifest's path.

    Every file is written atomically; the same specs, steps and implementation give the same bytes.

    Examples
    --------
    >>> import tempfile
    >>> manifest = emit_fixtures(tempfile.mkdtemp(), DEFAULT_SPECS[:1], steps=1)
    >>> sorted(p.name for p in manifest.parent.iterdir())
    ['conftest.py', 'manifest.json', 'oracles', 'rwcheck_runtime', 'test_rwcheck_fixtures.py']
    """
    from rwtoolkit.analyses.check._check import tolerance_rule

    folder = Path(folder)
    files: dict[str, str] = {}

    def put(name: str, data: bytes) -> None:
        write_bytes_atomic(data, folder / name)
        files[name] = hashlib.sha256(data).hexdigest()

    entries: list[dict[str, Any]] = []
    for index, spec in enumerate(specs):
        ident = fixture_id(index, spec)
        if progress is not None:
            progress(ident)
        config = spec.check_config()
        traj = exact_trajectory(config, steps, memo=False)  # written once: not kept
        header = write_oracle(traj, folder / "oracles" / f"{ident}.json", per_input=True)
        for path in (header, header.with_name(f"{ident}.inputs.npz")):
            files[f"oracles/{path.name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(config.P, dtype=np.float64), allow_pickle=False)
        put(f"oracles/{ident}.P.npy", buffer.getvalue())
        entries.append(
            {
                "id": ident,
                "description": config.describe(),
                "config": {
                    "task": _task_json(spec, config),
                    "K": config.K,
                    "N": config.N,
                    "M": config.M,
                    "mu": str(config.mu),
                    "eta": str(config.eta),
                    "eps": str(config.eps),
                    "loss": config.loss,
                    "embedding": config.embedding,
                    "seed": config.seed,
                },
                "steps": steps,
                "oracle": f"oracles/{ident}.json",
                "P": f"oracles/{ident}.P.npy",
                "rtol": {d: tolerance(replace(config, dtype=d), steps).rtol for d in DTYPES},
                "tie_rtol": {d: DEFAULT_TIE_RTOL[d] for d in DTYPES},
                "accuracy_not_compared": {d: sorted(near_tie_steps(traj, d)) for d in DTYPES},
            }
        )
    for source, name in runtime_files():
        put(name, source.read_bytes())
    manifest = {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "toolkit": {"name": "rwtoolkit", "version": _toolkit_version()},
        "command": command,
        "implementation": implementation,
        "tolerance_rule": {d: tolerance_rule(d) for d in DTYPES},
        "quantities": ["V", "W_xN", "S", "f", "loss", "accuracy"],
        "configs": entries,
        "files": dict(sorted(files.items())),
    }
    return write_json_atomic(manifest, folder / "manifest.json")
