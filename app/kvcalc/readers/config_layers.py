"""Each layer kind's layer (a frozen value of `layers`) from a config's dims: attention (full,
sliding, chunked, indexed, MiMo-V2's window layers), an MLA latent with its indexer, and the
recurrent states (Mamba-1 and 2, Gated DeltaNet, short convolutions, Kimi Delta, lightning)."""

from .config_fields import ConfigFields, show
from ..errors import InputError
from ..layers import (
    ChunkedLocalAttention, FullAttention, IndexedAttention, MLAAttention, NoCache, SlidingWindowAttention,
    StateSpaceLayer)
from ..units import ceil_div


def build_layer(kind: str, f: ConfigFields, attention: dict, model_type: str = "", ssm_dtype: str | None = None):
    if kind == "none":
        return NoCache()
    if kind == "state":
        return _state_layer(f, model_type, ssm_dtype)
    if kind == "shortconv":
        # vLLM short_conv_state_shape: (conv_L_cache - 1) x conv_dim, in the model's dtype, conv_dim split by tp.
        dim, kernel = f.int("conv_dim"), f.int("conv_L_cache", minimum=2)
        return StateSpaceLayer((kernel - 1) * dim, 0, heads=dim, label="short conv")
    if kind == "kda":
        # Kimi Delta Attention (vLLM MambaStateShapeCalculator.kda_state_shape, kda_state_dtype): q, k
        # and v short convolutions of heads x head_dim channels each, in the model's dtype, and a
        # heads x head_dim x head_dim recurrent state in float32.
        inner = ConfigFields(f.cfg["linear_attn_config"], f.prefix + "linear_attn_config.")
        heads, dim = inner.int("num_heads"), inner.int("head_dim")
        kernel = inner.int("short_conv_kernel_size", minimum=2)
        return StateSpaceLayer((kernel - 1) * 3 * heads * dim, heads * dim * dim, heads=heads, label="kda",
                               ssm_dtype="fp32")
    if kind == "lightning":
        # MiniMax lightning attention (vLLM linear_attention_state_shape / _state_dtype): one
        # heads x head_dim x head_dim state, in the cache's dtype, no convolution.
        if "head_dim" not in attention:
            raise InputError(f.prefix + "head_dim", "missing for the lightning attention layers")
        heads, dim = attention["q_heads"], attention["head_dim"]
        return StateSpaceLayer(0, heads * dim * dim, heads=heads, label="lightning attention")
    if kind == "swa":
        heads = f.int("swa_num_key_value_heads")
        q_heads = f.int("swa_num_attention_heads") if f.has("swa_num_attention_heads") else attention.get("q_heads")
        if q_heads and (heads > q_heads or q_heads % heads):
            raise InputError(f.prefix + "swa_num_key_value_heads",
                             f"{heads} kv heads do not divide {q_heads} window-layer attention heads")
        dim = f.int("swa_head_dim")
        v_dim = f.int("swa_v_head_dim") if f.has("swa_v_head_dim") else dim
        window = f.int("sliding_window_size", maximum=1 << 40)
        return SlidingWindowAttention(heads, dim, v_dim if v_dim != dim else None, window=window)
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
    v_dim = attention.get("v_head_dim")
    if kind == "full":
        return FullAttention(heads, dim, v_dim)
    if kind == "indexed":
        inner = ConfigFields(f.cfg["sparse_attention_config"], f.prefix + "sparse_attention_config.")
        return IndexedAttention(heads, dim, v_dim, index_row_bytes=2 * inner.int("sparse_index_dim"))
    if kind == "chunked":
        return ChunkedLocalAttention(heads, dim, window=f.int("attention_chunk_size", maximum=1 << 40))
    if "window" in attention:
        return SlidingWindowAttention(heads, dim, window=attention["window"])
    if not f.has("sliding_window"):
        raise InputError(f.prefix + "sliding_window", "layers slide but no sliding_window is set")
    return SlidingWindowAttention(heads, dim, window=f.int("sliding_window", maximum=1 << 40))


