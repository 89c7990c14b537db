"""The abstract test class users subclass: name the factory once, get one test per property."""

from __future__ import annotations

from typing import Any, ClassVar

from rwtoolkit.analyses.check._check import hypothesis_test
from rwtoolkit.analyses.check._properties import PROPERTIES, CheckOptions, Property
from rwtoolkit.analyses.check._protocol import Factory

#: Options set by the pytest plugin (``--rwcheck-steps``, ``--rwcheck-examples``, ``--rwcheck-dtype``).
PLUGIN_OPTIONS: dict[str, object] = {}


class ConformanceTests:
    """Subclass as ``class TestMine(ConformanceTests): factory = staticmethod(my_factory)``; run with pytest.

    Each ``test_*`` method runs one property as a hypothesis test whose configurations are drawn
    inside the test (``st.data()``), so hypothesis shrinks a failure to a minimal configuration and
    replays it from its example database. ``steps``, ``examples``, ``dtype`` and ``task`` default to the
    pytest plugin's options (then to ``CheckOptions``'s defaults); set them as class attributes to fix them.

    The class name does not start with ``Test``, so pytest collects only your subclass.

    Examples
    --------
    >>> class TestMine(ConformanceTests):
    ...     factory = staticmethod(lambda config: iter(()))
    >>> sorted(name for name in dir(TestMine) if name.startswith("test_"))[:2]
    ['test_P_only_through_mu', 'test_W_first_columns_zero']
    """

    factory: ClassVar[Factory | None] = None
    steps: ClassVar[int | None] = None
    examples: ClassVar[int | None] = None
    dtype: ClassVar[str | None] = None
    task: ClassVar[str | None] = None
    losses: ClassVar[tuple[str, ...] | None] = None

    def options(self) -> CheckOptions:
        """The effective options: class attributes, then the plugin's, then the defaults."""
        chosen: dict[str, Any] = {}  # each value is checked (type and range) by CheckOptions.__post_init__
        for name in ("steps", "examples", "dtype", "task", "losses"):
            value: Any = getattr(self, name)
            if value is None:
                value = PLUGIN_OPTIONS.get(name)
            if value is not None:
                chosen[name] = tuple(value) if name == "losses" else value
        return CheckOptions(**chosen)

    def _run(self, pid: str) -> None:
        factory = getattr(type(self), "factory", None)
        if factory is None:
            raise TypeError(
                f"{type(self).__name__} must set the class attribute factory (a callable config -> model)"
            )
        prop: Property = next(p for p in PROPERTIES if p.id == pid)
        options = self.options()
        if options.steps < prop.min_steps:
            options = CheckOptions(
                prop.min_steps, options.examples, options.dtype, options.task, options.losses
            )
        hypothesis_test(prop, factory, options, quiet=False)()

    def test_trajectory_matches_exact(self) -> None:
        """V, W x̃_N, S, f, loss and accuracy at t = 0..T equal the exact trajectory."""
        self._run("trajectory")

    def test_W_first_columns_zero(self) -> None:
        """W11 = W21 = 0 at every step."""
        self._run("W_first_columns_zero")

    def test_lemma_C1_first_value_step(self) -> None:
        """V(1) of Lemma C.1 in closed form."""
        self._run("lemma_C1_first_value_step")

    def test_theorem_4_1_symmetry(self) -> None:
        """Theorem 4.1's symmetry at p ∈ {0, 1}, N = rK + 1."""
        self._run("theorem_4_1_symmetry")

    def test_P_only_through_mu(self) -> None:
        """The trajectory depends on P only through μ."""
        self._run("P_only_through_mu")
