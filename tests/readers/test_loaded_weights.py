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
