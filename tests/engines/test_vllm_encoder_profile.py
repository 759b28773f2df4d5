"""Issue 36: a multimodal model's profiling run also encodes a dummy batch of its largest images
(vLLM V1 gpu_model_runner.py profile_run, read in the 0.10.2 and 0.26.0 wheels), which
engines/vllm/encoder_profile.py models from the vision tower's shapes. Worked on real public logs
(tests/fixtures/logs, URLs in SOURCES.md; their rows in tests/fixtures/logs/corpus/)."""

import json

import calibration
from kvcalc.engines.vllm import encoder_profile, profile
from kvcalc.engines.vllm import engine as vllm
from kvcalc.evaluation import evaluate
from support import FIXTURES, hf_fixture

LOGS = FIXTURES / "logs"
GIB = 1 << 30
CUBLAS_BEFORE_HOPPER = 4096 * 1024 * 2 + 16 * 1024 * 8     # 8,519,680 B (a custom GPU's, pre-Hopper)
# From 0.27.0 vLLM's peak activation leaves out what the run keeps allocated (engines/vllm/profile.py
# PEAK_IS_TRANSIENT): the cuBLAS workspace and the Triton sampler's buffer, 4 x 108 A100 SMs x 248,320 entries.
TRITON_A100 = 4 * 108 * 248_320


def row(name: str) -> dict:
    for part in ("vllm.json", "vllm-2026.json"):
        for r in json.loads((LOGS / "corpus" / part).read_text(encoding="utf-8"))["logs"]:
            if r["file"] == name:
                return r
    raise KeyError(name)


def text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


R9700_27B = "vllm-qwen3.6-27b-int4-r9700-rocm-tp1-fp8kv-mtp4-131k-v0.26.0.log"
R9700_35B = "vllm-qwen3.6-35b-a3b-int4-r9700-rocm-tp1-fp8kv-262k-v0.26.0.log"
A100_TP2 = "vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log"


def test_the_encoder_budget_is_the_logs_16384_tokens_and_1_image():
    """Both R9700 logs print "max_num_batched_tokens=2560" and "Encoder cache will be initialized with a
    budget of 16384 tokens, and profiled with 1 image items of the maximum feature size". Qwen3.5's tower
    (the Qwen3.5-27B and Qwen3.6-35B-A3B presets' vision_config: patch 16, spatial merge 2) takes the
    largest image at size.longest_edge 16,777,216 pixels: 4,096 x 4,096, a 256 x 256 grid of patches,
    65,536 patches, 16,384 tokens. The budget is max(2,560, 16,384) = 16,384: 16,384 // 16,384 = 1 image."""
    for name in (R9700_27B, R9700_35B):
        log, r = text(name), row(name)
        assert "max_num_batched_tokens=2560" in log
        assert "budget of 16384 tokens, and profiled with 1 image items" in log
        e = evaluate(r["inputs"])
        tower = encoder_profile.tower(e.scenario.model)
        assert (tower.patches, tower.tokens, tower.hidden, tower.width, tower.gated) == (65_536, 16_384, 1_152, 4_304,
                                                                                          False)
        assert max(2560, tower.tokens) == 16_384
        assert encoder_profile.items(tower.tokens, 2560, int(r["inputs"]["batch"]), int(r["inputs"]["context"])) == 1


def test_the_batch_grows_with_the_budget_and_stops_at_the_decoder_s():
    """MultiModalBudget._get_max_items (0.26.0 vllm/multimodal/encoder_budget.py): budget // tokens, at most
    max_num_seqs x max(1, min(999, max_model_len // tokens)), at least 1."""
    assert encoder_profile.items(16_384, 40_000, 256, 262_144) == 2       # 40,000 // 16,384
    assert encoder_profile.items(16_384, 40_000, 1, 16_384) == 1          # one sequence of one image
    assert encoder_profile.items(256, 8_192, 256, 8_192) == 32            # 8,192 // 256


def test_the_r9700_logs_peak_is_the_tower_s():
    """The R9700 logs print "2.1 GiB for peak activation": the encoder pass, far over the language model's
    2,560-token forward. Per patch, bf16: the pixel values (3 x 2 x 16 x 16 = 1,536), the residual and the
    interpolated positions (2 x 1,152) kept, and the attention's 9 x 1,152 (over the MLP's 1,152 + 2 x 4,304):
    65,536 x 2 x (1,536 + 2,304 + 10,368) = 1,862,270,976 B, plus the 8,519,680 B cuBLAS workspace a custom
    GPU takes: 1.742 GiB, 17% under the ROCm build's 2.1 (its rotary and attention kernels); the band's top
    holds a quarter of the tower's peak more. Before this rule the estimate was 0.37 / 0.58 GiB."""
    for name in (R9700_27B, R9700_35B):
        r = row(name)
        assert "2.1 GiB for peak activation" in text(name)
        e = evaluate(r["inputs"])
        assert e.engine.activation_bytes_per_gpu == 65_536 * 2 * (1_536 + 2_304 + 10_368) + CUBLAS_BEFORE_HOPPER
        high, low = e.engine.band
        overhead = r["printed"]["activation_gib"] + r["printed"]["non_torch_gib"] + r["printed"]["cudagraph_gib"]
        assert low.overhead_bytes_per_gpu <= overhead * GIB <= high.overhead_bytes_per_gpu
        assert any("1 image of 16,384 tokens (65,536 patches of a 1,152-wide tower) peak at 1.73 GiB" in n
                   for n in e.engine.notes)


