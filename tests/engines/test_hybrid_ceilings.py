"""The request ceilings of the engines' hybrid (Mamba / linear-attention) caches, each worked from a
real public log (tests/fixtures/logs, URLs in SOURCES.md).

vLLM 0.20.0-0.33.0 (vllm/config/compilation.py resolve_cudagraph_mode_and_sizes, PR #38270): with
full CUDA graphs, a model with Mamba layers refuses to start when max_num_seqs exceeds the pool's
block count (kv_cache_config.num_blocks), after it has printed the pool's lines."""

import re
from fractions import Fraction
from pathlib import Path

import pytest

from kvcalc.engines.sglang import allocator as sglang, engine as sglang_engine
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
# Every figure tested follows from that KV memory; the card (20 GiB) is not what is tested: the thread's
# checkpoint is not named (a quantized one, its weights unknown), so a card that holds the bf16 weights
# stands in for it and the verdict reaches the engine's refusal (20 GiB would first say the weights'
# size contradicts the KV memory given). Below 70 GiB either way: vLLM's small tier, max_num_seqs 256.
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


# --- SGLang: the state pool and the request ceiling it sets ----------------------------------------
# sglang-qwen3.5-moe-ktransformers-2x4090-tp2-hybrid.log (kvcache-ai/ktransformers#1870, Feb 2026,
# SGLang of the 0.5.9 line, tp 2, context 8192, experts on the CPU). Its state sizes single out
# Qwen3.5-397B-A17B's shapes: 45 Gated DeltaNet layers, 64 value heads of 128 (32 a rank) with an fp32
# SSM state, 2,097,152 B a layer, and a conv state of (2 x 2,048 + 8,192) / 2 = 6,144 channels x 3 x 2 B
# = 36,864 B: a slot is 45 x 2,134,016 = 96,030,720 B. The full layers: 15 of 2 KV heads of 256, one a
# rank, 15 x 1,024 = 15,360 B a token.
KT_LOG = "sglang-qwen3.5-moe-ktransformers-2x4090-tp2-hybrid.log"
SLOT, CELL = 96_030_720, 15_360


def kt_inputs(**more):
    values = dict(read_log((LOGS / KT_LOG).read_text(encoding="utf-8")).values)
    values.update({"hf-config": hf_fixture("Qwen__Qwen3.5-397B-A17B.json"), "engine-version": "0.5.9",
                   "gpu-memory-gib": "400"}, **more)
    return values


def test_sglang_state_pool_of_the_ktransformers_log():
    """The log's K + V (8.30 GB as SGLang prints GiB) is the full-attention pool; the state pool took
    r / (1 + r) of the rest beside it (--mamba-full-memory-ratio 0.9), so its slots are floor(8.30 GiB x
    0.9 / 96,030,720) = 83 or one fewer: 82, as printed, allocated with the padding row, 83 x 45 x
    36,864 B = 0.13 GB of conv and 83 x 45 x 2,097,152 B = 7.29 GB of SSM state."""
    reading = read_log((LOGS / KT_LOG).read_text(encoding="utf-8"))
    e = evaluate(kt_inputs(batch="1"))
    assert e.ok, e.errors
    engine = e.engine
    mamba_line = next(line for line in (LOGS / KT_LOG).read_text(encoding="utf-8").splitlines()
                      if "Mamba Cache is allocated" in line)
    assert mamba_line.endswith(engine.log[0])
    assert engine.log[0] == ("Mamba Cache is allocated. max_mamba_cache_size: 82, conv_state size: 0.13GB, "
                             "ssm_state size: 7.29GB ")
    low, high = engine.kv_tokens_range
    assert low <= reading.printed["kv_tokens"].value == 580_364 <= high
    assert "K size: 4.15 GB, V size: 4.15 GB" in engine.log[1]
    # The log ran max_running_requests=1: given, it stays 1 (82 // 3 = 27 would allow more).
    assert engine.max_concurrency == 1 and engine.starts is True
    default = evaluate(kt_inputs()).engine
    assert default.max_concurrency == 27          # 82 slots // 3 a request (0.5.9's no_buffer radix cache)
    assert any("caps max_running_requests at 27: its 82 state slots // 3" in n for n in default.notes)


