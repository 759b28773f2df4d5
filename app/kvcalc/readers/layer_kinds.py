"""Which kind of layer each index of a config is (full / sliding / swa / chunked / mla / indexed /
state / shortconv / kda / lightning / none), per family's layout: layer_types, hybrid patterns,
sliding-window patterns, Gemma 4's full layers, and the layouts named by one family's own key."""

from .attention_dims import MLA_MODEL_TYPES, deepseek_mha
from .config_fields import ConfigFields, show
from .config_keys import refuse_unknown_keys
from ..errors import InputError

# Model types whose sliding_window, with no per-layer pattern, applies to every layer.
UNIFORM_WINDOW_TYPES = {"mistral", "mixtral", "phi3", "phi4-siglip", "phimoe", "starcoder2", "mistral3", "ministral"}
# transformers' default sliding_window_pattern where the config may leave it out.
DEFAULT_WINDOW_PATTERN = {"gemma3": 6, "gemma3_text": 6, "cohere2": 4, "cohere2_moe": 4, "gemma4": 6, "gemma4_text": 6}
# Gemma 4 (vLLM gemma4.py, Gemma4Attention; transformers Gemma4TextConfig): full-attention layers
# take their own head dim and, with attention_k_eq_v, their own kv heads; K and V are both kept.
GEMMA4_TYPES = {"gemma4", "gemma4_text"}
GEMMA4_ONLY = ("global_head_dim", "num_global_key_value_heads")
# vLLM minimax_m3 (MiniMaxM3SparseAttention, MiniMaxM3IndexerCache): where sparse_attention_freq is
# not 0, a layer caches one bf16 index key of sparse_index_dim per token beside K and V.
SPARSE_INDEX_ARCHITECTURES = {"MiniMaxM3SparseForConditionalGeneration", "MiniMaxM3SparseForCausalLM"}
SPARSE_INDEX_KEYS = {"sparse_attention_freq", "sparse_index_dim", "sparse_num_index_heads", "sparse_topk_blocks",
                     "sparse_block_size", "sparse_init_block", "sparse_local_block", "sparse_score_type"}
# vLLM lfm2.py / lfm2_moe.py: layer_types' "conv" layers keep a short-convolution state
# (MambaStateShapeCalculator.short_conv_state_shape), "full_attention" layers a KV cache.
SHORT_CONV_ARCHITECTURES = {"Lfm2ForCausalLM", "Lfm2MoeForCausalLM"}
# vLLM minimax_text_01.py: attn_type_list 0 is lightning (linear) attention, 1 softmax attention.
LIGHTNING_ARCHITECTURES = {"MiniMaxText01ForCausalLM", "MiniMaxForCausalLM", "MiniMaxVL01ForConditionalGeneration"}
STATE_FIELDS = ("mamba_d_state", "ssm_state_size", "linear_num_value_heads", "mamba_n_heads", "mamba_num_heads")


def layer_kinds(f: ConfigFields, model_type: str, n: int, architecture: str | None = None) -> list[str]:
    """One of full / sliding / swa / chunked / mla / state / kda / lightning / none for each layer."""
    attention_kind = "mla" if f.has("kv_lora_rank") and model_type in MLA_MODEL_TYPES and \
        not deepseek_mha(f, model_type) else "full"
    kinds = _special_kinds(f, model_type, n, attention_kind, architecture)
    if kinds is None:
        kinds = _assigned_kinds(f, model_type, n, attention_kind)
    if kinds is None:
        if any(f.has(key) for key in STATE_FIELDS):
            raise InputError(f.prefix + "layer_types", "the config has state-space fields but no layout this "
                             "calculator knows (layer_types, hybrid_override_pattern, attn_layer_period, "
                             "attn_layer_indices, full_attention_interval); refusing to guess")
        window = _window(f, model_type)
        if window is None:
            return [attention_kind] * n
        pattern_key = f.first("sliding_window_pattern", "_sliding_window_pattern")
        pattern = f.int(pattern_key) if pattern_key else DEFAULT_WINDOW_PATTERN.get(model_type)
        order = f.cfg.get("order_of_interleaved_layers")
        if order is not None and order != "local_attn_first":
            # Command R7B's config: "local_attn_first", (pattern - 1) local layers then one global.
            raise InputError(f.prefix + "order_of_interleaved_layers", f"{show(order)} is not a layout this "
                             "calculator knows (local_attn_first: the window layers before each global one)")
        if pattern:                            # Gemma 3, Cohere2: (pattern-1) local then 1 global
            return ["sliding" if (i + 1) % pattern else "full" for i in range(n)]
        if model_type == "gemma2":             # transformers Gemma2Config: even layers slide
            return ["sliding" if i % 2 == 0 else "full" for i in range(n)]
        if model_type.startswith("qwen"):
            # transformers Qwen2Config: layers from max_window_layers on use the window.
            m = f.int("max_window_layers", minimum=0, maximum=1 << 30) if f.has("max_window_layers") else 0
            return ["sliding" if i >= m else "full" for i in range(n)]
        if model_type in UNIFORM_WINDOW_TYPES:
            return ["sliding"] * n             # Mistral 7B v0.1, Phi-3: every layer slides
        raise InputError(f.prefix + "sliding_window", f"is set, but which layers slide is not known for "
                         f"model_type {show(model_type)}; add layer_types to the config")
    return kinds


