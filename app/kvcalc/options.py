"""The inputs, one schema for the CLI, the share link and the page.

Every input has one name: the CLI's long option, the link's key and the page field's name are
the same string. `evaluate(raw)` takes those names to raw values (strings, as a form or a URL
gives them) and returns the engine's result, or the errors naming the fields at fault.
"""

import re
from dataclasses import dataclass, field, fields, is_dataclass, replace
from fractions import Fraction
from functools import lru_cache

from . import engines, presets
from .config_fields import InvalidValue
from .errors import InputError
from .hfconfig import model_from_config
from .layers import FullAttention, MLAAttention, SlidingWindowAttention
from .model import Model
from .params import count_params
from .precision import Precision, precision
from .sizing import Deployment, Result, Workload, compute
from .timing import time_bounds
from .units import GIB, ceil_div



@dataclass(frozen=True)
class Option:
    name: str
    kind: str            # int, decimal, count, text, list, config
    group: str           # model, workload, deployment, view
    help: str
    minimum: Fraction | int | None = None
    maximum: Fraction | int | None = None
    default: str | None = None
    choice: object = None  # a text option's parser: (text, name) -> the canonical spelling, or InputError


def _precision_name(text: str, name: str) -> str:
    return precision(text, field=name).name


def _engine_name(text: str, name: str) -> str:
    return engines.engine_name(text)


def _gpu_id(text: str, name: str) -> str:
    return presets.gpu(text, field=name).id


def _unit(text: str, name: str) -> str:
    unit = text.strip().lower()
    if unit not in UNITS:
        raise InputError(name, f"expected gib or gb, got {_clip(text)!r}")
    return unit


