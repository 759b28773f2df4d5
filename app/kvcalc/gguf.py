"""GGUF headers (versions 2 and 3): metadata and tensor infos, never the tensor data.

The layout is llama.cpp's (ggml/src/gguf.cpp, docs/gguf.md): magic "GGUF", version, tensor
count, metadata count (u64 since v2), metadata key/value pairs, tensor infos (name, dims, ggml
type, offset), then the data, aligned to general.alignment (32 by default). A tensor's bytes
are its elements / block size x the block's bytes for its ggml type (ggml.c type_traits).

`read_header(data, file_size)` parses from the start of the file. When the header runs past the
bytes given it raises NeedMore with how many are needed, so a caller reading a 100 GB file
through File.slice fetches a longer prefix and tries again; the tensor data is never touched.
Anything malformed is an InputError naming what is wrong, before any large allocation.
"""

import struct
from dataclasses import dataclass

from .errors import InputError, NeedMore, read_header_from

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
MAX_TENSORS = 1 << 20          # real checkpoints hold a few thousand
MAX_KEYS = 1 << 16
MAX_STRING = 1 << 26           # chat templates are kilobytes; 64 MiB is far past any
MAX_ARRAY = 1 << 25            # vocabularies are a few hundred thousand entries
MAX_DIMS = 4                   # GGML_MAX_DIMS
KEPT_ARRAY = 1 << 16           # numeric arrays up to this long are kept (per-layer counts)


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
    """An array not kept (a vocabulary): its element type and length."""
    item_type: int
    length: int


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

    def layer_bytes(self, layers: int) -> list[int]:
        """[before the layers, each layer's, after them]: "blk.N." tensors by layer; the token
        embedding first; the output head, final norm and the rest last."""
        counts = [0] * (layers + 2)
        for t in self.tensors:
            if t.name.startswith("blk."):
                index = t.name.split(".")[1]
                if index.isdigit() and int(index) < layers:
                    counts[int(index) + 1] += t.bytes
                    continue
            counts[0 if t.name.startswith("token_embd") else -1] += t.bytes
        return counts


class _Reader:
    def __init__(self, data, file_size: int):
        self.data = memoryview(data)
        self.file_size = file_size
        self.pos = 0

    def take(self, n: int) -> memoryview:
        end = self.pos + n
        if end > self.file_size:
            raise InputError(FIELD, f"the header runs past the end of the file ({self.file_size:,} bytes): "
                                    "the file is truncated or not a GGUF")
        if end > len(self.data):
            raise NeedMore(end)
        out = self.data[self.pos:end]
        self.pos = end
        return out

    def scalar(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self, what: str) -> str:
        n = self.scalar("<Q")
        if n > MAX_STRING:
            raise InputError(FIELD, f"{what}: a string of {n:,} bytes is past any real header")
        raw = self.take(n)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError:
            raise InputError(FIELD, f"{what}: not UTF-8 text") from None

    def skip_strings(self, count: int, what: str) -> None:
        """Step over `count` strings (a vocabulary) without making them: the one loop that runs
        hundreds of thousands of times while a header is read."""
        data, pos, have, size = self.data, self.pos, len(self.data), self.file_size
        unpack = struct.unpack_from
        for _ in range(count):
            if pos + 8 > have:
                self.pos = pos
                self.take(8)            # raises: truncated, or more bytes needed
            n = unpack("<Q", data, pos)[0]
            if n > MAX_STRING:
                raise InputError(FIELD, f"{what}: a string of {n:,} bytes is past any real header")
            pos += 8 + n
            if pos > have:
                if pos > size:
                    raise InputError(FIELD, f"{what}: the header runs past the end of the file ({size:,} bytes)")
                raise NeedMore(pos)
        self.pos = pos

    def value(self, value_type: int, key: str, depth: int = 0):
        if value_type in SCALARS:
            return self.scalar(SCALARS[value_type])
        if value_type == STRING:
            return self.string(key)
        if value_type != ARRAY:
            raise InputError(FIELD, f"{key}: unknown value type {value_type}")
        if depth:
            raise InputError(FIELD, f"{key}: arrays of arrays are not in GGUF files we read")
        item_type, length = self.scalar("<I"), self.scalar("<Q")
        if length > MAX_ARRAY:
            raise InputError(FIELD, f"{key}: an array of {length:,} entries is past any real header")
        if item_type in SCALARS:
            fmt = SCALARS[item_type]
            size = struct.calcsize(fmt)
            raw = self.take(size * length)
            if length > KEPT_ARRAY:
                return Skipped(item_type, length)
            return [v for (v,) in struct.iter_unpack(fmt, raw)] if length else []
        if item_type == STRING:
            self.skip_strings(length, key)
            return Skipped(item_type, length)
        if item_type == ARRAY:
            raise InputError(FIELD, f"{key}: arrays of arrays are not in GGUF files we read")
        raise InputError(FIELD, f"{key}: an array of value type {item_type} is not in GGUF files we read")


