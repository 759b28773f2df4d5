"""SGLang and llama.cpp start-up logs read into inputs (issue 24), and the inputs computed back
into the figures the logs printed.

Each fixture in tests/fixtures/logs (sources and the inputs each thread states in SOURCES.md,
the curated figures in overhead-v0-sglang-llamacpp.json) is read with read_log; the inputs it
gives are stated here per fixture, exactly. Then the read inputs, with a model added where the
log names only a local path or none (the preset named per case, and why), are evaluated, and the
engine's #tokens (SGLang) or cells and cache size (llama.cpp) must be the log's own, within the
log's rounding: SGLang prints K size and V size each to 0.01 GiB, so their sum stands for a KV
memory within 0.01 GiB either way, and both ends are evaluated, as tests/engines/test_engines.py does
with hand-written inputs. Where a fixture cannot be reproduced from what it prints, the test is
skipped with a reason naming what is missing."""

import random
import re
import time
from decimal import Decimal
from fractions import Fraction

import pytest

from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log
from support import FIXTURES, hf_fixture

LOGS = FIXTURES / "logs"


def log_text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def inputs(reading) -> dict:
    # measured-with is derived from the others by the reader's framework (inputs/startup_log.py).
    return {k: v for k, v in reading.values.items() if k != "measured-with"}


