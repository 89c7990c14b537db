# The two Quickstart targets. Each creates .venv and installs the project (and its
# dependencies) from pyproject.toml before doing its job, so both work on a fresh machine.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rw train --task circle --K 6 --N 97 --M 1000 --p 1/2 --steps 50 --eta 1 --eps 0.1 \
	    --train-size 1000 --test-size 1000 --seed 0 --out out/train/fig4_p0.5
	$(BIN)/rw train --task circle --K 6 --N 97 --M 1000 --p 1 --steps 50 --eta 1 --eps 0.1 \
	    --train-size 1000 --test-size 1000 --seed 0 --out out/train/fig5_p1
	$(BIN)/rw reproduce all --out out

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done
