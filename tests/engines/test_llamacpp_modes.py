"""llama.cpp's modes as worked examples: flash attention on or off, -ngl partial offload,
--n-cpu-moe, the host output buffer, each figure against a real log or llama.cpp's source.
Sources and build numbers: docs/research/llamacpp-builds.md."""

import re

import pytest

from kvcalc.engines.llamacpp import allocator as llamacpp_allocator, engine as llamacpp
from kvcalc.evaluation import evaluate
from kvcalc.serving.launch import launch
from kvcalc.layers import FullAttention
from kvcalc.model import Model
from kvcalc.precision import precision
from kvcalc.reports.verdict import verdict
from support import FIXTURES

MIB = 1 << 20
F16 = precision("fp16")


def log_text(name: str) -> str:
    return (FIXTURES / "logs" / name).read_text()


def mib(text: str, backend: str, what: str = "compute") -> float:
    return float(re.search(rf"{backend} +{what} buffer size = +([0-9.]+) MiB", text)[1])


# fedora-copr/logdetective PR #106 (2025-01-13), a llama-server log quoted as a diff: a
# Mistral-7B-class model (32 layers, 32 query heads, 8 KV heads of 128, n_embd 4096, n_vocab
# 32000: its 0.12 MiB output buffer), -ub 512, flash_attn = 0, the same server at -c 2048 and
# -c 32768. Copied here because tests/fixtures/logs has no flash-attention-off compute line.
LOGDETECTIVE_NOFA = {
    2048: """llama_new_context_with_model: n_ctx      = 2048
llama_new_context_with_model: n_ubatch   = 512
llama_new_context_with_model: flash_attn = 0
llama_kv_cache_init:      CUDA0 KV buffer size =   256.00 MiB
llama_new_context_with_model:  CUDA_Host  output buffer size =     0.12 MiB
llama_new_context_with_model:      CUDA0 compute buffer size =   164.00 MiB""",
    32768: """llama_new_context_with_model: n_ctx      = 32768
llama_new_context_with_model: n_ubatch   = 512
llama_new_context_with_model: flash_attn = 0
llama_kv_cache_init:      CUDA0 KV buffer size =  4096.00 MiB
llama_new_context_with_model:  CUDA_Host  output buffer size =     0.12 MiB
llama_new_context_with_model:      CUDA0 compute buffer size =  2144.00 MiB""",
}
MISTRAL_CLASS = Model("Mistral-7B-class", (FullAttention(8, 128),) * 32, attention_heads=32, hidden_size=4096,
                      vocab_size=32000)


@pytest.mark.parametrize("cells", [2048, 32768])
def test_without_flash_attention_the_score_buffer_dominates_to_the_mib(cells):
    # src/llama-graph.cpp build_attn_mha, flash attention off: kq f32 [n_kv, n_tokens, n_head],
    # softmax in place, an f32 mask [n_kv, n_tokens], four hidden-width rows:
    # 4 x 512 x 2,048 x (32 + 1) + 4 x (4 x 512 x 4,096) = 138,412,032 + 33,554,432 = 164.00 MiB;
    # at 32,768 cells 2,214,592,512 + 33,554,432 = 2,144.00 MiB. Both as the log prints them.
    log = LOGDETECTIVE_NOFA[cells]
    pool = llamacpp_allocator.allocate(MISTRAL_CLASS, F16, F16, cells, 1)
    assert mib(log, "CUDA0", "KV") * MIB == pool.bytes_total       # 256.00 / 4,096.00 MiB: the inputs are right
    estimate = llamacpp_allocator.compute_buffer_bytes(MISTRAL_CLASS, pool, 512, flash=False)
    assert estimate == {2048: 164 * MIB, 32768: 2144 * MIB}[cells] == mib(log, "CUDA0") * MIB
    # With flash attention no score buffer is built: the logits' 62.5 MiB and the f16 mask decide,
    # 80.50 MiB at 2,048 cells and 136.00 MiB at 32,768 (the estimate's, not a log's).
    assert llamacpp_allocator.compute_buffer_bytes(MISTRAL_CLASS, pool, 512) == {2048: 80.5 * MIB, 32768: 136 * MIB}[cells]


