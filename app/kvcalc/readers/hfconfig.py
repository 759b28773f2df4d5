"""Read a Hugging Face config.json the way vLLM and transformers read it.

Field names and defaults follow vLLM's `model_arch_config_convertor.py` / `get_head_size` /
`get_num_kv_heads` and the transformers configuration classes named beside each rule. Where a
field the cache depends on is missing and no documented default applies, we refuse, naming it.
"""

import json
import re

from . import architectures as known_architectures
from .config_fields import ConfigFields, show
from ..errors import InputError
from ..layers import (
    ChunkedLocalAttention, FullAttention, IndexedAttention, MLAAttention, NoCache, SlidingWindowAttention,
    StateSpaceLayer)
from ..model import AddedLayers, ConfigShapes, Model, MtpConfig, VisionTower
from .params import count_params, has_quantization, quantized_weights
from ..precision import precision
from .vision_params import tp_splits, unsplit_attention_heads, vision_groups
from ..units import ceil_div

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
MLA_MODEL_TYPES = {"deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_mtp", "kimi_k2", "kimi_vl", "kimi_linear",
                   "longcat_flash", "pangu_ultra_moe", "pangu_ultra_moe_mtp", "glm4_moe_lite",
                   "glm_moe_dsa", "mistral_large_3"}
# Model types whose sliding_window, with no per-layer pattern, applies to every layer.
UNIFORM_WINDOW_TYPES = {"mistral", "mixtral", "phi3", "phimoe", "starcoder2", "mistral3", "ministral"}
# transformers' default sliding_window_pattern where the config may leave it out.
DEFAULT_WINDOW_PATTERN = {"gemma3": 6, "gemma3_text": 6, "cohere2": 4, "gemma4": 6, "gemma4_text": 6}
# Fields that describe a layout we do not model yet: refuse rather than guess.
UNSUPPORTED_FIELDS = {
    "compress_ratios": "DeepSeek-V4's compressed sparse attention layers (a window cache, a cache compressed "
                       "4 or 128 times with its compressor state and an indexer, each in pages aligned to 576 B, "
                       "and how vLLM unifies those pages was not established from its code)",
}
# Gemma 4 (vLLM gemma4.py, Gemma4Attention; transformers Gemma4TextConfig): full-attention layers
# take their own head dim and, with attention_k_eq_v, their own kv heads; K and V are both kept.
GEMMA4_TYPES = {"gemma4", "gemma4_text"}
GEMMA4_ONLY = ("global_head_dim", "num_global_key_value_heads")
# Model types whose vLLM attention takes a V head dim of its own (mimo_v2_flash.py head_size_v).
SEPARATE_V_MODEL_TYPES = {"mimo_v2_flash", "mimo_v2"}
# vLLM MODELS_CONFIG_MAP (vllm/model_executor/models/config.py): Qwen3_5ForConditionalGenerationConfig
# copies text_config.mamba_ssm_dtype into cache_config.mamba_ssm_cache_dtype for these only.
SSM_DTYPE_ARCHITECTURES = {"Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"}
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

