# Herald: `make run` starts a development install on embedded defaults; `make test` runs the whole suite.
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8000
SHELL := /bin/bash

.PHONY: install install-dev run test lint format schema migrate clean-dev screenshots

# The runtime alone (requirements.txt) for `make run`; tests and lint add requirements-dev.txt on top.
$(BIN)/.installed: requirements.txt
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(BIN)/.installed-dev: requirements-dev.txt $(BIN)/.installed
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

install: $(BIN)/.installed

install-dev: $(BIN)/.installed-dev

migrate: install
	$(BIN)/python manage.py migrate --no-input -v 0

# The web server, the Celery workers, celery-beat and the SMTP listeners in one terminal (config/devrun.py); Ctrl-C
# stops them all.
run: export DEBUG ?= true
run: export PUBLIC_URL ?= http://localhost:$(PORT)
# The SMTP listeners on loopback, where AUTH without TLS is allowed (docs/smtp.md).
run: export SMTP_SUBMISSION_LISTEN ?= 127.0.0.1:2587
run: export SMTP_INBOUND_LISTEN ?= 127.0.0.1:2525
run: export SMTP_ALLOW_PLAINTEXT_AUTH ?= true
run: .env migrate
	$(BIN)/python manage.py bootstrap_dev
	$(BIN)/python manage.py run_dev --port $(PORT)

# The checkout of `make run` is a development install: commands run in it (`manage.py doctor`, `export_contacts`)
# read this and need nothing set by hand. An existing .env is left as it is.
.env:
	printf '# Written by `make run`: this checkout is a development install (docs/operations.md for production).\nDEBUG=true\n' > $@

# On PostgreSQL (and Redis) when they answer on 127.0.0.1, else SQLite; an explicit DATABASE_URL always wins.
# The first line says which (.ci/test_services.py).
test: install-dev
	@$(BIN)/python .ci/test_services.py $(BIN)/pytest -q

# docs/screenshots/: every page the browser tests check (marked `browser`), on the desktop and on a phone, taken in
# Debian's chromium (packages chromium and chromium-driver); CI=true makes a missing browser an error, not a skip.
screenshots: install-dev
	rm -f docs/screenshots/*.png
	CI=true SCREENSHOT_DIR=docs/screenshots $(BIN)/pytest -q -m browser

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	DEBUG=true $(BIN)/python manage.py check --fail-level WARNING
	DEBUG=true $(BIN)/python manage.py makemigrations --check --dry-run

schema: install
	DEBUG=true $(BIN)/python manage.py spectacular --validate --fail-on-warn --file var/openapi.yaml

format: install-dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Forget the development install (database, broker files, credentials); the next `make run` starts afresh.
clean-dev:
	rm -rf var/herald.sqlite3* var/broker var/dev-credentials.json var/outbox