# The inputs each log implies, read from its lines (SOURCES.md per fixture says what its thread
# states; what a line does not print is not read).
READS = {
    # The launch command names the preset; TP0 is the only rank; the weights' mem usage and the
    # K + V sizes (54.12 + 54.12). mem_fraction_static 0.88 is in the thread's server_args, not
    # in the excerpt.
    "sglang-gemma3-4b-it-h200-mfs088-tp1-v0.4.4.log": {
        "engine": "sglang", "model": "google/gemma-3-4b-it", "loaded-weights-gib": "8.13", "tp": "1", "gpus": "1",
        "kv-memory-gib": "108.24"},
    # sglang serve --model-path moonshotai/Kimi-K2.5 --tp 8 on 8 MI355X (ROCm): its server_args line gives
    # the derived mem_fraction_static (0.908 x the vision share), the chunk and page; MLA's one KV size line.
    "sglang-kimi-k2.5-mi355x-tp8-rocm-mfs-auto-v0.5.8.post1.log": {
        "engine": "sglang", "model": "moonshotai/Kimi-K2.5", "tp": "8", "gpus": "8",
        "memory-utilization": "0.8260405859375", "prefill-chunk": "16384", "block-size": "1",
        "loaded-weights-gib": "73.58", "kv-dtype": "bf16", "kv-memory-gib": "160.63"},
    # --tensor-parallel-size 4 (QwQ-32B on 4 x L4, 0.4.3.post4): the TP0 lines, the weights' mem usage,
    # K + V (1.42 + 1.42) and the scheduler's chunk and context_len.
    "sglang-qwq-32b-4xl4-tp4-mfs085-v0.4.3.post4.log": {
        "engine": "sglang", "loaded-weights-gib": "15.54", "kv-memory-gib": "2.84", "tp": "4", "gpus": "4",
        "prefill-chunk": "2048", "context": "131072"},
    # 0.4.2 under WSL2: server_args gives mem_fraction_static 0.88, the chunk and tp; the Load weight end line
    # prints no mem usage, so the weights are its two avail figures' difference (22.76 - 8.37).
    "sglang-r1-distill-qwen-7b-3090-wsl2-mfs088-v0.4.2.log": {
        "engine": "sglang", "memory-utilization": "0.88", "prefill-chunk": "2048", "tp": "1", "gpus": "1",
        "loaded-weights-gib": "14.39", "kv-memory-gib": "5.64", "context": "131072"},
    # --model-path zai-org/GLM-5-FP8 --tp-size 8 --kv-cache-dtype fp8_e4m3 (8 x MI355X); MLA's one KV size.
    "sglang-glm-5-fp8-mi355x-tp8-fp8kv-rocm-v0.5.8.post1.log": {
        "engine": "sglang", "kv-dtype": "fp8", "model": "zai-org/GLM-5-FP8", "tp": "8", "gpus": "8",
        "loaded-weights-gib": "89.58", "kv-memory-gib": "186.77"},
    # No command and no rank prefix (its server_args line is not kept): the memory lines only.
    "sglang-llama3.2-3b-l40s-mfs02-hicache-35k.log": {
        "engine": "sglang", "loaded-weights-gib": "6.13", "kv-dtype": "bf16", "kv-memory-gib": "2.68"},
    # The 2026 pool line "KV Cache is allocated. dtype: torch.float16, #tokens: ..." names the pool's dtype
    # before its K and V sizes; the scheduler's summary line gives the chunk and context.
    "sglang-qwen2.5-7b-awq-16gb-nocudagraph.log": {
        "engine": "sglang", "loaded-weights-gib": "5.25", "kv-dtype": "fp16", "kv-memory-gib": "7.1",
        "prefill-chunk": "8192", "context": "32768"},
    # llama-cpp-python on the CPU: a qwen35moe GGUF (no preset by that file name), its context's lines.
    "llamacpp-qwen3.6-35b-a3b-q2k-cpu-hybrid-8k-llamacpppython.log": {
        "engine": "llama.cpp", "model": "Qwen3.6-35B-A3B-Q2_K.gguf", "batch": "1", "context": "8192",
        "prefill-chunk": "512", "flash-attn": "off", "kv-dtype": "fp16"},
    # Only the distributed start-up and Load weight begin lines: tp 8 from the ranks TP0-TP7; the DP
    # attention run's DPn TPn prefixes give no tp.
    "sglang-tp8-h200-init-distributed-pr11716.log": {"engine": "sglang", "tp": "8", "gpus": "8"},
    "sglang-dp8-attention-b200-init-distributed-pr5390.log": {"engine": "sglang"},
    # --tp-size 4 --mem-fraction-static 0.7 --page-size 64; only the sliding-window pool's lines.
    "sglang-mimo-v2-flash-swa-tp4-page64.log": {
        "engine": "sglang", "memory-utilization": "0.7", "block-size": "64", "tp": "4", "gpus": "4"},
    # The scheduler's summary line: chunked_prefill_size 16384, context_len 128000.
    "sglang-qwen2.5-vl-7b-b200-mfs-auto-nopcg-tp1-v0.5.6dev.log": {
        "engine": "sglang", "prefill-chunk": "16384", "context": "128000"},
    # server_args=ServerArgs(...) cut at "chunked_prefill_size=163": the cut value is not read;
    # mem_fraction_static=0.7629746875 is; "Using KV cache dtype: torch.bfloat16".
    "sglang-qwen2.5-vl-7b-b200-mfs-auto-pcg-tp1-v0.5.6dev.log": {
        "engine": "sglang", "memory-utilization": "0.7629746875", "kv-dtype": "bf16", "kv-memory-gib": "119.82"},
    # --model /path/to/Qwen3-235B-A22B-FP8: the Qwen/Qwen3-235B-A22B preset's shape with FP8 weights,
    # so the path itself is the model (presets.resolve_model: weights unknown, not the preset's bf16).
    "sglang-qwen3-235b-a22b-fp8-tp4-mfs093.log": {
        "engine": "sglang", "memory-utilization": "0.93", "tp": "4", "gpus": "4", "kv-memory-gib": "16.46",
        "model": "/path/to/Qwen3-235B-A22B-FP8"},
    # No command, no rank prefix: tp is not read.
    "sglang-qwen3-30b-a3b-ktransformers-3090-cpu-experts.log": {
        "engine": "sglang", "loaded-weights-gib": "2.91", "kv-dtype": "bf16", "kv-memory-gib": "11.2"},
    # --model-path /data/models/Qwen3-8B: a local copy's folder names the Qwen/Qwen3-8B preset.
    "sglang-qwen3-8b-tp1-mfs090.log": {
        "engine": "sglang", "context": "8096", "memory-utilization": "0.9", "tp": "1", "gpus": "1",
        "loaded-weights-gib": "15.35", "kv-memory-gib": "55.6", "prefill-chunk": "8192", "model": "Qwen/Qwen3-8B"},
    # tp 4 from the ranks TP0-TP3 the lines carry.
    "sglang-qwen3-omni-30b-a3b-tp4-pool.log": {
        "engine": "sglang", "kv-memory-gib": "47.84", "tp": "4", "gpus": "4"},
    "sglang-qwen3.5-moe-ktransformers-2x4090-tp2-hybrid.log": {
        "engine": "sglang", "loaded-weights-gib": "3.76", "tp": "2", "gpus": "2", "kv-dtype": "bf16",
        "kv-memory-gib": "8.3", "prefill-chunk": "2048", "context": "8192"},
    # Two RPC servers hold the KV buffers (RPC[172.31.27.42:50052] 656 MiB, RPC[172.31.20.38:50052]
    # 624 MiB): 2 devices, as local GPUs would be; the busiest's model buffer is the weights.
    "llamacpp-llama31-70b-q4_0-rpc-2nodes-b6209.log": {
        "engine": "llama.cpp", "engine-version": "b6209", "layers": "80", "attention-heads": "64", "kv-heads": "8",
        "head-dim": "128", "n-gpu-layers": "81", "loaded-weights-gib": "18.38043", "batch": "1", "context": "4096",
        "prefill-chunk": "512", "flash-attn": "off", "gpus": "2", "kv-dtype": "fp16"},
    # An early-2024 build's "KV self size = 160.00 MiB" at n_ctx 512: no model line, no layers.
    "llamacpp-pr5104-kv-self-size-160mib.log": {
        "engine": "llama.cpp", "context": "512", "gpus": "1", "kv-dtype": "fp16"},
    "llamacpp-command-a-iswa-240k-nofa-pad32.log": {
        "engine": "llama.cpp", "batch": "1", "context": "240000", "prefill-chunk": "512", "flash-attn": "off"},
    # offloaded 41/41 layers; CUDA1's model buffer 13989.53 MiB is the busiest GPU's weights; the
    # two GPUs differ, so no gpu preset; flash attention did not exist in that build.
    "llamacpp-command-r-35b-class-4070ti-3090ti-4k-b2450.log": {
        "engine": "llama.cpp", "n-gpu-layers": "41", "loaded-weights-gib": "13.66165", "context": "4096",
        "prefill-chunk": "512", "gpus": "2", "kv-dtype": "fp16",
        # CUDA0 1536.00 + CUDA1 3584.00 MiB of KV over 40 layers: 12 and 28, the output with CUDA1.
        "tensor-split": "12/29"},
    # The cells per sequence of the non-SWA cache (120064, 1/1 seqs) are the context.
    "llamacpp-gemma4-31b-iswa-q5kv-b8643.log": {
        "engine": "llama.cpp", "engine-version": "b8643", "gpus": "2", "kv-dtype": "q5_0", "batch": "1",
        "context": "120064"},
    "llamacpp-gemma4-e4b-iswa-131k-3gpu.log": {
        "engine": "llama.cpp", "gpus": "3", "kv-dtype": "fp16", "batch": "1", "context": "131072"},
    # 2/1 seqs: a unified cache, so its cells are not one sequence's context.
    "llamacpp-gemma4-e4b-swa-np2-bf16-rocm.log": {
        "engine": "llama.cpp", "gpus": "1", "kv-dtype": "bf16", "batch": "2", "flash-attn": "on"},
    "llamacpp-glm-4.5-air-128k-ub4096-fa.log": {
        "engine": "llama.cpp", "context": "131072", "prefill-chunk": "4096", "flash-attn": "on"},
    "llamacpp-glm-z1-32b-32k-fa-b5274.log": {
        "engine": "llama.cpp", "context": "32768", "prefill-chunk": "512", "flash-attn": "on"},
    # CPU only: no GPU is read.
    "llamacpp-llama2-7b-class-cpu-unified-4k.log": {
        "engine": "llama.cpp", "context": "4096", "prefill-chunk": "512", "flash-attn": "on", "kv-dtype": "fp16"},
    # A plain llama architecture's GGUF metadata is the cache's whole shape.
    "llamacpp-llama3-70b-q3km-ollama-4k-2gpu.log": {
        "engine": "llama.cpp", "layers": "80", "attention-heads": "64", "kv-heads": "8", "head-dim": "128",
        "kv-dtype": "fp16", "context": "4096", "gpus": "2",
        # CUDA0 784.00 + CUDA1 496.00 MiB of KV over 80 layers: 49 and 31, the output with CUDA1.
        "tensor-split": "49/32"},
    "llamacpp-qwen2.5-3b-class-llamasharp-4080s-4k.log": {
        "engine": "llama.cpp", "gpus": "1", "kv-dtype": "fp16"},
    # version: 4462; the llama-server command: -ub 256 -ngl 99 -c 32768 --flash-attn -ctk/-ctv q8_0.
    "llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log": {
        "engine": "llama.cpp", "engine-version": "b4462", "prefill-chunk": "256", "n-gpu-layers": "99",
        "flash-attn": "on", "kv-dtype": "q8_0", "context": "32768", "gpus": "2", "tensor-split": "10/6"},
    # build 5505's "llama_kv_cache_unified: size = 2720.00 MiB ( 32768 cells,  40 layers,  1 seqs),
    # K (q8_0): 1360.00 MiB, V (q8_0): ..." (no streams yet); a plain qwen3 GGUF's metadata is the shape.
    "llamacpp-qwen3-14b-q8kv-3090-32k-fa-b5505.log": {
        "engine": "llama.cpp", "engine-version": "b5505", "n-gpu-layers": "999", "flash-attn": "on",
        # Its -hf repo bartowski/Qwen_Qwen3-14B-GGUF:Q8_0 is Qwen3-14B's shape (issue 34 item 1).
        "kv-dtype": "q8_0", "gpu": "rtx-3090-24gb", "model": "Qwen3-14B-GGUF-Q8_0",
        "loaded-weights-gib": "13.845078", "batch": "1", "context": "32768",
        "prefill-chunk": "512", "gpus": "1"},
    # -ngl 0 ("offloaded 0/29"); the Orin is no preset. Compute buffer: test_llamacpp_offload.py.
    "llamacpp-qwen3-0.6b-ngl0-orin-4k-nofa-b5489.log": {
        "engine": "llama.cpp", "engine-version": "b5489", "layers": "28", "attention-heads": "16", "kv-heads": "8",
        "head-dim": "128", "n-gpu-layers": "0", "batch": "1", "context": "4096", "prefill-chunk": "512",
        "flash-attn": "off", "kv-dtype": "fp16"},
    # "offloaded 14/27 layers" and CUDA0's model buffer (its command is in SOURCES.md, not the excerpt).
    "llamacpp-gemma3-1b-ngl14-940m-ub64-nofa.log": {
        "engine": "llama.cpp", "n-gpu-layers": "14", "loaded-weights-gib": "0.522764", "gpus": "1"},
    # Two "NVIDIA GeForce RTX 4090" devices: the preset.
    "llamacpp-r1-distill-qwen-32b-class-ollama-2x4090-2k-nofa.log": {
        "engine": "llama.cpp", "gpu": "rtx-4090-24gb", "context": "2048", "prefill-chunk": "512",
        "flash-attn": "off", "kv-dtype": "fp16", "gpus": "2",
        # CUDA0 264.00 + CUDA1 248.00 MiB of KV over 64 layers: 33 and 31, the output with CUDA1.
        "tensor-split": "33/32"},
}

# Two start-ups in one paste: the PR run and the main run each allocate their pool.
REFUSED = {
    "sglang-deepseek-v32-exp-mla-tp8-dp8.log":
        "holds more than one start-up: #tokens is 975424 at line 3 and 1462784 at line 6; paste one",
}

