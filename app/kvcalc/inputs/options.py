"""The inputs' schema and their parsers: one name per input for the CLI, the share link and the page.

Every input has one name: the CLI's long option, the link's key and the page field's name are
the same string. `parse_options(raw)` types raw values (strings, as a form or a URL gives them)
at the edge, each with its option's parser; scenario.py builds on the typed values and
evaluation.py computes them.
"""

import re
from dataclasses import dataclass
from fractions import Fraction

from .. import engines
from ..readers import gpu_presets, presets
from ..errors import InputError
from ..precision import STATE_DTYPES, precision


@dataclass(frozen=True)
class Option:
    name: str
    kind: str            # int, decimal, count, text, list, config, pairs
    group: str           # model, workload, deployment, view
    help: str
    minimum: Fraction | int | None = None
    maximum: Fraction | int | None = None
    default: str | None = None
    choice: object = None  # a text option's parser: (text, name) -> the canonical spelling, or InputError
    bare: str | None = None  # the value the CLI's flag means when given alone (--ep is --ep on)
    repeat: str | None = None  # the CLI's flag may be repeated: its values joined by this (--also: ";")


def _precision_name(text: str, name: str) -> str:
    return precision(text, field=name).name


# The engine value for no engine's rules: a link the page writes always names the engine, and a
# link without one keeps meaning the exact ideal, as every link shared before did.
EXACT = "exact"
EXACT_ALIASES = frozenset({"exact", "ideal", "none", "exact-ideal"})
# What the CLI sizes as when nothing names an engine, as the page starts (a link without one is EXACT).
DEFAULT_ENGINE = engines.DEFAULT


def _engine_name(text: str, name: str) -> str:
    if str(text).strip().lower() in EXACT_ALIASES:
        return EXACT
    try:
        return engines.engine_name(text)
    except InputError:
        raise InputError(name, f"unknown engine {str(text)[:30]!r}; allowed: {EXACT} (the exact ideal), "
                               f"{', '.join(engines.ENGINES)}") from None


def _version_text(text: str, name: str) -> str:
    # Which release it names depends on the engine, so scenario.settings_from reads it.
    if not re.fullmatch(r"[\w.+()\s:-]{1,100}", text):
        raise InputError(name, f"{_clip(text)!r} is not a version as an engine prints it, e.g. 0.10.2 or b5192")
    return text.strip()


def _state_dtype(text: str, name: str) -> str:
    value = precision(text, field=name).name
    if value not in STATE_DTYPES:
        raise InputError(name, f"a recurrent state is kept in float32, bfloat16 or float16, not {_clip(text)!r}")
    return value


def _one_of(*allowed: str):
    """A text option's parser for a few words, any case ("LLM()" is llm)."""
    def parse(text: str, name: str) -> str:
        value = text.strip().lower().replace("()", "")
        if value not in allowed:
            raise InputError(name, f"expected {' or '.join(allowed)}, got {_clip(text)!r}")
        return value
    return parse


MM_MODALITIES = ("image", "video", "audio")
MAX_MM_ITEMS = 999           # vLLM's default limit a modality (MultiModalConfig.get_limit_per_prompt)


def _mm_limits(text: str, name: str) -> str:
    """vLLM's --limit-mm-per-prompt: `image=1,video=0` (its 0.8 form) or `{"image": 1, "video": 0}` (JSON, and
    the dict a log prints), made `image=1/video=0` in the modalities' order (slashes, as tensor-split's, so a
    measured-with pair keeps its commas to itself)."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    found = {}
    for item in filter(None, (part.strip() for part in re.split(r"[,/]", body))):
        key, sep, value = item.replace(":", "=", 1).partition("=")
        key, value = key.strip().strip("'\"").lower(), value.strip()
        if not sep or key not in MM_MODALITIES or not value.isdigit() or int(value) > MAX_MM_ITEMS:
            raise InputError(name, f"expected items a prompt per modality, such as image=1,video=0 (modalities "
                                   f"{', '.join(MM_MODALITIES)}; 0 to {MAX_MM_ITEMS} each), got {_clip(text)!r}")
        if key in found and found[key] != int(value):
            raise InputError(name, f"{key} is given twice ({found[key]} and {int(value)})")
        found[key] = int(value)
    if not found:
        raise InputError(name, f"expected items a prompt per modality, such as image=1,video=0, got {_clip(text)!r}")
    return "/".join(f"{m}={found[m]}" for m in MM_MODALITIES if m in found)


def mm_limits(text: str | None) -> dict:
    """The canonical limits' text as {modality: items}; {} for none given."""
    return {} if not text else {k: int(v) for k, v in (part.split("=") for part in text.split("/"))}


