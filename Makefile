# Set-up and entry points. `make run` benchmarks this machine; `make test` runs the test suite and the linter.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch and torchvision come from this machine's disk (see README "Installing"); any torch >= 2.4 works.
TORCH_PINS ?= torch==2.14.1 torchvision==0.29.1

.PHONY: run test lint install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q $(TORCH_PINS)
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

run: install
	$(BIN)/dlbench run

lint: install
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/lint-imports

test: install lint
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build dist src/*.egg-info