# The figures each log printed that the engines compute, as read (GiB for SGLang, MiB for llama.cpp).
PRINTED = {
    "llamacpp-llama31-70b-q4_0-rpc-2nodes-b6209.log": {"kv_tokens": 4096, "kv_cache_mib": 1280, "kv_layers": 80},
    "llamacpp-pr5104-kv-self-size-160mib.log": {"kv_cache_mib": 160, "k_cache_mib": 80, "v_cache_mib": 80},
    "sglang-gemma3-4b-it-h200-mfs088-tp1-v0.4.4.log": {"kv_tokens": 834615, "kv_memory_gib": Fraction("108.24")},
    "sglang-kimi-k2.5-mi355x-tp8-rocm-mfs-auto-v0.5.8.post1.log": {"kv_tokens": 2454421,
                                                                   "kv_memory_gib": Fraction("160.63")},
    "sglang-qwq-32b-4xl4-tp4-mfs085-v0.4.3.post4.log": {"kv_tokens": 46611, "kv_memory_gib": Fraction("2.84"),
                                                        "max_running_requests": 2049},
    "sglang-r1-distill-qwen-7b-3090-wsl2-mfs088-v0.4.2.log": {"kv_tokens": 105531, "kv_memory_gib": Fraction("5.64")},
    "sglang-glm-5-fp8-mi355x-tp8-fp8kv-rocm-v0.5.8.post1.log": {"kv_tokens": 3262823,
                                                                "kv_memory_gib": Fraction("186.77")},
    "sglang-llama3.2-3b-l40s-mfs02-hicache-35k.log": {"kv_tokens": 25169, "kv_memory_gib": Fraction("2.68")},
    "sglang-qwen2.5-7b-awq-16gb-nocudagraph.log": {"kv_tokens": 133052, "max_running_requests": 2078},
    "llamacpp-qwen3.6-35b-a3b-q2k-cpu-hybrid-8k-llamacpppython.log": {"kv_tokens": 8192, "kv_cache_mib": 160,
                                                                       "kv_layers": 10},
    "sglang-tp8-h200-init-distributed-pr11716.log": {"free_at_start_gib": Fraction("137.29")},
    "sglang-dp8-attention-b200-init-distributed-pr5390.log": {"free_at_start_gib": Fraction("175.25")},
    "sglang-mimo-v2-flash-swa-tp4-page64.log": {"kv_tokens": 375360, "swa_tokens_printed": 300288},
    "sglang-qwen2.5-vl-7b-b200-mfs-auto-nopcg-tp1-v0.5.6dev.log": {"kv_tokens": 2261377,
                                                                   "max_running_requests": 4096},
    "sglang-qwen2.5-vl-7b-b200-mfs-auto-pcg-tp1-v0.5.6dev.log": {"kv_tokens": 2243474},
    "sglang-qwen3-235b-a22b-fp8-tp4-mfs093.log": {"kv_tokens": 367404, "kv_memory_gib": Fraction("16.46")},
    "sglang-qwen3-30b-a3b-ktransformers-3090-cpu-experts.log": {"kv_tokens": 122420},
    "sglang-qwen3-8b-tp1-mfs090.log": {"kv_tokens": 404890, "max_running_requests": 4097,
                                       "cuda_graph_gib": Fraction("1.39")},
    "sglang-qwen3-omni-30b-a3b-tp4-pool.log": {"kv_tokens": 2090351},
    "sglang-qwen3.5-moe-ktransformers-2x4090-tp2-hybrid.log": {"kv_tokens": 580364, "max_running_requests": 1,
                                                               "mamba_pool_gib": Fraction("7.42")},
    "llamacpp-command-a-iswa-240k-nofa-pad32.log": {"kv_tokens": 240000, "output_buffer_mib": Fraction("0.98")},
    "llamacpp-command-r-35b-class-4070ti-3090ti-4k-b2450.log": {
        "kv_cache_mib": 5120, "kv_buffer_mib": 3584, "compute_buffer_mib": Fraction("672.01"), "pipeline_copies": 4},
    "llamacpp-gemma4-31b-iswa-q5kv-b8643.log": {"kv_tokens": 120064, "kv_cache_mib": Fraction("3224.38")},
    "llamacpp-gemma4-e4b-iswa-131k-3gpu.log": {"kv_tokens": 131072, "kv_cache_mib": 2048, "swa_cells": 1024},
    "llamacpp-gemma4-e4b-swa-np2-bf16-rocm.log": {"swa_cells": 3072, "swa_kv_cache_mib": 120,
                                                  "compute_buffer_mib": Fraction("1278.07")},
    "llamacpp-glm-4.5-air-128k-ub4096-fa.log": {"compute_buffer_mib": Fraction("3584.09"),
                                                "host_compute_buffer_mib": Fraction("2112.11")},
    "llamacpp-glm-z1-32b-32k-fa-b5274.log": {"compute_buffer_mib": 353,
                                             "host_compute_buffer_mib": Fraction("76.01")},
    # Older builds print the cells as kv_size: one sequence's cells where it serves one.
    "llamacpp-llama2-7b-class-cpu-unified-4k.log": {"kv_size": 4096, "kv_tokens": 4096, "kv_cache_mib": 2048},
    "llamacpp-llama3-70b-q3km-ollama-4k-2gpu.log": {"kv_size": 4096, "kv_tokens": 4096, "kv_cache_mib": 1280,
                                                    "kv_buffer_mib": 784},
    "llamacpp-qwen2.5-3b-class-llamasharp-4080s-4k.log": {"kv_cache_mib": 144, "highest_layer": 35},
    "llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log": {"kv_size": 32768, "kv_tokens": 32768, "kv_cache_mib": 4352},
    "llamacpp-qwen3-0.6b-ngl0-orin-4k-nofa-b5489.log": {"kv_tokens": 4096, "kv_cache_mib": 448, "kv_layers": 28,
                                                        "compute_buffer_mib": Fraction("422.92")},
    "llamacpp-gemma3-1b-ngl14-940m-ub64-nofa.log": {"compute_buffer_mib": Fraction("64.28")},
    "llamacpp-qwen3-14b-q8kv-3090-32k-fa-b5505.log": {"kv_tokens": 32768, "kv_cache_mib": 2720,
                                                      "k_cache_mib": 1360, "kv_layers": 40, "seqs": 1,
                                                      "unified": False},
    "llamacpp-r1-distill-qwen-32b-class-ollama-2x4090-2k-nofa.log": {"kv_size": 2048, "kv_tokens": 2048,
                                                                     "kv_cache_mib": 512},
}


def fixtures(prefix: str) -> list[str]:
    return sorted(p.name for p in LOGS.glob(f"{prefix}-*.log"))


ALL = fixtures("sglang") + fixtures("llamacpp")


def test_every_sglang_and_llamacpp_fixture_has_its_expected_reading():
    assert set(ALL) == set(READS) | set(REFUSED)
    assert set(READS) == set(PRINTED)
    assert set(ALL) == set(REPRODUCED) | set(NOT_REPRODUCED)


@pytest.mark.parametrize("name", sorted(READS))
def test_log_reads_into_the_inputs_it_implies(name):
    reading = read_log(log_text(name))
    assert reading.engine == READS[name]["engine"]
    assert inputs(reading) == READS[name], name
    for figure, value in PRINTED[name].items():
        assert reading.printed[figure].value == value, (name, figure)
    # Every input read names its line, and that line holds the log's text.
    lines = log_text(name).split("\n")
    for read in reading.read:
        assert read.line_number >= 1 and read.line.strip()[:40] in lines[read.line_number - 1], (name, read)
    # Read with the engine named, the reading is the same.
    assert inputs(read_log(log_text(name), engine=READS[name]["engine"])) == READS[name]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_log_with_two_start_ups_is_refused_naming_the_lines(name):
    with pytest.raises(InputError) as error:
        read_log(log_text(name))
    assert error.value.field == "log" and error.value.message == REFUSED[name]


