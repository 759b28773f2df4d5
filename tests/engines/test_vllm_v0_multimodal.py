"""Issue 36: vLLM V0's profiling run for a multimodal model (engines/vllm/encoder_profile.py term_v0, read in
the 0.7.0, 0.7.3, 0.8.0-0.8.3 wheels: vllm/worker/model_runner.py _dummy_run, vllm/multimodal/profiling.py,
vllm/model_executor/models/qwen2_vl.py). V0 runs no separate encoder pass: it builds
max(1, min(max_num_seqs, max_num_batched_tokens // max_mm_tokens)) dummy sequences carrying the largest items
and encodes them inside one forward. Where the items do not fit a sequence, up to 0.8.2 the profiler drops them
(text only); 0.8.3 keeps them and the language model runs over their whole prompt. Worked on real public logs
(tests/fixtures/logs, URLs in SOURCES.md)."""

from fractions import Fraction

from kvcalc.engines.releases import release as parse_release
from kvcalc.engines.vllm import encoder_profile, profile
from kvcalc.evaluation import evaluate
from kvcalc.readers.presets import preset_model
from support import FIXTURES, hf_fixture

LOGS = FIXTURES / "logs"
GIB = 1 << 30
QWEN25_VL = {"engine": "vllm", "hf-config": hf_fixture("Qwen__Qwen2.5-VL-7B-Instruct.json"),
             "gpu": "a100-sxm-40gb", "vllm-engine": "v0"}
QWEN2_VL = {"engine": "vllm", "hf-config": hf_fixture("Qwen__Qwen2-VL-2B-Instruct.json"),
            "gpu": "a100-sxm-40gb", "vllm-engine": "v0"}
VL72B_LOG = "vllm-qwen2.5-vl-72b-4xa100-40gb-tp4-util095-v0-v0.8.3.log"
VL7B_LOG = "vllm-qwen2-vl-7b-80gb-util080-10k-v0-v0.7.3.log"


def _tower(values):
    e = evaluate({**values, "engine-version": "0.10.2"})
    return encoder_profile.tower(e.scenario.model)


def test_the_qwen_vl_dummy_items_are_an_image_and_a_video_of_16384_tokens():
    """Qwen2.5-VL's and Qwen2-VL's towers (patch 14, spatial merge 2, max_pixels 12,845,056: 65,536 patches,
    16,384 tokens an image). V0's default limit is one image and one video a prompt; the video's frames are
    those whose tokens fit max_model_len less the image's (qwen2_vl.py get_num_frames_with_most_features), at
    least one frame, padded to a temporal patch: at max_model_len 4,096 one frame, 16,384 tokens. So
    max_mm_tokens is 32,768 and max(1, min(2, 5,120 // 32,768)) = 1 sequence (0.8.3's "Computed max_num_seqs
    (min(2, 5120 // 32768)) to be less than 1" warning)."""
    for values in (QWEN25_VL, QWEN2_VL):
        t = _tower(values)
        kept = encoder_profile.v0_dummy(t, parse_release("0.8.3"), 5120, 2, 4096)
        assert kept == encoder_profile.V0Dummy(seqs=1, tokens=32_768, images=1, videos=1, video_patches=65_536,
                                               dropped=False)
        dropped = encoder_profile.v0_dummy(t, parse_release("0.8.2"), 5120, 2, 4096)
        assert dropped == encoder_profile.V0Dummy(seqs=1, tokens=5_120, images=0, videos=0, video_patches=65_536,
                                                  dropped=True)


def test_a_long_context_profiles_a_longer_video_and_more_sequences_where_they_fit():
    """At max_model_len 131,072 (no chunking: max_num_batched_tokens 131,072) the registry's video holds
    2 x ((131,072 - 16,384) // 16,384) = 14 frames, 7 temporal patches, 114,688 tokens; max_mm_tokens 131,072
    gives 1 sequence of 131,072 tokens that holds both items (the prompt padded to seq_len)."""
    t = _tower(QWEN25_VL)
    d = encoder_profile.v0_dummy(t, parse_release("0.7.3"), 131_072, 256, 131_072)
    assert d == encoder_profile.V0Dummy(seqs=1, tokens=131_072, images=1, videos=1, video_patches=7 * 65_536,
                                        dropped=False)


