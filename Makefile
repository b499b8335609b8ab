# Every target creates its own virtualenv and installs the project from pyproject.toml,
# so `make test` and `make demo` work on a fresh machine with only Python 3 (with its headers),
# a C compiler, Java 17 and Maven (Maven fetches Apache Kafka's jars for the suite: `make kafka`).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test test-fast demo lint bench bench-vs clean kafka chromium apicurio

$(STAMP): pyproject.toml setup.py connector/client/_record_scan.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Apache Kafka's jars (pinned in reference/kafka/pom.xml) into .cache/, once per clone.
kafka: $(STAMP)
	$(PY) -m reference kafka

# Debian's Chromium for the console's browser tests (Playwright drives /usr/bin/chromium; it
# downloads no browser). Installed once, when missing.
chromium:
	test -x /usr/bin/chromium || { $$([ "$$(id -u)" = 0 ] || echo sudo) apt-get update && \
		$$([ "$$(id -u)" = 0 ] || echo sudo) apt-get install -y chromium; }

# pyq's source and sink against Apicurio Registry's Confluent-compatible API (built from
# Maven Central by reference/apicurio/pom.xml into .cache/apicurio, once). Not part of test.
apicurio: $(STAMP)
	$(PY) -m reference.foreign_registry

test: $(STAMP) kafka chromium
	PYSPARK_PYTHON=$(abspath $(PY)) PYSPARK_DRIVER_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q --durations=25 -n 2 --dist loadfile --no-loadscope-reorder tests

# The edit-run loop: everything but Spark, multi-process clusters, Apache Kafka and the browser (see tests/conftest.py).
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not spark and not cluster and not kafka and not browser" -p no:cacheprovider tests

demo: $(STAMP)
	$(PY) jobs/demo.py

lint: $(STAMP)
	$(PY) -m ruff check broker_sim connector reference tests benchmarks jobs
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) -m benchmarks.broker_throughput

# Spark's own Kafka connector runs under the pyspark of its version (reference/spark-kafka/pom.xml:
# Maven Central serves none for the pyspark pinned above), in a virtualenv of its own with this
# project's runtime dependencies. The project itself is on its path through a .pth file rather than
# installed again, which would rebuild the C extension .venv's processes have loaded.
SPARK_KAFKA_VENV := .venv-spark-kafka
SPARK_KAFKA_STAMP := $(SPARK_KAFKA_VENV)/.installed

$(SPARK_KAFKA_STAMP): $(STAMP) reference/spark-kafka/pom.xml
	rm -rf $(SPARK_KAFKA_VENV)
	$(PYTHON) -m venv $(SPARK_KAFKA_VENV)
	$(SPARK_KAFKA_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PY) -m reference spark-kafka-requirements > $(SPARK_KAFKA_VENV)/requirements.txt
	$(SPARK_KAFKA_VENV)/bin/python -m pip install --quiet -r $(SPARK_KAFKA_VENV)/requirements.txt
	echo $(CURDIR) > $$($(SPARK_KAFKA_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/pyq-project.pth
	$(PY) -m reference spark-kafka
	touch $(SPARK_KAFKA_STAMP)

# pyq against what users would pick instead: Apache Kafka's broker, Spark's Kafka connector (issue 30)
bench-vs: $(STAMP) kafka $(SPARK_KAFKA_STAMP)
	$(PY) -m benchmarks.vs_kafka
	$(SPARK_KAFKA_VENV)/bin/python -m benchmarks.vs_spark_kafka

clean:
	rm -rf $(VENV) $(SPARK_KAFKA_VENV)
