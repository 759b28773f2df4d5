"""The weights per GPU a quantized checkpoint loads, against what real vLLM start-ups print
("Model loading took X GiB" / "model weights take X GiB"), from the inputs a user types: the
model's shape (a preset) and --weights-dtype. The rule (readers/quantized_bytes.typed_weights):
vLLM and SGLang quantize only the decoder's linear layers and routed experts; the embedding,
the output head, the norms, the routers and the vision tower stay in 16 bits. Every log is a
public fixture (tests/fixtures/logs, its URL in SOURCES.md)."""

import pathlib

import pytest

from kvcalc.evaluation import evaluate
from kvcalc.readers.presets import preset_model
from kvcalc.readers.quantized_bytes import typed_weights
from kvcalc.units import GIB

LOGS = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "logs"


# (log, the line it prints, GiB printed, typed inputs, tolerance in % of the printed figure, the
# old uniform rule's figure: every parameter at the typed precision, which each row rules out)
CASES = [
    # Qwen/Qwen3-235B-A22B-FP8, tp 4 on H200s (vLLM main of 2025-07-22): 236,388,521,440 B over
    # 4 ranks = 55.04 GiB. The 0.09 GiB left is under 0.2%: the checkpoint's 128 x 128 block
    # scales (4 B per 16,384 weights, 0.01 GiB a rank) and vLLM's padding, not counted here.
    ("vllm-qwen3-235b-a22b-fp8-tp4-h200-util05-debug-v0.10.0dev.log", "weights memory: 55.13GiB", 55.13,
     {"engine": "vllm", "engine-version": "0.10.0", "model": "Qwen/Qwen3-235B-A22B", "weights-dtype": "fp8",
      "gpu": "h200-141gb", "gpus": "4", "tp": "4", "memory-utilization": "0.5", "context": "40960"},
     0.2, 54.72),
    # Qwen3-30B-A3B-Instruct-2507 with --quantization fp8 (online) on an H100, vLLM 0.22.1:
    # 31,167,320,832 B = 29.03 GiB (0.18% under: the per-expert scales' padding).
    ("vllm-qwen3-30b-a3b-2507-fp8-h100-8k-seqs64-v0.22.1.log", "Model loading took 29.08 GiB", 29.08,
     {"engine": "vllm", "engine-version": "0.22.1", "model": "Qwen/Qwen3-30B-A3B", "weights-dtype": "fp8",
      "gpu": "h100-sxm-80gb", "context": "8192", "batch": "64", "prefill-chunk": "8192"},
     0.2, 28.44),
    # neuralmagic/Qwen2.5-14B-Instruct-FP8-dynamic (compressed-tensors, a float32 scale per
    # output channel) on a DGX Spark, vLLM 0.13.0 (NVIDIA's 26.01 build): 16,328,011,072 B =
    # 15.2066 GiB, 0.1% under the printed 15.2227 (the per-channel scales: 8.6 MB).
    ("vllm-qwen2.5-14b-fp8dyn-fp8kv-dgx-spark-util04-32k-v0.13.0-nv26.01.log", "Model loading took 15.2227 GiB",
     15.2227, {"engine": "vllm", "engine-version": "0.13.0", "model": "Qwen/Qwen2.5-14B", "weights-dtype": "fp8",
               "kv-dtype": "fp8", "gpu": "dgx-spark-128gb", "context": "32768", "memory-utilization": "0.4"},
     0.2, 13.76),
    # A 4-bit Qwen2.5-7B on an RTX 4060 8 GB, vLLM 0.7.3: 5,545,257,984 B = 5.16 GiB; the 0.7%
    # left is the checkpoint's zero points (AWQ / GPTQ store one per group: 25 MB) and its g_idx.
    ("vllm-qwen2.5-7b-4bit-rtx4060-8gb-util070-negative-v0.7.3.log", "model weights take 5.20GiB", 5.2032,
     {"engine": "vllm", "engine-version": "0.7.3", "model": "Qwen/Qwen2.5-7B", "weights-dtype": "int4",
      "gpu-memory-gib": "8", "context": "4096", "memory-utilization": "0.7"},
     1.0, 3.55),
]


@pytest.mark.parametrize("log, line, printed, inputs, tolerance, uniform", CASES, ids=[c[0] for c in CASES])
def test_typed_weights_dtype_loads_as_vllm_prints_it(log, line, printed, inputs, tolerance, uniform):
    assert line in (LOGS / log).read_text(encoding="utf-8", errors="replace")
    evaluation = evaluate(inputs)
    assert evaluation.ok, evaluation.errors
    ours = evaluation.result.weights_bytes_per_gpu / GIB
    assert abs(ours - printed) <= printed * tolerance / 100, (ours, printed)
    # The uniform rule (every parameter at the typed precision) misses by more than the tolerance.
    assert abs(uniform - printed) > printed * tolerance / 100


