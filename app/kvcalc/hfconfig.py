"""Read a Hugging Face config.json the way vLLM and transformers read it.

Field names and defaults follow vLLM's `model_arch_config_convertor.py` / `get_head_size` /
`get_num_kv_heads` and the transformers configuration classes named beside each rule. Where a
field the cache depends on is missing and no documented default applies, we refuse, naming it.
"""

import json

from .config_fields import ConfigFields, show
from .errors import InputError
from .layers import (ChunkedLocalAttention, FullAttention, MLAAttention, NoCache,
                     SlidingWindowAttention, StateSpaceLayer)
from .model import Model
from .precision import precision
from .units import ceil_div

MAX_CONFIG_BYTES = 1 << 20   # real configs are a few KB; refuse before parsing anything larger
MAX_NESTING = 32
MAX_LAYERS = 10_000          # the deepest real models have a few hundred layers


def parse_config_text(text, field: str = "hf-config") -> dict:
    if isinstance(text, bytes):
        if len(text) > MAX_CONFIG_BYTES:
            raise InputError(field, f"config.json is {len(text):,} bytes; the limit is "
                                    f"{MAX_CONFIG_BYTES:,} (real configs are a few KB)")
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError(field, "config.json is not UTF-8 text") from None
    if len(text) > MAX_CONFIG_BYTES:
        raise InputError(field, f"config.json is {len(text):,} characters; the limit is "
                                f"{MAX_CONFIG_BYTES:,} (real configs are a few KB)")
    text = text.removeprefix("\ufeff")      # a byte-order mark, as some editors save
    deepest = _nesting(text)
    if deepest > MAX_NESTING:
        raise InputError(field, f"config.json nests {deepest} levels deep; the limit is {MAX_NESTING}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(field, f"not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except RecursionError:
        raise InputError(field, "config.json nests too deeply") from None
    except ValueError:   # an integer literal past Python's 4,300-digit conversion limit
        raise InputError(field, "config.json holds a number too long to read") from None
    if not isinstance(data, dict):
        raise InputError(field, f"config.json must be a JSON object, got {type(data).__name__}")
    return data


def _nesting(text: str) -> int:
    """Deepest bracket nesting outside strings. Checked before json.loads, whose recursion
    would overflow Pyodide's WebAssembly stack (a fatal error there, not a RecursionError)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in "]}":
            depth -= 1
    return deepest


def _text_config(cfg: dict) -> tuple[dict, str]:
    # Multimodal wrappers (Gemma 3, Llama 4, Qwen-VL, ...) keep the language model in text_config.
    inner = cfg.get("text_config")
    if isinstance(inner, dict):
        merged = dict(inner)
        for key in ("torch_dtype", "dtype", "quantization_config"):
            if key not in merged and key in cfg:
                merged[key] = cfg[key]
        return merged, "text_config."
    return cfg, ""


# vLLM ModelConfig.is_deepseek_mla: only these model types run kv_lora_rank as a latent cache.
MLA_MODEL_TYPES = {"deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_mtp", "kimi_k2", "kimi_vl",
                   "longcat_flash", "pangu_ultra_moe", "pangu_ultra_moe_mtp", "glm4_moe_lite",
                   "glm_moe_dsa", "mistral_large_3"}
# Model types whose sliding_window, with no per-layer pattern, applies to every layer.
UNIFORM_WINDOW_TYPES = {"mistral", "mixtral", "phi3", "phimoe", "starcoder2", "mistral3", "ministral"}
# transformers' default sliding_window_pattern where the config may leave it out.
DEFAULT_WINDOW_PATTERN = {"gemma3": 6, "gemma3_text": 6, "cohere2": 4}
# Fields that describe a layout we do not model yet: refuse rather than guess.
UNSUPPORTED_FIELDS = {
    "linear_attn_config": "Kimi-Linear style linear attention layers",
    "attn_type_list": "MiniMax style mixed attention layers",
    "global_head_dim": "per-layer-kind head dims (Gemma 4 style)",
    "num_global_key_value_heads": "per-layer-kind kv heads (Gemma 4 style)",
}
# The context limit a config class supplies when the published config.json leaves it out: what
# transformers (and so vLLM) reads. vLLM's _get_and_verify_max_len falls back to 2048 when no
# key is found at all, as for the original Falcon (RefinedWeb) configs.
CONFIG_DEFAULT_CONTEXT = {
    "gemma3_text": (131072, "transformers Gemma3TextConfig default max_position_embeddings"),
    "glm4_moe": (131072, "transformers Glm4MoeConfig default max_position_embeddings"),
    "falcon": (2048, "transformers FalconConfig default max_position_embeddings"),
    "RefinedWeb": (2048, "vLLM's default when a config gives no length (_get_and_verify_max_len)"),
    "RefinedWebModel": (2048, "vLLM's default when a config gives no length (_get_and_verify_max_len)"),
}
# The vocabulary size a config class supplies when config.json leaves it out (Gemma 3's
# published text_config has none; transformers Gemma3TextConfig defaults to 262,208).
CONFIG_DEFAULT_VOCAB = {"gemma3_text": 262208}
STATE_FIELDS = ("mamba_d_state", "ssm_state_size", "linear_num_value_heads", "mamba_n_heads", "mamba_num_heads")


def model_from_config(cfg: dict, name: str | None = None, **extra) -> Model:
    """Turn a config.json dict into a Model. `extra` (params, hf_repo, source...) passes through."""
    if not isinstance(cfg, dict):
        raise InputError("hf-config", "config.json must be a JSON object")
    text, prefix = _text_config(cfg)
    f = ConfigFields(text, prefix)
    model_type = str(text.get("model_type") or cfg.get("model_type") or "")
    for key, what in UNSUPPORTED_FIELDS.items():
        if f.has(key):
            raise InputError(prefix + key, f"{what} are not modelled yet; no number rather than a wrong one")
    if model_type == "falcon_h1":
        raise InputError(prefix + "model_type", "falcon_h1 runs attention and Mamba-2 in every layer; "
                                                "not modelled yet")

    if model_type in ("mpt", "dbrx") or isinstance(text.get("attn_config"), dict) and f.has("d_model"):
        attention = _mpt(f)
    else:
        attention = _attention_dims(f, model_type)

    n_layers = f.need_int("num_hidden_layers", "num_layers", "n_layer", "n_layers", maximum=MAX_LAYERS)
    kinds = _layer_kinds(f, model_type, n_layers)
    shared = f.int("num_kv_shared_layers", minimum=0, maximum=n_layers) if f.has("num_kv_shared_layers") else 0
    if shared:
        # Gemma 3n: the last layers reuse an earlier layer's cache (vLLM kv_sharing_target_layer_name).
        kinds = kinds[:n_layers - shared] + ["none"] * shared
    layers = tuple(_build_layer(kind, f, attention, model_type) for kind in kinds)

    notes = []
    dtype_name = text.get("torch_dtype") or text.get("dtype") or "bfloat16"
    try:
        dtype = precision(str(dtype_name), field=prefix + "torch_dtype").name
    except InputError:
        raise InputError(prefix + "torch_dtype", f"unknown dtype {show(dtype_name)}; "
                                                 f"expected float32, float16 or bfloat16") from None
    if dtype not in ("fp32", "fp16", "bf16"):
        raise InputError(prefix + "torch_dtype", f"unexpected dtype {show(dtype_name)} for a checkpoint")
    if dtype == "fp32":
        # vLLM dtype=auto serves float32 checkpoints in 16 bits (_get_and_verify_dtype).
        dtype = "bf16"
        notes.append("the config says float32; engines serve it in 16 bits (vLLM --dtype auto), so bf16 is used")
    weights_dtype, quant_note = _weights_dtype(text, dtype)
    if quant_note:
        notes.append(quant_note)
    lengths = [f.int(k, maximum=1 << 40) for k in ("max_position_embeddings", "n_positions", "max_seq_len",
               "seq_length", "max_sequence_length", "max_seq_length", "seq_len") if f.has(k)]
    if not lengths and model_type in CONFIG_DEFAULT_CONTEXT:
        default, why = CONFIG_DEFAULT_CONTEXT[model_type]
        lengths = [default]
        notes.append(f"context limit {default:,} tokens: the config gives none, so the {why} applies")
    if "mla" in attention and f.has("qk_nope_head_dim") and f.has("v_head_dim"):
        extra.setdefault("mla_head_dims", (f.int("qk_nope_head_dim") + attention["mla"][1], f.int("v_head_dim")))
    hidden_key = f.first("hidden_size", "d_model", "n_embd", "n_embed")
    vocab_key = f.first("vocab_size", "padded_vocab_size", "n_vocab")
    architectures = cfg.get("architectures")
    architecture = architectures[0][:100] if isinstance(architectures, list) and architectures and \
        isinstance(architectures[0], str) else None
    return Model(
        name=name or extra.get("hf_repo") or str(cfg.get("_name_or_path") or model_type or "custom")[:100],
        layers=layers, dtype=dtype, attention_heads=attention.get("q_heads"),
        hidden_size=f.int(hidden_key, maximum=1 << 24) if hidden_key else None, architecture=architecture,
        vocab_size=f.int(vocab_key, maximum=1 << 24) if vocab_key else CONFIG_DEFAULT_VOCAB.get(model_type),
        max_context_tokens=min(lengths) if lengths else None,   # vLLM takes the smallest
        weights_dtype=weights_dtype, notes=tuple(notes), **extra)


def _weights_dtype(cfg: dict, dtype: str):
    """Weights precision from quantization_config; None where bits per weight are not uniform."""
    quant = cfg.get("quantization_config")
    if quant is None:
        return dtype, None
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, dict) else ""
    if method == "fp8":
        return "fp8", "weights are fp8 (quantization_config)"
    return None, (f"the checkpoint is quantized ({method[:30] or 'unknown method'}): its weight size is not "
                  "params x one precision; give the weights precision (weights-dtype) or size (weights-gib)")


def _attention_dims(f: ConfigFields, model_type: str) -> dict:
    out = {}
    mla = f.has("kv_lora_rank") and model_type in MLA_MODEL_TYPES
    if mla:
        rope = f.int("qk_rope_head_dim", minimum=0) if f.has("qk_rope_head_dim") else _missing(f, "qk_rope_head_dim")
        out["mla"] = (f.int("kv_lora_rank"), rope)
    heads_key = f.first("num_attention_heads", "n_head", "n_heads", "num_heads")
    if heads_key is None:
        if mla:
            return out
        raise InputError(f.prefix + "num_attention_heads", "missing from config.json")
    q_heads = f.int(heads_key)
    out["q_heads"] = q_heads
    out["kv_heads"] = kv = _kv_heads(f, model_type, q_heads)
    if q_heads % kv:
        raise InputError(f.prefix + "num_key_value_heads",
                         f"{kv} kv heads do not divide {q_heads} attention heads")
    if mla:
        return out
    if model_type == "minicpm3" and f.has("kv_lora_rank") and f.has("qk_nope_head_dim") and f.has("qk_rope_head_dim"):
        # A latent model that vLLM does not run as MLA (MiniCPM3): plain attention over
        # qk_nope + qk_rope wide heads, V padded to the same width (vllm minicpm3.py).
        out["kv_heads"] = q_heads
        out["head_dim"] = f.int("qk_nope_head_dim", minimum=0) + f.int("qk_rope_head_dim", minimum=0)
        return out

    dim_key = f.first("head_dim", "attention_head_dim", "hidden_size_per_head")
    if dim_key and f.cfg[dim_key] != 0:      # vLLM treats head_dim 0 like a missing one
        head_dim = f.int(dim_key)
    elif f.has("kv_channels"):
        head_dim = f.int("kv_channels")
    else:
        hidden_key = f.first("hidden_size", "d_model", "n_embd", "n_embed")
        if hidden_key is None:
            raise InputError(f.prefix + "head_dim", "missing, and no hidden_size to derive it from")
        hidden = f.int(hidden_key, maximum=1 << 24)
        if hidden % q_heads:
            raise InputError(f.prefix + "head_dim", f"missing, and {hidden_key}={hidden} is not a "
                                                    f"multiple of {q_heads} attention heads")
        head_dim = hidden // q_heads
    out["head_dim"] = head_dim
    return out


def _kv_heads(f: ConfigFields, model_type: str, q_heads: int) -> int:
    if model_type == "falcon":
        # transformers FalconConfig: new_decoder_architecture uses num_kv_heads; otherwise
        # multi_query (default true) means one KV head, whatever num_kv_heads says.
        if f.flag("new_decoder_architecture"):
            key = f.first("num_kv_heads", "n_head_kv")
            return f.int(key) if key else q_heads
        return 1 if f.flag("multi_query", default=True) else q_heads
    if model_type in ("RefinedWeb", "RefinedWebModel"):
        # vLLM RWConfig (original Falcon remote code): n_head_kv defaults to 1, and a hidden size
        # of 8192 (falcon-40b) forces the new decoder architecture.
        hidden = f.int("hidden_size", maximum=1 << 24) if f.has("hidden_size") else None
        if f.flag("new_decoder_architecture") or hidden == 8192:
            return f.int("n_head_kv") if f.has("n_head_kv") else 1
        return 1 if f.flag("multi_query", default=True) else q_heads
    if f.has("multi_query_group_num"):
        # vLLM chatglm.py: the groups only when multi_query_attention is on.
        return f.int("multi_query_group_num") if f.flag("multi_query_attention", default=True) else q_heads
    if f.flag("multi_query"):
        return 1                               # GPT-BigCode / StarCoder (vLLM gpt_bigcode.py)
    key = f.first("n_head_kv", "num_kv_heads", "num_key_value_heads", "num_attention_groups")
    return f.int(key) if key else q_heads


def _missing(f: ConfigFields, key: str):
    raise InputError(f.prefix + key, "missing from config.json")


def _mpt(f: ConfigFields) -> dict:
    attn = f.cfg.get("attn_config", {})
    if not isinstance(attn, dict):
        raise InputError(f.prefix + "attn_config", f"expected an object, got {show(attn)}")
    q_heads = f.need_int("n_heads")
    d_model = f.need_int("d_model", maximum=1 << 24)
    if d_model % q_heads:
        raise InputError(f.prefix + "d_model", f"{d_model} is not a multiple of n_heads={q_heads}")
    inner = ConfigFields(attn, f.prefix + "attn_config.")
    # vLLM MPT/DBRX convertors: kv_n_heads whenever present.
    if inner.has("kv_n_heads"):
        kv = inner.int("kv_n_heads")
    elif attn.get("attn_type") == "multiquery_attention":
        kv = 1
    else:
        kv = q_heads
    if q_heads % kv:
        raise InputError(f.prefix + "attn_config.kv_n_heads", f"{kv} kv heads do not divide {q_heads} heads")
    return {"q_heads": q_heads, "kv_heads": kv, "head_dim": d_model // q_heads}


def _layer_kinds(f: ConfigFields, model_type: str, n: int) -> list[str]:
    """One of full / sliding / chunked / mla / state / none for each layer."""
    attention_kind = "mla" if f.has("kv_lora_rank") and model_type in MLA_MODEL_TYPES else "full"
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


def _window(f: ConfigFields, model_type: str = "") -> int | None:
    if not f.has("sliding_window") or isinstance(f.cfg["sliding_window"], bool):
        return None
    use = f.cfg.get("use_sliding_window")
    # transformers Qwen2Config / MiniCPM: use_sliding_window defaults to false.
    if use is False or (use is None and (model_type.startswith("qwen") or model_type.startswith("minicpm"))):
        return None
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


def _build_layer(kind: str, f: ConfigFields, attention: dict, model_type: str = ""):
    if kind == "none":
        return NoCache()
    if kind == "state":
        return _state_layer(f, model_type)
    if kind == "mla":
        if "mla" not in attention:
            raise InputError(f.prefix + "kv_lora_rank", "missing for an MLA layer")
        indexer = 0
        if f.has("index_head_dim"):
            # DeepSeek-V3.2 sparse attention: an fp8 indexer key plus an fp32 scale per 128
            # elements, per token per layer, beside the latent (vLLM DeepseekV32IndexerCache).
            dim = f.int("index_head_dim")
            indexer = dim + ceil_div(dim, 128) * 4
        return MLAAttention(*attention["mla"], indexer_row_bytes=indexer)
    if "kv_heads" not in attention:
        raise InputError(f.prefix + "num_attention_heads", "missing from config.json")
    heads, dim = attention["kv_heads"], attention["head_dim"]
    if kind == "full":
        return FullAttention(heads, dim)
    if kind == "chunked":
        return ChunkedLocalAttention(heads, dim, window=f.int("attention_chunk_size", maximum=1 << 40))
    if not f.has("sliding_window"):
        raise InputError(f.prefix + "sliding_window", "layers slide but no sliding_window is set")
    return SlidingWindowAttention(heads, dim, window=f.int("sliding_window", maximum=1 << 40))


def _ssm_dtype(f: ConfigFields, model_type: str) -> str | None:
    """Precision of the recurrent state where it differs from the model's: the config's
    mamba_ssm_cache_dtype, else float32 for Nemotron-H (vLLM NemotronHForCausalLMConfig)."""
    value = f.cfg.get("mamba_ssm_cache_dtype")
    if isinstance(value, str) and value != "auto":
        return precision(value, field=f.prefix + "mamba_ssm_cache_dtype").name
    return "fp32" if model_type == "nemotron_h" else None


def _state_layer(f: ConfigFields, model_type: str = "") -> StateSpaceLayer:
    if f.has("linear_num_value_heads"):
        # Gated DeltaNet (Qwen3-Next): conv over q, k and v channels; ssm state v_heads x dk x dv.
        k_heads = f.int("linear_num_key_heads")
        v_heads = f.int("linear_num_value_heads")
        dk, dv = f.int("linear_key_head_dim"), f.int("linear_value_head_dim")
        kernel = f.int("linear_conv_kernel_dim")
        conv = (kernel - 1) * (2 * k_heads * dk + v_heads * dv)
        return StateSpaceLayer(conv, v_heads * dk * dv, heads=v_heads, label="gated deltanet")
    if f.has("mamba_n_heads") or f.has("mamba_num_heads"):
        # Mamba-2 (Nemotron-H, Granite 4, Bamba, Falcon-H1).
        heads = f.int(f.first("mamba_n_heads", "mamba_num_heads"))
        head_dim = f.int(f.first("mamba_d_head", "mamba_head_dim") or "mamba_head_dim")
        groups = f.int(f.first("mamba_n_groups", "n_groups") or "n_groups")
        d_state = f.int(f.first("ssm_state_size", "mamba_d_state") or "ssm_state_size")
        kernel = f.int(f.first("conv_kernel", "mamba_d_conv") or "conv_kernel")
        d_inner = heads * head_dim
        conv = (kernel - 1) * (d_inner + 2 * groups * d_state)
        return StateSpaceLayer(conv, heads * head_dim * d_state, heads=heads, label="mamba2",
                               ssm_dtype=_ssm_dtype(f, model_type))
    if f.has("mamba_d_state"):
        # Mamba-1 (Jamba): d_inner = expand x hidden; conv (d_conv-1) x d_inner, ssm d_inner x d_state.
        hidden = f.int("hidden_size", maximum=1 << 24)
        d_inner = f.int("mamba_expand") * hidden
        d_state = f.int("mamba_d_state")
        kernel = f.int("mamba_d_conv")
        return StateSpaceLayer((kernel - 1) * d_inner, d_inner * d_state, heads=d_inner, label="mamba",
                               ssm_dtype=_ssm_dtype(f, model_type))
    raise InputError(f.prefix + "layer_types", "linear or state-space layers whose state size this "
                     "config does not give (no linear_* or mamba_* fields)")