def _special_kinds(f: ConfigFields, model_type: str, n: int, attention_kind: str, architecture: str | None):
    """Layouts named by one family's own key (MiniMax, Kimi-Linear, MiMo-V2, Nemotron-H), or None."""
    cfg = f.cfg
    types = cfg.get("attn_type_list")
    if types is not None:
        # vLLM minimax_m2.py builds softmax attention in every layer; minimax_text_01.py builds
        # lightning attention where the entry is 0 and softmax attention where it is 1.
        flags = _flag_list(f, "attn_type_list", n)
        if all(flags):
            return [attention_kind] * n
        if architecture not in LIGHTNING_ARCHITECTURES:
            raise InputError(f.prefix + "attn_type_list", f"has linear (0) layers, but architecture "
                             f"{show(architecture)} is not one vLLM runs with lightning attention "
                             f"({', '.join(sorted(LIGHTNING_ARCHITECTURES))})")
        return [attention_kind if flag else "lightning" for flag in flags]

    if architecture in SHORT_CONV_ARCHITECTURES:
        return _short_conv_kinds(f, n, attention_kind)

    sparse = cfg.get("sparse_attention_config")
    if sparse is not None:
        return _sparse_index_kinds(f, n, attention_kind, architecture)

    linear = cfg.get("linear_attn_config")
    if linear is not None:
        # Kimi-Linear (vLLM KimiLinearConfig.is_kda_layer): kda_layers lists 1-based layer numbers;
        # the rest are MLA layers.
        if not isinstance(linear, dict):
            raise InputError(f.prefix + "linear_attn_config", f"expected an object, got {show(linear)}")
        inner = ConfigFields(linear, f.prefix + "linear_attn_config.")
        refuse_unknown_keys(inner)
        kda = _number_set(inner, "kda_layers", n)
        if inner.has("full_attn_layers"):
            full = _number_set(inner, "full_attn_layers", n)
            if full & kda or len(full | kda) != n:
                raise InputError(inner.prefix + "full_attn_layers", "with kda_layers it must name every layer "
                                                                    "from 1 to num_hidden_layers exactly once")
        return ["kda" if i + 1 in kda else attention_kind for i in range(n)]

    pattern = cfg.get("hybrid_layer_pattern")
    if pattern is not None:
        # MiMo-V2 (vLLM mimo_v2_flash.py is_compressed_softmax_layer): 1 is a window layer with the
        # swa_* dims and sliding_window_size, 0 a full attention layer.
        return ["swa" if flag else "full" for flag in _flag_list(f, "hybrid_layer_pattern", n)]

    blocks = cfg.get("layers_block_type")
    if blocks is not None:
        # Nemotron-H's spelled-out layout (vLLM NemotronHConfig: M mamba, * attention, - mlp, E moe).
        names = {"mamba": "state", "attention": attention_kind, "mlp": "none", "moe": "none"}
        if not isinstance(blocks, list) or len(blocks) != n:
            raise InputError(f.prefix + "layers_block_type", f"expected a list of {n} block types, one per layer")
        unknown = [b for b in blocks if b not in names]
        if unknown:
            raise InputError(f.prefix + "layers_block_type", f"unknown block type {show(unknown[0])}; known: "
                                                             "mamba, attention, mlp, moe")
        return [names[b] for b in blocks]
    return None


def _short_conv_kinds(f: ConfigFields, n: int, attention_kind: str) -> list[str]:
    """LFM2: layer_types, or (transformers Lfm2Config builds it so) full attention at full_attn_idxs."""
    types = f.cfg.get("layer_types")
    if types is None:
        full = f.cfg.get("full_attn_idxs")
        if not isinstance(full, list) or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n
                                                 for i in full):
            raise InputError(f.prefix + "layer_types", f"missing (nor full_attn_idxs, indices from 0 to {n - 1})")
        return [attention_kind if i in set(full) else "shortconv" for i in range(n)]
    if not isinstance(types, list) or len(types) != n or any(t not in ("conv", "full_attention") for t in types):
        raise InputError(f.prefix + "layer_types", f"expected {n} entries of conv or full_attention")
    return ["shortconv" if t == "conv" else attention_kind for t in types]