def test_deepseek_v32_each_start_up_reads_alone():
    # sglang-deepseek-v32-exp-mla-tp8-dp8.log: the command (--tp 8 --dp 8 --enable-dp-attention)
    # and the PR run; then the main run alone, which carries no command.
    lines = log_text("sglang-deepseek-v32-exp-mla-tp8-dp8.log").split("\n")
    pr = read_log("\n".join(lines[:5]) + "\n")
    # SGLang's --tp 8 --dp 8 with DP attention: 8 GPUs, each rank's attention on tp 8 / dp 8 = 1.
    assert inputs(pr) == {"engine": "sglang", "tp": "1", "dp": "8", "gpus": "8", "kv-memory-gib": "43.67"}
    assert pr.printed["kv_tokens"].value == 975424
    assert any("DeepSeek-V3.2-Exp" in note and "not a preset" in note for note in pr.notes)
    main = read_log("\n".join(lines[5:]) + "\n")
    assert inputs(main) == {"engine": "sglang", "kv-memory-gib": "54.52"}
    assert any("tp not read" in note for note in main.notes)


# --- computing the read inputs back into the log's figures ------------------------------------

def _sglang_ends(values: dict, half: Fraction):
    """The engine at both ends of what the printed KV memory stands for."""
    memory = Fraction(values["kv-memory-gib"])
    return [evaluate(dict(values, **{"kv-memory-gib": str(Decimal(float(memory + d)).quantize(Decimal("0.0001")))}))
            .engine for d in (-half, half)]


def _kv_line(text: str) -> str:
    return re.search(r"KV Cache is allocated\. (?:dtype: \S+, )?#tokens: \d+, (.*GB)", text)[1]


def reproduce_sglang(name: str, added: dict, text: str | None = None):
    text = text or log_text(name)
    reading = read_log(text)
    values = dict(reading.values, **added)
    evaluation = evaluate(values)
    assert evaluation.ok, evaluation.errors
    engine = evaluation.engine
    # K size + V size: two figures each to 0.01 GiB; an MLA pool's one KV size: one.
    half = Fraction(1, 200) if "KV size:" in text else Fraction(1, 100)
    low, high = _sglang_ends(values, half)
    printed = reading.printed["kv_tokens"].value
    assert low.kv_tokens <= printed <= high.kv_tokens, (name, low.kv_tokens, printed, high.kv_tokens)
    # The pool's line as SGLang prints it, at the KV memory read: the log's K and V sizes.
    assert _kv_line(text) in engine.log[0], (name, engine.log[0])
    return engine


def reproduce_llamacpp(name: str, added: dict):
    reading = read_log(log_text(name))
    values = {k: v for k, v in dict(reading.values, **added).items() if v is not None}
    evaluation = evaluate(values)
    assert evaluation.ok, evaluation.errors
    engine = evaluation.engine
    size = next(line for line in engine.log if line.startswith("llama_kv_cache: size"))
    ours = re.search(r"size = \s*([\d.]+) MiB \(\s*(\d+) cells,\s*(\d+) layers.*K \((\w+)\):\s*([\d.]+) MiB, "
                     r"V \((\w+)\):\s*([\d.]+) MiB", size)
    printed = reading.printed
    # The cache's size, K and V to the log's 0.01 MiB, and its cells (kv_size in older builds).
    assert Fraction(ours[1]) == printed["kv_cache_mib"].value, (name, size)
    assert Fraction(ours[5]) == printed["k_cache_mib"].value and Fraction(ours[7]) == printed["v_cache_mib"].value
    # Older builds print no cells on the size line: their kv_size, or n_ctx (one sequence), is it.
    cells = next(printed[k].value for k in ("kv_tokens", "kv_size", "n_ctx") if k in printed)
    assert int(ours[2]) == cells == engine.kv_tokens, (name, size)
    if "kv_layers" in printed:
        assert int(ours[3]) == printed["kv_layers"].value
    assert ours[4] == printed["cache_type_k"].value and ours[6] == printed["cache_type_v"].value
    return engine


# What each reproduced case adds to the read inputs, and why (SOURCES.md and the presets).
REPRODUCED = {
    # /data/models/Qwen3-8B: the Qwen/Qwen3-8B preset (36 layers, 8 KV heads of 128).
    "sglang-qwen3-8b-tp1-mfs090.log": {"model": "Qwen/Qwen3-8B"},
    # The command names the preset; the thread's GPU (inferred H200) does not change a read KV memory.
    "sglang-gemma3-4b-it-h200-mfs088-tp1-v0.4.4.log": {"gpu": "h200-141gb"},
    # /path/to/Qwen3-235B-A22B-FP8: the Qwen/Qwen3-235B-A22B preset; FP8 weights keep a bf16 cache
    # (94 layers, 4 KV heads of 128: one per rank under tp 4).
    "sglang-qwen3-235b-a22b-fp8-tp4-mfs093.log": {"model": "Qwen/Qwen3-235B-A22B", "gpu": "h100-sxm-80gb"},
    # The title's Qwen3-30B-A3B on the RTX 3090 of its MoE config path.
    "sglang-qwen3-30b-a3b-ktransformers-3090-cpu-experts.log": {"model": "Qwen/Qwen3-30B-A3B",
                                                                "gpu": "rtx-3090-24gb"},
    # Qwen3-Omni-30B-A3B's thinker has Qwen3-30B-A3B's attention (48 layers, 4 KV heads of 128).
    "sglang-qwen3-omni-30b-a3b-tp4-pool.log": {"model": "Qwen/Qwen3-30B-A3B"},
    # Qwen/Qwen2.5-VL-7B-Instruct is not a preset; its language model has the attention of the
    # Qwen2.5-7B-Instruct config fixture (28 layers, 4 KV heads of 128). B200 per the thread.
    "sglang-qwen2.5-vl-7b-b200-mfs-auto-pcg-tp1-v0.5.6dev.log": {
        "hf-config": hf_fixture("Qwen__Qwen2.5-7B-Instruct.json"), "gpu": "b200-180gb"},
    # The inferred Llama-2-7B architecture (32 layers, 32 KV heads of 128).
    "llamacpp-llama2-7b-class-cpu-unified-4k.log": {"model": "meta-llama/Llama-2-7b-hf"},
    # Nothing added: the GGUF metadata gave the shape. (test_engines.py checks the same line with
    # the Llama-3.3-70B-Instruct preset.)
    "llamacpp-llama3-70b-q3km-ollama-4k-2gpu.log": {},
    # Its GGUF metadata is the model: 80 x 2 x 1,024 x 2 B x 4,096 cells = 1,280.00 MiB.
    "llamacpp-llama31-70b-q4_0-rpc-2nodes-b6209.log": {},
    # qwen2.5-coder:32b has Qwen2.5-32B's attention (64 layers, 8 KV heads of 128).
    "llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log": {"model": "Qwen/Qwen2.5-32B"},
    # Nothing added: qwen3's GGUF metadata (40 layers, 8 KV heads of 128) is Qwen3-14B's shape;
    # q8_0's 34 bytes a block of 32: 32768 x 40 x 2 x 1024 x 34/32 B = 2720 MiB, as it printed.
    "llamacpp-qwen3-14b-q8kv-3090-32k-fa-b5505.log": {},
    # Nothing added: qwen3's GGUF metadata (28 layers, 8 KV heads of 128); all 448.00 MiB on the CPU.
    "llamacpp-qwen3-0.6b-ngl0-orin-4k-nofa-b5489.log": {},
    # DeepSeek-R1-Distill-Qwen-32B is Qwen2.5-32B fine-tuned: the same attention.
    "llamacpp-r1-distill-qwen-32b-class-ollama-2x4090-2k-nofa.log": {"model": "Qwen/Qwen2.5-32B"},
    # c4ai-command-r-v01 is not a preset; its config.json: 40 layers, 64 KV heads of 128 (no GQA).
    "llamacpp-command-r-35b-class-4070ti-3090ti-4k-b2450.log": {"layers": "40", "kv-heads": "64", "head-dim": "128"},
    # QwQ-32B has Qwen2.5-32B's attention (64 layers, 8 KV heads of 128: 2 a rank under tp 4); 4 x L4.
    "sglang-qwq-32b-4xl4-tp4-mfs085-v0.4.3.post4.log": {"model": "Qwen/Qwen2.5-32B", "gpu": "l4-24gb"},
    # GLM-5's MLA + DSA cell in fp8: 78 layers of 656 + the indexer's 132 B, 186.77 GiB on an MI355X.
    "sglang-glm-5-fp8-mi355x-tp8-fp8kv-rocm-v0.5.8.post1.log": {"gpu": "mi355x-288gb"},
    # Qwen2.5-7B's attention (28 layers, 4 KV heads of 128) in fp16; the 16 GB card is not named, and
    # the pool's 7.10 GiB sizes it without one.
    "sglang-qwen2.5-7b-awq-16gb-nocudagraph.log": {"model": "Qwen/Qwen2.5-7B"},
    # The server_args' model (not in the kept lines): Llama 3.2 3B, 28 layers of 8 KV heads of 128.
    "sglang-llama3.2-3b-l40s-mfs02-hicache-35k.log": {"model": "meta-llama/Llama-3.2-3B", "gpu": "l40s-48gb"},
    # Gemma 4 31B: the NVFP4 checkpoint's preset has its attention (10 global layers of 2048 per cell).
    "llamacpp-gemma4-31b-iswa-q5kv-b8643.log": {"model": "nvidia/Gemma-4-31B-IT-NVFP4"},
    # Kimi K2.5's MLA cell (61 layers of 512 + 64, bf16) over its 160.63 GiB on the MI355X.
    "sglang-kimi-k2.5-mi355x-tp8-rocm-mfs-auto-v0.5.8.post1.log": {"gpu": "mi355x-288gb"},
    # The PR run of sglang-deepseek-v32-exp-mla-tp8-dp8.log (lines 1-3, its command): DeepSeek-V3.2
    # has V3.2-Exp's attention (MLA with the NSA indexer, 61 layers); fp8_e4m3 and page 64 are
    # SGLang's choices for DSA on a B200 (SOURCES.md, inferred from the KV size).
    "sglang-deepseek-v32-exp-mla-tp8-dp8.log": {"model": "deepseek-ai/DeepSeek-V3.2", "kv-dtype": "fp8",
                                                "block-size": "64", "gpu": "b200-180gb"},
}

