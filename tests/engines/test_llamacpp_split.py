"""llama.cpp over several GPUs as worked examples against real logs: which GPU holds which layer
(src/llama-model.cpp llama_model::load_tensors: the split points are the -ts proportions' running
sums over their total, or each GPU's free memory; a layer slot il, the output layer the slot after
the last repeating layer, goes to std::upper_bound(points, il / act_gpu_layers)), what each GPU's
KV buffer then is, and what a pasted log's own lines say of the split. Fixtures and their URLs in
tests/fixtures/logs/SOURCES.md."""

import re
from fractions import Fraction

from kvcalc.engines.llamacpp import allocator
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import implied, read_log
from support import FIXTURES

MIB = 1 << 20


def log_text(name: str) -> str:
    return (FIXTURES / "logs" / name).read_text()


def kv_buffers(text: str) -> list[Fraction]:
    """Each device's "KV buffer size = X MiB", in the order printed."""
    return [Fraction(x) for x in re.findall(r"KV buffer size =\s*([\d.]+) MiB", text)]


def layers(where: allocator.Split) -> list[int]:
    return [len(held) for held in where.layers]


# -- Qwen2.5-Coder-32B q8_0, -ts 10,6 -ngl 99 -c 32768, q8_0 K and V, b4462 (llama.cpp#11200)

CODER = "llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log"
CODER_INPUTS = {"engine": "llama.cpp", "engine-version": "b4462", "model": "Qwen/Qwen2.5-32B", "weights-dtype": "q8_0",
                "gpu": "rtx-3090-24gb", "gpus": "2", "context": "32768", "prefill-chunk": "256", "flash-attn": "on",
                "kv-dtype": "q8_0", "n-gpu-layers": "99"}


def test_ts_10_6_puts_41_layers_on_the_first_gpu_and_23_with_the_output_on_the_second():
    # 64 layers and the output: 65 slots; the points are 10/16 = 0.625 and 1, so slots 0-40
    # (40/65 = 0.615 < 0.625) are CUDA0's and 41-64 (41/65 = 0.631) CUDA1's.
    where = allocator.split(allocator.Offload(64, 64, True), 2, (Fraction(10), Fraction(6)))
    assert layers(where) == [41, 23] and where.output == 1
    assert where.layers[0] == tuple(range(41))


def test_the_coder_log_per_gpu_kv_typed_with_its_tensor_split():
    text = log_text(CODER)
    assert "-ts 10,6" in text
    cuda0, cuda1 = kv_buffers(text)
    assert (cuda0, cuda1) == (2788, 1564)
    # A layer at 32,768 cells of q8_0 (34 B per 32) K and V, 8 KV heads of 128: 68 MiB; 41 and 23.
    assert cuda0 == 41 * 68 and cuda1 == 23 * 68
    e = evaluate(dict(CODER_INPUTS, **{"tensor-split": "10,6"}))
    assert e.ok, e.errors
    assert e.engine.kv_bytes_on_busiest_gpu == cuda0 * MIB
    assert any("GPU 0: 41 layers" in n and "GPU 1: 23 layers and the output layer" in n and "-ts 10,6" in n
               for n in e.engine.notes)
    # Without -ts, llama.cpp splits by free memory: identical GPUs 33/31 (the 65th slot the output).
    even = evaluate(CODER_INPUTS)
    assert even.engine.kv_bytes_on_busiest_gpu == 33 * 68 * MIB
    assert any("free memory" in n and "GPU 0: 33 layers" in n for n in even.engine.notes)


def test_the_coder_log_pasted_reads_its_ts_and_gives_its_own_kv():
    reading = read_log(log_text(CODER))
    assert reading.values["tensor-split"] == "10/6"
    read = next(r for r in reading.read if r.option == "tensor-split")
    assert read.how == "-ts" and read.line_number == 2
    values = dict(reading.values, model="Qwen/Qwen2.5-32B", gpu="rtx-3090-24gb")
    e = evaluate(values)
    assert e.ok, e.errors
    assert e.engine.kv_bytes_on_busiest_gpu == 2788 * MIB


