"""safetensors headers and index files: the exact bytes of a checkpoint's tensors, read from
the header alone (huggingface/safetensors docs: an 8-byte little-endian header length, a JSON
header of {name: {dtype, shape, data_offsets}}, then the data) or from a sharded checkpoint's
`model.safetensors.index.json` (`metadata.total_size`).

The JSON is never handed whole to json.loads: its recursion on a deeply nested text overflows
Pyodide's WebAssembly stack (fatal there, every later file read fails until a reload). Both
files are flat by their format (a header is an object of objects of strings and number lists,
an index an object of objects of strings), so they are walked member by member, each member
matched by a pattern that admits nothing deeper before json.loads decodes it. The walk pauses
every few thousand members (errors.PAUSE) so the page's thread is never held long.

The rules are the safetensors library's own (safetensors/src/tensor.rs, Metadata::validate and
read_metadata; the `safetensors` package refuses the same files): a known dtype, shape x dtype
equal to the tensor's bytes, the tensors' data packed one after another from byte 0 with no gap
or overlap, and together filling the file to its last byte.
"""

import codecs
import json
import re
import struct
from dataclasses import dataclass

from ..errors import CHUNK_BYTES, PAUSE, InputError, NeedMore, Window, parse_bytes  # noqa: F401 (NeedMore re-exported)

