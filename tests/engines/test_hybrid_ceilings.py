"""The request ceilings of the engines' hybrid (Mamba / linear-attention) caches, each worked from a
real public log (tests/fixtures/logs, URLs in SOURCES.md).

vLLM 0.20.0-0.33.0 (vllm/config/compilation.py resolve_cudagraph_mode_and_sizes, PR #38270): with
full CUDA graphs, a model with Mamba layers refuses to start when max_num_seqs exceeds the pool's
block count (kv_cache_config.num_blocks), after it has printed the pool's lines."""

import re
from fractions import Fraction
from pathlib import Path

import pytest

from kvcalc.engines.vllm import allocator, engine as vllm_engine
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log
from kvcalc.precision import precision
from kvcalc.readers.hfconfig import model_from_config
from kvcalc.reports.verdict import verdict
from support import hf_fixture

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
REFUSAL = re.compile(r"max_num_seqs \((\d+)\) exceeds available Mamba cache blocks \((\d+)\)")


def printed(name: str) -> tuple[int, int]:
    """(N, M) as the log prints them."""
    match = REFUSAL.search((LOGS / name).read_text(encoding="utf-8"))
    return int(match[1]), int(match[2])


# vllm/vllm#49064, the 2 x RX 7900 XT reproduction: vLLM 0.23.1, tp 2, --gpu-memory-utilization 0.85,
# --max-model-len 122633, default max_num_seqs; the thread gives the pool as 3.86 GiB, 123 399 tokens.
ROCM_LOG = "mamba-refusal-vllm-qwen3.8-27b-2x7900xt-tp2-rocm-122k-v0.23.1.log"
ROCM = {"hf-config": hf_fixture("Qwen__Qwen3.5-27B.json"), "engine": "vllm", "engine-version": "0.23.1",
        "gpu-memory-gib": "48", "gpus": "2", "tp": "2", "context": "122633", "memory-utilization": "0.85",
        "kv-memory-gib": "3.86"}


def test_the_rocm_log_refusal_256_over_161_blocks():
    """Qwen3.5-27B's layout (48 Gated DeltaNet + 16 full-attention layers, the thread's Qwen3.8-27B):
    at tp 2 one token of an attention layer is 2 KV heads x 256 x 2 x 2 B = 2,048 B, a state page
    (fp32 SSM state) 1,603,584 B, so the block grows to 16 x cdiv(1,603,584, 16 x 2,048) = 784 tokens,
    a page of 1,605,632 B. Four groups of 16 layers share one block count: a block is 16 pages,
    25,690,112 B, and 3.86 GiB holds 161 of them (161.3 at either end of the log's rounding). The
    log's own figures come back first (123,399 tokens), then vLLM's refusal: 256 > 161."""
    n, m = printed(ROCM_LOG)
    assert (n, m) == (256, 161)
    e = evaluate(ROCM)
    assert e.ok, e.errors
    engine = e.engine
    assert engine.kv_tokens == 123_399 and engine.kv_tokens_range == (123_399, 123_399)
    assert engine.block_size == 784 and engine.starts is False
    assert engine.refusal == allocator.mamba_ceiling_refusal(n, m)
    assert REFUSAL.search(engine.log[-1]).groups() == (str(n), str(m))
    assert engine.log[-2] == "Maximum concurrency for 122,633 tokens per request: 1.01x"
    # The verdict: how far over, and the flags that fix it; a block is 25,690,112 B, so 256 of them
    # need 95 x 25,690,112 B more than the 161 there are, about 2.27 GiB.
    words = engine.refusal_words
    assert words.startswith("max_num_seqs 256 (vLLM 0.23.1's default for this GPU) exceeds its 161 Mamba cache "
                            "blocks by 95")
    assert "25,690,112 B per GPU" in words and "--max-num-seqs 161 or fewer" in words
    assert "2.27 GiB more KV memory per GPU" in words and "--enforce-eager" in words
    said = verdict(e.scenario, e)
    assert e.context_limit == (None, None)       # no context length lifts it: none is offered
    assert said.fits is False and said.sentence.startswith("Does not fit: vLLM will not start: " + words)


def test_the_rocm_log_at_132000_is_the_context_refusal_first():
    """The same thread's first try, at 132,000 tokens: vLLM refused the context before any
    block count ("estimated maximum model length is 123872")."""
    e = evaluate({**ROCM, "context": "132000"}).engine
    assert e.starts is False and e.max_model_len == 123_872 and e.refusal_words is None
    assert "estimated maximum model length is 123872" in e.refusal


@pytest.mark.parametrize("seqs,starts", [("161", True), ("160", True), ("162", False)])
def test_the_ceiling_is_the_block_count_itself(seqs, starts):
    """--max-num-seqs at the block count starts (the check is strictly greater); one more refuses."""
    e = evaluate({**ROCM, "batch": seqs}).engine
    assert e.starts is starts
    assert (e.refusal is None) is starts
    if not starts:
        assert "(yours)" in e.refusal_words and "exceeds its 161 Mamba cache blocks by 1" in e.refusal_words