NOT_REPRODUCED = {
    "sglang-r1-distill-qwen-7b-3090-wsl2-mfs088-v0.4.2.log":
        "0.4.2's pool line prints K and V without #tokens, so its tokens are the scheduler's max_total_num_tokens; "
        "tests/test_accuracy_corpus.py scores the row (105,531 tokens at 5.64 GiB)",
    "llamacpp-qwen3.6-35b-a3b-q2k-cpu-hybrid-8k-llamacpppython.log":
        "llama.cpp's recurrent (Gated DeltaNet) state cache is not modelled: the engine refuses the hybrid model",
    "llamacpp-pr5104-kv-self-size-160mib.log":
        "the excerpt names no model and prints no layers (160 MiB at 512 f16 cells is 320 KiB a cell, 80 layers of "
        "8 KV heads of 128, a Llama-2-70B shape the thread does not confirm); test_log_flow.py compares its size",
    "sglang-mimo-v2-flash-swa-tp4-page64.log":
        "XiaomiMiMo/MiMo-V2-Flash is not a preset and its config.json is not among the fixtures, and only the "
        "sliding-window pool's 'KV Cache is allocated' lines are in the excerpt: no KV memory to size in (the PR "
        "also says this release's cell size over-counts)",
    "sglang-qwen2.5-vl-7b-b200-mfs-auto-nopcg-tp1-v0.5.6dev.log":
        "it prints the pool's tokens (max_total_num_tokens) but no KV memory: neither the K/V sizes nor the "
        "Load weight line with the memory it started with",
    "sglang-tp8-h200-init-distributed-pr11716.log":
        "only the distributed start-up's lines (no model, no pool): tests/engines/test_sglang_release.py holds "
        "SGLang's communicators' estimate to its ranks' mem usage",
    "sglang-dp8-attention-b200-init-distributed-pr5390.log":
        "only the distributed start-up's lines (no model, no pool): tests/engines/test_sglang_release.py holds "
        "SGLang's DP-attention communicators' estimate to its ranks' mem usage",
    "sglang-qwen3.5-moe-ktransformers-2x4090-tp2-hybrid.log":
        "the Qwen3.5 MoE size is not stated in the thread (no preset to name): its state sizes single out "
        "Qwen3.5-397B-A17B's shapes, and tests/engines/test_hybrid_ceilings.py reproduces it from that config",
    "llamacpp-command-a-iswa-240k-nofa-pad32.log":
        "no KV size line in the excerpt (only the non-SWA cells), Command-A is not a preset, and 240000 cells "
        "without flash attention is the pre-#17046 padding of 32 the engine refuses to guess",
    "llamacpp-gemma4-e4b-iswa-131k-3gpu.log":
        "Gemma 4 E4B is not a preset and no config.json of it is among the fixtures (a custom model of its 4 "
        "cache-owning layers would restate the log's own figure)",
    "llamacpp-gemma4-e4b-swa-np2-bf16-rocm.log":
        "Gemma 4 E4B is not a preset, the context is not printed, and the cache is unified (2/1 seqs), which no "
        "input says yet",
    "llamacpp-glm-4.5-air-128k-ub4096-fa.log":
        "no KV cache line in the excerpt (n_ctx, n_ubatch, flash_attn and the compute buffers only) and GLM-4.5-Air "
        "is not a preset; test_engines.py holds the compute-buffer estimate to this log",
    "llamacpp-glm-z1-32b-32k-fa-b5274.log":
        "no KV cache line in the excerpt (n_ctx, n_ubatch, flash_attn and the compute buffers only) and GLM-Z1-32B "
        "is not a preset; test_engines.py holds the compute-buffer estimate to this log",
    "llamacpp-qwen2.5-3b-class-llamasharp-4080s-4k.log":
        "the context is not printed (SOURCES.md infers 4096 from this very KV size) and Qwen2.5-3B is not a preset",
    "llamacpp-gemma3-1b-ngl14-940m-ub64-nofa.log":
        "the quoted lines name no model shape (Gemma 3 1B is not a preset) and no KV size line; "
        "test_llamacpp_offload.py sizes its CUDA0 KV buffers and compute buffer from its shape",
}


@pytest.mark.parametrize("name", sorted(REPRODUCED))
def test_read_inputs_reproduce_the_logs_figures(name):
    added = REPRODUCED[name]
    if name.startswith("sglang-deepseek"):
        lines = log_text(name).split("\n")
        engine = reproduce_sglang(name, added, "\n".join(lines[:5]) + "\n")
        assert engine.block_size == 64
    elif name.startswith("sglang-"):
        reproduce_sglang(name, added)
    else:
        reproduce_llamacpp(name, added)


def test_deepseek_v32_main_run_is_the_pool_before_the_fix():
    pytest.skip("the main run of sglang-deepseek-v32-exp-mla-tp8-dp8.log sizes its pool without the NSA indexer "
                "(656 B a layer, the bug PR #11309 fixed) while the engine counts it (788 B): that release's "
                "cell size is not modelled")


@pytest.mark.parametrize("name", sorted(NOT_REPRODUCED))
def test_logs_not_reproduced_say_why(name):
    if name == "sglang-qwen3.5-moe-ktransformers-2x4090-tp2-hybrid.log":
        # The reason holds: the read inputs with the 35B-A3B's shapes do not give the log's state pool.
        engine = evaluate(dict(read_log(log_text(name)).values, model="Qwen/Qwen3.5-35B-A3B")).engine
        assert not any("max_mamba_cache_size: 82," in line for line in engine.log)
    pytest.skip(NOT_REPRODUCED[name])


