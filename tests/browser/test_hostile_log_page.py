"""Hostile logs on the page (issue 34, Bad input): lines of a megabyte built from each engine's own
rules' words are read in slices, each bounded by construction, and answered in one line beside the
box and in the summary, the figures never shown as current for inputs the text did not give.

The CPU cost of each rule's words is held linear in tests/engines/test_hostile_logs.py; here the same lines
go through the page's reader, pasted as a user would, and the page must end in an answer."""

import pytest

from kvcalc.inputs.startup_log import MAX_LINE_CHARS
from kvcalc.engines.llamacpp import log as llamacpp
from kvcalc.engines.sglang import log as sglang
from kvcalc.engines.vllm import log as vllm
from pagekit import open_page, settle
from hostile_lines import line_of, units

MB = 1 << 20


def hostile_paste(module) -> str:
    """Two megabytes: one line of a megabyte of each of the engine's worst shapes (its rules' own
    needles and words repeated), a line per rule besides."""
    parts = [unit for rule in module.RULES for unit in units(rule)[:2]]
    long_lines = [line_of(parts[i * len(parts) // 2], MB) for i in range(2)]
    short_lines = [line_of(part, 200) for part in parts]
    return "\n".join(long_lines + short_lines) + "\n"


@pytest.mark.parametrize("module", [vllm, sglang, llamacpp], ids=lambda m: m.NAME)
def test_a_megabyte_line_of_a_rules_words_is_read_in_bounded_slices_and_answered(page, site, module):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&gpu=h100-sxm-80gb")
    settle(page)
    text = hostile_paste(module)
    page.click("#source-log")
    page.evaluate("text => { const box = document.getElementById('startup-log'); box.value = text; "
                  "box.dispatchEvent(new Event('input', {bubbles: true})); }", text)
    # The reading ends in an answer: inputs read, or one line beside the box.
    page.wait_for_function("!document.getElementById('log-reading').hidden "
                           "|| document.getElementById('error-log').textContent !== ''", timeout=120_000)
    settle(page)
    box = {name: int(page.get_attribute("#startup-log", f"data-{name}"))
           for name in ("slice-chars", "slices", "largest-slice", "yields")}
    assert box["slices"] == -(-len(text) // box["slice-chars"])
    assert box["yields"] == box["slices"]
    assert box["largest-slice"] <= box["slice-chars"] + MAX_LINE_CHARS + 1
    error = page.inner_text("#error-log")
    if error:
        assert "\n" not in error and len(error) < 400, error
        assert page.get_attribute("#summary", "data-stale") == "true"
        assert page.inner_text("#error-summary") != ""
    # The model that was on screen is never shown as current beside what the text gave.
    stale = page.get_attribute("#summary", "data-stale") == "true"
    assert stale or page.input_value("#model") != "meta-llama/Llama-3.1-8B"
    # Never a traceback or an "unexpected" message, wherever the page writes text.
    body = page.inner_text("body")
    assert "Traceback" not in body and "unexpected" not in body.lower()
