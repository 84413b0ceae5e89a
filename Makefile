# trident-spark: `make demo` runs the main job on embedded defaults, `make test` runs the tests
# (`make test-fast` the quick part of them, for the edit loop).
# Both set up what they need on a fresh machine: a virtualenv, the package, Java 17+,
# redis-server, PostgreSQL and Maven (installed with apt-get when run as root), the jars of the
# local services (Apache Kafka, OpenSearch) and of Spark's Kafka connector, fetched once from
# Maven Central into a cache (~/.cache/trident-spark/jars, or $TRIDENT_SPARK_JARS) later runs reuse.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev
PYTEST_ARGS ?=
# Editable installs put the checkout itself on sys.path (setuptools' compat mode), where
# trident_spark/state is a link to state/: mypy, Pyright and IDEs outside the checkout see
# trident_spark.state as code. The default mode's import hook is invisible to them (README).
EDITABLE := --config-settings editable_mode=compat -e

.PHONY: setup system-deps jars demo test test-faults test-fast test-lowest-pyspark test-unit test-containers images lint typecheck docs dist bench bench-state clean

setup: system-deps $(STAMP) jars

# Each jar set once into the cache (a set already there costs nothing; see trident_spark/local/maven.py).
jars: system-deps $(STAMP)
	$(PY) -m trident_spark.local.jar_cache

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(EDITABLE) '.[dev]'
	@touch $@