def _state_layer(f: ConfigFields, model_type: str = "", ssm_dtype: str | None = None) -> StateSpaceLayer:
    if f.has("linear_num_value_heads"):
        # Gated DeltaNet (Qwen3-Next): conv over q, k and v channels; ssm state v_heads x dk x dv.
        k_heads = f.int("linear_num_key_heads")
        v_heads = f.int("linear_num_value_heads")
        dk, dv = f.int("linear_key_head_dim"), f.int("linear_value_head_dim")
        kernel = f.int("linear_conv_kernel_dim")
        conv = (kernel - 1) * (2 * k_heads * dk + v_heads * dv)
        return StateSpaceLayer(conv, v_heads * dk * dv, heads=v_heads, label="gated deltanet", ssm_dtype=ssm_dtype)
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
                               ssm_dtype=ssm_dtype)
    if f.has("mamba_d_state"):
        # Mamba-1 (Jamba): d_inner = expand x hidden; conv (d_conv-1) x d_inner, ssm d_inner x d_state.
        hidden = f.int("hidden_size", maximum=1 << 24)
        d_inner = f.int("mamba_expand") * hidden
        d_state = f.int("mamba_d_state")
        kernel = f.int("mamba_d_conv")
        return StateSpaceLayer((kernel - 1) * d_inner, d_inner * d_state, heads=d_inner, label="mamba",
                               ssm_dtype=ssm_dtype)
    raise InputError(f.prefix + "layer_types", "linear or state-space layers whose state size this "
                     "config does not give (no linear_* or mamba_* fields)")


# Keys of a Nemotron-NAS block's attention that vLLM's nemotron_nas.py does not read: any value but
# these defaults means a cache the config asks for and vLLM does not build.
NAS_UNREAD_ATTENTION = {"replace_with_linear": False, "sparsify": None, "num_sink_tokens": None,
                        "unshifted_sink": False, "use_prefill_window_in_sink_attention": False, "window_length": None}


def block_config_layers(f: ConfigFields, attention: dict, n_layers: int) -> tuple:
    """Nemotron-NAS (DeciLM) layers from block_configs, as vLLM builds them (nemotron_nas.py
    DeciLMDecoderLayer, 0.13.0 and 0.34.0): a block whose attention is a no-op keeps no cache; every
    other one num_attention_heads // n_heads_in_group KV heads of the model's head_dim."""
    blocks = f.cfg.get("block_configs")
    field = f.prefix + "block_configs"
    if not isinstance(blocks, list) or len(blocks) != n_layers:
        raise InputError(field, f"expected a list of {n_layers:,} blocks (one per layer), got "
                                f"{len(blocks) if isinstance(blocks, list) else type(blocks).__name__}")
    q_heads, dim = attention["q_heads"], attention["head_dim"]
    layers = []
    for i, block in enumerate(blocks):
        where = f"{field}[{i}].attention"
        att = block.get("attention") if isinstance(block, dict) else None
        if not isinstance(att, dict):
            raise InputError(where, "expected an object with no_op and n_heads_in_group")
        if att.get("no_op") is True:
            layers.append(NoCache())
            continue
        for key, default in NAS_UNREAD_ATTENTION.items():
            if att.get(key, default) != default:
                raise InputError(f"{where}.{key}", f"{show(att[key])} is not read by vLLM's nemotron_nas.py, which "
                                                   "builds full attention; what the config means is not modelled")
        group = att.get("n_heads_in_group")
        if isinstance(group, bool) or not isinstance(group, int) or group < 1 or q_heads % group:
            raise InputError(f"{where}.n_heads_in_group", f"expected a whole number that divides the "
                                                          f"{q_heads} attention heads, got {show(group)}")
        layers.append(FullAttention(q_heads // group, dim))
    return tuple(layers)


MAX_LOOPS = 16


def loop_layers(f: ConfigFields, attention: dict, layers: tuple) -> tuple[tuple, int]:
    """IQuest LoopCoder's caches (vLLM 0.34.0 iquest_loopcoder.py LoopCoderAttention): every physical layer
    runs loop_num times; loop 0 keeps a full cache, each later loop its own cache of the same heads sliding over
    loop_window_size tokens (a copy of cache_config with that sliding_window), named layers.{loop x L + i}: the
    model's caches in that order. The head dim is hidden_size // num_attention_heads whatever head_dim says."""
    loops = f.int("loop_num", minimum=1, maximum=MAX_LOOPS) if f.has("loop_num") else 2
    window = f.int("loop_window_size", minimum=1, maximum=1 << 40) if f.has("loop_window_size") else 64
    hidden, q_heads = f.int("hidden_size"), attention["q_heads"]
    if hidden % q_heads or hidden // q_heads != attention["head_dim"]:
        raise InputError(f.prefix + "head_dim", f"vLLM's LoopCoder takes hidden_size // num_attention_heads = "
                                                f"{hidden // q_heads} as the head dim, not {attention['head_dim']}")
    if any(layer.kind != "full" for layer in layers):
        raise InputError(f.prefix + "layer_types", "LoopCoder's loop 0 is full attention in every layer")
    heads, dim = attention["kv_heads"], attention["head_dim"]
    return layers + (SlidingWindowAttention(heads, dim, window=window),) * (len(layers) * (loops - 1)), loops