@pytest.mark.parametrize("name, hidden, vocab, context, ubatch", [
    ("llamacpp-glm-z1-32b-32k-fa-b5274.log", 6144, 151_552, 32768, 512),
    ("llamacpp-glm-4.5-air-128k-ub4096-fa.log", 4096, 151_552, 131072, 4096),
])
def test_with_flash_attention_the_logits_dominate(name, hidden, vocab, context, ubatch):
    # Logs printed with flash_attn = 1: GLM-Z1-32B at b5274, 353.00 MiB; GLM-4.5-Air at -ub 4096,
    # 3,584.09 MiB. The estimate's output term, 4 B x ubatch x vocab (296 MiB, 2,368 MiB), decides;
    # turning flash attention off would add a 48- or 96-head score buffer of 3 to 192 GiB.
    text = log_text(name)
    assert "flash_attn    = 1" in text
    model = Model("m", (FullAttention(8, 128),) * 4, attention_heads=48, hidden_size=hidden, vocab_size=vocab)
    pool = llamacpp_allocator.allocate(model, F16, F16, context, 1, ubatch=ubatch)
    logged = mib(text, "CUDA0") * MIB
    on = llamacpp_allocator.compute_buffer_bytes(model, pool, ubatch, flash=True)
    assert abs(on - logged) / logged < 0.02
    assert llamacpp_allocator.compute_buffer_bytes(model, pool, ubatch, flash=False) > 8 * logged


def test_a_small_model_at_4k_is_decided_by_its_logits_either_way():
    # llamacpp-qwen2.5-3b-class-llamasharp-4080s-4k.log (~b4700, flash attention not printed):
    # 300.75 MiB = 4 x 512 x 151,936 B of logits (296.75 MiB) + one 512 x 2,048 row (4 MiB). Its 16
    # heads' scores, 4 x 512 x 4,096 x 17 = 136 MiB, stay below that, so on and off agree.
    text = log_text("llamacpp-qwen2.5-3b-class-llamasharp-4080s-4k.log")
    model = Model("qwen2.5-3b-class", (FullAttention(2, 128),) * 36, attention_heads=16, hidden_size=2048,
                  vocab_size=151_936)
    pool = llamacpp_allocator.allocate(model, F16, F16, 4096, 1)
    on, off = (llamacpp_allocator.compute_buffer_bytes(model, pool, 512, flash) for flash in (True, False))
    assert on == off == 308.75 * MIB                        # within 2.7% of the printed 300.75 MiB
    assert abs(on - mib(text, "CUDA0") * MIB) / (mib(text, "CUDA0") * MIB) < 0.03


@pytest.mark.parametrize("name, vocab, printed", [
    ("llamacpp-qwen2.5-3b-class-llamasharp-4080s-4k.log", 151_936, "0.58"),
    ("llamacpp-command-a-iswa-240k-nofa-pad32.log", 256_000, "0.98"),
    ("llamacpp-llama2-7b-class-cpu-unified-4k.log", 32_000, "0.12"),
])
def test_the_host_output_buffer_holds_one_row_of_logits_per_sequence(name, vocab, printed):
    # src/llama-context.cpp: output_reserve(n_seq_max) at start-up (PR #6122): 4 B x n_vocab x 1,
    # in host memory (CUDA_Host or CPU), not on the GPU.
    text = log_text(name)
    assert re.search(rf"output buffer size = +{printed} MiB", text)
    model = Model("m", (FullAttention(8, 128),), vocab_size=vocab)
    assert f"{llamacpp_allocator.output_buffer_bytes(model, 1) / MIB:.2f}" == printed


MISTRAL = {"model": "mistralai/Mistral-7B-v0.1", "engine": "llama.cpp", "gpu": "rtx-4090-24gb", "context": "32768"}


def engine(**extra):
    e = evaluate(dict(MISTRAL, **{k.replace("_", "-"): v for k, v in extra.items()}))
    assert not e.errors, e.errors
    return e.engine, e.scenario


def refusal(**extra) -> str:
    e = evaluate(dict(MISTRAL, **{k.replace("_", "-"): v for k, v in extra.items()}))
    assert e.result is None or e.engine is None
    return str(e.errors[0])


def compute_line(out) -> str:
    return next(line for line in out.log if "compute buffer size" in line)


def test_the_default_is_keyed_to_the_build_that_made_it_auto():
    # PR #15434, in release b6325: -fa on|off|auto, default auto (on for CUDA). Before it flash
    # attention was off unless -fa was given. Mistral 7B at 32,768 cells: 136.00 MiB with it,
    # 2,144.00 MiB without (the Mistral-class log above).
    new, _ = engine(engine_version="b6325")
    old, _ = engine(engine_version="b6324")
    off, _ = engine(flash_attn="off")
    assert "=   136.00 MiB" in compute_line(new)
    assert "=  2144.00 MiB" in compute_line(old) == compute_line(off)
    # The 2,008 MiB more come out of the KV budget, byte for byte.
    assert new.kv_budget_bytes_per_gpu - old.kv_budget_bytes_per_gpu == (2144 - 136) * MIB
    assert any("off by default before b6325" in note for note in old.notes)


