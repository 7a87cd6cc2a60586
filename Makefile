# Two entry points: `make demo` and `make test`. Each creates .venv if it is missing and
# installs the package into it (editable) before running.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_DEMO := $(VENV)/.installed-demo
STAMP_TEST := $(VENV)/.installed-test

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_DEMO): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,data]'
	touch $@ $(STAMP_DEMO)

demo: $(STAMP_DEMO)
	$(BIN)/dprates demo

test: $(STAMP_TEST)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: $(STAMP_TEST)
	$(BIN)/ruff check .

bench: $(STAMP_TEST)
	$(BIN)/python bench/perf_spiders.py
	$(BIN)/python bench/perf_runner.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
