"""What runs beside the model, on the page (issue 26): the Production group's fields, each named by
its engine option, and the results' "Beside the model" section with each part's figures and
lines as the engine gives them (kvcalc.reports.report.to_json, called here in the test's own Python on
the page's own link), the memory bar's segments for what a GPU holds beside the weights, a bad
value said beside its field with nothing typed lost, and a link carrying every serving key back
into the fields. Every wait is for a condition."""

import re
from urllib.parse import unquote

from kvcalc.reports import link
from kvcalc.reports.link import evaluate_link
from kvcalc.reports.memory_bar import memory_bar
from kvcalc.inputs.options import OPTIONS
from kvcalc.reports.report import to_json
from kvcalc.words import size

import pytest

from pagekit import open_page, settle, url_of, open_folds
from test_a11y import run_axe

LLAMA_8B = "#model=meta-llama%2FLlama-3.1-8B&gpu=h100-sxm-80gb&engine=vllm"
ROUND_TRIP = {"draft-model": "meta-llama/Llama-3.2-1B", "spec-tokens": "4", "max-loras": "4", "max-lora-rank": "64",
              "offload-gib": "64", "offload-backend": "lmcache", "host-memory-gib": "512"}
OPEN = "document.getElementById('serving').open"
SHOWN = LLAMA_8B + "&max-loras=4&max-lora-rank=64&offload-gib=64&draft-model=meta-llama/Llama-3.2-1B&spec-tokens=4"


def engine_answer(page):
    """The engine's answer (to_json, the memory bar) for the page's own link, evaluated here."""
    evaluation, ignored = evaluate_link(unquote(url_of(page).split("#", 1)[1]))
    assert evaluation.ok and not ignored, (evaluation.errors, ignored)
    return to_json(evaluation.scenario, evaluation), memory_bar(evaluation, evaluation.scenario)


def in_page(page, lines: list) -> list:
    """The engine's sentences as the page says them: each input named by its label's words
    (web.errors.in_page_words: "offload-link" is “Offload link”)."""
    labels = dict(page.eval_on_selector_all("label[for]", "ls => ls.map(l => [l.htmlFor, l.textContent])"))
    names = sorted((re.escape(o.name) for o in OPTIONS if "-" in o.name), key=len, reverse=True)
    pattern = re.compile(r"(?<![\w-])(" + "|".join(names) + r")(?![\w-])")
    return [pattern.sub(lambda m: f"“{labels.get(m[1], m[1]).split(' (')[0].strip()}”", line) for line in lines]


def shown_part(page, part: str) -> dict:
    """A part's figures as shown: {name: (figure, data-value, exact)} and its lines."""
    figures = page.eval_on_selector_all(
        f"#serving-{part}-figures > div",
        "rows => rows.map(r => [r.querySelector('dt').textContent, r.querySelector('dd.figure').textContent, "
        "r.querySelector('dd.figure').dataset.value, r.querySelector('dd.exact').textContent])")
    lines = page.eval_on_selector_all(f"#serving-{part}-lines li", "items => items.map(i => i.textContent)")
    return {"figures": {name: (figure, value, exact) for name, figure, value, exact in figures}, "lines": lines}


