"""Parameter counts from a config.json's shapes, the way transformers builds the modules (the
weights' bytes a quantization_config gives them are readers/quantized_bytes).

Exact for the decoder families listed in FAMILIES; any other model_type is refused, because a
count that is almost right would size the weights wrongly without saying so. Each family says
what differs from the Llama layout: biases, norms per layer, query/key norms, tied embeddings,
gated or plain MLP, gated attention and Gated DeltaNet layers (Qwen3-Next, Qwen3.5).
Mixture-of-experts layers count every expert in the total and only the routed top-k plus
shared experts in the active count. Every parameter is also kept as a group of same-shaped
tensors with its module name (`Tensors`), so a quantization rule can price the linear weights
it quantizes and leave the rest in the checkpoint's 16-bit dtype (`quantized_bytes.quantized_weights`).
"""

from dataclasses import dataclass

from .attention_dims import deepseek_mha
from .config_fields import ConfigFields, InvalidValue
from ..errors import InputError
from ..model import Tensors     # noqa: F401 (params.Tensors: the groups a count is made of, typed in model.py)
from .vision_params import vision_groups


@dataclass(frozen=True)
class Family:
    tied_default: bool = False       # the config class's tie_word_embeddings default
    qkv_bias: bool = False           # biases on q, k, v (Qwen2)
    bias_key: str | None = "attention_bias"   # a config key that adds biases to q, k, v (and o, see o_bias_key)
    bias_default: bool = False       # that key's default in the config class
    o_bias_key: str | None = "="     # the key that adds a bias to o ("=": the same as bias_key)
    mlp_bias_key: str | None = None
    norms_per_layer: int = 2         # RMSNorm weights of width hidden
    qk_norm: bool = False            # per-head RMSNorm on queries and keys (Qwen3, Gemma 3)
    qk_norm_full: bool = False       # RMSNorm over all heads' queries and keys at once (OLMo 2, MiniMax-M2)
    qk_norm_key: str | None = None   # a config key that switches the query/key norm on (GLM-4.5)
    moe: str | None = None           # which MoE config keys: "mixtral", "qwen", "deepseek", "gpt_oss", ...
    sinks: bool = False              # one learned attention-sink logit per head (gpt-oss)
    gated_attention: bool = False    # q_proj twice as wide, half of it an output gate (Qwen3-Next)
    linear_attention: bool = False   # Gated DeltaNet layers where layer_types say linear_attention


