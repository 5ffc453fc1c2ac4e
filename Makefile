# The two commands of the README: `make repro` (the main job) and `make test`.
# Each bootstraps its own virtual environment, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH ?= torch==2.13.0

.PHONY: repro repro-repeated repro-mlp params test lint bench venv clean-venv ui-screenshots \
	docs docs-serve docs-screenshots

venv: $(STAMP)

# torch's CPU build first (a local file on these machines, seconds): the dev extra's
# range `torch>=2.4,<3` is then satisfied, where it alone would pull a CUDA build of
# several GB into every fresh venv. TORCH=... picks another build (e.g. a CUDA one).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet '$(TORCH)'
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The docstring Examples of the engine (src/projloss) and the pipeline (src/pipeline) run as
# doctests beside the test suite. Bytecode is written even where PYTHONDONTWRITEBYTECODE is
# set (these machines set it): the suite starts hundreds of Python processes, each of
# which would compile src/ and pytest's rewritten test modules again (__pycache__/ is
# ignored by git and DVC).
test: $(STAMP)
	$(BIN)/python -m ruff check src tests benchmarks examples docs
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n 2 tests src/projloss src/pipeline --doctest-modules

lint: $(STAMP)
	$(BIN)/python -m ruff check src tests benchmarks examples docs

# The stages run `python -m pipeline.stage ...`: the venv's python must come first on PATH.
# The stages fork from one interpreter that has imported the libraries once
# (pipeline.preload: ~2.5 s of imports saved per stage process); plain `dvc repro` works too.
repro: $(STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pipeline.preload $(BIN)/dvc repro

# Beyond the paper: the paper's experiments on REPEATS random splits (seeds 0..REPEATS-1;
# conf/experiments/paper-repeated.yaml), then the significance report reports/repeated/.
# Seed 0 is the paper's own experiments: run under the paper's params.yaml (nothing to do
# after `make repro`); the other seeds with params.yaml composed with that list and
# restored after it (the default `make repro`, its dvc.lock entries and the paper's
# reports/ are left alone).
REPEATS ?= 10
repro-repeated: $(STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pipeline.preload $(BIN)/dvc repro \
	  $$($(BIN)/python -m pipeline.report.repeated targets --repeats $(REPEATS) --only paper)
	$(BIN)/python -m pipeline.params experiments=paper-repeated
	seeds=$$($(BIN)/python -m pipeline.report.repeated targets --repeats $(REPEATS) --only seeds); \
	  test -z "$$seeds" || PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pipeline.preload \
	  $(BIN)/dvc repro $$seeds; status=$$?; $(BIN)/python -m pipeline.params; exit $$status
	$(BIN)/python -m pipeline.report.repeated report --repeats $(REPEATS)

# Beyond the paper: Tables 1, 2, 6 and 7 with the multilayer perceptron (model=mlp,
# conf/experiments/mlp.yaml; needs PyTorch), then reports/mlp/ (linear vs MLP per cell).
# params.yaml is composed with that list for the run and restored after it, as above.
repro-mlp: $(STAMP)
	$(BIN)/python -m pipeline.params experiments=mlp
	start=$$(date +%s); \
	  PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pipeline.preload $(BIN)/dvc repro \
	  evaluate@lr-mlp evaluate@ml-mlp evaluate@ml-tmc2007_500-mlp; \
	  status=$$?; $(BIN)/python -m pipeline.params; test $$status = 0 || exit $$status; \
	  $(BIN)/python -m pipeline.report.mlp --run-time-s $$(( $$(date +%s) - start ))

# Regenerate params.yaml (DVC's params) from conf/ after changing a config file.
params: $(STAMP)
	$(BIN)/python -m pipeline.params

# On demand, not in CI: the benchmark suite (10-15 min) -> benchmarks/RESULTS.md.
# Extra options through BENCH_ARGS, e.g. make bench BENCH_ARGS="--quick".
bench: $(STAMP)
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

clean-venv:
	rm -rf $(VENV)

# On demand, not in CI: screenshots of `mlflow ui` (runs table, a run, its metrics and
# artifacts, a comparison) -> docs/ui/*.png. Needs Debian's chromium (apt-get install -y
# chromium); installs playwright (to drive it) into the venv.
ui-screenshots: $(STAMP)
	$(BIN)/python -m pip install --quiet 'playwright>=1.40'
	$(BIN)/python -m pipeline.tools.ui_screenshots --out docs/ui

# The documentation site (docs/, examples/) -> site/: Sphinx, offline, warnings as errors
# (a broken reference, a failing gallery example or a docstring without its numpydoc
# sections fails it). The gallery's examples run at every build (a few seconds each).
# tests/docs/test_build.py runs the same build in `make test`.
DOCS_PORT ?= 8000
docs: $(STAMP)
	$(BIN)/python -m sphinx -W --keep-going -b html -d site/.doctrees docs site

# Serve site/ on http://127.0.0.1:$(DOCS_PORT)/ (build it first: make docs).
docs-serve:
	$(BIN)/python -m http.server $(DOCS_PORT) --bind 127.0.0.1 --directory site

# Retake docs/screenshots/*.png (the home page, the API page of projloss.sets.Birkhoff, a
# gallery example) from site/ with headless Chromium (apt-get install -y chromium).
docs-screenshots: docs
	$(BIN)/python docs/screenshots.py --site site --out docs/screenshots
