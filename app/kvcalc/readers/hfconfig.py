"""Read a Hugging Face config.json the way vLLM and transformers read it: the entry point
(model_from_config), the text config and its common keys (dtype, context, widths).

Field names and defaults follow vLLM's `model_arch_config_convertor.py` / `get_head_size` /
`get_num_kv_heads` and the transformers configuration classes named beside each rule. Where a
field the cache depends on is missing and no documented default applies, we refuse, naming it.
The subjects it reads through: config_keys (which keys are read, which refused), attention_dims,
layer_kinds (which layer each index is), config_layers (each kind's layer), config_dtypes
(quantization and state precisions) and config_shapes (what the later stages need).
"""

import json

from . import architectures as known_architectures
from .attention_dims import attention_dims, mpt_attention
from .config_dtypes import kv_cache_scheme, read_weights_dtype, state_dtype
from .config_fields import ConfigFields, show
from .config_keys import refuse_unknown_keys
from .config_layers import block_config_layers, build_layer, loop_layers
from .config_shapes import config_shapes
from .params import with_text_defaults
from ..errors import InputError
from .layer_kinds import GEMMA4_ONLY, GEMMA4_TYPES, cohere2_moe_kinds, gemma4_kinds, layer_kinds
from ..model import Model
from ..precision import precision

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


# Fields that describe a layout we do not model yet: refuse rather than guess.
UNSUPPORTED_FIELDS = {
    "compress_ratios": "DeepSeek-V4's compressed sparse attention layers (a window cache, a cache compressed "
                       "4 or 128 times with its compressor state and an indexer, each in pages aligned to 576 B, "
                       "and how vLLM unifies those pages was not established from its code)",
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


def model_from_config(cfg: dict, name: str | None = None, **extra) -> Model:
    """Turn a config.json dict into a Model. `extra` (params, hf_repo, source...) passes through."""
    if not isinstance(cfg, dict):
        raise InputError("hf-config", "config.json must be a JSON object")
    cfg = with_text_defaults(cfg)       # a wrapper's text_config as its config class completes it (LLaVA)
    text, prefix = _text_config(cfg)
    f = ConfigFields(text, prefix)
    model_type = str(text.get("model_type") or cfg.get("model_type") or "")
    for key, what in UNSUPPORTED_FIELDS.items():
        if f.has(key):
            raise InputError(prefix + key, f"{what} are not modelled yet; no number rather than a wrong one")
    refuse_unknown_keys(f)
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
        attention = mpt_attention(f)
    else:
        attention = attention_dims(f, model_type)

    blocks = text.get("layers_block_type")
    if not any(f.has(k) for k in ("num_hidden_layers", "num_layers", "n_layer", "n_layers")) and \
            isinstance(blocks, list) and 0 < len(blocks) <= MAX_LAYERS:
        # transformers 5's NemotronHConfig: the layer count is the spelled-out layout's length.
        n_layers = len(blocks)
    else:
        n_layers = f.need_int("num_hidden_layers", "num_layers", "n_layer", "n_layers", maximum=MAX_LAYERS)
    kinds = layer_kinds(f, model_type, n_layers, architecture)
    per_kind = {}
    if model_type == "cohere2_moe":
        kinds, per_kind = cohere2_moe_kinds(f, kinds, attention)
    if model_type != "cohere2_moe" and f.has("prefix_dense_sliding_window_pattern"):
        raise InputError(prefix + "prefix_dense_sliding_window_pattern", f"is read for Cohere 2 MoE only, not model_type "
                                                                        f"{show(model_type)}; no number rather than a wrong one")
    if model_type in GEMMA4_TYPES:
        kinds, per_kind = gemma4_kinds(f, kinds, attention)
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
    ssm_dtype = state_dtype(f, model_type, architecture) if any(k in ("state", "kda", "lightning") for k in kinds) \
        else None
    built = {kind: build_layer(kind, f, per_kind.get(kind, attention), model_type, ssm_dtype) for kind in set(kinds)}
    layers = tuple(built[kind] for kind in kinds)
    if f.has("block_configs"):
        if model_type != "nemotron-nas":
            raise InputError(prefix + "block_configs", f"per-layer blocks are read for Nemotron-NAS (model_type "
                                                       f"nemotron-nas) only, not {show(model_type)}")
        layers = block_config_layers(f, attention, n_layers)   # each block's own heads, or no cache
    if model_type == "iquestloopcoder":
        layers, extra["loop_caches"] = loop_layers(f, attention, layers)
    elif f.has("loop_num") or f.has("loop_window_size"):
        raise InputError(prefix + "loop_num", f"looped layers are read for IQuest LoopCoder (model_type "
                                              f"iquestloopcoder) only, not {show(model_type)}; no number")

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
    weights_dtype, quant_note = read_weights_dtype(text, dtype)
    if quant_note:
        notes.append(quant_note)
    kv_dtype = kv_cache_scheme(cfg.get("quantization_config") or text.get("quantization_config"))
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


_VISION_DEFAULTS = {"kimi_k25": (27, 1152)}


def _vision_shape(cfg: dict) -> tuple[int, int] | None:
    """(num_hidden_layers, hidden_size) of vision_config as SGLang reads them: 24 and 1024 where
    the keys are absent (it asks with getattr defaults)."""
    vision = cfg.get("vision_config")
    if not isinstance(vision, dict):
        return None
    # SGLang's own config class fills in its defaults where the dict lacks the keys: Kimi K2.5's
    # vision_config names them vt_num_hidden_layers / vt_hidden_size, and KimiK25VisionConfig
    # (sglang/srt/configs/kimi_k25.py, 0.5.8-0.5.23) defaults num_hidden_layers 27, hidden_size 1152.
    model_type = cfg.get("model_type")
    default_layers, default_hidden = _VISION_DEFAULTS.get(model_type if isinstance(model_type, str) else "", (24, 1024))
    layers, hidden = vision.get("num_hidden_layers", default_layers), vision.get("hidden_size", default_hidden)
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1 << 20 for v in (layers, hidden)):
        return None
    return layers, hidden


def _positive(f, key) -> int | None:
    """A width, when the config gives one as a positive whole number (some give lists per layer)."""
    value = f.cfg.get(key) if key else None
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 24 else None


def _architecture(cfg: dict, field: str) -> str | None:
    value = cfg.get("architectures")
    if value is None:
        return None
    if not isinstance(value, list) or not value or not isinstance(value[0], str):
        raise InputError(field, f"expected a list of architecture names, got {show(value)}")
    return value[0][:100]