def test_a_tensor_split_for_more_gpus_than_given_is_refused_in_its_field():
    e = evaluate(dict(CODER_INPUTS, **{"tensor-split": "10,6,4"}))
    assert not e.ok and e.errors[0].field == "tensor-split" and "3 proportions for 2 GPUs" in e.errors[0].message
    bad = evaluate(dict(CODER_INPUTS, **{"tensor-split": "10,x"}))
    assert not bad.ok and bad.errors[0].field == "tensor-split" and "proportions" in bad.errors[0].message
    zero = evaluate(dict(CODER_INPUTS, **{"tensor-split": "0,0"}))
    assert not zero.ok and zero.errors[0].field == "tensor-split" and "free memory" in zero.errors[0].message


# -- Llama 3.3 70B Q3_K_M under Ollama on two GPUs, 4,096 cells (ollama#10553): 49/31 by free memory

OLLAMA_70B = "llamacpp-llama3-70b-q3km-ollama-4k-2gpu.log"


def test_the_ollama_log_implies_its_split_from_its_kv_buffer_lines():
    text = log_text(OLLAMA_70B)
    assert kv_buffers(text) == [784, 496] and "n_layer = 80" in text and "-ts" not in text
    reading = read_log(text)
    # 1,280 MiB over 80 layers: 16 MiB a layer, so 49 and 31 layers; the output the last slot.
    assert reading.values["tensor-split"] == "49/32"
    read = next(r for r in reading.read if r.option == "tensor-split")
    assert "49/31 layers per GPU" in read.how and "CUDA0 784.00 MiB, CUDA1 496.00 MiB" in read.how
    assert read.line.strip().endswith("CUDA1 KV buffer size =   496.00 MiB")
    where = allocator.split(allocator.Offload(80, 80, True), 2, (Fraction(49), Fraction(32)))
    assert layers(where) == [49, 31] and where.output == 1
    # The log's own GGUF metadata gives the model's shape: the GPU is chosen.
    assert reading.values["layers"] == "80"
    e = evaluate(dict(reading.values, gpu="rtx-3090-24gb"))
    assert e.ok, e.errors
    assert e.engine.kv_bytes_on_busiest_gpu == 784 * MIB


# -- An even split: Llama 3.1 70B over two RPC servers, b6209 (Arm learning path), and 2 x RTX 4090

def test_an_even_split_counts_the_output_layer_as_the_last_slot():
    # 80 layers and the output over two equal devices: 41/39, not 40/40 (40/81 < 0.5 <= 41/81).
    rpc = log_text("llamacpp-llama31-70b-q4_0-rpc-2nodes-b6209.log")
    assert kv_buffers(rpc) == [656, 624] and "31491 MiB free" in rpc
    assert layers(allocator.split(allocator.Offload(80, 80, True), 2)) == [41, 39]
    e = evaluate({"engine": "llama.cpp", "engine-version": "b6209", "model": "meta-llama/Llama-3.1-70B",
                  "weights-gib": "37.22", "gpu-memory-gib": "30.75", "gpus": "2", "context": "4096", "batch": "1",
                  "flash-attn": "off"})
    assert e.ok, e.errors
    assert e.engine.kv_bytes_on_busiest_gpu == 656 * MIB
    # Qwen2.5-32B's 64 layers at 2,048 f16 cells: 8 MiB a layer, 33 and 31 (ollama#9068).
    pair = log_text("llamacpp-r1-distill-qwen-32b-class-ollama-2x4090-2k-nofa.log")
    assert kv_buffers(pair) == [264, 248]
    assert layers(allocator.split(allocator.Offload(64, 64, True), 2)) == [33, 31]


