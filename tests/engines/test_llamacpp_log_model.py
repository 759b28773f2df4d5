"""The model a llama.cpp log names, resolved to the preset of identical shape (issue 34 item 1).

llama.cpp names its model in the loader's path ("loaded meta data ... from PATH"), llama-server's
"loading model 'PATH'", the command's -m PATH / -hf REPO[:QUANT] and the GGUF's general.name; a
GGUF is a quantized re-release, so the preset gives the shapes and the log's model buffer the
weights. The shapes llama.cpp printed must be the preset's, else the preset is not taken.

Fixtures (tests/fixtures/logs/SOURCES.md):
- llamacpp-qwen3-14b-q8kv-3090-32k-fa-b5505.log: llama-server b5505, -hf
  bartowski/Qwen_Qwen3-14B-GGUF:Q8_0 on one RTX 3090; 40 layers, 8 KV heads of 128; CUDA0 model
  buffer 14177.36 MiB; "size = 2720.00 MiB ( 32768 cells, 40 layers, 1 seqs), K (q8_0)".
- draft-llamacpp-qwen2.5-72b-with-0.5b-draft-512-rocm-b5142.log: llama-server b5142,
  -m ~/models/qwen2.5-72b-iq4xs.gguf with a 0.5B draft, -c 512 -ctk q8_0; the contexts it prints
  are the draft's.
"""

import json
from fractions import Fraction

from kvcalc.inputs import log_flow
from kvcalc.inputs.startup_log import read_log
from kvcalc.readers.log_rules import model_entry
from support import ROOT, cli

LOGS = ROOT / "tests/fixtures/logs"
QWEN3_14B = LOGS / "llamacpp-qwen3-14b-q8kv-3090-32k-fa-b5505.log"
QWEN_72B_DRAFT = LOGS / "draft-llamacpp-qwen2.5-72b-with-0.5b-draft-512-rocm-b5142.log"
GIB, MIB = 1 << 30, 1 << 20


def cli_json(path) -> dict:
    code, out, err = cli("--from-log", str(path), "--json")
    assert code == 0, err
    return json.loads(out)


def model_read(reading):
    return next(r for r in reading.read if r.option == "model")


def test_the_qwen3_14b_log_names_qwen3_14b_and_its_shapes_agree():
    reading = read_log(QWEN3_14B.read_text())
    read = model_read(reading)
    # Line 1's -hf bartowski/Qwen_Qwen3-14B-GGUF:Q8_0: the repo's Org_Model name, its tag a word.
    assert read.line_number == 1 and read.text == "Qwen3-14B-GGUF-Q8_0"
    assert model_entry(read.text)["id"] == "Qwen/Qwen3-14B"
    assert "Qwen/Qwen3-14B" in read.how and "not the preset's" in read.how
    # The preset's shapes are the ones it printed (block_count 40, head_count_kv 8, key_length 128),
    # so they are not read again as a custom model's.
    assert not {"layers", "kv-heads", "head-dim"} & set(reading.values)
    assert log_flow.cli_refusal(reading) is None
    # The GGUF's context_length 32768 is not the preset's 40960: said, and not a shape of the cache.
    assert any("n_ctx_train is 32,768" in note and "40,960" in note for note in reading.notes)


def test_the_qwen3_14b_log_sizes_its_own_cache_with_its_own_weights():
    out = cli_json(QWEN3_14B)
    assert out["model"] == "Qwen/Qwen3-14B" and out["engine"] == "llama.cpp"
    # The log's cache: 32,768 cells of 40 layers x 8 KV heads x 128 at q8_0 (34 bytes a 32 values),
    # 2720.00 MiB, K 1360.00 MiB and V 1360.00 MiB.
    assert out["engine_kv_tokens"] == 32768
    assert out["kv_bytes_per_token"] == 2 * 40 * 8 * 128 * 34 // 32 == 87040
    assert out["kv_bytes_per_request"] == 2720 * MIB
    # The weights are the log's CUDA0 model buffer, 14177.36 MiB = 13.845078 GiB (the reading's
    # six places), not the preset's BF16 size: the card's 24 GiB less them is the KV cache and
    # llama.cpp's compute buffer (estimated) together.
    assert out["engine_budget_source"] == "measured"
    weights = int(Fraction("13.845078") * GIB)
    assert abs(weights - int(Fraction("14177.36") * MIB)) < 1000
    assert out["gpu_memory_bytes"] == 24 * GIB
    assert out["engine_kv_budget_bytes_per_gpu"] + out["activation_bytes_per_gpu"] == 24 * GIB - weights
    assert out["engine_starts"] is True and out["fits"] is True
    assert out["verdict"].startswith("Fits as llama.cpp allocates: 1 request of 32,768 tokens")


