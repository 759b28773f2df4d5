"""A scenario from typed inputs: the model (a preset, a config.json or custom dimensions), the
workload, the deployment and how it is served (Settings)."""

from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import lru_cache

from .. import engines, parallel
from ..serving import NONE as NO_SERVING, Serving, ServingSettings, serving_from, sizing_model
from ..readers import gpu_presets, presets
from ..engines import releases
from ..engines.vllm import release as vllm_release
from ..engines.releases import Release
from ..readers.config_fields import InvalidValue
from ..errors import InputError
from ..readers.hfconfig import model_from_config
from ..layers import FullAttention, MLAAttention, SlidingWindowAttention
from ..model import Model
from .options import MANUAL_FIELDS, MODEL_INPUTS, SHAPE_FIELDS, mm_limits
from ..readers.params import count_params
from ..readers.config_shapes import config_shapes
from ..readers.quantized_bytes import with_typed_weights
from ..readers.text_only import without_tower
from ..precision import Precision, precision
from ..words import plural
from ..sizing import Deployment, Workload
from ..units import GIB, ceil_div


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
    release: Release | None = None             # the engine's release: given, else the newest modelled
    release_given: bool = False
    memory_in_use_gib: Fraction | None = None  # SGLang: memory in use before it starts
    flash_attn: str | None = None              # llama.cpp -fa: "on", "off" (None: its default)
    n_gpu_layers: int | None = None            # llama.cpp -ngl (None: every layer)
    n_cpu_moe: int | None = None               # llama.cpp --n-cpu-moe
    tensor_split: tuple | None = None          # llama.cpp -ts proportions, one a GPU (None: by free memory)
    vllm_entry: str = "serve"                  # vLLM started by `vllm serve` or the LLM() class
    vllm_runner: str = "auto"                  # vLLM --runner: auto, generate or pooling
    enforce_eager: bool = False                # vLLM --enforce-eager: no CUDA graphs
    capture_size_limit: int | None = None      # vLLM --max-cudagraph-capture-size (None: its default)
    prefix_caching: str | None = None          # vLLM --enable-prefix-caching "on" / "off" (None: its default)
    language_model_only: bool = False          # vLLM --language-model-only: a multimodal checkpoint served text-only
    mm_limits: tuple = ()                      # vLLM --limit-mm-per-prompt as (modality, items) pairs; () its default
    kv_skip_layers: tuple = ()                 # vLLM --kv-cache-dtype-skip-layers: "3", "sliding_window"
    hybrid_kv_manager: str | None = None       # vLLM's hybrid KV cache manager "on" / "off" (None: its rule)
    kv_connector: str | None = None            # vLLM --kv-transfer-config's kv_connector
    measured: "Measured | None" = None         # the deployment a pasted log measured, for a what-if
    serving: ServingSettings = ServingSettings()   # what runs beside the model (a draft, LoRA, offload...)


# Inputs that are a log's measurements, in GiB per GPU, and the field each is in Measured.
MEASURED_INPUTS = {"loaded-weights-gib": "weights", "activation-gib": "activation", "non-torch-gib": "non_torch",
                   "cudagraph-gib": "cudagraph"}


@dataclass(frozen=True)
class Measured:
    """What a start-up log measured, and the deployment it measured it on (`measured-with`, built
    as a scenario of its own): an edit that moves the engine's estimate moves the measurement by
    as much; one that does not keeps the log's figures."""
    engine: str | None
    scenario: "Scenario"
    kv_bytes: int | None                       # the KV memory it printed, per GPU
    weights_bytes: int | None                  # the weights on the busiest GPU
    activation_bytes: int | None = None
    non_torch_bytes: int | None = None
    cudagraph_bytes: int | None = None

    @property
    def parts_bytes(self) -> int | None:
        """Everything it printed besides the weights and the KV memory, where it printed each."""
        parts = (self.activation_bytes, self.non_torch_bytes, self.cudagraph_bytes)
        return None if self.activation_bytes is None else sum(p or 0 for p in parts)


