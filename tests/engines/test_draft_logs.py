"""Speculative decoding held to public start-up logs (issue 26): the draft's KV cache a log prints
reproduced from the draft's own config.json with our engine rules, and the launch lines that name
a draft or MTP heads read back into the inputs (draft-model, mtp, spec-tokens), or into a note
where no input says what they run. Sources: tests/fixtures/logs/SOURCES.md ("Issue 26: logs
that print a draft's KV cache") and tests/fixtures/hf/SOURCES.md."""

import re
from fractions import Fraction

from kvcalc.evaluation import evaluate
from kvcalc.serving import draft as drafts
from kvcalc.inputs.startup_log import read_log
from kvcalc.engines.llamacpp.allocator import MIB
from support import FIXTURES, hf_fixture

LOGS = FIXTURES / "logs"
QWEN_72B_DRAFT_LOG = "draft-llamacpp-qwen2.5-72b-with-0.5b-draft-512-rocm-b5142.log"
QWEN_05B = "Qwen__Qwen2.5-0.5B-Instruct.json"


def log_text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def inputs(reading) -> dict:
    # measured-with is derived from the others by the reader's framework (inputs/startup_log.py).
    return {k: v for k, v in reading.values.items() if k != "measured-with"}


def run(values):
    e = evaluate(values)
    assert e.ok, e.errors
    return e


# --- llama.cpp: the draft's own context (ggml-org/llama.cpp#12968, build 5142) ----------------------

def _draft_lines(text: str) -> dict:
    """The draft context's figures as the log prints them: the lines after llama-server's
    "initializing slots", where init() builds each slot's draft context."""
    after = text.split("initializing slots", 1)[1]
    kv = re.search(r"kv_size = (\d+), offload = \d, type_k = '(\w+)', type_v = '(\w+)', n_layer = (\d+)", after)
    size = re.search(r"KV self size\s*=\s*([\d.]+) MiB, K \((\w+)\):\s*([\d.]+) MiB, V \((\w+)\):\s*([\d.]+) MiB",
                     after)
    buffer = re.search(r"ROCm0 KV buffer size =\s*([\d.]+) MiB", after)
    return {"cells": int(kv[1]), "type_k": kv[2], "type_v": kv[3], "layers": int(kv[4]),
            "total_mib": Fraction(size[1]), "k_mib": Fraction(size[3]), "v_mib": Fraction(size[5]),
            "buffer_mib": Fraction(buffer[1])}