FIELD = "weights-file"
MAX_HEADER = 100_000_000        # the format's own limit on the JSON header (MAX_HEADER_SIZE)
MAX_TENSORS = 1 << 18           # real shards hold hundreds to a few thousand
MAX_INDEX_BYTES = 64 << 20      # the largest real indexes (DeepSeek-V3's 92k tensors) take ~9 MB
MIN_INDEX_TOTAL = 1 << 20       # a checkpoint is sharded because it is big: GBs, never bytes
MEMBERS_PER_PAUSE = 1024
# dtype -> bits per element (F4 and the like are packed two to a byte): the safetensors
# library's Dtype list, every one (it refuses any other name).
DTYPE_BITS = {"F64": 64, "F32": 32, "F16": 16, "BF16": 16, "I64": 64, "I32": 32, "I16": 16, "I8": 8, "U64": 64,
              "U32": 32, "U16": 16, "U8": 8, "BOOL": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8,
              "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "C64": 64}


@dataclass(frozen=True)
class Weights:
    tensor_bytes: int            # the data the header's tensors take
    params: int                  # their elements (packed quantized tensors count their storage)
    dtypes: tuple[tuple[str, int], ...]   # bytes per dtype, largest first
    by_layer: tuple[tuple[int, int], ...] = ()   # (layer index, bytes) for "...layers.N." tensors
    embedding_bytes: int = 0     # the input embedding (the first pipeline stage holds it)


@dataclass(frozen=True)
class Index:
    total_size: int              # metadata.total_size: the checkpoint's tensor bytes
    shards: frozenset = frozenset()   # the files its weight_map names
    tensors: int = 0             # the tensors its weight_map names


LAYER_MARKERS = (".layers.", ".h.", ".blocks.", "layers.")
EMBEDDING_NAMES = ("embed_tokens", "wte", "word_embeddings", "tok_embeddings")


def _layer_of(name: str) -> int | None:
    for marker in LAYER_MARKERS:
        at = name.find(marker)
        if at >= 0 and (marker != "layers." or at == 0):
            index = name[at + len(marker):].split(".", 1)[0]
            # ASCII digits only: str.isdigit alone accepts "²", which int() refuses.
            return int(index) if index.isascii() and index.isdigit() and len(index) < 6 else None
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


# ---- the JSON walk -------------------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*+")
_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_SCALAR = r"-?[0-9][0-9.eE+-]*+|true|false|null"
_FLAT_ARRAY = r"\[[^\[\]{}\"]*+\]"                  # numbers only: a shape, data_offsets
_FLAT_OBJECT = r"\{(?:[^\[\]{}\"]++|" + _STRING + "|" + _FLAT_ARRAY + r")*+\}"
_KEY = re.compile(_STRING)
_FLAT_VALUE = re.compile("|".join((_FLAT_OBJECT, _STRING, _FLAT_ARRAY, _SCALAR)))


def _ws(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()


def _decode(piece: str, what: str):
    try:
        return json.loads(piece)
    except (ValueError, RecursionError):   # RecursionError: never, the patterns admit no depth
        raise InputError(FIELD, f"{what} is not JSON") from None


def _flat(text: str, pos: int, what: str):
    """The JSON value at text[pos] and where it ends, when it is no deeper than an object of
    strings and number lists; refused, before any decoding, when it nests deeper."""
    match = _FLAT_VALUE.match(text, pos)
    if not match:
        if text[pos:pos + 1] in ("{", "["):
            raise InputError(FIELD, f"{what} nests deeper than the format allows (an object of strings and "
                                    "lists of numbers)")
        raise InputError(FIELD, f"{what} is not JSON (at character {pos:,})")
    return _decode(match.group(), what), match.end()


def _flat_member(key: str, text: str, pos: int, what: str):
    """(A generator, for _members.) A member's value that must be flat."""
    return _flat(text, pos, f"{what}: {key[:60]!r}")
    yield                                    # a generator with nothing to read


def _members(text: str, pos: int, what: str, value_at, on_member):
    """(A generator.) Walk the JSON object at text[pos]: `value_at(key, text, pos, what)` (a
    generator) decodes each member's value and `on_member(key, value)` takes it; PAUSE between
    slices. Returns the position after the object."""
    pos = _ws(text, pos)
    if text[pos:pos + 1] != "{":
        raise InputError(FIELD, f"{what} is not a JSON object")
    pos = _ws(text, pos + 1)
    if text[pos:pos + 1] == "}":
        return pos + 1
    count = 0
    while True:
        match = _KEY.match(text, pos)
        if not match:
            raise InputError(FIELD, f"{what} is not JSON (at character {pos:,})")
        key = _decode(match.group(), what)
        pos = _ws(text, match.end())
        if text[pos:pos + 1] != ":":
            raise InputError(FIELD, f"{what} is not JSON (at character {pos:,})")
        value, pos = yield from value_at(key, text, _ws(text, pos + 1), what)
        on_member(key, value)
        pos = _ws(text, pos)
        after = text[pos:pos + 1]
        if after == "}":
            return pos + 1
        if after != ",":
            raise InputError(FIELD, f"{what} is not JSON (at character {pos:,})")
        pos = _ws(text, pos + 1)
        count += 1
        if count % MEMBERS_PER_PAUSE == 0:
            yield PAUSE


def _whole_text(text: str, what: str, walk):
    """(A generator.) `walk` over the whole of `text`, nothing but whitespace after it."""
    end = yield from walk
    if _ws(text, end) != len(text):
        raise InputError(FIELD, f"{what} is not JSON (text after its end, at character {end:,})")


# ---- a header ------------------------------------------------------------------------------

def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Tensors:
    """The header's tensors as they are walked: totals, and each one's data range."""

    def __init__(self, data_bytes: int, file_size: int):
        self.data_bytes, self.file_size = data_bytes, file_size
        self.total = self.params = self.embedding = 0
        self.by_dtype, self.by_layer, self.ranges, self.names = {}, {}, [], set()

    def add(self, name: str, info) -> None:
        if name in self.names:
            raise InputError(FIELD, f"tensor {name[:60]!r} is named twice in the header")
        self.names.add(name)
        if name == "__metadata__":
            if not isinstance(info, dict) or not all(isinstance(v, str) for v in info.values()):
                raise InputError(FIELD, "__metadata__ must map names to strings (the format allows nothing else)")
            return
        if len(self.names) > MAX_TENSORS:
            raise InputError(FIELD, f"the header names more than {MAX_TENSORS:,} tensors; real shards hold thousands")
        where = f"tensor {name[:60]!r}"
        if not isinstance(info, dict):
            raise InputError(FIELD, f"{where}: expected dtype, shape and data_offsets")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if dtype not in DTYPE_BITS:
            raise InputError(FIELD, f"{where}: dtype {str(dtype)[:20]!r} is not a safetensors dtype; the format's "
                                    f"dtypes are {', '.join(DTYPE_BITS)}")
        if not (isinstance(shape, list) and all(_is_count(d) and 0 <= d < 1 << 48 for d in shape) and len(shape) <= 8):
            raise InputError(FIELD, f"{where}: shape {str(shape)[:40]} is not a list of sizes")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_count(o) for o in offsets)
                and 0 <= offsets[0] <= offsets[1] <= self.data_bytes):
            raise InputError(FIELD, f"{where}: data_offsets {str(offsets)[:40]} lie outside the file's "
                                    f"{self.file_size:,} bytes")
        elements = 1
        for d in shape:
            elements *= d
        nbytes = offsets[1] - offsets[0]
        if elements * DTYPE_BITS[dtype] != nbytes * 8:
            raise InputError(FIELD, f"{where}: {elements:,} elements of {dtype} are not its {nbytes:,} bytes")
        self.total += nbytes
        self.params += elements
        self.by_dtype[dtype] = self.by_dtype.get(dtype, 0) + nbytes
        self.ranges.append((offsets[0], offsets[1], name))
        layer = _layer_of(name)
        if layer is not None:
            self.by_layer[layer] = self.by_layer.get(layer, 0) + nbytes
        elif any(e in name for e in EMBEDDING_NAMES):
            self.embedding += nbytes

    def check_packed(self):
        """(A generator: PAUSE between slices.) The format packs the tensors' data one after
        another from byte 0, no gap, no overlap, to the file's last byte (Metadata::validate:
        each start is the previous end; then the end must be the buffer's). A header that lists
        bytes twice would count them twice."""
        self.ranges.sort()
        yield PAUSE
        expected, before = 0, None
        for i, (start, end, name) in enumerate(self.ranges):
            if start < expected:
                raise InputError(FIELD, f"tensors {before[:60]!r} and {name[:60]!r} overlap (bytes {start:,} to "
                                        f"{min(end, expected):,} of the data)")
            if start > expected:
                raise InputError(FIELD, f"tensor {name[:60]!r} starts at byte {start:,} of the data but the tensors "
                                        f"before it end at {expected:,}: safetensors packs tensors without gaps")
            expected, before = end, name
            if i % MEMBERS_PER_PAUSE == MEMBERS_PER_PAUSE - 1:
                yield PAUSE
        if expected != self.data_bytes:
            raise InputError(FIELD, f"the tensors' data end at byte {expected:,} but the file holds "
                                    f"{self.data_bytes:,} bytes of data: safetensors requires the tensors to fill "
                                    "the file exactly")

    def weights(self) -> Weights:
        return Weights(self.total, self.params, tuple(sorted(self.by_dtype.items(), key=lambda kv: -kv[1])),
                       tuple(sorted(self.by_layer.items())), self.embedding)


