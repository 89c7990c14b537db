"""Run every property on one implementation and collect a conformance report (what ``rw check`` prints)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st

from rwtoolkit.analyses.check._compare import (
    MARGIN,
    REFERENCE_NOTE,
    Mismatch,
    reference_engine,
    trajectory_key,
    unit_roundoff,
)
from rwtoolkit.analyses.check._config import (
    CheckConfig,
    config_json,
    model_of,
    optimizer_of,
    schedule_of,
    stages_of,
)
from rwtoolkit.analyses.check._isolation import isolated_search
from rwtoolkit.analyses.check._models import (
    ONE_LAYER_ONLY,
    VALUE_MATRIX_ONLY,
    ZERO_START_ONLY,
    parameter_names,
    trajectory_statements,
)
from rwtoolkit.analyses.check._properties import (
    PROPERTIES,
    TRAJECTORY,
    CheckOptions,
    ImplementationCrash,
    Property,
)
from rwtoolkit.analyses.check._protocol import LABELS, Factory, ImplementationError, Readouts, probe
from rwtoolkit.analyses.check._settings import check_settings
from rwtoolkit.engines.exact import START_ESTIMATE, JobEstimate
from rwtoolkit.io import load_schema, write_json_atomic
from rwtoolkit.models import get_model

STATUSES = ("pass", "fail", "not checked")


@dataclass
class PropertyResult:
    """One row of the report: a property's id, statement, status and, for a failure, where it diverged."""

    id: str
    statement: str
    status: str
    reason: str = ""
    failure: dict | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "statement": self.statement,
            "status": self.status,
            "reason": self.reason,
            "failure": self.failure,
            "notes": sorted(set(self.notes)),
        }


@dataclass
class Report:
    """The conformance report of one implementation; ``exit_code`` 0 when nothing failed, 1 otherwise."""

    implementation: str
    protocol: str
    options: CheckOptions
    results: list[PropertyResult]
    #: What a sequence model's trajectories were compared with (``describe_reference``), one entry per kind.
    references: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if any(r.status == "fail" for r in self.results) else 0

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in STATUSES}

    def to_json(self) -> dict:
        o = self.options
        options: dict = {
            "steps": o.steps,
            "examples": o.examples,
            "dtype": o.dtype,
            "task": o.task,
            "losses": list(o.losses),
        }
        if o.generic:  # the paper's model writes the report it always wrote
            options["model"] = get_model(o.model, d=o.head_dim, H=o.heads).describe()
        if o.objective is not None:  # a sequence model
            options["objective"] = o.objective
            if o.optimizer is not None:
                options["optimizer"] = o.optimizer.describe()
            if o.schedule is not None:
                options["schedule"] = o.schedule.text
            if o.stages is not None:
                options["stages"] = [[n, sorted(names)] for n, names in o.stages]
            if self.references:
                options["reference"] = "; ".join(self.references)
        return {
            "implementation": self.implementation,
            "protocol": self.protocol,
            "options": options,
            "tolerance": tolerance_rule(o.dtype, o.objective is not None),
            "properties": [r.to_json() for r in self.results],
            "counts": self.counts(),
            "exit_code": self.exit_code,
        }

    def render(self) -> str:
        o = self.options
        lines = [
            f"rw check {self.implementation}: protocol {self.protocol}, {o.dtype}, t = 0..{o.steps}, "
            f"{o.examples} examples per property, task {o.task}, "
            + (f"objective {o.objective}" if o.objective else f"loss {', '.join(o.losses)}")
            + ("" if o.optimizer is None else f", optimizer {o.optimizer.name}")
            + ("" if o.schedule is None else f", schedule {o.schedule.text}")
            + ("" if o.stages is None else f", stages {_stages_text(o.stages)}")
            + _model_text(o),
            f"tolerance: {tolerance_rule(o.dtype, o.objective is not None)}",
            *(["reference: " + "; ".join(self.references)] if self.references else []),
            "",
        ]
        width = max(len(s) for s in STATUSES)
        for r in self.results:
            lines.append(f"{r.status.upper():<{width}}  {r.id}: {r.statement}")
            if r.reason:
                lines.append(f"{'':<{width}}    {r.reason}")
            if r.failure is not None:
                lines.append(f"{'':<{width}}    minimal configuration: {r.failure['config_text']}")
                lines.append(f"{'':<{width}}    first divergence: {r.failure['text']}")
            for note in sorted(set(r.notes)):
                lines.append(f"{'':<{width}}    note: {note}")
        c = self.counts()
        lines += ["", f"{c['pass']} pass, {c['fail']} fail, {c['not checked']} not checked"]
        return "\n".join(lines)


