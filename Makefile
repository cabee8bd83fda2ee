# Two commands on a fresh machine: `make demo` and `make test`. Both create or reuse .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: install test test-fast demo bench-pii clean schemas docs

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@rm -f $(VENV)/.installed-*; touch $(STAMP)

install: $(STAMP)

# The tests also run the VRAM tracer, so `make test` adds the 'trace' extra (torch + peft: about 4 minutes and
# ~6 GB on a fresh machine, the PyPI torch wheel brings its CUDA libraries); `make demo` stays without torch.
# It adds the 'bench' extra too (a 13 MB spaCy model: the PII benchmark's plain-Presidio baseline, tested).
TRACE_STAMP := $(VENV)/.installed-trace-$(shell cksum pyproject.toml | cut -d' ' -f1)
$(TRACE_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[test,trace,bench]'
	@touch $(TRACE_STAMP)

# The `train` extra (trl) for the emitted trainer configs and the CPU training test. axolotl and LLaMA-Factory
# pin other transformers/torch/peft/datasets versions, so they are not installed: their wheels are only unpacked
# into $(VENV)/train-parsers (no dependencies) and the tests run their own config parsers from there.
TRAIN_PARSERS := axolotl==0.19.0 llamafactory==0.9.5 omegaconf==2.4.0 antlr4-python3-runtime==4.13.2
TRAIN_STAMP := $(VENV)/.installed-train-$(shell cksum pyproject.toml Makefile | cksum | cut -d' ' -f1)
$(TRAIN_STAMP): $(TRACE_STAMP)
	$(PY) -m pip install -q -e '.[test,trace,train,bench]'
	rm -rf $(VENV)/train-parsers && mkdir -p $(VENV)/train-parsers/wheels
	$(PY) -m pip download -q --no-deps -d $(VENV)/train-parsers/wheels $(TRAIN_PARSERS)
	for w in $(VENV)/train-parsers/wheels/*.whl; do $(PY) -m zipfile -e "$$w" $(VENV)/train-parsers/src; done
	# s3fs (axolotl's s3:// reader) apart: its aiobotocore pins an older botocore than boto3 takes (pip warns of it)
	rm -rf $(VENV)/s3fs-lib
	$(PY) -m pip install -q --target $(VENV)/s3fs-lib "s3fs==$$($(PY) -c 'import fsspec; print(fsspec.__version__)')"
	@rm -f $(VENV)/.installed-train-*; touch $(TRAIN_STAMP)

# tests/integration/test_report_html.py opens report.html in Debian's headless chromium: installed here where missing
# (it skips, naming why, where it cannot be)
test: $(TRAIN_STAMP)
	-@sh tests/install_chromium.sh
	$(PY) -m pytest -q tests

# the unit tier for the edit-run loop (no servers, no whole runs, no fuzzing; see the markers in pyproject.toml)
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow and not integration and not fuzz" tests

demo: $(STAMP)
	$(PY) -m flows.demo

# The PII benchmark with its plain-Presidio baseline (the `bench` extra: a spaCy model), about 4 minutes
bench-pii: $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) bench/pii/run.py | tee bench/pii/last_run.txt

schemas: $(STAMP)
	$(PY) -c "import json; from pipeline.core.config import config_json_schema; open('schemas/config.schema.json','w').write(json.dumps(config_json_schema(), indent=2) + '\n')"

# docs/configuration.md from the config model (tests/core/test_docs.py fails when it is stale)
docs: $(STAMP)
	$(PY) -m pipeline.core.config_reference

clean:
	rm -rf runs .prefect .cache .pytest_cache