def _sparse_index_kinds(f: ConfigFields, n: int, attention_kind: str, architecture: str | None) -> list[str]:
    """MiniMax-M3: "indexed" where sparse_attention_freq is not 0 (vLLM _sparse_attention_layer_ids)."""
    sparse = f.cfg["sparse_attention_config"]
    field = f.prefix + "sparse_attention_config"
    if architecture not in SPARSE_INDEX_ARCHITECTURES:
        raise InputError(field, f"an index-key cache is read for {', '.join(sorted(SPARSE_INDEX_ARCHITECTURES))} "
                                f"only, not {show(architecture)}; no number rather than a wrong one")
    if not isinstance(sparse, dict):
        raise InputError(field, f"expected an object, got {show(sparse)}")
    unknown = sorted(k for k in sparse if k not in SPARSE_INDEX_KEYS)
    if unknown:
        raise InputError(f"{field}.{unknown[0][:60]}", "a key of the sparse attention this calculator does not "
                                                       "read: it may change the cache")
    freq = sparse.get("sparse_attention_freq")
    if freq is None:
        return [attention_kind] * n
    if not isinstance(freq, list) or len(freq) != n or \
            not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in freq):
        raise InputError(field + ".sparse_attention_freq", f"expected a list of {n} whole numbers, one per layer")
    return ["indexed" if v else attention_kind for v in freq]


def _flag_list(f: ConfigFields, key: str, n: int) -> list[int]:
    value = f.cfg[key]
    if not isinstance(value, list) or len(value) != n or \
            not all(v in (0, 1) and not isinstance(v, bool) for v in value):
        raise InputError(f.prefix + key, f"expected a list of {n} entries of 0 or 1, one per layer")
    return value


def _number_set(f: ConfigFields, key: str, n: int) -> set:
    value = f.cfg.get(key)
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= n
                                              for i in value) or len(set(value)) != len(value):
        raise InputError(f.prefix + key, f"expected a list of distinct layer numbers from 1 to {n}")
    return set(value)


def _assigned_kinds(f: ConfigFields, model_type: str, n: int, attention_kind: str):
    """Layer kinds from an explicit per-layer layout, or None when the config has none."""
    cfg = f.cfg
    types = cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n:
            raise InputError(f.prefix + "layer_types", f"expected a list of {n} layer types (one per layer)")
        return [_kind_of(t, f, attention_kind) for t in types]

    pattern = cfg.get("hybrid_override_pattern")
    if pattern is not None:
        if not isinstance(pattern, str) or len(pattern) != n:
            raise InputError(f.prefix + "hybrid_override_pattern", f"expected {n} symbols, one per layer")
        symbols = {"M": "state", "*": attention_kind, "-": "none", "E": "none"}
        unknown = set(pattern) - set(symbols)
        if unknown:
            raise InputError(f.prefix + "hybrid_override_pattern", f"unknown symbols {show(''.join(sorted(unknown)))}")
        return [symbols[c] for c in pattern]

    if f.has("full_attention_interval"):       # Qwen3-Next: every k-th layer is full attention
        k = f.int("full_attention_interval")
        return [attention_kind if (i + 1) % k == 0 else "state" for i in range(n)]

    if f.has("attn_layer_period"):             # Jamba: attention where i % period == offset
        period = f.int("attn_layer_period")
        offset = f.int("attn_layer_offset", minimum=0) if f.has("attn_layer_offset") else 0
        return [attention_kind if i % period == offset else "state" for i in range(n)]

    indices = cfg.get("attn_layer_indices")
    if indices is not None:                    # Bamba, Granite 4 hybrids: attention at these indices
        if not isinstance(indices, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                                    and 0 <= i < n for i in indices):
            raise InputError(f.prefix + "attn_layer_indices", f"expected layer indices from 0 to {n - 1}")
        chosen = set(indices)
        return [attention_kind if i in chosen else "state" for i in range(n)]

    if f.has("attention_chunk_size") and model_type.startswith("llama4"):
        # transformers Llama4TextConfig: no_rope_layers is 1 where a layer uses RoPE and chunked
        # attention, 0 for the global NoPE layers; by default every 4th layer is global.
        no_rope = cfg.get("no_rope_layers")
        if no_rope is not None and no_rope != []:
            if not isinstance(no_rope, list) or len(no_rope) != n:
                raise InputError(f.prefix + "no_rope_layers", f"expected a list of {n} flags, one per layer")
            return ["chunked" if flag else "full" for flag in no_rope]
        step = f.int("no_rope_layer_interval") if f.has("no_rope_layer_interval") else 4
        return ["full" if (i + 1) % step == 0 else "chunked" for i in range(n)]
    return None