FAMILIES = {
    "llama": Family(mlp_bias_key="mlp_bias"),
    "mistral": Family(bias_key=None),
    "qwen2": Family(qkv_bias=True, bias_key=None),
    "qwen3": Family(qk_norm=True),
    "phi3": Family(bias_key=None),
    "phi4-siglip": Family(bias_key=None),    # Phi-4-reasoning-vision: vLLM builds Phi3ForCausalLM over this config
    "gemma": Family(tied_default=True),
    "gemma2": Family(tied_default=True, norms_per_layer=4),
    "gemma3_text": Family(tied_default=True, norms_per_layer=4, qk_norm=True),
    "mixtral": Family(bias_key=None, moe="mixtral"),
    "qwen2_moe": Family(qkv_bias=True, bias_key=None, moe="qwen"),
    "qwen3_moe": Family(qk_norm=True, moe="qwen"),
    "deepseek_v2": Family(moe="deepseek"),
    "deepseek_v3": Family(moe="deepseek"),
    "kimi_k2": Family(moe="deepseek"),
    "deepseek_v32": Family(moe="deepseek"),     # DeepSeek-V3's layout plus the indexer (_mla)
    "glm_moe_dsa": Family(moe="deepseek"),      # GLM-5: DeepSeek-V3.2's (vLLM runs it as deepseek_v2)
    "gpt_oss": Family(moe="gpt_oss", sinks=True),
}
FAMILIES["gemma3"] = FAMILIES["gemma3_text"]
# The 2025-26 families (issue 21), each tested in tests/readers/test_weights_2026.py.
FAMILIES_2026 = {
    "ministral": Family(bias_key=None),     # transformers MinistralConfig: Mistral's layout
    # transformers Qwen3NextAttention / Qwen3NextGatedDeltaNet / Qwen3NextSparseMoeBlock
    "qwen3_next": Family(qk_norm=True, moe="qwen", gated_attention=True, linear_attention=True),
    # transformers Qwen3_5DecoderLayer (dense MLP) and Qwen3_5MoeDecoderLayer (experts in every layer)
    "qwen3_5_text": Family(qk_norm=True, gated_attention=True, linear_attention=True),
    "qwen3_5_moe_text": Family(qk_norm=True, moe="qwen_all", gated_attention=True, linear_attention=True),
    # transformers MiniMaxM2Attention (FlexOlmo's full-width q/k norms), MiniMaxM2SparseMoeBlock
    "minimax_m2": Family(bias_key=None, qk_norm_full=True, moe="minimax"),
    # transformers Glm4MoeAttention: biased q, k, v, plain o; q/k norms when use_qk_norm
    "glm4_moe": Family(o_bias_key=None, qk_norm_key="use_qk_norm", moe="glm"),
    # transformers Olmo2Attention: q_norm over heads x head_dim, k_norm over kv heads x head_dim;
    # the layer's two norms come after attention and after the MLP (Olmo3 the same)
    "olmo2": Family(qk_norm_full=True),
    "olmo3": Family(qk_norm_full=True),
    "smollm3": Family(tied_default=True, mlp_bias_key="mlp_bias"),
    # transformers SeedOssAttention: attention_bias (default true) on q, k, v; attention_out_bias on o
    "seed_oss": Family(bias_default=True, o_bias_key="attention_out_bias", mlp_bias_key="mlp_bias"),
    # transformers Ernie4_5Attention / Ernie4_5MLP: use_bias on every projection
    "ernie4_5": Family(tied_default=True, bias_key="use_bias", mlp_bias_key="use_bias"),
    "ernie4_5_moe": Family(tied_default=True, bias_key="use_bias", mlp_bias_key="use_bias", moe="ernie"),
    # transformers Qwen3VLTextDecoderLayer / Qwen3VLMoeTextSparseMoeBlock: Qwen3's and Qwen3-MoE's shapes
    "qwen3_vl_text": Family(qk_norm=True),
    "qwen3_vl_moe_text": Family(qk_norm=True, moe="qwen"),
    # transformers Qwen2_5_VLTextModel: Qwen2's layers (biased q, k, v; untied by default). The original
    # checkpoints' config.json is flat ("qwen2_5_vl" with the text keys beside vision_config).
    "qwen2_5_vl": Family(qkv_bias=True, bias_key=None),
    # transformers Qwen2VLModel (vLLM 0.10.2 qwen2_vl.py builds Qwen2ForCausalLM): Qwen2's layers, a flat config
    "qwen2_vl": Family(qkv_bias=True, bias_key=None),
    "qwen2_5_vl_text": Family(qkv_bias=True, bias_key=None),
}
FAMILIES_2026["qwen3_5"] = FAMILIES_2026["qwen3_5_text"]
FAMILIES_2026["qwen3_5_moe"] = FAMILIES_2026["qwen3_5_moe_text"]
FAMILIES.update(FAMILIES_2026)
FALCON_TYPES = ("falcon", "RefinedWeb", "RefinedWebModel")

# Wrappers whose config.json may keep the language model's keys at the top, beside vision_config,
# rather than under text_config: their tower is counted either way.
FLAT_VISION_WRAPPERS = ("qwen2_5_vl", "qwen2_vl", "phi4-siglip")
# The keys a wrapper's text_config may leave out, filled as transformers fills them: LlavaConfig builds
# text_config through CONFIG_MAPPING[text_config["model_type"]] (model_type "llama" when absent), so
# LlamaConfig's defaults apply (llava-hf's LLaVA-1.5 configs give only vocab_size, max_position_embeddings
# and rms_norm_eps). num_key_value_heads defaults to num_attention_heads in LlamaConfig.__init__.
TEXT_CONFIG_DEFAULTS = {
    ("llava", "llama"): {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                         "num_attention_heads": 32, "vocab_size": 32000, "max_position_embeddings": 2048},
}


def with_text_defaults(cfg: dict) -> dict:
    """cfg with its wrapper's text_config completed by the text config class's defaults (TEXT_CONFIG_DEFAULTS);
    cfg itself where none apply."""
    inner = cfg.get("text_config") if isinstance(cfg, dict) else None
    if not isinstance(inner, dict):
        return cfg
    wrapper = str(cfg.get("model_type") or "")
    defaults = TEXT_CONFIG_DEFAULTS.get((wrapper, str(inner.get("model_type") or "llama")))
    if defaults is None or all(key in inner for key in defaults):
        return cfg
    text = {**defaults, "model_type": inner.get("model_type") or "llama", **inner}
    return {**cfg, "text_config": text}


