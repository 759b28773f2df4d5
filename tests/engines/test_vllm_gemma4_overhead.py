"""Issue 36, "Activation peak ... under-counted for Gemma 4's 262k vocabulary": what vLLM's profiling run holds
for the Gemma models, term by term from vLLM's code, checked on the real logs (tests/fixtures/logs, URLs in
SOURCES.md; their corpus rows in tests/fixtures/logs/corpus/).

- The sampler's warm-up over the 262,144-entry vocabulary is already the larger phase (profile.py): the final
  logit soft-cap (LogitsProcessor.forward, vllm/model_executor/layers/logits_processor.py, 0.20.0: divide, tanh,
  multiply, each a new bf16 tensor while the last is bound) holds two bf16 copies, 4 B an entry, under the
  sampler's 14 (the bf16 logits, their fp32 copy, softmax and the exponential draw).
- The encoder pass keeps the dummy batch's pixel values and outputs through the language model's run on the V1
  runner (encoder_profile.py): Gemma 3's 64 images print it to 0.3 % (PR #21489).
- The Gemma 4 26B-A4B bf16 row on a DGX Spark misses by more than any profiling term: its twin run (the same
  release, flags and architecture, minutes later) prints 3.42 GiB more KV, and both logs print a total that is
  not the one we type.
"""

import json

from kvcalc.engines.vllm import encoder_profile, profile
from kvcalc.engines.vllm import engine as vllm
from kvcalc.evaluation import evaluate
from support import FIXTURES, ROOT

LOGS = FIXTURES / "logs"
GIB = 1 << 30
BF16_ROW = "vllm-gemma4-26b-a4b-dgx-spark-tp1-util08-8k-v0.20.0.log"
QAT_ROW = "vllm-gemma4-26b-a4b-qat-dgx-spark-tp1-util08-8k-v0.20.0.log"
GEMMA3_LOG = "vllm-gemma3-4b-b200-bench-latency-kvmem-hint-v0.10.1dev.log"


def text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def row(name: str) -> dict:
    for r in json.loads((LOGS / "corpus" / "vllm-2026.json").read_text(encoding="utf-8"))["logs"]:
        if r["file"] == name:
            return r
    raise KeyError(name)


def gemma3_config() -> dict:
    """google/gemma-3-4b-it: the preset's text config (app/kvcalc/data/models.json) with the vision_config and
    mm_tokens_per_image its published config.json gives (SigLIP: hidden 1,152, MLP 4,304, 27 layers, image_size
    896, patch_size 14, no head)."""
    models = json.loads((ROOT / "app" / "kvcalc" / "data" / "models.json").read_text(encoding="utf-8"))
    rows = models if isinstance(models, list) else models["models"]
    config = dict(next(r for r in rows if r["id"] == "google/gemma-3-4b-it")["config"])
    config["mm_tokens_per_image"] = 256
    config["vision_config"] = {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                               "model_type": "siglip_vision_model", "num_attention_heads": 16,
                               "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": False}
    return config


def test_gemma_4s_sampler_phase_on_a_dgx_spark_in_0_20_0():
    """The bf16 row (max_num_batched_tokens 4096, max_num_seqs left to vLLM: 256, the small tier a GB10 gets,
    release.py) warms the sampler over 256 rows of 262,144 entries on the Triton top-k/top-p path (0.20.0
    topk_topp_sampler.py forward_native, apply_top_k_top_p_triton from 8 rows): 14 B x 256 x 262,144
    = 939,524,096 B, the Triton buffer of the GB10's 48 SMs (4 x 48 x 262,144 = 50,331,648 B) and the hidden
    states it keeps (4,096 x 2,816 x 2 B and 2 x 2 x 256 x 2,816 B). The soft-cap's two bf16 copies
    (2 x 2 B x 256 x 262,144 = 268,435,456 B) come before it and stay under it; the dummy forward (0.32 GiB)
    too, so this phase is the peak."""
    assert "'max_num_batched_tokens': 4096" in text(BF16_ROW)
    e = evaluate(row(BF16_ROW)["inputs"])
    scenario = e.scenario
    release, seqs = vllm.release_of(scenario), vllm.max_num_seqs(scenario)
    forward, sampler, _, path, _, rows = profile._runs(scenario, release, e.engine.prefill_chunk, seqs)[:6]
    assert (rows, scenario.model.vocab_size, path) == (256, 262_144, "Triton top-k/top-p")
    assert sampler == 939_524_096 + 50_331_648 + 4_096 * 2_816 * 2 + 2 * 2 * 256 * 2_816 == 1_015_808_000
    softcap = 2 * 2 * 256 * 262_144
    assert softcap == 268_435_456 < sampler and forward < sampler