OPTIONS = (
    Option("model", "text", "model", "Preset id or Hugging Face repo id, case-insensitive."),
    Option("hf-config", "config", "model", "A Hugging Face config.json, read the way vLLM reads it."),
    Option("layers", "int", "model", "Custom model: number of layers.", 1, 10_000),
    Option("kv-heads", "int", "model", "Custom model: key/value heads per layer (1 = MQA).", 1, 100_000),
    Option("head-dim", "int", "model", "Custom model: dimension of each head.", 1, 100_000),
    Option("attention-heads", "int", "model", "Custom model: query heads (tensor parallel must divide them).", 1, 100_000),
    Option("mla-rank", "int", "model", "Custom MLA model: kv_lora_rank, the latent width.", 1, 100_000),
    Option("mla-rope-dim", "int", "model", "Custom MLA model: qk_rope_head_dim.", 0, 100_000),
    Option("sliding-window", "int", "model", "Custom model: every layer keeps only this many tokens.", 1, 1 << 40),
    Option("hidden-size", "int", "model", "Custom model: hidden size (with MLP size and vocabulary, the parameter "
           "count of a Llama-style decoder).", 1, 1 << 20),
    Option("mlp-size", "int", "model", "Custom model: the MLP's intermediate size (gated, as Llama's).", 1, 1 << 22),
    Option("vocab-size", "int", "model", "Custom model: vocabulary size (embeddings and output head, untied).",
           1, 1 << 22),
    Option("context", "int", "workload", "Tokens per request: prompt plus generated.", 1, 1 << 34, "8192"),
    Option("batch", "int", "workload", "Concurrent requests, each with its own cache.", 1, 1 << 34, "1"),
    Option("kv-dtype", "text", "workload", "Precision the cache is stored in (default: the model's dtype).",
           choice=_precision_name),
    Option("block-size", "int", "workload", "PagedAttention block size in tokens; each layer rounds up to whole blocks (vLLM default 16).", 1, 1 << 20),
    Option("prefix-tokens", "int", "workload", "A prompt prefix shared by every request, cached once.", 0, 1 << 34, "0"),
    Option("prompt-tokens", "int", "workload", "The prompt's share of the context, for prefill time and time to "
           "first token (default: the whole context).", 1, 1 << 34),
    Option("gpus", "int", "deployment", "GPUs serving one copy of the model (tp x pp).", 1, 1 << 20, "1"),
    Option("tp", "int", "deployment", "Tensor-parallel size (default gpus / pp).", 1, 1 << 20),
    Option("pp", "int", "deployment", "Pipeline-parallel size: splits the layers.", 1, 10_000, "1"),
    Option("gpu", "text", "deployment", "GPU preset: sets memory and bandwidth.", choice=_gpu_id),
    Option("gpu-memory-gib", "decimal", "deployment", "Memory per GPU in GiB (overrides the preset).", Fraction(1, 1024), 1 << 24),
    Option("memory-utilization", "decimal", "deployment", "Fraction of GPU memory the engine may use, like vLLM's --gpu-memory-utilization.", Fraction(1, 100), 1, "1"),
    Option("weights-dtype", "text", "deployment", "Precision of the weights (default: the model's dtype).",
           choice=_precision_name),
    Option("params", "count", "deployment", "Parameter count, like 7.6B, 70e9 or 8030261248 (overrides the "
           "preset's).", 10 ** 6, 10 ** 15),
    Option("weights-gib", "decimal", "deployment", "Total weights in GiB (overrides params x precision).", 0, 1 << 30),
    Option("weights-bytes", "int", "deployment", "Exact weights in bytes, as a checkpoint's headers give them "
           "(--gguf and --weights-file set it; overrides the others).", 1, 1 << 50),
    Option("layer-weights-bytes", "list", "deployment", "Bytes outside the layers on the first stage, each "
           "layer's, then those on the last stage, comma-separated, as a checkpoint's headers give them: "
           "pipeline stages carry their own layers."),
    Option("overhead-gib", "decimal", "deployment", "Per-GPU memory for activations, CUDA graphs and the runtime.", 0, 1 << 24, "0"),
    Option("engine", "text", "engine", "Size the way this engine allocates: vllm, sglang or llama.cpp "
           "(default: the exact ideal, no engine's rules).", choice=_engine_name),
    Option("kv-memory-gib", "decimal", "engine", "KV cache memory per GPU the engine reported (vLLM's \"Available "
           "KV cache memory\"); skips the overhead estimate.", Fraction(1, 1024), 1 << 20),
    Option("prefill-chunk", "int", "engine", "Tokens per prefill step: vLLM --max-num-batched-tokens, SGLang "
           "--chunked-prefill-size, llama.cpp -ub (default: the engine's own).", 1, 1 << 24),
    Option("kv-dtype-v", "text", "engine", "llama.cpp: the V cache's type when it differs from K (-ctv).",
           choice=_precision_name),
    Option("unit", "text", "view", "Show sizes in GiB (2^30, what engines log) or GB (10^9).", default="gib",
           choice=_unit),
)
OPTION_BY_NAME = {o.name: o for o in OPTIONS}
MANUAL_FIELDS = ("layers", "kv-heads", "head-dim", "attention-heads", "mla-rank", "mla-rope-dim", "sliding-window",
                 "hidden-size", "mlp-size", "vocab-size")
SHAPE_FIELDS = ("hidden-size", "mlp-size", "vocab-size")     # a custom model's parameter count
MODEL_INPUTS = ("model", "hf-config", *MANUAL_FIELDS)   # every way to name the model
UNITS = ("gib", "gb")

_INT = re.compile(r"[0-9][0-9_,]{0,40}")
_DECIMAL = re.compile(r"[0-9]{1,16}(\.[0-9]{0,16})?|\.[0-9]{1,16}")
# A parameter count as model cards write it: 7.6B, 671B, 1.2T, 70e9, 350M, or every digit.
_COUNT = re.compile(r"(?P<number>[0-9][0-9_,]{0,20}(\.[0-9]{1,12})?|\.[0-9]{1,12})\s*"
                    r"(?:(?P<suffix>[kmbt])|e(?P<exponent>[0-9]{1,2}))?", re.IGNORECASE)
COUNT_SUFFIXES = {"k": 3, "m": 6, "b": 9, "t": 12}


def parse_count(name: str, raw: str) -> int:
    match = _COUNT.fullmatch(raw)
    if not match or ",," in raw or "__" in raw:
        raise InputError(name, f"expected a count like 7.6B, 70e9, 1.2T or 8030261248, got {_clip(raw)!r}")
    suffix = match["suffix"]
    exponent = COUNT_SUFFIXES[suffix.lower()] if suffix else int(match["exponent"] or 0)
    value = Fraction(match["number"].replace(",", "").replace("_", "")) * 10 ** exponent
    if value.denominator != 1:
        raise InputError(name, f"{_clip(raw)!r} is not a whole number of parameters")
    return int(value)


