"""Which keys of a config.json hfconfig reads and which change no cache: any other key shaped like
a cache dimension is refused, naming it, and so is a read key whose value would change the cache
in a way not modelled (pruned heads, an indexer on some layers only)."""

import re

from .config_fields import ConfigFields
from ..errors import InputError

# Keys shaped like a cache dimension (a head dim, a head count, a window, a layer list, a sparse
# attention's own config such as Kimi K3's dsa_config): one the reader below does not know may change
# the cache, so a config carrying it is refused, naming it.
CACHE_SHAPED = re.compile(r"head_dim|^num_.*heads$|_heads$|window|_layers$|layer_types$|kv_lora|_kv_|kv_heads"
                          r"|^index_|^indexer|_types$|_pattern$|sparse_attention|compress|dsa")
# Cache-shaped keys this reader reads (or checks) itself.
READ_KEYS = {
    "head_dim", "attention_head_dim", "hidden_size_per_head", "v_head_dim", "qk_nope_head_dim",
    "qk_rope_head_dim", "kv_lora_rank", "index_head_dim", "num_attention_heads", "num_heads", "n_heads",
    "num_key_value_heads", "num_kv_heads", "linear_num_key_heads", "linear_num_value_heads",
    "linear_key_head_dim", "linear_value_head_dim", "mamba_num_heads", "mamba_n_heads", "mamba_head_dim",
    "mamba_d_head", "sliding_window", "use_sliding_window", "max_window_layers", "sliding_window_pattern",
    "_sliding_window_pattern", "sliding_window_size", "num_hidden_layers", "num_layers", "n_layers",
    "layer_types", "no_rope_layers", "num_kv_shared_layers", "swa_head_dim", "swa_v_head_dim", "swa_num_key_value_heads",
    "global_head_dim", "num_global_key_value_heads", "hybrid_override_pattern", "hybrid_layer_pattern",
    "layers_block_type", "qk_head_dim", "pruned_heads", "indexer_types", "index_topk_freq",
    "index_skip_topk_offset", "index_topk_pattern", "sparse_attention_config",
    "prefix_dense_sliding_window_pattern", "loop_num", "loop_window_size",
}
# Cache-shaped keys that change no cache, each for a reason.
HARMLESS_KEYS = {
    "num_nextn_predict_layers": "MTP draft layers: outside num_hidden_layers, used only with speculative decoding",
    "mtp_num_hidden_layers": "MTP draft layers: outside num_hidden_layers, used only with speculative decoding",
    "mlp_only_layers": "which layers use a dense MLP instead of experts (weights, not cache)",
    "swa_num_attention_heads": "query heads of MiMo-V2 window layers (no cache of their own)",
    "full_attn_layers": "Kimi-Linear: the complement of kda_layers, checked against it",
    "kda_layers": "Kimi-Linear: read",
    # transformers Llama4TextConfig writes the MoE layers' list into a re-saved config.json.
    "moe_layers": "which layers use experts (weights, not cache)",
    # DeepSeek-V3.2 / GLM DSA: the indexer's query heads; its cache is one key of index_head_dim per token.
    "index_n_heads": "the sparse-attention indexer's query heads (its cache is one key per token)",
    "order_of_interleaved_layers": "Cohere2: read (only local_attn_first, the layout its pattern gives)",
    "mtp_transformer_layers": "MiniMax-M2.5 MTP draft layers: outside num_hidden_layers, speculative decoding only",
    "num_mtp_modules": "MTP draft modules: outside num_hidden_layers, speculative decoding only",
    "mtp_layers_block_type": "Nemotron 3's MTP draft layers: outside num_hidden_layers, speculative decoding only",
    "mtp_hybrid_override_pattern": "Nemotron 3's MTP draft layers: outside num_hidden_layers, speculative decoding only",
    "mlp_layer_types": "which layers use a dense MLP or experts (weights, not cache)",
    "index_topk": "how many tokens the sparse-attention indexer selects (compute, not cache)",
    "indexer_rope_interleave": "the indexer's RoPE layout (compute, not cache)",
    "index_share_for_mtp_iteration": "the MTP draft reuses the indexer's choice (speculative decoding only)",
}


def refuse_unknown_keys(f: ConfigFields) -> None:
    """A cache-shaped key this reader does not know could change the cache: refuse, naming it."""
    _refuse_unread_values(f)
    for key in f.cfg:
        # A harmless key under a private spelling ("_mtp_num_hidden_layers", as some exporters save a
        # draft's layer count) means what it means without the underscores: no cache either way.
        if isinstance(key, str) and CACHE_SHAPED.search(key) and key not in READ_KEYS \
                and key not in HARMLESS_KEYS and key.lstrip("_") not in HARMLESS_KEYS and f.cfg[key] is not None:
            raise InputError(f.prefix + key, "a cache-shaped key this calculator does not read: it may change "
                                             "the KV cache, so no number is given rather than a wrong one")


def _refuse_unread_values(f: ConfigFields) -> None:
    """Keys read only for the one value that changes nothing; any other value is refused."""
    cfg = f.cfg
    if cfg.get("pruned_heads") not in (None, {}):
        raise InputError(f.prefix + "pruned_heads", "pruned attention heads change the cache, and vLLM does not "
                                                    "read them; no number rather than a wrong one")
    if cfg.get("qk_head_dim") is not None and f.has("qk_nope_head_dim") and f.has("qk_rope_head_dim") and \
            cfg["qk_head_dim"] != f.int("qk_nope_head_dim", minimum=0) + f.int("qk_rope_head_dim", minimum=0):
        raise InputError(f.prefix + "qk_head_dim", "must equal qk_nope_head_dim + qk_rope_head_dim")
    if cfg.get("qk_head_dim") is not None and not f.has("kv_lora_rank"):
        raise InputError(f.prefix + "qk_head_dim", "is read only beside an MLA latent (kv_lora_rank)")
    types = cfg.get("indexer_types")
    if types is not None and (not isinstance(types, list) or any(t != "full" for t in types)):
        # GLM-5.2: "shared" layers reuse an earlier layer's top-k; which layers then keep index
        # keys in vLLM's cache was not established from its code.
        raise InputError(f.prefix + "indexer_types", "layers that share another layer's indexer (GLM-5.2 style) "
                                                     "are not modelled yet; no number rather than a wrong one")
    for key, trivial in (("index_topk_freq", 1), ("index_skip_topk_offset", 0), ("index_topk_pattern", None)):
        if cfg.get(key, trivial) != trivial:
            raise InputError(f.prefix + key, "an indexer run on only some layers is not modelled yet; no number "
                                             "rather than a wrong one")
