# Set-up and entry points. `make run` benchmarks this machine; `make test` runs the linter, builds the manual
# (docs/) and runs the test suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch and torchvision come from this machine's disk (see docs/install.md); any torch >= 2.4 works.
TORCH_PINS ?= torch==2.14.1 torchvision==0.29.1

.PHONY: run test lint docs install clean

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

# The manual (docs/, mkdocs.yml) into site/. Not `-q`: mkdocs then drops its warnings, and --strict fails on
# warnings only (a broken link or anchor, a page missing from nav); its output is shown when the build fails.
docs: install
	@out=$$(NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict 2>&1) || { echo "$$out"; exit 1; }

test: install lint docs
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build dist site src/*.egg-info