# Keys shaped like a cache dimension (a head dim, a head count, a window, a layer list): one the
# reader below does not know may change the cache, so a config carrying it is refused, naming it.
CACHE_SHAPED = re.compile(r"head_dim|^num_.*heads$|_heads$|window|_layers$|layer_types$|kv_lora|_kv_|kv_heads"
                          r"|^index_|^indexer|_types$|_pattern$|sparse_attention|compress")
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
    _refuse_unknown_keys(f)
    architecture = _architecture(cfg, "architectures")
    known_architectures.check(architecture)
    if text is not cfg:
        # A wrapper whose vLLM module builds the model text_config names (LLaVA, InternVL, ...).
        known_architectures.check(_architecture(text, prefix + "architectures"), prefix + "architectures")
    if text.get("use_cla"):
        # Hunyuan's cross-layer attention: vLLM builds the sharing layers as encoder-decoder
        # attention, which its KV cache spec refuses.
        raise InputError(prefix + "use_cla", "cross-layer KV sharing (CLA) is refused by vLLM's cache; no number")
    if model_type == "falcon_h1":
        raise InputError(prefix + "model_type", "falcon_h1 runs attention and Mamba-2 in every layer; "
                                                "not modelled yet")

    if model_type in ("mpt", "dbrx") or isinstance(text.get("attn_config"), dict) and f.has("d_model"):
        attention = _mpt(f)
    else:
        attention = _attention_dims(f, model_type)

    blocks = text.get("layers_block_type")
    if not any(f.has(k) for k in ("num_hidden_layers", "num_layers", "n_layer", "n_layers")) and \
            isinstance(blocks, list) and 0 < len(blocks) <= MAX_LAYERS:
        # transformers 5's NemotronHConfig: the layer count is the spelled-out layout's length.
        n_layers = len(blocks)
    else:
        n_layers = f.need_int("num_hidden_layers", "num_layers", "n_layer", "n_layers", maximum=MAX_LAYERS)
    kinds = _layer_kinds(f, model_type, n_layers, architecture)
    per_kind = {}
    if model_type in GEMMA4_TYPES:
        kinds, per_kind = _gemma4(f, kinds, attention)
    else:
        for key in GEMMA4_ONLY:
            if f.has(key):
                raise InputError(prefix + key, f"per-layer-kind head dims are read for Gemma 4 only, not model_type "
                                               f"{show(model_type)}; no number rather than a wrong one")
    shared = f.int("num_kv_shared_layers", minimum=0, maximum=n_layers) if f.has("num_kv_shared_layers") else 0
    if shared:
        # Gemma 3n and 4: the last layers reuse an earlier layer's cache of the same type (vLLM
        # kv_sharing_target_layer_name), so they allocate nothing.
        for kind in set(kinds[n_layers - shared:]):
            if kind not in kinds[:n_layers - shared]:
                raise InputError(prefix + "num_kv_shared_layers", f"a shared {kind} layer has no earlier {kind} "
                                                                  "layer to share with")
        kinds = kinds[:n_layers - shared] + ["none"] * shared
    ssm_dtype = _ssm_dtype(f, model_type, architecture) if any(k in ("state", "kda", "lightning") for k in kinds) \
        else None
    built = {kind: _build_layer(kind, f, per_kind.get(kind, attention), model_type, ssm_dtype) for kind in set(kinds)}
    layers = tuple(built[kind] for kind in kinds)

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
    kv_dtype = _kv_cache_scheme(cfg.get("quantization_config") or text.get("quantization_config"))
    if kv_dtype:
        notes.append("the checkpoint's quantization_config.kv_cache_scheme stores the cache in 8-bit floats, so vLLM's "
                     "--kv-cache-dtype auto allocates fp8 (resolve_kv_cache_dtype_string); that is the default here")
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
    mlp_key = f.first("intermediate_size", "ffn_hidden_size", "n_inner")
    moe_key = f.first("moe_intermediate_size", "expert_intermediate_size")
    topk_key = f.first("num_experts_per_tok", "moe_topk", "num_experts_per_token", "top_k_experts")
    # The widths of the MLP activations vLLM's profiling run allocates (its activation peak).
    experts = _positive(f, f.first("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"))
    expert_width = _positive(f, moe_key)
    if expert_width is None and experts and experts > 1:
        expert_width = _positive(f, mlp_key)       # Mixtral, gpt-oss: intermediate_size is one expert's
    mlp = {"mlp_size": _positive(f, mlp_key), "moe_mlp_size": expert_width,
           "experts_per_token": _positive(f, topk_key) if expert_width else None,
           "experts": experts if expert_width else None,
           # SGLang's adjust_mem_fraction_for_vlm reads the vision tower's depth and width.
           "vision_shape": _vision_shape(cfg),
           # A vision tower: vLLM's profiling run also runs its encoder.
           "multimodal": any(k in cfg for k in ("vision_config", "vision_tower", "mm_vision_tower", "visual",
                                                "audio_config")) or (architecture or "").endswith("ForConditionalGeneration")}
    hidden = f.int(hidden_key, maximum=1 << 24) if hidden_key else None
    return Model(
        name=name or extra.get("hf_repo") or str(cfg.get("_name_or_path") or model_type or "custom")[:100],
        layers=layers, dtype=dtype, attention_heads=attention.get("q_heads"),
        hidden_size=hidden, architecture=architecture,
        vocab_size=f.int(vocab_key, maximum=1 << 24) if vocab_key else CONFIG_DEFAULT_VOCAB.get(model_type),
        max_context_tokens=min(lengths) if lengths else None,   # vLLM takes the smallest
        weights_dtype=weights_dtype, kv_dtype=kv_dtype, notes=tuple(notes), shapes=config_shapes(cfg, hidden or 0),
        **mlp, **extra)


