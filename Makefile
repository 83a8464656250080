# Statekeeper. `make demo` and `make test` are the two commands a newcomer needs; both set up first.
SHELL := /bin/bash
PYTHON_BOOT ?= python3.11
VENV := .venv
PY := $(CURDIR)/$(VENV)/bin/python
UV := $(VENV)/bin/uv
UV_VERSION := 0.13.9
export PYSPARK_PYTHON := $(PY)
export PYSPARK_DRIVER_PYTHON := $(PY)
export STATEKEEPER_HOME := $(CURDIR)
export PYTHONPATH := $(CURDIR):$(CURDIR)/plugins

.DEFAULT_GOAL := help
.PHONY: help setup jvm-archive jars browser lock demo test test-in-process test-out-of-process test-unit test-fast lint format bench airflow env cluster cluster-down clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(VENV)/bin/python:
	$(PYTHON_BOOT) -m venv $(VENV)

$(UV): | $(VENV)/bin/python
	$(VENV)/bin/pip install -q uv==$(UV_VERSION)

# The stamp makes a second `make setup` a no-op until the lock file changes.
# --compile-bytecode: uv leaves .pyc to be written on first import, which PYTHONDONTWRITEBYTECODE
# (set on CI machines and in containers) forbids; then every process compiles Airflow, GX,
# pandas... from source again: 2-3x the CPU of their imports (GX 3.4 s -> 1.4 s, airflow.sdk
# 5.0 s -> 2.3 s), in every Airflow task, CLI call, Spark driver and Python worker.
SYNCED := $(VENV)/.synced-bytecode
$(SYNCED): requirements.lock | $(UV)
	$(UV) pip sync --compile-bytecode --python $(PY) requirements.lock
	@touch $@

# The project's JVM classes are compiled with the jars (it needs a JDK's javac): an edited source
# makes a new jar.
.cache/jars/.fetched: include/spark/jars.txt include/kafka/broker-jars.txt $(wildcard spark_jobs/io/jvm/statekeeper/*.java) | $(SYNCED)
	$(PY) -m spark_jobs.runtime.jars fetch
	@touch $@

# Not a stamp: the module knows whether the archive for this JVM and jar set exists (no-op then).
jvm-archive: $(SYNCED) .cache/jars/.fetched ## the driver's class archive (CDS): Spark starts ~3 s sooner
	@$(PY) -m spark_jobs.runtime.jvm_archive build

setup: $(SYNCED) .cache/jars/.fetched jvm-archive ## create .venv from requirements.lock, cache the Delta, Kafka-source and local-broker jars, compile the project's JVM classes, make the driver's class archive (no-op when done)

browser: ## Debian's chromium for the UI check (Playwright drives it; it cannot download browsers here)
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

lock: ## re-pin requirements.lock from requirements.in
	$(UV) pip compile requirements.in --override overrides.txt --python-version 3.11 --generate-hashes -o requirements.lock

demo: setup ## generate sample data and run every job end to end through Airflow, printing the tables
	$(PY) -m scripts.demo

lint: $(SYNCED) ## ruff + mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

test-unit: setup ## the fast tier: no JVM
	$(PY) -m pytest -m unit -q

# Lint beside the rest of set-up: mypy from cold (a clean clone) and the class archive's training
# driver each leave a core idle much of the time; side by side they took 120 s, one after the
# other 156 s. Each target's output is printed whole when it ends (-Otarget).
test: browser ## lint and the whole test suite
	$(MAKE) --no-print-directory -j2 -Otarget setup lint
	$(MAKE) --no-print-directory -j2 -Otarget test-in-process test-out-of-process

# The suite in two halves side by side, one per core. Run as one, it leaves a quarter of both
# cores idle (a CPU sample of a whole run: 593 of 2,516 s), most of it in the DAG and end-to-end
# tests, which wait on Airflow, Spark drivers, brokers and browsers in child processes. One
# half is the integration tests on the shared Spark session, then the unit tests; the other,
# the DAG and end-to-end tests. make fails if either does, and prints each half whole. A whole
# local CI run on a clean clone: 37:48 (halves 34:04 and 34:57) against 47:53 as one.
test-in-process: setup ## the integration and unit tests (one half of make test)
	$(PY) -m pytest -q -m "integration or unit"

test-out-of-process: setup browser ## the DAG and end-to-end tests (the other half)
	$(PY) -m pytest -q -m "dags or e2e"

bench: setup ## benchmarks, printing ratios measured side by side (writes bench/results/latest.json)
	$(PY) -m bench

airflow: setup ## the Airflow UI on http://localhost:8080 (standalone; login printed in the log)
	$(PY) -m scripts.airflow_standalone

env: ## write .env with random secrets for docker-compose (once; never overwrites)
	python3 scripts/make_env.py

cluster: setup ## a Spark master + two workers on 127.0.0.1 (pyspark's spark-class); prints the spark:// URL
	$(PY) -m scripts.cluster up

cluster-down: ## stop the cluster `make cluster` started
	$(PY) -m scripts.cluster down

clean: ## remove generated data (not the venv or caches)
	rm -rf .data tests/_output
