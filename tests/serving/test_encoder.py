"""A multimodal model's vision encoder (issue 26, part 3): Qwen2.5-VL's tower counted from its real
config.json against the checkpoint's total, placed under tensor parallel as vLLM's
mm_encoder_tp_mode and SGLang's --mm-enable-dp-encoder place it, vLLM's encoder cache budget,
and llama.cpp's mmproj file from its GGUF header (research section 3)."""

import os
import sys

import pytest

from kvcalc import InputError, evaluate
from kvcalc.readers import gguf, presets
from kvcalc.readers.params import count_params
from kvcalc.serving import encoder
from kvcalc.serving import ServingSettings
from kvcalc.engines.vllm.serving import SERVING as VLLM_RULES
from support import hf_fixture

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from gguf_files import T, write  # noqa: E402

QWEN25_VL = "Qwen__Qwen2.5-VL-7B-Instruct.json"
TOWER = 676_550_144


def test_qwen2_5_vl_7b_tower_against_the_checkpoint_total():
    """transformers Qwen2_5_VisionTransformerPretrainedModel, hidden h = 1,280, MLP 3,420, 32 blocks:
    a block: two RMSNorms 2h = 2,560; qkv 3h x h + 3h = 4,919,040; proj h x h + h = 1,639,680;
    gate and up 2 x (3,420 x h + 3,420) = 8,762,040; down h x 3,420 + h = 4,378,880: 19,702,200,
    x 32 = 630,470,400. Patch embedding (Conv3d, no bias) h x 3 x 2 x 14 x 14 = 1,505,280. Merger:
    ln_q h = 1,280, mlp.0 5,120^2 + 5,120 = 26,219,520, mlp.2 3,584 x 5,120 + 3,584 = 18,353,664:
    44,574,464. Tower 676,550,144.
    The language model has Qwen2.5-7B's shapes, untied: 7,615,616,512 (README). Total 8,292,166,656
    = the checkpoint's model.safetensors.index.json total_size 16,584,333,312 / 2 B (bf16), and HF's
    numParameters for Qwen/Qwen2.5-VL-7B-Instruct (tests/fixtures/hf/SOURCES.md)."""
    counted = count_params(hf_fixture(QWEN25_VL))
    assert counted.total == 16_584_333_312 // 2 == 8_292_166_656
    assert sum(g.elements for g in counted.tensors if g.role == "vision") == TOWER
    assert counted.total - TOWER == 7_615_616_512
    # Pasted, the config now sizes the checkpoint's weights exactly (the tower was refused before).
    pasted = evaluate({"hf-config": hf_fixture(QWEN25_VL), "gpu": "h100-sxm-80gb"})
    assert pasted.result.weights_bytes == 16_584_333_312


