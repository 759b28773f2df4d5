"""The two figures vLLM prints for a hybrid (Gated DeltaNet / Mamba + full attention) model's pool,
"GPU KV cache size: N tokens" and "Maximum concurrency for L tokens per request: C x", release by
release, each worked from a real public log (tests/fixtures/logs, URLs in SOURCES.md).

- The concurrency (vllm/v1/core/kv_cache_utils.py get_max_concurrency_for_kv_cache_config, the same
  in every wheel read from 0.10.2 to 0.27.1): the pool's num_blocks over the blocks one request at
  max_model_len needs, cdiv(L, attention block) for the full-attention group plus the state pages of
  each Mamba group (1 with prefix caching off, mamba_cache_mode "none"; 2 in "align", which
  --enable-prefix-caching turns on: vllm/model_executor/models/config.py MambaModelConfig).
- The token count (_report_kv_cache_config): to 0.20.0, num_blocks // groups x the smallest group
  block (a Mamba group's is max_model_len in "none" mode); from 0.20.1, int(concurrency x L)
  (allocator.printed_tokens).
- The attention block grows until one attention page holds a state page
  (HybridAttentionMambaModelConfig.verify_and_update_config): 16 x cdiv(state page, 16 x one token).
"""

from fractions import Fraction
from pathlib import Path

from kvcalc.engines import releases
from kvcalc.engines.vllm import allocator
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def sized(values: dict):
    evaluation = evaluate(values)
    assert evaluation.ok, evaluation.errors
    return evaluation.engine


def printed_concurrency(engine) -> str:
    return f"{float(engine.max_concurrency):.2f}"      # "%.2fx" as vLLM logs it


def pasted(name: str, model: dict) -> dict:
    """The inputs the pasted log implies, its local checkpoint given as the preset of its geometry."""
    reading = read_log((LOGS / name).read_text(encoding="utf-8"), "vllm")
    return dict(reading.values) | model


# --- vLLM 0.27.1: Qwen3.6-27B-FP8 on an H100, --enable-prefix-caching, 4,096 tokens -------------------
H100_LOG = "vllm-qwen3.6-27b-fp8-h100-util088-4k-eager-v0.27.1.log"
H100 = {"engine": "vllm", "engine-version": "0.27.1", "model": "Qwen/Qwen3.5-27B", "weights-dtype": "fp8",
        "gpu": "h100-sxm-80gb", "context": "4096", "memory-utilization": "0.88", "prefill-chunk": "4096",
        "batch": "32", "enforce-eager": "on"}


def test_h100_0_27_1_prefix_caching_keeps_two_state_pages():
    """41.03 GiB of KV; a 784-token block (the log's "Setting attention block size to 784 tokens":
    the fp32 state page, 3,207,168 B, over 16 x 4,096 B a token) is 16 layers x 3,211,264 B, so 857
    blocks. A request at 4,096 tokens needs cdiv(4,096, 784) = 6 attention blocks and, prefix caching
    on, 2 state pages in each of the 3 Gated DeltaNet groups: 12. 857 / 12 = 71.42x, and 0.27.1
    prints int(857 / 12 x 4,096) = 292,522 tokens. Typed without --enable-prefix-caching (one state
    page, 9 blocks a request) the same memory would print 390,030 and 95.22x."""
    text = (LOGS / H100_LOG).read_text(encoding="utf-8")
    assert "GPU KV cache size: 292,522 tokens" in text and "4,096 tokens per request: 71.42x" in text
    assert "'enable_prefix_caching': True" in text
    on = sized(H100 | {"prefix-caching": "on", "kv-memory-gib": "41.03"})
    assert on.block_size == 784 and on.max_concurrency == Fraction(857, 12)
    assert on.kv_tokens == 292_522 and printed_concurrency(on) == "71.42"
    off = sized(H100 | {"kv-memory-gib": "41.03"})
    assert off.max_concurrency == Fraction(857, 9) and off.kv_tokens == 390_030
    log = sized(pasted(H100_LOG, {"model": "Qwen/Qwen3.5-27B"}))
    assert (log.kv_tokens, printed_concurrency(log)) == (292_522, "71.42")


