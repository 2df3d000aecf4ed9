# `make run` and `make test` each bootstrap .venv from nothing, then start the service / run the tests.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench clean proto

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m engine_service serve

# tests/postgres_env.sh: a PostgreSQL server for the PostgreSQL store's tests (see the file)
test: $(STAMP)
	. tests/postgres_env.sh && $(PY) -m pytest -q -n 2

bench: $(STAMP)
	$(PY) bench/rules_playouts.py

# Regenerate engine_service/transport/generated from proto/cardgames/v1 (commit the result).
proto: $(STAMP)
	$(PY) -m engine_service.transport.codegen

clean:
	rm -rf $(VENV) build *.egg-info