def _stages_text(stages: Sequence[tuple[int, Collection[str]]]) -> str:
    """The stages as ``--stages`` writes them, each with the parameter names its globs matched."""
    return ",".join(f"{'|'.join(sorted(names))}={n}" for n, names in stages)


def _model_text(options: CheckOptions) -> str:
    """ ", model key_query d=2 (P = rational_positions(N, μ))" for a model other than the paper's, else ""."""
    if not options.generic:
        return ""
    described = get_model(options.model, d=options.head_dim, H=options.heads).describe()
    words = [str(described.pop("name"))] + [f"{k}={v}" for k, v in described.items()]
    if options.objective is not None:  # a sequence model: token ids, no P; its reference on the next line
        return f", model {' '.join(words)} (rwtoolkit.models.descend from its own start)"
    return f", model {' '.join(words)} (exact: rwtoolkit.models.descend, P = rational_positions(N, μ))"


def tolerance_rule(dtype: str, sequence: bool = False) -> str:
    """The tolerance rule printed in every report, with the dtype's unit roundoff; ``sequence``: a sequence
    model's (no positional embeddings: μ = 1 in the rule; no accuracy compared)."""
    unit = unit_roundoff(dtype)
    if sequence:
        return (
            f"relative to max(1, max |expected|): rtol = {MARGIN}·u·(1 + ηT), u = {unit:.3g} ({dtype} unit "
            "roundoff), because a GD step is a few hundred roundings and exp of a logit l adds u·|l| (the rule "
            "of the paper's model with μ = 1: a sequence model has no positional embeddings P), times (1 + ηT/ε) "
            "under adam or adamw (the update divides by √v̂ + ε ≥ ε, so a rounding δ of a gradient entry moves it by "
            "up to ηδ/ε); the bugs this suite targets move some value by 1e-3 or more."
        )
    return (
        f"relative to max(1, max |expected|): rtol = {MARGIN}·u·(1 + μ²ηT), u = {unit:.3g} ({dtype} unit "
        "roundoff), because a GD step is a few hundred roundings and exp of a logit l adds u·|l| with "
        "|l| ≤ 1 + μ²ηT; the bugs this suite targets move some value by 1e-3 or more. Accuracies are "
        "compared exactly (1e-12 for float sums), except at steps with an exact near-tie in f."
    )