@dataclass(frozen=True)
class ParamCount:
    total: int
    active: int          # per token: MoE routes each token through top-k experts
    embedding: int       # the input embedding table: a lookup, not a matmul
    tensors: tuple = ()  # the Tensors groups that add up to total (none for Falcon)

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


class _Tally:
    """Tensors groups as a model is built, layer by layer."""

    def __init__(self):
        self.groups = []

    def linear(self, name, rows, cols, bias=False, role="linear", copies=1, active=None):
        active = copies if active is None else active
        self.groups.append(Tensors(name, role, rows, cols, copies, active))
        if bias:
            self.groups.append(Tensors(name + ".bias", "vector", rows, 1, copies, active))

    def vector(self, name, size, copies=1, fp32=False):
        self.groups.append(Tensors(name, "vector", size, 1, copies, copies, fp32))

    def count(self, embedding: int) -> ParamCount:
        groups = tuple(self.groups)
        return ParamCount(sum(g.elements for g in groups), sum(g.rows * g.cols * g.active for g in groups),
                          embedding, groups)

    def gated(self, name, hidden, width, bias=False, role="linear", copies=1, active=None):
        """A SwiGLU MLP: gate and up (hidden to width), down (width to hidden)."""
        self.linear(name + ".gate_proj", width, hidden, bias, role, copies, active)
        self.linear(name + ".up_proj", width, hidden, bias, role, copies, active)
        self.linear(name + ".down_proj", hidden, width, bias, role, copies, active)


def count_params(cfg: dict) -> ParamCount:
    """Total, active and embedding parameters of the model this config describes: the language
    model and, for a multimodal wrapper, its vision tower and projector (vision_params)."""
    cfg = with_text_defaults(cfg)
    inner = cfg.get("text_config")
    text, prefix = (inner, "text_config.") if isinstance(inner, dict) else (cfg, "")
    model_type = str(text.get("model_type") or cfg.get("model_type") or "")
    c = _reader(text, prefix, model_type or "unknown")
    if model_type in FALCON_TYPES:
        return _falcon(c, model_type)
    if model_type == "nemotron_h":
        return _nemotron_h(c)
    family = FAMILIES.get(model_type)
    if family is None:
        raise InputError(prefix + "model_type", f"the parameter count of a {model_type or 'unnamed'!r} model "
                         "is not derived here (only " + ", ".join(sorted(FAMILIES)) + " and falcon); "
                         "give the parameter count or the weights' size")
    hidden = c.int("hidden_size")
    vocab = c.int("vocab_size")
    layers = c.int("num_hidden_layers", maximum=MAX_LAYERS)
    t = _Tally()
    t.linear("model.embed_tokens", vocab, hidden, role="embed")
    # A wrapper's tie_word_embeddings sits beside text_config (Qwen3-VL's, Gemma 3's) and rules when
    # text_config has none, as transformers ties the wrapper's output embeddings.
    wrapper_tied = cfg.get("tie_word_embeddings") if text is not cfg else None
    tied_default = family.tied_default if wrapper_tied is None else \
        ConfigFields(cfg).flag("tie_word_embeddings", family.tied_default)
    if not c.flag("tie_word_embeddings", tied_default):
        t.linear("lm_head", vocab, hidden, role="head")
    t.vector("model.norm", hidden)
    mla = "kv_lora_rank" in text and family.moe == "deepseek" and not deepseek_mha(c, str(text.get("model_type") or ""))
    linear_layers = _linear_layers(c, layers) if family.linear_attention else frozenset()
    for index in range(layers):
        base = f"model.layers.{index}"
        if index in linear_layers:
            _gated_deltanet(c, t, base + ".linear_attn", hidden)
        elif mla:
            _mla(c, t, base + ".self_attn", hidden)
        else:
            _attention(c, t, family, base + ".self_attn", hidden)
        t.vector(base + ".norms", hidden, copies=family.norms_per_layer)
        _mlp(c, t, family, base, hidden, index, layers)
    if text is not cfg or model_type in FLAT_VISION_WRAPPERS:
        for name, rows, cols in vision_groups(cfg, hidden):
            t.linear(name, rows, cols, role="vision")
    return t.count(vocab * hidden)