# Java 17+ for Spark (and the Kafka broker), redis-server for the Redis state tests, PostgreSQL's
# server for the PostgreSQL state tests (the tests start their own throwaway server; the package's
# own cluster service is stopped and disabled), Maven to fetch the jars (`make jars`).
system-deps:
	@major=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	if [ -z "$$major" ] || [ "$$major" -lt 17 ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Java 17+ not found (found: $${major:-none}); installing openjdk-17-jre-headless"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; \
	  else \
	    echo "Spark needs Java 17 or newer (found: $${major:-none})."; \
	    echo "Install it (Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless) or set JAVA_HOME."; \
	    exit 1; \
	  fi; \
	fi
	@if ! command -v redis-server >/dev/null && [ -z "$$REDIS_URL" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "redis-server not found; installing it"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	    systemctl disable --now redis-server >/dev/null 2>&1 || service redis-server stop >/dev/null 2>&1 || true; \
	  else \
	    echo "note: redis-server not found; Redis tests will use REDIS_URL or be skipped (sudo apt-get install redis-server)"; \
	  fi; \
	fi
	@if ! command -v mvn >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Maven not found; installing maven (it fetches the Kafka and OpenSearch jars once)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >/dev/null; \
	  else \
	    echo "note: Maven (mvn) not found: the jar cache cannot be filled unless it is already (sudo apt-get install maven)"; \
	  fi; \
	fi
	@if ! command -v postgres >/dev/null && ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 \
	    && [ -z "$$POSTGRES_URL" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "PostgreSQL server not found; installing postgresql"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	    systemctl disable --now postgresql >/dev/null 2>&1 || service postgresql stop >/dev/null 2>&1 || true; \
	  else \
	    echo "note: PostgreSQL not found; PostgreSQL tests will use POSTGRES_URL or be skipped (sudo apt-get install postgresql)"; \
	  fi; \
	fi

demo: setup
	$(VENV)/bin/trident-spark demo

# pytest exits 5 when it collected no test: that is a failure here, not a pass.
# The container tests run in `make test-containers`, not here (they build images and start clusters).
# Three pytest-xdist workers on 2 cores, a test file each at a time (their own Spark session and
# services): the suite waits on brokers, drivers and batches much of the time, which the other
# workers use (988 s with two workers, 754 s with three, on this 2-core machine). The fault
# scenarios keep two: their timing is part of what they test. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 3
FAULT_WORKERS ?= 2
test: setup
	@$(PY) -m pytest -m "not containers and not faults and not cluster" -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

# The fault scenarios: a driver SIGKILLed mid-batch and restarted from its checkpoint (every
# state kind and store, user spouts, the Kafka output, windows, dead letters, DRPC callers), a
# broker down for 60 s, tasks failed after writing, SIGINT/SIGTERM on `trident-spark run`, an
# impostor account at the instance hosts' sockets; each checks exact final values or output. A driver start is 10-20 s of CPU, so
# they run here rather than in `make test` (which stays under 15 minutes); .ci/run runs both.
# The runs on a local Spark standalone cluster (@pytest.mark.cluster: spark-submit to a master and
# a worker, ~2 minutes) run here too, for the same reason.
test-faults: setup
	@$(PY) -m pytest -m "(faults or cluster) and not containers" -n $(FAULT_WORKERS) --dist loadfile $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

# The edit loop, under 3 minutes on 2 cores: the unit tests but those marked slow, the docs pages'
# own checks, and the quickest integration tests: in this process, on the shared SparkSession and
# FeederBatchSpout, with no Kafka, Redis or Elasticsearch to start.
FAST_INTEGRATION := \
	tests/integration/dsl/test_trident_api_forms.py \
	tests/integration/dsl/test_untyped_forms.py \
	tests/integration/runtime/test_operation_lifecycle.py \
	tests/integration/spout/test_feeder_on_spark.py \
	tests/integration/storm_starter/test_trident_word_count.py \
	tests/integration/storm_starter/test_trident_map_example.py \
	tests/integration/test_docs_examples.py

test-fast: setup
	@$(PY) -m pytest -m "not slow" tests/unit $(FAST_INTEGRATION) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

# Docker (docker/dockerd.sh): when root, apt-get installs docker.io, docker-compose and mmdebstrap if
# missing and starts a private dockerd (own data root, exec root and socket; no bridge, no iptables);
# the engine this starts is stopped at the end. Without Docker, the container tests skip saying why.
images: setup
	docker/dockerd.sh run docker/images.sh

# The cluster of containers, the faults, and the fixtures' testcontainers provider (docker/README.md).
test-containers: setup
	$(PY) -m pip install --quiet $(EDITABLE) '.[dev,containers]'
	PY=$(PY) docker/dockerd.sh run docker/test-containers.sh $(PYTEST_ARGS)

# The oldest PySpark the package supports (pyproject: pyspark>=4.2,<4.4), in a virtualenv of its
# own: the quick tests (those of `make test-fast`) on it. `make test` runs everything on the newest.
LOWEST_PYSPARK ?= 4.2.0
LOW_VENV       ?= .venv-pyspark-$(LOWEST_PYSPARK)
test-lowest-pyspark: system-deps
	@test -x $(LOW_VENV)/bin/python || $(PYTHON) -m venv $(LOW_VENV)
	$(LOW_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LOW_VENV)/bin/python -m pip install --quiet $(EDITABLE) '.[dev]' 'pyspark==$(LOWEST_PYSPARK)'
	@$(LOW_VENV)/bin/python -c "import pyspark; print('PySpark', pyspark.__version__)"
	@$(LOW_VENV)/bin/python -m pytest -m "not slow" tests/unit $(FAST_INTEGRATION) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

test-unit: setup
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check trident_spark state tests bench examples

# [tool.mypy] checks trident_spark.state too, through the trident_spark/state link to state/.
typecheck: setup
	$(VENV)/bin/mypy

# The docs site into site/, warnings as errors (mkdocs.yml: strict); the API reference is
# generated from the docstrings.
docs: setup
	$(PY) -m pip install --quiet $(EDITABLE) '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The sdist and wheel into dist/, and twine's check of their metadata (what an index would show).
dist: setup
	$(PY) -m pip install --quiet $(EDITABLE) '.[release]'
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(VENV)/bin/twine check --strict dist/*

bench: setup
	$(PY) bench/spout.py

# Word count into each state backend vs Spark's own stateful groupBy().count() (about 10 minutes).
bench-state: setup
	$(PY) bench/state.py

clean:
	rm -rf $(VENV) .venv-pyspark-* build dist site *.egg-info .pytest_cache .mypy_cache .ruff_cache