# Text options whose value may run long: a layer list names up to 1,024 layers; the servers beside
# the first, each set of name:value pairs (up to MAX_SERVERS of them).
LONG_TEXT = {"kv-dtype-skip-layers": 8192, "also": 4096}
SKIP_SLIDING = "sliding_window"   # vLLM's attention-type entry: every sliding-window layer
MAX_SKIP_ENTRIES = 1024


def _kv_skip_layers(text: str, name: str) -> str:
    """vLLM's --kv-cache-dtype-skip-layers: layer indices and `sliding_window`, separated by commas, spaces
    or slashes (as a log prints the list: ['0', '1']), made `0/1/sliding_window`: indices ascending, each
    once. Which layers exist is the model's to say (engines/vllm/kv_layers.py)."""
    parts = [p.strip().strip("'\"") for p in re.split(r"[,/\s]+", text.strip().strip("[]")) if p.strip()]
    indices, sliding = set(), False
    for part in parts:
        if part.lower() == SKIP_SLIDING:
            sliding = True
        elif re.fullmatch(r"[0-9]{1,6}", part):
            indices.add(int(part))
        else:
            raise InputError(name, f"expected layer indices (0, 1, ...) or sliding_window, separated by commas, "
                                   f"got {_clip(part)!r} in {_clip(text)!r}")
    if not parts or len(parts) > MAX_SKIP_ENTRIES:
        raise InputError(name, f"expected 1 to {MAX_SKIP_ENTRIES:,} layer indices or sliding_window, got "
                               f"{len(parts):,}")
    return "/".join([str(i) for i in sorted(indices)] + ([SKIP_SLIDING] if sliding else []))


def _connector(text: str, name: str) -> str:
    """A KV connector's class name as --kv-transfer-config's kv_connector gives it."""
    value = text.strip().strip("'\"")
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,79}", value):
        raise InputError(name, f"expected a KV connector's class name, such as NixlConnector or LMCacheConnectorV1, "
                               f"got {_clip(text)!r}")
    return value


MAX_SPLIT_DEVICES = 16       # llama.cpp's LLAMA_MAX_DEVICES (-ts takes one proportion a device)


def _tensor_split(text: str, name: str) -> str:
    """llama.cpp -ts / --tensor-split: proportions, one a GPU, split at commas or slashes as
    common/arg.cpp splits them ("10,6", "3/1"); canonical with slashes ("10/6", as -ts also takes
    it), so a measured-with pair or a list of pairs keeps its commas to itself."""
    parts = [p.strip() for p in re.split(r"[,/]+", text.strip())]
    if not parts or len(parts) > MAX_SPLIT_DEVICES or not all(_DECIMAL.fullmatch(p) for p in parts):
        raise InputError(name, f"expected proportions, one a GPU, like 10,6 or 3/1 (at most {MAX_SPLIT_DEVICES}), "
                               f"got {_clip(text)!r}")
    if not any(Fraction(p) for p in parts):
        raise InputError(name, "all proportions are 0: leave it empty for llama.cpp's split by each GPU's free memory")
    return "/".join(parts)


# What a server beside the first sets for itself (--also): the GPU, the GPU count and the node are
# the first server's, shared by every server.
ALSO_KEYS = ("model", "engine", "engine-version", "memory-utilization", "context", "batch", "kv-dtype",
             "weights-dtype", "tp", "pp")
SERVER_SEPARATOR = ";"       # between servers' sets in `also` (each set's pairs are comma-separated)
MAX_SERVERS = 8              # the first server and up to seven beside it


