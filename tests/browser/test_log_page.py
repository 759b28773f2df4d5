"""A pasted start-up log on the page (issue 24): the inputs it implies go into the form (each
listed with its line), the log's figures sit beside what the inputs on screen give and follow an
edit, the link carries the inputs read and never the log, and a text that is no log changes
nothing."""

from urllib.parse import unquote

import pytest

from kvcalc.inputs.startup_log import MAX_LINE_CHARS
from kvcalc.readers.log_rules import model_entry
from pagekit import choose_model, metrics, open_page, settle, url_of, fill_shown
from support import ROOT
from test_a11y import run_axe

LOG = (ROOT / "tests/fixtures/logs/vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log").read_text()
# The log without the two lines that name its model.
NO_MODEL = "".join(line + "\n" for line in LOG.splitlines() if "non-default args" not in line and "Initializing" not in line)
READ = "!document.getElementById('log-reading').hidden"
STALE = "document.getElementById('summary').dataset.stale === 'true'"
CURRENT = "document.getElementById('summary').dataset.stale === 'false'"
LOGS = ROOT / "tests/fixtures/logs"


def paste_log(page, text: str) -> None:
    if page.get_attribute("#source-log", "aria-pressed") != "true":
        page.click("#source-log")
    fill_shown(page, "#startup-log", text)


def table(page, selector: str) -> list[list[str]]:
    return page.eval_on_selector_all(f"{selector} tbody tr",
                                     "rows => rows.map(r => [...r.cells].map(c => c.textContent))")


def read_rows(page) -> dict:
    return {option: (value, line) for option, value, line in table(page, "#log-read")}


def compare_rows(page) -> dict:
    return {label: (printed, ours, line) for label, printed, ours, line in table(page, "#log-compare")}


def test_a_vllm_log_gives_its_inputs_and_figures(page, site):
    recorder = open_page(page, site)
    assert page.is_hidden("#log-fields")
    page.click("#source-log")
    assert page.get_attribute("#source-log", "aria-pressed") == "true" and page.is_visible("#startup-log")
    paste_log(page, LOG)
    page.wait_for_function(READ)
    settle(page)
    assert page.inner_text("#log-summary").startswith("13 inputs read from a vLLM log")
    read = read_rows(page)
    assert read["kv-memory-gib"] == ("41.68", "8")
    assert read["tp"] == ("2", "2")
    assert read["model"][0].startswith("Qwen/Qwen3-30B-A3B")
    assert "GPU's total" in page.inner_text("#log-not-read")
    assert page.is_hidden("#log-model")                # the log names its model
    # Each value read is in its visible field, for the user to see and edit.
    assert page.input_value("#engine") == "vllm"
    assert page.eval_on_selector("#engine", "s => s.selectedOptions[0].textContent").startswith("vLLM")
    assert page.input_value("#engine-version") == "0.12.0"
    assert page.input_value("#tp") == "2" and page.input_value("#context") == "40960"
    assert page.input_value("#batch") == "64" and page.input_value("#kv-memory-gib") == "41.68"
    assert page.input_value("#model") == "Qwen/Qwen3-30B-A3B"
    compared = compare_rows(page)
    assert compared["Maximum concurrency"] == ("22.23x", "22.23x", "10")
    assert compared["KV memory per GPU"][:2] == ("41.68 GiB", "41.68 GiB")
    assert page.inner_text('[data-metric="engine_max_concurrency"] .figure') == "22.23x"
    assert all(url.startswith(site) for url in recorder.requests)
    assert recorder.problems == []


def test_an_edit_moves_the_right_column_and_the_link_carries_inputs_not_the_log(page, site):
    open_page(page, site)
    paste_log(page, LOG)
    page.wait_for_function(READ)
    settle(page)
    page.select_option("#kv-dtype", "fp8")
    page.wait_for_function("""() => [...document.querySelectorAll('#log-compare tbody tr')]
        .some(r => r.cells[0].textContent === 'Maximum concurrency' && r.cells[2].textContent === '44.46x')""")
    settle(page)
    assert compare_rows(page)["Maximum concurrency"] == ("22.23x", "44.46x", "10")      # the log's stays
    assert page.inner_text('[data-metric="engine_max_concurrency"] .figure') == "44.46x"
    shown = metrics(page)
    link = unquote(url_of(page))
    assert "measured-with=" in link and "kv-memory-gib=41.68" in link and "kv-dtype=fp8" in link
    for line in LOG.splitlines():
        assert line.strip()[:40] not in link
    assert "pid=" not in link and "APIServer" not in link
    # The link alone gives the same figures back.
    page.goto("about:blank")
    open_page(page, link)
    settle(page)
    assert metrics(page) == shown
    assert page.inner_text('[data-metric="engine_max_concurrency"] .figure') == "44.46x"
    assert page.input_value("#startup-log") == ""       # the log itself never travelled
    # The panel says the link carries what a log measured, and can forget it.
    assert page.is_visible("#log-reading") and "kv-memory-gib 41.68" in page.inner_text("#log-summary")
    assert page.is_hidden("#log-read") and page.is_hidden("#log-compare")
    page.click("#forget-log")
    page.wait_for_function("document.getElementById('log-reading').hidden")
    link = unquote(url_of(page))
    assert "measured-with" not in link and "kv-memory-gib" not in link and "kv-dtype=fp8" in link


