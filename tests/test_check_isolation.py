"""``rw check`` draws the same configurations whatever the user's process has imported.

Hypothesis (6.13x and later) mixes constants from the source of local modules into its draws; the kit's
search turns that off (rwtoolkit/analyses/check/_isolation.py). The oracle is the kit's own first run: importing a module
full of in-range integer and float literals must not change the configurations drawn next. Without the
isolation it does (seen on hypothesis 6.170 when this test was written), so the test
fails if a hypothesis release moves the hooks it swaps.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from hypothesis.internal.conjecture import providers

from rwtoolkit.analyses.check import CheckOptions, check, load_factory

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "plain_torch.py"


def _drawn(options: CheckOptions) -> list[str]:
    """The configurations ``check`` hands the factory, in order."""
    inner = load_factory(f"{EXAMPLE}:model")
    seen: list[str] = []

    def factory(config):
        seen.append(config.describe())
        return inner(config)

    assert check(factory, options).exit_code == 0
    return seen


def test_draws_do_not_follow_the_imported_modules(tmp_path, monkeypatch) -> None:
    options = CheckOptions(steps=2, examples=10)
    before = _drawn(options)
    literals = ", ".join([str(i) for i in range(400)] + [repr(i / 7) for i in range(1, 200)])
    (tmp_path / "many_literals.py").write_text(f"VALUES = [{literals}]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "many_literals", raising=False)
    importlib.import_module("many_literals")
    try:
        after = _drawn(options)
    finally:
        sys.modules.pop("many_literals", None)
    assert len(before) == 61
    assert after == before


def test_hypothesis_is_restored_after_the_search() -> None:
    """The user's own hypothesis tests in the same process still see their local constants."""
    collect = providers._get_local_constants
    check(load_factory(f"{EXAMPLE}:model"), CheckOptions(steps=1, examples=2))
    assert providers._get_local_constants is collect