def read_header(data, file_size: int | None = None) -> Header:
    """The header of the GGUF file whose first bytes are `data` (the whole file is
    `file_size` bytes; by default `data` is the whole file)."""
    size = len(data) if file_size is None else file_size
    r = _Reader(data, size)
    if size < 4 or (len(data) >= 4 and bytes(data[:4]) != MAGIC):
        raise InputError(FIELD, "not a GGUF file: it does not start with the bytes 'GGUF'")
    r.take(4)
    version = r.scalar("<I")
    if version not in (2, 3):
        raise InputError(FIELD, f"GGUF version {version} is not one we read (2 and 3)")
    n_tensors, n_keys = r.scalar("<Q"), r.scalar("<Q")
    if n_tensors > MAX_TENSORS:
        raise InputError(FIELD, f"the header claims {n_tensors:,} tensors; real checkpoints hold thousands")
    if n_keys > MAX_KEYS:
        raise InputError(FIELD, f"the header claims {n_keys:,} metadata keys; real files hold a few dozen")
    metadata = {}
    for _ in range(n_keys):
        key = r.string("a metadata key")
        metadata[key] = r.value(r.scalar("<I"), key)
    tensors = []
    for _ in range(n_tensors):
        name = r.string("a tensor name")
        n_dims = r.scalar("<I")
        if not 1 <= n_dims <= MAX_DIMS:
            raise InputError(FIELD, f"tensor {name[:60]!r} has {n_dims} dimensions; ggml allows 1 to {MAX_DIMS}")
        dims = tuple(r.scalar("<Q") for _ in range(n_dims))
        type_id, offset = r.scalar("<I"), r.scalar("<Q")
        if type_id not in GGML_TYPES:
            raise InputError(FIELD, f"tensor {name[:60]!r} has ggml type {type_id}, which we do not know")
        tensor = Tensor(name, dims, type_id, offset)
        if any(d == 0 or d >= 1 << 48 for d in dims) or tensor.elements >= 1 << 50:
            raise InputError(FIELD, f"tensor {name[:60]!r} has impossible dimensions {list(dims)}")
        if tensor.elements % GGML_TYPES[type_id][1]:
            raise InputError(FIELD, f"tensor {name[:60]!r} is not a whole number of "
                                    f"{GGML_TYPES[type_id][0]} blocks")
        tensors.append(tensor)
    alignment = metadata.get("general.alignment", 32)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise InputError(FIELD, f"general.alignment {alignment!r} is not a power of two")
    data_offset = -(-r.pos // alignment) * alignment
    for tensor in tensors:
        if data_offset + tensor.offset + tensor.bytes > size:
            raise InputError(FIELD, f"tensor {tensor.name[:60]!r} ends past the end of the file: the header "
                                    f"claims more bytes than the file's {size:,}")
    return Header(version, metadata, tuple(tensors), data_offset, r.pos)


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


def config_from_header(header: Header) -> dict:
    """The model's shape as a config.json would give it, read from the GGUF metadata the way
    llama.cpp reads it; weights and parameters come from the tensors themselves."""
    meta = header.metadata
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise InputError(FIELD, "general.architecture is missing from the GGUF metadata")
    if arch not in ARCHITECTURES:
        raise InputError(FIELD, f"architecture {arch[:40]!r} is not one we read yet; we read "
                                f"{', '.join(sorted(ARCHITECTURES))}")
    model_type, architecture = ARCHITECTURES[arch]

    def get(key: str, required: bool = True):
        value = meta.get(f"{arch}.{key}")
        if value is None and required:
            raise InputError(FIELD, f"{arch}.{key} is missing from the GGUF metadata")
        if isinstance(value, Skipped):
            raise InputError(FIELD, f"{arch}.{key} is an array of {value.length:,} entries")
        return value

    def uniform(key: str, required: bool = True):
        value = get(key, required)
        if isinstance(value, list):
            if not value or len(set(value)) != 1:
                raise InputError(FIELD, f"{arch}.{key} differs between layers ({str(value[:8])[:60]}...); "
                                        "models with per-layer head counts are not read yet")
            return value[0]
        return value

    layers = get("block_count")
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
            raise InputError(FIELD, f"{key} has {len(value)} entries for {layers} layers")
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
    import os
    try:
        with open(path, "rb") as fh:
            return read_header_from(fh, os.path.getsize(path), read_header)
    except OSError as e:
        raise InputError(FIELD, f"cannot read {path!r}: {e.strerror}") from None
