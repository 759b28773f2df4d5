"""Browser tests: the built dist/ served on 127.0.0.1, driven in headless Chromium.

Playwright cannot download browsers here, so Debian's Chromium (/usr/bin/chromium, or $CHROMIUM)
is launched through executable_path; where it is absent, Playwright's own Chromium is used.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIST = Path(os.environ.get("KVCALC_DIST") or ROOT / "dist")   # another build, for a second checkout at work
# --liftoff-only: V8 compiles WebAssembly with its baseline compiler alone. Every page start
# compiles Pyodide's 9.6 MB module, and the optimizing tier then recompiled its hot functions on
# the other core (about 1 CPU-second a start, a quarter of the suite's CPU); the code runs the
# same, the page starts as fast, and the heavy reads (a 10 MB log, shard headers) were not slower.
# The two WebUI omnibox popups are the browser's own address-bar UI, which headless Chromium
# otherwise renders in a renderer of its own beside every page the tests open.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--js-flags=--liftoff-only", "--disable-features=WebUIOmniboxAimPopup,WebUIOmniboxPopup"]


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    args = dict(browser_type_launch_args, args=CHROMIUM_ARGS)
    path = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if os.path.exists(path):
        args["executable_path"] = path
    return args


@pytest.fixture(scope="session")
def site():
    """Base URL of dist/ served by tools/serve.py on a free loopback port."""
    if not (DIST / "index.html").exists():
        pytest.fail("dist/ is not built: run `make dist` (make test does it)")
    proc = subprocess.Popen([sys.executable, str(ROOT / "tools" / "serve.py"), str(DIST), "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    assert line.startswith("serving http://127.0.0.1:"), line
    yield line.split()[-1]
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    # The page's service worker would answer requests that tests route (axe-core, held files);
    # only the offline test, which opens its own context, lets it run.
    return dict(browser_context_args, service_workers="block")
