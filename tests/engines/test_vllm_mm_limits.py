"""vLLM's --limit-mm-per-prompt (the option limit-mm-per-prompt): the profiling run encodes the largest items
the limits allow (V0: config.py's defaults of one a modality, multimodal/profiling.py get_decoder_dummy_data;
V1: MultiModalBudget over the allowed modalities), and 0 for every modality serves the model text-only.
Worked on real public logs (tests/fixtures/logs, URLs in SOURCES.md)."""

import json
from fractions import Fraction
from pathlib import Path

import pytest

from kvcalc.engines.releases import release as parse_release
from kvcalc.engines.vllm import encoder_profile, profile
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log
from kvcalc.serving.launch import launch
from support import FIXTURES, hf_fixture

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
GIB = 1 << 30
# vllm-qwen2.5-vl-72b-4xa100-40gb-tp4-util095-v0-v0.8.3.log, the turn 9: VLLM_USE_V1=0 vllm serve
# Qwen2.5-VL-72B-Instruct --tensor-parallel-size 4 --gpu-memory-utilization 0.95 --max-num-seqs 2
# --max-model-len 4096 --limit-mm-per-prompt image=1,video=0; "PyTorch activation peak memory takes 2.51GiB".
VL72B_LOG = "vllm-qwen2.5-vl-72b-4xa100-40gb-tp4-util095-v0-v0.8.3.log"
VL72B = {"engine": "vllm", "engine-version": "0.8.3", "vllm-engine": "v0", "gpu": "a100-sxm-40gb", "gpus": "4",
         "tp": "4", "memory-utilization": "0.95", "context": "4096", "batch": "2",
         "hf-config": json.loads((FIXTURES / "hf" / "assembled" / "Qwen__Qwen2.5-VL-72B-Instruct.json")
                                 .read_text(encoding="utf-8"))}


@pytest.mark.parametrize("typed, canonical", [
    ("image=1,video=0", "image=1/video=0"), ('{"image": 1, "video": 0}', "image=1/video=0"),
    ("'video': 0, 'image': 2", "image=2/video=0"), ("IMAGE=3", "image=3")])
def test_the_limits_are_read_in_vllm_s_spellings(typed, canonical):
    out = evaluate({"engine": "vllm", "model": "meta-llama/Llama-3.1-8B", "limit-mm-per-prompt": typed})
    assert out.ok and out.values["limit-mm-per-prompt"] == canonical


@pytest.mark.parametrize("typed", ["image=a", "sound=1", "image=1000", "image=1,image=2", ","])
def test_a_bad_limit_is_refused_by_name(typed):
    out = evaluate({"engine": "vllm", "model": "meta-llama/Llama-3.1-8B", "limit-mm-per-prompt": typed})
    assert [e.field for e in out.errors] == ["limit-mm-per-prompt"]


