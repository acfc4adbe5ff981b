# hudi_ds — every target creates the environment it needs (.venv).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: the demo's environment (hudi_ds editable, pyspark, hudi-rs for its checks: about
# 1 GB) and the development toolchain on top of it (pytest, mypy, moto, ...: about 2 GB).
RUN_STAMP := $(VENV)/.installed-demo
STAMP := $(VENV)/.installed
SCALE ?= 1
STORE ?= local

.PHONY: help install demo dist test test-core test-quick test-spark test-cluster test-install test-explore test-stress lint docs bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-13s %s\n", $$1, $$2}'

$(RUN_STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[demo]'
	touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP)
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv with runtime and dev dependencies

# The local demo needs the runtime, pyspark and hudi-rs only; STORE=s3 also the local S3 server
# (moto), which comes with the dev dependencies.
DEMO_STAMP := $(if $(filter local,$(STORE)),$(RUN_STAMP),$(STAMP))
demo: $(DEMO_STAMP)  ## the main job: a pipeline into a Hudi table (STORE=s3: on a local S3 server)
	$(BIN)/python examples/demo.py --store $(STORE)

# The sdist and, built from it, the wheel: what `pip install "dist/hudi_ds-...whl[spark]"` takes
# (docs/install.md). `build` runs setuptools in an isolated environment, as pip does.
DIST_STAMP := $(VENV)/.installed-build
$(DIST_STAMP): $(RUN_STAMP)
	$(BIN)/pip install -q 'build>=1.2'
	touch $(DIST_STAMP)

dist: $(DIST_STAMP)  ## build the sdist and wheel into dist/
	rm -rf dist
	$(BIN)/python -m build --outdir dist . >/dev/null
	@ls -1 dist

# Two pytest workers (pytest-xdist), one per core: the suite's fixed-time tests (races, crash
# loops, writers running for 30 s) and its JVM tests overlap instead of queueing. worksteal: a
# worker that runs out takes queued tests from the other; the tests marked slow are queued first
# (tests/conftest.py), so the run ends on short tests on both workers.
XDIST ?= -n 2 --dist worksteal

# Bytecode, compiled once: the suite starts hundreds of Python processes (Spark's Python workers,
# crash-point writers, CLI runs) that each import hudi_ds, and where PYTHONDONTWRITEBYTECODE is set
# (.ci/run sets it) none of them would cache it: 0.3 s of compiling per process (1.0 -> 0.7 s).
PYC := $(BIN)/python -m compileall -q -j 0 hudi_ds tests examples tools >/dev/null

# The standalone-cluster and Spark Connect tests (marker `cluster`, ~4.5 min) share one cluster
# per module and run in order, so they cannot go through the xdist workers (worksteal would split
# a module over both): they run as a third pytest process beside them, in their own base
# temporary directory, their output printed after the workers'. Mostly JVM start-up and waiting,
# they overlap the rest instead of adding to it. `make test` fails if either run fails.
CLUSTER_RUN = $(BIN)/python -m pytest -q -p no:cacheprovider --basetemp=$(CURDIR)/.pytest-cluster -m cluster tests
test: $(STAMP)  ## the whole test suite: core, spark, slow and (in parallel) the cluster tests
	@$(PYC)
	@$(CLUSTER_RUN) > .pytest-cluster.log 2>&1 & cl=$$!; trap 'kill -INT $$cl' INT TERM; \
	$(BIN)/python -m pytest -q $(XDIST) --durations=30 -m "not cluster" tests; rc=$$?; \
	wait $$cl; crc=$$?; \
	echo "== the cluster tests (-m cluster), run beside the others: exit $$crc"; cat .pytest-cluster.log; \
	rm -rf .pytest-cluster .pytest-cluster.log; \
	test $$rc -eq 0 && test $$crc -eq 0

test-core: $(STAMP)  ## core tests only (no JVM)
	@$(PYC)
	$(BIN)/python -m pytest -q $(XDIST) -m "not spark" tests

test-quick: $(STAMP)  ## the inner loop: no JVM, no slow tests
	@$(PYC)
	$(BIN)/python -m pytest -q $(XDIST) -m "not spark and not slow" tests

test-spark: $(STAMP)  ## spark tests only (without the cluster tests)
	@$(PYC)
	$(BIN)/python -m pytest -q $(XDIST) -m "spark and not cluster" tests

test-cluster: $(STAMP)  ## the Spark standalone cluster and Spark Connect tests only
	@$(PYC)
	$(CLUSTER_RUN)

