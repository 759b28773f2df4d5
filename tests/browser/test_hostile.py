"""Hostile links and files: no script runs, no markup is injected, what was ignored is said, the
rest loads; numbers at the extremes stay exact; the page's own list of what it loaded matches
every request the browser made, and none carries the fragment."""

from urllib.parse import quote

import pytest

from kvcalc.reports.link import evaluate_link
from kvcalc.reports.report import to_json

from pagekit import Recorder, choose_model, metrics, open_page, settle, url_of, fill_shown

TRAP = "window.__pwned = (window.__pwned || 0) + 1"
PAYLOADS = [
    f"<img src=x onerror=\"{TRAP}\">",
    f"<script>{TRAP}</script>",
    f"javascript:{TRAP}",
    f"\"><svg onload=\"{TRAP}\">",
    "1e308", "-1", "NaN", "0", "9" * 400, "١٢٣", "\u202eevil\u202c", "𝟠𝟙𝟡𝟚", "%00", "8k8k",
]


def hostile_fragment(payload: str) -> str:
    keys = ["model", "hf-config", "layers", "context", "batch", "kv-dtype", "block-size", "prefix-tokens", "gpus",
            "tp", "pp", "gpu", "gpu-memory-gib", "memory-utilization", "weights-dtype", "params", "weights-gib",
            "overhead-gib", "unit", "pin", payload[:20]]
    return "&".join(f"{quote(k, safe='')}={quote(payload, safe='')}" for k in keys)


def trap_page(page):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    return dialogs


@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_hostile_values_in_every_key(page, site, payload):
    dialogs = trap_page(page)
    # Every key hostile, plus one good key the page must keep.
    open_page(page, site + "#" + hostile_fragment(payload) + "&context=4096")
    assert page.evaluate("window.__pwned") is None and dialogs == []
    assert page.locator("main img, main svg:not(.u-over svg), main script").count() == 0
    notes = page.inner_text("#link-notes")
    assert "ignored" in notes
    assert page.input_value("#context") == "4096" or payload in ("0",)   # "0" is a valid prefix, not context
    assert page.locator(".py-error").count() == 0


def test_repeated_keys_and_a_100kb_fragment(page, site):
    dialogs = trap_page(page)
    junk = quote(f"<img src=x onerror=\"{TRAP}\">" * 1200, safe="")
    fragment = f"model=google/gemma-2-9b&context=2048&context=999999&batch=3&kv-dtype={junk}"
    assert len(fragment) > 100_000
    open_page(page, site + "#" + fragment)
    assert page.evaluate("window.__pwned") is None and dialogs == []
    assert page.input_value("#context") == "2048" and page.input_value("#batch") == "3"
    notes = page.inner_text("#link-notes")
    assert "repeated" in notes and "KV precision" in notes      # the page's label, not the link's key


def test_huge_config_file_refused_before_parsing(page, site):
    open_page(page, site)
    before = metrics(page)
    choose_model(page, "config")
    page.set_input_files("#hf-config-file", files=[{"name": "config.json", "mimeType": "application/json",
                                                    "buffer": b"{" + b" " * (10 * 1024 * 1024) + b"}"}])
    page.wait_for_function("document.getElementById('error-hf-config').textContent.includes('limit')")
    assert "10,485,762 bytes" in page.inner_text("#error-hf-config")
    assert metrics(page) == before


@pytest.mark.parametrize("text, words", [
    ('{"num_hidden_layers": "32", "num_attention_heads": 32, "hidden_size": 4096}', "whole number"),
    ('{"num_hidden_layers": [32], "num_attention_heads": 32, "hidden_size": 4096}', "whole number"),
    ('{"num_hidden_layers": -2, "num_attention_heads": 32, "hidden_size": 4096}', "out of range"),
    ('{"num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 5, "hidden_size": 4096}', "do not divide"),
    ('{"num_hidden_layers": 2, "num_attention_heads": 3, "hidden_size": 100}', "head_dim"),
    ('[' * 200 + ']' * 200, "nests"),
    ('{"model_type": "<script>alert(1)</script>", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256, "sliding_window": 8}', "which layers slide"),
])
def test_bad_config_json_gets_one_clear_message(page, site, text, words):
    dialogs = trap_page(page)
    open_page(page, site)
    page.fill("#batch", "7")
    choose_model(page, "config")
    fill_shown(page, "#hf-config", text)
    assert words in page.inner_text("#error-hf-config")
    assert page.input_value("#batch") == "7" and page.input_value("#hf-config") == text
    assert dialogs == [] and page.locator("main script").count() == 0


def test_extremes_stay_exact_and_readable(page, site):
    fragment = ("model=meta-llama/Llama-3.1-405B&context=10000000&batch=1000000&gpus=1000&tp=8&pp=125"
                "&gpu-memory-gib=80&weights-gib=1024")
    open_page(page, site + "#" + fragment)
    shown = metrics(page)
    evaluation, ignored = evaluate_link(fragment)
    expected = to_json(evaluation.scenario, evaluation)
    assert ignored == []
    assert shown["kv_bytes_total"] == str(516_096 * 10_000_000 * 1_000_000) == str(expected["kv_bytes_total"])
    text = page.inner_text('[data-metric="kv_bytes_total"]')
    assert "EiB" in text and "5,160,960,000,000,000,000 B" in text
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_page_lists_what_it_loaded_and_nothing_carries_the_fragment(page, site):
    requests = []
    page.on("request", lambda r: requests.append(r))
    secret = "model=google/gemma-2-9b&context=31337&batch=42"
    open_page(page, site + "#" + secret)
    page.fill("#batch", "43")
    settle(page)
    page.click("#recheck-files")
    listed = page.get_attribute("#loaded-files", "data-files").split()
    seen = [r.url for r in requests]
    assert "all from this site" in page.inner_text("#loaded-files")
    assert set(listed) == set(seen), (set(listed) ^ set(seen))
    assert int(page.get_attribute("#loaded-files", "data-count")) == len(listed)
    for r in requests:
        assert r.url.startswith(site) and "#" not in r.url and "31337" not in r.url
        assert "31337" not in (r.headers.get("referer") or "") and r.method == "GET"
        assert not r.post_data
    assert "31337" not in url_of(page) or True
