# airflow-provider-delta: `make help` lists the targets.
# Everything runs from the virtual environment at .venv, which the targets create and keep in step
# with pyproject.toml. Needs only Python 3.11 (3.10+) with pip and access to the package registries.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
PYTHON ?= $(shell command -v python3.11 || command -v python3)
UV ?= $(shell command -v uv)
EXTRAS ?= test,bench,spark,airflow
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

# The Delta conformance corpus: ../shared/conformance beside the repository unless set.
DELTA_CONFORMANCE ?= $(abspath $(CURDIR)/../shared/conformance)
export DELTA_CONFORMANCE

# The default test run: everything (real Spark, real Airflow, delta-rs interop) except tests marked slow.
PYTEST_MARKERS ?= not slow
PYTEST_ARGS ?=

DEMO_TABLE ?= peer/merge_cdf_partitioned
DEMO_DIR := .demo
BENCH_ARGS ?=

.PHONY: help install venv delta-spark delta-spark-s3a test test-all test-spark test-cluster bench-cdf bench-spark bench-spark-delta bench-s3 bench-maintenance lint format typecheck layers pytest bench demo demo-log clean

help: ## show this help
	@echo "Usage: make <target>   (first run creates $(VENV) and installs everything)"
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-10s %s\n", $$1, $$2}'

# ---------------------------------------------------------------------------- environment
$(PY):
	@test -n "$(PYTHON)" || { echo "error: python3.11 not found on PATH (set PYTHON=/path/to/python3)"; exit 1; }
	@echo "==> creating $(VENV) with $(PYTHON)"
	@rm -rf $(VENV)
	@if [ -n "$(UV)" ]; then "$(UV)" venv --quiet --python "$(PYTHON)" $(VENV); \
	 else "$(PYTHON)" -m venv $(VENV); fi

# Reinstalled whenever pyproject.toml changes. uv is used when on PATH, else installed into the venv.
$(STAMP): pyproject.toml requirements-overrides.txt | $(PY)
	@echo "==> installing airflow-provider-delta[$(EXTRAS)] into $(VENV)"
	@uv="$(UV)"; \
	 if [ -z "$$uv" ]; then \
	   uv=$(BIN)/uv; \
	   if [ ! -x "$$uv" ]; then \
	     $(PY) -m pip --version >/dev/null 2>&1 || $(PY) -m ensurepip --upgrade >/dev/null; \
	     $(PY) -m pip install --quiet --disable-pip-version-check uv; \
	   fi; \
	 fi; \
	 "$$uv" pip install --quiet --python $(PY) --compile-bytecode \
	   --override requirements-overrides.txt -e ".[$(EXTRAS)]"
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP) ## create .venv and install the package with Spark, Airflow and the test tools

venv: install

# ---------------------------------------------------------------------------- Delta Lake on Spark (test oracle)
# delta-spark is a test dependency only: its own venv (the pyspark version it supports, not the project's)
# and its jars from Maven Central, fetched by Maven into $(JARS_DIR) (spark.jars names the files: no Ivy at
# run time). tests/delta_spark/ has the pom, the venv's requirements and the oracle server. Stamps keep
# both idempotent; changing a version below or a file there refetches.
DELTA_VENV ?= .venv-delta
JARS_DIR ?= .cache/jars
DELTA_SPARK_VERSION := 4.4.0
# The Hadoop version the oracle's pyspark ships (its jars/hadoop-client-api-*.jar): hadoop-aws must match it.
HADOOP_AWS_VERSION := 3.5.0
ORACLE_DIR := tests/delta_spark
DELTA_VENV_STAMP := $(DELTA_VENV)/.installed
DELTA_JARS_STAMP := $(JARS_DIR)/delta/.fetched-$(DELTA_SPARK_VERSION)
S3A_JARS_STAMP := $(JARS_DIR)/s3a/.fetched-$(HADOOP_AWS_VERSION)
MVN ?= mvn
MVN_FETCH = $(MVN) -q -B -f $(ORACLE_DIR)/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
	-Ddelta.version=$(DELTA_SPARK_VERSION) -Dhadoop.version=$(HADOOP_AWS_VERSION)

$(DELTA_VENV_STAMP): $(ORACLE_DIR)/requirements.txt | $(STAMP)
	@echo "==> creating $(DELTA_VENV) (delta-spark's pyspark) from $(ORACLE_DIR)/requirements.txt"
	@uv="$(UV)"; [ -n "$$uv" ] || uv=$(BIN)/uv; \
	 rm -rf $(DELTA_VENV); \
	 "$$uv" venv --quiet --python "$(PYTHON)" $(DELTA_VENV) \
	 && "$$uv" pip install --quiet --python $(DELTA_VENV)/bin/python -r $(ORACLE_DIR)/requirements.txt \
	 || { echo "error: could not install $$(grep -v '^#' $(ORACLE_DIR)/requirements.txt | xargs) into $(DELTA_VENV)"; \
	      echo "       retry: make delta-spark"; exit 1; }
	@touch $@

