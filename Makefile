# The Quickstart targets and the CI gates. Each creates .venv and installs the project (and its
# dependencies) from pyproject.toml before doing its job, so every target works on a fresh machine.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test bench docs docs-check lint wheel-check fixture-check mutate

# pip byte-compiles what it installs (no --no-compile): where PYTHONDONTWRITEBYTECODE is set, a venv without
# .pyc files compiles torch from source in every process (measured in a clean clone: make test took 943 s).
$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(STAMP)

# The test extra: pytest (and pytest-xdist), the notebook runner, ruff, mypy, build, mutmut.
$(TEST_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(TEST_STAMP)

demo: $(STAMP)
	$(BIN)/rw train --task circle --K 6 --N 97 --M 1000 --p 1/2 --steps 50 --eta 1 --eps 0.1 \
	    --train-size 1000 --test-size 1000 --seed 0 --out out/train/fig4_p0.5
	$(BIN)/rw train --task circle --K 6 --N 97 --M 1000 --p 1 --steps 50 --eta 1 --eps 0.1 \
	    --train-size 1000 --test-size 1000 --seed 0 --out out/train/fig5_p1
	$(BIN)/rw reproduce all --out out

# On every core, at most four workers (each holds torch, SymPy and a check's exact trajectories), each
# single-threaded: the workers fill the cores, and torch's or BLAS's own threads on top of them oversubscribe
# (measured on 2 cores: 1626 worker-seconds with their default threads, 1407 with one; the notebooks 104 s
# against 32 s). About 12 minutes on 2 cores; an idle worker steals queued tests (the longest take about a
# minute). A single test or file: .venv/bin/python -m pytest PATH.
test: $(TEST_STAMP)
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
	    $(BIN)/python -m pytest -q -n auto --maxprocesses 4 --dist worksteal

bench: $(STAMP)
	$(BIN)/python tools/run_benchmarks.py

# The documentation site, built into site/ (strict: broken links, missing API objects and warnings
# fail). The notebooks are executed while building (RW_DOCS_EXECUTE=false renders them as stored).
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): pyproject.toml $(STAMP)
	$(BIN)/pip install --quiet -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 RW_DOCS_EXECUTE=$${RW_DOCS_EXECUTE:-true} $(BIN)/mkdocs build --strict

# Serves site/ on localhost and loads the main pages in headless Chromium: screenshots under
# site-check/, exit 1 on any console error. Needs the Debian package chromium.
docs-check: docs
	$(BIN)/python tools/docs_browser_check.py --site site --out site-check

# Lint (whole tree), format check and type check (the packages, [tool.mypy]); fails on any finding.
lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Build the wheel with the standard frontend, install it into a fresh venv, run the console command.
wheel-check: $(TEST_STAMP)
	$(BIN)/python tools/wheel_check.py --python $(PY)

# rw check --emit's fixtures in a fresh venv with numpy, pytest and torch only: plain_torch passes, every
# planted bug fails at its first wrong quantity.
fixture-check: $(STAMP)
	$(BIN)/python tools/fixture_check.py --python $(PY)

# Mutation testing of the numeric and exact cores (by hand, not in CI; docs/testing.md).
mutate: $(TEST_STAMP)
	tools/mutate.sh
