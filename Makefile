VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test test-fast bench lint fmt clean

install: $(STAMP)

$(STAMP): pyproject.toml
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
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,analytics,bench]'
	touch $(STAMP)

run: install
	@echo 'group-coordinator on 127.0.0.1:9092 with a demo topic "demo" of 6 partitions, its console on http://127.0.0.1:8080/ (Ctrl-C stops it)'
	$(VENV)/bin/group-coordinator serve --topic demo:6 --http-listen 127.0.0.1:8080

test: install
	$(PY) -m pytest -q

test-fast: install
	$(PY) -m pytest -q -m "not integration"

bench: install
	$(PY) -m bench

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