def test_the_nested_layout_transformers_re_saves_counts_the_same():
    """transformers 4.53 on writes Qwen2.5-VL's text keys under text_config (model_type
    qwen2_5_vl_text): the same shapes, the same count."""
    flat = hf_fixture(QWEN25_VL)
    wrapper_keys = ("architectures", "model_type", "vision_config", "torch_dtype", "transformers_version",
                    "image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
    nested = {k: flat[k] for k in wrapper_keys}
    nested["text_config"] = {k: v for k, v in flat.items() if k not in wrapper_keys}
    nested["text_config"]["model_type"] = "qwen2_5_vl_text"
    assert count_params(nested).total == 8_292_166_656


def qwen(**values):
    return evaluate({"hf-config": hf_fixture(QWEN25_VL), "gpu": "h100-sxm-80gb", **values})


def test_data_mode_holds_the_whole_tower_on_every_gpu():
    """bf16: 676,550,144 x 2 B = 1,353,100,288 B. Weights mode (vLLM's default) splits it with the
    model: nothing added. Data mode at tp 2: each GPU holds the whole tower, 1,353,100,288 -
    676,550,144 = 676,550,144 B beyond its share; at tp 4, ceil(1,353,100,288 x 3 / 4) =
    1,014,825,216 B."""
    split = qwen(engine="vllm", gpus=2)
    assert split.scenario.serving.encoder.params == TOWER
    assert split.scenario.serving.encoder.weights_bytes == 1_353_100_288
    assert encoder.added_bytes_per_gpu(split.scenario.serving.encoder, 2, "vllm") == 0
    data = qwen(engine="vllm", gpus=2, **{"mm-encoder-tp-mode": "data"})
    enc = data.scenario.serving.encoder
    assert enc.mode == "data" and encoder.added_bytes_per_gpu(enc, 2, "vllm") == 676_550_144
    assert encoder.added_bytes_per_gpu(enc, 4, "vllm") == 1_014_825_216
    assert encoder.added_bytes_per_gpu(enc, 1, "vllm") == 0
    assert data.scenario.deployment.added_weights_bytes_per_gpu == 676_550_144
    assert encoder.launch_flags(enc, "vllm") == ["--mm-encoder-tp-mode", "data"]
    assert encoder.launch_flags(enc, "sglang") == ["--mm-enable-dp-encoder"]
    assert encoder.launch_flags(split.scenario.serving.encoder, "vllm") == []


def test_vllm_figures_the_budget_and_its_cache_estimate():
    """vLLM 0.33 config/scheduler.py: encoder_cache_size = max_num_batched_tokens, the prefill chunk.
    The cache estimate is budget x text hidden (3,584) x 2 B; it sits inside the profiled peak
    and is not added (vllm_profile.ENCODER already bounds the pass)."""
    e = qwen(engine="vllm", gpus=2, **{"mm-encoder-tp-mode": "data"})
    data = encoder.figures(e.scenario.serving.encoder, e.scenario, e)
    chunk = e.engine.prefill_chunk
    assert data["encoder_budget_tokens"] == chunk
    assert data["encoder_cache_bytes"] == chunk * 3584 * 2
    assert data["encoder_params"] == TOWER and data["encoder_mode"] == "data"
    assert data["encoder_weights_bytes"] == data["encoder_weights_bytes_per_gpu"] == 1_353_100_288
    assert any("not added again" in line for line in data["lines"])
    weights = qwen(engine="vllm", gpus=2)
    assert encoder.figures(weights.scenario.serving.encoder, weights.scenario,
                           weights)["encoder_weights_bytes_per_gpu"] == 676_550_144
    fp8 = qwen(engine="vllm", gpus=2, **{"mm-encoder-tp-mode": "data", "weights-dtype": "fp8"})
    assert any("kept at bf16" in line for line in
               encoder.figures(fp8.scenario.serving.encoder, fp8.scenario, fp8)["lines"])
    assert fp8.scenario.deployment.added_weights_bytes_per_gpu == 676_550_144
    # The 0.6.x V1 preview hard-coded the budget (PR #11210).
    assert encoder.budget_tokens(e.scenario.settings.release, 2048, VLLM_RULES.encoder) == 2048
    old = qwen(engine="vllm", **{"engine-version": "0.6.5"})
    assert encoder.budget_tokens(old.scenario.settings.release, 2048, VLLM_RULES.encoder) == 16_384


def test_presets_read_their_own_config():
    """Qwen3-VL-32B's preset config gives its tower (vision_params); Gemma 4's tower is not
    counted here, so no encoder, and a mode asked for on it is refused."""
    qwen3 = encoder.encoder_from(ServingSettings(), presets.preset_model("Qwen/Qwen3-VL-32B-Instruct"), "vllm")
    assert qwen3.wrapper == "qwen3_vl" and qwen3.weights_bytes == 2 * qwen3.params
    gemma4 = presets.preset_model("google/gemma-4-26B-A4B")
    assert encoder.encoder_from(ServingSettings(), gemma4, "vllm") is None
    with pytest.raises(InputError) as e:
        encoder.encoder_from(ServingSettings(mm_encoder_tp_mode="data"), gemma4, "vllm")
    assert e.value.field == "mm-encoder-tp-mode" and "not counted" in e.value.message


def test_bad_inputs_name_their_field():
    llama = presets.preset_model("meta-llama/Llama-3.1-8B")
    assert encoder.encoder_from(ServingSettings(), llama, "vllm") is None
    with pytest.raises(InputError) as e:
        encoder.encoder_from(ServingSettings(mm_encoder_tp_mode="data"), llama, "vllm")
    assert e.value.field == "mm-encoder-tp-mode" and "text-only" in e.value.message
    for engine in ("vllm", "sglang"):
        with pytest.raises(InputError) as e:
            encoder.encoder_from(ServingSettings(mmproj_bytes=1 << 30), llama, engine)
        assert e.value.field == "mmproj-bytes"
    with pytest.raises(InputError) as e:
        encoder.encoder_from(ServingSettings(mm_encoder_tp_mode="data"), llama, "llama.cpp")
    assert e.value.field == "mm-encoder-tp-mode"


def test_llama_cpp_puts_the_mmproj_whole_on_the_first_gpu(tmp_path):
    """The mmproj GGUF (general.architecture "clip") is its own buffer on one device, not split by
    -ngl: its tensor table's bytes. Here Qwen2.5-VL's patch embedding in f16 (1,280 x 1,176 x 2 B =
    3,010,560), one block's qkv in q8_0 (3,840 x 1,280 / 32 x 34 B = 5,222,400) and its f32 norm
    (1,280 x 4 = 5,120): 8,238,080 B."""
    path = write(tmp_path / "mmproj.gguf", "clip", [], [
        ("v.patch_embd.weight", (1280, 1176), T.F16), ("v.blk.0.attn_qkv.weight", (3840, 1280), T.Q8_0),
        ("v.blk.0.ln1.weight", (1280,), T.F32)])
    assert gguf.mmproj_bytes(str(path)) == 3_010_560 + 5_222_400 + 5_120 == 8_238_080
    llama = presets.preset_model("meta-llama/Llama-3.1-8B")
    enc = encoder.encoder_from(ServingSettings(mmproj_bytes=8_238_080), llama, "llama.cpp")
    assert enc.mode == "mmproj" and encoder.added_bytes_per_gpu(enc, 2, "llama.cpp") == 8_238_080
    assert encoder.launch_flags(enc, "llama.cpp") == ["--mmproj", "FILE"]
    # Without an mmproj llama.cpp loads no tower, multimodal model or not.
    assert encoder.encoder_from(ServingSettings(), presets.preset_model("Qwen/Qwen3-VL-32B-Instruct"), "llama.cpp") is None
    model = write(tmp_path / "model.gguf", "llama", [], [("token_embd.weight", (4096, 32), T.F16)])
    with pytest.raises(InputError) as e:
        gguf.mmproj_bytes(str(model))
    assert e.value.field == "mmproj" and "'clip'" in e.value.message

