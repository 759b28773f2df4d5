"""A multimodal checkpoint served text-only (readers/text_only.py, the option language-model-only):
vLLM builds no vision tower and profiles no encoder pass (--language-model-only from 0.17.0;
--limit-mm-per-prompt 0 for every modality from 0.10.2; vllm/config/multimodal.py
get_limit_per_prompt, vllm/multimodal/registry.py supports_multimodal_inputs, read in the 0.10.2,
0.12.0, 0.16.0, 0.17.0 and 0.22.0 wheels). Worked on real public logs (tests/fixtures/logs, URLs in
SOURCES.md)."""

from pathlib import Path

from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log
from kvcalc.readers.presets import preset_model
from kvcalc.serving.launch import launch

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
GIB = 1 << 30
# vllm-qwen3.6-27b-fp8-h100-util088-4k-eager-v0.27.1.log: Qwen3.6-27B-FP8 on an H100, non-default args
# 'language_model_only': True; "Model loading took 27.67 GiB", "Available KV cache memory: 41.03 GiB".
H100_LOG = "vllm-qwen3.6-27b-fp8-h100-util088-4k-eager-v0.27.1.log"
H100 = {"engine": "vllm", "engine-version": "0.27.1", "model": "Qwen/Qwen3.5-27B", "weights-dtype": "fp8",
        "gpu": "h100-sxm-80gb", "context": "4096", "memory-utilization": "0.88", "prefill-chunk": "4096",
        "batch": "32", "enforce-eager": "on", "prefix-caching": "on"}
# vllm-qwen3.6-35b-a3b-dgx-spark-tp1-util095-131k-v0.19.2rc1.log: Qwen3.6-35B-A3B bf16 on a DGX Spark,
# 'language_model_only': True; "Available KV cache memory: 47.55 GiB".
SPARK = {"engine": "vllm", "engine-version": "0.19.2rc1", "model": "Qwen/Qwen3.6-35B-A3B",
         "gpu": "dgx-spark-128gb", "context": "131072", "memory-utilization": "0.95"}


def _gib(n: int) -> float:
    return n / GIB


def test_the_tower_leaves_the_weights_to_the_byte():
    """Qwen3.5-27B's tower and merger (vision_params, the preset's config) are 460,730,096 parameters,
    921,460,192 B at bf16: exactly what the weights lose, fp8 pricing of the rest unchanged."""
    tower = preset_model("Qwen/Qwen3.5-27B").shapes.vision
    params = sum(rows * cols for _, rows, cols in tower.groups)
    assert params == 460_730_096
    full = evaluate(H100)
    text = evaluate(H100 | {"language-model-only": "on"})
    assert full.ok and text.ok
    assert full.scenario.deployment.weights_bytes - text.scenario.deployment.weights_bytes == 2 * params
    assert not text.scenario.model.multimodal and text.scenario.serving.encoder is None


def test_the_h100_log_is_within_one_percent_with_no_encoder_pass():
    """The log's 41.03 GiB: with the tower and its 1.73 GiB encoder pass we gave 39.40 GiB (-4.0%);
    text-only, 41.44 GiB (+1.0%), the loaded weights 27.54 against the printed 27.67."""
    assert "'language_model_only': True" in (LOGS / H100_LOG).read_text(encoding="utf-8")
    assert "Available KV cache memory: 41.03 GiB" in (LOGS / H100_LOG).read_text(encoding="utf-8")
    full = evaluate(H100).engine
    text = evaluate(H100 | {"language-model-only": "on"}).engine
    assert any("vision encoder's profiling pass" in n for n in full.notes)
    assert not any("vision encoder's profiling pass" in n for n in text.notes)
    printed = 41.03
    assert abs(_gib(full.kv_budget_bytes_per_gpu) / printed - 1) > 0.035
    assert abs(_gib(text.kv_budget_bytes_per_gpu) / printed - 1) < 0.011
    assert abs(_gib(text.weights_bytes_per_gpu) - 27.67) < 0.15
    assert text.activation_bytes_per_gpu < full.activation_bytes_per_gpu - GIB


