"""vLLM's allocator (engines/vllm/allocator.py), one worked example per spec kind, each from a real
model's shape (the presets' config.json, or the config named), bf16, tp 1 unless said, 32,768 tokens
a request, a 2,048-token prefill chunk and 40 GiB of KV memory.

The rules are vLLM's: page_size_bytes and max_memory_usage_bytes per spec from
vllm/v1/kv_cache_interface.py; the groups, the page-size unification and the pool from
vllm/v1/core/kv_cache_utils.py (get_kv_cache_groups, _get_kv_cache_groups_uniform_page_size,
unify_kv_cache_spec_page_size, get_num_blocks, _report_kv_cache_config); a hybrid's block from
vllm/platforms/interface.py _align_hybrid_block_size."""

import dataclasses
from collections import Counter
from fractions import Fraction

import pytest

from kvcalc.engines.vllm import allocator, printing
from kvcalc.engines.vllm.allocator import (ChunkedLocalAttentionSpec, FullAttentionSpec, MambaSpec,
                                           MLAAttentionSpec, SlidingWindowSpec)
from kvcalc.errors import InputError
from kvcalc.precision import precision
from kvcalc.readers.hfconfig import model_from_config
from kvcalc.readers.gpu_presets import gpu
from kvcalc.readers.presets import preset_model

BF16 = precision("bf16")
GIB = 1 << 30
LEN, CHUNK, MEMORY = 32_768, 2_048, 40 * GIB


def specs(model, tp=1, block=16):
    found, block, lines = allocator.specs_of(model, BF16, BF16, tp, block)
    return Counter(found), block, lines


def test_full_attention_llama_3_1_8b():
    """FullAttentionSpec: 8 KV heads of 128, K and V in bf16 = 4,096 B a token, a 16-token page
    65,536 B; a request keeps cdiv(32,768, 16) = 2,048 pages, 134,217,728 B a layer. Every layer
    needs the same slots: one group, a block of all 32 layers' pages (2,097,152 B), so 40 GiB is
    20,480 blocks, 10 requests, 327,680 tokens."""
    model = preset_model("meta-llama/Llama-3.1-8B")
    found, _, _ = specs(model)
    assert found == {FullAttentionSpec(16, 4096): 32}
    spec = FullAttentionSpec(16, 4096)
    assert spec.page_size_bytes == 65_536
    assert spec.pages(LEN, CHUNK) == 2_048 and spec.max_memory_usage_bytes(LEN, CHUNK) == 134_217_728
    groups, padding = allocator.kv_groups(list(allocator.specs_of(model, BF16, BF16, 1, 16)[0]))
    assert len(groups) == 1 and groups[0].spec is None and padding == []
    pool, refusal, _, _ = allocator.allocate(model, BF16, 1, 1, LEN, CHUNK, 16, MEMORY)
    assert refusal is None and pool.num_blocks == MEMORY // (32 * 65_536) == 20_480
    assert pool.max_concurrency == 10 and pool.kv_tokens == 327_680
    assert pool.bytes_per_request == 32 * 134_217_728 == 4_294_967_296


def test_mla_deepseek_v3_on_hopper():
    """MLAAttentionSpec: kv_lora_rank 512 + qk_rope_head_dim 64 = 576 bf16 values, 1,152 B a token,
    whole on every rank of tp 8; FlashMLA on an H100 takes 64-token pages, 73,728 B; a request
    keeps 512 pages, 37,748,736 B a layer, x 61 = 2,302,672,896 B. 40 GiB // (61 x 73,728) = 9,549
    blocks: 9,549 / 512 = 18.65 requests, 611,136 tokens."""
    model = preset_model("deepseek-ai/DeepSeek-V3")
    assert allocator.block_size_for(model, gpu("h100-sxm-80gb"), None)[0] == allocator.FLASH_MLA_BLOCK == 64
    assert allocator.block_size_for(model, gpu("l4-24gb"), None) == (16, None)
    found, _, _ = specs(model, tp=8, block=64)
    assert found == {MLAAttentionSpec(64, 1152): 61}
    spec = MLAAttentionSpec(64, 1152)
    assert spec.page_size_bytes == 73_728 and spec.max_memory_usage_bytes(LEN, CHUNK) == 512 * 73_728 == 37_748_736
    # A latent page is never a plain attention page: a type of its own.
    assert spec != FullAttentionSpec(64, 1152) and spec.token_slots() != FullAttentionSpec(64, 1152).token_slots()
    pool, refusal, _, _ = allocator.allocate(model, BF16, 8, 1, LEN, CHUNK, 64, MEMORY)
    assert refusal is None and pool.num_blocks == 9_549 and pool.max_concurrency == Fraction(9_549, 512)
    assert pool.kv_tokens == 611_136 and pool.bytes_per_request == 2_302_672_896


