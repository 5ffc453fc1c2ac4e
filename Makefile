# The two commands of the README: `make repro` (the main job) and `make test`.
# Each bootstraps its own virtual environment, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: repro test lint bench venv clean-venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m ruff check src tests benchmarks
	$(BIN)/python -m pytest -n 2 tests

lint: $(STAMP)
	$(BIN)/python -m ruff check src tests benchmarks

repro: $(STAMP)
	$(BIN)/dvc repro

# On demand, not in CI: the benchmark suite (about 10 min) -> benchmarks/RESULTS.md.
# Extra options through BENCH_ARGS, e.g. make bench BENCH_ARGS="--quick".
bench: $(STAMP)
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

clean-venv:
	rm -rf $(VENV)