def parse_value(option: Option, raw):
    """One raw value (a string from a form, a link or argv; or an already typed value) to its type."""
    name = option.name
    if option.kind == "config":
        if isinstance(raw, dict):
            return raw
        raise InputError(name, "expected a config.json object")
    if isinstance(raw, bool):
        raise InputError(name, "expected a value, got true/false")
    text = raw.strip() if isinstance(raw, str) else raw
    if isinstance(text, str) and option.minimum is not None and re.fullmatch(r"-\s*[0-9.,_]+\w*", text):
        raise InputError(name, f"must be at least {_num(option.minimum)}, got {_clip(raw)!r}")
    if option.kind == "int":
        if isinstance(text, str):
            scale = 1
            if name in ("context", "prefix-tokens") and text[-1:] in ("k", "K"):
                text, scale = text[:-1], 1024   # 8K context means 8,192 tokens
            if not _INT.fullmatch(text) or ",," in text or "__" in text:
                raise InputError(name, f"expected a whole number, got {_clip(raw)!r}")
            value = int(text.replace(",", "").replace("_", "")) * scale
        elif isinstance(text, int):
            if text.bit_length() > 80:
                raise InputError(name, "is far too large")
            value = text
        else:
            raise InputError(name, f"expected a whole number, got {_clip(raw)!r}")
    elif option.kind == "count":
        if isinstance(text, str):
            value = parse_count(name, text)
        elif isinstance(text, int):
            value = text
        else:
            raise InputError(name, f"expected a count like 7.6B, got {_clip(raw)!r}")
        if value < option.minimum:
            raise InputError(name, f"{value:,} parameters is implausibly few for a language model; "
                                   f"give at least {option.minimum:,} (1M), e.g. 7.6B")
    elif option.kind == "decimal":
        if isinstance(text, str):
            if not _DECIMAL.fullmatch(text):
                raise InputError(name, f"expected a plain decimal number like 0.9, got {_clip(raw)!r}")
            value = Fraction(text)
        elif isinstance(text, (int, Fraction)):
            value = Fraction(text)
        else:
            raise InputError(name, f"expected a number, got {_clip(raw)!r}")
    elif option.kind == "list":
        if not isinstance(text, str) or not text:
            raise InputError(name, "expected numbers separated by commas")
        if len(text) > 1 << 16:
            raise InputError(name, "is longer than 65,536 characters")
        return text
    else:
        if not isinstance(text, str) or not text:
            raise InputError(name, "expected text")
        if len(text) > 200:
            raise InputError(name, "is longer than 200 characters")
        return option.choice(text, name) if option.choice else text
    if option.minimum is not None and value < option.minimum:
        raise InputError(name, f"{_num(value)} is too small; allowed {_num(option.minimum)} to {_num(option.maximum)}")
    if option.maximum is not None and value > option.maximum:
        raise InputError(name, f"{_num(value)} is too large; allowed {_num(option.minimum)} to {_num(option.maximum)}")
    return value


def _clip(raw) -> str:
    text = str(raw)
    return text if len(text) <= 30 else text[:27] + "..."


def _num(value) -> str:
    if isinstance(value, Fraction) and value.denominator != 1:
        digits = 0          # exact decimal: the bounds are powers of two and ten over 1
        while (value * 10 ** digits).denominator != 1 and digits < 20:
            digits += 1
        return f"{float(value):.{digits}f}"
    return f"{int(value):,}"


def parse_options(raw: dict) -> tuple[dict, list[InputError]]:
    """Typed values for the known, valid, non-empty entries, and an error for each bad one."""
    values, errors = {}, []
    for name, value in raw.items():
        option = OPTION_BY_NAME.get(name)
        if option is None:
            errors.append(InputError(str(name)[:40], "unknown option"))
            continue
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        try:
            values[name] = parse_value(option, value)
        except InputError as e:
            errors.append(e)
    return values, errors