def test_the_embedding_head_and_tower_stay_16_bit():
    # Qwen3.5-27B's shape (Qwen3.6-27B's) at int4: 24,350,556,160 linear weights at 4 bits plus a
    # 16-bit scale per 128 inputs, and 3,006,172,400 other parameters (two 248,320 x 5,120
    # embeddings, the vision tower, the norms) at 16 bits.
    model = preset_model("Qwen/Qwen3.5-27B")
    tensors = model.shapes.tensors
    linear = [g for g in tensors if g.role == "linear"]
    rest = sum(g.elements for g in tensors if g.role not in ("linear", "expert"))
    assert sum(g.elements for g in linear) == 24_350_556_160
    assert rest == model.params - 24_350_556_160 == 3_006_172_400
    scales = sum(2 * g.rows * -(-g.cols // 128) * g.copies for g in linear)
    priced = typed_weights(tensors, "int4")
    assert priced.bytes == 24_350_556_160 // 2 + scales + 2 * rest
    assert "vision tower 16-bit" in priced.rule
    # Uniform 4 bits would have been 27,356,728,560 / 2 = 13,678,364,280 B: 4.9 GB short.
    assert priced.bytes - model.params // 2 > 4_800_000_000
    # A GGUF block type or a 16-bit dtype is not this rule's: None (priced uniformly elsewhere).
    assert typed_weights(tensors, "q4_0") is None and typed_weights(tensors, "bf16") is None
    assert typed_weights((), "int4") is None


def test_the_rule_is_said_where_the_answer_is_shown():
    evaluation = evaluate({"model": "Qwen/Qwen3.5-27B", "weights-dtype": "nvfp4", "gpu": "h100-sxm-80gb",
                           "engine": "vllm"})
    assert evaluation.ok, evaluation.errors
    notes = [n for n in evaluation.scenario.warnings if n.startswith("weights-dtype nvfp4 prices")]
    assert len(notes) == 1 and "embeddings, head, norms, routers and vision tower 16-bit" in notes[0]


# gpt-oss's mxfp4 experts as vLLM's Marlin kernel holds them (engines/vllm/release.mxfp4_marlin,
# readers/quantized_bytes.mxfp4_padding_bytes): hidden 2,880 padded to 3,072, the expert width
# 2,880 to 2,944, per layer w13 (E, 5,888, 1,536) + w2 (E, 3,072, 1,472) values, their one-byte
# scales and 16-bit biases. What is left (0.07 and 0.05 GiB) is vLLM's rotary cos/sin cache
# (131,072 positions x 64 x float32 = 0.03 GiB) and allocator rounding, not counted here.
MXFP4 = [
    # vLLM 0.10.1 on an H100 (torch 2.7.1: Marlin): 65,248,815,744 + 36 x 152,993,792 B = 65.8972 GiB.
    ("vllm-gpt-oss-120b-h100-default-negative-kv.log", "Model loading took 65.9651 GiB", 65.9651,
     {"engine": "vllm", "engine-version": "0.10.1", "model": "openai/gpt-oss-120b", "gpu": "h100-sxm-80gb",
      "context": "131072"}, 65_248_815_744 + 36 * 152_993_792),
    # vLLM 0.13.0 (NVIDIA 26.01) on a DGX Spark, capability 12.1 (Marlin): 13,761,264,768 + 24 x
    # 38,248,448 B (32 experts) = 13.6711 GiB.
    ("vllm-gpt-oss-20b-dgx-spark-util025-8k-v0.13.0-nv26.01.log", "Model loading took 13.7193 GiB", 13.7193,
     {"engine": "vllm", "engine-version": "0.13.0", "model": "openai/gpt-oss-20b", "gpu": "dgx-spark-128gb",
      "context": "8192", "memory-utilization": "0.25"}, 13_761_264_768 + 24 * 38_248_448),
]


@pytest.mark.parametrize("log, line, printed, inputs, loaded", MXFP4, ids=[c[0] for c in MXFP4])
def test_mxfp4_experts_as_the_marlin_kernel_pads_them(log, line, printed, inputs, loaded):
    assert line in (LOGS / log).read_text(encoding="utf-8", errors="replace")
    evaluation = evaluate(inputs)
    assert evaluation.ok, evaluation.errors
    assert evaluation.engine.weights_bytes_per_gpu == loaded
    assert 0 < printed - loaded / GIB < 0.08          # the rotary cache and rounding, never more
    assert any("Marlin kernel" in note for note in evaluation.engine.notes)


def test_mxfp4_on_a_release_or_gpu_without_marlin_keeps_the_checkpoint():
    # 0.13.0 on an H100 runs triton_kernels (capability 9.0): the checkpoint's bytes, no padding.
    evaluation = evaluate({"engine": "vllm", "engine-version": "0.13.0", "model": "openai/gpt-oss-120b",
                           "gpu": "h100-sxm-80gb", "context": "8192"})
    assert evaluation.ok and evaluation.engine.weights_bytes_per_gpu is None
    assert evaluation.result.weights_bytes_per_gpu == 65_248_815_744
    # Tensor parallelism splits the expert width: 2,880 / 2 = 1,440 -> 1,536 per rank.
    evaluation = evaluate({"engine": "vllm", "engine-version": "0.10.1", "model": "openai/gpt-oss-120b",
                           "gpu": "h100-sxm-80gb", "gpus": "2", "context": "8192"})
    per_layer = 128 * ((2 * 1536 * 3072 - 2 * 1440 * 2880) * 17 // 32 + (3072 * 1536 - 2880 * 1440) * 17 // 32
                       + 2 * (2 * 1536 - 2 * 1440) + 2 * (3072 - 2880))
    # Each rank also holds whole what parallel.py halves (quantized_bytes.replicated_bytes): the 36 routers
    # (gpt_oss.py: a torch.nn.Linear of 2,880 x 128 in bf16, 0.10.2) and the 73 RMSNorms of 2,880.
    whole = 36 * 128 * 2880 * 2 // 2 + 73 * 2880 * 2 // 2
    assert evaluation.engine.weights_bytes_per_gpu == evaluation.result.weights_bytes_per_gpu + 36 * per_layer + whole


def test_weights_given_are_not_padded_again():
    # weights-gib is what a log measured (already as loaded): vLLM 0.10.1's padding is not added to it.
    evaluation = evaluate({"engine": "vllm", "engine-version": "0.10.1", "model": "openai/gpt-oss-120b",
                           "gpu": "h100-sxm-80gb", "context": "8192", "weights-gib": "65.9651"})
    assert evaluation.ok and evaluation.engine.weights_bytes_per_gpu is None
