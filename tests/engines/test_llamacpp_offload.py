"""llama.cpp's partial offload (-ngl below n_layer + 1) as worked examples against real logs:
where -ngl puts the layers and the output layer, build by build (src/llama-model.cpp
load_tensors, PR #18148), and what the GPU's compute buffer holds when weights in CPU memory are
copied in for a prompt ubatch (ggml/src/ggml-backend.cpp, the scheduler's op offload). Sources:
the comments of app/kvcalc/engines/llamacpp/allocator.py; fixtures in tests/fixtures/logs/SOURCES.md."""

import re
from fractions import Fraction

import pytest

from kvcalc.engines.llamacpp import allocator, engine as llamacpp
from kvcalc.evaluation import evaluate
from kvcalc.layers import FullAttention, SlidingWindowAttention
from kvcalc.model import Model
from kvcalc.precision import precision
from support import FIXTURES

MIB = 1 << 20
F16 = precision("fp16")


def log_text(name: str) -> str:
    return (FIXTURES / "logs" / name).read_text()


def printed(text: str, pattern: str) -> list[str]:
    return re.findall(pattern, text)


class Ngl:
    """What Settings the placement reads: -ngl alone."""

    def __init__(self, n):
        self.n_gpu_layers = n


# -- Qwen3 0.6B, -ngl 0, build 5489 (SunOfHomeBoy/blogSrc): every layer and the output in CPU memory.

QWEN3_06B = "llamacpp-qwen3-0.6b-ngl0-orin-4k-nofa-b5489.log"
QWEN3_06B_INPUTS = {
    "engine": "llama.cpp", "engine-version": "b5489", "layers": "28", "attention-heads": "16", "kv-heads": "8",
    "head-dim": "128", "hidden-size": "1024", "mlp-size": "3072", "vocab-size": "151936", "params": "751.63M",
    # print_info: file size = 456.11 MiB (5.09 BPW): 456.11 / 1,024 GiB.
    "weights-gib": "0.445419921875", "n-gpu-layers": "0", "batch": "1", "context": "4096",
    "prefill-chunk": "512", "flash-attn": "off", "kv-dtype": "fp16",
    # The Orin is no preset: the 22,926 MiB free it printed.
    "gpu-memory-gib": "22.38"}


def test_ngl_0_copies_the_output_layer_into_the_compute_buffer_beside_the_logits():
    """The log: "offloaded 0/29 layers to GPU", "CPU KV buffer size = 448.00 MiB", "CUDA0 compute
    buffer size = 422.92 MiB". Every weight is in CPU memory, yet at -ub 512 (>= 32 rows) the
    scheduler runs the graph on the GPU and copies each weight in, one split at a time; the
    largest moment is the output layer: its tied Q6_K weight (151,936 x 1,024 x 210/256 B =
    127,626,240 B; a 5.09-bit file keeps its head at Q6_K, src/llama-quant.cpp), the 512 x 1,024
    rows it reads and the 512 x 151,936 f32 logits: 440,888,320 B = 420.46 MiB, 0.6% under the
    422.92 printed. The whole-model estimate without the copy is 304.75 MiB (28% under)."""
    text = log_text(QWEN3_06B)
    assert "load_tensors: offloaded 0/29 layers to GPU" in text
    assert printed(text, r"CUDA0 compute buffer size = +([\d.]+) MiB") == ["422.92"]
    e = evaluate(QWEN3_06B_INPUTS)
    assert e.ok, e.errors
    out = e.engine
    head = 151_936 * 1024 * 210 // 256
    assert head == 127_626_240
    assert out.overhead_bytes_per_gpu == head + 4 * 512 * (151_936 + 1024) == 440_888_320
    assert "llama_context:      CUDA0 compute buffer size =   420.46 MiB   (estimated, within about 15%)" in out.log
    assert abs(out.overhead_bytes_per_gpu - 422.92 * MIB) / (422.92 * MIB) < 0.01
    # Its KV cache is all in CPU memory, as printed: "CPU KV buffer size = 448.00 MiB".
    assert "llama_kv_cache:        CPU KV buffer size =   448.00 MiB" in out.log
    assert out.kv_bytes_on_busiest_gpu == 0
    assert "load_tensors: offloaded 0/29 layers to GPU" in out.log
    # Without the copy the estimate is the full-offload graph's: logits, mask and rows.
    pool = allocator.allocate(e.scenario.model, F16, F16, 4096, 1)
    assert allocator.compute_buffer_bytes(e.scenario.model, pool, 512, flash=False) == 304.75 * MIB