@dataclass(frozen=True)
class Settings:
    """How the deployment is served, typed once from the inputs: the engine and what overrides
    its defaults. Engine rules, launch commands and time bounds read these, never the inputs."""
    engine: str | None = None                  # the engine sized as (None: the exact ideal)
    prefill_chunk: int | None = None           # given; else each engine's default
    kv_memory_gib: Fraction | None = None      # the KV memory a log printed
    overhead_given: bool = False               # an overhead above 0 that replaces the engine's estimate
    utilization_given: bool = False
    gpu_memory_given: bool = False             # a memory typed over the GPU preset's
    block_size: int | None = None              # as given (None: the engine's default)
    v_precision: Precision | None = None       # llama.cpp's V cache type, when not K's
    batch_given: bool = False                  # concurrent requests chosen, not the default one
    prompt_tokens: int | None = None
    weights_dtype: str | None = None           # given; else the model's


def settings_from(values: dict) -> Settings:
    return Settings(
        engine=values.get("engine"), prefill_chunk=values.get("prefill-chunk"),
        kv_memory_gib=values.get("kv-memory-gib"), overhead_given=values.get("overhead-gib", 0) > 0,
        utilization_given="memory-utilization" in values, gpu_memory_given="gpu-memory-gib" in values,
        block_size=values.get("block-size"),
        v_precision=precision(values["kv-dtype-v"], field="kv-dtype-v") if "kv-dtype-v" in values else None,
        batch_given="batch" in values, prompt_tokens=values.get("prompt-tokens"),
        weights_dtype=values.get("weights-dtype"))


@dataclass(frozen=True)
class Scenario:
    model: Model
    workload: Workload
    deployment: Deployment
    values: dict                       # the typed inputs it was built from (for links and exports)
    warnings: tuple[str, ...] = field(default=())
    settings: Settings = field(default=Settings())


def resolve_model(values: dict) -> tuple[Model, list[str]]:
    manual = [k for k in MANUAL_FIELDS if k in values]
    chosen = [k for k in ("hf-config",) if k in values]
    model_id = values.get("model")
    if model_id is not None and model_id.lower() == "custom":
        model_id = None
    if model_id is not None:
        chosen.append("model")
    if manual:
        chosen.append("layers")
    if len(chosen) > 1:
        raise InputError(chosen[-1], f"give one model: --{' or --'.join(chosen)}, not both")
    notes = []
    if "hf-config" in values:
        model, notes = _config_model(values["hf-config"])
        return model, list(notes)
    if model_id is not None:
        return presets.preset_model(model_id), notes
    if manual:
        return _manual_model(values), notes
    raise InputError("model", "choose a model: a preset or repo id (model), a config.json (hf-config), "
                              "or layers with kv-heads and head-dim")


_last_config: list = [None, None]     # (config dict, (its Model, notes)): the page re-evaluates one config


def _config_model(cfg: dict) -> tuple[Model, tuple[str, ...]]:
    # The same dict object comes back on every edit of the page; reading it again (and losing
    # the model's memos, matching presets, counting parameters) would cost as much as the rest
    # of the update.
    if _last_config[0] is not cfg:
        _last_config[:] = [cfg, _read_config(cfg)]
    return _last_config[1]


def _read_config(cfg: dict) -> tuple[Model, tuple[str, ...]]:
    """A config's model, with the preset's parameter count when it is a preset's config, else
    the count its shapes give."""
    model, notes = model_from_config(cfg), []
    named = cfg.get("_name_or_path")
    entry = presets.find_model_entry(named) if isinstance(named, str) and named else None
    if entry is not None:
        preset = presets.preset_model(entry["id"])
        if _same_shapes(model, cfg, preset, entry["config"]):
            model = replace(model, params=preset.params, active_params=preset.active_params,
                             hf_repo=preset.hf_repo)
            return model, (f"parameter count taken from the {preset.name} preset",)
    model = _with_counted_params(model, cfg, notes)
    return model, tuple(notes)


def _same_shapes(model: Model, cfg: dict, preset: Model, preset_cfg: dict) -> bool:
    """Whether a config named like a preset is that preset's model: the same layers and widths,
    and the same parameter count where the shapes give one (a name is only a claim)."""
    if preset.layers != model.layers or any(getattr(model, key) != getattr(preset, key) for key in (
            "attention_heads", "hidden_size", "vocab_size", "weights_dtype")):
        return False
    try:
        counted = count_params(cfg)
    except InputError:
        counted = None
    try:
        published = count_params(preset_cfg)
    except InputError:
        published = None
    return counted == published


