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
	$(BIN)/akh-tui bench --ui