def test_the_log_and_the_inputs_read_from_it_print_the_same_figures():
    # What the page and the CLI put side by side: the log's figure and ours, from its inputs.
    from kvcalc.inputs.startup_log import comparison
    reading = read_log(log_text("sglang-qwen3-235b-a22b-fp8-tp4-mfs093.log"))
    rows = {label: (printed, ours) for label, printed, ours, _ in
            comparison(reading, evaluate(dict(reading.values, model="Qwen/Qwen3-235B-A22B")))}
    assert rows["KV memory per GPU"] == ("16.46 GiB", "16.46 GiB")
    reading = read_log(log_text("llamacpp-llama3-70b-q3km-ollama-4k-2gpu.log"))
    rows = {label: (printed, ours) for label, printed, ours, _ in comparison(reading, evaluate(reading.values))}
    assert rows["KV cache tokens"] == ("4,096", "4,096")


def test_cli_from_log_reads_sglang_and_llamacpp_logs(tmp_path):
    import io
    from kvcalc.cli import run
    for name, model, said in (("sglang-qwen3-8b-tp1-mfs090.log", "Qwen/Qwen3-8B", "kv-memory-gib = 55.6 (K size + V size), line 3"),
                              ("llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log", "Qwen/Qwen2.5-32B",
                               "engine-version = b4462 (build 4462), line 1")):
        log = tmp_path / name
        log.write_text(log_text(name), encoding="utf-8")
        out, err = io.StringIO(), io.StringIO()
        assert run(["--from-log", str(log), "--model", model], stdout=out, stderr=err) == 0, err.getvalue()
        assert said in err.getvalue()


def test_a_command_typed_over_several_lines_is_read_whole():
    sglang = read_log("python3 -m sglang.launch_server \\\n    --model-path Qwen/Qwen3-8B \\\n"
                      "    --tp-size 8 --dp-size 2 --enable-dp-attention \\\n    --mem-fraction-static 0.85 \\\n"
                      "    --page-size 16 --kv-cache-dtype fp8_e4m3 --context-length 32768\n"
                      "[2025-05-14 09:29:03 DP0 TP0] Load weight end. type=Qwen3ForCausalLM, avail mem=63.49 GB, "
                      "mem usage=15.35 GB.\n")
    assert inputs(sglang) == {"engine": "sglang", "model": "Qwen/Qwen3-8B", "tp": "4", "dp": "2", "gpus": "8",
                              "memory-utilization": "0.85", "block-size": "16", "kv-dtype": "fp8",
                              "context": "32768", "loaded-weights-gib": "15.35"}
    llama = read_log("./llama-server \\\n  -m model.gguf \\\n  -c 16384 -np 2 -ub 1024 \\\n"
                     "  -ctk q8_0 -ctv q4_0 -fa on -ngl 20\nllama_context: n_ctx         = 16384\n")
    assert inputs(llama) == {"engine": "llama.cpp", "batch": "2", "prefill-chunk": "1024", "n-gpu-layers": "20",
                             "flash-attn": "on", "kv-dtype": "q8_0", "kv-dtype-v": "q4_0", "context": "8192"}
    # `sglang serve MODEL` names its model first.
    served = read_log("$ sglang serve Qwen/Qwen3-8B --tp 2\nKV Cache is allocated. #tokens: 5, K size: 0.01 GB, "
                      "V size: 0.01 GB\n")
    assert served.values["model"] == "Qwen/Qwen3-8B" and served.values["tp"] == "2"


# --- bad input -------------------------------------------------------------------------------

def refused(text: str, engine: str | None = None) -> str:
    with pytest.raises(InputError) as error:
        read_log(text, engine=engine)
    message = error.value.message
    assert error.value.field == "log" and "\n" not in message
    return message


@pytest.mark.parametrize("text", ["", "   \n\n", "hello world\nthis is not a log\n", "\x00\x01\x02" * 100,
                                  "KV size: 12 GB\nmax tokens 5\n", "{'model': 'x'}\n" * 50])
def test_text_that_is_not_a_log_is_refused(text):
    refused(text)


@pytest.mark.parametrize("name, chosen", [("sglang-qwen3-8b-tp1-mfs090.log", "vllm"),
                                          ("llamacpp-llama2-7b-class-cpu-unified-4k.log", "sglang"),
                                          ("llamacpp-r1-distill-qwen-32b-class-ollama-2x4090-2k-nofa.log", "vllm"),
                                          ("sglang-gemma3-4b-it-h200-mfs088-tp1-v0.4.4.log", "llama.cpp")])
def test_a_log_read_for_another_engine_names_both(name, chosen):
    message = refused(log_text(name), engine=chosen)
    titles = {"vllm": "vLLM", "sglang": "SGLang", "llama.cpp": "llama.cpp"}
    own = "sglang" if name.startswith("sglang") else "llama.cpp"
    assert titles[own] in message and titles[chosen] in message


def test_sglang_and_llamacpp_logs_pasted_together_are_refused():
    message = refused(log_text("sglang-qwen3-8b-tp1-mfs090.log") + log_text("llamacpp-llama2-7b-class-cpu-unified-4k.log"))
    assert "SGLang" in message and "llama.cpp" in message


@pytest.mark.parametrize("name", sorted(READS))
def test_a_log_cut_anywhere_reads_or_refuses_and_never_reads_a_cut_value(name):
    # Cut at every 5th character: a reading, or a one-line refusal on "log". A value the cut line
    # gave must be the whole log's (a number cut short is left unread, said in the notes).
    text = log_text(name)
    whole = read_log(text).values
    for end in range(1, len(text), 5):
        part = text[:end]
        try:
            reading = read_log(part)
        except InputError as e:
            assert e.field == "log" and "\n" not in e.message
            continue
        last = part.count("\n") + 1
        for read in reading.read:
            if read.line_number != last:
                continue
            if read.option in COUNTED:
                # A count of the lines seen (GPUs by their KV buffers, tp by the ranks printed) is
                # smaller in a shorter paste, never larger.
                assert int(read.text) <= int(whole[read.option]), (name, end, read)
            else:
                assert whole.get(read.option) == read.text, (name, end, read)


# Inputs that count what the lines show (devices, ranks) rather than read a printed number.
COUNTED = {"gpus", "tp"}


def test_a_value_cut_at_the_end_of_the_paste_is_said_not_read():
    llama = log_text("llamacpp-glm-z1-32b-32k-fa-b5274.log").split("\n")
    reading = read_log(llama[0][:-2])          # "llama_context: n_ctx         = 327"
    assert "context" not in reading.values
    assert any("line 1 ends the paste without a line end" in note and "n_ctx" in note for note in reading.notes)
    sglang = log_text("sglang-qwen3-8b-tp1-mfs090.log")
    cut = sglang[:sglang.index("--context-length 8096") + len("--context-length 80")]
    reading = read_log(cut)
    assert "context" not in reading.values and reading.values["engine"] == "sglang"
    assert any("--context-length may be cut short" in note for note in reading.notes)
    # Ended with a line end, the same line is whole: read.
    assert read_log(llama[0] + "\n").values["context"] == "32768"


def _coloured(line: str, n: int) -> str:
    return f"\x1b[{31 + n % 6}m{line[:3]}\x1b[0m\x1b[1m{line[3:]}\x1b[0m\r" if line else line


@pytest.mark.parametrize("name", sorted(READS))
def test_ansi_colours_and_reordered_lines_read_the_same(name):
    lines = log_text(name).rstrip("\n").split("\n")
    coloured = [_coloured(line, n) for n, line in enumerate(lines)]
    assert inputs(read_log("\n".join(coloured) + "\n")) == READS[name]
    # Interleaved ranks print in any order: the lines shuffled, the same inputs (the command
    # first, as it is typed before the log starts).
    rng = random.Random(name)
    for _ in range(3):
        head, rest = coloured[:1], coloured[1:]
        rng.shuffle(rest)
        assert inputs(read_log("\n".join(head + rest) + "\n")) == READS[name], name


