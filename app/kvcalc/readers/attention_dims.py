"""A config's attention dims as vLLM reads them (`get_head_size`, `get_num_kv_heads`): query and
kv heads per family, the head dim (and V's where vLLM sizes it apart), an MLA latent, and MPT /
DBRX's attn_config."""

from .config_fields import ConfigFields, show
from ..errors import InputError

# vLLM ModelConfig.is_deepseek_mla: only these model types run kv_lora_rank as a latent cache.
MLA_MODEL_TYPES = {"deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_mtp", "kimi_k2", "kimi_vl", "kimi_linear",
                   "longcat_flash", "pangu_ultra_moe", "pangu_ultra_moe_mtp", "glm4_moe_lite",
                   "glm_moe_dsa", "mistral_large_3"}
# Model types whose vLLM attention takes a V head dim of its own (mimo_v2_flash.py head_size_v).
SEPARATE_V_MODEL_TYPES = {"mimo_v2_flash", "mimo_v2"}


def deepseek_mha(f: ConfigFields, model_type: str) -> bool:
    """vLLM deepseek_v2.py DeepseekV2DecoderLayer (0.34.0): model_type "deepseek", or qk_nope_head_dim and
    qk_rope_head_dim both 0 (DeepSeek-OCR's language model), runs DeepseekAttention: plain multi-head
    attention over hidden_size // num_attention_heads wide heads, K and V alike, whatever kv_lora_rank and
    v_head_dim say."""
    if model_type not in ("deepseek_v2", "deepseek_v3"):
        return False
    return all(f.has(k) and f.cfg[k] == 0 and not isinstance(f.cfg[k], bool)
               for k in ("qk_nope_head_dim", "qk_rope_head_dim"))


def attention_dims(f: ConfigFields, model_type: str) -> dict:
    out = {}
    if deepseek_mha(f, model_type):
        q_heads = f.int(f.first("num_attention_heads") or "num_attention_heads")
        hidden = f.int("hidden_size", maximum=1 << 24)
        kv = f.int("num_key_value_heads") if f.has("num_key_value_heads") else q_heads
        if hidden % q_heads or kv > q_heads or q_heads % kv:
            raise InputError(f.prefix + "num_attention_heads", f"{q_heads} heads of {kv} kv heads do not split "
                                                               f"hidden_size {hidden} evenly")
        return {"q_heads": q_heads, "kv_heads": kv, "head_dim": hidden // q_heads}
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
    if kv > q_heads:
        raise InputError(f.prefix + "num_key_value_heads",
                         f"{kv} kv heads are more than the {q_heads} attention heads; no model has that")
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
    if f.has("v_head_dim") and f.cfg["v_head_dim"] != head_dim:
        # K and V sized apart only where vLLM's model code passes head_size_v to its Attention.
        if model_type not in SEPARATE_V_MODEL_TYPES:
            raise InputError(f.prefix + "v_head_dim", f"differs from head_dim {head_dim}, and how vLLM sizes V "
                             f"for model_type {show(model_type)} is not known; refusing to guess")
        out["v_head_dim"] = f.int("v_head_dim")
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


def mpt_attention(f: ConfigFields) -> dict:
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