def server_sets(text: str, name: str = "also") -> list[dict]:
    """The servers beside the first, each a dict of its raw values (strings as typed), from
    `model:NAME,memory-utilization:0.45;model:...` (sets separated by SERVER_SEPARATOR, each as
    measured-with's pairs); a key a server does not set for itself, a bad value or a set without
    a model refuses the whole, naming the server (the first beside the main inputs is server 2)."""
    sets = [part.strip() for part in str(text).split(SERVER_SEPARATOR)]
    if not any(sets):
        raise InputError(name, "expected one server's inputs as name:value pairs, e.g. model:Qwen/Qwen3-14B,"
                               "memory-utilization:0.45")
    if len(sets) > MAX_SERVERS - 1:
        raise InputError(name, f"{len(sets) + 1} servers; at most {MAX_SERVERS} share a GPU here")
    out = []
    for number, body in enumerate(sets, start=2):
        if not body:
            raise InputError(name, f"server {number} is empty; give its inputs as name:value pairs")
        raw = {}
        for part in body.split(","):
            key, colon, value = part.partition(":")
            key, value = key.strip(), value.strip()
            if key not in ALSO_KEYS:
                raise InputError(name, f"server {number}: {_clip(key or part)!r} is not an input a server sets for "
                                       f"itself; allowed: {', '.join(ALSO_KEYS)} (the GPU, GPU count and node are "
                                       "server 1's)")
            if not colon or not value:
                raise InputError(name, f"server {number}: {key} has no value; write {key}:VALUE")
            if key in raw:
                raise InputError(name, f"server {number}: names {key} twice")
            try:
                parse_value(OPTION_BY_NAME[key], value)
            except InputError as e:
                raise InputError(name, f"server {number}: {key}: {e.message}") from None
            raw[key] = value
        if "model" not in raw:
            raise InputError(name, f"server {number}: give its model (model:ID), a preset id or Hugging Face repo id")
        out.append(raw)
    return out


def _servers(text: str, name: str) -> str:
    """`also`'s canonical text: each server's pairs as typed, trimmed, the sets joined by SERVER_SEPARATOR."""
    return SERVER_SEPARATOR.join(",".join(f"{k}:{v}" for k, v in raw.items()) for raw in server_sets(text, name))


def _gpu_id(text: str, name: str) -> str:
    return gpu_presets.gpu(text, field=name).id


def _gpu_ids(text: str, name: str) -> tuple[str, ...]:
    """GPU presets, comma-separated, each by its id, name or a family's name ("h100" is each
    H100 preset, no MIG instance: "h100 mig" is each of those); "all" is every whole GPU's preset."""
    if text.strip().lower() == "all":
        return tuple(gpu_presets.whole_gpus())
    ids = []
    for part in text.split(","):
        if part.strip():
            for gpu_id in gpu_presets.gpu_family(part.strip(), field=name):
                if gpu_id not in ids:
                    ids.append(gpu_id)
    if not ids:
        raise InputError(name, "expected GPU presets separated by commas, e.g. h100-sxm-80gb,h200-141gb")
    return tuple(ids)


def _weights_precision(text: str, name: str) -> str:
    """A weights precision: any but a packed KV format (its bits are a nominal mean of a head's slot)."""
    found = precision(text, field=name)
    if found.packed:
        raise InputError(name, f"{found.name} is a KV cache format that packs attention heads, not a weights "
                               "precision; choose bf16, fp8, int4, nvfp4 or another weights dtype")
    return found.name


def _precision_list(item):
    """A parser of comma-separated precisions, each read by `item` (a KV or a weights precision)."""
    return lambda text, name: _precisions(text, name, item)


def _precisions(text: str, name: str, item) -> tuple[str, ...]:
    names = []
    for part in text.split(","):
        if part.strip():
            dtype = item(part.strip(), name)
            if dtype not in names:
                names.append(dtype)
    if not names:
        raise InputError(name, "expected precisions separated by commas, e.g. fp8,bf16")
    return tuple(names)


# A GPU-hour above this is a typo (a node's price, or cents), not a rental: the dearest GPUs
# rent for tens of dollars an hour.
MAX_USD_PER_GPU_HOUR = Fraction(1000)


class Prices(tuple):
    """(GPU id, USD per GPU-hour) pairs, which also keep the name that priced each id as typed
    (`typed`), so that a note names "H100", not the three presets it priced."""
    typed: dict = {}