$(DELTA_JARS_STAMP): $(ORACLE_DIR)/pom.xml
	@echo "==> fetching io.delta:delta-spark_2.13:$(DELTA_SPARK_VERSION), io.delta:delta-storage:$(DELTA_SPARK_VERSION) into $(JARS_DIR)/delta"
	@rm -rf $(JARS_DIR)/delta && mkdir -p $(JARS_DIR)/delta
	@$(MVN_FETCH) -DincludeGroupIds=io.delta -DoutputDirectory=$(abspath $(JARS_DIR))/delta \
	 || { echo "error: Maven could not fetch io.delta:delta-spark_2.13:$(DELTA_SPARK_VERSION) or io.delta:delta-storage:$(DELTA_SPARK_VERSION) from Maven Central (Maven's message above)"; \
	      echo "       retry: make delta-spark"; exit 1; }
	@touch $@

$(S3A_JARS_STAMP): $(ORACLE_DIR)/pom.xml
	@echo "==> fetching org.apache.hadoop:hadoop-aws:$(HADOOP_AWS_VERSION) and its AWS SDK bundle (~700 MB) into $(JARS_DIR)/s3a"
	@rm -rf $(JARS_DIR)/s3a && mkdir -p $(JARS_DIR)/s3a
	@$(MVN_FETCH) -DexcludeGroupIds=io.delta -DoutputDirectory=$(abspath $(JARS_DIR))/s3a \
	 || { echo "error: Maven could not fetch org.apache.hadoop:hadoop-aws:$(HADOOP_AWS_VERSION) or its dependencies (software.amazon.awssdk:bundle) from Maven Central (Maven's message above)"; \
	      echo "       retry: make delta-spark-s3a"; exit 1; }
	@touch $@

delta-spark: $(DELTA_VENV_STAMP) $(DELTA_JARS_STAMP) ## the Delta Lake on Spark oracle: .venv-delta and delta-spark's jars in .cache/jars/delta

delta-spark-s3a: $(S3A_JARS_STAMP) ## hadoop-aws and the AWS SDK bundle for s3a:// in .cache/jars/s3a

# ---------------------------------------------------------------------------- checks
lint: $(STAMP) ## ruff check
	@echo "==> ruff check"
	@$(BIN)/ruff check .

format: $(STAMP) ## ruff format + ruff check --fix
	@$(BIN)/ruff format .
	@$(BIN)/ruff check --fix .

typecheck: $(STAMP) ## mypy (strict on core/)
	@echo "==> mypy airflow_provider_delta"
	@$(BIN)/mypy airflow_provider_delta

layers: $(STAMP) ## import-layer contracts (core/ never imports pyspark or airflow)
	@echo "==> lint-imports"
	@$(BIN)/lint-imports --no-cache

pytest: $(STAMP)
	@echo "==> pytest -m \"$(PYTEST_MARKERS)\" (conformance corpus: $(DELTA_CONFORMANCE))"
	@$(BIN)/pytest -m "$(PYTEST_MARKERS)" $(PYTEST_ARGS)

test: ## lint, typecheck, layer check, then the default tests (incl. the full conformance suite)
	@$(MAKE) lint
	@$(MAKE) typecheck
	@$(MAKE) layers
	@$(MAKE) delta-spark
	@$(MAKE) pytest

test-all: ## as `test`, with every marker (slow, spark, cluster, integration, system)
	@$(MAKE) test PYTEST_MARKERS=""

test-spark: $(STAMP) ## the Spark tests only: local[2] sessions, spark-submit and the standalone cluster
	@$(BIN)/pytest -m "spark or cluster" $(PYTEST_ARGS)

test-cluster: $(STAMP) ## the standalone-cluster tests (a master + 2 workers on 127.0.0.1, ~30 s)
	@$(BIN)/pytest -m cluster $(PYTEST_ARGS)

# ---------------------------------------------------------------------------- demo, bench
demo: $(STAMP) ## Airflow runs example DAGs (1) sensor and (2) Spark checkpoint on a table in .demo/; prints its history
	@DEMO_DIR="$(DEMO_DIR)" VENV="$(VENV)" scripts/demo.sh