def _linear_layers(c: ConfigFields, layers: int) -> frozenset:
    """Indices of the Gated DeltaNet layers: layer_types' linear_attention entries, else every
    layer but each full_attention_interval-th (transformers Qwen3NextConfig, default 4)."""
    types = c.cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers or \
                not all(t in ("linear_attention", "full_attention") for t in types):
            raise InvalidValue(c.prefix + "layer_types", f"expected {layers} entries of linear_attention or "
                                                         "full_attention")
        return frozenset(i for i, kind in enumerate(types) if kind == "linear_attention")
    interval = c.int("full_attention_interval", 4, maximum=MAX_LAYERS)
    return frozenset(i for i in range(layers) if (i + 1) % interval)


def _gated_deltanet(c: ConfigFields, t: _Tally, name: str, hidden: int) -> None:
    """transformers Qwen3NextGatedDeltaNet: in_proj_qkvz (q, k, v and the gate z) and in_proj_ba
    (beta and the decay's a, one per value head), a depthwise conv1d over q, k and v without
    bias, dt_bias and A_log per value head, a gated RMSNorm of one value head's width, out_proj.
    Qwen3.5 splits the two projections (in_proj_qkv + in_proj_z, in_proj_b + in_proj_a): the
    same shapes."""
    k_heads, v_heads = c.int("linear_num_key_heads"), c.int("linear_num_value_heads")
    k_dim, v_dim = c.int("linear_key_head_dim"), c.int("linear_value_head_dim")
    kernel = c.int("linear_conv_kernel_dim", 4)
    key, value = k_heads * k_dim, v_heads * v_dim
    t.linear(name + ".in_proj_qkvz", 2 * key + 2 * value, hidden)
    t.linear(name + ".in_proj_ba", 2 * v_heads, hidden)
    t.vector(name + ".conv1d", (2 * key + value) * kernel)
    t.vector(name + ".dt_bias", v_heads)
    t.vector(name + ".A_log", v_heads)
    t.vector(name + ".norm", v_dim)
    t.linear(name + ".out_proj", hidden, value)


def _attention(c: ConfigFields, t: _Tally, family: Family, name: str, hidden: int) -> None:
    heads = c.int("num_attention_heads")
    kv_heads = c.int("num_key_value_heads", heads, maximum=heads)
    head_dim = c.int("head_dim") if c.cfg.get("head_dim") else hidden // heads
    if not head_dim:
        raise InvalidValue(c.prefix + "num_attention_heads", f"{heads:,} heads are more than the hidden size "
                                                           f"{hidden:,}: a head would have no width")
    q, kv = heads * head_dim, kv_heads * head_dim
    bias = c.flag(family.bias_key, family.bias_default) or family.qkv_bias
    o_key = family.bias_key if family.o_bias_key == "=" else family.o_bias_key
    o_bias = c.flag(o_key, family.bias_default if o_key == family.bias_key else False)
    t.linear(name + ".q_proj", 2 * q if family.gated_attention else q, hidden, bias)
    t.linear(name + ".k_proj", kv, hidden, bias)
    t.linear(name + ".v_proj", kv, hidden, bias)
    t.linear(name + ".o_proj", hidden, q, o_bias)
    if family.qk_norm or (family.qk_norm_key and c.flag(family.qk_norm_key)):
        t.vector(name + ".q_norm", head_dim)
        t.vector(name + ".k_norm", head_dim)
    if family.qk_norm_full:
        t.vector(name + ".q_norm", q)
        t.vector(name + ".k_norm", kv)
    if family.sinks:
        t.vector(name + ".sinks", heads)