def _header_text(w: Window, length: int):
    """(A generator.) The JSON header's `length` bytes as text, read and decoded a chunk at a time."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    parts, left = [], length
    try:
        while left:
            n = min(left, CHUNK_BYTES)
            parts.append(decoder.decode((yield from w.take(n))))
            left -= n
            yield PAUSE
        parts.append(decoder.decode(b"", final=True))
    except UnicodeDecodeError:
        raise InputError(FIELD, "not a safetensors file: its header is not UTF-8 text") from None
    return "".join(parts)


def parse(file_size: int):
    """The incremental safetensors header parser (a generator: see errors.py)."""
    w = Window(file_size, 8 + MAX_HEADER, FIELD, "safetensors")
    if file_size < 8:
        raise InputError(FIELD, "not a safetensors file: shorter than its 8-byte header length")
    (length,) = struct.unpack("<Q", (yield from w.take(8)))
    if length > MAX_HEADER or 8 + length > file_size:
        raise InputError(FIELD, f"not a safetensors file: it claims a {length:,}-byte header "
                                f"in a file of {file_size:,} bytes")
    text = yield from _header_text(w, length)
    start = _ws(text, 0)
    first = text[start:start + 1]
    if first != "{":
        kind = "a JSON object" if first and first in '["-0123456789tfn' else "JSON"
        raise InputError(FIELD, f"not a safetensors file: its header is not {kind}")
    tensors = _Tensors(file_size - 8 - length, file_size)
    what = "not a safetensors file: its header"
    yield from _whole_text(text, what, _members(text, 0, what, _flat_member, tensors.add))
    yield from tensors.check_packed()
    return tensors.weights()


def read_header(data, file_size: int | None = None) -> Weights:
    """The header of the safetensors file whose first bytes are `data` (the whole file is
    `file_size` bytes; by default `data` is the whole file)."""
    return parse_bytes(parse(len(data) if file_size is None else file_size), data)


# ---- an index ------------------------------------------------------------------------------

def _index_member(counts: dict):
    """(For _members.) weight_map is walked member by member (it names every tensor: ~100k for
    the largest checkpoints), counting each shard's tensors into `counts`; the rest must be flat."""
    def value_at(key: str, text: str, pos: int, what: str):
        if key != "weight_map":
            return _flat(text, pos, f"{what}: {key[:60]!r}")

        def take(name, shard):
            _count_shard(counts, name, shard)
        end = yield from _members(text, pos, f"{what}: 'weight_map'", _flat_member, take)
        return {}, end
    return value_at


def _count_shard(counts: dict, name, shard) -> None:
    if not isinstance(shard, str):
        raise InputError(FIELD, f"the index's weight_map gives {str(shard)[:40]} for {str(name)[:60]!r}, "
                                "not a file name")
    counts[shard] = counts.get(shard, 0) + 1