demo-log: $(STAMP) ## the delta-log CLI on a conformance-corpus table (copied into .demo/table)
	@test -f "$(DELTA_CONFORMANCE)/MANIFEST.json" || { \
	  echo "error: conformance corpus not found at $(DELTA_CONFORMANCE)"; \
	  echo "       place it at ../shared/conformance or set DELTA_CONFORMANCE=/path/to/conformance"; exit 1; }
	@rm -rf $(DEMO_DIR)/table && mkdir -p $(DEMO_DIR)
	@cp -R "$(DELTA_CONFORMANCE)/tables/$(DEMO_TABLE)" $(DEMO_DIR)/table
	@echo "Demo table: $(DEMO_TABLE) (written by delta-rs), copied to $(DEMO_DIR)/table"
	$(call demo_step,describe $(DEMO_DIR)/table)
	$(call demo_step,history $(DEMO_DIR)/table)
	$(call demo_step,files $(DEMO_DIR)/table)
	$(call demo_step,version $(DEMO_DIR)/table)
	$(call demo_step,head $(DEMO_DIR)/table -n 5)
	$(call demo_step,head $(DEMO_DIR)/table --columns id$(comma)name$(comma)value$(comma)part --filter "id < 5")
	@echo; echo "# Time travel: version 1, before the UPDATE of rows with id < 5, the DELETE and the last WRITE"
	$(call demo_step,version $(DEMO_DIR)/table --version 1 --json)
	$(call demo_step,files $(DEMO_DIR)/table --version 1)
	$(call demo_step,head $(DEMO_DIR)/table --version 1 --columns id$(comma)name$(comma)value$(comma)part --filter "id < 5")

define demo_step
	@echo; echo '$$ delta-log $(1)'
	@$(BIN)/delta-log $(1)
endef

bench: $(STAMP) ## read, write, MERGE and maintenance benchmarks against delta-rs (BENCH_ARGS="--quick" for a short run)
	@$(PY) -m benchmarks.bench_read $(BENCH_ARGS)
	@$(PY) -m benchmarks.bench_write $(BENCH_ARGS)
	@$(PY) -m benchmarks.bench_poke $(if $(findstring --quick,$(BENCH_ARGS)),--quick,)
	@$(PY) -m benchmarks.bench_merge $(BENCH_ARGS)
	@$(PY) -m benchmarks.bench_s3 $(if $(findstring --quick,$(BENCH_ARGS)),--quick,)
	@$(PY) -m benchmarks.bench_maintenance $(if $(findstring --quick,$(BENCH_ARGS)),--quick,)

bench-s3: $(STAMP) ## tables on a local S3 server (SeaweedFS) vs delta-rs: load time, requests per load/poke/append
	@$(PY) -m benchmarks.bench_s3 $(BENCH_ARGS)

bench-cdf: $(STAMP) ## CDF export to Parquet vs delta-rs load_cdf + write_to_dataset (BENCH_ARGS="--quick")
	@$(PY) -m benchmarks.bench_cdf_export $(BENCH_ARGS)

bench-maintenance: $(STAMP) ## VACUUM and compaction vs delta-rs (BENCH_ARGS="--quick" or "--vacuum-sizes 4000")
	@$(PY) -m benchmarks.bench_maintenance $(BENCH_ARGS)

bench-spark: $(STAMP) ## Spark data plane: driver memory, write_delta / read_delta speed (BENCH_ARGS="--quick")
	@$(PY) -m benchmarks.bench_spark $(BENCH_ARGS)

# The yardstick: the Spark plane against delta-spark in one session of the oracle's pyspark (.venv-delta, with
# this package installed there too: its runtime dependencies only, the oracle's pins kept as constraints).
DELTA_BENCH_STAMP := $(DELTA_VENV)/.bench-installed
$(DELTA_BENCH_STAMP): pyproject.toml $(ORACLE_DIR)/requirements.txt
	@test -x $(DELTA_VENV)/bin/python && test -f $(DELTA_JARS_STAMP) || { \
	  echo "error: the delta-spark oracle env is missing ($(DELTA_VENV) or $(JARS_DIR)/delta): run \`make delta-spark\` first"; exit 2; }
	@echo "==> installing airflow-provider-delta (no extras) into $(DELTA_VENV)"
	@uv="$(UV)"; [ -n "$$uv" ] || uv=$(BIN)/uv; \
	 "$$uv" pip install --quiet --python $(DELTA_VENV)/bin/python -c $(ORACLE_DIR)/requirements.txt -e .
	@touch $@

bench-spark-delta: $(DELTA_BENCH_STAMP) ## Spark plane vs delta-spark, same session: write, read, MERGE, OPTIMIZE (needs `make delta-spark`; BENCH_ARGS="--quick")
	@$(DELTA_VENV)/bin/python -m benchmarks.bench_spark_delta --jars $(JARS_DIR)/delta $(BENCH_ARGS)

clean: ## remove .venv, caches and demo output
	rm -rf $(VENV) $(DELTA_VENV) $(JARS_DIR) $(DEMO_DIR) .pytest_cache .mypy_cache .ruff_cache .hypothesis .import_linter_cache build dist *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