# --- vLLM 0.24.0: Qwen3.6-35B-A3B NVFP4 on an RTX 5090, fp8 KV, prefix caching, 131,072 tokens ---------
R5090_LOG = "vllm-qwen3.6-35b-a3b-nvfp4-5090-fp8kv.log"
R5090 = {"engine": "vllm", "engine-version": "0.24.0", "model": "Qwen/Qwen3.6-35B-A3B", "weights-dtype": "nvfp4",
         "kv-dtype": "fp8", "gpu": "rtx-5090-32gb", "context": "131072", "prefill-chunk": "8192", "batch": "1"}


def test_rtx5090_0_24_0_counts_concurrency_times_length():
    """2 KV heads x 256 x 2 x 1 B (fp8) = 1,024 B a token; the 2,146,304 B state page grows the block
    to 16 x cdiv(2,146,304, 16,384) = 2,096. 5.98 GiB holds 299 blocks of 10 layers x 2,146,304 B; a
    request needs cdiv(131,072, 2,096) = 63 + 3 groups x 2 state pages = 69 blocks: 299 / 69 = 4.33x,
    and 0.24.0 (after 0.20.1) prints int(299 / 69 x 131,072) = 567,978 tokens, not 299 // 4 x 2,096."""
    text = (LOGS / R5090_LOG).read_text(encoding="utf-8")
    assert "GPU KV cache size: 567,978 tokens" in text and "131,072 tokens per request: 4.33x" in text
    on = sized(R5090 | {"prefix-caching": "on", "kv-memory-gib": "5.98"})
    assert on.block_size == 2096 and on.max_concurrency == Fraction(299, 69)
    assert on.kv_tokens == 567_978 and printed_concurrency(on) == "4.33"
    assert 299 // 4 * 2096 != 567_978
    off = sized(R5090 | {"kv-memory-gib": "5.98"})
    assert off.max_concurrency == Fraction(299, 66) and off.kv_tokens == 593_795
    log = sized(pasted(R5090_LOG, {"model": "Qwen/Qwen3.6-35B-A3B", "weights-dtype": "nvfp4"}))
    assert (log.kv_tokens, printed_concurrency(log)) == (567_978, "4.33")


# --- vLLM 0.19.0: Qwen3.5-27B on an H20, 32,768 tokens (vllm-project/vllm#40691) ---------------------
H20_LOG = "vllm-qwen3.5-27b-h20-hybrid.log"
# The log prints no KV memory: 1,487 blocks is the one count both lines allow (371 x 784 = 290,864 and
# 1,487 / 45 = 33.04), 1,487 x 16 x 3,211,264 B = 71.155 GiB, typed as 71.16 (the corpus row's notes).
H20 = {"engine": "vllm", "engine-version": "0.19.0", "model": "Qwen/Qwen3.5-27B", "gpu": "h20-96gb",
       "gpu-memory-gib": "139.81", "context": "32768", "batch": "16", "prefill-chunk": "16384",
       "kv-memory-gib": "71.16"}


def test_h20_0_19_0_counts_blocks_over_groups():
    """Prefix caching off at 0.19.0 (the hybrid default): 4 groups (16 attention layers, 48 Gated
    DeltaNet layers in 3 groups of 16), one state page a request each, so a request needs
    cdiv(32,768, 784) = 42 + 3 = 45 blocks: 1,487 / 45 = 33.04x. 0.19.0 prints 1,487 // 4 x 784 =
    290,864 tokens (the smallest group block: the attention's 784, the state groups' being
    max_model_len); 0.20.0 still does; 0.20.1 prints int(1,487 / 45 x 32,768) = 1,082,800."""
    text = (LOGS / H20_LOG).read_text(encoding="utf-8")
    assert "GPU KV cache size: 290,864 tokens" in text and "32,768 tokens per request: 33.04x" in text
    engine = sized(H20)
    assert engine.block_size == 784 and engine.max_concurrency == Fraction(1487, 45)
    assert engine.kv_tokens == 290_864 and printed_concurrency(engine) == "33.04"
    assert sized(H20 | {"engine-version": "0.20.0"}).kv_tokens == 290_864
    assert sized(H20 | {"engine-version": "0.20.1"}).kv_tokens == 1_082_800


