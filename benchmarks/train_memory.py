"""How close `rwtoolkit.engines.numeric.memory_estimate` (the basis of `rw train`'s up-front memory refusal) is to the
memory a run really takes.

Run by hand (`make bench` or `.venv/bin/python benchmarks/train_memory.py`). Each configuration trains in a
fresh process that reports its peak resident memory above what it held after importing torch; prints a
Markdown table of estimate, measured peak growth and their ratio, and exits 1 when an estimate falls below
the measurement (the refusal would then let through a run that does not fit).
"""

from __future__ import annotations

import json
import subprocess
import sys

from rwtoolkit.io import format_bytes

CONFIGS = [  # (label, K, N, M, train_size, steps)
    ("paper Fig 4 scale", 6, 97, 1000, 1000, 5),
    ("many walks", 6, 97, 1000, 100_000, 1),
    ("wide embeddings", 6, 97, 100_000, 1000, 1),
    ("long walks", 6, 2000, 4000, 2000, 1),
]

_CHILD = """
import json, resource, sys
import torch
from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train
from rwtoolkit.engines.numeric._config import memory_estimate
from rwtoolkit.tasks import CircleWalk
K, N, M, n, steps = json.loads(sys.argv[1])
task, model = CircleWalk(K, N, "1/2"), ModelConfig(K=K, N=N, M=M)
cfg = TrainConfig(steps=steps, train_size=n, test_size=n, threads=1)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
train(task, model, cfg, progress=False)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"estimate": sum(memory_estimate(task, model, cfg).values()), "measured": peak - before}))
"""


def main() -> int:
    print("| configuration | K | N | M | walks | estimate | measured peak growth | estimate / measured |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    below = []
    for label, K, N, M, n, steps in CONFIGS:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, json.dumps([K, N, M, n, steps])],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        ratio = r["estimate"] / max(r["measured"], 1)
        print(
            f"| {label} | {K} | {N} | {M} | {n} | {format_bytes(r['estimate'])} | "
            f"{format_bytes(r['measured'])} | {ratio:.2f} |"
        )
        if r["estimate"] < r["measured"]:
            below.append(label)
    if below:
        print(f"estimate below the measured peak for: {', '.join(below)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