def _with_counted_params(model: Model, cfg: dict, notes: list) -> Model:
    """The model with the parameter count its config's shapes give, or a note saying why not."""
    if model.params is not None:
        return model
    try:
        counted = count_params(cfg)
    except InvalidValue:
        raise
    except InputError as e:
        notes.append(f"parameters not counted from the config ({e.field}: {e.message})")
        return model
    active = f", {counted.active:,} active per token" if counted.is_moe else ""
    notes.append(f"parameters counted from the config's shapes: {counted.total:,}{active}")
    return replace(model, params=counted.total, active_params=counted.active if counted.is_moe else None)


def _manual_model(values: dict) -> Model:
    return _manual_model_of(tuple(values.get(name) for name in MANUAL_FIELDS))


@lru_cache(maxsize=16)
def _manual_model_of(fields: tuple) -> Model:
    # Cached so a custom model keeps its memos from one edit to the next.
    values = {name: value for name, value in zip(MANUAL_FIELDS, fields) if value is not None}
    n = _required(values, "layers")
    if "mla-rank" in values or "mla-rope-dim" in values:
        layer = MLAAttention(_required(values, "mla-rank"), values.get("mla-rope-dim", 0))
        return Model(name="custom MLA model", layers=(layer,) * n, notes=(
            "the weights' size of a custom MLA model needs the parameter count (params) or the weights' size "
            "(weights-gib)",))
    heads, dim = _required(values, "kv-heads"), _required(values, "head-dim")
    q_heads = values.get("attention-heads")
    if q_heads is not None and q_heads % heads:
        raise InputError("kv-heads", f"{heads} kv heads do not divide {q_heads} attention heads")
    if "sliding-window" in values:
        layer = SlidingWindowAttention(heads, dim, window=values["sliding-window"])
    else:
        layer = FullAttention(heads, dim)
    params, notes = _custom_params(values, n, heads, dim, q_heads)
    return Model(name="custom model", layers=(layer,) * n, attention_heads=q_heads, params=params,
                 hidden_size=values.get("hidden-size"), vocab_size=values.get("vocab-size"), notes=notes)


def _custom_params(values: dict, layers: int, kv_heads: int, head_dim: int, q_heads: int | None):
    """A custom model's parameter count as a Llama-style decoder (gated MLP, untied embeddings, no
    biases), when its widths are given; otherwise what to give, in words."""
    given = [name for name in SHAPE_FIELDS if name in values]
    if not given:
        return None, ("the weights' size needs the hidden size, MLP size and vocabulary size, or the parameter "
                      "count (params), or the weights' size (weights-gib)",)
    missing = [name for name in SHAPE_FIELDS if name not in values]
    if missing:
        raise InputError(missing[0], "needed with " + " and ".join(given) + " to count the parameters "
                         "(or clear those and give params or weights-gib)")
    hidden = values["hidden-size"]
    if q_heads is None:
        if hidden % head_dim:
            raise InputError("attention-heads", f"needed: hidden size {hidden:,} is not a multiple of the head "
                                                f"dim {head_dim}, so the query heads cannot be derived")
        q_heads = hidden // head_dim
    counted = count_params({"model_type": "llama", "hidden_size": hidden, "intermediate_size": values["mlp-size"],
                            "num_hidden_layers": layers, "num_attention_heads": q_heads,
                            "num_key_value_heads": kv_heads, "head_dim": head_dim,
                            "vocab_size": values["vocab-size"], "tie_word_embeddings": False})
    return counted.total, (f"parameters counted as a Llama-style decoder (gated MLP, untied embeddings): "
                           f"{counted.total:,}",)


def _required(values: dict, name: str):
    if name not in values:
        raise InputError(name, "needed for a custom model")
    return values[name]


