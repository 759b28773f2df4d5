"""What llama.cpp prints of its KV cache and buffers, in its own format (src/llama-kv-cache.cpp
"llama_kv_cache: size = ...", src/llama-kv-cache-iswa.cpp, src/llama-context.cpp "compute buffer
size"), and our own size line read back for the figures compared beside a log's."""

import re
from fractions import Fraction

from .allocator import MIB

def compute_buffer_line(compute_bytes: int) -> str:
    # src/llama-context.cpp: "%10s compute buffer size = %8.2f MiB" per backend.
    return f"llama_context: {'CUDA0':>10s} compute buffer size = {compute_bytes / MIB:8.2f} MiB"


def log_lines(pool) -> list[str]:
    """The KV cache lines for this pool (allocator.Pool)."""
    lines = []
    seqs = f"{pool.seqs:2d}/{1 if pool.unified else pool.seqs}"
    for n, c in enumerate(pool.caches):
        if len(pool.caches) > 1:
            lines.append(f"llama_kv_cache_iswa: creating {'non-SWA' if n == 0 else '    SWA'} KV cache, "
                         f"size = {c.cells} cells")
        # src/llama-kv-cache.cpp: "size = %7.2f MiB (%6u cells, %3d layers, %2u/%u seqs), K (%s): %7.2f MiB, ..."
        lines.append(f"llama_kv_cache: size = {(c.k_bytes + c.v_bytes) / MIB:7.2f} MiB ({c.cells:6d} cells, "
                     f"{c.layers:3d} layers, {seqs} seqs), K ({pool.k_type}): {c.k_bytes / MIB:7.2f} MiB, "
                     f"V ({pool.v_type}): {c.v_bytes / MIB:7.2f} MiB")
    return lines


# Our own full cache's size line (log_lines): "llama_kv_cache: size = X MiB (N cells, L layers".
_OUR_SIZE = re.compile(r"llama_kv_cache: size = {0,8}(\d{1,12}\.\d\d) MiB \( {0,8}\d{1,12} cells, {0,8}(\d{1,6}) layers")


def _our_full_cache(result):
    return next((m for m in map(_OUR_SIZE.match, result.log or ()) if m), None)


def our_cache_mib(result):
    """The full cache's MiB as our llama_kv_cache line prints it (K + V of its buffers), or None."""
    found = _our_full_cache(result)
    return None if found is None else Fraction(found[1])


def our_cache_layers(result):
    found = _our_full_cache(result)
    return None if found is None else int(found[2])
