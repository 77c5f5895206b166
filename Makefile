VENV ?= .venv
PY := $(VENV)/bin/python
# Two installs: `make run` needs only the daemon and the quickstart's client (kafka-python);
# `make install` (and test, lint, bench) adds the test, analytics and bench extras and the
# machine's PostgreSQL server and chromium, which only the tests use.
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run

.PHONY: install install-run run test test-fast bench chaos lint fmt clean

install: $(STAMP)

install-run: $(RUN_STAMP)

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# setup.py builds the compiled heartbeat lane (optional: without a C compiler the install
# still succeeds and the pure-Python lane answers every heartbeat); its source rebuilds it.
BUILD_INPUTS := pyproject.toml setup.py coordinator/fastlane/_heartbeats.c

$(RUN_STAMP): $(BUILD_INPUTS) | $(PY)
	$(PY) -m pip install --quiet -e '.[quickstart]'
	touch $(RUN_STAMP)

$(STAMP): $(BUILD_INPUTS) | $(PY)
	@# The tests start a real PostgreSQL server from the machine's own binaries.
	@command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } \
		|| echo "warning: PostgreSQL's server binaries are missing (Debian: apt-get install postgresql)"
	@# The console's browser tests drive Debian's chromium through Playwright.
	@command -v chromium >/dev/null \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
		|| echo "warning: chromium is missing (Debian: apt-get install chromium); the browser tests will skip"
	@# The console's reverse-proxy test runs docs/examples/nginx-console.conf in Debian's nginx.
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx; } \
		|| echo "warning: nginx is missing (Debian: apt-get install nginx); the proxy test will skip"
	$(PY) -m pip install --quiet -e '.[quickstart,test,analytics,bench]'
	@# kafkajs reads through the daemon in front of a broker (tests/integration/test_upstream.py).
	@command -v npm >/dev/null && npm install --prefix $(VENV)/node kafkajs@2.2.4 --silent --no-audit --no-fund \
		|| echo "warning: kafkajs is missing (needs npm); its test will skip"
	touch $(STAMP) $(RUN_STAMP)

run: install-run
	@echo 'group-coordinator on 127.0.0.1:9092 with a demo topic "demo" of 6 partitions, its console on http://127.0.0.1:8080/ (Ctrl-C stops it)'
	$(VENV)/bin/group-coordinator serve --topic demo:6 --http-listen 127.0.0.1:8080

# Tests run on several workers (pytest-xdist): most of them wait on sockets, timers and
# processes, so three keep two cores busy (on this 2-core machine: 8:35 against 9:40 with
# two). Bytecode is cached even where the environment turns it off, since every worker
# would otherwise compile the project and its tests again, but in a temporary directory,
# as are pytest's and Hypothesis's caches (conftest.py): a test run writes nothing into
# the checkout.
TEST_WORKERS ?= 3
BYTECODE_CACHE ?= $(or $(TMPDIR),/tmp)/group-coordinator-bytecode
PYTEST := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(BYTECODE_CACHE) \
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal -p no:cacheprovider

test: install
	$(PYTEST) -m "not bench"

test-fast: install
	$(PYTEST) -m "not integration and not bench"

# The benchmarks' end-to-end checks at their smallest size first (minutes), then the runs.
bench: install
	$(PYTEST) -m bench tests/bench
	$(PY) -m bench

# A bounded fault campaign against a 3-node cluster (a few minutes; tests/chaos/campaign.py),
# after the random-moment kill tests at 20 kill/restart cycles each (`make test` runs 5).
KILL_TESTS := tests/integration/test_durability.py::test_every_acknowledged_commit_survives_sigkill_at_a_random_moment \
	tests/integration/test_cluster.py::test_no_acknowledged_commit_is_lost_when_the_owner_is_killed_again_and_again
chaos: install
	KILL_CYCLES=20 $(PY) -m pytest -q $(KILL_TESTS)
	$(PY) -m tests.chaos.campaign --out bench/results/chaos.json

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy protocol coordinator
	$(VENV)/bin/lint-imports

fmt: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