def build_scenario(values: dict) -> Scenario:
    model, notes = resolve_model(values)
    if "params" in values and model.params is None:
        model = replace(model, params=values["params"])      # what compute needs, when the model has none
    notes = list(model.notes) + notes
    if "block-size" in values and any(layer.kind == "state" for layer in model.layers):
        notes.append("vLLM enlarges attention blocks in hybrid models until a page holds one state, "
                     "so its real block size differs from block-size")
    kv = precision(values["kv-dtype"]) if "kv-dtype" in values else precision(model.dtype)
    state = precision(model.dtype)
    context = values.get("context", 8192)
    if model.past_limit(context):
        notes.append(f"context {context:,} is beyond the model's max_position_embeddings "
                     f"({model.max_context_tokens:,})")
    workload = Workload(context_tokens=context, kv_precision=kv, state_precision=state,
                        batch=values.get("batch", 1), block_size_tokens=values.get("block-size", 1),
                        prefix_tokens=values.get("prefix-tokens", 0))
    deployment = _deployment(values, model)
    if model.checkpoint_bytes and deployment.weights_bytes == model.checkpoint_bytes:
        notes = [n for n in notes if "quantized" not in n] + [
            f"weights are the published checkpoint's {model.checkpoint_bytes:,} bytes (its "
            "model.safetensors.index.json total_size)"]
    if deployment.gpu_memory_bytes is not None and deployment.weights_bytes is None and not any(
            "quantized" in n or "weights' size" in n for n in notes):
        notes.append("the weights' size is unknown for this model: give the parameter count (params) or the "
                     "weights' size (weights-gib) to size "
                     "the memory budget (KV figures need neither)")
    return Scenario(model, workload, deployment, values, tuple(notes), settings_from(values))


def _deployment(values: dict, model: Model) -> Deployment:
    pp = values.get("pp", 1)
    if "tp" in values:
        tp = values["tp"]
        if "gpus" in values and values["gpus"] != tp * pp:
            model.check_parallel(tp, pp)       # suggest a GPU count only for a tp that works
            raise InputError("gpus", f"gpus={values['gpus']} does not equal tp x pp = {tp} x {pp}; "
                                     f"use {tp * pp} GPUs or change tp")
    else:
        gpus = values.get("gpus", 1)
        if gpus % pp:
            raise InputError("pp", f"pp={pp} does not divide gpus={gpus}")
        tp = gpus // pp

    memory = bandwidth = torch_memory = None
    gpu_name = None
    peaks = ()
    if "gpu" in values:
        preset = presets.gpu(values["gpu"])
        memory, bandwidth, gpu_name = preset.memory_bytes, preset.bandwidth_bytes_per_s, preset.name
        torch_memory = preset.torch_memory_bytes
        peaks = tuple(sorted((preset.peak_flops or {}).items()))
    if "gpu-memory-gib" in values:
        memory = int(values["gpu-memory-gib"] * GIB)
        torch_memory = None

    weights = None
    weights_exact = True
    if "weights-bytes" in values:
        weights = values["weights-bytes"]
        _check_plausible(weights, values.get("params", model.params))
    elif "weights-gib" in values:
        weights = ceil_div(values["weights-gib"] * GIB, 1)
    elif model.checkpoint_bytes and "params" not in values and "weights-dtype" not in values:
        weights = model.checkpoint_bytes          # the published checkpoint's own bytes (quantized ones too)
    else:
        params = values.get("params", model.params)
        dtype = values.get("weights-dtype", model.weights_dtype)
        if params is not None and dtype is not None:
            weights = precision(dtype, field="weights-dtype").bytes_for(params)
            weights_exact = not params_rounded(params)
        # else: weights unknown (a quantized checkpoint's mixed precisions); the model's note says so
    overhead = ceil_div(values.get("overhead-gib", 0) * GIB, 1)
    stage_weights = _stage_weights(values, model, pp)
    if stage_weights:
        weights = sum(stage_weights)
    return Deployment(tp=tp, pp=pp, gpu_memory_bytes=memory,
                      memory_utilization=values.get("memory-utilization", Fraction(1)),
                      overhead_bytes=int(overhead), weights_bytes=None if weights is None else int(weights),
                      bandwidth_bytes_per_s=bandwidth, gpu_name=gpu_name, torch_memory_bytes=torch_memory,
                      weights_exact=weights_exact, peak_flops=peaks, stage_weights_bytes=stage_weights)


# Bits per parameter a real checkpoint can hold: from a 1-bit quantization (llama.cpp's Q1_0
# stores 1.125) to fp32 with a vision tower beside the language model's count.
PLAUSIBLE_BITS_PER_PARAM = (Fraction(3, 4), 64)