def _mla(c: ConfigFields, t: _Tally, name: str, hidden: int) -> None:
    """DeepSeek's multi-head latent attention projections (transformers DeepseekV3Attention)."""
    heads = c.int("num_attention_heads")
    nope, rope = c.int("qk_nope_head_dim"), c.int("qk_rope_head_dim")
    v_dim, latent = c.int("v_head_dim"), c.int("kv_lora_rank")
    q_width = heads * (nope + rope)
    q_rank = c.cfg.get("q_lora_rank")
    if q_rank:
        q_rank = c.int("q_lora_rank")
        t.linear(name + ".q_a_proj", q_rank, hidden)
        t.vector(name + ".q_a_layernorm", q_rank)
        t.linear(name + ".q_b_proj", q_width, q_rank)
    else:
        t.linear(name + ".q_proj", q_width, hidden)
    t.linear(name + ".kv_a_proj_with_mqa", latent + rope, hidden)
    t.vector(name + ".kv_a_layernorm", latent)
    t.linear(name + ".kv_b_proj", heads * (nope + v_dim), latent)
    t.linear(name + ".o_proj", hidden, heads * v_dim)
    if c.cfg.get("index_head_dim") is not None:
        # DeepSeek-V3.2's lightning indexer (GLM-5's the same): its queries from the q latent,
        # one shared key, a LayerNorm with bias on that key, and a weight per indexer head.
        dim, index_heads = c.int("index_head_dim"), c.int("index_n_heads")
        if not q_rank:
            raise InvalidValue(c.prefix + "q_lora_rank", "the sparse-attention indexer reads its queries from "
                                                         "the q latent, so q_lora_rank is needed")
        t.linear(name + ".indexer.wq_b", index_heads * dim, q_rank)
        t.linear(name + ".indexer.wk", dim, hidden)
        t.vector(name + ".indexer.k_norm", 2 * dim)
        t.linear(name + ".indexer.weights_proj", index_heads, hidden)


def _experts(t: _Tally, name: str, hidden: int, width: int, experts: int, top_k: int, bias: bool = False,
             names: tuple = ("gate_proj", "up_proj", "down_proj")) -> None:
    gate, up, down = names
    for part, rows, cols in ((gate, width, hidden), (up, width, hidden), (down, hidden, width)):
        t.linear(f"{name}.{part}", rows, cols, bias, role="expert", copies=experts, active=top_k)