def test_a_log_whose_shapes_differ_from_the_named_preset_keeps_its_own():
    # The same log with a block_count of 48: its path still says Qwen3-14B, but Qwen3 14B has 40
    # layers, so the preset is not taken; the GGUF's own qwen3 metadata is the model.
    text = QWEN3_14B.read_text().replace("qwen3.block_count u32              = 40",
                                         "qwen3.block_count u32              = 48")
    reading = read_log(text)
    assert "model" not in reading.values and reading.values["layers"] == "48"
    note = next(note for note in reading.notes if note.startswith("model not read as the preset Qwen/Qwen3-14B"))
    assert "qwen3.block_count 48 (line 11), the preset's 40" in note


def test_print_info_shapes_are_checked_too():
    # print_info (b5000s on) prints the shapes the model was built with: a head count of KV heads
    # not the preset's refuses it the same way.
    text = QWEN3_14B.read_text().replace("load_tensors: offloading 40", "print_info: n_head_kv        = 4\n"
                                         "load_tensors: offloading 40", 1)
    reading = read_log(text)
    assert "model" not in reading.values
    assert any("n_head_kv 4" in note and "the preset's 8" in note for note in reading.notes)


def test_the_loaders_path_names_the_model_when_no_command_is_pasted():
    # Without line 1 (the command) the loader's file, llama.cpp's cache name for the -hf
    # download (USER_REPO_FILE.gguf), is Qwen3-14B-Q8_0.gguf from its underscores on.
    text = QWEN3_14B.read_text().split("\n", 1)[1]
    read = model_read(read_log(text))
    assert read.text == "Qwen3-14B-Q8_0.gguf" and read.line_number == 6
    assert model_entry(read.text)["id"] == "Qwen/Qwen3-14B"
    line = ("llama_model_loader: loaded meta data with 28 key-value pairs and 443 tensors from "
            "/models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf (version GGUF V3 (latest))\n")
    read = model_read(read_log("build: 5505 (9065ca71) with cc\n" + line))
    assert read.text == "/models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    assert model_entry(read.text)["id"] == "meta-llama/Llama-3.1-8B"     # the Instruct's shape


def test_the_draft_log_names_its_target_qwen25_72b():
    reading = read_log(QWEN_72B_DRAFT.read_text())
    read = model_read(reading)
    # -m ~/models/qwen2.5-72b-iq4xs.gguf: iq4xs is IQ4_XS without its underscore.
    assert read.line_number == 2 and read.text == "~/models/qwen2.5-72b-IQ4_XS.gguf"
    assert model_entry(read.text)["id"] == "Qwen/Qwen2.5-72B"
    assert log_flow.cli_refusal(reading) is None
    out = cli_json(QWEN_72B_DRAFT)
    assert out["model"] == "Qwen/Qwen2.5-72B"
    # The target's cache at -c 512 -ctk/-ctv q8_0: 80 layers x 8 KV heads x 128, 34 bytes a 32
    # values; the log's own 6.00 MiB (24 layers, f16) is the draft's, after "initializing slots".
    assert out["kv_bytes_per_request"] == 512 * 2 * 80 * 8 * 128 * 34 // 32 == 89_128_960 != 6 * MIB
    assert out["engine_kv_tokens"] == 512
    # No GPU named and no weights printed: the figures wait for them, said.
    assert out["fits"] is None and "need a GPU" in out["verdict"]


def test_a_log_naming_no_preset_says_the_model_it_names():
    text = QWEN_72B_DRAFT.read_text().replace("qwen2.5-72b-iq4xs.gguf", "mystery-13b-q4_k_m.gguf")
    refusal = log_flow.cli_refusal(read_log(text))
    assert refusal is not None and "mystery-13b-q4_k_m.gguf" in refusal.message
    assert "names no model" not in refusal.message


def test_ollama_names_run_their_family_into_the_version():
    # Ollama's model:tag names (llama3.1:70b-instruct-q4_K_M) as a -m file: the tag joins the
    # name and llama3.1 is Llama-3.1, a preset's shape, its weights Q4_K_M's.
    line = "llama-server -c 4096 -m llama3.1:70b-instruct-q4_K_M.gguf -ngl 99\n"
    read = model_read(read_log("build: 5505 (9065ca71) with cc\n" + line))
    assert read.text == "llama-3.1-70b-instruct-Q4_K_M.gguf"
    assert model_entry(read.text)["id"] == "meta-llama/Llama-3.1-70B"
    # The public 2-GPU log's qwen2.5-coder:32b-instruct-q8_0.gguf is no preset: the refusal names it.
    reading = read_log((LOGS / "llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log").read_text())
    refusal = log_flow.cli_refusal(reading)
    assert "model" not in reading.values and "qwen2.5-coder:32b-instruct-q8_0.gguf" in refusal.message