def test_gemma_3s_encoder_pass_keeps_its_images_through_the_run():
    """vllm-gemma3-4b-b200-bench-latency-kvmem-hint-v0.10.1dev.log (vLLM PR #21489, `vllm bench latency`: the
    LLM class, 16,384 batched tokens and 1,024 sequences on a B200) prints "9.96 GiB for peak activation".
    The sampler's 38 B x 1,024 rows x 262,208 entries and the 32 MiB cuBLAS workspace make 9.62 GiB; the encoder
    budget of 16,384 tokens holds 64 images of 256 tokens (896 x 896 at patch 14: 4,096 patches each), whose
    pixel values (64 x 4,096 x 588 x 2 B = 308,281,344 B) and cached outputs (64 x 256 x 2,560 x 2 B =
    83,886,080 B) profile_run keeps through the language model's run: 9.99 GiB. The tower's own peak over
    262,144 patches (5.62 GiB) stays under it."""
    assert "9.96 GiB for peak activation" in text(GEMMA3_LOG)
    values = {"engine": "vllm", "engine-version": "0.10.1", "hf-config": gemma3_config(), "gpu": "b200-180gb",
              "context": "131072", "memory-utilization": "0.9", "vllm-entry": "llm"}
    e = evaluate(values)
    assert e.ok, e.errors
    scenario = e.scenario
    tower = encoder_profile.tower(scenario.model)
    assert (tower.wrapper, tower.patches, tower.tokens, tower.pixel_values, tower.cls) == ("gemma3", 4_096, 256, 588, 0)
    release, seqs = vllm.release_of(scenario), vllm.max_num_seqs(scenario)
    chunk = e.engine.prefill_chunk
    assert (chunk, seqs, encoder_profile.items(256, chunk, seqs, 131_072)) == (16_384, 1_024, 64)
    kept = encoder_profile.inputs_bytes(tower, 64, 4_096, 2) + 64 * 256 * 2_560 * 2
    assert kept == 308_281_344 + 83_886_080 == 392_167_424
    forward, sampler = profile._runs(scenario, release, chunk, seqs)[:2]
    assert encoder_profile.tower_peak(tower, 64 * 4_096, 2, 1) < sampler
    assert e.engine.activation_bytes_per_gpu == sampler + 32 * (1 << 20) + kept
    assert abs(e.engine.activation_bytes_per_gpu / GIB - 9.96) <= 0.03


def test_the_v2_encoder_runner_frees_the_pixel_values():
    """From 0.27.0 the V2 runner's encoder pass (vllm/v1/worker/gpu/mm/encoder_runner.py profile_encoder_cache,
    0.27.1 wheel) batches the items inside execute_mm_encoder and keeps only their outputs: the same 64 images
    on a runner that frees them add their outputs alone."""
    values = {"engine": "vllm", "engine-version": "0.10.1", "hf-config": gemma3_config(), "gpu": "b200-180gb",
              "context": "131072", "memory-utilization": "0.9", "vllm-entry": "llm"}
    scenario = evaluate(values).scenario
    release = vllm.release_of(scenario)
    lm = 10 * GIB
    kept_v1 = encoder_profile.term(scenario, release, 16_384, 1_024, lm)[0]
    kept_v2 = encoder_profile.term(scenario, release, 16_384, 1_024, lm, inputs_kept=False)[0]
    assert (kept_v1, kept_v2) == (392_167_424, 83_886_080)


def test_the_gemma_4_twin_runs_differ_by_more_than_any_profiling_term():
    """The bf16 and QAT (bf16-stored) Gemma 4 26B-A4B runs on one DGX Spark (jethac/dgx-spark-hijinks, vLLM
    0.20.0, max_model_len 8192, utilization 0.8, max_num_batched_tokens 4096, both loading 48.5 GiB) print 40.61
    and 44.03 GiB of KV: 3.42 GiB apart with the same inputs, CUDA-graph estimates of 1.69 and 0.91 GiB. On
    unified memory vLLM reads the host's available memory as free (vllm/utils/mem_utils.py MemorySnapshot.measure,
    0.20.0), so what the host does between two snapshots is counted. Both logs print the total they multiply by
    0.8 through "equivalent to --gpu-memory-utilization" (gpu_worker.py: round(0.8 - estimate / total, 4)):
    0.7859 and 0.7924 fit a total of 128,501,256,192 B (119.68 GiB, what Linux shows on a GB10) and not the
    130,663,642,563 B (121.69 GiB) the preset's newer driver reports, 0.8 x 2.01 = 1.61 GiB of requested memory
    apart. Our typed KV less that lies between the twins; no profiling term closes the rest of the bf16 row's
    gap without overshooting the QAT row."""
    bf16, qat = text(BF16_ROW), text(QAT_ROW)
    assert "Available KV cache memory: 40.61 GiB" in bf16 and "Available KV cache memory: 44.03 GiB" in qat
    linux_total = 128_501_256_192
    for log, estimate, equivalent in ((bf16, 1.69, "0.7859"), (qat, 0.91, "0.7924")):
        assert f"Estimated CUDA graph memory: {estimate:.2f} GiB" in log
        assert f"equivalent to --gpu-memory-utilization={equivalent}" in log
        assert f"{round(0.8 - estimate * GIB / linux_total, 4):.4f}" == equivalent
    e = evaluate(row(BF16_ROW)["inputs"])
    preset_total = e.scenario.deployment.torch_memory_bytes
    assert preset_total == 130_663_642_563
    assert f"{round(0.8 - 1.69 * GIB / preset_total, 4):.4f}" != "0.7859"
    host_kv = e.engine.kv_budget_bytes_per_gpu - (preset_total - linux_total) * 8 // 10
    assert 40.61 * GIB < host_kv < 44.03 * GIB
