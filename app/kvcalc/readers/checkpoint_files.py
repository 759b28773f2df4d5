"""Checkpoint files on disk for the CLI: the exact weights of .safetensors shards or an index."""

import os

from . import safetensors
from ..errors import InputError, read_header_from


def _read(path: str):
    """('shard', Weights) or ('index', Index) for one file, reading only its header."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        if path.endswith(".json"):
            if size > safetensors.MAX_INDEX_BYTES:
                raise InputError("weights-file", f"the index is {size:,} bytes; the limit is "
                                                 f"{safetensors.MAX_INDEX_BYTES:,} (the largest real ones are ~10 MB)")
            return "index", safetensors.read_index_full(fh.read())
        return "shard", read_header_from(fh, size, safetensors.parse)


def weights_from_paths(paths: list[str]):
    """The exact bytes of a checkpoint (the sum of its .safetensors shards, or an index's total,
    checked against each other when both are given), and its shards' headers when they are the
    whole checkpoint (for the weights of each layer)."""
    shards, indexes = [], []
    for path in paths:
        try:
            kind, read = _read(path)
        except OSError as e:
            raise InputError("weights-file", f"cannot read {path!r}: {e.strerror}") from None
        except InputError as e:
            raise InputError(e.field, f"{path!r}: {e.message}") from None
        (indexes if kind == "index" else shards).append((os.path.basename(path), read))
    total, complete, _ = safetensors.checkpoint_bytes(shards, indexes)
    return total, [w for _, w in shards] if complete else []