def _prices(text: str, name: str) -> tuple[tuple[str, Fraction], ...]:
    """GPU=USD per GPU-hour pairs (GPU:USD in a link), comma-separated: what the user pays, for
    no price is built in. A family's name prices each of its presets ("H100=2.49": SXM, PCIe
    and NVL), except those a price names more narrowly ("H100=2.49,h100-nvl-94gb=3"); never a MIG
    instance, whose price is its own ("H100 3g.40gb=1.20")."""
    prices = {}                 # GPU id -> (price, how many presets the name that priced it covers)
    typed = {}                  # GPU id -> the name that priced it
    for part in text.split(","):
        if not part.strip():
            continue
        gpu_text, sep, usd = part.replace("=", ":").rpartition(":")
        if not sep or not gpu_text.strip():
            raise InputError(name, f"{_clip(part)!r} is not GPU=USD, e.g. h100-sxm-80gb=2.49")
        family = gpu_presets.gpu_family(gpu_text.strip(), field=name)
        label = family[0] if len(family) == 1 else _clip(gpu_text.strip())
        usd = usd.strip().lstrip("$")
        if re.fullmatch(r"-\s*\$?[0-9.]+", usd):
            raise InputError(name, f"{label}: a price is at least 0.01 USD per GPU-hour, got {_clip(usd)}")
        if not _DECIMAL.fullmatch(usd):
            raise InputError(name, f"{label}: {_clip(usd)!r} is not a price in USD per GPU-hour like 2.49")
        value = Fraction(usd)
        if not Fraction(1, 100) <= value <= MAX_USD_PER_GPU_HOUR:
            raise InputError(name, f"{label}: {_num(value)} USD per GPU-hour is outside 0.01 to "
                                   f"{_num(MAX_USD_PER_GPU_HOUR)}")
        for gpu_id in family:
            old = prices.get(gpu_id)
            # Two names as broad as each other for one preset: the same name twice, or two that
            # overlap ("A100 80GB" and "A100 SXM"), at different prices, cannot both be meant.
            if old is not None and old[1] == len(family) and (typed[gpu_id] == label or old[0] != value):
                said = f"{label} is priced twice" if typed[gpu_id] == label else \
                    f"{typed[gpu_id]} and {label} price it differently"
                raise InputError(name, f"{said} ({gpu_id})")
            if old is None or len(family) < old[1]:
                prices[gpu_id] = (value, len(family))
                typed[gpu_id] = label
    if not prices:
        raise InputError(name, "expected GPU=USD pairs, e.g. h100-sxm-80gb=2.49")
    priced = Prices((gpu_id, value) for gpu_id, (value, _) in prices.items())
    priced.typed = typed
    return priced


def _unit(text: str, name: str) -> str:
    unit = text.strip().lower()
    if unit not in UNITS:
        raise InputError(name, f"expected gib or gb, got {_clip(text)!r}")
    return unit


