# `make run` and `make test` each bootstrap .venv from nothing, then start the service / run the tests.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench clean proto api-baseline prometheusrule

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m engine_service serve

# tests/system_tools.sh: Debian's packages some tests run (promtool, Go), installed when missing;
# tests/postgres_env.sh: a PostgreSQL server for the PostgreSQL store's tests (see the files).
# Three xdist workers: many tests wait (an engine process, a grace period, an outage), so on
# 2 cores three finish sooner than two (about 477 s against 626 s here).
test: $(STAMP)
	. tests/system_tools.sh && . tests/postgres_env.sh && $(PY) -m pytest -q -n 3

bench: $(STAMP)
	$(PY) bench/rules_playouts.py

# Regenerate engine_service/transport/generated from proto/cardgames/v1 (commit the result).
proto: $(STAMP)
	$(PY) -m engine_service.transport.codegen

# Record the API as published (proto/published/cardgames_v1.json): `buf breaking` holds every
# later change of v1 to it (tests/transport/test_codegen.py). Run it once a change has shipped,
# so that what it added is held too; never to make a breaking change pass.
api-baseline: $(STAMP)
	$(VENV)/bin/buf build --exclude-source-info -o '-#format=json' | $(PY) -m json.tool --indent 1 > proto/published/cardgames_v1.json

# Regenerate deploy/k8s/tools/prometheusrule.yaml from deploy/prometheus/alerts.yml (commit it).
prometheusrule: $(STAMP)
	$(PY) deploy/k8s/tools/prometheusrule.py > deploy/k8s/tools/prometheusrule.yaml

clean:
	rm -rf $(VENV) build *.egg-info