def test_below_32_rows_nothing_is_copied_in():
    # ggml-cuda.cu offload_op: a batch under 32 rows stays with the weights' CPU backend; the same
    # log's inputs at -ub 16 keep the whole-model estimate.
    e = evaluate(dict(QWEN3_06B_INPUTS, **{"prefill-chunk": "16"}))
    pool = allocator.allocate(e.scenario.model, F16, F16, 4096, 1, ubatch=16)
    assert e.engine.overhead_bytes_per_gpu == allocator.compute_buffer_bytes(e.scenario.model, pool, 16, flash=False)


# -- Gemma 3 1B, -ngl 14, a master build of 2025-12-23 (waqasm86/cuda-mpi-llama-scheduler).

GEMMA3_1B_LAYERS = tuple(FullAttention(1, 256) if i % 6 == 5 else SlidingWindowAttention(1, 256, window=512)
                         for i in range(26))
GEMMA3_1B = Model("gemma-3-1b-it", GEMMA3_1B_LAYERS, attention_heads=4, hidden_size=1152, vocab_size=262_144,
                  mlp_size=6912, architecture="Gemma3ForCausalLM")


def test_from_pr_18148_the_output_layer_is_offloaded_first():
    """The log: -ngl 14 of 26 layers prints "offloading output layer to GPU", "offloading 13
    repeating layers to GPU", "offloaded 14/27 layers to GPU". i_gpu_start = 26 + 1 - 14 = 13:
    layers 13-25 and the output layer on the GPU. Its caches (-c 1536, -ub 64, one sequence): a
    full layer holds 1,536 cells of 256 x 2 x 2 B = 1.50 MiB, a sliding one pad(512 + 64, 256) =
    768 cells, 0.75 MiB. Layers 13-25 hold full layers 17 and 23 and eleven sliding ones: 3.00 and
    8.25 MiB on CUDA0, as printed (the CPU's the same, SOURCES.md). Before the PR -ngl 14 would
    have put layers 12-25 there (twelve sliding layers, 9.00 MiB) and the output on the CPU."""
    text = log_text("llamacpp-gemma3-1b-ngl14-940m-ub64-nofa.log")
    assert printed(text, r"CUDA0 KV buffer size = +([\d.]+) MiB") == ["3.00", "8.25"]
    assert "load_tensors: offloading 13 repeating layers to GPU" in text
    new = allocator.offload(GEMMA3_1B, Ngl(14), allocator.OUTPUT_FIRST_FROM)
    assert (new.first_gpu_layer, new.output_on_gpu, new.offloaded) == (13, True, 14)
    pool = allocator.allocate(GEMMA3_1B, F16, F16, 1536, 1, ubatch=64)
    full_layers = [i for i in range(13, 26) if GEMMA3_1B.layers[i].kind == "full"]
    assert full_layers == [17, 23]
    assert [c.cells for c in pool.caches] == [1536, 768]
    on_gpu = pool.layer_bytes[new.first_gpu_layer:]
    assert sum(b for i, b in zip(range(13, 26), on_gpu) if i in full_layers) == 3 * MIB
    assert sum(b for i, b in zip(range(13, 26), on_gpu) if i not in full_layers) == 8.25 * MIB
    old = allocator.offload(GEMMA3_1B, Ngl(14), allocator.OUTPUT_LAST_UNTIL)
    assert (old.first_gpu_layer, old.output_on_gpu, old.offloaded) == (12, False, 14)
    assert sum(pool.layer_bytes[old.first_gpu_layer:]) == (3 + 9) * MIB


def test_with_the_output_layer_on_the_gpu_the_logits_decide_the_compute_buffer():
    """The same log's "CUDA0 compute buffer size = 64.28 MiB": the output layer is on the GPU, so
    nothing as large as it is copied in; the logits of 64 rows and their input, 4 x 64 x (262,144 +
    1,152) B = 64.28 MiB, are the peak. The estimate (with its mask and two more rows) is 64.75 MiB;
    a CPU layer's largest matrix copied in stays below it even at a full byte a weight: 1,152 x
    6,912 B with 4 x 64 x (2 x 6,912 + 2 x 1,152) B of rows, 11.53 MiB."""
    assert 4 * 64 * (262_144 + 1152) / MIB == 64.28125
    pool = allocator.allocate(GEMMA3_1B, F16, F16, 1536, 1, ubatch=64)
    estimate = allocator.compute_buffer_bytes(GEMMA3_1B, pool, 64, flash=False)
    assert estimate == 64.75 * MIB and abs(estimate - 64.28 * MIB) / (64.28 * MIB) < 0.01
    copy = allocator.layer_copy_bytes(GEMMA3_1B, pool, 64, Fraction(1))
    assert copy == 1152 * 6912 + 4 * 64 * (2 * 6912 + 2 * 1152) == 12_091_392 < estimate


