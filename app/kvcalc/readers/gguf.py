"""GGUF headers (versions 2 and 3): metadata and tensor infos, never the tensor data.

The layout is llama.cpp's (ggml/src/gguf.cpp, docs/gguf.md): magic "GGUF", version, tensor
count, metadata count (u64 since v2), metadata key/value pairs, tensor infos (name, dims, ggml
type, offset), then the data, aligned to general.alignment (32 by default). A tensor's bytes
are its elements / block size x the block's bytes for its ggml type (ggml.c type_traits).

`parse(file_size)` is the incremental parser (errors.py says how it asks for bytes): each byte
of the header is read once, a vocabulary's strings are stepped over and never built, and big
arrays are skipped without being read. `read_header(data, file_size)` runs it on bytes in memory
(NeedMore when they are a prefix too short); `read_file(path)` on a file. Anything malformed is
an InputError naming what is wrong, before any large allocation; the caps below bound the bytes
read and the memory kept whatever the header claims.
"""

import os
import struct
from dataclasses import dataclass

from ..errors import PAUSE, InputError, NeedMore, Window, parse_bytes, read_header_from  # noqa: F401 (NeedMore: gguf.NeedMore)

FIELD = "gguf"
MAGIC = b"GGUF"
# ggml type id -> (name, elements per block, bytes per block), as ggml's type_traits.
GGML_TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 40), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18),
}
# Metadata value types: id -> struct format (None: string or array).
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
# Caps. Real headers: a few thousand tensors, a few dozen keys, a vocabulary of up to ~262k
# tokens with its scores, types and merges: a few MB, tens of MB for the largest. Each cap is
# far past that, and low enough that a file claiming more costs little to refuse.
MAX_HEADER_BYTES = 256 << 20   # the whole header: 4x the largest vocab + merges we know of
MAX_TENSORS = 1 << 16          # real checkpoints hold a few thousand
MAX_KEYS = 1 << 16
MAX_KEY = 1 << 16              # a key's bytes; real keys are under 100
MAX_NAME = 256                 # a tensor name's bytes; llama.cpp's own limit is 63 (GGML_MAX_NAME)
MAX_STRING = 1 << 26           # chat templates are kilobytes; 64 MiB is far past any
MAX_ARRAY = 1 << 22            # one array's entries: 16x the largest vocabulary (262,144)
MAX_ARRAY_ITEMS = 1 << 24      # all arrays' entries together: tokens, scores, types, merges
MAX_DIMS = 4                   # GGML_MAX_DIMS
KEPT_ARRAY = 1 << 12           # numeric arrays up to this long are kept (per-layer counts)...
KEPT_ITEMS = 1 << 16           # ...while all kept arrays hold fewer entries than this
KEPT_STRING = 1 << 20          # string values up to this long are kept (names, templates)...
KEPT_STRING_BYTES = 16 << 20   # ...while all kept strings take less than this
STRINGS_PER_PAUSE = 1 << 15    # vocabulary entries stepped over between pauses