def test_launch_writes_fa_as_the_build_reads_it():
    # From b6325 -fa takes a value; before it a bare -fa switched flash attention on.
    assert "-fa off" in launch(engine(flash_attn="off")[1], "llama.cpp").command
    assert "-fa on" in launch(engine(flash_attn="on")[1], "llama.cpp").command
    old_on = launch(engine(flash_attn="on", engine_version="b5000")[1], "llama.cpp").command
    assert old_on.endswith("-fa") or " -fa " in old_on
    assert "-fa" not in launch(engine(flash_attn="off", engine_version="b5000")[1], "llama.cpp").command
    # A quantized V needs flash attention in every build, and is refused with it off.
    assert launch(engine(kv_dtype_v="q8_0", engine_version="b5000")[1], "llama.cpp").command.endswith("-fa")
    assert refusal(flash_attn="off", kv_dtype_v="q8_0").startswith("flash-attn: llama.cpp refuses a quantized V")


def test_without_flash_attention_a_context_off_the_256_grid_is_refused():
    # Before PR #16812 a cache without flash attention was padded to 32 cells (PR #7257; the
    # Command-A log llamacpp-command-a-iswa-240k-nofa-pad32.log keeps 240,000 cells), from PR
    # #17046 to 256: the builds of those two PRs are not pinned, so -c 30,000 is refused.
    assert "create_memory: n_ctx = 240000 (padded)" in log_text("llamacpp-command-a-iswa-240k-nofa-pad32.log")
    assert refusal(flash_attn="off", context="30000").startswith("context: without flash attention")
    assert engine(flash_attn="on", context="30000")[0].kv_tokens == 30208


def test_partial_offload_keeps_the_first_layers_and_their_cache_on_the_cpu():
    # src/llama-model.cpp load_tensors up to b7003: i_gpu_start = n_layer - ngl, so -ngl 20 of
    # Mistral's 32 layers puts layers 12..31 on the GPU; the output head goes there only when ngl >
    # n_layer (from PR #18148 it goes first: tests/engines/test_llamacpp_offload.py); each layer's
    # cache lives on its layer's device (src/llama-kv-cache.cpp, dev_layer(il)).
    # Cache: 32,768 cells x 128 KiB per layer = 128 MiB a layer: 20 on the GPU, 12 on the CPU.
    out, scenario = engine(n_gpu_layers="20", engine_version="b7003")
    assert "load_tensors: offloaded 20/33 layers to GPU" in out.log
    assert "llama_kv_cache:      CUDA0 KV buffer size =  2560.00 MiB" in out.log
    assert "llama_kv_cache:        CPU KV buffer size =  1536.00 MiB" in out.log
    full, _ = engine(engine_version="b7003")
    weights = scenario.deployment.weights_bytes               # 14,483,464,192 B of bf16
    head = 2 * 32000 * 4096                                   # the output head, 262,144,000 B
    layer = (weights - head) // 32                            # an even share: 444,416,006 B
    cpu = 12 * layer + head
    # The CPU keeps 12 layers and the head; for each prompt ubatch the head is copied into the
    # compute buffer beside the logits (op offload of batches >= 32, ggml-backend.cpp):
    # 262,144,000 + 4 x 512 x (32,000 + 4,096) = 336,068,608 B, above the 136 MiB at full offload.
    assert out.overhead_bytes_per_gpu == head + 4 * 512 * (32000 + 4096) == 336_068_608
    assert out.kv_budget_bytes_per_gpu == full.kv_budget_bytes_per_gpu + cpu - (
        out.overhead_bytes_per_gpu - full.overhead_bytes_per_gpu)
    assert "-ngl 20" in launch(scenario, "llama.cpp").command


def test_ngl_equal_to_the_layers_leaves_only_the_output_head_behind():
    # Up to b7003 (the output layer last).
    out, _ = engine(n_gpu_layers="32", engine_version="b7003")
    assert "load_tensors: offloaded 32/33 layers to GPU" in out.log
    assert not any("CPU KV buffer" in line for line in out.log)
    full, _ = engine(n_gpu_layers="33", engine_version="b7003")
    assert "load_tensors: offloaded 33/33 layers to GPU" in full.log
    # The head's 262,144,000 B leave the GPU, and come back as its copy beside the logits:
    # 336,068,608 B against 136 MiB at full offload.
    assert out.overhead_bytes_per_gpu == 336_068_608
    assert out.kv_budget_bytes_per_gpu == full.kv_budget_bytes_per_gpu + 2 * 32000 * 4096 - (
        336_068_608 - full.overhead_bytes_per_gpu)