def test_at_tp_2_the_pass_splits_its_heads_and_mlp():
    """vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log (tensor_parallel_size 2) prints "2.32 GiB for peak
    activation". Split over 2 ranks the attention keeps 9 x 1,152 / 2 = 5,184 and the MLP 1,152 + 2 x 4,304 / 2
    = 5,456 per patch: 65,536 x 2 x (3,840 + 5,456) = 1,218,445,312 B (1.13 GiB). The language model's run binds
    more: its own peak with the image's 16,384 tokens x 5,120 x 2 B cached and its 65,536 x 1,536 x 2 B pixel values
    (V1's profile_run keeps the dummy batch until it returns), less the Triton sampler's buffer the run keeps
    (0.27.1 counts it as consumed memory): 1.20 GiB, where the log's 2.32 less its 0.96 GiB CUDA-graph estimate
    is 1.36; the printed overhead, 72.91 - 25.69 - 44.73 = 2.49 GiB, lies in the band."""
    r = row(A100_TP2)
    assert "2.32 GiB for peak activation" in text(A100_TP2)
    e = evaluate(r["inputs"])
    scenario = e.scenario
    release, seqs = vllm.release_of(scenario), vllm.max_num_seqs(scenario)
    lm = max(profile._runs(scenario, release, e.engine.prefill_chunk, seqs)[:2])
    kept = 16_384 * 5_120 * 2 + 65_536 * 1_536 * 2
    assert lm + kept > 65_536 * 2 * (3_840 + 5_456)
    assert e.engine.activation_bytes_per_gpu == lm + kept - TRITON_A100
    printed = r["printed"]
    overhead = printed["requested_gib"] - printed["weights_gib"] - printed["kv_gib"]
    high, low = e.engine.band
    assert low.overhead_bytes_per_gpu <= overhead * GIB <= high.overhead_bytes_per_gpu


def test_under_the_data_mode_one_rank_encodes_the_whole_image():
    """The same start-up with --mm-encoder-tp-mode data (not in that log: each rank builds the whole tower and
    run_dp_sharded_mrope_vision_model, 0.26.0 vllm/model_executor/models/vision.py, gives each its share of the
    items): the one image goes to one rank whole, 65,536 x 2 x (3,840 + 10,368) = 1,862,270,976 B, as at tp 1."""
    e = evaluate({**row(A100_TP2)["inputs"], "mm-encoder-tp-mode": "data"})
    assert e.engine.activation_bytes_per_gpu == 65_536 * 2 * (3_840 + 10_368) - TRITON_A100


def test_language_model_only_skips_the_pass_so_the_band_s_bottom_adds_nothing():
    """vllm-qwen3.6-27b-fp8-h100-util088-4k-eager-v0.27.1.log starts with 'language_model_only': True, which
    this calculator does not take: its overhead, 1.01 GiB, is the language model's alone and lies above the
    band's bottom because the encoder term adds nothing there."""
    name = "vllm-qwen3.6-27b-fp8-h100-util088-4k-eager-v0.27.1.log"
    assert "'language_model_only': True" in text(name)
    out = next(o for o in calibration.checked() if o["file"] == name)
    assert out["multimodal"] and out["low"] <= out["total"] <= out["high"]
    assert round(out["total"], 2) == 1.01


def test_a_tower_not_read_keeps_the_band_and_says_so():
    """Gemma 4's tower is not read (readers/vision_params.py), and its log's pass is a video ("budget of
    4096 tokens, and profiled with 1 video items", vllm-gemma4-26b-a4b-dgx-spark-tp1-util08-8k-v0.20.0.log):
    nothing is added to the estimate, the band's top keeps 3.5 GiB for it, and the words say so."""
    name = "vllm-gemma4-26b-a4b-dgx-spark-tp1-util08-8k-v0.20.0.log"
    assert "budget of 4096 tokens, and profiled with 1 video items" in text(name)
    e = evaluate(row(name)["inputs"])
    assert encoder_profile.tower(e.scenario.model) is None
    assert any("the vision encoder's profiling pass is not modelled from this tower's shapes (not read), only "
               "bounded (up to 3.5 GiB more in the band)" in n for n in e.engine.notes)
    assert profile.ENCODER == (0, 0, 3584 * 1024 * 1024)