def gemma4_kinds(f: ConfigFields, kinds: list, attention: dict) -> tuple[list, dict]:
    """Gemma 4's layer kinds and the full layers' own dims (vLLM gemma4.py Gemma4Attention,
    transformers Gemma4TextConfig): the last layer always attends fully; full layers take
    global_head_dim (512 when absent, the config class's default) and, with attention_k_eq_v,
    num_global_key_value_heads (num_key_value_heads when absent, as vLLM's gemma4_layer_config)."""
    n = len(kinds)
    if f.cfg.get("layer_types") is None:
        kinds = ["sliding" if (i + 1) % 6 else "full" for i in range(n)]
    if kinds and kinds[-1] != "full":
        kinds = kinds[:-1] + ["full"]
    window = f.int("sliding_window", maximum=1 << 40) if f.cfg.get("sliding_window") is not None else 512
    if f.cfg.get("use_bidirectional_attention") == "all":
        window = window // 2 + 1
    head_dim = f.int("global_head_dim") if f.cfg.get("global_head_dim") is not None else 512
    kv_heads = attention["kv_heads"]
    if f.flag("attention_k_eq_v") and f.cfg.get("num_global_key_value_heads") is not None:
        kv_heads = f.int("num_global_key_value_heads")
        q_heads = attention["q_heads"]
        if kv_heads > q_heads or q_heads % kv_heads:
            raise InputError(f.prefix + "num_global_key_value_heads", f"{kv_heads} kv heads do not divide "
                                                                      f"{q_heads} attention heads")
    return kinds, {"full": dict(attention, head_dim=head_dim, kv_heads=kv_heads, v_head_dim=None),
                   "sliding": dict(attention, window=window)}


def cohere2_moe_kinds(f: ConfigFields, kinds: list, attention: dict) -> tuple[list, dict]:
    """Cohere 2 MoE's layers (vLLM 0.34.0 cohere2_moe.py Cohere2MoeAttention: a "sliding_attention"
    layer's window is sliding_window + 1; transformers 5.25 Cohere2MoeConfig.__post_init__ builds
    layer_types where the config gives none: the first_k_dense_replace prefix layers slide except every
    prefix_dense_sliding_window_pattern-th, the rest except every sliding_window_pattern-th, default 4)."""
    n = len(kinds)
    if f.cfg.get("layer_types") is None:
        prefix = f.int("first_k_dense_replace", minimum=0, maximum=n) if f.has("first_k_dense_replace") else 0
        every_prefix = f.int("prefix_dense_sliding_window_pattern") if f.has("prefix_dense_sliding_window_pattern") \
            else 1
        every = f.int("sliding_window_pattern") if f.has("sliding_window_pattern") else 4
        kinds = (["sliding" if (i + 1) % every_prefix else "full" for i in range(prefix)]
                 + ["sliding" if (i + 1) % every else "full" for i in range(n - prefix)])
    if "sliding" not in kinds:
        return kinds, {}
    window = f.int("sliding_window", maximum=1 << 40) if f.cfg.get("sliding_window") is not None else 4096
    return kinds, {"sliding": dict(attention, window=window + 1)}


def _window(f: ConfigFields, model_type: str = "") -> int | None:
    if not f.has("sliding_window") or isinstance(f.cfg["sliding_window"], bool):
        return None
    use = f.cfg.get("use_sliding_window")
    # transformers Qwen2Config / MiniCPM: use_sliding_window defaults to false.
    if use is False or (use is None and (model_type.startswith("qwen") or model_type.startswith("minicpm"))):
        return None
    if use is True and model_type.startswith("qwen") and not isinstance(f.cfg.get("layer_types"), list):
        # transformers slides the layers from max_window_layers on; vLLM's Qwen2Model applies the
        # window to every layer and asserts "Sliding window for some but all layers is not supported".
        raise InputError(f.prefix + "use_sliding_window", "true: vLLM and transformers disagree on which layers "
                                                          "slide (max_window_layers), so no number is given")
    return f.int("sliding_window", maximum=1 << 40)


def _kind_of(name, f: ConfigFields, attention_kind: str) -> str:
    if not isinstance(name, str):
        raise InputError(f.prefix + "layer_types", f"each entry must be a string, got {show(name)}")
    key = name.lower()
    if "sliding" in key or key in ("local", "local_attention"):
        return "sliding"
    if "chunk" in key:
        return "chunked"
    if key in ("linear_attention", "mamba", "mamba2", "linear", "ssm", "gated_deltanet", "deltanet"):
        return "state"
    if key in ("full_attention", "attention", "global", "global_attention", "full"):
        return attention_kind
    raise InputError(f.prefix + "layer_types", f"unknown layer type {show(name)}; known: "
                     "full_attention, sliding_attention, chunked_attention, linear_attention, mamba")
