"""What SGLang prints while it sizes its token pool, in its own words and rounding
(mem_cache/memory_pool.py MHATokenToKVPool / MLATokenToKVPool._create_buffers: sizes in GiB
printed as "GB"; SWAKVPool's split; model_runner.py max_total_num_tokens; the refusal of
profile_max_num_token)."""

from ...units import GIB

NOT_ENOUGH_MEMORY = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."


def log_lines(pool) -> list[str]:
    """The lines for this pool (allocator.Pool)."""
    lines = []
    if pool.swa_tokens is not None:
        lines.append(f"Use sliding window memory pool. full_layer_tokens={pool.kv_tokens}, "
                     f"swa_layer_tokens={pool.swa_tokens}")
    if pool.mla:
        lines.append(f"KV Cache is allocated. #tokens: {pool.kv_tokens}, KV size: {pool.k_bytes / GIB:.2f} GB")
    else:
        lines.append(f"KV Cache is allocated. #tokens: {pool.kv_tokens}, K size: {pool.k_bytes / GIB:.2f} GB, "
                     f"V size: {pool.v_bytes / GIB:.2f} GB")
    lines.append(f"max_total_num_tokens={pool.kv_tokens}")
    return lines
