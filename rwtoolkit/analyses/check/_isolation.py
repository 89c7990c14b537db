"""The kit's own hypothesis search, isolated from the user's working directory and source files.

``rw check`` draws its configurations derandomised: the same options must draw the same configurations
on every machine. Hypothesis 6.13x and later (a) mixes into its draws constants it collects from the
source of every imported module outside site-packages and the standard library (the user's factory,
their other modules, the toolkit itself when installed editable), and (b) caches those constants under
``.hypothesis/`` in the working directory. So without isolation the configurations drawn would change
with what the user's process imported and how the toolkit was installed, and a check would write into
the user's directory. ``isolated_search`` turns both off for the duration of the kit's quiet search and
restores hypothesis' state afterwards, so the user's own hypothesis tests in the same process are as
before. The pytest plugin's search (the user's hypothesis profile) is left as hypothesis runs it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def isolated_search() -> Iterator[None]:
    """Hypothesis with its storage in a temporary directory and no constants from local source files.

    Examples
    --------
    >>> from hypothesis.internal.conjecture import providers
    >>> with isolated_search():
    ...     len(providers._get_local_constants())
    0
    """
    from hypothesis.configuration import set_hypothesis_home_dir, storage_directory

    previous = storage_directory(intent_to_write=False).home_directory
    with tempfile.TemporaryDirectory(prefix="rw-check-hypothesis-") as home, _no_local_constants():
        set_hypothesis_home_dir(home)
        try:
            yield
        finally:
            set_hypothesis_home_dir(previous)


@contextmanager
def _no_local_constants() -> Iterator[None]:
    """Hypothesis' draws without constants from local modules (a no-op for versions that have none).

    Hypothesis reads them through ``providers._get_local_constants`` and memoises the in-range ones per
    kind of draw in ``providers.CONSTANTS_CACHE``; both are swapped for the duration (the memo emptied on
    entry and on exit, so no entry crosses the boundary either way). tests/test_check_isolation.py fails if
    a hypothesis release moves them and the drawn configurations start to follow the imported modules.
    """
    from hypothesis.internal.conjecture import providers

    collect = getattr(providers, "_get_local_constants", None)
    if collect is None:  # hypothesis before local constants: the draws never read the user's source
        yield
        return
    memo = providers.CONSTANTS_CACHE
    memo.cache.clear()
    providers._get_local_constants = providers.Constants
    try:
        yield
    finally:
        providers._get_local_constants = collect
        memo.cache.clear()