# -- The placement rule and its builds, on a preset (Mistral 7B, 32 layers, bf16, RTX 4090).

MISTRAL = {"model": "mistralai/Mistral-7B-v0.1", "engine": "llama.cpp", "gpu": "rtx-4090-24gb", "context": "32768"}


def run(**extra):
    e = evaluate(dict(MISTRAL, **{k.replace("_", "-"): v for k, v in extra.items()}))
    assert not e.errors, e.errors
    return e.engine


def refusal(**extra) -> str:
    e = evaluate(dict(MISTRAL, **{k.replace("_", "-"): v for k, v in extra.items()}))
    return str(e.errors[0])


def test_ngl_counts_the_output_layer_in_the_newest_builds():
    """From PR #18148 (the default build, b9272) -ngl 20 is the output layer and layers 13-31:
    19 x 128 MiB of cache on the GPU, 13 x 128 MiB on the CPU; -ngl 32 leaves layer 0 behind and
    only -ngl 33 offloads everything. Up to b7003 -ngl 20 was layers 12-31 and the output stayed
    on the CPU up to -ngl 32."""
    new = run(n_gpu_layers="20")
    assert "load_tensors: offloaded 20/33 layers to GPU" in new.log
    assert "llama_kv_cache:      CUDA0 KV buffer size =  2432.00 MiB" in new.log
    assert "llama_kv_cache:        CPU KV buffer size =  1664.00 MiB" in new.log
    at_32 = run(n_gpu_layers="32")
    assert "llama_kv_cache:        CPU KV buffer size =   128.00 MiB" in at_32.log
    assert not any("CPU KV buffer" in line for line in run(n_gpu_layers="33").log)
    old = run(n_gpu_layers="20", engine_version="b7003")
    assert "llama_kv_cache:      CUDA0 KV buffer size =  2560.00 MiB" in old.log
    assert not any("CPU KV buffer" in line for line in run(n_gpu_layers="32", engine_version="b7003").log)


def test_the_compute_buffer_follows_what_stays_in_cpu_memory():
    """Mistral 7B in bf16 at -ub 512 with flash attention, 32,768 cells: 136 MiB at full offload.
    With layers 0-12 on the CPU (-ngl 20, the output on the GPU) the largest moment is a CPU
    layer's attention with its K and V copied in: 136 MiB + 2 x 32,768 x 1,024 x 2 B = 264 MiB
    (one 4,096 x 14,336 bf16 matrix beside its rows is less, 184 MiB). With the output layer on
    the CPU too (up to b7003) its 262,144,000 B come in beside the logits: 320.5 MiB. Not a whole
    layer (424 MiB) on top of the full-offload graph, as it was estimated before."""
    full = run()
    assert full.overhead_bytes_per_gpu == 136 * MIB
    pool = allocator.allocate(evaluate(MISTRAL).scenario.model, precision("bf16"), precision("bf16"), 32768, 1)
    assert pool.layer_bytes[0] == 2 * 32768 * 1024 * 2
    assert run(n_gpu_layers="20").overhead_bytes_per_gpu == 136 * MIB + 2 * 32768 * 1024 * 2 == 264 * MIB
    assert 4096 * 14336 * 2 + 4 * 512 * (2 * 14336 + 2 * 4096) == 184 * MIB
    assert run(n_gpu_layers="20", engine_version="b7003").overhead_bytes_per_gpu == \
        2 * 32000 * 4096 + 4 * 512 * (32000 + 4096) == 336_068_608


def test_at_a_short_context_a_cpu_layers_largest_matrix_decides():
    """At 4,096 cells a CPU layer's K and V are 16 MiB, its attention moment 68 MiB in all; the
    4,096 x 14,336 bf16 matrix copied in beside its rows (184 MiB) is the peak."""
    small = run(n_gpu_layers="20", context="4096")
    assert small.overhead_bytes_per_gpu == max(6 * 512 * 4096 + 5 * 4 * 512 * 4096 + 2 * 4096 * 1024 * 2,
                                               4096 * 14336 * 2 + 4 * 512 * (2 * 14336 + 2 * 4096)) == 184 * MIB


