# Two commands: `make serve` (build and serve on http://127.0.0.1:8000) and `make test`.
# Each does its own set-up: a venv in .venv, npm ci, the vendored runtime, dist/.
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
PORT ?= 8000
CHROMIUM ?= /usr/bin/chromium
ENGINE := $(shell find app -name '*.py' -o -name '*.json' 2>/dev/null)

.PHONY: serve test test-all test-sweeps accuracy test-engine test-browser dist vendor venv chromium bench screenshots clean

venv: $(VENV)/.ready
$(VENV)/.ready: requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(VPY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

vendor: static/vendor/.ready
static/vendor/.ready: node_modules/.package-lock.json tools/vendor.py tools/precompile.mjs tools/stdlib_compiled.txt
	$(PYTHON) tools/vendor.py static/vendor
	touch $@

dist: dist/index.html
dist/index.html: static/vendor/.ready index.html pyscript.toml tools/build.py tools/startup_modules.txt tools/precompile.mjs tools/snapshot.mjs $(ENGINE) $(wildcard static/*)
	$(PYTHON) tools/build.py dist

serve: dist
	$(PYTHON) tools/serve.py dist --port $(PORT)

# Debian's Chromium drives the browser tests (Playwright cannot download its own here).
chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "Chromium missing: install it (apt-get install chromium) or set CHROMIUM=path"; exit 1; fi; \
	fi

# Six workers on two cores: a browser test waits on its page (Pyodide starting, the server, the
# page's own timers) about half its time, so two workers left the cores half idle (12:17 for the
# suite on an idle machine); six keep both busy, and with both cores taken by other work they
# still get most of them (8:01 with two `yes` loops, against 12:41 with two workers). worksteal
# hands a long test's neighbours to an idle worker, so the slowest tests do not end the run alone.
# Each worker serves dist/ and drives its own Chromium; `make test JOBS=0` runs in one process.
JOBS ?= 6
test: venv dist chromium
	$(VPY) -m pytest -q $(if $(filter 0,$(JOBS)),,-n $(JOBS) --dist worksteal)

# The hostile sweeps whole (make test runs a fixed sample of them); CI runs both.
# As many workers as make test: on an idle machine two would do (2:56), but with both cores
# taken by other work six get more of them (4:46 against 6:21 with two `yes` loops running).
test-sweeps: venv
	KVCALC_SWEEP=all $(VPY) -m pytest -q $(if $(filter 0,$(JOBS)),,-n $(JOBS)) tests/readers/test_hostile_configs.py

test-all: test test-sweeps

# The accuracy corpus scored: every public start-up log in tests/fixtures/logs/corpus/, each row
# beside ours, then the tables docs/accuracy.md shows. A report, not a test.
accuracy: venv
	$(VPY) tools/accuracy.py --rows

test-engine: venv
	$(VPY) -m pytest -q -m "not browser"

bench: venv dist chromium
	$(VPY) bench/load.py --write-docs

# 1280x800, 1440x900 and 390x844, light and dark, into docs/screenshots/.
screenshots: venv dist chromium
	$(VPY) tools/screenshots.py docs/screenshots

clean:
	rm -rf dist static/vendor node_modules $(VENV) .pytest_cache