def test_llamacpp_draft_context_of_qwen25_05b_is_the_logs_6_mib():
    """Qwen2.5-72B with Qwen2.5-0.5B as its draft, llama-server -c 512 -cd 512 -ctk/-ctv q8_0.

    The draft is built from Qwen/Qwen2.5-0.5B-Instruct's config.json: 24 layers of 2 kv heads of
    896 / 14 = 64. llama.cpp gives the draft a context of its own in f16 whatever -ctk/-ctv say
    (PR #10586; the log's type_k = 'f16' beside the target's -ctk q8_0), of the target's cells:
    24 x (2 x 64 x 2 B) x 512 = 1,572,864 B of K and as much of V, 6,291,456 B = 6.00 MiB in all,
    the log's KV self size and its one ROCm0 KV buffer.

    What this log cannot tell apart: -cd 512 equals -c 512, so the late-2025 server's draft
    context of -cd cells and the 2026 common/speculative.cpp context of the target's n_ctx give
    the same 512 cells here. Not reproduced: the draft context's compute buffer (298.50 MiB ROCm0,
    2.76 MiB host) and its output buffer (0.58 MiB), which our llama.cpp rule does not count (its
    note says so: only the target's compute buffer is estimated)."""
    printed = _draft_lines(log_text(QWEN_72B_DRAFT_LOG))
    assert (printed["cells"], printed["layers"], printed["type_k"], printed["type_v"]) == (512, 24, "f16", "f16")
    e = run({"model": "Qwen/Qwen2.5-72B", "draft-hf-config": hf_fixture(QWEN_05B), "engine": "llama.cpp",
             "context": "512", "kv-dtype": "q8_0", "flash-attn": "on", "spec-tokens": "3"})
    draft = e.scenario.serving.draft
    assert (draft.kind, len(draft.layers), {(layer.kv_heads, layer.head_dim) for layer in draft.layers}) == \
        ("draft", 24, {(2, 64)})
    figures = drafts.figures(draft, e.scenario, e)
    assert figures["draft_kv_bytes_per_token"] == 24 * 2 * 64 * 2 * 2 == 12_288
    assert figures["draft_kv_bytes_per_gpu"] == 12_288 * 512 == 6_291_456
    assert Fraction(figures["draft_kv_bytes_per_gpu"], MIB) == printed["total_mib"] == printed["buffer_mib"] == 6
    assert printed["k_mib"] == printed["v_mib"] == Fraction(6_291_456 // 2, MIB) == 3
    # Our log line for the draft's cache, in llama.cpp's own words and figures.
    assert "llama_kv_cache: size =    6.00 MiB (   512 cells,  24 layers,  1/1 seqs), K (f16):    3.00 MiB, " \
           "V (f16):    3.00 MiB" in e.engine.log
    assert figures["launch_flags"][2:] == ["--draft-max", "3"]


def test_llamacpp_takes_the_05b_draft_whose_vocabulary_is_128_short():
    # Qwen2.5-72B has 152,064 entries, the 0.5B draft 151,936: 128 apart, which llama.cpp's
    # SPEC_VOCAB_MAX_SIZE_DIFFERENCE (common/speculative.cpp) allows, so the log's run starts; one
    # more and it refuses, and vLLM refuses any difference.
    cfg = hf_fixture(QWEN_05B)
    values = {"model": "Qwen/Qwen2.5-72B", "engine": "llama.cpp", "context": "512"}
    assert run({**values, "draft-hf-config": cfg}).scenario.serving.draft.vocab_size == 152_064 - 128
    refused = evaluate({**values, "draft-hf-config": {**cfg, "vocab_size": 151_935}})
    assert not refused.ok and refused.errors[0].field == "draft-hf-config"
    assert "more than 128" in refused.errors[0].message
    vllm = evaluate({**values, "engine": "vllm", "draft-hf-config": cfg, "spec-tokens": "3"})
    assert not vllm.ok and "same vocabulary size" in vllm.errors[0].message


def test_llamacpp_log_reads_the_target_and_says_the_draft_is_a_gguf_file():
    # The command's -md is a local GGUF file, no preset: a note, not an input; --draft-max 3 is
    # left with it (spec-tokens needs the draft). The contexts after "initializing slots" are the
    # draft's: their f16 types and 512 cells are not read as the target's (-ctk q8_0).
    reading = read_log(log_text(QWEN_72B_DRAFT_LOG))
    # The target's -m ~/models/qwen2.5-72b-iq4xs.gguf is Qwen2.5 72B's shape, IQ4_XS (issue 34 item 1).
    assert inputs(reading) == {"engine": "llama.cpp", "engine-version": "b5142", "n-gpu-layers": "999",
                               "flash-attn": "on", "kv-dtype": "q8_0", "context": "512",
                               "model": "~/models/qwen2.5-72b-IQ4_XS.gguf"}
    assert any("initializing slots" in note and "draft" in note for note in reading.notes)
    draft = [note for note in reading.notes if note.startswith("draft model not read")]
    assert len(draft) == 1 and "--draft-max 3" in draft[0] and "qwen2.5-0.5b-iq4xs.gguf" in draft[0]
    assert "local file cannot be one" in draft[0]


def test_llamacpp_b4462_command_with_a_draft_keeps_its_reading():
    # ggml-org/llama.cpp#11200: -md qwen2.5-coder:1.5b-instruct-q8_0.gguf --draft-max 10 beside the
    # target's flags; the target's inputs are as before (test_startup_logs_sglang_llamacpp), the
    # draft is a note.
    reading = read_log(log_text("llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log"))
    assert "spec-tokens" not in reading.values and "draft-model" not in reading.values
    assert any("qwen2.5-coder:1.5b-instruct-q8_0.gguf" in n and "--draft-max 10" in n for n in reading.notes)


def test_llamacpp_hf_repo_draft_that_is_a_preset_is_the_draft_model():
    reading = read_log("llama-server -m llama-3.1-8b.gguf -hfd meta-llama/Llama-3.2-1B --draft-max 8 -c 8192\n")
    assert (reading.values["draft-model"], reading.values["spec-tokens"]) == ("meta-llama/Llama-3.2-1B", "8")


# --- vLLM: speculative_config ---------------------------------------------------------------------

ARGS = ("(APIServer pid=1) INFO 09-01 10:00:00 [api_server.py:1896] vLLM API server version 0.25.1\n"
        "(APIServer pid=1) INFO 09-01 10:00:00 [utils.py:326] non-default args: {'model_tag': "
        "'meta-llama/Llama-3.1-70B', 'model': 'meta-llama/Llama-3.1-70B', 'tensor_parallel_size': 4, "
        "'speculative_config': {SPEC}}\n")


def test_vllm_draft_model_speculative_config_is_the_draft_model_and_its_tokens():
    reading = read_log(ARGS.replace("{SPEC}", "{'model': 'meta-llama/Llama-3.2-1B', 'method': 'draft_model', "
                                                "'num_speculative_tokens': 4}"))
    assert (reading.values["draft-model"], reading.values["spec-tokens"]) == ("meta-llama/Llama-3.2-1B", "4")
    assert "mtp" not in reading.values
    # Read back, the inputs are the draft test_draft works out (Llama 3.2 1B for Llama 3.1 70B).
    e = run({**inputs(reading), "gpu": "h100-sxm-80gb"})
    assert len(e.scenario.serving.draft.layers) == 16
    # No method: vLLM (config/speculative.py) takes a whole causal LM, as every preset is, for a
    # draft_model.
    bare = read_log(ARGS.replace("{SPEC}", "{'model': 'meta-llama/Llama-3.2-1B', 'num_speculative_tokens': 4}"))
    assert bare.values["draft-model"] == "meta-llama/Llama-3.2-1B"


def test_vllm_draft_at_a_local_path_is_a_note():
    # A folder no preset's name is (a "llama-1b" may be any 1B Llama): a note, not an input.
    reading = read_log(ARGS.replace("{SPEC}", "{'model': '/models/llama-1b', 'method': 'draft_model', "
                                                "'num_speculative_tokens': 4}"))
    assert "draft-model" not in reading.values and "spec-tokens" not in reading.values
    assert any(n.startswith("draft model not read") and "/models/llama-1b" in n for n in reading.notes)
    # A local copy whose folder is a preset's repo name is that preset (presets.resolve_model).
    reading = read_log(ARGS.replace("{SPEC}", "{'model': '/models/llama-3.2-1b', 'method': 'draft_model', "
                                                "'num_speculative_tokens': 4}"))
    assert reading.values["draft-model"] == "meta-llama/Llama-3.2-1B"


def test_vllm_eagle3_engine_line_is_a_note_not_an_input():
    # vllm-project/speculators#166 (a CI run, vLLM 0.10.1 dev): the engine's config line, its first
    # part as the stored thread gives it, with an EAGLE-3 head no input can say.
    line = ("(EngineCore_DP0 pid=774560) INFO 10-30 14:20:52 [core.py:93] Initializing a V1 LLM engine "
            "(v0.10.1.dev2081+gc44ef9fc0.d20250930) with config: model='meta-llama/Meta-Llama-3.1-8B-Instruct', "
            "speculative_config=SpeculativeConfig(method='eagle3', model='/tmp/pytest-of-rahul-tuli/pytest-15/"
            "test_convert_run_vllm_engine_e2/random-weights-llama3.1.8b-2layer-eagle3-unconverted', num_spec_tokens=3), "
            "tokenizer='meta-llama/Meta-Llama-3.1-8B-Instruct', skip_tokenizer_init=False, tokenizer_mode=auto, "
            "revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=1024, "
            "download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, "
            "data_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
            "kv_cache_dtype=auto, device_config=cuda,\n")
    reading = read_log(line)
    assert not {"mtp", "draft-model", "spec-tokens"} & set(reading.values)
    assert reading.values["context"] == "1024"
    assert any("method 'eagle3'" in n for n in reading.notes)


def test_vllm_dflash_fixture_says_its_drafter_is_not_read():
    # The Laguna logs' non-default args give the drafter without a method; the engine's config line
    # resolves it to DFlash, which no input says.
    reading = read_log(log_text("vllm-laguna-s-2.1-int4-dgx-spark-util089-64k-dflash-v0.25.1.log"))
    assert not {"mtp", "draft-model", "spec-tokens"} & set(reading.values)
    assert any("method 'dflash'" in n for n in reading.notes)


def test_vllm_mtp_from_the_engine_line_alone():
    line = ("(EngineCore pid=1) INFO 08-01 00:00:00 [core.py:114] Initializing a V1 LLM engine (v0.25.1) with config: "
            "model='deepseek-ai/DeepSeek-V3', speculative_config=SpeculativeConfig(method='mtp', "
            "model='deepseek-ai/DeepSeek-V3', num_spec_tokens=1), tensor_parallel_size=8, max_seq_len=32768,\n")
    reading = read_log(line)
    assert (reading.values["mtp"], reading.values["spec-tokens"]) == ("on", "1")
    assert "draft-model" not in reading.values


def test_vllm_speculative_config_flag_in_the_command():
    # vllm-project/vllm#49011 (turn 13): the command as its author typed it (its --hf-overrides end
    # left off), JSON with no spaces;
    # and the JSON with spaces after its colons, as gpustack passes it.
    command = ("(.venv312) heungwing@DESKTOP-L5KJORG:~/py312cuda130$ vllm serve unsloth/Qwen3.6-27B-NVFP4   "
               "--host 0.0.0.0   --port 8000   --served-model-name qwen3.6   --tensor-parallel-size 1   "
               "--gpu-memory-utilization 0.7   --max-model-len 1048576   --max-num-seqs 1   "
               "--max-num-batched-tokens 32768   --enable-prefix-caching   --enable-chunked-prefill   "
               "--async-scheduling   --trust-remote-code   --load-format fastsafetensors   --reasoning-parser qwen3   "
               "--tool-call-parser qwen3_xml   --enable-auto-tool-choice   --kv-cache-dtype nvfp4   "
               "--compilation-config '{\"cudagraph_mode\":\"PIECEWISE\"}'   --attention-backend FLASHINFER   "
               "--enable-flashinfer-autotune   --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'\n")
    reading = read_log(command)
    assert (reading.values["mtp"], reading.values["spec-tokens"]) == ("on", "2")
    spaced = read_log("$ vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 4 --speculative-config "
                      '{"model": "meta-llama/Llama-3.2-1B", "method": "draft_model", "num_speculative_tokens": 4}\n')
    assert (spaced.values["draft-model"], spaced.values["spec-tokens"]) == ("meta-llama/Llama-3.2-1B", "4")


def _qwen38(name: str) -> tuple[dict, dict]:
    """The reading's inputs and the figures the log printed."""
    reading = read_log(log_text(name))
    return reading.values, {k: p.value for k, p in reading.printed.items()}


def test_vllm_pools_the_mtp_layer_with_the_targets_qwen38_27b_int4():
    """vllm-qwen3.8-27b-int4-dgx-spark-util085-262k-mtp-v0.25.1.log (vLLM 0.25.1, MTP 3 tokens):
    80.17 GiB of KV memory, "Add 3 padding layers", block 800, 1,191,213 tokens, 4.54x.

    Qwen3.8-27B is no preset; it is sized with Qwen/Qwen3.5-27B's shapes (64 layers, 16 of them
    full attention with 4 kv heads of 256, the rest Gated DeltaNet), an inference from the thread
    (the same hybrid layout) that the exact token count bears out. The MTP layer is one more
    full-attention layer in the target's groups (gpu_model_runner.py get_kv_cache_spec; its spec
    equal to the target's), so 17 attention layers group with the 48 DeltaNet ones: 3 padding
    layers, the log's own line. Without it the same memory holds another count and no padding."""
    values, printed = _qwen38("vllm-qwen3.8-27b-int4-dgx-spark-util085-262k-mtp-v0.25.1.log")
    assert (values["mtp"], values["spec-tokens"], values["kv-memory-gib"]) == ("on", "3", "80.17")
    assert (printed["kv_tokens"], printed["attention_block_size"]) == (1_191_213, 800)
    engine = run({**values, "model": "Qwen/Qwen3.5-27B"}).engine
    assert (engine.kv_tokens, engine.block_size) == (printed["kv_tokens"], printed["attention_block_size"])
    assert f"{float(engine.max_concurrency):.2f}" == "4.54"
    assert "Add 3 padding layers, may waste at most 6.25% KV cache memory" in engine.log
    bare = {k: v for k, v in values.items() if k not in ("mtp", "spec-tokens", "measured-with", "loaded-weights-gib")}
    without = run({**bare, "model": "Qwen/Qwen3.5-27B"}).engine
    assert without.kv_tokens != 1_191_213 and not any("padding" in line for line in without.log)


def test_vllm_qwen38_27b_nvfp4_mtp_log_holds_a_one_byte_kv_cache():
    """vllm-qwen3.8-27b-nvfp4-dgx-spark-util085-262k-mtp-v0.25.1.log: 76.4 GiB, block 1600,
    2,192,477 tokens, 8.36x, with kv_cache_dtype=auto printed.

    Read as it prints (auto: the model's bf16), our figures are block 800 and 1,134,929 tokens: not
    the log's. Its block size of 1600, twice the INT4 log's 800 on the same layers, is vLLM's
    attention page stretched to the DeltaNet state page with 1-byte K and V
    (interface.py "Setting attention block size ... >= mamba page size"): the checkpoint's own
    KV scheme (inferred: the unsloth NVFP4 checkpoint's quantization config is not among the
    fixtures). With kv-dtype fp8 every printed figure follows exactly; the reader does not infer
    the dtype from the block size, so the log read alone stays at bf16."""
    values, printed = _qwen38("vllm-qwen3.8-27b-nvfp4-dgx-spark-util085-262k-mtp-v0.25.1.log")
    assert (printed["kv_tokens"], printed["attention_block_size"]) == (2_192_477, 1_600)
    kept = {k: v for k, v in values.items() if k not in ("measured-with", "loaded-weights-gib")}
    assert (kept["mtp"], kept["spec-tokens"], kept["kv-memory-gib"]) == ("on", "3", "76.4")
    as_printed = run({**kept, "model": "Qwen/Qwen3.5-27B"}).engine
    assert (as_printed.kv_tokens, as_printed.block_size) == (1_134_929, 800)
    engine = run({**kept, "model": "Qwen/Qwen3.5-27B", "kv-dtype": "fp8"}).engine
    assert (engine.kv_tokens, engine.block_size) == (2_192_477, 1_600)
    assert f"{float(engine.max_concurrency):.2f}" == "8.36"
    assert "Add 3 padding layers, may waste at most 6.25% KV cache memory" in engine.log


# --- SGLang: --speculative-algorithm ------------------------------------------------------------

def test_sglang_nextn_command_of_pr_3582_is_the_mtp_heads():
    # sgl-project/sglang#3582 (comment, 2025-02-17): DeepSeek-R1 on 8 x H20 with NEXTN, its next-n
    # layer given as an extracted copy (--speculative-draft, argparse's prefix of
    # --speculative-draft-model-path) and 2 steps.
    command = ("python -m sglang.launch_server --model-path /ossfs/workspace/DeepSeek-R1  --served-model-name mozz "
               "--port  8188  --tensor-parallel-size 8  --mem-fraction-static 0.96 --max-running-requests 32 "
               "--trust-remote-code --enable-cache-report --quantization fp8 --context-length 32768 "
               "--chunked-prefill-size 2048 --speculative-algo NEXTN --speculative-draft "
               "/mntfn/open_model/deepseek/deepseek-nextn --speculative-num-steps 2 --speculative-eagle-topk 1 "
               "--speculative-num-draft-tokens 2\n")
    reading = read_log(command)
    assert reading.engine == "sglang"
    assert (reading.values["mtp"], reading.values["spec-tokens"]) == ("on", "2")
    assert (reading.values["tp"], reading.values["context"], reading.values["memory-utilization"]) == \
        ("8", "32768", "0.96")


def test_sglang_standalone_draft_and_eagle3_head():
    base = "python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B --tp 4 "
    standalone = read_log(base + "--speculative-algorithm STANDALONE --speculative-draft-model-path "
                                 "meta-llama/Llama-3.2-1B --speculative-num-steps 3\n")
    assert (standalone.values["draft-model"], standalone.values["spec-tokens"]) == ("meta-llama/Llama-3.2-1B", "3")
    local = read_log(base + "--speculative-algorithm STANDALONE --speculative-draft-model-path /data/llama-1b "
                            "--speculative-num-steps 3\n")
    assert "draft-model" not in local.values and "spec-tokens" not in local.values
    assert any("local file cannot be one" in n for n in local.notes)
    eagle3 = read_log(base + "--speculative-algorithm EAGLE3 --speculative-draft-model-path "
                             "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B --speculative-num-steps 5\n")
    assert not {"mtp", "draft-model", "spec-tokens"} & set(eagle3.values)
    assert any("EAGLE3" in n and "no input" in n for n in eagle3.notes)


def test_sglang_server_args_eagle_without_a_path_is_the_mtp_heads():
    line = ("[2026-01-01 00:00:00] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V3', tp_size=8, "
            "speculative_algorithm='EAGLE', speculative_draft_model_path=None, speculative_num_steps=3, "
            "context_length=None)\n")
    reading = read_log(line)
    assert (reading.values["mtp"], reading.values["spec-tokens"]) == ("on", "3")