def test_partial_offload_over_several_gpus_splits_the_offloaded_layers():
    # -ngl 20 of Mistral 7B's 32 layers from b8299: the output and layers 13-31 (20 slots), split
    # evenly by free memory: slots 13-22 on GPU 0, 23-31 and the output on GPU 1 (allocator.split;
    # tests/engines/test_llamacpp_split.py holds it to the logs). 128 MiB a layer at 32,768 f16 cells.
    out, _ = engine(n_gpu_layers="20", gpus="2")
    assert "llama_kv_cache:      CUDA0 KV buffer size =  1280.00 MiB" in out.log
    assert "llama_kv_cache:      CUDA1 KV buffer size =  1152.00 MiB" in out.log
    assert "llama_kv_cache:        CPU KV buffer size =  1664.00 MiB" in out.log
    assert out.kv_bytes_on_busiest_gpu == 10 * 128 * MIB


def test_n_cpu_moe_moves_the_first_layers_experts_off_the_gpu():
    """PR #15077 (release b6089): --n-cpu-moe N overrides ffn_(up|down|gate)_exps of layers 0..N-1
    to the CPU buffer type. A dense model has no such tensors. Qwen3-30B-A3B in bf16 (61,064,245,248 B
    of weights, 30,532,122,624 parameters: 2 B each): a layer's experts are 128 x 3 x 2,048 x 768 =
    603,979,776 parameters, 1,207,959,552 B; --n-cpu-moe 8 frees eight of them, 9 GiB, and a prompt
    ubatch copies one expert tensor at a time into the compute buffer, each in a split of its own
    (ggml-backend.cpp): 128 x 2,048 x 768 x 2 B = 384 MiB beside 4 x 512 x (2 x 8 x 768 + 2 x 2,048) B
    of rows, 416 MiB in all."""
    out, scenario = engine(n_cpu_moe="4")
    assert any("changes nothing here" in note for note in out.notes)
    assert "--n-cpu-moe 4" in launch(scenario, "llama.cpp").command
    base = dict(MISTRAL, model="Qwen/Qwen3-30B-A3B")
    plain = evaluate(base).engine
    moved = evaluate(dict(base, **{"n-cpu-moe": "8"}))
    weights = moved.scenario.deployment.weights_bytes
    per_layer = weights * (128 * 3 * 2048 * 768) // moved.scenario.model.params
    assert per_layer == 1_207_959_552
    engine_out = moved.engine
    assert engine_out.kv_budget_bytes_per_gpu - plain.kv_budget_bytes_per_gpu == 8 * per_layer - (
        engine_out.overhead_bytes_per_gpu - plain.overhead_bytes_per_gpu)
    assert engine_out.overhead_bytes_per_gpu == per_layer // 3 + 4 * 512 * (2 * 8 * 768 + 2 * 2048) == 436_207_616
    assert refusal(n_cpu_moe="4", engine_version="b6088").startswith("n-cpu-moe: --n-cpu-moe came in llama.cpp b6089")


def test_the_builds_modelled():
    # From the oldest log read (b4462) to the last build known to reserve n_ubatch logits rows
    # (b9272, issue #23527); PR #23861 after it reserves fewer, and is not modelled.
    assert (llamacpp.FIRST_RELEASE, llamacpp.NEWEST_RELEASE) == ("b4462", "b9272")
    assert refusal(engine_version="b9300").startswith("engine-version: b9300 is newer than modelled")
    assert refusal(engine_version="b4000").startswith("engine-version: b4000 is older than modelled")


def test_the_compute_buffer_estimate_has_its_band_and_the_verdict_reads_it():
    """The compute buffer is an estimate within about 15% of eleven logs: Llama 3.1 8B in f16 on an
    RTX 4090 at 70,912 tokens fits at the estimate (336 MiB) and not at the band's top (+15%)."""
    e = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "llama.cpp", "gpu": "rtx-4090-24gb",
                  "context": "70912"})
    out = e.engine
    top, bottom = out.band
    assert out.starts and top.starts is False and bottom.starts
    assert top.overhead_bytes_per_gpu == out.overhead_bytes_per_gpu + int(out.overhead_bytes_per_gpu * 0.15)
    assert "at the top of its range" in verdict(e.scenario, e).sentence
