"""safetensors headers and index files: the exact bytes of a checkpoint's tensors, read from
the header alone (huggingface/safetensors docs: an 8-byte little-endian header length, a JSON
header of {name: {dtype, shape, data_offsets}}, then the data) or from a sharded checkpoint's
`model.safetensors.index.json` (`metadata.total_size`)."""

import json
import struct
from dataclasses import dataclass

from .errors import InputError, NeedMore

FIELD = "weights-file"
MAX_HEADER = 100 << 20          # the format's own limit on the JSON header
# dtype -> bits per element (F4 and the like are packed two to a byte).
DTYPE_BITS = {"F64": 64, "F32": 32, "F16": 16, "BF16": 16, "I64": 64, "I32": 32, "I16": 16, "I8": 8, "U64": 64,
              "U32": 32, "U16": 16, "U8": 8, "BOOL": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8, "F4": 4,
              "F6_E2M3": 6, "F6_E3M2": 6, "C64": 64}


@dataclass(frozen=True)
class Weights:
    tensor_bytes: int            # the data the header's tensors take
    params: int                  # their elements (packed quantized tensors count their storage)
    dtypes: tuple[tuple[str, int], ...]   # bytes per dtype, largest first
    by_layer: tuple[tuple[int, int], ...] = ()   # (layer index, bytes) for "...layers.N." tensors
    embedding_bytes: int = 0     # the input embedding (the first pipeline stage holds it)


LAYER_MARKERS = (".layers.", ".h.", ".blocks.", "layers.")
EMBEDDING_NAMES = ("embed_tokens", "wte", "word_embeddings", "tok_embeddings")


def _layer_of(name: str) -> int | None:
    for marker in LAYER_MARKERS:
        at = name.find(marker)
        if at >= 0 and (marker != "layers." or at == 0):
            index = name[at + len(marker):].split(".", 1)[0]
            return int(index) if index.isdigit() and len(index) < 6 else None
    return None


def layer_list(shards: list, layers: int) -> str | None:
    """The per-layer weights of a checkpoint read from all its shards, as the
    layer-weights-bytes input: before the layers, each layer, after them. None when the shards
    do not cover every layer (a shard left out) or name none."""
    counts = [0] * (layers + 2)
    seen = set()
    for w in shards:
        counts[0] += w.embedding_bytes
        for index, nbytes in w.by_layer:
            if index >= layers:
                return None
            counts[index + 1] += nbytes
            seen.add(index)
        counts[-1] += w.tensor_bytes - w.embedding_bytes - sum(n for _, n in w.by_layer)
    if seen != set(range(layers)):
        return None
    return ",".join(map(str, counts))


def read_header(data, file_size: int | None = None) -> Weights:
    size = len(data) if file_size is None else file_size
    if size < 8:
        raise InputError(FIELD, "not a safetensors file: shorter than its 8-byte header length")
    if len(data) < 8:
        raise NeedMore(8)
    (length,) = struct.unpack_from("<Q", data, 0)
    if length > MAX_HEADER or 8 + length > size:
        raise InputError(FIELD, f"not a safetensors file: it claims a {length:,}-byte header "
                                f"in a file of {size:,} bytes")
    if len(data) < 8 + length:
        raise NeedMore(8 + length)
    try:
        header = json.loads(bytes(data[8:8 + length]))
    except (ValueError, RecursionError):
        raise InputError(FIELD, "not a safetensors file: its header is not JSON") from None
    if not isinstance(header, dict):
        raise InputError(FIELD, "not a safetensors file: its header is not a JSON object")
    total = params = embedding = 0
    by_dtype: dict = {}
    by_layer: dict = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        where = f"tensor {str(name)[:60]!r}"
        if not isinstance(info, dict):
            raise InputError(FIELD, f"{where}: expected dtype, shape and data_offsets")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if not (isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 48
                                                 for d in shape) and len(shape) <= 8):
            raise InputError(FIELD, f"{where}: shape {str(shape)[:40]} is not a list of sizes")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) and not isinstance(o, bool)
                                                                     for o in offsets)
                and 0 <= offsets[0] <= offsets[1] and 8 + length + offsets[1] <= size):
            raise InputError(FIELD, f"{where}: data_offsets {str(offsets)[:40]} lie outside the file's "
                                    f"{size:,} bytes")
        elements = 1
        for d in shape:
            elements *= d
        nbytes = offsets[1] - offsets[0]
        bits = DTYPE_BITS.get(dtype)
        if bits is not None and elements * bits != nbytes * 8:
            raise InputError(FIELD, f"{where}: {elements:,} elements of {dtype} are not its {nbytes:,} bytes")
        total += nbytes
        params += elements
        by_dtype[str(dtype)[:20]] = by_dtype.get(str(dtype)[:20], 0) + nbytes
        layer = _layer_of(str(name))
        if layer is not None:
            by_layer[layer] = by_layer.get(layer, 0) + nbytes
        elif any(e in str(name) for e in EMBEDDING_NAMES):
            embedding += nbytes
    return Weights(total, params, tuple(sorted(by_dtype.items(), key=lambda kv: -kv[1])),
                   tuple(sorted(by_layer.items())), embedding)


def read_index(index) -> int:
    """`metadata.total_size` of a model.safetensors.index.json (a dict or its text)."""
    if not isinstance(index, dict):
        try:
            index = json.loads(index)
        except (ValueError, RecursionError, TypeError):
            raise InputError(FIELD, "the index is not JSON") from None
    metadata = index.get("metadata") if isinstance(index, dict) else None
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    if isinstance(total, float) and total.is_integer():
        total = int(total)
    if not isinstance(total, int) or isinstance(total, bool) or not 0 < total < 1 << 50:
        raise InputError(FIELD, "a model.safetensors.index.json holds metadata.total_size, the checkpoint's "
                                "bytes; this file has none")
    return total


def is_index(value) -> bool:
    return isinstance(value, dict) and isinstance(value.get("weight_map"), dict)