def test_lora_slots_typed_show_the_engines_bytes_in_their_section_and_the_bar(page, site):
    recorder = open_page(page, site + LLAMA_8B)
    settle(page)
    assert not page.evaluate(OPEN), "a link without a serving key leaves the group closed"
    assert page.is_hidden("#serving-view") and page.is_hidden("#legend-item-lora")
    assert page.get_attribute("#bar-lora", "data-bytes") == "0"
    page.click("#serving > summary")
    page.fill("#max-loras", "4")
    page.fill("#max-lora-rank", "64")
    page.wait_for_selector("#serving-lora", state="visible")
    data, bar = engine_answer(page)
    slots = data["lora_bytes_per_gpu"]
    assert slots and slots == data["serving"]["lora"]["lora_bytes_per_gpu"] == bar["lora"] > 0
    shown = shown_part(page, "lora")
    assert shown["figures"]["LoRA slots per GPU"] == (size(slots, "gib"), str(slots), f"{slots:,} B")
    assert shown["figures"]["Adapter slots"][1] == "4" and shown["figures"]["Rank of every slot"][1] == "64"
    assert shown["lines"] == in_page(page, data["serving"]["lora"]["lines"])
    for other in ("draft", "encoder", "offload", "prefix_hits"):
        assert page.is_hidden(f"#serving-{other}")
    # The bar: the slots' own segment, carved out of the weights, and its legend entry.
    assert page.get_attribute("#bar-lora", "data-bytes") == str(slots)
    assert page.get_attribute("#bar-weights", "data-bytes") == str(bar["weights"])
    assert float(page.evaluate("document.getElementById('bar-lora').style.width").rstrip("%")) > 0
    assert page.is_visible("#legend-item-lora") and page.is_hidden("#legend-item-draft")
    assert page.inner_text("#legend-lora") == size(slots, "gib")
    assert "LoRA adapter slots" in page.get_attribute("#memory-bar", "aria-label")
    assert "Draft weights" not in page.get_attribute("#memory-bar", "aria-label")
    assert "LoRA" in page.inner_text("#summary .verdict")
    # The unit switch writes the section's figures in GB too.
    page.check("#unit-gb")
    page.wait_for_function("v => document.querySelector('#serving-lora-figures dd.figure[data-value=\"' + v + "
                           "'\"]').textContent.endsWith('GB')", arg=str(slots))
    assert shown_part(page, "lora")["figures"]["LoRA slots per GPU"][0] == size(slots, "gb")
    # Taken away again: the section and the segment go.
    page.fill("#max-loras", "")
    page.fill("#max-lora-rank", "")
    page.wait_for_selector("#serving-view", state="hidden")
    assert page.get_attribute("#bar-lora", "data-bytes") == "0" and page.is_hidden("#legend-item-lora")
    assert not recorder.problems, recorder.problems


def test_a_bad_value_is_said_beside_its_field_and_nothing_typed_is_lost(page, site):
    recorder = open_page(page, site + LLAMA_8B + "&max-loras=4&max-lora-rank=64")
    settle(page)
    assert page.evaluate(OPEN), "a link that sets a serving key opens the group"
    page.evaluate("document.getElementById('advanced').open = true")     # where the shared prefix is
    page.fill("#prefix-tokens", "2048")
    settle(page)
    before = url_of(page)
    page.fill("#prefix-hit-rate", "1.5")
    page.wait_for_function("document.getElementById('error-prefix-hit-rate').textContent !== ''")
    assert "1" in page.inner_text("#error-prefix-hit-rate")
    assert page.get_attribute("#prefix-hit-rate", "aria-invalid") == "true"
    assert page.get_attribute("#summary", "data-stale") == "true"
    assert "Prefix hit rate" in page.inner_text("#error-summary")
    kept = ("prefix-hit-rate", "max-loras", "max-lora-rank", "prefix-tokens")
    assert [page.input_value(f"#{name}") for name in kept] == ["1.5", "4", "64", "2048"]
    assert url_of(page) == before, "the link keeps the last valid inputs"
    # A negative offload: the same, beside its own field.
    page.fill("#prefix-hit-rate", "")
    page.fill("#offload-gib", "-1")
    page.wait_for_function("document.getElementById('error-offload-gib').textContent !== ''")
    assert page.inner_text("#error-prefix-hit-rate") == ""
    assert page.input_value("#offload-gib") == "-1" and page.input_value("#max-loras") == "4"
    page.fill("#offload-gib", "")
    page.wait_for_function("document.getElementById('summary').dataset.stale === 'false'")
    assert page.inner_text("#error-offload-gib") == "" and page.get_attribute("#offload-gib", "aria-invalid") is None
    assert not recorder.problems, recorder.problems


