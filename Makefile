# The two commands of the README: `make repro` (the main job) and `make test`.
# Each bootstraps its own virtual environment, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: repro params test lint bench venv clean-venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The engine's docstring Examples (src/projloss) run as doctests beside the test suite.
test: $(STAMP)
	$(BIN)/python -m ruff check src tests benchmarks
	$(BIN)/python -m pytest -n 2 tests src/projloss --doctest-modules

lint: $(STAMP)
	$(BIN)/python -m ruff check src tests benchmarks

# The stages run `python -m pipeline.stage ...`: the venv's python must come first on PATH.
repro: $(STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/dvc repro

# Regenerate params.yaml (DVC's params) from conf/ after changing a config file.
params: $(STAMP)
	$(BIN)/python -m pipeline.params

# On demand, not in CI: the benchmark suite (10-15 min) -> benchmarks/RESULTS.md.
# Extra options through BENCH_ARGS, e.g. make bench BENCH_ARGS="--quick".
bench: $(STAMP)
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

clean-venv:
	rm -rf $(VENV)
