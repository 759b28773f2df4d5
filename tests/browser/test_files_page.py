"""Checkpoint files on the page (issue 13): headers read through File.slice in the tab, the
same numbers as `kvcalc --gguf` / `--weights-file`, nothing uploaded, hostile files refused."""

import json
import struct

from gguf_files import T, write
from pagekit import choose_model, metrics, open_page, settle, url_of
from support import cli
from test_log_page import LOGS, READ, paste_log


def small_gguf(path):
    return write(path, "llama", [
        ("add_block_count", 4), ("add_context_length", 8192), ("add_embedding_length", 512),
        ("add_feed_forward_length", 1536), ("add_head_count", 8), ("add_head_count_kv", 2),
        ("add_key_length", 64), ("add_value_length", 64), ("add_name", "Tiny Llama"),
        ("add_token_list", [f"t{i}" for i in range(32000)])],
        [("token_embd.weight", (32000, 512), T.Q4_K), ("output.weight", (32000, 512), T.Q6_K)]
        + [(f"blk.{i}.ffn_up.weight", (1536, 512), T.Q8_0) for i in range(4)])


def test_a_dropped_gguf_gives_the_clis_numbers_and_nothing_leaves(page, site, tmp_path):
    path = small_gguf(tmp_path / "tiny.gguf")
    recorder = open_page(page, site + "#gpu=rtx-4090-24gb&context=4096")
    page.set_input_files("#hf-config-file", files=[str(path)])
    page.wait_for_function("document.getElementById('files-status').textContent.startsWith('Read here')")
    settle(page)
    code, out, _ = cli("--gguf", str(path), "--gpu", "rtx-4090-24gb", "--context", "4096", "--engine", "exact",
                       "--json")        # the link names no engine: the exact ideal
    expected = json.loads(out)
    shown = metrics(page)
    for key in ("kv_bytes_per_token", "weights_bytes", "max_concurrency", "max_context"):
        assert shown[key] == str(expected[key]), key
    assert expected["kv_dtype"] == "fp16"
    assert "GGUF v3" in page.inner_text("#files-status") and "nothing uploaded" in page.inner_text("#files-status")
    # The link carries what was derived, never the file; nothing was sent anywhere.
    assert "weights-bytes=" in url_of(page) and "tiny.gguf" not in page.url
    assert all(url.startswith(site) for url in recorder.requests)
    assert page.input_value("#layer-weights-bytes").count(",") == 4 + 1          # before, 4 layers, after
    # Another model: the weights read from the file belonged to the old one and are cleared.
    choose_model(page, "meta-llama/Llama-3.1-8B")
    settle(page)
    assert page.input_value("#weights-bytes") == "" and page.input_value("#layer-weights-bytes") == ""
    assert metrics(page)["weights_bytes"] == "16060522496"


def bare_gguf(path):
    """small_gguf without the tokenizer's token list: its vocabulary only in token_embd.weight's
    shape [512, 32000] (issue 34: vLLM's estimate needs it, and the page stayed stale)."""
    return write(path, "llama", [
        ("add_block_count", 4), ("add_context_length", 8192), ("add_embedding_length", 512),
        ("add_feed_forward_length", 1536), ("add_head_count", 8), ("add_head_count_kv", 2),
        ("add_key_length", 64), ("add_value_length", 64), ("add_name", "Bare Llama")],
        [("token_embd.weight", (32000, 512), T.Q4_K), ("output.weight", (32000, 512), T.Q6_K)]
        + [(f"blk.{i}.ffn_up.weight", (1536, 512), T.Q8_0) for i in range(4)])


def _open_file(page, path) -> None:
    page.set_input_files("#hf-config-file", files=[str(path)])
    page.wait_for_function("document.getElementById('files-status').textContent.startsWith('Read here')")
    settle(page)


def _same_as_cli(page, path, engine: str) -> None:
    code, out, err = cli("--gguf", str(path), "--engine", engine, "--gpu", "rtx-4090-24gb", "--context", "4096",
                         "--json")
    assert code == 0, err
    expected, shown = json.loads(out), metrics(page)
    for key in ("kv_bytes_per_token", "weights_bytes", "max_concurrency", "engine_kv_tokens"):
        assert shown[key] == str(expected[key]), key


