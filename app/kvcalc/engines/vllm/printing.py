"""What vLLM prints while it sizes its KV cache, in its own words and rounding: the V1 lines
(vllm/v1/core/kv_cache_utils.py _report_kv_cache_config, gpu_worker.py's "Available KV cache
memory"), V0's (executor_base.py, worker.py), the hybrid block lines
(vllm/platforms/interface.py) and the refusals (_check_enough_kv_cache_memory)."""

from ...units import GIB
from . import release as rules


def format_gib(n: int) -> str:
    # vllm/utils/mem_utils.py format_gib: round(GiB, 2) as Python prints it ("24.0", "4.54").
    return str(round(n / GIB, 2))


NO_MEMORY_REFUSAL = ("ValueError: No available memory for the cache blocks. Try increasing "
                     "`gpu_memory_utilization` when initializing the engine.")


def too_long_refusal(model_len: int, needed: int, available: int, longest: int) -> str:
    """_check_enough_kv_cache_memory: one request at max_model_len needs more than there is, with
    the longest length it estimates fits (_estimate_max_model_len_from_groups) when one does."""
    estimate = (f"Based on the available memory, the estimated maximum model length is {longest}. "
                if longest > 0 else "")
    return (f"ValueError: To serve at least one request with the models's max seq len ({model_len}), "
            f"({format_gib(needed)} GiB KV cache is needed, which is larger than the available KV cache "
            f"memory ({format_gib(available)} GiB). {estimate}Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")


def attention_block_line(block_size: int) -> str:
    return (f"Setting attention block size to {block_size} tokens to ensure that attention page "
            "size is >= mamba page size.")


# kv_cache_utils.py unify_hybrid_kv_cache_specs (0.10.2-0.32.x; kv_cache_planning.py from 0.33.0), verbatim.
HMA_DISABLED_LINE = ("Hybrid KV cache manager is disabled for this hybrid model, This means we do not enable any "
                     "optimizations for saving KV cache memory (e.g., dropping the KV cache outside the sliding "
                     "window). The compute of layers like sliding window is still saved.")


def kept_layers_block_line(block_size: int) -> str:
    # vllm/platforms/interface.py _align_heterogeneous_kv_block_size's logger.info (0.34.0).
    return (f"Setting attention block size to {block_size} tokens so the quantized primary KV page covers the "
            "higher-precision padded-spec page.")


def mamba_padding_line(padded: int, state_page: int) -> str:
    return (f"Padding mamba page size by {100 * (padded - state_page) / state_page:.2f}% to ensure "
            "that mamba page size and attention page size are exactly equal.")


def log_lines(pool, refusal: str | None, available_bytes: int, model_len: int,
              config_lines=(), release=None, swap_blocks: int | None = None) -> list[str]:
    """The start-up lines for this pool (allocator.Pool, or None when it refuses)."""
    lines = list(config_lines)
    if release is not None and not rules.v1(release):
        return _v0_lines(pool, refusal, available_bytes, model_len, release, swap_blocks)
    lines.append(f"Available KV cache memory: {format_gib(available_bytes)} GiB")
    if pool is not None:
        for added, percent in pool.padding:
            lines.append(f"Add {added} padding layers, may waste at most {percent:.2f}% KV cache memory")
        lines.append(f"GPU KV cache size: {pool.kv_tokens:,} tokens")
        lines.append(f"Maximum concurrency for {model_len:,} tokens per request: {float(pool.max_concurrency):.2f}x")
    if refusal:
        lines.append(refusal)
    return lines


def _v0_lines(pool, refusal, available_bytes: int, model_len: int, release, swap_blocks) -> list[str]:
    """V0's executor_base.py lines: the block counts (GPU, then cuda, then CUDA by release) and
    num_blocks x block_size / max_model_len as its concurrency."""
    word = "GPU" if not release.at_least(0, 7, 0) else "cuda" if not release.at_least(0, 8, 0) else "CUDA"
    # 0.6.5 on (worker.py): "... the rest of the memory reserved for KV Cache is X GiB."
    lines = [f"the rest of the memory reserved for KV Cache is {available_bytes / GIB:.2f}GiB."] \
        if release.at_least(0, 6, 5) else []
    blocks, block = (0, 0) if pool is None else (pool.num_blocks, pool.block_size)
    lines.append(f"# {word} blocks: {blocks}, # CPU blocks: {swap_blocks}")
    lines.append(f"Maximum concurrency for {model_len} tokens per request: {blocks * block / model_len:.2f}x")
    if refusal:
        lines.append(refusal)
    return lines