def test_forget_the_log_clears_what_it_measured(page, site):
    open_page(page, site)
    paste_log(page, LOG)
    page.wait_for_function(READ)
    assert "measured-with=" in url_of(page)
    page.click("#forget-log")
    page.wait_for_function("document.getElementById('log-reading').hidden")
    link = url_of(page)
    assert "measured-with" not in link and "loaded-weights-gib" not in link and "kv-memory-gib" not in link
    # The other inputs read stay as they are.
    assert page.input_value("#tp") == "2" and page.input_value("#engine-version") == "0.12.0"
    assert "tp=2" in link and "context=40960" in link
    assert page.input_value("#startup-log") == ""
    assert page.inner_text('[data-metric="engine_max_concurrency"] .figure') != "22.23x"   # estimated now


def test_a_text_that_is_no_log_marks_the_figures_stale_and_changes_no_input(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&context=16384&engine=vllm")
    settle(page)
    before, link = metrics(page), url_of(page)
    paste_log(page, "hello")
    page.wait_for_function(STALE)
    said = "is not a start-up log of vLLM, SGLang or llama.cpp"
    assert said in page.inner_text("#error-log")
    # One message in the summary at the top, the same words: the figures are not the log's.
    summary = page.inner_text("#error-summary")
    assert summary.startswith("Start-up log: the pasted text is not a start-up log") and said in summary
    assert " · " not in summary
    assert page.get_attribute("#first-error", "href") == "#startup-log"
    settle(page)
    assert metrics(page) == before and url_of(page) == link
    assert page.is_hidden("#log-reading") and page.input_value("#context") == "16384"
    # The box emptied: nothing is held back, the figures are current again.
    fill_shown(page, "#startup-log", "")
    page.wait_for_function(CURRENT)
    assert page.inner_text("#error-log") == "" and page.inner_text("#error-summary") == ""


def test_a_log_of_a_model_no_preset_is_withholds_every_figure_until_the_model_is_given(page, site):
    # A public vLLM 0.22.0 log (SOURCES.md) whose model is a Kaggle path ending in "1": no preset's.
    log = (LOGS / "vllm-qwen3-8b-2xt4-tp2-util085-8k-eager-llm-v0.22.0.log").read_text()
    assert model_entry("/kaggle/input/models/qwen-lm/qwen-3/transformers/8b/1") is None
    open_page(page, site)                                  # a fresh page: Llama 3.1 8B on an H100
    settle(page)
    paste_log(page, log)
    page.wait_for_function(READ)
    page.wait_for_function(STALE)
    settle(page)
    # Not Llama 3.1 8B's figures shown as the log's: no model on screen, one message at the top.
    assert page.input_value("#model") == "" and page.input_value("#model-search") == ""
    summary = page.inner_text("#error-summary")
    assert summary.startswith("Model: the log names the model '/kaggle/input/models/qwen-lm/qwen-3/transformers/8b/1'")
    assert "paste its config.json, or choose a model of its shape" in summary and " · " not in summary
    assert page.inner_text("#error-log") == "T" + summary.removeprefix("Model: t")      # beside the log box
    assert page.is_hidden("#log-model") and page.is_hidden("#log-check")
    assert page.get_attribute("#first-error", "href") == "#model-search"
    # The log's own inputs are in the form; the user chooses the model it ran.
    assert page.input_value("#tp") == "2" and page.input_value("#kv-memory-gib") == "4.11"
    choose_model(page, "Qwen/Qwen3-8B")
    page.wait_for_function(CURRENT)
    settle(page)
    assert page.inner_text("#error-summary") == "" and page.inner_text("#error-log") == ""
    assert page.get_attribute('[data-metric="engine_kv_tokens"]', "data-value") == "59856"
    assert compare_rows(page)["KV cache tokens"][:2] == ("59,856", "59,856")
    # The log's figures and ours agree; it ran on 2 x T4 but names no device, so the card the
    # link had on screen is said to be the one the memory checks use, until the T4 is chosen.
    assert page.inner_text("#log-check") == ("The log does not say its GPU: the memory checks use the NVIDIA "
                                             "H100 SXM 80GB on screen; choose the one its server ran.")
    page.select_option("#gpu", "t4-16gb")
    settle(page)
    assert page.is_hidden("#log-check")
    assert page.get_attribute('[data-metric="engine_kv_tokens"]', "data-value") == "59856"
    assert page.is_hidden("#log-model")


def test_the_qwen25_72b_log_never_leaves_llama_on_screen(page, site):
    # Issue 34: a public vLLM 0.19 log of Qwen/Qwen2.5-72B-Instruct on 4 x L40S, pasted on a fresh
    # page, made the headline "Fits ... up to 20.44 at once" for Llama 3.1 8B on an H100.
    log = (LOGS / "vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log").read_text()
    # The -Instruct release is the base preset's shape: the log's model is Qwen2.5 72B.
    assert model_entry("Qwen/Qwen2.5-72B-Instruct")["id"] == "Qwen/Qwen2.5-72B"
    open_page(page, site)
    settle(page)
    paste_log(page, log)
    page.wait_for_function(READ)
    settle(page)
    assert page.input_value("#model") == "Qwen/Qwen2.5-72B"
    assert page.get_attribute("#summary", "data-stale") == "false"
    assert "20.44" not in page.inner_text("#summary")
    # Qwen2.5 72B at tp 4 with the log's 5.11 GiB: the log printed 8.18x and 67,024 tokens; 5.11 is
    # rounded to 0.01 GiB, which allows 66,976, so the summary says no mismatch.
    assert page.inner_text('[data-metric="engine_max_concurrency"] .figure') == "8.18x"
    assert compare_rows(page)["KV cache tokens"][:2] == ("67,024", "66,976")
    assert page.inner_text("#error-summary") == ""
    # The log prints neither its device (4 x L40S) nor its total: the card on screen is not the
    # log's, said in the summary until the user chooses the one its server ran.
    assert page.inner_text("#log-check") == ("The log does not say its GPU: the memory checks use the NVIDIA "
                                             "H100 SXM 80GB on screen; choose the one its server ran.")
    page.select_option("#gpu", "l40s-48gb")
    settle(page)
    assert page.is_hidden("#log-check")
    assert page.inner_text('[data-metric="engine_max_concurrency"] .figure') == "8.18x"


def test_a_log_naming_no_model_withholds_the_figures_then_reads_its_layout_from_them(page, site):
    open_page(page, site + "#model=Qwen/Qwen3-32B&engine=vllm")
    # Without its model's lines, nor the second worker's: the log says neither its model nor its tp.
    paste_log(page, "".join(line + "\n" for line in NO_MODEL.splitlines() if "Worker_TP1" not in line))
    page.wait_for_function(READ)
    page.wait_for_function(STALE)
    settle(page)
    assert page.input_value("#model") == ""
    summary = page.inner_text("#error-summary")
    assert summary == ("Model: the log names no model: paste its config.json, or choose a model its server ran")
    choose_model(page, "Qwen/Qwen3-30B-A3B")
    page.wait_for_function(CURRENT)
    settle(page)
    # Given the model, the log's 41.68 GiB holds the 910,464 tokens it printed only at tp 2 (at tp 1
    # half of them): the page takes tp 2 from those lines, as `kvcalc --from-log --model` does.
    assert page.input_value("#gpus") == "2"
    assert read_rows(page)["tp"][0].startswith("2 implied: 41.68 GiB of KV memory (line 5) holds 910,464 tokens")
    assert page.is_hidden("#log-check")
    assert compare_rows(page)["Maximum concurrency"][:2] == ("22.23x", "22.23x")
    # 41.68 GiB is the KV memory to 2 decimals: 48 tokens more than the log's, inside that rounding
    # (the log check stays hidden), and what `kvcalc --from-log --model` gives too.
    assert compare_rows(page)["KV cache tokens"][:2] == ("910,464", "910,512")


def test_an_sglang_log_of_a_local_path_takes_its_preset_or_withholds(page, site):
    # /data/models/Qwen3-8B is a local copy: its last folder is the preset's name, when the
    # resolver knows it; until then the figures wait for the model.
    open_page(page, site + "#model=Qwen/Qwen3-8B&gpu=h100-sxm-80gb")
    paste_log(page, (LOGS / "sglang-qwen3-8b-tp1-mfs090.log").read_text())
    page.wait_for_function(READ)
    settle(page)
    assert page.input_value("#engine") == "sglang"
    assert page.input_value("#memory-utilization") == "0.9" and page.input_value("#kv-memory-gib") == "55.6"
    if model_entry("/data/models/Qwen3-8B") is None:
        assert page.input_value("#model") == "" and page.get_attribute("#summary", "data-stale") == "true"
        assert "'/data/models/Qwen3-8B'" in page.inner_text("#error-summary")
        choose_model(page, "Qwen/Qwen3-8B")
        page.wait_for_function(CURRENT)
        settle(page)
    assert page.input_value("#model") == "Qwen/Qwen3-8B"
    if "gpu" not in read_rows(page):
        assert page.input_value("#gpu") == "h100-sxm-80gb"        # what the log does not give stays as it was
    assert page.is_hidden("#log-model")
    assert compare_rows(page)["KV memory per GPU"][:2] == ("55.60 GiB", "55.60 GiB")


def test_a_config_pasted_after_a_withheld_log_brings_the_figures_back(page, site):
    open_page(page, site)
    paste_log(page, NO_MODEL)
    page.wait_for_function(STALE)
    assert "names no model" in page.inner_text("#error-summary")
    choose_model(page, "config")
    fill_shown(page, "#hf-config", (ROOT / "tests/fixtures/hf/Qwen__Qwen3-32B.json").read_text())
    page.wait_for_function(CURRENT)
    settle(page)
    assert page.inner_text("#error-summary") == "" and page.inner_text("#error-log") == ""
    assert page.input_value("#kv-memory-gib") == "41.68"          # the log's inputs stay


def test_a_log_naming_no_model_over_a_pasted_config_keeps_it_and_says_so(page, site):
    # The user's own config.json (Qwen3-32B's, from the Hub) stands for a log that names no model.
    config = ROOT / "tests/fixtures/hf/Qwen__Qwen3-32B.json"
    open_page(page, site)
    choose_model(page, "config")
    fill_shown(page, "#hf-config", config.read_text())
    settle(page)
    paste_log(page, NO_MODEL)
    page.wait_for_function(READ)
    page.wait_for_function(CURRENT)
    settle(page)
    assert page.input_value("#model") == "config"
    warning = page.inner_text("#log-model")
    assert page.is_visible("#log-model") and "names no model" in warning and "the pasted config.json" in warning


def test_a_llamacpp_log_gives_the_models_shapes(page, site):
    open_page(page, site)
    paste_log(page, (ROOT / "tests/fixtures/logs/llamacpp-llama3-70b-q3km-ollama-4k-2gpu.log").read_text())
    page.wait_for_function(READ)
    settle(page)
    assert page.input_value("#engine") == "llama.cpp" and page.input_value("#model") == "custom"
    assert page.input_value("#layers") == "80" and page.input_value("#kv-heads") == "8"
    assert page.is_hidden("#log-model")          # the model is the log's own shapes
    assert compare_rows(page)["KV cache tokens"][:2] == ("4,096", "4,096")
    assert "kv-heads=8" in url_of(page)


def test_a_long_paste_never_freezes_the_tab(page, site):
    open_page(page, site)
    busy = "".join(f"(APIServer pid=248518) INFO 12-20 18:40:{i % 60:02d} [loggers.py:123] Engine 000: Avg prompt "
                   "throughput: 1520.3 tokens/s, Avg generation throughput: 812.5 tokens/s, Running: 12 reqs, "
                   "Waiting: 0 reqs, GPU KV cache usage: 7.1%, Prefix cache hit rate: 0.0%\n" for i in range(45000))
    text = LOG + busy
    assert len(text) > 10_000_000
    page.click("#source-log")
    # The browser lays out 10 MB in the box first (a second or more, with or without the page's
    # code: a paste does the same); the reading starts from the input event after it.
    page.evaluate("text => { document.getElementById('startup-log').value = text; }", text)
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    page.evaluate("document.getElementById('startup-log').value.length")   # the browser builds the value once
    # Responsiveness by construction, not by a clock: the reader is fed the text in slices of
    # data-slice-chars, the page gets its thread back before each (data-yields), and no feed reads
    # more than its slice and the line the slice before left open (MAX_LINE_CHARS + 1), in time
    # linear in those characters (tests/engines/test_hostile_logs.py). The tab's gaps are measured in
    # `make bench` (bench/log_paste.py), never asserted here. Tasks the page runs while reading
    # (a message posted to itself, answered between slices) show the thread given back.
    page.evaluate("""() => { window.__between = 0; const channel = new MessageChannel();
        channel.port1.onmessage = () => {
            if (document.getElementById('log-status').textContent.startsWith('Reading')) window.__between += 1;
            if (!document.getElementById('log-reading').hidden) return;
            channel.port2.postMessage(0); };
        channel.port2.postMessage(0);
        document.getElementById('startup-log').dispatchEvent(new Event('input', {bubbles: true})); }""")
    page.wait_for_function(READ, timeout=60_000)
    settle(page)
    assert read_rows(page)["kv-memory-gib"] == ("41.68", "8")
    assert page.input_value("#tp") == "2"
    box = {name: int(page.get_attribute("#startup-log", f"data-{name}"))
           for name in ("slice-chars", "slices", "largest-slice", "yields")}
    assert box["slice-chars"] == 64 << 10
    assert box["slices"] == -(-len(text) // box["slice-chars"])       # 154 slices of 64K for 10.1 MB
    assert box["yields"] == box["slices"]                               # the thread given back before each
    assert box["largest-slice"] <= box["slice-chars"] + MAX_LINE_CHARS + 1
    assert page.evaluate("window.__between") >= box["slices"] // 2, page.evaluate("window.__between")


def test_a_log_past_the_limit_is_refused_at_once(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B")
    before = metrics(page)
    page.click("#source-log")
    page.evaluate("() => { const box = document.getElementById('startup-log'); box.value = 'x'.repeat(17 << 20); "
                  "box.dispatchEvent(new Event('input', {bubbles: true})); }")
    page.wait_for_function("document.getElementById('error-log').textContent !== ''")
    assert "longer than 16 MiB" in page.inner_text("#error-log")
    assert "longer than 16 MiB" in page.inner_text("#error-summary")
    assert metrics(page) == before and page.get_attribute("#summary", "data-stale") == "true"


@pytest.mark.parametrize("color_scheme", ["light", "dark"])
def test_axe_on_the_log_panel(browser, site, color_scheme):
    context = browser.new_context(color_scheme=color_scheme, service_workers="block")
    page = context.new_page()
    open_page(page, site + "#model=Qwen/Qwen3-32B")
    paste_log(page, NO_MODEL)          # the model withheld: said beside the box and in the summary
    page.wait_for_function(READ)
    settle(page)
    assert page.is_visible("#error-log") and page.inner_text("#error-summary")
    assert run_axe(page, site) == []
    context.close()


def test_on_a_phone_the_closed_strip_says_the_log_has_a_note(page, site):
    # The closed strip keeps two lines of the verdict and hides #log-check; its toggle says that
    # the whole verdict holds a note on the log (here: the GPU the Qwen2.5-72B log does not name).
    page.set_viewport_size({"width": 390, "height": 844})
    open_page(page, site)
    settle(page)
    assert page.inner_text("#strip-toggle") == "Read the whole verdict"
    paste_log(page, (LOGS / "vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log").read_text())
    page.wait_for_function(READ)
    settle(page)
    assert page.inner_text("#strip-toggle") == "Read the whole verdict: a note on the log"
    page.click("#strip-toggle")
    assert page.is_visible("#log-check") and page.inner_text("#strip-toggle") == "Close the verdict"
    page.click("#strip-toggle")
    page.select_option("#gpu", "l40s-48gb")
    settle(page)
    assert page.inner_text("#strip-toggle") == "Read the whole verdict"


def test_a_log_whose_engine_had_no_kv_memory_is_never_a_fit(page, site):
    # vLLM on an H100 printed "Available KV cache memory: -2.14 GiB" for gpt-oss-120b (it then
    # refuses: "No available memory for the cache blocks"). Our estimate must not stand in for the
    # figure it printed: the page says the engine will not start, why and by how much, as the CLI
    # (issue 38: its fixes under it), and the verdict is no fit.
    open_page(page, site)
    settle(page)
    paste_log(page, (LOGS / "vllm-gpt-oss-120b-h100-default-negative-kv.log").read_text())
    page.wait_for_function("!document.getElementById('fixes').hidden")
    settle(page)
    said = page.inner_text("#failed-start")
    assert said.startswith("vLLM will not start: the weights and its overhead leave no memory for the KV cache, "
                           "2.14 GiB short. It printed (line 7)"), said
    assert not page.inner_text('[data-metric="verdict"] .figure').startswith("Fits") or "yet the log shows" in said
