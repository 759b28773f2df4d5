"""Parameter counts from a config.json's shapes, the way transformers builds the modules.

Exact for the decoder families listed in FAMILIES; any other model_type is refused, because a
count that is almost right would size the weights wrongly without saying so. Each family says
what differs from the Llama layout: biases, norms per layer, query/key norms, tied embeddings,
gated or plain MLP. Mixture-of-experts layers count every expert in the total and only the
routed top-k plus shared experts in the active count.
"""

from dataclasses import dataclass

from .config_fields import ConfigFields, InvalidValue
from .errors import InputError


@dataclass(frozen=True)
class Family:
    tied_default: bool = False       # the config class's tie_word_embeddings default
    qkv_bias: bool = False           # biases on q, k, v (Qwen2)
    bias_key: str | None = "attention_bias"   # a config key that adds biases to q, k, v and o
    mlp_bias_key: str | None = None
    norms_per_layer: int = 2         # RMSNorm weights of width hidden
    qk_norm: bool = False            # per-head RMSNorm on queries and keys (Qwen3, Gemma 3)
    moe: str | None = None           # which MoE config keys: "mixtral", "qwen", "deepseek", "gpt_oss"
    sinks: bool = False              # one learned attention-sink logit per head (gpt-oss)


FAMILIES = {
    "llama": Family(mlp_bias_key="mlp_bias"),
    "mistral": Family(bias_key=None),
    "qwen2": Family(qkv_bias=True, bias_key=None),
    "qwen3": Family(qk_norm=True),
    "phi3": Family(bias_key=None),
    "gemma": Family(tied_default=True),
    "gemma2": Family(tied_default=True, norms_per_layer=4),
    "gemma3_text": Family(tied_default=True, norms_per_layer=4, qk_norm=True),
    "mixtral": Family(bias_key=None, moe="mixtral"),
    "qwen2_moe": Family(qkv_bias=True, bias_key=None, moe="qwen"),
    "qwen3_moe": Family(qk_norm=True, moe="qwen"),
    "deepseek_v2": Family(moe="deepseek"),
    "deepseek_v3": Family(moe="deepseek"),
    "kimi_k2": Family(moe="deepseek"),
    "gpt_oss": Family(moe="gpt_oss", sinks=True),
}
FAMILIES["gemma3"] = FAMILIES["gemma3_text"]
FALCON_TYPES = ("falcon", "RefinedWeb", "RefinedWebModel")


@dataclass(frozen=True)
class ParamCount:
    total: int
    active: int          # per token: MoE routes each token through top-k experts
    embedding: int       # the input embedding table: a lookup, not a matmul

    @property
    def is_moe(self) -> bool:
        return self.active != self.total


# Physical bounds on what a config may say: far past any real model, close enough that an
# absurd value is refused before it is multiplied into a parameter count.
MAX_WIDTH = 1 << 24          # hidden, MLP and vocabulary sizes
MAX_LAYERS = 10_000
MAX_EXPERTS = 1 << 16


def _reader(cfg: dict, prefix: str, model_type: str) -> ConfigFields:
    return ConfigFields(cfg, prefix, maximum=MAX_WIDTH,
                        missing=f"is missing from config.json, and a {model_type} model's parameter count needs it")


def _top_k(c: ConfigFields, experts: int, also: tuple = ()) -> int:
    """Experts each token is routed to: at least one, at most all of them."""
    return c.int("num_experts_per_tok", maximum=experts, also=also)


def count_params(cfg: dict) -> ParamCount:
    """Total, active and embedding parameters of the language model this config describes."""
    inner = cfg.get("text_config")
    text, prefix = (inner, "text_config.") if isinstance(inner, dict) else (cfg, "")
    model_type = str(text.get("model_type") or cfg.get("model_type") or "")
    c = _reader(text, prefix, model_type or "unknown")
    if model_type in FALCON_TYPES:
        return _falcon(c, model_type)
    family = FAMILIES.get(model_type)
    if family is None:
        raise InputError(prefix + "model_type", f"the parameter count of a {model_type or 'unnamed'!r} model "
                         "is not derived here (only " + ", ".join(sorted(FAMILIES)) + " and falcon); "
                         "give the parameter count or the weights' size")
    hidden = c.int("hidden_size")
    vocab = c.int("vocab_size")
    layers = c.int("num_hidden_layers", maximum=MAX_LAYERS)
    embedding = vocab * hidden
    head = 0 if c.flag("tie_word_embeddings", family.tied_default) else vocab * hidden
    attention = _mla(c, hidden) if "kv_lora_rank" in text and family.moe == "deepseek" else _attention(c, family, hidden)
    norms = family.norms_per_layer * hidden
    total = active = embedding + head + hidden        # the final norm
    for index in range(layers):
        mlp_total, mlp_active = _mlp(c, family, hidden, index, layers)
        total += attention + norms + mlp_total
        active += attention + norms + mlp_active
    return ParamCount(total, active, embedding)


def _attention(c: ConfigFields, family: Family, hidden: int) -> int:
    heads = c.int("num_attention_heads")
    kv_heads = c.int("num_key_value_heads", heads, maximum=heads)
    head_dim = c.int("head_dim") if c.cfg.get("head_dim") else hidden // heads
    if not head_dim:
        raise InvalidValue(c.prefix + "num_attention_heads", f"{heads:,} heads are more than the hidden size "
                                                           f"{hidden:,}: a head would have no width")
    q, kv = heads * head_dim, kv_heads * head_dim
    weights = hidden * q + 2 * hidden * kv + q * hidden
    bias = c.flag(family.bias_key)
    biases = (q + 2 * kv + hidden) if bias else (q + 2 * kv) if family.qkv_bias else 0
    return weights + biases + (2 * head_dim if family.qk_norm else 0) + (heads if family.sinks else 0)