def _measured(values: dict) -> "Measured | None":
    if "measured-with" not in values:
        if any(name in values for name in MEASURED_INPUTS):
            name = next(name for name in MEASURED_INPUTS if name in values)
            raise InputError(name, "is a log's measurement: it comes with measured-with, the inputs it was measured "
                                   "with (paste the log, or give kv-memory-gib or overhead-gib instead)")
        return None
    current = {k: v for k, v in values.items()
               if k not in MEASURED_INPUTS and k not in ("measured-with", "kv-memory-gib")}
    logged = dict(values["measured-with"])
    for name in engines.member(engines.REGISTRY.get(logged.get("engine", values.get("engine"))), "LOGGED_WHEN_SET"):
        if name not in logged:
            current.pop(name, None)     # the log ran with the engine's default: an edit of it is a what-if
    if any(name in logged for name in MODEL_INPUTS):
        # The log's model is the measured one, however the model on screen is given now.
        current = {k: v for k, v in current.items() if k not in MODEL_INPUTS}
    for _ in range(len(logged) + 1):
        try:
            scenario = build_scenario({**current, **logged})
            break
        except InputError as e:
            # A value the log printed that cannot be sized (a dev build's version) and the user
            # gave in its place: the user's value is the log's, corrected.
            if e.field not in logged or e.field not in current:
                raise InputError("measured-with", f"the measured deployment cannot be sized ({e.field}: "
                                                  f"{e.message})") from None
            del logged[e.field]
    then = {**current, **logged}
    gib = {name: int(values[name] * GIB) for name in MEASURED_INPUTS if name in values}
    return Measured(engine=then.get("engine"), scenario=scenario,
                    kv_bytes=int(values["kv-memory-gib"] * GIB) if "kv-memory-gib" in values else None,
                    weights_bytes=gib.get("loaded-weights-gib"), activation_bytes=gib.get("activation-gib"),
                    non_torch_bytes=gib.get("non-torch-gib"), cudagraph_bytes=gib.get("cudagraph-gib"))


def _release(values: dict) -> Release | None:
    engine = values.get("engine")
    if engine is None:
        if "engine-version" in values:
            raise InputError("engine-version", "a release belongs to an engine: choose vllm, sglang or llama.cpp "
                                               "as engine first")
        return None
    module = engines.REGISTRY[engine]
    if not hasattr(module, "NEWEST_RELEASE"):          # an engine whose rules are not keyed by release
        if "engine-version" in values:
            raise InputError("engine-version", f"{module.TITLE}'s rules are not kept by release")
        return None
    release = releases.parse(module, values["engine-version"]) if "engine-version" in values else \
        releases.newest(module)
    if "vllm-engine" in values:
        release = vllm_release.engine_variant(release, values["vllm-engine"])
    return release


def settings_from(values: dict) -> Settings:
    # Inputs that belong to one engine's settings (each engine's OWN_OPTIONS), and that engine.
    for name, engine in engines.option_owners().items():
        if name in values and values.get("engine") != engine:
            raise InputError(name, f"applies to {engines.title(engine)} only; choose engine {engine} to use it")
    limits = mm_limits(values.get("limit-mm-per-prompt"))
    return Settings(
        engine=values.get("engine"), prefill_chunk=values.get("prefill-chunk"),
        kv_memory_gib=values.get("kv-memory-gib"), overhead_given=values.get("overhead-gib", 0) > 0,
        utilization_given="memory-utilization" in values, gpu_memory_given="gpu-memory-gib" in values,
        block_size=values.get("block-size"),
        v_precision=precision(values["kv-dtype-v"], field="kv-dtype-v") if "kv-dtype-v" in values else None,
        batch_given="batch" in values, prompt_tokens=values.get("prompt-tokens"),
        weights_dtype=values.get("weights-dtype"), release=_release(values),
        release_given="engine-version" in values, memory_in_use_gib=values.get("memory-in-use-gib"),
        flash_attn=values.get("flash-attn"), n_gpu_layers=values.get("n-gpu-layers"), n_cpu_moe=values.get("n-cpu-moe"),
        tensor_split=tuple(Fraction(p) for p in values["tensor-split"].split("/")) if "tensor-split" in values else None,
        vllm_entry=values.get("vllm-entry", "serve"), vllm_runner=values.get("vllm-runner", "auto"),
        enforce_eager=values.get("enforce-eager") == "on", capture_size_limit=values.get("max-cudagraph-capture-size"),
        prefix_caching=values.get("prefix-caching"),
        # language-model-only, or no image and no video a prompt: vLLM then builds no vision tower.
        language_model_only=values.get("language-model-only") == "on" or (
            limits.get("image") == 0 and limits.get("video") == 0),
        mm_limits=tuple(limits.items()),
        kv_skip_layers=tuple(values["kv-dtype-skip-layers"].split("/")) if "kv-dtype-skip-layers" in values else (),
        hybrid_kv_manager=values.get("hybrid-kv-cache-manager"), kv_connector=values.get("kv-connector"),
        measured=_measured(values), serving=serving_settings_from(values))


