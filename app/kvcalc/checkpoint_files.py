"""Checkpoint files on disk for the CLI: the exact weights of .safetensors shards or an index."""

import os

from . import safetensors
from .errors import InputError, read_header_from
from .hfconfig import MAX_CONFIG_BYTES


def weights_from_paths(paths: list[str]):
    """The exact bytes of a checkpoint (the sum of its .safetensors shards, or an index's total),
    and its shards' headers when every file was a shard (for the weights of each layer)."""
    total, shards = 0, []
    for path in paths:
        try:
            size = os.path.getsize(path)
            with open(path, "rb") as fh:
                if path.endswith(".json"):
                    total += safetensors.read_index(fh.read(MAX_CONFIG_BYTES * 64))
                    continue
                weights = read_header_from(fh, size, safetensors.read_header)
                total += weights.tensor_bytes
                shards.append(weights)
        except OSError as e:
            raise InputError("weights-file", f"cannot read {path!r}: {e.strerror}") from None
        except InputError as e:
            raise InputError(e.field, f"{path!r}: {e.message}") from None
    return total, shards if len(shards) == len(paths) else []