def test_the_0_7_3_qwen2_vl_log_profiles_text_only():
    """vllm-qwen2-vl-7b-80gb-util080-10k-v0-v0.7.3.log (Qwen2-VL-7B-Instruct, V0 0.7.3, max_model_len 10,240)
    prints "PyTorch activation peak memory takes 1.72GiB". Its one sequence of 10,240 tokens cannot hold the
    32,768 tokens of the dummy image and video, so 0.7.3 drops them: the forward runs over 10,240 text tokens,
    1.38 GiB by profile.forward_peak with the text model's shapes (the Qwen2.5-7B preset's, identical), under
    the printed 1.72; with the items kept it would run over 32,768 tokens, 4.34 GiB, 2.5 times the log's.
    (forward_peak counts 3 MLP widths and 4 hidden widths a token for a Qwen2 model at tp 1.)"""
    assert "PyTorch activation peak memory takes 1.72GiB" in (LOGS / VL7B_LOG).read_text(encoding="utf-8")
    t = _tower(QWEN2_VL)            # Qwen2-VL's processor: the same 16,384 tokens an image at 2B and 7B
    d = encoder_profile.v0_dummy(t, parse_release("0.7.3"), 10_240, 256, 10_240)
    assert (d.seqs, d.tokens, d.dropped) == (1, 10_240, True)
    text = preset_model("Qwen/Qwen2.5-7B")
    dropped = profile.forward_peak(text, parse_release("0.7.3"), 1, d.tokens)[0]
    kept = profile.forward_peak(text, parse_release("0.7.3"), 1, 32_768)[0]
    assert dropped == 10_240 * 2 * (3 * 18_944 + 4 * 3_584) < Fraction(172, 100) * GIB < kept


def test_the_0_8_3_qwen2_5_vl_72b_log_runs_the_forward_over_the_items_prompt():
    """vllm-qwen2.5-vl-72b-4xa100-40gb-tp4-util095-v0-v0.8.3.log (Qwen2.5-VL-72B-Instruct, V0 0.8.3, tp 4)
    prints "PyTorch activation peak memory takes 2.51GiB" on every rank. 0.8.3 keeps the items that do not
    fit: the language model (the Qwen2.5-72B preset's text shapes: hidden 8,192, MLP 29,568 / 4 = 7,392 a
    rank) runs over the image's and video's 32,768 tokens. The least any forward keeps live at its MLP (the
    residual, the normed input, gate_up and the activation: 2 x 8,192 + 3 x 7,392 widths) is 2.35 GiB over
    32,768 tokens, 7% under the printed 2.51; over the 5,120 text tokens 0.8.2 would profile it is 0.37 GiB.
    (profile.forward_peak's 5 hidden widths for a Qwen2 model at tp > 1 make 3.85 GiB at this length: its
    count, not this rule's, is past the log here.)"""
    assert "PyTorch activation peak memory takes 2.51GiB" in (LOGS / VL72B_LOG).read_text(encoding="utf-8")
    t = _tower(QWEN25_VL)           # Qwen2.5-VL's processor: 16,384 tokens an image at 3B, 7B and 72B
    d = encoder_profile.v0_dummy(t, parse_release("0.8.3"), 5_120, 2, 4_096)
    assert (d.seqs, d.tokens, d.images, d.videos) == (1, 32_768, 1, 1)
    printed = Fraction(251, 100) * GIB
    least = d.tokens * 2 * (2 * 8_192 + 3 * 29_568 // 4)
    assert least == 2_527_068_160 and least < printed and (printed - least) / printed < Fraction(7, 100)
    assert 5_120 * 2 * (2 * 8_192 + 3 * 29_568 // 4) < printed / 6


def test_evaluating_a_v0_qwen2_5_vl_adds_the_items_forward_and_their_pixels():
    """Qwen2.5-VL-7B-Instruct's config at V0 0.8.3, max_model_len 4,096, max_num_seqs 2 (chunk 5,120: V0 raises a
    multimodal model's max_num_batched_tokens to 5,120, config.py _MULTIMODAL_MODEL_MAX_NUM_BATCHED_TOKENS): the
    forward over 32,768 tokens (32,768 x 2 x (3 x 18,944 + 4 x 3,584) B) and the two items' float32 pixel values
    (2 x 65,536 patches x 1,176 values x 4 B) replace the forward over 5,120 tokens; 0.8.2 profiles text only
    and adds nothing. Both say so in the overhead's notes."""
    values = {**QWEN25_VL, "context": "4096", "batch": "2"}
    kept = evaluate({**values, "engine-version": "0.8.3"})
    dropped = evaluate({**values, "engine-version": "0.8.2"})
    assert kept.ok and dropped.ok
    forward = 32_768 * 2 * (3 * 18_944 + 4 * 3_584)     # profile.forward_peak: a Qwen2 model at tp 1
    pixels = 2 * 65_536 * 1_176 * 4
    short = 5_120 * 2 * (3 * 18_944 + 4 * 3_584)
    assert kept.engine.prefill_chunk == dropped.engine.prefill_chunk == 5_120
    assert kept.engine.activation_bytes_per_gpu - dropped.engine.activation_bytes_per_gpu == forward + pixels - short
    assert any("1 dummy sequence of 32,768 tokens with 1 image and 1 video" in n for n in kept.engine.notes)
    assert any("profiles text only" in n for n in dropped.engine.notes)


def test_before_0_7_0_the_v0_pass_stays_in_the_band():
    """Releases before 0.7.0 (not read: their dummy data came from per-model functions, not
    MultiModalProfiler) keep the band with words that say the pass is not modelled."""
    e = evaluate({**QWEN25_VL, "context": "4096", "engine-version": "0.6.6"})
    assert any("not modelled from V0's multimodal dummies" in n for n in e.engine.notes)