def test_h20_short_context_counts_the_state_groups_max_model_len():
    """In "none" mode a state group's spec block is max_model_len (mamba_block_size, 0.19.0
    model_executor/models/config.py), so below the 784-token attention block it is the smallest:
    the H20 log's 1,487 blocks at 512 tokens print 1,487 // 4 x 512 = 189,952 tokens (one attention
    block + 3 state pages a request, 1,487 / 4 = 371.75x). With prefix caching on (align) the state
    block is the attention block's."""
    engine = sized(H20 | {"context": "512"})
    assert engine.max_concurrency == Fraction(1487, 4) and engine.kv_tokens == 371 * 512 == 189_952
    version = releases.pep440("0.19.0")
    assert allocator.printed_tokens(1487, 4, 4, 784, 512, version, mamba_none=False) == 371 * 784


def test_h20_typed_on_the_141_gb_card():
    """Typed as launched on the 141 GB H20 (the corpus row), the estimate overhead gives 1,504 blocks
    (1,511 before the weights counted their M-RoPE cache and allocator blocks, quantized_bytes.
    vllm_loaded_extra; 1,508 before the encoder pass kept its image's pixel values, encoder_profile.py):
    294,784 tokens (376 x 784) and 33.42x, 1.3% and 1.2% over the log's 290,864 and 33.04x."""
    engine = sized({k: v for k, v in H20.items() if k != "kv-memory-gib"})
    assert engine.max_concurrency == Fraction(1504, 45) and engine.kv_tokens == 1504 // 4 * 784 == 294_784


def test_from_0_20_1_the_count_keeps_the_float_division():
    """0.20.1's int(max_concurrency * max_model_len) multiplies a Python float: 1 block over 49 a
    request at 49 tokens is 0.999..., printed 0, where exact arithmetic would give 49 / 49 = 1."""
    version = releases.pep440("0.20.1")
    assert allocator.printed_tokens(1, 49, 2, 16, 49, version) == 0
    assert allocator.printed_tokens(857, 12, 4, 784, 4096, version) == 292_522


# --- vLLM 0.25.1: Gemma 4 26B-A4B (sliding + full) on a DGX Spark, 262,144 tokens -----------------------
GEMMA4_LOG = "vllm-gemma4-26b-a4b-awq-int4-dgx-spark-util085-262k-v0.25.1.log"
GEMMA4 = {"engine": "vllm", "engine-version": "0.25.1", "model": "google/gemma-4-26B-A4B", "weights-dtype": "int4",
          "gpu": "dgx-spark-128gb", "context": "262144", "memory-utilization": "0.85", "batch": "32"}


def test_gemma4_dgx_spark_batches_2496_tokens_a_step():
    """The log gives no --max-num-batched-tokens and prints max_num_batched_tokens=2496: GB10's NVML
    has no memory query, so vLLM's batch defaults put the 128 GB DGX Spark on the small tier (2,048;
    release._big) and Gemma 4, whose multimodal items may not be chunked, raises it to its largest
    item, a 32-frame video of 78 tokens a frame (release.mm_batch_floor). The step's size is what a
    sliding layer's request holds (cdiv(1,023 + chunk, 16) + 1 pages of its 1,024-token window), so
    with the log's 83.89 GiB it decides the count: 14.78x and 3,875,400 tokens within the range the
    2-decimal GiB leaves, where the big tier's 8,192 would print 12.41x."""
    text = (LOGS / GEMMA4_LOG).read_text(encoding="utf-8")
    assert "max_num_batched_tokens=2496" in text and "'max_num_batched_tokens'" not in text
    assert "GPU KV cache size: 3,875,400 tokens" in text and "262,144 tokens per request: 14.78x" in text
    engine = sized(GEMMA4 | {"kv-memory-gib": "83.89"})
    assert engine.prefill_chunk == 2496 == 32 * (70 + 2 + 6)
    low, high = engine.kv_tokens_range
    assert low <= 3_875_400 <= high and printed_concurrency(engine) == "14.78"
    big = sized(GEMMA4 | {"kv-memory-gib": "83.89", "prefill-chunk": "8192"})
    assert printed_concurrency(big) == "12.41"


