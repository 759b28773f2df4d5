"""GGUF files for the tests, written with llama.cpp's own `gguf` package (GGUFWriter). Only
the header is written; the file is extended to its full size without data (sparse), so a
5 GB checkpoint costs a few megabytes of disk."""

import os

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T


def write(path, arch: str, meta: list, tensors: list):
    """A GGUF file: `meta` as (GGUFWriter method, value) pairs, `tensors` as (name, shape in
    rows x columns, ggml type)."""
    path = str(path)
    w = gguf.GGUFWriter(path, arch)
    for method, *args in meta:
        getattr(w, method)(*args)
    total = 0
    for name, shape, qtype in tensors:
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        n = int(np.prod(shape))
        nbytes = n // block * size
        if qtype == T.F32:
            w.add_tensor_info(name, shape, np.dtype(np.float32), nbytes)
        elif qtype == T.F16:
            w.add_tensor_info(name, shape, np.dtype(np.float16), nbytes)
        else:
            byte_shape = tuple(shape[:-1]) + (shape[-1] // block * size,)
            w.add_tensor_info(name, byte_shape, np.dtype(np.uint8), nbytes, raw_dtype=qtype)
        total += -(-nbytes // 32) * 32
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    header = os.path.getsize(path)
    os.truncate(path, -(-header // 32) * 32 + total)
    return path


def llama_8b(path):
    """Llama 3.1 8B's shape in a Q4_K_M-like mix (Q4_K, Q6_K for V, FFN down and output)."""
    meta = [("add_block_count", 32), ("add_context_length", 131072), ("add_embedding_length", 4096),
            ("add_feed_forward_length", 14336), ("add_head_count", 32), ("add_head_count_kv", 8),
            ("add_key_length", 128), ("add_value_length", 128), ("add_name", "Meta Llama 3.1 8B Instruct"),
            ("add_token_list", [f"t{i}" for i in range(128256)])]
    tensors = [("token_embd.weight", (128256, 4096), T.Q4_K)]
    for i in range(32):
        for name, shape, qtype in (("attn_q", (4096, 4096), T.Q4_K), ("attn_k", (1024, 4096), T.Q4_K),
                                   ("attn_v", (1024, 4096), T.Q6_K), ("attn_output", (4096, 4096), T.Q4_K),
                                   ("ffn_gate", (14336, 4096), T.Q4_K), ("ffn_up", (14336, 4096), T.Q4_K),
                                   ("ffn_down", (4096, 14336), T.Q6_K), ("attn_norm", (4096,), T.F32),
                                   ("ffn_norm", (4096,), T.F32)):
            tensors.append((f"blk.{i}.{name}.weight", shape, qtype))
    tensors += [("output_norm.weight", (4096,), T.F32), ("output.weight", (128256, 4096), T.Q6_K)]
    return write(path, "llama", meta, tensors)