def test_an_error_inside_the_closed_group_opens_it(page, site):
    open_page(page, site + LLAMA_8B)
    assert not page.evaluate(OPEN)
    # A value typed in a closed group (as a restored form or autofill can): its error opens it.
    page.evaluate("""() => { const f = document.getElementById('offload-gib'); f.value = '-5';
                             f.dispatchEvent(new Event('input', {bubbles: true})); }""")
    page.wait_for_function(OPEN)
    assert page.inner_text("#error-offload-gib") and page.is_visible("#error-offload-gib")


def test_a_link_with_the_serving_keys_reproduces_the_inputs(page, site, context):
    link = LLAMA_8B + "".join(f"&{key}={value}" for key, value in ROUND_TRIP.items())
    recorder = open_page(page, site + link)
    settle(page)
    assert page.evaluate(OPEN)
    assert {key: page.input_value(f"#{key}") for key in ROUND_TRIP} == ROUND_TRIP
    assert page.get_attribute("#summary", "data-stale") == "false", page.inner_text("#error-summary")
    data, bar = engine_answer(page)
    for part in ("draft", "lora", "offload"):
        assert page.is_visible(f"#serving-{part}")
        assert shown_part(page, part)["lines"] == in_page(page, data["serving"][part]["lines"])
    assert shown_part(page, "draft")["figures"]["Draft weights, total"][1] == str(data["draft_weights_bytes"])
    assert shown_part(page, "offload")["figures"]["Tokens the tier holds"][1] == str(data["offload_tokens"])
    assert page.get_attribute("#bar-draft", "data-bytes") == str(bar["draft"]) and page.is_visible("#legend-item-draft")
    # The page's own link carries every serving key, and opened again gives the same fields.
    own = url_of(page)
    evaluation, ignored = evaluate_link(unquote(own.split("#", 1)[1]))
    assert not ignored and {key: str(evaluation.values[key]) for key in ROUND_TRIP} == ROUND_TRIP
    again = context.new_page()
    open_page(again, own)
    settle(again)
    assert again.evaluate(OPEN)
    assert {key: again.input_value(f"#{key}") for key in ROUND_TRIP} == ROUND_TRIP
    assert shown_part(again, "lora") == shown_part(page, "lora")
    assert not recorder.problems, recorder.problems


def test_prefix_hits_and_the_offload_link_show_their_expectations(page, site):
    recorder = open_page(page, site + LLAMA_8B + "&prefix-tokens=2048&prefix-hit-rate=0.5&offload-gib=64"
                         "&offload-link=pcie5")
    settle(page)
    assert page.get_attribute("#summary", "data-stale") == "false", page.inner_text("#error-summary")
    data, _ = engine_answer(page)
    hits = shown_part(page, "prefix_hits")
    assert hits["lines"] == in_page(page, data["serving"]["prefix_hits"]["lines"])
    assert hits["figures"]["Expected requests that fit"][1] == str(data["expected_requests_fit"])
    offload = shown_part(page, "offload")
    assert offload["lines"] == in_page(page, data["serving"]["offload"]["lines"])
    assert "Bringing one request back, at least" in offload["figures"]
    assert page.input_value("#offload-link") == "pcie5"
    assert not recorder.problems, recorder.problems


def test_deepseek_v3_with_mtp_on_8_h200_and_a_256_gib_cpu_tier(page, site):
    # The "done when", typed as a user would: each part's memory, the verdict, the bar
    # and the launch flags (the figures themselves are pinned in tests/serving/test_serving.py).
    recorder = open_page(page, site + "#model=deepseek-ai%2FDeepSeek-V3&gpu=h200-141gb&gpus=8&engine=vllm"
                         "&context=32768")
    open_folds(page, "takeaway")
    settle(page)
    page.click("#serving > summary")
    page.select_option("#mtp", "on")
    page.fill("#offload-gib", "256")
    page.wait_for_selector("#serving-draft", state="visible")
    page.wait_for_selector("#serving-offload", state="visible")
    settle(page)
    data, bar = engine_answer(page)
    assert data["draft_weights_bytes_per_gpu"] == bar["draft"] == 1_644_557_340
    assert shown_part(page, "draft")["lines"] == in_page(page, data["serving"]["draft"]["lines"])
    assert shown_part(page, "offload")["figures"]["Tokens the tier holds"][1] == str(data["offload_tokens"])
    assert page.get_attribute("#bar-draft", "data-bytes") == str(bar["draft"])
    verdict = page.inner_text('p.verdict[data-metric="verdict"]')
    assert "the MTP heads" in verdict and "more tokens" in verdict, verdict
    page.locator("#launch-vllm").scroll_into_view_if_needed()
    page.wait_for_function("() => document.querySelector('#launch-vllm pre.command').textContent"
                           ".includes('--kv-offloading-size 256')")
    assert '"method": "mtp"' in page.inner_text("#launch-vllm pre.command")
    assert not recorder.problems, recorder.problems