def _mlp(c: ConfigFields, t: _Tally, family: Family, base: str, hidden: int, index: int, layers: int) -> None:
    """Layer `index`'s feed-forward block."""
    moe = family.moe
    if moe in ("mixtral", "minimax"):
        # transformers MixtralSparseMoeBlock (w1 gate, w3 up, w2 down); MiniMax-M2 adds the
        # router's e_score_correction_bias
        experts = c.int("num_local_experts", maximum=MAX_EXPERTS)
        top_k = _top_k(c, experts)
        name = base + ".block_sparse_moe"
        t.linear(name + ".gate", experts, hidden, role="router")
        if moe == "minimax":
            t.vector(name + ".e_score_correction_bias", experts)
        _experts(t, name + ".experts", hidden, c.int("intermediate_size"), experts, top_k,
                 names=("w1", "w3", "w2"))
        return
    if moe == "gpt_oss":
        # transformers GptOssExperts: fused gate_up and down projections, each with a bias; a biased router
        experts = c.int("num_local_experts", maximum=MAX_EXPERTS)
        top_k = _top_k(c, experts, also=("experts_per_token",))
        width = c.int("intermediate_size")
        t.linear(base + ".mlp.router", experts, hidden, bias=True, role="router")
        t.linear(base + ".mlp.experts.gate_up_proj", 2 * width, hidden, True, "expert", experts, top_k)
        t.linear(base + ".mlp.experts.down_proj", hidden, width, True, "expert", experts, top_k)
        return
    if moe in ("qwen", "qwen_all"):
        if moe == "qwen_all":
            experts = c.int("num_experts", maximum=MAX_EXPERTS)
            sparse = True
        else:
            sparse_step = c.int("decoder_sparse_step", 1, maximum=MAX_LAYERS)
            dense_only = c.layer_set("mlp_only_layers", layers)
            experts = c.int("num_experts", 0, minimum=0, maximum=MAX_EXPERTS)
            sparse = experts and index not in dense_only and (index + 1) % sparse_step == 0
        if sparse:
            name = base + ".mlp"
            t.linear(name + ".gate", experts, hidden, role="router")
            _experts(t, name + ".experts", hidden, c.int("moe_intermediate_size"), experts, _top_k(c, experts))
            shared_width = c.int("shared_expert_intermediate_size", 0, minimum=0)
            if shared_width:                 # with its sigmoid gate
                t.gated(name + ".shared_expert", hidden, shared_width)
                t.linear(name + ".shared_expert_gate", 1, hidden, role="router")
            return
        t.gated(base + ".mlp", hidden, c.int("intermediate_size"))
        return
    if moe in ("deepseek", "glm"):
        experts = c.int("n_routed_experts", 0, minimum=0, maximum=MAX_EXPERTS)
        first_dense = c.int("first_k_dense_replace", 0, minimum=0, maximum=MAX_LAYERS)
        frequency = c.int("moe_layer_freq", 1, maximum=MAX_LAYERS) if moe == "deepseek" else 1
        if experts and index >= first_dense and index % frequency == 0:
            name = base + ".mlp"
            width = c.int("moe_intermediate_size")
            t.linear(name + ".gate", experts, hidden, role="router")
            # noaux_tc routing adds a learned bias per expert (e_score_correction_bias), kept in
            # float32 (DeepSeek-V3's MoEGate, transformers Glm4MoeTopkRouter); GLM always has it
            if moe == "glm" or c.cfg.get("topk_method") == "noaux_tc":
                t.vector(name + ".gate.e_score_correction_bias", experts, fp32=True)
            _experts(t, name + ".experts", hidden, width, experts, _top_k(c, experts))
            shared = c.int("n_shared_experts", 0, minimum=0, maximum=MAX_EXPERTS)
            if shared:
                t.gated(name + ".shared_experts", hidden, shared * width)
            return
        t.gated(base + ".mlp", hidden, c.int("intermediate_size"))
        return
    if moe == "ernie":
        # transformers Ernie4_5_MoeDecoderLayer: experts where (i + 1) % moe_layer_interval == 0
        # and moe_layer_start_index <= i <= moe_layer_end_index (-1: the last layer); a router,
        # its float32 correction bias (moe_statics), shared experts of moe_num_shared_experts widths
        experts = c.int("moe_num_experts", 0, minimum=0, maximum=MAX_EXPERTS)
        start = c.int("moe_layer_start_index", 0, minimum=0, maximum=MAX_LAYERS)
        end = c.cfg.get("moe_layer_end_index", -1)
        end = layers - 1 if end == -1 else c.int("moe_layer_end_index", minimum=0, maximum=MAX_LAYERS)
        interval = c.int("moe_layer_interval", 1, maximum=MAX_LAYERS)
        bias = c.flag(family.mlp_bias_key)
        if experts and (index + 1) % interval == 0 and start <= index <= end:
            name = base + ".mlp"
            width = c.int("moe_intermediate_size")
            t.linear(name + ".gate", experts, hidden, role="router")
            t.vector(name + ".moe_statics.e_score_correction_bias", experts, fp32=True)
            _experts(t, name + ".experts", hidden, width, experts, c.int("moe_k", maximum=experts), bias)
            shared = c.int("moe_num_shared_experts", 0, minimum=0, maximum=MAX_EXPERTS)
            if shared:
                t.gated(name + ".shared_experts", hidden, shared * width, bias)
            return
        t.gated(base + ".mlp", hidden, c.int("intermediate_size"), bias)
        return
    t.gated(base + ".mlp", hidden, c.int("intermediate_size"), c.flag(family.mlp_bias_key))


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


NEMOTRON_BLOCKS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}