SGLANG_8B = log_text("sglang-qwen3-8b-tp1-mfs090.log")


@pytest.mark.parametrize("line, option, words", [
    ("[2025-05-14 09:29:03] KV Cache is allocated. #tokens: 99999999999999999999999, K size: 27.80 GB, "
     "V size: 27.80 GB", "kv-memory-gib", "#tokens"),
    ("[2025-05-14 09:29:03] KV Cache is allocated. #tokens: 404890, K size: NaN GB, V size: 27.80 GB",
     "kv-memory-gib", "K size"),
    ("[2025-05-14 09:29:03] KV Cache is allocated. #tokens: 404890, K size: 1e999 GB, V size: 1e999 GB",
     "kv-memory-gib", "K size"),
    ("[2025-05-14 09:29:03] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=nan GB, "
     "mem usage=NaN GB.", "loaded-weights-gib", "mem usage"),
    ("[2025-05-14 09:29:03] Load weight end. type=X, avail mem=1.0 GB, mem usage=99999999999.5 GB.",
     "loaded-weights-gib", "loaded-weights-gib"),
    ("[2025-05-14 09:29:02] server_args=ServerArgs(model_path='/m', tp_size=1, mem_fraction_static=nan, "
     "context_length=None)", "memory-utilization", "memory-utilization"),
    ("[2025-05-14 09:29:02] server_args=ServerArgs(model_path='/m', tp_size=99999999999999999999, "
     "context_length=8096)", "tp", "tp_size"),
])
def test_hostile_sglang_lines_are_said_and_not_taken(line, option, words):
    # The hostile line alone with a few honest ones: no exception but InputError, the bad value not
    # taken, the notes saying it.
    text = "\n".join([line, "[2025-05-14 09:29:03] Memory pool end. avail mem=7.64 GB"]) + "\n"
    reading = read_log(text)
    assert option not in reading.values or reading.values[option] in ("1",)
    assert any(words in note and "not taken" in note for note in reading.notes), reading.notes


@pytest.mark.parametrize("text, words", [
    # The summary printed twice with different pools: two start-ups.
    (SGLANG_8B + SGLANG_8B.split("\n")[-2].replace("404890", "404891") + "\n",
     "max_total_num_tokens is 404890 at line 7 and 404891 at line 8"),
    # The pool's #tokens against the summary's.
    (SGLANG_8B.replace("max_total_num_tokens=404890", "max_total_num_tokens=404000"),
     "#tokens is 404890 at line 3 and 404000 at line 7"),
    # ServerArgs' tp_size against the command's.
    (SGLANG_8B + "[2025-05-14 09:29:02] server_args=ServerArgs(model_path='/data/models/Qwen3-8B', tp_size=2, "
                 "page_size=1)\n",
     "tp_size is 1 at line 1 and 2 at line 8"),
    # Two commands.
    (SGLANG_8B + SGLANG_8B, "lines 1 and 8 each begin one"),
    # llama.cpp: n_ctx twice, different.
    ("llama_context: n_ctx         = 4096\nllama_context: n_ubatch      = 512\nllama_context: n_ctx         = 8192\n",
     "n_ctx is 4096 at line 1 and 8192 at line 3"),
    # llama.cpp: two builds' banners.
    ("build: 4462 (c05e8c99) with cc\nllama_context: n_ctx = 4096\nbuild: 5192 (4d3b6b2a) with cc\n",
     "more than one start-up"),
    # llama.cpp: two different full caches.
    ("llama_kv_cache: size = 1280.00 MiB (  4096 cells,  80 layers,  1/1 seqs), K (f16):  640.00 MiB, V (f16):  "
     "640.00 MiB\nllama_kv_cache: size = 2560.00 MiB (  8192 cells,  80 layers,  1/1 seqs), K (f16): 1280.00 MiB, "
     "V (f16): 1280.00 MiB\n", "more than one start-up"),
])
def test_repeated_keys_with_different_values_are_more_than_one_start_up(text, words):
    message = refused(text)
    assert "more than one start-up" in message and words in message, message


@pytest.mark.parametrize("line, option, words", [
    ("llama_context: n_ctx         = NaN", "context", "n_ctx"),
    ("llama_context: n_ctx         = 99999999999999999999", "context", "n_ctx"),
    ("llama_context: flash_attn    = maybe", "flash-attn", "flash_attn"),
    ("llama_kv_cache: size = nan MiB (  4096 cells,  32 layers,  1/1 seqs), K (f16): 1e999 MiB, V (f16): 1 MiB",
     "kv-dtype", "KV size"),
    ("load_tensors: offloaded 99999999999999/41 layers to GPU", "n-gpu-layers", "offloaded layers"),
    ("llama_kv_cache:      CUDA0 KV buffer size = inf MiB", "gpus", "KV buffer"),
    ("llama_model_loader: - kv  14:                          llama.block_count u32              = -5", "layers",
     "llama.block_count"),
])
def test_hostile_llamacpp_lines_are_said_and_not_taken(line, option, words):
    text = "\n".join([line, "llama_context: n_ubatch      = 512"]) + "\n"
    reading = read_log(text)
    assert option not in reading.values
    assert any(words in note and "not taken" in note for note in reading.notes), reading.notes