def test_the_dgx_spark_log_is_within_one_percent():
    """47.55 GiB printed: 46.13 with the tower (-3.0%), 47.81 text-only (+0.5%)."""
    assert "Available KV cache memory: 47.55 GiB" in \
        (LOGS / "vllm-qwen3.6-35b-a3b-dgx-spark-tp1-util095-131k-v0.19.2rc1.log").read_text(encoding="utf-8")
    full = evaluate(SPARK).engine
    text = evaluate(SPARK | {"language-model-only": "on"}).engine
    assert abs(_gib(full.kv_budget_bytes_per_gpu) / 47.55 - 1) > 0.025
    assert abs(_gib(text.kv_budget_bytes_per_gpu) / 47.55 - 1) < 0.01


def test_the_log_reader_takes_the_flag_and_zero_limits_but_not_a_nonzero_one():
    h100 = read_log((LOGS / H100_LOG).read_text(encoding="utf-8"), "vllm")
    assert h100.values.get("language-model-only") == "on"
    # 'limit_mm_per_prompt': {'image': 0, 'video': 0} (Qwen3.6-27B on two Arc Pro B70s, 0.23.0)
    xpu = read_log((LOGS / "vllm-qwen3.6-27b-int4-2xarc-b70-xpu-tp2-8k-v0.23.0.log").read_text(encoding="utf-8"),
                   "vllm")
    assert xpu.values.get("language-model-only") == "on"
    # 'limit_mm_per_prompt': {'image': 2, 'audio': 0} keeps the tower
    rtx = read_log((LOGS / "vllm-qwen3.6-35b-a3b-nvfp4-5090-fp8kv.log").read_text(encoding="utf-8"), "vllm")
    assert "language-model-only" not in rtx.values


def test_the_launch_command_says_it_in_the_release_s_words():
    new = evaluate(H100 | {"language-model-only": "on"}).scenario
    assert "--language-model-only" in launch(new, "vllm").command
    old = evaluate(H100 | {"language-model-only": "on", "engine-version": "0.12.0", "enforce-eager": "off",
                           "prefix-caching": "off"})
    assert old.ok
    command = launch(old.scenario, "vllm").command
    assert "--language-model-only" not in command and "--limit-mm-per-prompt" in command
    assert '"image": 0' in command and '"video": 0' in command


def test_before_0_10_2_it_is_refused_and_a_text_only_model_is_unchanged():
    out = evaluate(H100 | {"language-model-only": "on", "engine-version": "0.8.3", "enforce-eager": "off",
                           "prefix-caching": "off"})
    assert [e.field for e in out.errors] == ["language-model-only"]
    assert "0.10.2" in out.errors[0].message
    llama = {"engine": "vllm", "model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb"}
    same, flagged = evaluate(llama), evaluate(llama | {"language-model-only": "on"})
    assert same.engine.kv_budget_bytes_per_gpu == flagged.engine.kv_budget_bytes_per_gpu
    assert "--language-model-only" not in launch(flagged.scenario, "vllm").command


def test_a_tower_not_counted_here_is_refused_by_name_and_other_engines_refuse_the_option():
    gemma = evaluate({"engine": "vllm", "model": "google/gemma-4-26B-A4B", "gpu": "h100-sxm-80gb",
                      "language-model-only": "on"})
    assert [e.field for e in gemma.errors] == ["language-model-only"]
    assert "not counted here" in gemma.errors[0].message and "config.json" in gemma.errors[0].message
    sglang = evaluate({"engine": "sglang", "model": "Qwen/Qwen3.5-27B", "gpu": "h100-sxm-80gb",
                       "language-model-only": "on"})
    assert [e.field for e in sglang.errors] == ["language-model-only"]
