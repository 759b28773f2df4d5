"""GGUF files for the tests, written with llama.cpp's own `gguf` package (GGUFWriter). Only
the header is written; the file is extended to its full size without data (sparse), so a
5 GB checkpoint costs a few megabytes of disk."""

import os
import struct

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
    align = next((args[0] for method, *args in meta if method == "add_custom_alignment"), 32)
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
        total += -(-nbytes // align) * align
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    header = os.path.getsize(path)
    os.truncate(path, -(-header // align) * align + total)
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


# Hostile headers are written byte by byte (GGUFWriter refuses to write most of them).
U8, I32, U32, F32, BOOL, STRING, ARRAY, U64, I64 = 0, 5, 4, 6, 7, 8, 9, 10, 11
_FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def gguf_string(text) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def gguf_value(value_type: int, value) -> bytes:
    """A metadata value's bytes after its type: a scalar, a string, or (item type, items) for
    an array."""
    if value_type == STRING:
        return gguf_string(value)
    if value_type == ARRAY:
        item_type, items = value
        return struct.pack("<IQ", item_type, len(items)) + b"".join(
            gguf_string(v) if item_type == STRING else struct.pack(_FORMATS[item_type], v) for v in items)
    return struct.pack(_FORMATS[value_type], value)


def raw_gguf(kv=(), tensors=(), version=3, n_tensors=None, n_keys=None) -> bytes:
    """A GGUF header: `kv` as (key, value type, value), `tensors` as (name, dims, ggml type id,
    offset); the counts default to the lists' lengths."""
    out = [b"GGUF", struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                                len(kv) if n_keys is None else n_keys)]
    for key, value_type, value in kv:
        out += [gguf_string(key), struct.pack("<I", value_type), gguf_value(value_type, value)]
    for name, dims, type_id, offset in tensors:
        out += [gguf_string(name), struct.pack("<I", len(dims)), struct.pack(f"<{len(dims)}Q", *dims),
                struct.pack("<IQ", type_id, offset)]
    return b"".join(out)


def llama_kv(block_count=(U32, 4)) -> list:
    """The metadata of a small llama, block_count given as (value type, value)."""
    return [("general.architecture", STRING, "llama"), ("llama.block_count", *block_count),
            ("llama.context_length", U32, 8192), ("llama.embedding_length", U32, 512),
            ("llama.feed_forward_length", U32, 1536), ("llama.attention.head_count", U32, 8),
            ("llama.attention.head_count_kv", U32, 2)]


def layer_tensors(layers: int, name="blk.{}.ffn_up.weight", dims=(512, 64)) -> list:
    """F32 tensors, one per layer, packed one after another (32-aligned)."""
    size = 4 * dims[0] * dims[1]
    return [(name.format(i), dims, 0, i * size) for i in range(layers)]


def sparse_file(path, header: bytes, size: int):
    """`header` at the start of a file of `size` bytes, the rest a hole (costs no disk)."""
    with open(path, "wb") as fh:
        fh.write(header)
    os.truncate(path, size)
    return str(path)