def test_the_weights_left_in_cpu_memory_follow_the_placement():
    # The GPU's weights shrink by the CPU layers' even share, and by the head only where it stays
    # behind: at -ngl 32 the newest builds keep layer 0 (an even share), b7003 kept the head.
    weights = evaluate(MISTRAL).scenario.deployment.weights_bytes
    head = 2 * 32000 * 4096
    layer = (weights - head) // 32
    full = run()
    new, old = run(n_gpu_layers="32"), run(n_gpu_layers="32", engine_version="b7003")
    assert new.kv_budget_bytes_per_gpu - full.kv_budget_bytes_per_gpu == layer - (
        new.overhead_bytes_per_gpu - full.overhead_bytes_per_gpu)
    assert old.kv_budget_bytes_per_gpu - full.kv_budget_bytes_per_gpu == head - (
        old.overhead_bytes_per_gpu - full.overhead_bytes_per_gpu)


def test_a_build_between_the_two_placements_is_refused_for_a_partial_ngl():
    # PR #18148's build is not pinned between b7003 and b8299: a partial -ngl there is refused,
    # naming the field; every layer (-ngl 33) does not depend on it.
    said = refusal(n_gpu_layers="20", engine_version="b8000")
    assert said.startswith("n-gpu-layers: -ngl 20 of 32 layers: llama.cpp b8000 is between b7003")
    assert "PR #18148" in said
    assert run(n_gpu_layers="33", engine_version="b8000").kv_bytes_on_busiest_gpu == 4096 * MIB
    assert (allocator.OUTPUT_LAST_UNTIL, allocator.OUTPUT_FIRST_FROM) == (7003, 8299)


@pytest.mark.parametrize("dtype, bits", [("q8_0", 8.5), ("bf16", 16), ("q4_0", 6.5625)])
def test_the_output_layer_is_stored_as_llama_quant_types_it(dtype, bits):
    # src/llama-quant.cpp: output.weight is Q6_K in a quantized file unless the file is Q8_0;
    # 16-bit files keep 16 bits. 32,000 x 4,096 weights.
    e = evaluate(dict(MISTRAL, **{"weights-dtype": dtype, "n-gpu-layers": "0", "engine-version": "b7003",
                                  "context": "4096"}))
    head = int(32000 * 4096 * bits / 8)
    assert llamacpp._output_head_bytes(e.scenario.model, e.scenario.settings, e.scenario.deployment.weights_bytes) \
        == head
    assert e.engine.overhead_bytes_per_gpu == head + 4 * 512 * (32000 + 4096)


def test_a_logs_model_buffer_already_leaves_its_cpu_layers_out():
    """Pasted, the Gemma 3 1B log gives "CUDA0 model buffer size = 535.31 MiB" as the GPU's weights
    (loaded-weights-gib 0.522764) for its -ngl 14: the CPU layers are not taken out of it again. At
    -ngl 20 (Gemma 3 4B's shape as the model, 34 layers) six more layers' even share comes back
    onto the GPU, and the KV memory falls by it (and by the compute buffer's move)."""
    from kvcalc.inputs.startup_log import read_log
    values = dict(read_log(log_text("llamacpp-gemma3-1b-ngl14-940m-ub64-nofa.log")).values,
                  model="google/gemma-3-4b-it", **{"gpu-memory-gib": "1"})
    assert values["loaded-weights-gib"] == "0.522764" and values["n-gpu-layers"] == "14"
    same = evaluate(values)
    assert any("already leaves the CPU layers' weights out" in note for note in same.engine.notes)
    moved = evaluate(dict(values, **{"n-gpu-layers": "20"}))
    weights = moved.scenario.deployment.weights_bytes
    head = llamacpp._output_head_bytes(moved.scenario.model, moved.scenario.settings, weights)
    share = (weights - head) // 34
    assert any("this -ngl moves" in note and "onto the GPU" in note for note in moved.engine.notes)
    assert same.engine.kv_budget_bytes_per_gpu - moved.engine.kv_budget_bytes_per_gpu == 6 * share + (
        moved.engine.overhead_bytes_per_gpu - same.engine.overhead_bytes_per_gpu)