def test_a_gguf_with_no_engine_chosen_sizes_as_llamacpp_and_says_so(page, site, tmp_path):
    path = bare_gguf(tmp_path / "bare.gguf")
    open_page(page, site)                       # a fresh page: "Size as" at its own default, vLLM
    assert page.input_value("#engine") == "vllm"
    page.select_option("#gpu", "rtx-4090-24gb")
    page.fill("#context", "4096")
    _open_file(page, path)
    assert page.input_value("#engine") == "llama.cpp"
    status = page.inner_text("#files-status")
    assert "Sized as llama.cpp allocates, since a GGUF is llama.cpp's format and no engine was chosen (the page's " \
           "default is vLLM)" in status
    assert "engine=llama.cpp" in url_of(page)
    _same_as_cli(page, path, "llama.cpp")


def test_a_gguf_sizes_in_the_engine_the_user_chose(page, site, tmp_path):
    # vLLM chosen by hand: it stays, and its estimate (which needs the vocabulary) is made from the
    # tensor table's 32,000 rows.
    path = bare_gguf(tmp_path / "bare.gguf")
    open_page(page, site)
    page.select_option("#gpu", "rtx-4090-24gb")
    page.fill("#context", "4096")
    page.select_option("#engine", "vllm")
    _open_file(page, path)
    assert page.input_value("#engine") == "vllm"
    assert "Sized as llama.cpp" not in page.inner_text("#files-status")
    _same_as_cli(page, path, "vllm")


def test_config_plus_index_gives_exact_weights(page, site, tmp_path):
    from support import hf_fixture
    config = tmp_path / "config.json"
    config.write_text(json.dumps(hf_fixture("openai__gpt-oss-120b.json")))
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 65_248_815_744}, "weight_map": {"x": "y"}}))
    open_page(page, site + "#gpu=h100-sxm-80gb")
    page.set_input_files("#hf-config-file", files=[str(config), str(index)])
    page.wait_for_function("document.getElementById('files-status').textContent.startsWith('Read here')")
    settle(page)
    shown = metrics(page)
    assert shown["weights_bytes"] == "65248815744" and shown["max_concurrency"] not in ("", "0")


def test_hostile_files_are_refused_and_nothing_is_lost(page, site, tmp_path):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B")
    before = metrics(page)
    bad = [("fake.gguf", b"GGML" + bytes(64), "does not start with the bytes 'GGUF'"),
           ("claims.gguf", b"GGUF" + struct.pack("<IQQ", 3, 1 << 60, 0), "tensors"),
           ("cut.safetensors", struct.pack("<Q", 1 << 40) + b"{}", "header"),
           ("weird.bin", b"hello", "takes config.json")]
    for name, data, words in bad:
        page.set_input_files("#hf-config-file", files=[{"name": name, "mimeType": "application/octet-stream",
                                                        "buffer": data}])
        # The file's own name with the words: "header" is also in the status while it reads.
        page.wait_for_function("([n, w]) => { const t = document.getElementById('files-status').textContent; "
                               "return t.includes(n) && t.includes(w); }", arg=[name, words])
        assert name in page.inner_text("#files-status")
        assert metrics(page)["kv_bytes_per_token"] == before["kv_bytes_per_token"]


def test_a_gguf_after_a_vllm_log_keeps_the_logs_engine_and_release(page, site, tmp_path):
    # A reviewer's case: the Qwen2.5-72B vLLM 0.19.0 log pasted, then a GGUF opened. The engine
    # and release are the log's (its server ran vLLM), so the GGUF does not switch them; before,
    # the page switched to llama.cpp and kept "0.19.0", no llama.cpp release, and went stale.
    path = bare_gguf(tmp_path / "bare.gguf")
    open_page(page, site)
    paste_log(page, (LOGS / "vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log").read_text())
    page.wait_for_function(READ)
    settle(page)
    assert (page.input_value("#engine"), page.input_value("#engine-version")) == ("vllm", "0.19.0")
    _open_file(page, path)
    assert (page.input_value("#engine"), page.input_value("#engine-version")) == ("vllm", "0.19.0")
    assert "Sized as llama.cpp" not in page.inner_text("#files-status")
    assert "Engine release" not in page.inner_text("#error-summary")