def test_a_vision_encoder_kept_whole_has_its_own_segment(page, site):
    recorder = open_page(page, site + "#model=Qwen%2FQwen3-VL-32B-Instruct&gpu=h100-sxm-80gb&engine=vllm&gpus=2"
                         "&mm-encoder-tp-mode=data")
    settle(page)
    assert page.evaluate(OPEN) and page.input_value("#mm-encoder-tp-mode") == "data"
    data, bar = engine_answer(page)
    encoder = shown_part(page, "encoder")
    assert encoder["lines"] == in_page(page, data["serving"]["encoder"]["lines"])
    assert encoder["figures"]["Encoder weights, total"][1] == str(data["encoder_weights_bytes"])
    assert bar["encoder"] > 0 and page.get_attribute("#bar-encoder", "data-bytes") == str(bar["encoder"])
    assert page.is_visible("#legend-item-encoder") and page.inner_text("#legend-encoder") == size(bar["encoder"], "gib")
    # Split with the model's weights (vLLM's default), nothing is added beside them: no segment.
    page.select_option("#mm-encoder-tp-mode", "weights")
    page.wait_for_selector("#legend-item-encoder", state="hidden")
    assert page.get_attribute("#bar-encoder", "data-bytes") == "0"
    assert not recorder.problems, recorder.problems


def test_the_draft_field_offers_the_presets(page, site):
    open_page(page, site + LLAMA_8B)
    assert page.evaluate("document.querySelectorAll('#draft-presets option').length") == 0, "filled on first use"
    page.click("#serving > summary")
    page.focus("#draft-model")
    page.wait_for_function("document.querySelectorAll('#draft-presets option').length > 0")
    ids = page.eval_on_selector_all("#draft-presets option", "options => options.map(o => o.value)")
    assert "meta-llama/Llama-3.2-1B" in ids and len(ids) == len(set(ids))
    page.fill("#draft-model", "meta-llama/Llama-3.2-1B")
    page.fill("#spec-tokens", "4")
    page.wait_for_selector("#serving-draft", state="visible")
    assert page.is_visible("#legend-item-draft")


@pytest.mark.parametrize("color_scheme", ["light", "dark"])
def test_axe_on_the_group_open_and_the_section_shown(browser, site, color_scheme):
    context = browser.new_context(color_scheme=color_scheme, service_workers="block")     # axe is routed
    page = context.new_page()
    open_page(page, site + SHOWN)
    page.fill("#prefix-hit-rate", "1.5")            # an error beside a field of the group too
    page.wait_for_function("document.getElementById('error-prefix-hit-rate').textContent !== ''")
    settle(page)
    assert page.evaluate(OPEN) and page.is_visible("#serving-lora")
    assert run_axe(page, site) == []
    context.close()


def test_a_link_key_the_page_has_no_field_for_is_said(page, site):
    # A draft given by its config.json is the CLI's (--draft-hf-config): the page says it left it out.
    fragment = link.encode({"model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "spec-tokens": "2", "draft-hf-config": {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096, "intermediate_size": 14336, "vocab_size": 128256,
        "torch_dtype": "bfloat16"}})
    open_page(page, site + "#" + fragment)
    assert "draft-hf-config: not an input on this page" in page.inner_text("#link-notes")