@pytest.mark.parametrize("version,slots", [("0.5.9", 82), ("0.5.23", 81)])
def test_sglang_split_gives_the_log_back(version, slots):
    """The log's two pools summed are a rest memory that SGLang's split gives back: 0.5.9 keeps
    int(rest x 0.9 / 1.9 // 96,030,720) = 82 slots and 82 x 96,030,720 B, leaving the 580,364 tokens;
    0.5.17 on counts the padding slot (int((budget - slot) // slot) = 81 slots, 82 slots' bytes taken)."""
    model = model_from_config(hf_fixture("Qwen__Qwen3.5-397B-A17B.json"))
    rules = sglang.HybridRules(sglang_engine.parse_version(version), precision("bf16"), 8192, 1)
    rest = 580_364 * CELL + 82 * SLOT
    pool = sglang.mamba_pool(model, 2, rest, rules)
    assert (pool.slots, pool.slot_bytes, pool.rest_bytes // CELL) == (slots, SLOT, 580_364)


def test_sglang_refuses_when_the_state_pool_holds_no_request():
    """0.5.16 on, a state pool too small for one request (slots // slots a request = 0) is SGLang's
    RuntimeError; the verdict says how many slots and what raises them. The log's model with a full
    pool of 0.4 GiB: floor(0.4 GiB x 0.9 / 96,030,720) = 4 slots counted, 2 kept (0.5.17 on: the padding
    slot, and the lower of the two a full pool allows), 2 // 5 = 0 requests (0.5.23's extra_buffer)."""
    e = evaluate(kt_inputs(**{"engine-version": "0.5.23", "kv-memory-gib": "0.4"}))
    engine = e.engine
    assert engine.starts is False
    assert engine.refusal.startswith("RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve "
                                     "any requests. max_mamba_cache_size=2, mamba_ratio=5, resulting max_num_reqs=0.")
    assert engine.refusal_words.startswith("its state pool has 2 slots of 96,030,720 B, room for 0 requests of 5")


@pytest.mark.parametrize("version,requests,refuses", [("0.5.12", 0, False), ("0.5.13", 0, True)])
def test_sglang_no_state_slot_is_a_refusal_from_0_5_13(version, requests, refuses):
    """A full pool of 0.1 GiB leaves floor(0.1 GiB x 0.9 / 96,030,720) = 1 slot counted, 0 kept: 0.5.13
    on raises "Not enough GPU memory for hybrid (mamba/linear-attention) state cache"; 0.5.12 started
    with no request to run (its cap, 0 // 3, is said in a note)."""
    engine = evaluate(kt_inputs(**{"engine-version": version, "kv-memory-gib": "0.1"})).engine
    assert engine.max_concurrency == requests and engine.starts is not refuses
    if refuses:
        assert engine.refusal.startswith("RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) "
                                         "state cache. Computed max_mamba_cache_size=0 (total_rest_memory=")
    else:
        assert engine.refusal is None and any("caps max_running_requests at 0" in n for n in engine.notes)


def test_vllm_0_27_keeps_one_state_page_a_request():
    """vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log prints enable_prefix_caching=False: 0.26.0-0.27.x
    default prefix caching off for hybrids (arg_utils.py default_prefix_caching ... and not is_hybrid),
    so mamba_cache_mode stays "none", one state page a request. At tp 2 the block is 784 tokens and a
    block of the four 16-layer groups 25,690,112 B: 44.73 GiB holds 1,869 of them, a request at 65,536
    tokens keeps cdiv(65,536, 784) = 84 attention blocks + 3 state pages = 87: 21.48x and 1,407,894
    tokens as printed (align mode's 2 pages, 90 blocks, would print 20.77x)."""
    reading = read_log((LOGS / "vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log").read_text(encoding="utf-8"))
    engine = evaluate(dict(reading.values, model="Qwen/Qwen3.5-27B")).engine
    assert engine.max_concurrency == Fraction(1_869, 87)
    assert engine.kv_tokens == reading.printed["kv_tokens"].value == 1_407_894
    assert f"{float(engine.max_concurrency):.2f}" == "21.48" and engine.starts is True


def test_the_utilization_the_refusal_names_starts():
    """Where the KV memory is vLLM's estimate, the refusal names the --gpu-memory-utilization that
    buys the blocks: Qwen3.5-27B on an H200 at 0.28.0 (default max_num_seqs 1,024, blocks of
    51,380,224 B) needs 0.76 whatever it was given; at 0.76 it starts, at 0.75 it does not."""
    base = {"model": "Qwen/Qwen3.5-27B", "engine": "vllm", "engine-version": "0.28.0", "gpu": "h200-141gb",
            "context": "32768"}
    for given in ("0.5", "0.7"):
        words = evaluate({**base, "memory-utilization": given}).engine.refusal_words
        assert "(--gpu-memory-utilization 0.76)" in words and "max_num_seqs 1,024" in words
    assert evaluate({**base, "memory-utilization": "0.75"}).engine.starts is False
    at = evaluate({**base, "memory-utilization": "0.76"}).engine
    assert at.starts is True and at.refusal is None


def test_vllm_prefix_caching_given_keeps_two_state_pages_before_0_28():
    """vllm-qwen3.6-27b-fp8-h100-util088-4k-eager-v0.27.1.log passes --enable-prefix-caching (its
    non-default args): MambaModelConfig sets mamba_cache_mode "align" for Qwen3.5's Gated DeltaNet,
    two state pages a request. Its 41.03 GiB, 784-token blocks of 16 pages (51,380,224 B): 857 blocks;
    a request at 4,096 tokens keeps cdiv(4,096, 784) = 6 attention blocks + 3 x 2 state pages = 12:
    71.42x and 292,522 tokens as printed (one page, 9 blocks, would be 95.22x)."""
    reading = read_log((LOGS / "vllm-qwen3.6-27b-fp8-h100-util088-4k-eager-v0.27.1.log").read_text(encoding="utf-8"))
    assert reading.values["prefix-caching"] == "on"
    e = evaluate(dict(reading.values, model="Qwen/Qwen3.5-27B"))
    assert e.ok, e.errors
    assert e.engine.max_concurrency == Fraction(857, 12)
    assert e.engine.kv_tokens == reading.printed["kv_tokens"].value == 292_522
    assert " --enable-prefix-caching " in vllm_engine.launch(e.scenario, e).command + " "


def test_vllm_prefix_caching_on_a_mamba2_model_before_0_28_is_refused():
    """0.18.1-0.27.x give a model that implements SupportsMambaPrefixCaching (Nemotron-H, Jamba, Granite
    4, Falcon-H1 ...) mamba_cache_mode "all": a state page per block of the context, not modelled."""
    base = {"hf-config": hf_fixture("nvidia__Nemotron-H-56B-Base-8K.json"), "engine": "vllm",
            "kv-memory-gib": "20", "context": "8192", "prefix-caching": "on"}
    refused = evaluate({**base, "engine-version": "0.27.1"})
    assert [(err.field, "mamba_cache_mode all" in err.message) for err in refused.errors] == [("prefix-caching", True)]
    assert evaluate({**base, "engine-version": "0.28.0"}).ok
