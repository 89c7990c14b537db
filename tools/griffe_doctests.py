"""Griffe extension for the API reference: doctest examples written outside an ``Examples`` section.

The docstring convention is numpy style (``Parameters``, ``Returns``, ``Examples``). Many docstrings
also carry a short doctest right after their summary, without a section header; Markdown would read
``>>> f()`` and its output as prose (``[1, 2]`` even as a link). This extension wraps every such
block (a ``>>>`` line, its ``...`` continuations and the output lines up to the next blank line)
in a fenced ``pycon`` code block before the docstring is parsed. Blocks inside a numpy ``Examples``
section are left to the numpy parser, which already renders them as code.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SECTION = re.compile(r"^(Examples?)\s*$")


def fence_doctests(text: str) -> str:
    r"""Wrap bare doctest blocks of ``text`` in ```` ```pycon ```` fences (not inside ``Examples``).

    >>> fence_doctests("Sum.\n\n>>> 1 + 1\n2\n\nMore.").split("\n")
    ['Sum.', '', '```pycon', '>>> 1 + 1', '2', '```', '', 'More.']
    """
    lines = text.split("\n")
    out: list[str] = []
    in_examples = in_fence = in_block = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if _SECTION.match(stripped) and set(nxt) == {"-"}:
            in_examples = True
        if stripped.startswith("```"):
            in_fence = not in_fence
        if in_block and not stripped:
            out.append("```")
            in_block = False
        if not in_block and not in_fence and not in_examples and stripped.startswith(">>>"):
            out.append("```pycon")
            in_block = True
        out.append(line)
    if in_block:
        out.append("```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fence bare doctest blocks in every docstring (see the module docstring)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
