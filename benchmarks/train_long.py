"""A long float64 population run of `rw train` with checkpoints: the cost per step against the estimate.

Run by hand (`make bench` or `.venv/bin/python benchmarks/train_long.py [--steps 10000 100000]`). Each run is
`rw train --model examples/nanogpt_attention.py:two_layer` on in-context Markov chains (icl_markov, S = 2, N = 7:
length 6, 128 sequences) from the module's own start, objective lm, lr 0.3, float64, one torch thread,
recording every 100th step and writing a checkpoint every 1000 steps, in a fresh process. Prints a Markdown
table: steps, wall seconds, milliseconds per step, `rwtoolkit.engines.numeric.model_train_estimate`'s seconds and
their ratio, the bytes of metrics.json and checkpoint.pt against the estimated files, and the final loss; exits 1
where the estimate falls below the measured time or files (the refusal would let through a run that does not fit).
The wall time includes the process's start (about 3 s: torch, tracing the module).

Measured 2026-12-03 (23:32:45-23:34:27 UTC) on the 2-core machine shared by four jobs (`uptime` load average
1.30 / 1.60 / 1.75 at the start, 1.95 / 1.74 / 1.79 at the end), `--steps 10000`:

| steps | wall (s) | ms / step | estimate (s) | estimate / measured | metrics.json | checkpoint.pt | estimated files | final loss |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
| 10000 | 93 | 9.3 | 184 | 1.98 | 15.4 KiB | 14.9 KiB | 53.8 KiB | 0.625705 |

10^5 steps by hand, interrupted and resumed (2026-12-03, 23:35:57-23:50:53 UTC, load average 1.61 / 1.68 / 1.76
at the start, 2.00 / 1.92 / 1.92 at the end): the same `rw train` command with `--steps 100000` (estimated
30.7 min, 91.7 MiB of memory, 279 KiB of files) killed by `timeout 840` after its checkpoint at step 94000, then
run again with `--resume` ("6000 steps, resuming at step 94000: estimated 110 s"), which took 53 s: 893 s of
wall time for the 10^5 steps and the at most 1000 taken twice (8.9 ms a step; estimate / measured 2.06);
metrics.json 106 KiB (1001 records) and checkpoint.pt 49.9 KiB against the 279 KiB estimated; final loss
0.624791, test accuracy 0.7012.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rwtoolkit.io import format_bytes

ROOT = Path(__file__).resolve().parent.parent
MODEL = f"{ROOT}/examples/nanogpt_attention.py:two_layer"
TASK = {"task": {"family": "icl_markov", "params": {"S": 2, "N": 7}}}
RECORD_EVERY, CHECKPOINT_EVERY = 100, 1000


def _estimate(steps: int) -> tuple[float, int]:
    """``model_train_estimate``'s seconds and file bytes for the run (as rw train plans it)."""
    from rwtoolkit.engines.numeric import model_train_estimate
    from rwtoolkit.models import get_model
    from rwtoolkit.tasks import icl_markov_task

    est = model_train_estimate(
        icl_markov_task(2, 7, 1),
        get_model(MODEL),
        1000,
        steps,
        record_steps=range(0, steps + 1, RECORD_EVERY),
        checkpoint_every=CHECKPOINT_EVERY,
    )
    return est.seconds, est.file_bytes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[10_000], help="run lengths (default 10000)")
    args = parser.parse_args()
    print(f"uptime: {os.getloadavg()}", file=sys.stderr)
    print(
        "| steps | wall (s) | ms / step | estimate (s) | estimate / measured | metrics.json | checkpoint.pt "
        "| estimated files | final loss |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    below = []
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "icl.json"
        spec.write_text(json.dumps(TASK))
        for steps in args.steps:
            out = Path(folder) / f"run{steps}"
            argv = [
                *("train", "--model", MODEL, "--spec", str(spec), "--init", "own", "--objective", "lm"),
                *("--population", "--eta", "0.3", "--steps", str(steps), "--record-every", str(RECORD_EVERY)),
                *("--checkpoint-every", str(CHECKPOINT_EVERY), "--max-seconds", "86400", "--out", str(out)),
            ]
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "rwtoolkit.cli.main", *argv], check=True, cwd=ROOT)
            wall = time.perf_counter() - start
            seconds, files = _estimate(steps)
            metrics = (out / "metrics.json").stat().st_size
            checkpoint = (out / "checkpoint.pt").stat().st_size if (out / "checkpoint.pt").exists() else 0
            loss = json.loads((out / "metrics.json").read_text())["history"][-1]["train_loss"]
            print(
                f"| {steps} | {wall:.0f} | {1e3 * wall / steps:.1f} | {seconds:.0f} | {seconds / wall:.2f} | "
                f"{format_bytes(metrics)} | {format_bytes(checkpoint)} | {format_bytes(files)} | {loss:.6g} |",
                flush=True,
            )
            if seconds < wall or files < metrics + checkpoint:
                below.append(steps)
    if below:
        print(f"estimate below the measurement at steps {below}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