def test_qwen2_5_vl_s_tower_and_v0():
    """Qwen2.5-VL-7B-Instruct's config (tests/fixtures/hf): patch 14, spatial merge 2, a gated MLP of 3,420;
    its processor's max_pixels 12,845,056 is 3,584 x 3,584: a 256 x 256 grid, 65,536 patches, 16,384 tokens.
    V0 (0.7.3, vllm/worker/model_runner.py _dummy_run) runs its multimodal dummies inside the forward over
    min(max_num_seqs, max_num_batched_tokens // the model's multimodal tokens) sequences: at max_model_len 8,192
    the image and video's 32,768 tokens do not fit its one sequence, and 0.7.3 profiles text only
    (encoder_profile.term_v0; tests/engines/test_vllm_v0_multimodal.py), said."""
    values = {"engine": "vllm", "hf-config": hf_fixture("Qwen__Qwen2.5-VL-7B-Instruct.json"),
              "gpu": "h100-sxm-80gb", "context": "8192"}
    e = evaluate({**values, "engine-version": "0.10.2"})
    tower = encoder_profile.tower(e.scenario.model)
    assert (tower.patches, tower.tokens, tower.hidden, tower.width, tower.gated, tower.positions) == (
        65_536, 16_384, 1_280, 3_420, True, False)
    v0 = evaluate({**values, "engine-version": "0.7.3"})
    assert any("V0's multimodal dummies do not fit its 1 profiling sequence of 8,192 tokens" in n
               for n in v0.engine.notes)


def test_the_v2_runner_profiles_no_encoder_before_0_27_0():
    """A dense wrapper runs vLLM's V2 model runner from 0.25.0 (config/vllm.py _is_default_v2_model_runner_model:
    not MoE, not hybrid), whose profile_run is the dummy forward and the sampler alone in the 0.26.0 wheel
    (vllm/v1/worker/gpu/model_runner.py); 0.27.0 adds encoder_runner.profile_encoder_cache. Qwen3-VL-32B's config
    (tests/fixtures/hf): at 0.26.0 nothing is added; at 0.27.0 the pass's outputs stay cached through the dummy
    run: one image's 16,384 tokens x (1 + 3 deepstack mergers) x 5,120 x 2 B = 671,088,640 B more, the
    language model's peak plus them over the tower's own 1.73 GiB."""
    values = {"engine": "vllm", "hf-config": hf_fixture("Qwen__Qwen3-VL-32B-Instruct.json"), "gpu": "h100-sxm-80gb",
              "context": "32768"}
    before = evaluate({**values, "engine-version": "0.26.0"})
    after = evaluate({**values, "engine-version": "0.27.0"})
    assert any("the V2 runner profiles no vision encoder pass before 0.27.0" in n for n in before.engine.notes)
    tower = encoder_profile.tower(after.scenario.model)
    assert (tower.outputs, tower.tokens) == (4, 16_384)
    kept = 16_384 * 4 * 5_120 * 2
    assert kept == 671_088_640
    assert any("1 image of 16,384 tokens (65,536 patches of a 1,152-wide tower) peak at 1.73 GiB" in n
               for n in after.engine.notes)
    for e, added in ((before, 0), (after, kept)):
        scenario = e.scenario
        release, seqs = vllm.release_of(scenario), vllm.max_num_seqs(scenario)
        chunk = e.engine.prefill_chunk
        forward, sampler = profile._runs(scenario, release, chunk, seqs)[:2]
        hopper_cublas = 4096 * 8 * 1024
        # From 0.27.0 the cuBLAS workspace, still allocated after the run, is consumed memory, not peak (profile.py).
        assert e.engine.activation_bytes_per_gpu == max(forward, sampler) + added + (hopper_cublas if not added else 0)


def test_qwen2_5_vl_profiles_a_video_as_long_as_max_model_len_holds():
    """Qwen2.5-VL's dummy video (qwen2_vl.py get_num_frames_with_most_features, inherited): frames at the largest
    image's size, as many as max_model_len holds, at most 16 (0.10.2) or 14 (0.11.0 on); two frames a temporal
    patch. At 131,072 tokens: 16 frames in 0.10.2, 8 x 16,384 = 131,072 tokens, 8 x 65,536 = 524,288 patches,
    more than an image's 16,384, so profile_run encodes the video; 0.11.0 takes 14 frames, 7 x 16,384. Per patch,
    bf16: the pixel values (3 x 2 x 14 x 14 = 1,176) and the residual (1,280) kept, then the gated MLP's
    1,280 + 3 x 3,420 = 11,540 (over the attention's 9 x 1,280 = 11,520): 2 x 13,996 = 27,992 B."""
    values = {"engine": "vllm", "hf-config": hf_fixture("Qwen__Qwen2.5-VL-7B-Instruct.json"), "gpu": "h100-sxm-80gb",
              "context": "131072"}
    for version, pairs in (("0.10.2", 8), ("0.11.0", 7)):
        e = evaluate({**values, "engine-version": version})
        tower = encoder_profile.tower(e.scenario.model)
        assert encoder_profile.largest_item(tower, vllm.release_of(e.scenario), 131_072) == (
            "video", pairs * 65_536, pairs * 16_384)
        assert any(f"1 video of {pairs * 16_384:,} tokens ({pairs * 65_536:,} patches of a 1,280-wide tower) peak at "
                   f"{pairs * 65_536 * 27_992 / GIB:.2f} GiB" in n for n in e.engine.notes)
    short = evaluate({**values, "context": "16384", "engine-version": "0.10.2"})
    assert any("1 image of 16,384 tokens (65,536 patches" in n for n in short.engine.notes)