def config_shapes(cfg: dict, text_hidden: int) -> ConfigShapes:
    """What the sizing past the layers needs of a config, read here once so that no later stage
    reads the config again: its tensors by name and their quantized bytes (experts.py splits the
    weights by rank with them), its vision tower (serving/encoder.py), its MTP layers
    (serving/draft.py). What cannot be read is kept as the refusal, for the stage that needs it."""
    try:
        counted, tensors_unread = count_params(cfg), None
    except InputError as e:
        counted, tensors_unread = None, e
    tensors = counted.tensors if counted is not None else ()
    quantized = has_quantization(cfg)
    tensor_bytes = rule = quantized_unread = priced = None
    if quantized and tensors:
        try:
            priced = quantized_weights(cfg, counted)
            tensor_bytes, rule = priced.group_bytes, priced.rule
        except InputError as e:
            quantized_unread = e
    return ConfigShapes(tensors, tensors_unread, quantized, tensor_bytes, rule, quantized_unread,
                        _vision_tower(cfg, text_hidden), _mtp_config(cfg, counted, priced))


def _vision_tower(cfg: dict, text_hidden: int) -> VisionTower:
    try:
        groups, unread = tuple(vision_groups(cfg, text_hidden)), None
    except InputError as e:
        groups, unread = (), e
    try:
        splits, heads, splits_unread = tp_splits(cfg), unsplit_attention_heads(cfg), None
    except InputError as e:
        splits, heads, splits_unread = (), None, e
    return VisionTower(groups, unread, str(cfg.get("model_type") or ""), splits, heads, splits_unread)


def _mtp_config(cfg: dict, counted=None, priced=None) -> MtpConfig:
    """The language model's MTP keys, and the decoder layers its MTP count adds, counted as the
    config with that many more layers less the config (in its quantization_config's format)."""
    inner = cfg.get("text_config")
    text, prefix = (inner, "text_config.") if isinstance(inner, dict) else (cfg, "")
    model_type = str(text.get("model_type") or cfg.get("model_type") or "")
    key = next((k for k in ("num_nextn_predict_layers", "mtp_num_hidden_layers") if k in text), None)
    n = text.get(key) if key else None
    added = _added_layers(cfg, text, n, counted, priced) if isinstance(n, int) and not isinstance(n, bool) and 0 < n <= 16 else None
    return MtpConfig(prefix, model_type, frozenset(text), text.get("num_nextn_predict_layers"),
                     text.get("mtp_num_hidden_layers"), text.get("hidden_size"),
                     bool(text.get("mtp_use_dedicated_embeddings")), text.get("linear_conv_kernel_dim"), added)


def _added_layers(cfg: dict, text: dict, n: int, counted, priced) -> AddedLayers:
    """`counted` and `priced`: the config's own count and quantized bytes where already made."""
    layers = text.get("num_hidden_layers")
    if not isinstance(layers, int):
        return AddedLayers(n, no_layer_count=True)
    longer = dict(text, num_hidden_layers=layers + n)
    if isinstance(text.get("layer_types"), list):
        longer["layer_types"] = list(text["layer_types"]) + ["full_attention"] * n
    extended = dict(cfg, text_config=longer) if text is not cfg else longer
    try:
        if has_quantization(cfg):
            base = priced or quantized_weights(cfg)
            return AddedLayers(n, quantized_bytes=quantized_weights(extended).bytes - base.bytes,
                               quantized_rule=base.rule)
        return AddedLayers(n, params=count_params(extended).total - (counted or count_params(cfg)).total)
    except InputError as e:
        return AddedLayers(n, unread=e)


