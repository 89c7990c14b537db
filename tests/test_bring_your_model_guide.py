"""The "Bring your model" guide lists exactly the neutral ops the traced program interprets."""

import re
from pathlib import Path

from rwtoolkit.models.traced import OP_TABLE

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "bring-your-model.md"


def test_the_guide_lists_every_op_of_the_table_and_no_other():
    listed = re.findall(r"^\| `([a-z_]+)` \|", GUIDE.read_text(encoding="utf-8"), flags=re.M)
    assert listed == list(OP_TABLE)
