# Every target creates its own virtualenv and installs the project from pyproject.toml,
# so `make test` and `make demo` work on a fresh machine with only Python 3 (with its headers),
# a C compiler and Java 17.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test test-fast demo lint bench clean

$(STAMP): pyproject.toml setup.py connector/client/_record_scan.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

test: $(STAMP)
	PYSPARK_PYTHON=$(abspath $(PY)) PYSPARK_DRIVER_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q --durations=25 -n 2 --dist loadfile --no-loadscope-reorder tests

# The edit-run loop: everything but Spark and multi-process clusters (see tests/conftest.py).
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not spark and not cluster" -p no:cacheprovider tests

demo: $(STAMP)
	$(PY) jobs/demo.py

lint: $(STAMP)
	$(PY) -m ruff check broker_sim connector tests benchmarks jobs
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) benchmarks/broker_throughput.py

clean:
	rm -rf $(VENV)