def test_a_ten_megabyte_log_reads_in_linear_time():
    # Every rank's lines of a long start-up, repeated: ten times the log takes about ten times as
    # long, never a hundred (a rule that rescans what it read). Measured as this process's CPU
    # time against its own 1 MiB run, so a busy machine moves both alike; the speed itself is a
    # benchmark's to print, not a test's to time.
    block = "\n".join(line for line in log_text("sglang-qwen3-omni-30b-a3b-tp4-pool.log").split("\n") if line)
    llama = "\n".join(line for line in log_text("llamacpp-llama3-70b-q3km-ollama-4k-2gpu.log").split("\n") if line)
    for text, engine in ((block, "sglang"), (llama, "llama.cpp")):
        seconds = []
        for mib in (1, 10):
            log = (text + "\n") * ((mib << 20) // (len(text) + 1))
            started = time.process_time()
            reading = read_log(log)
            seconds.append(time.process_time() - started)
            assert reading.engine == engine
        small, big = seconds
        assert big < 30 * small + 0.5, f"{engine}: 1 MiB in {small:.2f} s, 10 MiB in {big:.2f} s"


@pytest.mark.parametrize("line, gpu", [
    ("llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 3090) (0000:01:00.0) - 23306 MiB free",
     "rtx-3090-24gb"),
    ("  Device 0: AMD Instinct MI300X, gfx942:sramecc+:xnack- (0x942), VMM: no, Wave Size: 64", "mi300x-192gb"),
    ("  Device 0: NVIDIA H100 80GB HBM3, compute capability 9.0, VMM: yes", "h100-sxm-80gb"),
    # An Apple chip's name does not say its memory: said, not read.
    ("ggml_metal_init: found device: Apple M3 Max", None),
    ("ggml_vulkan: 0 = AMD Radeon RX 7900 XTX (AMD proprietary driver) | uma: 0 | fp16: 1", None),
])
def test_llamacpp_device_lines_name_the_gpu_preset(line, gpu):
    reading = read_log(line + "\nllama_context: n_ctx         = 4096\n")
    assert reading.values.get("gpu") == gpu
    if gpu is None:
        assert any(note.startswith("gpu not read") for note in reading.notes)


def test_older_sglang_lines_without_tokens_or_mem_usage():
    # Before 0.4.4 the pool line printed no #tokens ("KV Cache is allocated. K size: X GB, V size:
    # Y GB.") and Load weight end no mem usage; the summary had no chunked_prefill_size. The
    # weights are then what loading took: avail mem at Load weight begin less at its end.
    reading = read_log("[2025-01-23 19:35:12 TP0] Load weight begin. avail mem=78.85 GB\n"
                       "[2025-01-23 19:35:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
                       "avail mem=63.72 GB\n"
                       "[2025-01-23 19:35:20 TP0] KV Cache is allocated. K size: 27.13 GB, V size: 27.13 GB.\n"
                       "[2025-01-23 19:35:25 TP0] max_total_num_tokens=444500, max_prefill_tokens=16384, "
                       "max_running_requests=4097, context_len=131072\n")
    assert inputs(reading) == {"engine": "sglang", "tp": "1", "gpus": "1", "loaded-weights-gib": "15.13",
                               "kv-memory-gib": "54.26", "context": "131072"}
    assert reading.printed["kv_tokens"].value == 444500
    assert next(r for r in reading.read if r.option == "loaded-weights-gib").how.startswith("avail mem at Load")


def test_llamacpp_unified_cache_reads_each_sequences_share():
    # Newer llama-server (-np 4 with a unified cache, "4/1 seqs"): n_ctx is all four's cells in one
    # stream; each sequence's share is the context, and the notes say the cache is unified.
    reading = read_log("srv    load_model: loading model '/models/Qwen3-8B-Q4_K_M.gguf'\n"
                       "llama_context: n_seq_max     = 4\nllama_context: n_ctx         = 16384\n"
                       "llama_kv_cache: size = 2304.00 MiB ( 16384 cells,  36 layers,  4/1 seqs), K (f16): "
                       "1152.00 MiB, V (f16): 1152.00 MiB\n")
    # The file Qwen3-8B-Q4_K_M.gguf is Qwen3 8B's shape, its weights Q4_K_M's (issue 34 item 1).
    assert inputs(reading) == {"engine": "llama.cpp", "batch": "4", "context": "4096", "kv-dtype": "fp16",
                               "model": "/models/Qwen3-8B-Q4_K_M.gguf"}
    assert any("unified" in note for note in reading.notes)
    assert "Qwen/Qwen3-8B" in next(r for r in reading.read if r.option == "model").how
    # The same memory as the calculator sizes it: 4 streams of 4,096 cells hold the 16,384 cells,
    # 2304.00 MiB, the log's one stream holds.
    engine = evaluate(dict(reading.values, model="Qwen/Qwen3-8B")).engine
    assert engine.kv_tokens == 4096 and "size = 2304.00 MiB (  4096 cells,  36 layers,  4/4 seqs)" in engine.log[0]


def test_sglang_memory_in_use_from_the_gpu_reproduces_the_pool_without_its_kv_memory():
    # sglang-qwen3-8b-tp1-mfs090.log with the lines `python -m sglang.check_env` prints above it
    # (the GPU and the release: added here, the thread's excerpt has neither; test_engines.py
    # sizes this log on one H100). SGLang multiplies the memory free before the weights (63.49 +
    # 15.35 = 78.84 GiB) by mem_fraction_static 0.9: in use before it started is the H100's 79.22
    # GiB less that, 0.38 GiB. Sized from that, the weights it printed and 0.9 alone, without the
    # pool's own K and V sizes, the pool holds the log's 404,890 tokens, within the rounding of
    # the two printed figures (0.01 GiB of memory in use either way).
    text = "GPU 0: NVIDIA H100 80GB HBM3\nsglang: 0.4.6.post4\n" + log_text("sglang-qwen3-8b-tp1-mfs090.log")
    reading = read_log(text)
    assert reading.values["gpu"] == "h100-sxm-80gb" and reading.values["memory-in-use-gib"] == "0.38"
    assert reading.values["engine-version"] == "0.4.6.post4"
    from kvcalc.inputs.startup_log import measured_with
    values = {k: v for k, v in reading.values.items() if k not in ("kv-memory-gib", "measured-with")}
    values["model"] = "Qwen/Qwen3-8B"
    ends = []
    for used in ("0.39", "0.37"):
        end = dict(values, **{"memory-in-use-gib": used})
        engine = evaluate(dict(end, **{"measured-with": measured_with(end)})).engine
        ends.append(engine.kv_tokens)
    assert ends[0] <= 404_890 <= ends[1], ends


def test_llamacpp_a_speculative_draft_models_lines_are_not_the_targets():
    # llama-server -md loads the draft after the target ("loading draft model"), with its own
    # context and cache: read as the target's, they would look like a second start-up.
    target = log_text("llamacpp-r1-distill-qwen-32b-class-ollama-2x4090-2k-nofa.log")
    draft = ("srv    load_model: loading draft model 'qwen2.5-0.5b-q8_0.gguf'\n"
             "llama_new_context_with_model: n_ctx_per_seq = 4096\n"
             "llama_kv_cache_init: kv_size = 4096, offload = 1, type_k = 'q8_0', type_v = 'q8_0', n_layer = 24, "
             "can_shift = 1\n"
             "llama_new_context_with_model: KV self size  =   48.00 MiB, K (q8_0):   24.00 MiB, V (q8_0):   24.00 MiB\n")
    reading = read_log(target + draft)
    assert inputs(reading) == READS["llamacpp-r1-distill-qwen-32b-class-ollama-2x4090-2k-nofa.log"]
    assert reading.printed["kv_cache_mib"].value == 512
    assert any("draft model" in note for note in reading.notes)


def test_fixture_lines_with_their_numbers_broken_never_raise_another_error():
    # The fixtures' own lines, their numbers replaced by what a line can be built to hold (NaN,
    # 1e999, 10^23, signs, separators, nothing) or cut, in any order: a reading, or a one-line
    # refusal on "log"; never an exception of another kind. The same cases on every run.
    lines = [line for name in ALL for line in log_text(name).split("\n") if line]
    rng = random.Random(24)
    breaks = ["NaN", "nan", "inf", "-1", "0", "99999999999999999999999", "1e999", "", "-0.0", "0x10", "1,2", "٣",
              "½", "None", "'", ")", "(", "\\"]

    def broken(line: str) -> str:
        line = re.sub(r"\d+(?:\.\d+)?", lambda m: rng.choice(breaks) if rng.random() < 0.3 else m[0], line)
        return line[:rng.randrange(len(line) + 1)] if rng.random() < 0.1 else line

    for _ in range(600):
        text = "\n".join(broken(rng.choice(lines)) for _ in range(rng.randrange(1, 25)))
        try:
            reading = read_log(text + ("\n" if rng.random() < 0.5 else ""))
        except InputError as e:
            assert e.field == "log" and "\n" not in e.message, e.message
            continue
        assert reading.engine in ("sglang", "llama.cpp")


def test_sglang_hybrid_sliding_window_pools_add_up_in_any_order():
    # sglang-mimo-v2-flash-swa-tp4-page64.log prints only the sliding-window pool's line; with the
    # full pool's line too (its #tokens are full_layer_tokens), the KV memory is both pools'.
    lines = ["[2026-01-31 13:50:39 TP0] Use sliding window memory pool. full_layer_tokens=375360, "
             "swa_layer_tokens=300288",
             "[2026-01-31 13:50:39 TP0] KV Cache is allocated. #tokens: 375360, K size: 2.10 GB, V size: 1.40 GB",
             "[2026-01-31 13:50:39 TP0] KV Cache is allocated. #tokens: 300288, K size: 8.38 GB, V size: 5.59 GB",
             "[2026-01-31 13:50:40 TP0] max_total_num_tokens=375360, chunked_prefill_size=8192, "
             "max_prefill_tokens=16384, max_running_requests=64, context_len=262144, available_gpu_mem=10.00 GB"]
    for order in (lines, lines[::-1], lines[2:] + lines[:2]):
        reading = read_log("\n".join(order) + "\n")
        assert reading.values["kv-memory-gib"] == "17.47"          # 2.10 + 1.40 + 8.38 + 5.59
        assert reading.printed["kv_tokens"].value == 375360
        assert reading.values["context"] == "262144" and reading.values["prefill-chunk"] == "8192"
    alone = read_log("\n".join(lines[:1] + lines[2:3]) + "\n")
    assert "kv-memory-gib" not in alone.values and any("sliding-window pool's" in n for n in alone.notes)