def test_dgx_spark_0_13_0_defaults_to_the_small_tier():
    """vllm-gpt-oss-20b-dgx-spark-util025-8k-v0.13.0-nv26.01.log passes no batch flags and prints
    max_num_batched_tokens=2048: the small tier, though GB10 has 128 GB."""
    text = (LOGS / "vllm-gpt-oss-20b-dgx-spark-util025-8k-v0.13.0-nv26.01.log").read_text(encoding="utf-8")
    assert "max_num_batched_tokens=2048" in text and "'max_num_batched_tokens'" not in text
    engine = sized({"engine": "vllm", "engine-version": "0.13.0", "model": "openai/gpt-oss-20b",
                    "gpu": "dgx-spark-128gb", "context": "8192", "memory-utilization": "0.25"})
    assert engine.prefill_chunk == 2048


def test_a_log_without_its_release_reads_the_older_count_in_the_notes():
    """vllm-qwen3-next-80b-awq-tp2-l40s-fp8-v0.13.log prints no release (its repository runs 0.13.0)
    and 767,552 tokens beside 84.29x for 32,768 tokens. Pasted as it is, the newest release's count
    (int(2,865 / 34 x 32,768) = 2,761,185) is the figure, and the notes give what a release before
    0.20.1 prints for the same pool, the log's own: 2,865 blocks // 4 groups x 1,072 = 767,552. Given
    0.13.0, that is the figure and the note goes."""
    text = (LOGS / "vllm-qwen3-next-80b-awq-tp2-l40s-fp8-v0.13.log").read_text(encoding="utf-8")
    assert "GPU KV cache size: 767,552 tokens" in text and "32,768 tokens per request: 84.29x" in text
    values = pasted("vllm-qwen3-next-80b-awq-tp2-l40s-fp8-v0.13.log",
                    {"model": "Qwen/Qwen3-Next-80B-A3B-Instruct", "tp": "2", "gpus": "2", "kv-dtype": "fp8"})
    values.pop("measured-with")
    # The log's source lines are 0.13.0's (engines/vllm/log.py _release_from_lines): without them,
    assert values.pop("engine-version") == "0.13.0"
    newest = sized(values)
    assert newest.block_size == 1072 and newest.max_concurrency == Fraction(2865, 34)
    assert newest.kv_tokens == 2_761_185
    assert any("2,865 // 4 x 1,072 = 767,552 tokens" in note for note in newest.notes)
    given = sized(values | {"engine-version": "0.13.0"})
    assert given.kv_tokens == 767_552 and not any("before 0.20.1" in note for note in given.notes)


def test_prefix_caching_align_mode_from_0_17_0_on_a_0_18_1_dev_build():
    """vllm-qwen3.5-35b-a3b-fp8-dgx-spark-tp1-util08-262k-v0.18.1rc1.log (a 0.18.1rc1 dev build, between
    0.18.0 and 0.18.1, whose MambaModelConfig is the same as in the 0.17.0 and 0.18.1 wheels) passes
    --enable-prefix-caching: align mode, two state pages a request. 55.72 GiB holds 2,766 blocks of
    1,056 tokens; a request at 262,144 tokens needs cdiv(262,144, 1,056) = 249 + 3 groups x 2 = 255:
    10.85x (one page each, 252, would be 10.98x). The release counts tokens as 2,766 // 4 x 1,056 =
    729,696, the same either way."""
    name = "vllm-qwen3.5-35b-a3b-fp8-dgx-spark-tp1-util08-262k-v0.18.1rc1.log"
    text = (LOGS / name).read_text(encoding="utf-8")
    assert "GPU KV cache size: 729,696 tokens" in text and "262,144 tokens per request: 10.85x" in text
    values = pasted(name, {})
    assert values["prefix-caching"] == "on"
    engine = sized(values)
    assert engine.block_size == 1056 and engine.max_concurrency == Fraction(2766, 255)
    assert (engine.kv_tokens, printed_concurrency(engine)) == (729_696, "10.85")
    off = sized(values | {"prefix-caching": "off"})
    assert (off.kv_tokens, printed_concurrency(off)) == (729_696, "10.98")