def _mla(c: ConfigFields, hidden: int) -> int:
    """DeepSeek's multi-head latent attention projections (transformers DeepseekV3Attention)."""
    heads = c.int("num_attention_heads")
    nope, rope = c.int("qk_nope_head_dim"), c.int("qk_rope_head_dim")
    v_dim, latent = c.int("v_head_dim"), c.int("kv_lora_rank")
    q_width = heads * (nope + rope)
    q_rank = c.cfg.get("q_lora_rank")
    if q_rank:
        q_rank = c.int("q_lora_rank")
        query = hidden * q_rank + q_rank + q_rank * q_width          # q_a, its norm, q_b
    else:
        query = hidden * q_width
    kv = hidden * (latent + rope) + latent + latent * heads * (nope + v_dim)
    return query + kv + heads * v_dim * hidden


def _mlp(c: ConfigFields, family: Family, hidden: int, index: int, layers: int) -> tuple[int, int]:
    """(total, active) parameters of layer `index`'s feed-forward block."""
    def gated(width: int, bias: bool = False) -> int:
        return 3 * hidden * width + ((2 * width + hidden) if bias else 0)

    if family.moe == "mixtral":
        experts = c.int("num_local_experts", maximum=MAX_EXPERTS)
        top_k = _top_k(c, experts)
        expert = gated(c.int("intermediate_size"))
        router = hidden * experts
        return router + experts * expert, router + top_k * expert
    if family.moe == "gpt_oss":
        # transformers GptOssExperts: fused gate_up and down projections, each with a bias; a biased router
        experts = c.int("num_local_experts", maximum=MAX_EXPERTS)
        top_k = _top_k(c, experts, also=("experts_per_token",))
        expert = gated(c.int("intermediate_size"), bias=True)
        router = hidden * experts + experts
        return router + experts * expert, router + top_k * expert
    if family.moe == "qwen":
        sparse_step = c.int("decoder_sparse_step", 1, maximum=MAX_LAYERS)
        dense_only = c.layer_set("mlp_only_layers", layers)
        experts = c.int("num_experts", 0, minimum=0, maximum=MAX_EXPERTS)
        if experts and index not in dense_only and (index + 1) % sparse_step == 0:
            top_k = _top_k(c, experts)
            expert = gated(c.int("moe_intermediate_size"))
            shared_width = c.int("shared_expert_intermediate_size", 0, minimum=0)
            shared = gated(shared_width) + hidden if shared_width else 0    # with its sigmoid gate
            router = hidden * experts
            return router + experts * expert + shared, router + top_k * expert + shared
        return gated(c.int("intermediate_size")), gated(c.int("intermediate_size"))
    if family.moe == "deepseek":
        experts = c.int("n_routed_experts", 0, minimum=0, maximum=MAX_EXPERTS)
        first_dense = c.int("first_k_dense_replace", 0, minimum=0, maximum=MAX_LAYERS)
        frequency = c.int("moe_layer_freq", 1, maximum=MAX_LAYERS)
        if experts and index >= first_dense and index % frequency == 0:
            top_k = _top_k(c, experts)
            expert = gated(c.int("moe_intermediate_size"))
            shared = c.int("n_shared_experts", 0, minimum=0, maximum=MAX_EXPERTS) * expert
            # noaux_tc routing adds a learned bias per expert (e_score_correction_bias)
            router = hidden * experts + (experts if c.cfg.get("topk_method") == "noaux_tc" else 0)
            return router + experts * expert + shared, router + top_k * expert + shared
        return gated(c.int("intermediate_size")), gated(c.int("intermediate_size"))
    width = c.int("intermediate_size")
    total = gated(width, c.flag(family.mlp_bias_key))
    return total, total


def _falcon(c: ConfigFields, model_type: str) -> ParamCount:
    """transformers FalconModel: fused QKV, a plain 4h MLP, LayerNorms with biases, tied head."""
    hidden = c.int("hidden_size")
    vocab = c.int("vocab_size")
    layers = c.int("num_hidden_layers", maximum=MAX_LAYERS, also=("n_layer",))
    heads = c.int("num_attention_heads", maximum=hidden, also=("n_head",))
    head_dim = hidden // heads
    new_arch = c.flag("new_decoder_architecture") or (model_type != "falcon" and hidden == 8192)
    if new_arch:
        kv_heads = c.int("num_kv_heads", heads, maximum=heads, also=("n_head_kv",))
    else:
        kv_heads = 1 if c.flag("multi_query", True) else heads
    bias = c.flag("bias")
    qkv_width = (heads + 2 * kv_heads) * head_dim
    ffn = c.int("ffn_hidden_size", 4 * hidden)
    attention = hidden * qkv_width + hidden * hidden + ((qkv_width + hidden) if bias else 0)
    mlp = 2 * hidden * ffn + ((ffn + hidden) if bias else 0)
    layer_norms = c.int("num_ln_in_parallel_attn", 2) if new_arch else (2 if not c.flag("parallel_attn", True) else 1)
    per_layer = attention + mlp + layer_norms * 2 * hidden
    embedding = vocab * hidden
    head = 0 if c.flag("tie_word_embeddings", True) else embedding
    total = embedding + head + 2 * hidden + layers * per_layer
    return ParamCount(total, total, embedding)