def serving_settings_from(values: dict) -> ServingSettings:
    """What the inputs ask to run beside the model, typed for serving/ (which never reads the inputs)."""
    return ServingSettings(
        mtp=values.get("mtp") == "on", draft_model=values.get("draft-model"),
        draft_hf_config=values.get("draft-hf-config"), spec_tokens=values.get("spec-tokens"),
        pp=values.get("pp", 1), dp=values.get("dp", 1),
        weights_given=any(name in values for name in ("weights-bytes", "weights-gib", "layer-weights-bytes")),
        max_loras=values.get("max-loras"), max_lora_rank=values.get("max-lora-rank"),
        offload_gib=values.get("offload-gib"), offload_backend=values.get("offload-backend"),
        offload_link=values.get("offload-link"), host_memory_gib=values.get("host-memory-gib"),
        prefix_hit_rate=values.get("prefix-hit-rate"), prefix_tokens=values.get("prefix-tokens", 0),
        mm_encoder_tp_mode=values.get("mm-encoder-tp-mode"), mmproj_bytes=values.get("mmproj-bytes"))


@dataclass(frozen=True)
class Scenario:
    model: Model
    workload: Workload
    deployment: Deployment
    warnings: tuple[str, ...] = field(default=())
    settings: Settings = field(default=Settings())
    # What runs beside the bare model (a draft, LoRA slots, an encoder, an offload tier, a prefix
    # hit rate): its weights are in deployment.added_weights_bytes_per_gpu and a draft's pooled
    # layers in model.layers.
    serving: Serving = field(default=NO_SERVING)


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
                             hf_repo=preset.hf_repo, config_weights_bytes=preset.config_weights_bytes,
                             config_weights_rule=preset.config_weights_rule)
            # Its own tensors by name (model.shapes, read with it) split the weights by rank (experts.py).
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
    model = replace(model, params=counted.total, active_params=counted.active if counted.is_moe else None)
    return presets.with_config_weights(model, cfg, notes, counted)


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
    params, notes, cfg = _custom_params(values, n, heads, dim, q_heads)
    # Its tensors by name, as a config's are: a typed weights-dtype then prices the linear layers
    # in it and leaves the embeddings and lm_head in 16 bits, as a quantized checkpoint keeps them.
    shapes = config_shapes(cfg, cfg["hidden_size"]) if cfg is not None else None
    return Model(name="custom model", layers=(layer,) * n, attention_heads=q_heads, params=params,
                 hidden_size=values.get("hidden-size"), vocab_size=values.get("vocab-size"), notes=notes,
                 shapes=shapes)


def _custom_params(values: dict, layers: int, kv_heads: int, head_dim: int, q_heads: int | None):
    """A custom model's parameter count as a Llama-style decoder (gated MLP, untied embeddings, no
    biases), when its widths are given; otherwise what to give, in words."""
    given = [name for name in SHAPE_FIELDS if name in values]
    if not given:
        return None, ("the weights' size needs the hidden size, MLP size and vocabulary size, or the parameter "
                      "count (params), or the weights' size (weights-gib)",), None
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
    cfg = {"model_type": "llama", "hidden_size": hidden, "intermediate_size": values["mlp-size"],
           "num_hidden_layers": layers, "num_attention_heads": q_heads, "num_key_value_heads": kv_heads,
           "head_dim": head_dim, "vocab_size": values["vocab-size"], "tie_word_embeddings": False}
    counted = count_params(cfg)
    return counted.total, (f"parameters counted as a Llama-style decoder (gated MLP, untied embeddings): "
                           f"{counted.total:,}",), cfg