def test_each_gpu_must_hold_its_own_share():
    # Two GPUs too small for the weights on the busier one: the fit is every GPU's, not the average's.
    e = evaluate(dict(CODER_INPUTS, **{"tensor-split": "10,6", "gpu": "rtx-3090-24gb"}))
    fits = e.engine.starts
    tight = evaluate(dict(CODER_INPUTS, **{"tensor-split": "15,1"}))
    assert fits is True and tight.engine.starts is False


# -- A log without n_ctx: LLamaSharp's bundled llama.cpp (~b4701), a Qwen2.5-3B-class GGUF on an
# RTX 4080 SUPER (LLamaSharp#1099): "CUDA0 KV buffer size = 144.00 MiB", K (f16) 72.00 MiB.

LLAMASHARP = "llamacpp-qwen2.5-3b-class-llamasharp-4080s-4k.log"
QWEN25_3B_SHAPE = {"layers": "36", "kv-heads": "2", "head-dim": "128"}


def test_the_context_a_log_leaves_unsaid_is_the_cells_its_k_bytes_hold():
    text = log_text(LLAMASHARP)
    assert "K (f16):   72.00 MiB" in text and "n_ctx" not in text and "kv_size" not in text
    reading = read_log(text)
    assert "context" not in reading.values
    # 36 layers x 2 KV heads x 128 x 2 B = 18,432 B of K a cell: 72 MiB is 4,096 cells.
    assert 72 * MIB == 4096 * 36 * 2 * 128 * 2
    given = implied(reading, dict(reading.values, **QWEN25_3B_SHAPE))
    assert given.values["context"] == "4096"
    read = next(r for r in given.read if r.option == "context")
    assert read.line_number == 5 and "18,432 B a cell" in read.how and "4,096 cells" in read.how
    assert any(n.startswith("context 4,096 implied, not printed") for n in given.notes)
    e = evaluate(dict(given.values, **QWEN25_3B_SHAPE, **{"gpu-memory-gib": "16"}))
    assert e.ok, e.errors
    assert e.engine.kv_bytes_on_busiest_gpu == 144 * MIB
    # A model whose cell is not a whole share of 72 MiB implies nothing, and says so.
    other = implied(reading, dict(reading.values, **{"layers": "35", "kv-heads": "2", "head-dim": "128"}))
    assert "context" not in other.values and any("context not implied" in n for n in other.notes)
    # A context the user typed stays theirs.
    typed = implied(reading, dict(reading.values, **QWEN25_3B_SHAPE, context="2048"))
    assert "context" not in typed.values


def test_the_layer_assignment_lines_give_the_split_they_print():
    # load_tensors' debug line, as src/llama-model.cpp formats it ("load_tensors: layer %3d assigned
    # to device %s, is_swa = %d"), for the coder log's 64 layers and output under -ts 10,6: slots 0-40
    # on CUDA0, 41-64 on CUDA1 (no public log in the fixtures prints them for several GPUs).
    where = allocator.split(allocator.Offload(64, 64, True), 2, (Fraction(10), Fraction(6)))
    device = {il: f"CUDA{gpu}" for gpu, held in enumerate(where.layers) for il in held}
    device[64] = f"CUDA{where.output}"
    lines = [f"load_tensors: layer {il:3d} assigned to device {device[il]}, is_swa = 0" for il in range(65)]
    text = log_text(CODER).replace(" -ts 10,6", "")
    reading = read_log("\n".join(lines) + "\n" + text)
    assert reading.values["tensor-split"] == "41/24"
    read = next(r for r in reading.read if r.option == "tensor-split")
    assert "CUDA0 41, CUDA1 24 of slots 0-64" in read.how
    again = allocator.split(allocator.Offload(64, 64, True), 2, (Fraction(41), Fraction(24)))
    assert again == where
    # A GPU whose slots are not one run was not placed by a split: not taken, and said.
    lines[3] = lines[3].replace("CUDA0", "CUDA1")
    broken = read_log("\n".join(lines) + "\n" + text)
    assert "tensor-split" not in broken.values and any("not one run" in n for n in broken.notes)