# tests/test_install.py as a user installs: the wheel into a fresh venv with its dependencies
# from the package index (pip's cache), where `make test` takes them from this .venv's already
# installed copies (the same files, without a minute of unpacking pyspark).
test-install: $(STAMP)  ## the wheel installed from the package index into a fresh venv, Spark run from it
	HUDI_DS_INSTALL_FROM_INDEX=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_install.py

# Soaks of minutes (marker `stress`; docs/testing.md records their results): two writers and
# the CLI's services under random SIGSTOPs of 1-15 s, local and on S3 (STRESS_SECONDS each).
STRESS_SECONDS ?= 300
test-stress: $(STAMP)  ## soaks under random SIGSTOPs (STRESS_SECONDS=300) and the full test matrices
	@$(PYC)
	HUDI_DS_STRESS=1 HUDI_DS_STRESS_SECONDS=$(STRESS_SECONDS) $(BIN)/python -m pytest -q -s -m stress tests

# Property-based tests with fresh random examples, round after round, for EXPLORE_SECONDS.
# A failure stops the loop; hypothesis prints the failing example and a reproduction blob
# (docs/testing.md). `make test` runs the same tests derandomized.
EXPLORE_SECONDS ?= 600
test-explore: $(STAMP)  ## hypothesis tests, fresh examples, for EXPLORE_SECONDS (600 s)
	@end=$$(( $$(date +%s) + $(EXPLORE_SECONDS) )); round=0; \
	while [ $$(date +%s) -lt $$end ]; do \
	  round=$$((round + 1)); left=$$(( end - $$(date +%s) )); \
	  echo "== explore round $$round ($$left s left)"; \
	  HYPOTHESIS_PROFILE=explore HUDI_DS_HYPOTHESIS_ONLY=1 timeout --foreground $$left \
	    $(BIN)/python -m pytest -q -x -m "not spark" tests; rc=$$?; \
	  if [ $$rc -eq 124 ]; then echo "== time is up (round $$round cut short)"; break; fi; \
	  if [ $$rc -ne 0 ]; then echo "== round $$round FAILED"; exit $$rc; fi; \
	done; echo "== explored $$round round(s), no failure"

lint: $(STAMP)  ## ruff + mypy + layering check
	$(BIN)/ruff check hudi_ds tests bench examples tools
	$(BIN)/ruff format --check hudi_ds tests bench examples tools
	$(BIN)/mypy hudi_ds
	$(BIN)/python tools/check_layers.py

docs: $(STAMP)  ## build the documentation site (warnings are errors)
	$(BIN)/mkdocs build --strict --site-dir site
	@echo "the site is in site/ (open site/index.html, or: $(BIN)/mkdocs serve)"

BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[dev,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)  ## benchmarks, charts and the acceptance ratios (SCALE=1; SCALE=0.1 is quick)
	@start=$$(date +%s); \
	$(BIN)/python -m bench --scale $(SCALE) && \
	$(BIN)/python -m bench.bench_streaming --scale $(SCALE) --json bench/results/streaming.json \
	  | tee bench/results/streaming.txt && \
	$(BIN)/python bench/bench_merge.py && \
	$(BIN)/python -m bench.bench_storage_calls | tee bench/results/storage_calls.txt && \
	$(BIN)/python -m bench.bench_s3_calls | tee bench/results/s3_calls.txt && \
	$(BIN)/python -m bench.bench_read --scale $(SCALE) --read-table \
	  --json bench/results/read_table.json | tee bench/results/read_table.txt && \
	$(BIN)/python -m bench.bench_cluster --scale $(SCALE) --json bench/results/cluster.json \
	  | tee bench/results/cluster.txt && \
	$(BIN)/python -m bench.filtered_read --scale $(SCALE) --json bench/results/filtered_read.json \
	  | tee bench/results/filtered_read.txt && \
	$(BIN)/python -m bench.clustering --scale $(SCALE) --json bench/results/clustering.json \
	  | tee bench/results/clustering.txt && \
	$(BIN)/python -m bench.merge --scale $(SCALE) --json bench/results/merge.json \
	  | tee bench/results/merge.txt && \
	$(BIN)/python -m bench.consistent_hashing --scale $(SCALE) \
	  --json bench/results/consistent_hashing.json | tee bench/results/consistent_hashing.txt && \
	$(BIN)/python -m bench.table_scale --scale $(SCALE) --json bench/results/table_scale.json \
	  --chart bench/results/table_scale.png | tee bench/results/table_scale.txt && \
	$(BIN)/python -m bench.timeline_scale --scale $(SCALE) --json bench/results/timeline_scale.json \
	  --chart bench/results/timeline_scale.png | tee bench/results/timeline_scale.txt && \
	$(BIN)/python -m bench.report --started $$start

clean:  ## remove the environment and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist site *.egg-info