def test_the_72b_log_profiles_one_image_in_one_sequence_of_16384_tokens():
    """V0 raises a multimodal model's max_num_batched_tokens to 5,120 (config.py
    _MULTIMODAL_MODEL_MAX_NUM_BATCHED_TOKENS); image=1,video=0 makes the dummy prompt one image of 16,384 tokens;
    max(1, min(2, 5,120 // 16,384)) = 1 sequence, kept past its seq_len (0.8.3). The language model runs over
    16,384 tokens (a Qwen2 MLP at tp 4 keeps 3 x 29,568 / 4 + 5 x 8,192 widths) beside the image's float32
    pixel values (65,536 patches x 1,176 x 4 B): 2,068,840,448 + 308,281,344 B, 2.21 GiB against the printed
    2.51. With V0's default limits (an image and a video) the run would be over 32,768 tokens."""
    e = evaluate(VL72B | {"limit-mm-per-prompt": "image=1,video=0"})
    assert e.ok and e.engine.prefill_chunk == 5_120
    tower = encoder_profile.tower(e.scenario.model)
    d = encoder_profile.v0_dummy(tower, parse_release("0.8.3"), 5_120, 2, 4_096, {"image": 1, "video": 0})
    assert (d.seqs, d.tokens, d.images, d.videos) == (1, 16_384, 1, 0)
    both = encoder_profile.v0_dummy(tower, parse_release("0.8.3"), 5_120, 2, 4_096)
    assert (both.seqs, both.tokens, both.images, both.videos) == (1, 32_768, 1, 1)
    forward, _ = profile.forward_peak(e.scenario.model, parse_release("0.8.3"), 4, 16_384)
    assert forward == 16_384 * 2 * (3 * 29_568 // 4 + 5 * 8_192) == 2_068_840_448
    pixels = 65_536 * 1_176 * 4
    assert any("1 dummy sequence of 16,384 tokens with 1 image encoded" in n for n in e.engine.notes)
    assert forward + pixels < e.engine.activation_bytes_per_gpu < Fraction(251, 100) * GIB
    assert "PyTorch activation peak memory takes 2.51GiB" in (LOGS / VL72B_LOG).read_text(encoding="utf-8")


def test_the_72b_log_s_overhead_lies_in_the_band_and_its_pool_below_what_a_figure_resolves():
    """The three ranks of the one start print 0.13, 0.04 and 0.09 GiB of KV (non-torch 0.34, 0.43, 0.38):
    the pool is smaller than their spread. The printed overhead (37.41 - 34.43 - 0.04 = 2.94 GiB) lies in
    the band; the estimate leaves 0.39 GiB."""
    text = (LOGS / VL72B_LOG).read_text(encoding="utf-8")
    assert text.count("the rest of the memory reserved for KV Cache is") == 3
    e = evaluate(VL72B | {"limit-mm-per-prompt": "image=1,video=0"}).engine
    high, low = e.band
    assert low.overhead_bytes_per_gpu <= Fraction(294, 100) * GIB <= high.overhead_bytes_per_gpu
    assert abs(e.weights_bytes_per_gpu / GIB - 34.43) < 0.01


def test_v1_profiles_only_the_allowed_modality():
    """Qwen2-VL-2B at max_model_len 65,536 on 0.10.2: the video of 7 temporal patches (114,688 tokens' worth,
    capped at 14 frames) outweighs the image, so profile_run encodes it; video=0 leaves the image of 16,384
    tokens; image=0 and video=0 serve it text-only (no tower)."""
    values = {"engine": "vllm", "engine-version": "0.10.2", "hf-config": hf_fixture("Qwen__Qwen2-VL-2B-Instruct.json"),
              "gpu": "h100-sxm-80gb", "context": "65536"}
    tower = encoder_profile.tower(evaluate(values).scenario.model)
    release = parse_release("0.10.2")
    assert encoder_profile.largest_item(tower, release, 65_536)[0] == "video"
    assert encoder_profile.largest_item(tower, release, 65_536, {"video": 0}) == ("image", 65_536, 16_384)
    default, images = evaluate(values).engine, evaluate(values | {"limit-mm-per-prompt": "video=0"}).engine
    assert images.activation_bytes_per_gpu < default.activation_bytes_per_gpu
    text = evaluate(values | {"limit-mm-per-prompt": "image=0,video=0"})
    assert text.ok and not text.scenario.model.multimodal


def test_the_launch_command_writes_the_limits_as_the_release_parses_them():
    old = evaluate(VL72B | {"limit-mm-per-prompt": "image=1,video=0"}).scenario
    assert "--limit-mm-per-prompt image=1,video=0" in launch(old, "vllm").command
    new = evaluate(VL72B | {"limit-mm-per-prompt": "image=1,video=0", "engine-version": "0.10.2",
                            "vllm-engine": "v1"}).scenario
    assert """--limit-mm-per-prompt '{"image": 1, "video": 0}'""" in launch(new, "vllm").command


def test_a_log_s_limits_are_read_and_zero_limits_serve_text_only():
    # 'limit_mm_per_prompt': {'image': 2, 'audio': 0} (Qwen3.6-35B-A3B NVFP4 on an RTX 5090, 0.24.0)
    rtx = read_log((LOGS / "vllm-qwen3.6-35b-a3b-nvfp4-5090-fp8kv.log").read_text(encoding="utf-8"), "vllm")
    assert rtx.values["limit-mm-per-prompt"] == "image=2/audio=0"
    xpu = read_log((LOGS / "vllm-qwen3.6-27b-int4-2xarc-b70-xpu-tp2-8k-v0.23.0.log").read_text(encoding="utf-8"),
                   "vllm")
    assert xpu.values.get("language-model-only") == "on" and "limit-mm-per-prompt" not in xpu.values