def _required(values: dict, name: str):
    if name not in values:
        raise InputError(name, "needed for a custom model")
    return values[name]


def build_scenario(values: dict) -> Scenario:
    model, notes = resolve_model(values)
    settings = settings_from(values)
    text_only = settings.language_model_only and model.multimodal
    if text_only:
        model = without_tower(model)        # before the weights are priced: what the engine builds
    if "params" in values and model.params is None:
        model = replace(model, params=values["params"])      # what compute needs, when the model has none
    if "weights-dtype" in values and "params" not in values:
        # A quantized checkpoint of the model's shape: its linear layers in that format, the rest 16-bit.
        model = with_typed_weights(model, values["weights-dtype"])
    notes = list(model.notes) + notes
    if "mamba-ssm-dtype" in values and any(layer.kind == "state" for layer in model.layers):
        # The engine's flag overrides the config's mamba_ssm_dtype (vllm/model_executor/models/
        # config.py: "auto" alone takes the config's): every recurrent state in that dtype.
        model = replace(model, layers=tuple(replace(layer, ssm_dtype=values["mamba-ssm-dtype"])
                                            if layer.kind == "state" else layer for layer in model.layers))
    if "block-size" in values and any(layer.kind == "state" for layer in model.layers):
        notes.append("vLLM enlarges attention blocks in hybrid models until a page holds one state, "
                     "so its real block size differs from block-size")
    kv = precision(values["kv-dtype"]) if "kv-dtype" in values else precision(model.kv_dtype or model.dtype)
    state = precision(model.dtype)
    kept = engines.kv_layers(settings.engine, model, kv, settings.kv_skip_layers, settings)
    notes += list(kept.notes[len(model.notes):])
    model = kept
    context = values.get("context", 8192)
    if model.past_limit(context):
        notes.append(f"context {context:,} is beyond the model's max_position_embeddings "
                     f"({model.max_context_tokens:,})")
    workload = Workload(context_tokens=context, kv_precision=kv, state_precision=state,
                        batch=values.get("batch", 1), block_size_tokens=values.get("block-size", 1),
                        prefix_tokens=values.get("prefix-tokens", 0))
    deployment = _deployment(values, model)
    if settings.language_model_only and not text_only:
        settings = replace(settings, language_model_only=False)    # a text-only model: nothing to leave out
    serving = serving_from(settings, model, deployment)
    if serving is not NO_SERVING:
        deployment = replace(deployment, added_weights_bytes_per_gpu=serving.added_weights_bytes_per_gpu)
        model = sizing_model(model, serving, settings.engine)
    if deployment.gpu is not None and "gpu-memory-gib" not in values and deployment.gpu.unified_memory:
        notes.append(f"{deployment.gpu.name} has {deployment.gpu_memory_bytes / GIB:,.0f} GiB of unified memory shared "
                     "with the CPU and the operating system, so less than that is free for weights and KV cache: "
                     "set the GPU memory (or an overhead) to what the machine leaves free")
    if model.config_weights_typed and deployment.weights_bytes == model.config_weights_bytes:
        notes.append(f"weights-dtype {model.config_weights_typed} prices a checkpoint of this shape as vLLM and SGLang "
                     f"load one: {model.config_weights_bytes:,} bytes ({model.config_weights_rule}); the "
                     "checkpoint's own headers (Open files) give them exactly")
    elif model.config_weights_bytes and deployment.weights_bytes == model.config_weights_bytes:
        # The reader's note asked for the weights' precision or size: these are them.
        shown = f"≈ {model.config_weights_bytes / GIB:,.2f} GiB" if model.config_weights_estimated else \
            f"{model.config_weights_bytes:,} bytes"
        notes = [n for n in notes if "quantized" not in n and "(quantization_config)" not in n] + [
            f"weights computed from the config's quantization_config and shapes: {shown} "
            f"({model.config_weights_rule}); the checkpoint's own headers (Open files) give them exactly"]
    if model.checkpoint_bytes and deployment.weights_bytes == model.checkpoint_bytes:
        notes = [n for n in notes if "quantized" not in n] + [
            f"weights are the published checkpoint's {model.checkpoint_bytes:,} bytes (its "
            "model.safetensors.index.json total_size)"]
    if deployment.gpu_memory_bytes is not None and deployment.weights_bytes is None and not any(
            "quantized" in n or "weights' size" in n for n in notes):
        notes.append("the weights' size is unknown for this model: give the parameter count (params) or the "
                     "weights' size (weights-gib) to size "
                     "the memory budget (KV figures need neither)")
    return Scenario(model, workload, deployment, tuple(notes), settings, serving)