def test_sliding_window_gpt_oss_120b():
    """SlidingWindowSpec: 8 KV heads of 64 = 2,048 B a token, 32,768 B a page; a window of 128
    keeps cdiv(min(127 + 2,048, 32,768), 16) + 1 = 137 pages, 4,489,216 B. 18 sliding and 18 full
    layers: two groups of 18; a block is 18 x 32,768 = 589,824 B and a request 2,048 + 137 =
    2,185 of them, 1,288,765,440 B; 40 GiB holds 72,817 blocks, 33.33 requests."""
    model = preset_model("openai/gpt-oss-120b")
    found, _, _ = specs(model)
    assert found == {SlidingWindowSpec(16, 2048, 128): 18, FullAttentionSpec(16, 2048): 18}
    spec = SlidingWindowSpec(16, 2048, 128)
    assert spec.page_size_bytes == 32_768 and spec.pages(LEN, CHUNK) == 137
    assert spec.max_memory_usage_bytes(LEN, CHUNK) == 4_489_216
    # A context shorter than the window keeps at most max_model_len tokens, plus one page: 100 -> 8.
    assert spec.pages(100, CHUNK) == 8
    groups, padding = allocator.kv_groups(allocator.specs_of(model, BF16, BF16, 1, 16)[0])
    assert [len(g.layers) for g in groups] == [18, 18] and padding == []
    pool, refusal, _, _ = allocator.allocate(model, BF16, 1, 1, LEN, CHUNK, 16, MEMORY)
    assert refusal is None and pool.num_blocks == MEMORY // 589_824 == 72_817
    assert pool.max_concurrency == Fraction(72_817, 2_185) and pool.bytes_per_request == 1_288_765_440


def test_sliding_groups_padded_gemma_3_27b():
    """kv_groups' docstring example: Gemma 3 27B's 52 sliding (1,024) and 10 full layers, 16 KV
    heads of 128 (131,072 B pages); groups of 10, the sliding layers in 6 groups with 8 padding
    layers (15.38%); a request keeps 2,048 + 6 x 193 = 3,206 blocks of 1,310,720 B =
    4,202,168,320 B; 40 GiB is 32,768 blocks, 10.22 requests."""
    model = preset_model("google/gemma-3-27b-it")
    layer_specs = allocator.specs_of(model, BF16, BF16, 1, 16)[0]
    assert Counter(layer_specs) == {SlidingWindowSpec(16, 8192, 1024): 52, FullAttentionSpec(16, 8192): 10}
    assert SlidingWindowSpec(16, 8192, 1024).pages(LEN, CHUNK) == 193
    groups, padding = allocator.kv_groups(layer_specs)
    assert sorted(len(g.layers) for g in groups) == [8, 8, 9, 9, 9, 9, 10]
    assert [(added, round(percent, 2)) for added, percent in padding] == [(8, 15.38)]
    pool, refusal, _, _ = allocator.allocate(model, BF16, 1, 1, LEN, CHUNK, 16, MEMORY)
    assert refusal is None and pool.groups == 7 and pool.num_blocks == 32_768
    assert pool.bytes_per_request == 10 * 131_072 * 3_206 == 4_202_168_320
    assert pool.max_concurrency == Fraction(32_768, 3_206) and pool.kv_tokens == 334_916
    lines = printing.log_lines(pool, None, MEMORY, LEN)
    assert lines == ["Available KV cache memory: 40.0 GiB",
                     "Add 8 padding layers, may waste at most 15.38% KV cache memory",
                     "GPU KV cache size: 334,916 tokens",
                     "Maximum concurrency for 32,768 tokens per request: 10.22x"]


# Llama 4 Scout's text_config (huggingface.co/meta-llama/Llama-4-Scout-17B-16E-Instruct config.json):
# 48 layers, 8 KV heads of 128, chunked local attention over 8,192 tokens, every fourth layer global.
SCOUT = {"model_type": "llama4", "text_config": {
    "model_type": "llama4_text", "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
    "head_dim": 128, "hidden_size": 5120, "attention_chunk_size": 8192}}


