"""Read a Hugging Face config.json the way vLLM and transformers read it.

Field names and defaults follow vLLM's `model_arch_config_convertor.py` / `get_head_size` /
`get_num_kv_heads` and the transformers configuration classes named beside each rule. Where a
field the cache depends on is missing and no documented default applies, we refuse, naming it.
"""

import json

from .errors import InputError
from .layers import (ChunkedLocalAttention, FullAttention, MLAAttention, NoCache,
                     SlidingWindowAttention, StateSpaceLayer)
from .model import Model
from .precision import precision

MAX_CONFIG_BYTES = 1 << 20   # real configs are a few KB; refuse before parsing anything larger
MAX_NESTING = 32
MAX_DIM = 1 << 20            # no real head count, head dim or layer count comes near this


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
    depth = deepest = 0
    for ch in text:
        # A cheap bracket count refuses pathological nesting before json recursion can.
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    if deepest > MAX_NESTING:
        raise InputError(field, f"config.json nests {deepest} levels deep; the limit is {MAX_NESTING}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(field, f"not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except RecursionError:
        raise InputError(field, "config.json nests too deeply") from None
    if not isinstance(data, dict):
        raise InputError(field, f"config.json must be a JSON object, got {type(data).__name__}")
    return data


class _Fields:
    """Typed access to one config dict, every error naming the key."""

    def __init__(self, cfg: dict, prefix: str = ""):
        self.cfg = cfg
        self.prefix = prefix

    def has(self, key):
        return self.cfg.get(key) is not None

    def first(self, *keys):
        for key in keys:
            if self.cfg.get(key) is not None:
                return key
        return None

    def int(self, key, *, minimum=1, maximum=MAX_DIM):
        value = self.cfg.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise InputError(self.prefix + key, f"expected a whole number, got {_show(value)}")
        if not minimum <= value <= maximum:
            raise InputError(self.prefix + key, f"{value} is out of range; allowed {minimum} to {maximum:,}")
        return value

    def opt_int(self, key, **kw):
        return self.int(key, **kw) if self.has(key) else None

    def need_int(self, *keys, **kw):
        key = self.first(*keys)
        if key is None:
            raise InputError(self.prefix + keys[0], f"missing from config.json (also looked for: "
                                                    f"{', '.join(keys[1:]) or 'nothing else'})")
        return self.int(key, **kw)

    def bool(self, key, default=False):
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise InputError(self.prefix + key, f"expected true or false, got {_show(value)}")
        return value


def _show(value) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _text_config(cfg: dict) -> tuple[dict, str]:
    # Multimodal wrappers (Gemma 3, Llama 4, Qwen-VL, ...) keep the language model in text_config.
    inner = cfg.get("text_config")
    if isinstance(inner, dict):
        merged = dict(inner)
        for key in ("torch_dtype", "dtype"):
            if key not in merged and key in cfg:
                merged[key] = cfg[key]
        return merged, "text_config."
    return cfg, ""


def model_from_config(cfg: dict, name: str | None = None, **extra) -> Model:
    """Turn a config.json dict into a Model. `extra` (params, hf_repo, source...) passes through."""
    if not isinstance(cfg, dict):
        raise InputError("hf-config", "config.json must be a JSON object")
    text, prefix = _text_config(cfg)
    f = _Fields(text, prefix)
    model_type = str(text.get("model_type") or cfg.get("model_type") or "")

    if model_type == "mpt" or isinstance(text.get("attn_config"), dict) and f.has("d_model"):
        attention = _mpt(f)
    else:
        attention = _attention_dims(f, model_type)

    n_layers = f.need_int("num_hidden_layers", "num_layers", "n_layer", "n_layers")
    kinds = _layer_kinds(f, model_type, n_layers)
    layers = tuple(_build_layer(kind, f, attention) for kind in kinds)

    dtype_name = text.get("torch_dtype") or text.get("dtype") or "bfloat16"
    try:
        dtype = precision(str(dtype_name), field=prefix + "torch_dtype").name
    except InputError:
        raise InputError(prefix + "torch_dtype", f"unknown dtype {_show(dtype_name)}; "
                                                 f"expected float32, float16 or bfloat16") from None
    max_pos = f.opt_int("max_position_embeddings", maximum=1 << 40) or \
        f.opt_int("seq_length", maximum=1 << 40) or f.opt_int("max_seq_len", maximum=1 << 40) or \
        f.opt_int("n_positions", maximum=1 << 40)
    return Model(
        name=name or extra.get("hf_repo") or str(cfg.get("_name_or_path") or model_type or "custom"),
        layers=layers, dtype=dtype, attention_heads=attention.get("q_heads"),
        max_context_tokens=max_pos, **extra)


def _attention_dims(f: _Fields, model_type: str) -> dict:
    out = {}
    if f.has("kv_lora_rank"):
        out["mla"] = (f.int("kv_lora_rank"), f.int("qk_rope_head_dim", minimum=0)
                      if f.has("qk_rope_head_dim") else _missing(f, "qk_rope_head_dim"))
    heads_key = f.first("num_attention_heads", "n_head", "n_heads", "num_heads")
    if heads_key is None:
        if "mla" in out:
            return out
        raise InputError(f.prefix + "num_attention_heads", "missing from config.json")
    q_heads = f.int(heads_key)
    out["q_heads"] = q_heads

    if model_type == "falcon" or model_type in ("RefinedWeb", "RefinedWebModel"):
        # transformers FalconConfig: new_decoder_architecture uses num_kv_heads; otherwise
        # multi_query means one KV head whatever num_kv_heads says.
        if f.bool("new_decoder_architecture"):
            key = f.first("num_kv_heads", "n_head_kv")
            kv = f.int(key) if key else q_heads
        elif f.bool("multi_query", default=True):
            kv = 1
        else:
            kv = q_heads
    elif f.has("multi_query_group_num") and (model_type.startswith("chatglm") or
                                             f.bool("multi_query_attention", default=True)):
        kv = f.int("multi_query_group_num")
    else:
        key = f.first("n_head_kv", "num_kv_heads", "num_key_value_heads")
        kv = f.int(key) if key else q_heads
    if q_heads % kv:
        raise InputError(f.prefix + "num_key_value_heads",
                         f"{kv} kv heads do not divide {q_heads} attention heads")
    out["kv_heads"] = kv

    dim_key = f.first("head_dim", "attention_head_dim")   # Nemotron-H names it attention_head_dim
    if dim_key:
        head_dim = f.int(dim_key)
    elif f.has("kv_channels"):
        head_dim = f.int("kv_channels")
    else:
        hidden_key = f.first("hidden_size", "d_model", "n_embd")
        if hidden_key is None:
            raise InputError(f.prefix + "head_dim", "missing, and no hidden_size to derive it from")
        hidden = f.int(hidden_key, maximum=1 << 24)
        if hidden % q_heads:
            raise InputError(f.prefix + "head_dim", f"missing, and {hidden_key}={hidden} is not a "
                                                    f"multiple of {q_heads} attention heads")
        head_dim = hidden // q_heads
    out["head_dim"] = head_dim
    return out


def _missing(f: _Fields, key: str):
    raise InputError(f.prefix + key, "missing from config.json")


def _mpt(f: _Fields) -> dict:
    attn = f.cfg["attn_config"]
    q_heads = f.need_int("n_heads")
    d_model = f.need_int("d_model", maximum=1 << 24)
    if d_model % q_heads:
        raise InputError(f.prefix + "d_model", f"{d_model} is not a multiple of n_heads={q_heads}")
    attn_type = attn.get("attn_type", "multihead_attention")
    if attn_type == "multiquery_attention":
        kv = 1
    elif attn_type == "grouped_query_attention":
        kv = _Fields(attn, f.prefix + "attn_config.").need_int("kv_n_heads")
    else:
        kv = q_heads
    return {"q_heads": q_heads, "kv_heads": kv, "head_dim": d_model // q_heads}


def _layer_kinds(f: _Fields, model_type: str, n: int) -> list[str]:
    """One of full / sliding / chunked / mla / state / none for each layer."""
    cfg = f.cfg
    attention_kind = "mla" if f.has("kv_lora_rank") else "full"
    windowed = "sliding" if _window(f) else attention_kind

    types = cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n:
            raise InputError(f.prefix + "layer_types",
                             f"expected a list of {n} layer types (one per layer)")
        return [_kind_of(t, f, attention_kind) for t in types]

    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        if len(pattern) != n:
            raise InputError(f.prefix + "hybrid_override_pattern", f"has {len(pattern)} symbols for {n} layers")
        symbols = {"M": "state", "*": attention_kind, "-": "none", "E": "none"}
        if set(pattern) - set(symbols):
            raise InputError(f.prefix + "hybrid_override_pattern",
                             f"unknown symbols {''.join(sorted(set(pattern) - set(symbols)))}")
        return [symbols[c] for c in pattern]

    if f.has("full_attention_interval"):     # Qwen3-Next: every k-th layer is full attention
        k = f.int("full_attention_interval")
        return [attention_kind if (i + 1) % k == 0 else "state" for i in range(n)]

    if f.has("attn_layer_period"):            # Jamba: attention where i % period == offset
        period = f.int("attn_layer_period")
        offset = f.int("attn_layer_offset", minimum=0) if f.has("attn_layer_offset") else 0
        return [attention_kind if i % period == offset else "state" for i in range(n)]

    if f.has("attention_chunk_size") and model_type.startswith("llama4"):
        # transformers Llama4TextConfig: no_rope_layers marks the global layers (0); the rest are
        # chunked; default is every 4th layer global.
        no_rope = cfg.get("no_rope_layers")
        if isinstance(no_rope, list) and len(no_rope) == n:
            return ["chunked" if flag else "full" for flag in no_rope]
        step = f.int("no_rope_layer_interval") if f.has("no_rope_layer_interval") else 4
        return ["full" if (i + 1) % step == 0 else "chunked" for i in range(n)]

    if windowed == "sliding":
        pattern_key = f.first("sliding_window_pattern", "_sliding_window_pattern")
        if pattern_key:                        # Gemma 3, Cohere2: (pattern-1) local then 1 global
            p = f.int(pattern_key)
            return ["sliding" if (i + 1) % p else "full" for i in range(n)]
        if model_type in ("gemma2",):          # transformers Gemma2Config: even layers slide
            return ["sliding" if i % 2 == 0 else "full" for i in range(n)]
        if model_type.startswith("qwen") and f.has("max_window_layers"):
            # transformers Qwen2Config: layers from max_window_layers on use the window.
            m = f.int("max_window_layers", minimum=0, maximum=1 << 30)
            return ["sliding" if i >= m else "full" for i in range(n)]
        return ["sliding"] * n                 # Mistral 7B v0.1, Phi-3: every layer slides
    return [attention_kind] * n


def _window(f: _Fields) -> int | None:
    if not f.has("sliding_window") or f.cfg.get("use_sliding_window") is False:
        return None
    value = f.cfg["sliding_window"]
    if isinstance(value, bool):
        return None
    return f.int("sliding_window", maximum=1 << 40)


def _kind_of(name, f: _Fields, attention_kind: str) -> str:
    if not isinstance(name, str):
        raise InputError(f.prefix + "layer_types", f"each entry must be a string, got {_show(name)}")
    key = name.lower()
    if "sliding" in key or key in ("local", "local_attention"):
        return "sliding"
    if "chunk" in key:
        return "chunked"
    if key in ("linear_attention", "mamba", "mamba2", "linear", "ssm", "gated_deltanet", "deltanet"):
        return "state"
    if key in ("full_attention", "attention", "global", "global_attention", "full"):
        return attention_kind
    raise InputError(f.prefix + "layer_types", f"unknown layer type {_show(name)}; known: "
                     "full_attention, sliding_attention, chunked_attention, linear_attention, mamba")


def _build_layer(kind: str, f: _Fields, attention: dict):
    if kind == "none":
        return NoCache()
    if kind == "state":
        return _state_layer(f)
    if kind == "mla":
        if "mla" not in attention:
            raise InputError(f.prefix + "kv_lora_rank", "missing for an MLA layer")
        return MLAAttention(*attention["mla"])
    if "kv_heads" not in attention:
        raise InputError(f.prefix + "num_attention_heads", "missing from config.json")
    heads, dim = attention["kv_heads"], attention["head_dim"]
    if kind == "full":
        return FullAttention(heads, dim)
    if kind == "chunked":
        return ChunkedLocalAttention(heads, dim, window=f.int("attention_chunk_size", maximum=1 << 40))
    window = _window(f)
    if window is None:
        raise InputError(f.prefix + "sliding_window", "layers slide but no sliding_window is set")
    return SlidingWindowAttention(heads, dim, window=window)


def _state_layer(f: _Fields) -> StateSpaceLayer:
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
        return StateSpaceLayer(conv, heads * head_dim * d_state, heads=heads, label="mamba2")
    if f.has("mamba_d_state"):
        # Mamba-1 (Jamba): d_inner = expand x hidden; conv (d_conv-1) x d_inner, ssm d_inner x d_state.
        hidden = f.int("hidden_size", maximum=1 << 24)
        d_inner = f.int("mamba_expand") * hidden
        d_state = f.int("mamba_d_state")
        kernel = f.int("mamba_d_conv")
        return StateSpaceLayer((kernel - 1) * d_inner, d_inner * d_state, heads=d_inner, label="mamba")
    raise InputError(f.prefix + "layer_types", "linear or state-space layers whose state size this "
                     "config does not give (no linear_* or mamba_* fields)")
