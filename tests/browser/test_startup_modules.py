"""Issue 40: the page imports at start only what its first figures need, and says why for each.
tools/startup_modules.txt lists every module of the app imported before the page is
ready on a shared link, each with its reason; a module that joins the start without a line there
fails this test, and one that leaves it is struck from the list."""

import json
from pathlib import Path

from pagekit import open_page

LISTED = Path(__file__).resolve().parents[2] / "tools" / "startup_modules.txt"
LINK = "#model=meta-llama/Llama-3.1-70B&context=32768&batch=16&kv-dtype=fp8&gpu=h100-sxm-80gb&gpus=8"


def listed() -> dict:
    reasons, modules = {}, {}
    for line in LISTED.read_text(encoding="utf-8").splitlines():
        if line.startswith("#   "):
            key, _, words = line[4:].partition(": ")
            reasons[key] = words
        elif line and not line.startswith("#"):
            module, reason = line.split()
            modules[module] = reason
    assert set(modules.values()) <= set(reasons), "a module's reason is not among the reasons"
    return modules


def test_the_start_imports_only_the_modules_listed_with_their_reasons(page, site):
    open_page(page, site + LINK)
    loaded = json.loads(page.evaluate("""async () => {
        const early = await import(new URL('static/early.mjs', location.href).href);
        const py = await early.loadPyodide();
        return py.runPython("import sys, json; json.dumps(sorted(m for m in sys.modules "
            + "if m.split('.')[0] in ('kvcalc', 'web', 'main')))");
    }"""))
    modules = listed()
    joined = sorted(set(loaded) - set(modules))
    assert joined == [], f"imported at start without a reason in startup_modules.txt: {joined}"
    gone = sorted(set(modules) - set(loaded))
    assert gone == [], f"no longer imported at start: strike {gone} from startup_modules.txt"
