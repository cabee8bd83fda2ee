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

# The tests also run the VRAM tracer, so `make test` adds the 'trace' extra (torch + peft: about 4 minutes and
# ~6 GB on a fresh machine, the PyPI torch wheel brings its CUDA libraries); `make demo` stays without torch.
TRACE_STAMP := $(VENV)/.installed-trace-$(shell cksum pyproject.toml | cut -d' ' -f1)
$(TRACE_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[test,trace]'
	@touch $(TRACE_STAMP)

# tests/test_report_html.py opens report.html in Debian's headless chromium: installed here where missing
# (it skips, naming why, where it cannot be)
test: $(TRACE_STAMP)
	-@sh tests/install_chromium.sh
	$(PY) -m pytest -q tests

demo: $(STAMP)
	$(PY) -m flows.demo

schemas: $(STAMP)
	$(PY) -c "import json; from pipeline.config import config_json_schema; open('schemas/config.schema.json','w').write(json.dumps(config_json_schema(), indent=2) + '\n')"

clean:
	rm -rf runs .prefect .cache .pytest_cache
