"""docs/guide/optimizers.md's Python example of schedules, per-parameter rates and stages runs as written."""

import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "optimizers.md"


def test_the_guides_descend_example_runs_as_written():
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)
    (example,) = [b for b in blocks if "descend(" in b]
    namespace: dict = {}
    exec(compile(example, str(GUIDE), "exec"), namespace)  # its own assert: V waits for the second stage
    states, start = namespace["states"], namespace["start"]
    assert len(states) == 6
    assert (states[5].params["V"] != start["V"]).any()  # and moves in it
