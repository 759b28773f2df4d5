"""SGLang's token pool (engines/sglang/allocator.py) and llama.cpp's cells (engines/llamacpp/
allocator.py), worked examples with exact bytes from real shapes (the presets' config.json):
their docstrings' examples and a split pool each.

SGLang: model_runner_kv_cache_mixin.py get_cell_size_per_token / profile_max_num_token /
set_num_tokens_hybrid_swa, mem_cache/memory_pool.py (tokens + page_size rows per layer; sizes
printed in GiB as "GB"). llama.cpp: src/llama-context.cpp (n_ctx padded to 256, n_ctx_seq),
src/llama-kv-cache.cpp (the size line), src/llama-kv-cache-iswa.cpp (the sliding cache)."""

from fractions import Fraction

from kvcalc.engines.llamacpp import allocator as llamacpp_allocator, printing as llamacpp_printing
from kvcalc.engines.sglang import allocator as sglang_allocator, printing as sglang_printing
from kvcalc.precision import precision
from kvcalc.readers.presets import preset_model

BF16, F16 = precision("bf16"), precision("fp16")
GIB = 1 << 30


def test_sglang_one_pool_llama_3_1_8b():
    """The allocator's docstring example: a cell is 32 x (2,048 + 2,048) = 131,072 B; 40 GiB is
    327,680 cells; 327,681 rows of K per layer = 20.00 GB printed; 10 requests of 32,768."""
    model = preset_model("meta-llama/Llama-3.1-8B")
    assert sglang_allocator.cell_bytes(model.layers, BF16, 1) == 131_072
    pool = sglang_allocator.allocate(model, BF16, 1, 1, 32_768, 40 * GIB)
    assert pool.kv_tokens == 40 * GIB // 131_072 == 327_680 and pool.swa_tokens is None
    assert pool.k_bytes == pool.v_bytes == 32 * 327_681 * 2_048 == 21_474_902_016
    assert pool.max_concurrency == 10 and pool.bytes_per_request == 32_768 * 131_072
    assert sglang_printing.log_lines(pool) == ["KV Cache is allocated. #tokens: 327680, K size: 20.00 GB, "
                                               "V size: 20.00 GB", "max_total_num_tokens=327680"]


def test_sglang_split_sliding_pool_gpt_oss_120b():
    """GptOss is a hybrid SWA architecture: a cell is 36 x 2,048 = 73,728 B, so 40 GiB is 582,542
    tokens, 20,971,512 layer-tokens; 18 full and 18 sliding layers share them as full x (0.8 x 18 +
    18): full int(20,971,512 / 32.4) = 647,268, sliding int(647,268 x 0.8) = 517,814. A request
    of 32,768 holds them all in the full layers and 128 in the sliding ones: 1,212,678,144 B."""
    model = preset_model("openai/gpt-oss-120b")
    pool = sglang_allocator.allocate(model, BF16, 1, 1, 32_768, 40 * GIB)
    assert (pool.kv_tokens, pool.swa_tokens) == (647_268, 517_814)
    assert pool.k_bytes == 18 * 1_024 * (647_269 + 517_815) == 21_474_828_288
    assert pool.bytes_per_request == 18 * 2_048 * (32_768 + 128) == 1_212_678_144
    assert pool.max_concurrency == Fraction(647_268, 32_768)
    assert sglang_printing.log_lines(pool)[0] == ("Use sliding window memory pool. full_layer_tokens=647268, "
                                                  "swa_layer_tokens=517814")


def test_llamacpp_streams_llama_3_1_8b():
    """The allocator's docstring example: -c 8192 -np 2 gives each sequence pad(4,096, 256) =
    4,096 cells in its own stream; K = V = 4,096 x 2 x 65,536 B = 512.00 MiB."""
    model = preset_model("meta-llama/Llama-3.1-8B")
    pool = llamacpp_allocator.allocate(model, F16, F16, 4_096, 2)
    assert pool.caches == (llamacpp_allocator.Cache(4_096, 32, 536_870_912, 536_870_912),)
    assert pool.bytes_total // pool.seqs == 536_870_912
    assert llamacpp_printing.log_lines(pool) == [
        "llama_kv_cache: size = 1024.00 MiB (  4096 cells,  32 layers,  2/2 seqs), K (f16):  512.00 MiB, "
        "V (f16):  512.00 MiB"]


def test_llamacpp_iswa_gemma_3_27b():
    """Gemma 3 is an iSWA architecture: its 10 full layers keep n_ctx_seq = 32,768 cells a stream,
    its 52 sliding ones pad(min(32,768, 1,024 + 512), 256) = 1,536; 16 KV heads of 128 in f16 are
    4,096 B of K a layer and cell: 10 x 4,096 x 32,768 x 2 = 2,560.00 MiB and 52 x 4,096 x 1,536 x
    2 = 624.00 MiB."""
    model = preset_model("google/gemma-3-27b-it")
    pool = llamacpp_allocator.allocate(model, F16, F16, 32_768, 2)
    full, sliding = pool.caches
    assert (full.cells, full.layers, full.k_bytes) == (32_768, 10, 2_684_354_560)
    assert (sliding.cells, sliding.layers, sliding.k_bytes) == (1_536, 52, 654_311_424)
    lines = llamacpp_printing.log_lines(pool)
    assert lines[0] == "llama_kv_cache_iswa: creating non-SWA KV cache, size = 32768 cells"
    assert lines[3] == ("llama_kv_cache: size = 1248.00 MiB (  1536 cells,  52 layers,  2/2 seqs), K (f16):  "
                        "624.00 MiB, V (f16):  624.00 MiB")