def parse_index(text: str):
    """(A generator: PAUSE between slices.) The Index of a model.safetensors.index.json's text."""
    what = "the index"
    members, counts = {}, {}
    yield from _whole_text(text, what, _members(text, 0, what, _index_member(counts), members.__setitem__))
    if "weight_map" in members and not isinstance(members["weight_map"], dict):
        raise InputError(FIELD, "the index's weight_map is not an object of tensor names and files")
    return _index(members, counts)


def _index(index: dict, counts: dict | None = None) -> Index:
    """The Index of an index file's members; `counts` the tensors per shard its weight_map
    names, when the walk counted them already."""
    metadata = index.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    if isinstance(total, float) and total.is_integer():
        total = int(total)
    if not _is_count(total) or not 0 < total < 1 << 50:
        raise InputError(FIELD, "a model.safetensors.index.json holds metadata.total_size, the checkpoint's "
                                "bytes; this file has none")
    if counts is None:
        weight_map = index.get("weight_map") or {}
        if not isinstance(weight_map, dict):
            raise InputError(FIELD, "the index's weight_map is not an object of tensor names and files")
        counts = {}
        for name, shard in weight_map.items():
            _count_shard(counts, name, shard)
    tensors = sum(counts.values())
    if total < max(MIN_INDEX_TOTAL, tensors):
        raise InputError(FIELD, f"metadata.total_size is {total:,}: no sharded checkpoint is that small "
                                f"(an index exists because the weights are gigabytes; this one names {tensors:,} "
                                "tensors)")
    return Index(total, frozenset(counts), tensors)


def _run(parser):
    """A parser that reads no file (it is given its text) run to its end."""
    try:
        while True:
            next(parser)
    except StopIteration as done:
        return done.value


def index_text(data) -> str:
    if isinstance(data, (bytes, bytearray, memoryview)):
        if len(data) > MAX_INDEX_BYTES:
            raise InputError(FIELD, f"the index is {len(data):,} bytes; the limit is {MAX_INDEX_BYTES:,} "
                                    "(the largest real ones are ~10 MB)")
        try:
            return bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError(FIELD, "the index is not UTF-8 text") from None
    if not isinstance(data, str):
        raise InputError(FIELD, "the index is not JSON")
    return data.removeprefix("\ufeff")


def read_index_full(index) -> Index:
    """The Index of a model.safetensors.index.json (a dict as parse_config_text gave it, or its
    text or bytes)."""
    if isinstance(index, dict):
        return _index(index)
    return _run(parse_index(index_text(index)))


def read_index(index) -> int:
    """`metadata.total_size` of a model.safetensors.index.json (a dict or its text)."""
    return read_index_full(index).total_size


def is_index(value) -> bool:
    return isinstance(value, dict) and isinstance(value.get("weight_map"), dict)


# ---- shards and an index together ----------------------------------------------------------

INDEX_TOLERANCE = 0.01


def checkpoint_bytes(shards: list, indexes: list) -> tuple[int, bool, str]:
    """The checkpoint's bytes from its shards [(file name, Weights)] and index files
    [(file name, Index)]: (bytes, whether the shards are the whole checkpoint, a note).

    An index and its shards must agree. transformers and huggingface_hub write total_size as
    the sum of the tensors' bytes, the very sum the shards' headers give, so the two are equal
    for files that belong together; we allow 1% (a tool that counted a tied tensor twice) and
    take the shards' exact sum, and refuse past it: those files are not one checkpoint."""
    shard_bytes = sum(w.tensor_bytes for _, w in shards)
    if not indexes:
        return shard_bytes, bool(shards), ""
    if len(indexes) > 1:
        raise InputError(FIELD, f"{len(indexes)} index files ({', '.join(n[:40] for n, _ in indexes)}); give one")
    name, index = indexes[0]
    if index.shards:
        stray = [n for n, _ in shards if n not in index.shards]
        if stray:
            raise InputError(FIELD, f"{stray[0][:60]} is not one of the shards {name[:60]} names")
    given = {n for n, _ in shards}
    if not shards or (index.shards and given != index.shards):
        if shard_bytes > index.total_size:
            raise InputError(FIELD, f"the shards given hold {shard_bytes:,} bytes, more than the "
                                    f"{index.total_size:,} of {name[:60]}'s metadata.total_size")
        return index.total_size, False, ""
    if abs(shard_bytes - index.total_size) > INDEX_TOLERANCE * index.total_size:
        raise InputError(FIELD, f"{name[:60]} says metadata.total_size {index.total_size:,} bytes but its shards' "
                                f"headers hold {shard_bytes:,}: these files are not one checkpoint")
    note = "" if shard_bytes == index.total_size else \
        f" (the index says {index.total_size:,}; the shards' exact sum is used)"
    return shard_bytes, True, note