def _vision_shape(cfg: dict) -> tuple[int, int] | None:
    """(num_hidden_layers, hidden_size) of vision_config as SGLang reads them: 24 and 1024 where
    the keys are absent (it asks with getattr defaults)."""
    vision = cfg.get("vision_config")
    if not isinstance(vision, dict):
        return None
    layers, hidden = vision.get("num_hidden_layers", 24), vision.get("hidden_size", 1024)
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1 << 20 for v in (layers, hidden)):
        return None
    return layers, hidden


def _positive(f, key) -> int | None:
    """A width, when the config gives one as a positive whole number (some give lists per layer)."""
    value = f.cfg.get(key) if key else None
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 24 else None


def _kv_cache_scheme(quant) -> str | None:
    """fp8 where a checkpoint's quantization_config carries an 8-bit float kv_cache_scheme (ModelOpt,
    compressed-tensors), which vLLM's Attention turns "auto" into; any other scheme is refused."""
    scheme = quant.get("kv_cache_scheme") if isinstance(quant, dict) else None
    if scheme is None:
        return None
    if isinstance(scheme, dict) and scheme.get("num_bits") == 8 and scheme.get("type") == "float":
        return "fp8"
    raise InputError("quantization_config.kv_cache_scheme", f"{show(scheme)} is not a KV scheme this calculator "
                                                            "knows (8-bit float only)")


def _architecture(cfg: dict, field: str) -> str | None:
    value = cfg.get("architectures")
    if value is None:
        return None
    if not isinstance(value, list) or not value or not isinstance(value[0], str):
        raise InputError(field, f"expected a list of architecture names, got {show(value)}")
    return value[0][:100]


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


def _refuse_unknown_keys(f: ConfigFields) -> None:
    """A cache-shaped key this reader does not know could change the cache: refuse, naming it."""
    _refuse_unread_values(f)
    for key in f.cfg:
        if isinstance(key, str) and CACHE_SHAPED.search(key) and key not in READ_KEYS \
                and key not in HARMLESS_KEYS and f.cfg[key] is not None:
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


def _layer_kinds(f: ConfigFields, model_type: str, n: int, architecture: str | None = None) -> list[str]:
    """One of full / sliding / swa / chunked / mla / state / kda / lightning / none for each layer."""
    attention_kind = "mla" if f.has("kv_lora_rank") and model_type in MLA_MODEL_TYPES else "full"
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
        _refuse_unknown_keys(inner)
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


def _gemma4(f: ConfigFields, kinds: list, attention: dict) -> tuple[list, dict]:
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


def _build_layer(kind: str, f: ConfigFields, attention: dict, model_type: str = "", ssm_dtype: str | None = None):
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


def _ssm_dtype(f: ConfigFields, model_type: str, architecture: str | None = None) -> str | None:
    """Precision of the recurrent state where it differs from the model's, from every key vLLM
    reads (vllm/model_executor/models/config.py): mamba_ssm_cache_dtype (float32 by default for
    Nemotron-H, NemotronHForCausalLMConfig), and Qwen3.5's text_config.mamba_ssm_dtype
    (Qwen3_5ForConditionalGenerationConfig, for its two architectures only)."""
    value = f.cfg.get("mamba_ssm_cache_dtype")
    if isinstance(value, str) and value != "auto":
        return _dtype_name(f, "mamba_ssm_cache_dtype", value)
    value = f.cfg.get("mamba_ssm_dtype")
    if value is not None:
        if architecture not in SSM_DTYPE_ARCHITECTURES:
            raise InputError(f.prefix + "mamba_ssm_dtype", f"vLLM copies it into the state's dtype only for "
                             f"{', '.join(sorted(SSM_DTYPE_ARCHITECTURES))}, not {show(architecture)}; whether "
                             "this model's state is kept in it is not known")
        if not isinstance(value, str):
            raise InputError(f.prefix + "mamba_ssm_dtype", f"expected a dtype name, got {show(value)}")
        return None if value == "auto" else _dtype_name(f, "mamba_ssm_dtype", value)
    return "fp32" if model_type == "nemotron_h" else None


def _dtype_name(f: ConfigFields, key: str, value: str) -> str:
    name = precision(value, field=f.prefix + key).name
    if name not in ("fp32", "fp16", "bf16"):
        raise InputError(f.prefix + key, f"unexpected state dtype {show(value)}; expected float32, float16 or bfloat16")
    return name


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