def _check_plausible(weights_bytes: int, params: int | None) -> None:
    """Exact weights from a checkpoint's headers (an index's total_size) that no checkpoint of
    this model could have are refused: a 1-byte total for Llama 8B would be shown as exact."""
    if not params:
        return
    bits = Fraction(8 * weights_bytes, params)
    low, high = PLAUSIBLE_BITS_PER_PARAM
    if not low <= bits <= high:
        raise InputError("weights-bytes", f"{weights_bytes:,} bytes for {params:,} parameters is "
                                          f"{float(bits):.3g} bits per parameter; a checkpoint of this model "
                                          f"holds {float(low):g} to {high} (check the file or its index)")


def _stage_weights(values: dict, model: Model, pp: int) -> tuple:
    """Each pipeline stage's weights from a checkpoint's per-layer bytes: the first stage also
    holds the input embedding, the last the output head (vLLM's PPMissingLayer split)."""
    text = values.get("layer-weights-bytes")
    if text is None:
        return ()
    parts = text.replace(" ", "").split(",")
    # isdigit() takes superscripts and other scripts' digits, which int() then refuses.
    if not all(p.isascii() and p.isdigit() and len(p) <= 16 for p in parts):
        raise InputError("layer-weights-bytes", "expected whole byte counts separated by commas")
    counts = [int(p) for p in parts]
    layers = len(model.layers)
    if len(counts) != layers + 2:
        raise InputError("layer-weights-bytes", f"expected {layers + 2} counts (before the layers, each of "
                                                f"the {layers} layers, after them), got {len(counts)}; it "
                                                "belongs to the checkpoint it was read from")
    if "weights-bytes" in values and sum(counts) != values["weights-bytes"]:
        raise InputError("layer-weights-bytes", f"adds up to {sum(counts):,} bytes, not the weights' "
                                                f"{values['weights-bytes']:,}")
    sizes = [sum(stage.values()) for stage in model.stages(pp)]
    stages, start = [], 1
    for size in sizes:
        stages.append(sum(counts[start:start + size]))
        start += size
    stages[0] += counts[0]
    stages[-1] += counts[-1]
    return tuple(stages)


def params_rounded(params: int) -> bool:
    """A count that is a whole number of millions is a rounded one (671B, 7.6B): an exact count
    lands on a multiple of a million about once in a million models."""
    return params % 10 ** 6 == 0


@dataclass(frozen=True)
class Evaluation:
    values: dict
    errors: tuple[InputError, ...]
    scenario: Scenario | None = None
    result: Result | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None and not self.errors


def evaluate(raw: dict) -> Evaluation:
    """Parse, build and compute. Never raises InputError: it comes back in `errors`."""
    values, errors = parse_options(raw)
    if errors:
        return Evaluation(values, tuple(errors))
    try:
        scenario = build_scenario(values)
        result = compute(scenario.model, scenario.workload, scenario.deployment)
        if scenario.settings.engine:
            result = _with_engine(scenario, result)
        result = _with_timing(scenario, result)
        check_figures(result)
    except InputError as e:
        return Evaluation(values, (e,))
    except Exception as e:      # noqa: BLE001 - the one boundary: no input may end in a traceback
        return Evaluation(values, (unexpected(e, values),))
    return Evaluation(values, (), scenario, result)


class Unexpected(InputError):
    """A refusal the engine did not foresee: shown like any other, and told apart by the tests,
    for which every one is a bug (an input that validation let through)."""


def unexpected(error: BaseException, values: dict) -> InputError:
    """A fault inside the engine as the refusal every entry shows: the model input it came from
    (a config, a checkpoint's list, a preset) and that no figure is shown rather than a wrong one."""
    field = next((name for name in ("hf-config", "layer-weights-bytes", "weights-bytes") if name in values),
                 None) or next((name for name in MODEL_INPUTS if name in values), "model")
    detail = str(error).splitlines()[0][:80] if str(error) else ""
    return Unexpected(field, f"these inputs reach a case the calculator cannot size ({type(error).__name__}"
                             f"{': ' + detail if detail else ''}); no figures rather than wrong ones")


