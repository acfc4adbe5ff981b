# hudi_ds — every target creates the environment it needs (.venv).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SCALE ?= 1

.PHONY: help install demo test test-core test-spark lint bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv with runtime and dev dependencies

demo: $(STAMP)  ## the main job: a pipeline into a local Hudi table
	$(BIN)/python examples/demo.py

test: $(STAMP)  ## the whole test suite (core + spark)
	$(BIN)/python -m pytest -q tests

test-core: $(STAMP)  ## core tests only (no JVM)
	$(BIN)/python -m pytest -q -m "not spark" tests

test-spark: $(STAMP)  ## spark tests only
	$(BIN)/python -m pytest -q -m spark tests

lint: $(STAMP)  ## ruff + mypy + layering check
	$(BIN)/ruff check hudi_ds tests bench examples
	$(BIN)/ruff format --check hudi_ds tests bench examples
	$(BIN)/mypy hudi_ds
	$(BIN)/python tools/check_layers.py

BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[dev,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)  ## benchmarks against the peers (SCALE=1 default; SCALE=0.1 is quick)
	$(BIN)/python -m bench --scale $(SCALE)
	$(BIN)/python -m bench.bench_streaming --scale $(SCALE) | tee bench/results/streaming.txt
	$(BIN)/python bench/bench_merge.py

clean:  ## remove the environment and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