def test_chunked_local_llama_4_scout():
    """ChunkedLocalAttentionSpec: 4,096 B a token, 65,536 B a page; a request keeps
    cdiv(min(8,192 + 2,048, 32,768), 16) = 640 pages (no extra page: a chunk starts at a page's
    edge), 41,943,040 B. 36 chunked and 12 full layers: groups of 12, three chunked and one full;
    a request 2,048 + 3 x 640 = 3,968 blocks of 786,432 B = 3,120,562,176 B."""
    model = model_from_config(SCOUT)
    found, _, _ = specs(model)
    assert found == {ChunkedLocalAttentionSpec(16, 4096, 8192): 36, FullAttentionSpec(16, 4096): 12}
    spec = ChunkedLocalAttentionSpec(16, 4096, 8192)
    assert spec.page_size_bytes == 65_536 and spec.pages(LEN, CHUNK) == 640
    assert spec.max_memory_usage_bytes(LEN, CHUNK) == 41_943_040
    groups, _ = allocator.kv_groups(allocator.specs_of(model, BF16, BF16, 1, 16)[0])
    assert [type(g.spec).__name__ for g in groups] == ["ChunkedLocalAttentionSpec"] * 3 + ["FullAttentionSpec"]
    pool, refusal, _, _ = allocator.allocate(model, BF16, 1, 1, LEN, CHUNK, 16, MEMORY)
    assert refusal is None and pool.num_blocks == MEMORY // 786_432 == 54_613
    assert pool.bytes_per_request == 12 * 65_536 * 3_968 == 3_120_562_176


def test_mamba_qwen3_next_80b():
    """MambaSpec: Qwen3-Next's gated-delta-net state is 1,097,728 B a layer; its one full-attention
    token 2,048 B (2 KV heads of 256). The block grows to 16 x cdiv(1,097,728, 16 x 2,048) = 544
    tokens, and the state page is padded to 544 x 2,048 = 1,114,112 B (1.49%); prefix caching's
    align mode keeps 2 state pages a request, 2,228,224 B. 36 state and 12 full layers: groups of
    12; a request 61 + 3 x 2 = 67 blocks of 12 x 1,114,112 B = 895,746,048 B."""
    model = preset_model("Qwen/Qwen3-Next-80B-A3B-Instruct")
    assert [layer.state_bytes(BF16, 1) for layer in model.layers if layer.kind == "state"][0] == 1_097_728
    found, block, lines = specs(model)
    assert block == 544
    assert found == {MambaSpec(544, 1_114_112, allocator.MAMBA_ALIGN_PAGES): 36, FullAttentionSpec(544, 2048): 12}
    assert lines == ["Setting attention block size to 544 tokens to ensure that attention page size is >= mamba "
                     "page size.",
                     "Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are "
                     "exactly equal."]
    spec = MambaSpec(544, 1_114_112, allocator.MAMBA_ALIGN_PAGES)
    assert spec.pages(LEN, CHUNK) == spec.pages(1, CHUNK) == 2
    assert spec.max_memory_usage_bytes(LEN, CHUNK) == 2_228_224
    assert MambaSpec(544, 1_114_112, allocator.MAMBA_NONE_PAGES).max_memory_usage_bytes(LEN, CHUNK) == 1_114_112
    assert FullAttentionSpec(544, 2048).pages(LEN, CHUNK) == 61
    pool, refusal, _, _ = allocator.allocate(model, BF16, 1, 1, LEN, CHUNK, 16, MEMORY)
    assert refusal is None and pool.block_size == 544 and pool.groups == 4
    assert pool.bytes_per_request == 12 * 1_114_112 * 67 == 895_746_048
    assert pool.num_blocks == MEMORY // (12 * 1_114_112) == 3_212


def test_smaller_pages_grow_their_block_and_unequal_ones_refuse():
    """unify_kv_cache_spec_page_size: a sliding layer of half the page (2,048 B a token beside
    4,096) grows its block to 32 tokens, so both pages are 65,536 B; a page that does not divide
    the largest cannot be unified, and vLLM does not start."""
    groups, _ = allocator.kv_groups([FullAttentionSpec(16, 4096), SlidingWindowSpec(16, 2048, 4096)])
    assert {g.spec for g in groups} == {FullAttentionSpec(16, 4096), SlidingWindowSpec(32, 2048, 4096)}
    assert SlidingWindowSpec(32, 2048, 4096).page_size_bytes == 65_536
    with pytest.raises(InputError, match="cannot unify"):
        allocator.kv_groups([FullAttentionSpec(16, 4096), SlidingWindowSpec(16, 3072, 4096)])


def test_specs_are_frozen_values():
    """Specs are values, as vLLM's frozen dataclasses: equal specs share a group, none changes."""
    spec = SlidingWindowSpec(16, 2048, 128)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.window = 256
    assert spec == SlidingWindowSpec(16, 2048, 128) and hash(spec) == hash(SlidingWindowSpec(16, 2048, 128))