def test_no_ceiling_without_full_cuda_graphs_or_before_0_20():
    """--enforce-eager leaves the CUDA-graph mode NONE: no check. 0.19.1 shrank the capture sizes to
    the block count instead (adjust_cudagraph_sizes_for_mamba_cache) and started."""
    assert evaluate({**ROCM, "enforce-eager": "on"}).engine.starts is True
    old = evaluate({**ROCM, "engine-version": "0.19.1"}).engine
    assert old.starts is True and old.refusal is None


def test_the_h100_log_default_is_1024():
    """vllm/vllm#49064's H100 reproduction (0.28.0, 132,000 tokens, utilization 0.90): N is the
    release's default for an 80 GB GPU, 1,024; the thread gives no KV memory, so M (969) is
    compared with the block count at the KV memory 969 blocks take: 969 x 51,380,224 B (tp 1,
    blocks of 784 tokens, 16 pages of 3,211,264 B) and one byte less."""
    n, m = printed("mamba-refusal-vllm-qwen3.8-27b-h100-132k-v0.28.0.log")
    assert (n, m) == (1024, 969)
    base = {"hf-config": hf_fixture("Qwen__Qwen3.5-27B.json"), "engine": "vllm", "engine-version": "0.28.0",
            "gpu": "h100-sxm-80gb", "context": "132000", "memory-utilization": "0.90"}
    estimated = evaluate(base).engine
    assert estimated.starts is False and "max_num_seqs 1,024 (vLLM 0.28.0's default" in estimated.refusal_words
    model = model_from_config(hf_fixture("Qwen__Qwen3.5-27B.json"))
    bf16 = precision("bf16")
    block = 969 * 51_380_224
    for available, blocks in ((block, 969), (block - 1, 968)):
        pool, refusal, _, _ = allocator.allocate(model, bf16, 1, 1, 132_000, 8192, 16, available)
        assert refusal is None and pool.num_blocks == blocks and pool.block_bytes == 51_380_224
    assert allocator.mamba_ceiling(model, pool, vllm_engine.release_of(evaluate(base).scenario), eager=False) == 968


def test_the_refusal_reads_as_vllm_prints_it():
    """PR #38270's own line, word for word."""
    line = (LOGS / "mamba-refusal-vllm-pr38270.log").read_text(encoding="utf-8").strip()
    n, m = printed("mamba-refusal-vllm-pr38270.log")
    assert line.endswith(allocator.mamba_ceiling_refusal(n, m))


def test_a_model_without_state_layers_has_no_ceiling():
    e = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "engine-version": "0.28.0",
                  "gpu": "rtx-4090-24gb", "context": "8192", "batch": "4096"}).engine
    assert e.refusal is None or "Mamba" not in e.refusal


def test_gemma_4_full_pages_grow_their_block_not_their_padding():
    """vllm-gemma4-26b-a4b-nvfp4-dgx-spark-util085-262k-v0.25.1.log (vLLM 0.25.1, 84.68 GiB, 262,144
    tokens, printed 3,912,140 tokens and 14.92x). Gemma 4 26B-A4B's sliding layers keep 8 KV heads
    of 256 (8,192 B a token, a 16-token page of 131,072 B), its full layers 2 of 512 (4,096 B a token,
    65,536 B). unify_kv_cache_spec_page_size (kv_cache_utils.py, 0.20.0-0.26.0; kv_cache_planning.py
    in 0.33.0) grows the smaller page's block by the ratio when it divides the largest: the full
    layers take 32-token blocks, no padding. Six groups of five layers, a block 655,360 B; a request
    keeps 262,144 / 32 = 8,192 full blocks and 5 x (cdiv(1,023 + 2,496, 16) + 1) = 1,105 sliding
    ones: 9,297. Padded 16-token full pages would take 16,384 + 1,105 and halve the concurrency."""
    reading = read_log((LOGS / "vllm-gemma4-26b-a4b-nvfp4-dgx-spark-util085-262k-v0.25.1.log").read_text("utf-8"))
    e = evaluate(dict(reading.values))
    assert e.ok, e.errors
    model, work = e.scenario.model, e.scenario.workload
    specs, block, _ = allocator.specs_of(model, work.kv_precision, work.kv_precision, 1, 16)
    groups, padding = allocator.kv_groups(specs)
    assert padding == [] and block == 16
    blocks = sorted((type(g.spec).__name__, g.spec.block_size, g.spec.page_size_bytes, len(g.layers)) for g in groups)
    assert blocks == [("FullAttentionSpec", 32, 131_072, 5)] + [("SlidingWindowSpec", 16, 131_072, 5)] * 5
    engine = e.engine
    low, high = engine.kv_tokens_range
    assert low <= reading.printed["kv_tokens"].value == 3_912_140 <= high
    assert f"{float(engine.max_concurrency):.2f}" == "14.92"
    assert engine.max_concurrency == Fraction(
        int(84.68 * (1 << 30)) // 655_360, 9_297)
    assert engine.starts is True and engine.refusal is None        # 32 sequences, far under its blocks