def check_figures(result: Result) -> None:
    """Refuse a result with a negative or non-finite figure: no valid input gives one, so one
    seen here is a value that slipped past validation, and showing it would be a lie."""
    for name, value in _figures(result):
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, float) and value != value or isinstance(value, float) and value in (
                float("inf"), float("-inf")):
            raise InputError("model", f"{name} came out as {value}; no figures rather than wrong ones")
        if isinstance(value, (int, Fraction, float)) and value < 0 and name not in SIGNED_FIGURES:
            raise InputError("model", f"{name} came out negative ({value}); no figures rather than wrong ones")


# Figures that are negative by meaning: what is left for the cache after the weights (a
# deployment that does not fit has less than nothing).
SIGNED_FIGURES = frozenset({"kv_budget_bytes_per_gpu", "engine.kv_budget_bytes_per_gpu", "engine.budget_bytes"})


def _figures(result, prefix: str = ""):
    for f in fields(result):
        value = getattr(result, f.name)
        if is_dataclass(value) and not isinstance(value, type):
            yield from _figures(value, f"{prefix}{f.name}.")
        elif isinstance(value, (int, float, Fraction)):
            yield prefix + f.name, value


def _with_engine(scenario: Scenario, result: Result) -> Result:
    """The result with the engine's figures beside the exact ideal's."""
    return replace(result, engine=engines.size(scenario, result))


def _with_timing(scenario: Scenario, result: Result) -> Result:
    """The result with its time bounds, or the reason there are none."""
    work, dep, model, settings = scenario.workload, scenario.deployment, scenario.model, scenario.settings
    prompt = settings.prompt_tokens or work.context_tokens
    if prompt > work.context_tokens:
        raise InputError("prompt-tokens", f"a prompt of {prompt:,} tokens is longer than the context of "
                                          f"{work.context_tokens:,}; the context holds the prompt and what is generated")
    missing = ("a GPU preset (its bandwidth and peak FLOP/s)" if not dep.bandwidth_bytes_per_s else
               "this GPU's peak FLOP/s, which is not on record" if not dep.peak_flops else
               "the weights' size" if result.weights_bytes is None else
               "the parameter count" if not (model.params or model.active_params) else None)
    if missing:
        return replace(result, timing_missing=f"time bounds need {missing}")
    chunk = settings.prefill_chunk
    if chunk is None:
        chunk = engines.default_prefill_chunk(result.engine.engine if result.engine else "vllm", dep)
    return replace(result, timing=time_bounds(scenario, result, prompt, chunk, dict(dep.peak_flops)))


def canonical_value(name: str, value):
    """The spelling a form's list uses for a value the engine accepts (aliases, any case)."""
    if not isinstance(value, str):
        return value
    if name == "engine":
        return engines.engine_name(value)
    if name in ("kv-dtype", "weights-dtype", "kv-dtype-v"):
        return precision(value, field=name).name
    if name == "gpu":
        return presets.gpu(value).id
    if name == "unit":
        return value.strip().lower()
    if name == "model":
        entry = presets.find_model_entry(value)
        return entry["id"] if entry else value
    return value


MLA_ONLY = ("mla-rank", "mla-rope-dim")


def form_values(fields: dict, attention_kind: str = "gqa", config: dict | None = None) -> dict:
    """The page form's fields (name -> text, `model` being the select's value: a preset id,
    "custom" or "config") as the engine's raw inputs: only the chosen model's fields, no blanks."""
    raw = dict(fields)
    choice = raw.pop("model", "") or ""
    for name in MANUAL_FIELDS:
        value = raw.pop(name, "")
        mla_field = name in MLA_ONLY
        if choice == "custom" and (name == "layers" or mla_field == (attention_kind == "mla")):
            raw[name] = value
    if choice == "config":
        if config is not None:
            raw["hf-config"] = config
    elif choice != "custom":
        raw["model"] = choice
    if str(raw.get("unit", "")).lower() == "gib":
        raw.pop("unit")
    if str(raw.get("batch", "")).strip() == OPTION_BY_NAME["batch"].default:
        # The form always holds a batch; its default one request is not a choice to pass to a
        # server as its concurrency limit.
        raw.pop("batch")
    return {k: v for k, v in raw.items() if v not in ("", None)}