def _deployment(values: dict, model: Model) -> Deployment:
    pp, dp = values.get("pp", 1), values.get("dp", 1)
    if "tp" in values:
        # In the engine's own words (SGLang's --tp-size counts every GPU under DP attention).
        tp = parallel.attention_tp(values, engines.REGISTRY.get(values.get("engine") or ""))
        if "gpus" in values and values["gpus"] != tp * pp * dp:
            model.check_parallel(tp, pp)       # suggest a GPU count only for a tp that works
            layout = f"tp x pp x dp = {tp} x {pp} x {dp}" if dp > 1 else f"tp x pp = {tp} x {pp}"
            raise InputError("gpus", f"gpus={values['gpus']} does not equal {layout}; "
                                     f"use {plural(tp * pp * dp, 'GPU')} or change tp")
    else:
        gpus = values.get("gpus", 1)
        if engines.member(engines.REGISTRY.get(values.get("engine")), "SPLITS_LAYERS") and gpus % dp == 0:
            # An engine without tensor parallelism (llama.cpp's --split-mode layer) gives each GPU
            # whole layers: its GPUs are stages, never a split a head count must divide. A pp of 1
            # (the page's field, untouched) means no more than that; another pp is a mistake.
            stages = gpus // dp
            if pp not in (1, stages):
                raise InputError("pp", f"pp={pp}: this engine splits whole layers over every one of the {gpus} "
                                       f"GPUs (no tensor parallelism), so its stages are the GPUs: give pp {stages} or 1")
            pp = stages
        if gpus % pp:
            raise InputError("pp", f"pp={pp} does not divide gpus={gpus}")
        if gpus % (pp * dp):
            raise InputError("dp", f"dp={dp} does not divide the {gpus} GPUs over pp={pp}: "
                                   f"GPUs = tp x pp x dp, so give a multiple of {pp * dp} GPUs")
        tp = gpus // (pp * dp)

    memory = bandwidth = torch_memory = None
    preset = None
    peaks = ()
    if "gpu" in values:
        preset = gpu_presets.gpu(values["gpu"])
        if preset.mig_of is not None and tp * pp * dp > 1:
            # A CUDA process enumerates one MIG instance, and instances have no peer-to-peer link.
            field = next((f for f in ("gpus", "tp", "pp", "dp") if values.get(f, 1) != 1), "gpus")
            raise InputError(field, f"{preset.id} is one MIG instance, one device with no peer link: it runs on "
                                    f"1 GPU, not {tp * pp * dp}; give 1 GPU, or the whole {preset.mig_of} for several")
        memory, bandwidth = preset.memory_bytes, preset.bandwidth_bytes_per_s
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
    elif model.config_weights_bytes and "params" not in values and (
            "weights-dtype" not in values or model.config_weights_typed == values["weights-dtype"]):
        weights = model.config_weights_bytes      # computed from the quantization_config (said in a note)
        weights_exact = not model.config_weights_estimated
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
                      bandwidth_bytes_per_s=bandwidth, gpu=preset, torch_memory_bytes=torch_memory,
                      weights_exact=weights_exact, peak_flops=peaks, stage_weights_bytes=stage_weights,
                      dp=dp, expert_parallel=values.get("ep") == "on",
                      dp_attention=dp > 1 and engines.member(engines.REGISTRY.get(values.get("engine") or ""),
                                                             "DP_ATTENTION"))


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
