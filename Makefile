# Two commands on a fresh machine: `make demo` and `make test`. Both create or reuse .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: install test demo bench clean schemas

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@rm -f $(VENV)/.installed-*; touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q tests

demo: $(STAMP)
	$(PY) -m flows.demo

schemas: $(STAMP)
	$(PY) -c "import json; from pipeline.config import config_json_schema; open('schemas/config.schema.json','w').write(json.dumps(config_json_schema(), indent=2) + '\n')"

clean:
	rm -rf runs .prefect .cache .pytest_cache