def _nemotron_h(c: ConfigFields) -> ParamCount:
    """vLLM nemotron_h.py: one RMSNorm and one mixer per layer, by hybrid_override_pattern (or its
    spelled-out layers_block_type). Mamba-2 (MambaMixer2): in_proj to 2 x intermediate + 2 x groups
    x state + heads, a depthwise conv over intermediate + 2 x groups x state channels, A, D and
    dt_bias per head, a gated norm, out_proj. Attention without biases. MLP and experts are
    ungated (relu2): up and down only. MoE: a router with its correction bias (float32), the
    experts (in moe_latent_size, between two latent projections, where the config sets one) and
    the shared experts."""
    hidden, vocab = c.int("hidden_size"), c.int("vocab_size")
    pattern = c.cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        blocks = [NEMOTRON_BLOCKS.get(symbol) for symbol in pattern]
    else:
        blocks = c.cfg.get("layers_block_type")
        if not isinstance(blocks, list):
            raise InvalidValue(c.prefix + "hybrid_override_pattern", "missing (nor layers_block_type)")
    if None in blocks or not set(blocks) <= set(NEMOTRON_BLOCKS.values()) or len(blocks) > MAX_LAYERS:
        raise InvalidValue(c.prefix + "hybrid_override_pattern", "expected M, *, - and E blocks only")
    t = _Tally()
    t.linear("backbone.embeddings", vocab, hidden, role="embed")
    if not c.flag("tie_word_embeddings"):
        t.linear("lm_head", vocab, hidden, role="head")
    t.vector("backbone.norm_f", hidden)
    mlp_index = 0
    for index, block in enumerate(blocks):
        base = f"backbone.layers.{index}"
        t.vector(base + ".norm", hidden)
        if block == "mamba":
            _mamba2(c, t, base + ".mixer", hidden)
        elif block == "attention":
            heads = c.int("num_attention_heads")
            kv_heads = c.int("num_key_value_heads", heads, maximum=heads)
            head_dim = c.int("head_dim") if c.cfg.get("head_dim") else hidden // heads
            for part, rows, cols in (("q_proj", heads * head_dim, hidden), ("k_proj", kv_heads * head_dim, hidden),
                                     ("v_proj", kv_heads * head_dim, hidden), ("o_proj", hidden, heads * head_dim)):
                t.linear(f"{base}.mixer.{part}", rows, cols)
        elif block == "mlp":
            width = c.cfg.get("intermediate_size")
            if isinstance(width, list):          # one width per MLP layer, or one for all
                mlps = blocks.count("mlp")
                if len(width) not in (1, mlps):
                    raise InvalidValue(c.prefix + "intermediate_size", f"expected one width, or one per MLP "
                                                                       f"layer ({mlps})")
                width = width[0] if len(width) == 1 else width[mlp_index]
                width = ConfigFields({"intermediate_size": width}, c.prefix).int("intermediate_size")
            else:
                width = c.int("intermediate_size")
            mlp_index += 1
            bias = c.flag("mlp_bias")
            t.linear(base + ".mixer.up_proj", width, hidden, bias)
            t.linear(base + ".mixer.down_proj", hidden, width, bias)
        else:
            _nemotron_moe(c, t, base + ".mixer", hidden)
    return t.count(vocab * hidden)


def _mamba2(c: ConfigFields, t: _Tally, name: str, hidden: int) -> None:
    heads, head_dim = c.int("mamba_num_heads"), c.int("mamba_head_dim")
    groups, state, kernel = c.int("n_groups"), c.int("ssm_state_size"), c.int("conv_kernel")
    inner = heads * head_dim
    conv = inner + 2 * groups * state
    bias = c.flag("use_bias")
    t.linear(name + ".in_proj", inner + conv + heads, hidden, bias)
    t.vector(name + ".conv1d", conv * kernel + (conv if c.flag("use_conv_bias", True) else 0))
    t.vector(name + ".A_D_dt_bias", 3 * heads)
    t.vector(name + ".norm", inner)
    t.linear(name + ".out_proj", hidden, inner, bias)


def _nemotron_moe(c: ConfigFields, t: _Tally, name: str, hidden: int) -> None:
    experts = c.int("n_routed_experts", maximum=MAX_EXPERTS)
    top_k = _top_k(c, experts)
    width = c.int("moe_intermediate_size")
    latent = c.int("moe_latent_size") if c.cfg.get("moe_latent_size") is not None else None
    inner = latent or hidden
    t.linear(name + ".gate", experts, hidden, role="router")
    t.vector(name + ".gate.e_score_correction_bias", experts, fp32=True)
    t.linear(name + ".experts.up_proj", width, inner, role="expert", copies=experts, active=top_k)
    t.linear(name + ".experts.down_proj", inner, width, role="expert", copies=experts, active=top_k)
    shared = c.int("n_shared_experts", 0, minimum=0, maximum=MAX_EXPERTS)
    if shared:
        shared_width = c.int("moe_shared_expert_intermediate_size") * shared
        t.linear(name + ".shared_experts.up_proj", shared_width, hidden, c.flag("mlp_bias"))
        t.linear(name + ".shared_experts.down_proj", hidden, shared_width, c.flag("mlp_bias"))
    if latent:
        t.linear(name + ".fc1_latent_proj", latent, hidden, c.flag("mlp_bias"))
        t.linear(name + ".fc2_latent_proj", hidden, latent, c.flag("mlp_bias"))