OPTIONS = (
    Option("model", "text", "model", "Preset id or Hugging Face repo id, case-insensitive; a checkpoint of a "
           "preset's model (-Instruct, -AWQ, -FP8, a local path) is its shape, with its own weights; or words "
           "naming one preset (\"llama 3.1 70b\")."),
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
    Option("gpus", "int", "deployment", "GPUs serving the model: tp x pp x dp.", 1, 1 << 20, "1"),
    Option("tp", "int", "deployment", "Tensor-parallel size of each data-parallel rank (default gpus / (pp x dp)).", 1, 1 << 20),
    Option("pp", "int", "deployment", "Pipeline-parallel size: splits the layers.", 1, 10_000, "1"),
    Option("dp", "int", "deployment", "Data-parallel size: attention ranks, each a tp x pp group holding only its own "
           "requests' cache (vLLM --data-parallel-size; SGLang --dp-size with --enable-dp-attention). "
           "GPUs = tp x pp x dp.", 1, 1 << 16, "1"),
    Option("ep", "text", "deployment", "Expert parallel on or off: the MoE experts placed whole over all tp x dp GPUs "
           "(vLLM --enable-expert-parallel, SGLang --ep-size) instead of each sliced by tensor parallel.",
           choice=_one_of("on", "off"), bare="on"),
    Option("gpu", "text", "deployment", "GPU preset, by its id or a name only it has (H200, h100, RTX 4090, "
           "MI300X): sets memory and bandwidth.", choice=_gpu_id),
    Option("gpu-memory-gib", "decimal", "deployment", "Memory per GPU in GiB (overrides the preset).", Fraction(1, 1024), 1 << 24),
    Option("memory-utilization", "decimal", "deployment", "Fraction of GPU memory the engine may use, like vLLM's --gpu-memory-utilization.", Fraction(1, 100), 1, "1"),
    Option("weights-dtype", "text", "deployment", "Precision of the weights (default: the model's dtype).",
           choice=_weights_precision),
    Option("params", "count", "deployment", "Parameter count, like 7.6B, 70e9 or 8030261248 (overrides the "
           "preset's).", 10 ** 6, 10 ** 15),
    Option("weights-gib", "decimal", "deployment", "Total weights in GiB (overrides params x precision).", 0, 1 << 30),
    Option("weights-bytes", "int", "deployment", "Exact weights in bytes, as a checkpoint's headers give them "
           "(--gguf and --weights-file set it; overrides the others).", 1, 1 << 50),
    Option("layer-weights-bytes", "list", "deployment", "Bytes outside the layers on the first stage, each "
           "layer's, then those on the last stage, comma-separated, as a checkpoint's headers give them: "
           "pipeline stages carry their own layers."),
    Option("overhead-gib", "decimal", "deployment", "Per-GPU memory for activations, CUDA graphs and the runtime.", 0, 1 << 24, "0"),
    Option("engine", "text", "engine", f"Size the way this engine allocates: vllm, sglang or llama.cpp, or exact "
           f"for the exact ideal, no engine's rules (default {engines.DEFAULT}, its newest release modelled, as the "
           f"page starts; a share link without an engine key means exact).",
           choice=_engine_name),
    Option("engine-version", "text", "engine", "The engine's release as it prints it (vLLM 0.10.2, v0.19.1, "
           "0.28.1rc1.dev50+g...; SGLang 0.5.2; llama.cpp b5192); default: the newest release modelled.",
           choice=_version_text),
    Option("kv-memory-gib", "decimal", "engine", "KV cache memory per GPU the engine reported (vLLM's \"Available "
           "KV cache memory\"); skips the overhead estimate.", Fraction(1, 1024), 1 << 20),
    Option("loaded-weights-gib", "decimal", "engine", "Measured: the weights on the busiest GPU as the engine's log "
           "printed them (vLLM \"Model loading took\", SGLang \"mem usage\"), in GiB.", 0, 1 << 20),
    Option("activation-gib", "decimal", "engine", "Measured: the activation peak of vLLM's profiling run as its log "
           "printed it (\"peak activation\", \"torch peak memory increase\"), per GPU in GiB.", 0, 1 << 20),
    Option("non-torch-gib", "decimal", "engine", "Measured: memory outside PyTorch (NCCL, CUDA context) as vLLM's "
           "log printed it, per GPU in GiB.", 0, 1 << 20),
    Option("cudagraph-gib", "decimal", "engine", "Measured: the CUDA-graph memory vLLM's log says it subtracted, "
           "per GPU in GiB.", 0, 1 << 20),
    Option("measured-with", "pairs", "engine", "The inputs of the deployment a log measured (name:value, comma-"
           "separated): the measured figures hold for them, and what an edit changes is re-estimated."),
    Option("prefill-chunk", "int", "engine", "Tokens per prefill step: vLLM --max-num-batched-tokens, SGLang "
           "--chunked-prefill-size, llama.cpp -ub (default: the engine's own).", 1, 1 << 24),
    Option("kv-dtype-v", "text", "engine", "llama.cpp: the V cache's type when it differs from K (-ctv).",
           choice=_precision_name),
    Option("vllm-runner", "text", "engine", "vLLM --runner: pooling (an embedding, reranker or reward model: no "
           "sampler warm-up, no lm_head) or generate; default auto, as vLLM resolves it from the architecture "
           "(a Sentence Transformers repo whose config names *ForCausalLM, such as Qwen3-Embedding, needs pooling "
           "given).", choice=_one_of("auto", "generate", "pooling")),
    Option("vllm-entry", "text", "engine", "vLLM: how it is started, `vllm serve` (serve) or the Python LLM() class "
           "(llm), whose batch defaults differ (default serve).", choice=_one_of("serve", "llm")),
    Option("enforce-eager", "text", "engine", "vLLM: --enforce-eager on (no CUDA graphs, so none come out of the "
           "KV memory from 0.20.0) or off (the default).", choice=_one_of("on", "off")),
    Option("max-cudagraph-capture-size", "int", "engine", "vLLM --max-cudagraph-capture-size (0.11.1 on): the "
           "largest batch it captures CUDA graphs for (default 2 x max-num-seqs x the tokens a decode step verifies, "
           "at most 512, or 1,024 on Blackwell from 0.28.0); from 0.20.0 the graphs' memory comes out of the KV "
           "memory, so fewer of them leave more for the cache.", 1, 1 << 16),
    Option("prefix-caching", "text", "engine", "vLLM: --enable-prefix-caching on or off; for a hybrid it sets the "
           "state pages a request keeps (on: align mode, two). Default: the release's, off for hybrids before "
           "0.28.0.", choice=_one_of("on", "off")),
    Option("language-model-only", "text", "engine", "vLLM: serve a multimodal checkpoint text-only, on or off "
           "(--language-model-only from 0.17.0; --limit-mm-per-prompt 0 for every modality from 0.10.2): no vision "
           "tower is loaded and no encoder pass is profiled (default off).", choice=_one_of("on", "off")),
    Option("limit-mm-per-prompt", "text", "engine", "vLLM --limit-mm-per-prompt: items a prompt per modality, "
           "such as image=1,video=0; its profiling run encodes the largest items they allow (default: V0 one "
           "image and one video, V1 999 of each). 0 for every modality serves the model text-only, as "
           "language-model-only does.", choice=_mm_limits),
    Option("kv-dtype-skip-layers", "text", "engine", "vLLM --kv-cache-dtype-skip-layers: layers whose KV cache "
           "stays in the model's dtype under a quantized kv-dtype, by index (0, 1, ...) or sliding_window for every "
           "sliding-window layer. TurboQuant kv-dtypes add a dense model's first two and last two layers.",
           choice=_kv_skip_layers),
    Option("hybrid-kv-cache-manager", "text", "engine", "vLLM's hybrid KV cache manager, on or off "
           "(--disable-hybrid-kv-cache-manager; for chunked local attention, on is "
           "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1). Off, sliding-window and chunked layers keep the "
           "whole context. Default: vLLM's rule for the release, model and connector.", choice=_one_of("on", "off")),
    Option("kv-connector", "text", "engine", "vLLM --kv-transfer-config's kv_connector (NixlConnector, "
           "LMCacheConnectorV1, ...): one that does not support the hybrid KV cache manager in the release turns it "
           "off.", choice=_connector),
    Option("mamba-ssm-dtype", "text", "engine", "A hybrid's recurrent (SSM) state dtype: float32, bfloat16 or "
           "float16 (vLLM --mamba-ssm-cache-dtype, SGLang --mamba-ssm-dtype). Default: the config's "
           "mamba_ssm_dtype, else the model's dtype.", choice=_state_dtype),
    Option("vllm-engine", "text", "engine", "vLLM 0.8-0.10: the engine it ran, v1 (the default) or v0 "
           "(VLLM_USE_V1=0, or a fallback its log shows as \"Initializing an LLM engine\").", choice=_one_of("v0", "v1")),
    Option("memory-in-use-gib", "decimal", "engine", "SGLang: GPU memory already in use when it starts (other "
           "processes and its CUDA context), in GiB; default its CUDA context.", 0, 1 << 24),
    Option("flash-attn", "text", "engine", "llama.cpp: flash attention on or off (-fa); off, the attention "
           "scores take a buffer of heads x context x ubatch x 4 B.", choice=_one_of("on", "off")),
    Option("n-gpu-layers", "int", "engine", "llama.cpp: layers offloaded to the GPUs (-ngl); the rest, and "
           "their KV cache, stay on the CPU (default: all).", 0, 100_000),
    Option("n-cpu-moe", "int", "engine", "llama.cpp: keep the MoE experts of the first N layers on the CPU "
           "(--n-cpu-moe).", 0, 100_000),
    Option("tensor-split", "text", "engine", "llama.cpp: how its layers are split over the GPUs (-ts / "
           "--tensor-split), one proportion a GPU, e.g. 10,6 (default: by each GPU's free memory, even over "
           "identical GPUs).", choice=_tensor_split),
    Option("rate", "decimal", "plan", "Requests arriving per second: the concurrency needed comes from Little's law "
           "(rate x (time to first token + output tokens x decode step)), a lower bound.", Fraction(1, 1000), 10 ** 6),
    Option("output-tokens", "int", "plan", "Mean tokens generated per request, with rate (the prompt is "
           "prompt-tokens, else the context less these).", 1, 1 << 24),
    Option("plan-gpus", "text", "plan", "GPU presets the plan considers, comma-separated, a family's name for each "
           "of its presets (H100) (default: every preset the engine runs on; vLLM and SGLang: NVIDIA and AMD).",
           choice=_gpu_ids),
    Option("plan-max-gpus", "int", "plan", "The largest deployment the plan considers, in GPUs (every deployment, "
           "--plan-all: at most 800 GPU counts over the GPU types and precision pairs).", 1, 4096, "64"),
    Option("plan-kv-dtypes", "text", "plan", "KV cache precisions the plan may use, comma-separated (default: "
           "kv-dtype's); GPU types x KV x weight precisions at most 480.", choice=_precision_list(_precision_name)),
    Option("plan-weights-dtypes", "text", "plan", "Weight precisions the plan may use, comma-separated (default: "
           "weights-dtype's).", choice=_precision_list(_weights_precision)),
    Option("prices", "text", "plan", "What you pay per GPU-hour in USD, GPU=USD comma-separated (the CLI's "
           "--price GPU=USD, repeatable); a family's name (H100=2.49) prices each of its presets, a narrower "
           "name's price wins; no price is built in.", choice=_prices),
    Option("draft-model", "text", "serving", "Speculative decoding with a draft model: a preset id or Hugging Face "
           "repo id (vLLM --speculative-config model, SGLang --speculative-draft-model-path, llama.cpp -md)."),
    Option("draft-hf-config", "config", "serving", "Speculative decoding with a draft model given by its config.json."),
    Option("mtp", "text", "serving", "Speculative decoding with the model's own multi-token-prediction heads "
           "(DeepSeek-V3's num_nextn_predict_layers, Qwen3.5's mtp_num_hidden_layers): on or off.",
           choice=_one_of("on", "off"), bare="on"),
    Option("spec-tokens", "int", "serving", "Tokens proposed per step by the draft or the MTP heads (vLLM "
           "num_speculative_tokens, SGLang --speculative-num-steps, llama.cpp --draft-max).", 1, 64),
    Option("offload-gib", "decimal", "serving", "A host-memory KV tier in GiB (vLLM --kv-offloading-size, summed over "
           "its ranks; SGLang --hicache-size, per rank; LMCache max_local_cpu_size, per worker).", 0, 1 << 24),
    Option("offload-backend", "text", "serving", "Which tier holds the offloaded KV: native (vLLM's own CPU offload, "
           "SGLang's HiCache) or lmcache.", choice=_one_of("native", "lmcache")),
    Option("offload-link", "text", "serving", "The link a prefix comes back over, for the lower bound on its time: "
           "pcie4 (Gen4 x16), pcie5 (Gen5 x16) or nvme.", choice=_one_of("pcie4", "pcie5", "nvme")),
    Option("host-memory-gib", "decimal", "serving", "Host memory per node in GiB: an offload tier larger than it "
           "is refused.", Fraction(1, 1024), 1 << 24),
    Option("max-loras", "int", "serving", "LoRA adapters served at once, each with its own slot in GPU memory "
           "(vLLM --max-loras, SGLang --max-loras-per-batch).", 1, 1024),
    Option("max-lora-rank", "int", "serving", "The largest LoRA rank served (vLLM --max-lora-rank): every slot is "
           "allocated at it.", 1, 4096),
    Option("prefix-hit-rate", "decimal", "serving", "The share of requests whose prompt starts with the shared prefix "
           "(prefix-tokens), from 0 to 1: the cached tokens, requests that fit and prefill skipped are then "
           "expectations.", 0, 1),
    Option("mm-encoder-tp-mode", "text", "serving", "Where a vision encoder's weights go under tensor parallel: "
           "weights (split, vLLM's default) or data (whole on every GPU; vLLM --mm-encoder-tp-mode data, SGLang "
           "--mm-enable-dp-encoder).", choice=_one_of("weights", "data")),
    Option("mmproj-bytes", "int", "serving", "llama.cpp: the multimodal projector's (--mmproj) tensor bytes, as its "
           "GGUF header gives them (the CLI's --mmproj FILE reads them).", 1, 1 << 50),
    Option("also", "text", "serving", "Another server on the same GPU or node: its inputs as name:value pairs, "
           "comma-separated (model, engine, engine-version, memory-utilization, context, batch, kv-dtype, "
           "weights-dtype, tp, pp; the GPU, GPU count and node are shared; the engine, its version, the context and "
           "the batch are server 1's unless set), e.g. model:Qwen/Qwen3-14B,memory-utilization:0.45; repeat it for "
           "each server (sets separated by ; in a link). Each is sized on its own, then together as each engine "
           "shares memory, with a launch command each.", choice=_servers, repeat=SERVER_SEPARATOR),
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
    elif option.kind == "pairs":
        return parse_pairs(name, text)
    elif option.kind == "list":
        if not isinstance(text, str) or not text:
            raise InputError(name, "expected numbers separated by commas")
        if len(text) > 1 << 16:
            raise InputError(name, "is longer than 65,536 characters")
        return text
    else:
        if not isinstance(text, str) or not text:
            raise InputError(name, "expected text")
        limit = LONG_TEXT.get(name, 200)
        if len(text) > limit:
            raise InputError(name, f"is longer than {limit:,} characters")
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
    if values.get("engine") == EXACT:
        del values["engine"]        # below here, no engine is the exact ideal
    return values, errors


def parse_pairs(name: str, text) -> dict:
    """`name:value,name:value` as typed values, each by its own option's parser: the inputs of a
    measured deployment."""
    if isinstance(text, dict):
        text = ",".join(f"{k}:{v}" for k, v in text.items())
    if not isinstance(text, str) or not text:
        raise InputError(name, "expected name:value pairs separated by commas")
    if len(text) > 4096:
        raise InputError(name, "is longer than 4,096 characters")
    pairs = {}
    for part in text.split(","):
        key, colon, value = part.partition(":")
        key = key.strip()
        option = OPTION_BY_NAME.get(key)
        if not colon or option is None or option.kind in ("pairs", "config", "list") or option.repeat:
            raise InputError(name, f"{_clip(part)!r} is not an input's name:value")
        if key in pairs:
            raise InputError(name, f"names {key} twice")
        try:
            pairs[key] = parse_value(option, value)
        except InputError as e:
            raise InputError(name, f"{key}: {e.message}") from None
    if pairs.get("engine") == EXACT:
        del pairs["engine"]
    return pairs


def canonical_value(name: str, value):
    """The spelling a form's list uses for a value the engine accepts (aliases, any case)."""
    if not isinstance(value, str):
        return value
    if name == "engine":
        return _engine_name(value, name)
    if name in ("kv-dtype", "weights-dtype", "kv-dtype-v"):
        return precision(value, field=name).name
    if name == "gpu":
        return gpu_presets.gpu(value).id
    if name == "unit":
        return value.strip().lower()
    if name == "model":
        # A preset's alias or variant is the preset's id, save a checkpoint whose weights are not
        # the preset's: it stays as typed, for its weights are unknown (presets.resolve_model); and
        # a repo id the preset lists (an Instruct release) stays that repo, which is what is served.
        match = presets.model_match_for(value)
        if match is None or match.weights_differ:
            return value
        return presets.repo_alias(match.entry, value) or match.entry["id"]
    return value