@dataclass(frozen=True)
class Tensor:
    name: str
    dims: tuple[int, ...]
    type_id: int
    offset: int

    @property
    def elements(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def bytes(self) -> int:
        _, block, size = GGML_TYPES[self.type_id]
        return self.elements // block * size


@dataclass(frozen=True)
class Skipped:
    """A value not kept (a vocabulary, a long string): its element type and length."""
    item_type: int
    length: int
    is_array: bool = True

    def describe(self) -> str:
        if self.is_array:
            return f"an array of {self.length:,} entries"
        return f"a string of {self.length:,} bytes"


def layer_number(name: str) -> int | None:
    """N of a "blk.N." tensor, or None for tensors outside the layers. llama.cpp names layers
    "blk.%d", so N is plain ASCII digits (str.isdigit alone accepts "²", which int() refuses)."""
    if not name.startswith("blk."):
        return None
    index = name[4:].split(".", 1)[0]
    if not (index.isascii() and index.isdigit()) or (len(index) > 1 and index[0] == "0") or len(index) > 6:
        raise InputError(FIELD, f"tensor {name[:60]!r}: {index[:12]!r} is not a layer number")
    return int(index)


@dataclass(frozen=True)
class Header:
    version: int
    metadata: dict
    tensors: tuple[Tensor, ...]
    data_offset: int               # where the tensor data starts, aligned
    header_bytes: int              # bytes read to know all this

    @property
    def weights_bytes(self) -> int:
        return sum(t.bytes for t in self.tensors)

    @property
    def params(self) -> int:
        return sum(t.elements for t in self.tensors)

    def layers_named(self) -> set[int]:
        """The N of every "blk.N." tensor."""
        return {n for n in map(layer_number, (t.name for t in self.tensors)) if n is not None}

    def layer_bytes(self, layers: int) -> list[int]:
        """[before the layers, each layer's, after them]: "blk.N." tensors by layer; the token
        embedding first; the output head, final norm and the rest last."""
        counts = [0] * (layers + 2)
        for t in self.tensors:
            index = layer_number(t.name)
            if index is not None and index < layers:
                counts[index + 1] += t.bytes
            else:
                counts[0 if t.name.startswith("token_embd") else -1] += t.bytes
        return counts


def _scalar(w: Window, fmt: str):
    raw = yield from w.take(struct.calcsize(fmt))
    return struct.unpack(fmt, raw)[0]


def _string(w: Window, what: str, limit: int) -> str:
    n = yield from _scalar(w, "<Q")
    if n > limit:
        raise InputError(FIELD, f"{what}: a string of {n:,} bytes is past any real header (the limit is {limit:,})")
    return (yield from _text(w, n, what))


def _text(w: Window, n: int, what: str) -> str:
    raw = yield from w.take(n)
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError:
        raise InputError(FIELD, f"{what}: not UTF-8 text") from None


def _skip_strings(w: Window, count: int, what: str):
    """Step over `count` strings (a vocabulary) without making them: the one loop that runs
    hundreds of thousands of times while a header is read. Only the 8-byte lengths are read;
    a long string's bytes are skipped, not read."""
    unpack = struct.unpack_from
    left = count
    while left:
        if w.pos + 8 > w.end:
            yield from w.need(8)
        data, base, end = w.data, w.start, w.end
        pos, stop = w.pos, w.pos
        batch = min(left, STRINGS_PER_PAUSE)
        done = 0
        while done < batch and pos + 8 <= end:
            n = unpack("<Q", data, pos - base)[0]
            if n > MAX_STRING:
                raise InputError(FIELD, f"{what}: a string of {n:,} bytes is past any real header")
            pos += 8 + n
            done += 1
            if pos > end:
                break
        w.pos = stop
        w.skip(pos - stop)             # checks the file's end and the header's cap
        left -= done
        if done == batch and left:
            yield PAUSE


class _Budget:
    """What a header may hold in all: array entries, and the values kept as Python objects."""

    def __init__(self):
        self.array_items = self.kept_items = self.kept_string_bytes = 0

    def array(self, key: str, length: int) -> None:
        if length > MAX_ARRAY:
            raise InputError(FIELD, f"{key}: an array of {length:,} entries is past any real header "
                                    f"(the limit is {MAX_ARRAY:,})")
        self.array_items += length
        if self.array_items > MAX_ARRAY_ITEMS:
            raise InputError(FIELD, f"{key}: the header's arrays hold more than {MAX_ARRAY_ITEMS:,} entries "
                                    "in all, past any real vocabulary")

    def keep_array(self, length: int) -> bool:
        if length > KEPT_ARRAY or self.kept_items + length > KEPT_ITEMS:
            return False
        self.kept_items += length
        return True

    def keep_string(self, length: int) -> bool:
        if length > KEPT_STRING or self.kept_string_bytes + length > KEPT_STRING_BYTES:
            return False
        self.kept_string_bytes += length
        return True


def _value(w: Window, value_type: int, key: str, budget: _Budget):
    if value_type in SCALARS:
        return (yield from _scalar(w, SCALARS[value_type]))
    if value_type == STRING:
        n = yield from _scalar(w, "<Q")
        if n > MAX_STRING:
            raise InputError(FIELD, f"{key}: a string of {n:,} bytes is past any real header")
        if not budget.keep_string(n):
            w.skip(n)                  # a long string (a template, a licence): stepped over
            return Skipped(STRING, n, is_array=False)
        return (yield from _text(w, n, key))
    if value_type != ARRAY:
        raise InputError(FIELD, f"{key}: unknown value type {value_type}")
    item_type = yield from _scalar(w, "<I")
    length = yield from _scalar(w, "<Q")
    if item_type == ARRAY:
        raise InputError(FIELD, f"{key}: arrays of arrays are not in GGUF files we read")
    if item_type != STRING and item_type not in SCALARS:
        raise InputError(FIELD, f"{key}: an array of value type {item_type} is not in GGUF files we read")
    budget.array(key, length)
    if item_type == STRING:
        yield from _skip_strings(w, length, key)
        return Skipped(item_type, length)
    fmt = SCALARS[item_type]
    size = struct.calcsize(fmt) * length
    if not budget.keep_array(length):
        w.skip(size)                   # a big array: its bytes are never read
        return Skipped(item_type, length)
    raw = yield from w.take(size)
    return [v for (v,) in struct.iter_unpack(fmt, raw)] if length else []


def _tensor(w: Window, names: set) -> Tensor:
    name = yield from _string(w, "a tensor name", MAX_NAME)
    if name in names:
        raise InputError(FIELD, f"tensor {name[:60]!r} is named twice in the tensor table")
    names.add(name)
    n_dims = yield from _scalar(w, "<I")
    if not 1 <= n_dims <= MAX_DIMS:
        raise InputError(FIELD, f"tensor {name[:60]!r} has {n_dims} dimensions; ggml allows 1 to {MAX_DIMS}")
    raw = yield from w.take(8 * n_dims + 12)
    dims = struct.unpack_from(f"<{n_dims}Q", raw)
    type_id, offset = struct.unpack_from("<IQ", raw, 8 * n_dims)
    if type_id not in GGML_TYPES:
        raise InputError(FIELD, f"tensor {name[:60]!r} has ggml type {type_id}, which we do not know")
    tensor = Tensor(name, dims, type_id, offset)
    if any(d == 0 or d >= 1 << 48 for d in dims) or tensor.elements >= 1 << 50:
        raise InputError(FIELD, f"tensor {name[:60]!r} has impossible dimensions {list(dims)}")
    if tensor.elements % GGML_TYPES[type_id][1]:
        raise InputError(FIELD, f"tensor {name[:60]!r} is not a whole number of "
                                f"{GGML_TYPES[type_id][0]} blocks")
    return tensor


def _check_data(tensors: list, alignment: int, data_offset: int, size: int) -> None:
    """Each tensor's data inside the file, aligned, and no two tensors sharing bytes (a header
    that lists the same bytes twice would count its weights twice)."""
    for tensor in tensors:
        if tensor.offset % alignment:
            raise InputError(FIELD, f"tensor {tensor.name[:60]!r} starts at offset {tensor.offset:,}, not a "
                                    f"multiple of general.alignment {alignment}")
        if data_offset + tensor.offset + tensor.bytes > size:
            raise InputError(FIELD, f"tensor {tensor.name[:60]!r} ends past the end of the file: the header "
                                    f"claims more bytes than the file's {size:,}")
    ordered = sorted(tensors, key=lambda t: t.offset)
    for before, after in zip(ordered, ordered[1:]):
        if after.offset < before.offset + before.bytes:
            raise InputError(FIELD, f"tensors {before.name[:60]!r} and {after.name[:60]!r} overlap in the file "
                                    f"(bytes {after.offset:,} to {before.offset + before.bytes:,} of the data)")


def parse(file_size: int):
    """The incremental GGUF header parser (a generator: see errors.py) of a file of
    `file_size` bytes."""
    w = Window(file_size, MAX_HEADER_BYTES, FIELD, "GGUF")
    if file_size < 4:
        raise InputError(FIELD, "not a GGUF file: it does not start with the bytes 'GGUF'")
    magic = yield from w.take(4)
    if bytes(magic) != MAGIC:
        raise InputError(FIELD, "not a GGUF file: it does not start with the bytes 'GGUF'")
    version = yield from _scalar(w, "<I")
    if version not in (2, 3):
        raise InputError(FIELD, f"GGUF version {version} is not one we read (2 and 3)")
    n_tensors = yield from _scalar(w, "<Q")
    n_keys = yield from _scalar(w, "<Q")
    if n_tensors > MAX_TENSORS:
        raise InputError(FIELD, f"the header claims {n_tensors:,} tensors; real checkpoints hold thousands")
    if n_keys > MAX_KEYS:
        raise InputError(FIELD, f"the header claims {n_keys:,} metadata keys; real files hold a few dozen")
    metadata, budget = {}, _Budget()
    for _ in range(n_keys):
        key = yield from _string(w, "a metadata key", MAX_KEY)
        if key in metadata:
            raise InputError(FIELD, f"metadata key {key[:60]!r} appears twice")
        value_type = yield from _scalar(w, "<I")
        metadata[key] = yield from _value(w, value_type, key, budget)
        if w.breathe():
            yield PAUSE
    tensors, names = [], set()
    for _ in range(n_tensors):
        tensors.append((yield from _tensor(w, names)))
        if w.breathe():
            yield PAUSE
    alignment = metadata.get("general.alignment", 32)
    if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment <= 0 \
            or alignment & (alignment - 1):
        raise InputError(FIELD, f"general.alignment {str(alignment)[:40]} is not a power of two")
    data_offset = -(-w.pos // alignment) * alignment
    _check_data(tensors, alignment, data_offset, file_size)
    return Header(version, metadata, tuple(tensors), data_offset, w.pos)


def read_header(data, file_size: int | None = None) -> Header:
    """The header of the GGUF file whose first bytes are `data` (the whole file is
    `file_size` bytes; by default `data` is the whole file)."""
    return parse_bytes(parse(len(data) if file_size is None else file_size), data)


# GGUF architecture -> (HF model_type, architectures[0]): what the config-reading code and the
# engines key on. Each reads the same keys llama.cpp's llm_load_hparams reads for it.
ARCHITECTURES = {
    "llama": ("llama", "LlamaForCausalLM"), "qwen2": ("qwen2", "Qwen2ForCausalLM"),
    "qwen3": ("qwen3", "Qwen3ForCausalLM"), "qwen2moe": ("qwen2_moe", "Qwen2MoeForCausalLM"),
    "qwen3moe": ("qwen3_moe", "Qwen3MoeForCausalLM"), "gemma": ("gemma", "GemmaForCausalLM"),
    "gemma2": ("gemma2", "Gemma2ForCausalLM"), "gemma3": ("gemma3_text", "Gemma3ForCausalLM"),
    "phi3": ("phi3", "Phi3ForCausalLM"), "deepseek2": ("deepseek_v2", "DeepseekV2ForCausalLM"),
    "gpt-oss": ("gpt_oss", "GptOssForCausalLM"), "cohere2": ("cohere2", "Cohere2ForCausalLM"),
    # Hybrids of attention and state-space layers: a layer is recurrent where llama.cpp says so
    # (head_count_kv 0 and, for Nemotron-H, no feed-forward), its Mamba state from ssm.* keys.
    "nemotron_h": ("nemotron_h", "NemotronHForCausalLM"), "granitehybrid": ("granitemoehybrid",
                                                                             "GraniteMoeHybridForCausalLM"),
    "jamba": ("jamba", "JambaForCausalLM"),
}
MAMBA1 = ("jamba",)              # d_inner x d_state states; the others are Mamba-2 (heads x head dim x d_state)
# Sliding-window patterns llama.cpp sets for these (src/llama-model.cpp set_swa_pattern): a
# layer slides unless it is the last of each group of n.
SWA_PATTERN = {"gemma3": 6, "cohere2": 4, "gpt-oss": 2, "gemma2": 2}


# The metadata config_from_header reads, each with the whole numbers it may hold: the key
# after "{arch}.", (lowest, highest). Past these no real model goes, and the config reader
# would refuse it anyway; checked here so nothing is built from a wild value first.
MAX_LAYERS = 10_000            # hfconfig's: the deepest real models have a few hundred layers
MAX_LAYERS_UNNAMED = 1024      # without "blk.N." tensors to vouch for them (a header of metadata only)
MAX_DIM = 1 << 20
RANGES = {
    "block_count": (1, MAX_LAYERS), "embedding_length": (1, 1 << 24), "context_length": (0, 1 << 40),
    "attention.head_count": (0, MAX_DIM), "attention.head_count_kv": (0, MAX_DIM),
    "attention.key_length": (0, MAX_DIM), "attention.value_length": (0, MAX_DIM), "vocab_size": (0, 1 << 24),
    "feed_forward_length": (0, 1 << 24), "expert_count": (0, 1 << 16), "expert_used_count": (0, 1 << 16),
    "expert_feed_forward_length": (0, 1 << 24), "expert_shared_count": (0, 1 << 16),
    "attention.sliding_window": (0, 1 << 40), "rope.dimension_count": (0, MAX_DIM),
    "attention.kv_lora_rank": (0, MAX_DIM), "attention.q_lora_rank": (0, MAX_DIM),
    "leading_dense_block_count": (0, MAX_LAYERS), "ssm.inner_size": (0, 1 << 24), "ssm.state_size": (0, MAX_DIM),
    "ssm.conv_kernel": (0, 1 << 10), "ssm.time_step_rank": (0, MAX_DIM), "ssm.group_count": (0, MAX_DIM),
}
PER_LAYER = ("attention.head_count", "attention.head_count_kv", "feed_forward_length")


def _whole(key: str, value, low: int, high: int) -> int:
    """`value` if it is a whole number (a GGUF integer; not a bool, float or string) in range."""
    if isinstance(value, bool) or not isinstance(value, int):
        shown = value.describe() if isinstance(value, Skipped) else f"{type(value).__name__} {str(value)[:20]!r}"
        raise InputError(FIELD, f"{key} is {shown}, not a whole number")
    if not low <= value <= high:
        raise InputError(FIELD, f"{key} is {value:,}; expected {low:,} to {high:,}")
    return value


def _block_count(header: Header, key: str, value) -> int:
    """{arch}.block_count, bounded by what the header holds: no more layers than the tensor
    table's "blk.N." tensors name (each real layer has tensors), and no tensor in a layer past it."""
    layers = _whole(key, value, *RANGES["block_count"])
    named = header.layers_named()
    if named and layers > len(named):
        raise InputError(FIELD, f"{key} is {layers:,} but the tensors name only {len(named):,} layers (blk.N)")
    if not named and layers > MAX_LAYERS_UNNAMED:
        raise InputError(FIELD, f"{key} is {layers:,} with no blk.N tensors to show them; "
                                f"expected at most {MAX_LAYERS_UNNAMED:,}")
    if named and max(named) >= layers:
        raise InputError(FIELD, f"a tensor names layer {max(named):,} (blk.{max(named)}) but {key} is {layers:,}")
    return layers


# The tensors whose shape is {n_embd, n_vocab} in every architecture read here (llama.cpp
# src/llama-model.cpp load_tensors: create_tensor(tn(LLM_TENSOR_TOKEN_EMBD), {n_embd, n_vocab})
# and the same for LLM_TENSOR_OUTPUT, absent when the head is tied to the embedding).
VOCAB_TENSORS = ("token_embd.weight", "output.weight")


def _vocabulary(header: Header, given: int | None, hidden: int) -> int | None:
    """The vocabulary size: the metadata's ({arch}.vocab_size, else the tokenizer's token list), else
    the rows of the token embedding (or the output head) in the tensor table, which a GGUF holds
    whatever metadata it keeps: ggml lists a tensor's dims innermost first, so token_embd.weight is
    [embedding_length, vocabulary]. llama.cpp loads a file only where the two agree, so a file
    whose table contradicts its metadata is refused, not sized from either."""
    by_name = {t.name: t for t in header.tensors if t.name in VOCAB_TENSORS}
    for name in VOCAB_TENSORS:
        tensor = by_name.get(name)
        if tensor is None:
            continue
        if len(tensor.dims) != 2 or tensor.dims[0] != hidden:
            raise InputError(FIELD, f"tensor {name!r} has dimensions {list(tensor.dims)}; llama.cpp loads it as "
                                    f"[embedding_length {hidden:,}, vocabulary]")
        rows = _whole(f"the rows of {name}", tensor.dims[1], 1, RANGES["vocab_size"][1])
        if given is not None and given != rows:
            raise InputError(FIELD, f"the metadata gives a vocabulary of {given:,} tokens but {name} has {rows:,} "
                                    "rows; llama.cpp refuses to load a file whose tensors do not match it")
        given = rows
    return given


def config_from_header(header: Header) -> dict:
    """The model's shape as a config.json would give it, read from the GGUF metadata the way
    llama.cpp reads it; weights and parameters come from the tensors themselves."""
    meta = header.metadata
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise InputError(FIELD, "general.architecture is missing from the GGUF metadata (or is not a string)")
    if arch not in ARCHITECTURES:
        raise InputError(FIELD, f"architecture {arch[:40]!r} is not one we read yet; we read "
                                f"{', '.join(sorted(ARCHITECTURES))}")
    model_type, architecture = ARCHITECTURES[arch]

    def get(key: str, required: bool = True):
        """{arch}.key checked: a whole number in RANGES, or (per-layer keys) a list of them."""
        name = f"{arch}.{key}"
        value = meta.get(name)
        if value is None:
            if required:
                raise InputError(FIELD, f"{name} is missing from the GGUF metadata")
            return None
        if isinstance(value, list) and key in PER_LAYER:
            return [_whole(f"{name}[{i}]", v, *RANGES[key]) for i, v in enumerate(value)]
        return _whole(name, value, *RANGES[key])

    def uniform(key: str, required: bool = True):
        value = get(key, required)
        if isinstance(value, list):
            if not value or len(set(value)) != 1:
                raise InputError(FIELD, f"{arch}.{key} differs between layers ({str(value[:8])[:60]}...); "
                                        "models with per-layer head counts are not read yet")
            return value[0]
        return value

    layers = _block_count(header, f"{arch}.block_count", meta.get(f"{arch}.block_count"))
    hybrid = get("ssm.state_size", required=False) is not None
    name = meta.get("general.name")
    cfg = {
        "_name_or_path": f"{name[:80]} (GGUF)" if isinstance(name, str) and name else f"{arch} (GGUF)",
        "architectures": [architecture], "model_type": model_type, "torch_dtype": "float16",
        "num_hidden_layers": layers, "hidden_size": get("embedding_length"),
        "max_position_embeddings": get("context_length", required=not hybrid) or None,
    }
    if hybrid:
        cfg.update(_hybrid(arch, get, layers, cfg["hidden_size"]))
    else:
        cfg["num_attention_heads"] = uniform("attention.head_count")
        cfg["num_key_value_heads"] = uniform("attention.head_count_kv", required=False) or cfg["num_attention_heads"]
    key_length = get("attention.key_length", required=False)
    if key_length:
        cfg["head_dim"] = key_length
    vocab = get("vocab_size", required=False)
    tokens = meta.get("tokenizer.ggml.tokens")
    if vocab is None and isinstance(tokens, (Skipped, list)):
        vocab = tokens.length if isinstance(tokens, Skipped) else len(tokens)
    vocab = _vocabulary(header, vocab, cfg["hidden_size"])
    if vocab:
        cfg["vocab_size"] = vocab
    ffn = get("feed_forward_length", required=False)
    if isinstance(ffn, list):
        ffn = max(ffn) if ffn else None           # hybrids: the MLP layers' width
    if ffn:
        cfg["intermediate_size"] = ffn
    experts = get("expert_count", required=False)
    if experts:
        used = get("expert_used_count")
        cfg.update(num_experts=experts, num_local_experts=experts, num_experts_per_tok=used,
                   n_routed_experts=experts, moe_intermediate_size=get("expert_feed_forward_length", required=False))
        if arch == "llama":
            cfg.update(model_type="mixtral", architectures=["MixtralForCausalLM"])
    window = get("attention.sliding_window", required=False)
    if window and arch in SWA_PATTERN:
        n = SWA_PATTERN[arch]
        cfg["sliding_window"] = window
        cfg["layer_types"] = ["full_attention" if (i + 1) % n == 0 else "sliding_attention" for i in range(layers)]
    elif window and arch == "phi3":
        cfg["sliding_window"] = window
    if arch == "deepseek2":
        rope = get("rope.dimension_count")
        if key_length and rope > key_length:
            raise InputError(FIELD, f"{arch}.rope.dimension_count {rope:,} is more than "
                                    f"{arch}.attention.key_length {key_length:,}")
        cfg.update(kv_lora_rank=get("attention.kv_lora_rank"), qk_rope_head_dim=rope,
                   qk_nope_head_dim=key_length - rope if key_length else None,
                   v_head_dim=get("attention.value_length", required=False),
                   q_lora_rank=get("attention.q_lora_rank", required=False) or None,
                   first_k_dense_replace=get("leading_dense_block_count", required=False) or 0,
                   n_shared_experts=get("expert_shared_count", required=False) or 0)
        cfg.pop("head_dim", None)
    return {k: v for k, v in cfg.items() if v is not None}


def inputs(header: Header) -> dict:
    """The header as the engine's inputs: its shape as a config.json, its exact weights in all
    and by layer, its parameter count (what the CLI's --gguf and the page's files give)."""
    config = config_from_header(header)
    return {"hf-config": config, "weights-bytes": str(header.weights_bytes), "params": str(header.params),
            "layer-weights-bytes": ",".join(map(str, header.layer_bytes(config["num_hidden_layers"])))}


def _per_layer(value, layers: int, key: str) -> list:
    if isinstance(value, list):
        if len(value) != layers:
            raise InputError(FIELD, f"{key} has {len(value):,} entries for {layers:,} layers")
        return value
    return [value or 0] * layers


def _hybrid(arch: str, get, layers: int, hidden: int) -> dict:
    """Layer kinds and the state's sizes of an attention / state-space hybrid, as llama.cpp's
    llm_load_hparams reads them (recurrent_layer_arr) and the config reader expects them."""
    kv = _per_layer(get("attention.head_count_kv", required=False), layers, f"{arch}.attention.head_count_kv")
    heads = _per_layer(get("attention.head_count", required=False), layers, f"{arch}.attention.head_count")
    ffn = _per_layer(get("feed_forward_length", required=False), layers, f"{arch}.feed_forward_length")
    symbols = []
    for i in range(layers):
        if kv[i]:
            symbols.append("*")
        elif arch == "nemotron_h" and ffn[i]:
            symbols.append("-")                     # an MLP-only layer: no cache
        else:
            symbols.append("M")
    attention = [i for i, c in enumerate(symbols) if c == "*"]
    if len({kv[i] for i in attention}) > 1 or len({heads[i] for i in attention}) > 1:
        raise InputError(FIELD, f"{arch}.attention.head_count_kv differs between attention layers; not read yet")
    out = {"hybrid_override_pattern": "".join(symbols)}
    if attention:
        out.update(num_attention_heads=heads[attention[0]], num_key_value_heads=kv[attention[0]])
    inner, d_state = get("ssm.inner_size"), get("ssm.state_size")
    kernel = get("ssm.conv_kernel")
    if arch in MAMBA1:
        if inner % hidden:
            raise InputError(FIELD, f"{arch}.ssm.inner_size {inner} is not a multiple of the embedding length")
        out.update(mamba_d_state=d_state, mamba_expand=inner // hidden, mamba_d_conv=kernel)
    else:
        n_heads = get("ssm.time_step_rank")
        if not n_heads or inner % n_heads:
            raise InputError(FIELD, f"{arch}.ssm.time_step_rank does not divide {arch}.ssm.inner_size")
        out.update(mamba_n_heads=n_heads, mamba_d_head=inner // n_heads, mamba_n_groups=get("ssm.group_count"),
                   ssm_state_size=d_state, conv_kernel=kernel)
    return out


def read_file(path: str) -> Header:
    """A GGUF header from a file on disk, reading only as much of its start as the header needs."""
    try:
        with open(path, "rb") as fh:
            return read_header_from(fh, os.path.getsize(path), parse)
    except OSError as e:
        raise InputError(FIELD, f"cannot read {path!r}: {e.strerror}") from None


def mmproj_bytes(path: str) -> int:
    """The tensor bytes of a llama.cpp multimodal projector (--mmproj FILE): the sum of its tensor
    table's sizes, as for a model. Its general.architecture is "clip" (clip.cpp's loader), so a
    language model's GGUF given in its place is refused."""
    try:
        header = read_file(path)
    except InputError as e:
        raise InputError("mmproj", e.message) from None       # the file it was given as
    arch = header.metadata.get("general.architecture")
    if arch != "clip":
        raise InputError("mmproj", f"{path!r} is not a multimodal projector: its general.architecture is "
                                   f"{str(arch)[:40]!r}, an mmproj's is 'clip'")
    if not header.tensors:
        raise InputError("mmproj", f"{path!r} holds no tensors")
    return header.weights_bytes
