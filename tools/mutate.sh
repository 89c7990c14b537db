#!/usr/bin/env bash
# Mutation testing of the numeric and exact cores with mutmut (configuration: [tool.mutmut] in
# pyproject.toml), then the score per file with the equivalent mutants of docs/testing.md set aside.
# Run by hand, not in CI (about an hour on 2 cores):
#     make mutate                                     # every core file
#     tools/mutate.sh 'rwtoolkit.engines.numeric.*'                   # one package first (mutant names are glob patterns)
#     MUTMUT_JOBS=1 tools/mutate.sh 'rwtoolkit.engines.numeric._losses.*'
set -euo pipefail
cd "$(dirname "$0")/.."
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
# One intra-op thread per worker: the workers run in parallel already, and fork-safe.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
.venv/bin/mutmut run --max-children "${MUTMUT_JOBS:-2}" "$@"
.venv/bin/python tools/mutation_score.py