def hypothesis_test(
    prop: Property, factory: Factory, options: CheckOptions, quiet: bool, sink: list[str] | None = None
) -> Callable[[], None]:
    """The property as a hypothesis test (``st.data()`` drawn inside): calling it runs the search.

    ``quiet``: derandomized, no example database, nothing printed (the CLI); otherwise hypothesis'
    active profile decides and a failure prints the falsifying example (pytest).
    """
    # No explain phase: it reruns the minimal example many times only to annotate hypothesis' printout,
    # and the Mismatch message already names the step, the quantity and both values.
    kwargs: dict = {
        "max_examples": options.examples,
        "deadline": None,
        "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much],
        "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    }
    if quiet:
        kwargs.update(derandomize=True, database=None, verbosity=Verbosity.quiet, print_blob=False)

    @settings(**kwargs)
    @given(data=st.data())
    def test(data: st.DataObject) -> None:
        notes = prop.body(factory, data, options)
        if sink is not None:
            sink.extend(notes)

    test.__name__ = test.__qualname__ = f"check_{prop.id}"
    return test


@dataclass(frozen=True)
class CheckEstimate:
    """What a check costs before any work: ``seconds``, peak ``memory``, and the exact reference trajectories
    behind them (``trajectories`` distinct configurations, the ``costliest`` described with its seconds)."""

    seconds: float
    memory: int
    trajectories: int
    costliest: str
    costliest_seconds: float
    #: The configurations drawn ahead: every example's, or the first ``_DRAWN`` standing for them all.
    drawn: int
    #: "exact", or "reference" for a sequence model (exact or certified balls, ``reference_engine``).
    kind: str = "exact"

    def describe(self) -> str:
        """'~12 s, ~310 MiB of memory (10 exact trajectories; the costliest ~3.1 s: CircleWalk(...), ...)'."""
        from rwtoolkit.io import format_bytes

        count = f"{self.trajectories}" if self.drawn >= self.trajectories else f"~{self.trajectories}"
        return (
            f"~{self.seconds:.3g} s, ~{format_bytes(self.memory)} of memory ({count} {self.kind} trajectories; the "
            f"costliest ~{self.costliest_seconds:.3g} s: {self.costliest})"
        )


#: The check's own costs besides the exact trajectories, measured on the 2-core machine with the reference
#: implementations at --steps 0 (where the exact work is nil): seconds and bytes of the process (interpreter,
#: SymPy, hypothesis), with torch loaded (by the implementation's module) and without, and seconds of one
#: example of one property (drawing, running the implementation, comparing).
_PROCESS, _PER_EXAMPLE = {True: (2.5, 300e6), False: (1.0, 100e6)}, 0.02
#: At most this many configurations are drawn ahead (a few milliseconds each); beyond, the estimate scales.
_DRAWN = 100
#: The exact trajectories kept at once (the memos of ``rwtoolkit.analyses.check._compare`` clear beyond).
_KEPT = 257


def drawn_configs(options: CheckOptions) -> list[CheckConfig]:
    """The configurations the trajectory property's search draws for ``options``, in order, without running
    anything: the same derandomised search (its seed is the search's, its draws the property's), with a body
    that only records what it drew. A search that finds a failure shrinks it on further, smaller
    configurations, which this does not see."""
    drawn: list[CheckConfig] = []

    def record(factory: Factory, data: st.DataObject, opts: CheckOptions) -> list[str]:
        drawn.append(data.draw(opts.configs(), label="config"))
        return []

    prop = next(p for p in PROPERTIES if p.id == "trajectory")
    with isolated_search():
        hypothesis_test(replace(prop, body=record), _no_factory, options, quiet=True)()
    return drawn


def _no_factory(config: CheckConfig) -> None:
    raise AssertionError("drawn_configs runs no implementation")


def reference_cost(config: CheckConfig, steps: int) -> tuple[float, int, int]:
    """Seconds, memory kept and memory in passing of the reference of one configuration, without the
    interpreter's start, by the estimate of the engine ``reference_engine`` selects (``Engine.load_estimate``).
    The exact engine's is called as ``rw derive`` calls it, with ``readouts``: the time of the trajectory with
    its per-input values and read-outs, the memory it keeps (without the oracle's files) and what passes
    besides while the per-input values are converted (the reduced engine's per-input oracle, an upper bound of
    the read-outs converted from it; nothing for the generic engine, which keeps all of it for the search's
    replays). The ball engine's (a sequence model's certified reference) as ``rw certify --model`` calls it:
    its seconds at its first precision and the memory of its recorded steps."""
    base = START_ESTIMATE  # the interpreter, in every estimate: counted once, by the check
    engine = reference_engine(config, steps)
    model = model_of(config)
    if engine.arithmetic == "balls":
        job = engine.load_estimate()(
            config.task,
            model,
            steps,
            eta=config.eta,
            init=config.init,
            objective=config.objective,
            optimizer=optimizer_of(config),
            schedule=schedule_of(config),
            stages=stages_of(config, steps),
        )
        # the recorded balls kept are a few kilobytes; what the run needs in passing is its tape
        return job.estimate.seconds, 0, max(0, job.estimate.memory - base.memory)
    plan = engine.load_estimate()

    def estimate(json: bool) -> JobEstimate:
        job = plan(config.task, model, steps, json=json, per_input=True, readouts=True, init=config.init)
        return job.estimate

    est, kept = estimate(True), estimate(False).memory
    return est.seconds - base.seconds, kept - base.memory, est.memory - kept


def estimate_check(options: CheckOptions) -> CheckEstimate:
    """What ``check`` costs for ``options``, before any work (``rw check`` refuses on it).

    The exact reference trajectories are the cost that grows: one per distinct configuration the trajectory
    property draws (``drawn_configs``, the search's own draws; with more than ``_DRAWN`` examples the first
    ``_DRAWN`` stand for all), each estimated from every size of it (K, N, the population, M, the model and its
    H and d, the steps: ``reference_cost``) and kept in memory for the search's replays. Besides them the
    process (with torch when a module the process imported, the implementation's, loaded it) and every
    example of every property (``_PER_EXAMPLE``). The implementation's own time is not known before it runs
    (the reference implementations take milliseconds an example); a failure's shrinking replays further,
    smaller configurations.

    >>> est = estimate_check(CheckOptions(steps=2, examples=3))
    >>> est.trajectories, 1 < est.seconds < 60
    (3, True)
    """
    drawn = drawn_configs(replace(options, examples=min(options.examples, _DRAWN)))
    costs: dict[tuple, tuple[tuple[float, int, int], CheckConfig]] = {}
    for config in drawn:
        key = trajectory_key(config, options.steps)
        if key not in costs:
            costs[key] = (reference_cost(config, options.steps), config)
    scale = options.examples / len(drawn)  # 1 unless only the first _DRAWN were drawn
    seconds = {key: cost[0] for key, (cost, _) in costs.items()}
    kept = sum(cost[1] for cost, _ in costs.values()) * min(scale, _KEPT / len(drawn))
    passing = max((cost[2] for cost, _ in costs.values()), default=0)
    costliest = max(seconds, key=lambda key: seconds[key])
    start, process = _PROCESS["torch" in sys.modules]
    return CheckEstimate(
        seconds=start + _PER_EXAMPLE * options.examples * len(PROPERTIES) + sum(seconds.values()) * scale,
        memory=int(process + kept + passing),
        trajectories=round(len(costs) * scale),
        costliest=costs[costliest][1].describe(),
        costliest_seconds=seconds[costliest],
        drawn=len(drawn),
        kind="exact" if options.objective is None else "reference",
    )


def check(
    factory: Factory,
    options: CheckOptions | None = None,
    name: str = "implementation",
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Check ``factory``'s implementation against every property; the report says pass / fail / not checked.

    Raises ``ImplementationError`` (one line) when the implementation does not follow the protocol.

    Examples
    --------
    >>> import torch
    >>> def frozen(config):  # never trains
    ...     while True:
    ...         yield torch.zeros(config.K, config.K), torch.zeros(config.K + config.M, config.K + config.M)
    >>> report = check(frozen, CheckOptions(steps=1, examples=2))
    >>> [(r.id, r.status) for r in report.results][:2], report.exit_code
    ([('V', 'fail'), ('W_xN', 'not checked')], 1)
    """
    options = CheckOptions() if options is None else options
    # What the process holds before the check (the frameworks, the user's modules) is not the check's
    # garbage: frozen, collections skip it. Hypothesis forces one full collection per process when it
    # first seeds its PRNG, about 0.1 s with torch loaded and 0.2 s with JAX too; frozen, a few ms.
    # A process that froze objects itself is left as it is (unfreezing would release its objects too).
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    try:
        readouts = probe(
            factory,
            options.dtype,
            options.model,
            options.head_dim,
            options.heads,
            options.objective,
            options.optimizer,
            options.schedule,
            options.stages,
            options.steps,
        )
        with _one_torch_thread():
            return _check(factory, options, name, progress, readouts)
    finally:
        if freeze:
            gc.unfreeze()


@contextmanager
def _one_torch_thread() -> Iterator[None]:
    """torch on one thread while the check runs (the tensors are tiny: more threads only wait on each
    other), when the implementation uses torch: after the probe, which has run it once, torch is loaded
    if it ever will be. A NumPy or JAX implementation never loads it (nor does the kit for it)."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _check(
    factory: Factory,
    options: CheckOptions,
    name: str,
    progress: Callable[[str], None] | None,
    readouts: Readouts,
) -> Report:
    rows = (
        trajectory_statements(options.model, options.head_dim, TRAJECTORY, options.objective)
        if options.generic
        else TRAJECTORY
    )
    results: list[PropertyResult] = []
    references: list[str] = []
    for prop in PROPERTIES:
        if progress is not None:
            progress(prop.id)
        if prop.id == "trajectory":
            results += _trajectory_rows(prop, factory, options, readouts, rows, references)
            continue
        reason = _not_checked(prop, options, readouts)
        if reason is not None:
            results.append(PropertyResult(prop.id, prop.statement, "not checked", reason))
            continue
        notes: list[str] = []
        error = _search(prop, factory, options, notes)
        result = _row(prop.id, prop.statement, error, notes)
        if prop.id == "theorem_4_1_symmetry":
            result.notes += [
                f"{LABELS[q]} part not checked: {readouts.missing_reason(q)}"
                for q in ("S", "accuracy")
                if not readouts.provided(q)
            ]
        results.append(result)
    return Report(name, readouts.protocol, options, results, references)


def _not_checked(prop: Property, options: CheckOptions, readouts: Readouts) -> str | None:
    """Why ``prop`` is not checked for these options and this implementation, or None when it is."""
    if options.generic and prop.id in ONE_LAYER_ONLY:
        return f"a statement about the paper's model (one_layer), not --model {options.model}"
    init = check_settings(options.model).init
    if options.generic and prop.id in ZERO_START_ONLY and init != "zero":
        why = "its own start" if init == "own" else "from zero it never moves"
        return (
            f"a statement about the zero start; --model {options.model} is checked from config.start "
            f"(init {init}: {why})"
        )
    if (
        options.generic
        and prop.id in VALUE_MATRIX_ONLY
        and "V" not in parameter_names(options.model, options.head_dim)
    ):
        return f"a statement about the value matrix V of f = V X S; --model {options.model} has none"
    if prop.id == "P_only_through_mu" and readouts.P is not None:
        return "the implementation keeps its own P, so the config's two embeddings never reach it"
    if options.steps < prop.min_steps:
        return f"needs --steps >= {prop.min_steps}"
    return None


def _search(
    prop: Property, factory: Factory, options: CheckOptions, notes: list[str]
) -> BaseException | None:
    """Run the hypothesis search; the minimal failing example's exception, or None when it passed."""
    try:
        with isolated_search():
            hypothesis_test(prop, factory, options, quiet=True, sink=notes)()
    except ImplementationError:
        raise
    except (Mismatch, ImplementationCrash) as err:
        return err
    return None


def _failure(error: BaseException) -> tuple[dict, str]:
    if isinstance(error, Mismatch):
        d = error.divergence
        return {**d.to_json(), "text": d.describe()}, d.quantity
    if not isinstance(error, ImplementationCrash):
        raise TypeError(
            f"a property failed with {type(error).__name__}, neither a Mismatch nor an ImplementationCrash"
        )
    return {
        "step": None,
        "quantity": None,
        "index": [],
        "expected": None,
        "got": None,
        "error": None,
        "rtol": None,
        "config": config_json(error.config),
        "config_text": error.config.describe(),
        "text": str(error),
    }, ""


def _row(pid: str, statement: str, error: BaseException | None, notes: list[str]) -> PropertyResult:
    if error is None:
        return PropertyResult(pid, statement, "pass", notes=notes)
    failure, _ = _failure(error)
    return PropertyResult(pid, statement, "fail", failure=failure, notes=notes)


def _trajectory_rows(
    prop: Property,
    factory: Factory,
    options: CheckOptions,
    readouts,
    statements: dict[str, str],
    references: list[str],
) -> list[PropertyResult]:
    """One search over the trajectory, reported per read-out: pass, fail at the first divergence, not checked.
    The references the search compared with (its notes "reference: ...") go to ``references``."""
    found: list[str] = []
    error = _search(prop, factory, options, found)
    references += sorted({n[len(REFERENCE_NOTE) :] for n in found if n.startswith(REFERENCE_NOTE)})
    notes = [n for n in found if not n.startswith(REFERENCE_NOTE)]
    failure, quantity = _failure(error) if error is not None else (None, "")
    rows = []
    marked = False  # a crash (no quantity) fails the first row the implementation provides
    for q, statement in statements.items():
        if q == quantity and failure is not None:  # P fails whether or not the probe reported one
            rows.append(PropertyResult(q, statement, "fail", failure=failure))
            marked = True
        elif q == "P" and not readouts.provided(q):
            continue  # a row only for an implementation that keeps its own P
        elif not readouts.provided(q):
            rows.append(PropertyResult(q, statement, "not checked", readouts.missing_reason(q)))
        elif failure is None:
            rows.append(PropertyResult(q, statement, "pass", notes=notes if q == "accuracy" else []))
        elif not quantity and not marked:
            rows.append(PropertyResult(q, statement, "fail", failure=failure))
            marked = True
        else:
            rows.append(
                PropertyResult(
                    q,
                    statement,
                    "not checked",
                    f"the trajectory diverged first at {failure['text'].split(':')[0]}",
                )
            )
    return rows


def write_report(report: Report, path: str | Path) -> Path:
    """Validate the report against its schema and write it atomically (same report, same bytes)."""
    import jsonschema

    data = report.to_json()
    jsonschema.validate(data, load_schema("report"))
    return write_json_atomic(data, path)
