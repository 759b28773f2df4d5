"""vLLM's start-up lines, V0 and V1, 0.6 to 0.33: the config it prints, the memory profile and
the KV cache it allocates (vllm/v1/worker/gpu_worker.py, vllm/v1/core/kv_cache_utils.py,
vllm/worker/worker.py and vllm/executor/executor_base.py for V0)."""

import itertools
import re
from fractions import Fraction

from ...readers import presets
from .. import releases
from . import engine, release as rules
from .state_dtype import implied  # noqa: F401 - inputs/startup_log asks each engine's log module
from ...errors import InputError
from ...precision import precision
from ...readers.log_rules import (
    Device, Rule, capability, command_words, continuation, model_entry, number, take_gpu, take_model)

NAME = "vllm"
# A count as V0 printed it, its thousands grouped or not: "# CUDA blocks: 3947, # CPU blocks: 2048"
# (vllm/executor/executor_base.py, 0.6-0.10) ends the figure at the comma that separates the two.
_NUM = r"(\d{1,15}(?:,\d{3}){0,5}(?!\d))"
GIB = r"\s*GiB"
# A printed figure's whole word, however it is spelled (1.2.3, NaN, 1e400, 5,000 digits): typed
# by its handler, said in the notes when it is no number vLLM prints, never read short.
_WORD = r"(\S+?)"
_COUNT = re.compile(r"\d{1,3}(?:,\d{3}){1,5}|\d{1,15}", re.A)      # a token or block count, "910,512" as V1 prints it
_DECIMAL = re.compile(r"-?\d{1,12}(?:\.\d{1,12})?", re.A)


def _figure(sink, what: str, text: str, n: int, pattern=_DECIMAL):
    """A printed figure no option takes (tokens, blocks, concurrency, graph memory) as a number,
    or None, said in the notes."""
    if pattern.fullmatch(text):
        return int(number(text)) if pattern is _COUNT else Fraction(text)
    sink.rejected.append(f"line {n:,}: {what} {text[:40]!r} not taken (not a number vLLM prints)")
    return None


def _gib_option(sink, option: str, text: str, n: int, line: str, how: str = "", keep: str = "min"):
    """A GiB figure an option takes, typed by its parser (the note names the option), or None."""
    before = len(sink.rejected)
    sink.take(option, text, n, line, how, keep=keep)
    return None if len(sink.rejected) > before else Fraction(text)


_LEVEL = re.compile(r"(?:INFO|DEBUG|WARNING|ERROR)\s")
_PROCESS = re.compile(r"\((?P<name>[A-Za-z][\w =]{0,40}?) pid=\d{1,10}\)")


def _process(line: str) -> str:
    """The process a line's prefix names ("EngineCore_DP1", "Worker_TP1"), or ""."""
    found = _PROCESS.search(line)
    return found["name"] if found else ""


def begin(sink, kind: str, n: int, line: str) -> None:
    """A line printed once per start-up (the version, the banner, the non-default args, each engine
    core's config line, the command): seen again, it begins another start-up, in whatever order
    the lines were pasted. The same line printed twice before any KV cache was allocated (a
    notebook showing both stdout and stderr, its own prefix before each) is one start-up."""
    key = "start " + kind
    found = _LEVEL.search(line)
    text = line[found.start():].strip() if found else line.strip()
    first = sink.printed.get(key)
    if first is None:
        sink.show(key, text, n, line)
        return
    ready = sink.printed.get("ready_at")
    if text == first.value and (ready is None or ready.value < first.line_number):
        return
    sink.restarts.append((first.line_number, n))


def _ready(sink, n, line):
    # The KV cache allocated: a start line after this begins another start-up.
    sink.show("ready_at", n, n, line, keep="last")


def _ranks(match, sink, n, line):
    """The ranks a worker's prefix names: "(VllmWorker TP1 pid=..)", "(Worker_PP1_TP3 pid=..)",
    "(Worker_TP0_EP0 pid=..)", "(EngineCore_DP1 pid=..)", "(VllmWorker rank=1 pid=..)" (a rank of
    the whole tp x pp world). The highest seen is a lower bound on each size (complete())."""
    for kind, index in _RANK.findall(match["name"]):
        name = f"highest_{(kind or 'world').lower()}_rank"
        old = sink.printed.get(name)
        if old is None or int(index) > old.value:
            sink.show(name, int(index), n, line, keep="last")


_RANK = re.compile(r"(?:^|[_ ])(?:(TP|PP|DP)_?|rank=)(\d{1,5})(?=$|[_ ])")


def _take_version(sink, text: str, n: int, line: str, how: str = "") -> None:
    # A release outside those modelled, or a source build's "dev", would refuse every figure:
    # said, not taken.
    text = text.lstrip("v")
    try:
        releases.parse(engine, text)
    except InputError as e:
        sink.rejected.append(f"line {n:,}: engine-version {text[:40]!r} not taken ({e.message})")
        return
    sink.take("engine-version", text, n, line, how)


def _version(match, sink, n, line):
    begin(sink, "server version", n, line)
    _take_version(sink, match["version"], n, line)


def _banner(match, sink, n, line):
    # 0.15 and later print an ASCII banner in place of "vLLM API server version" (entrypoints'
    # utils.py / api_utils.py): " ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.19.0", and below it
    # "  █▄█▀ █     █     █     █  model   Qwen/Qwen3-8B".
    begin(sink, "banner", n, line)
    _take_version(sink, match["version"], n, line, "the banner's version")


def _banner_model(match, sink, n, line):
    sink.show("model_path", match[1], n, line)


def _engine_line(match, sink, n, line):
    # Each data-parallel engine core prints its own config line: one start per process.
    begin(sink, "engine config " + _process(line), n, line)
    _take_version(sink, match["version"], n, line)
    sink.show("engine_variant", "v1" if match["v1"] else "v0", n, line)
    config = match["config"]
    _config_pairs(config, sink, n, line)


# key=value pairs of the engine's config line, and the inputs they are.
_CONFIG_KEYS = {"tensor_parallel_size": "tp", "pipeline_parallel_size": "pp", "data_parallel_size": "dp",
                "max_seq_len": "context", "kv_cache_dtype": "kv-dtype", "enforce_eager": "enforce-eager"}
_CONFIG = re.compile(r"(?<![\w.])(" + "|".join(_CONFIG_KEYS) + r")=([\w.\-]+)")
_MODEL = re.compile(r"(?<![\w.])model='([^']{1,300})'")
_QUANTIZATION = re.compile(r"(?<![\w.])quantization=([\w.\-]{1,40})")


def _config_pairs(config: str, sink, n, line):
    for key, value in _CONFIG.findall(config):
        _take_setting(sink, _CONFIG_KEYS[key], value, n, line)
    model = _MODEL.search(config)
    if model:
        sink.show("model_path", model[1], n, line)
    quantization = _QUANTIZATION.search(config)
    if quantization:
        sink.show("quantization", quantization[1], n, line)
    if _POOLER.search(config):
        sink.take("vllm-runner", "pooling", n, line, "pooler_config is set only under the pooling runner")
    _speculative(config, sink, n, line, _SPEC_REPR)


# The pooling runner as a log shows it (engines/vllm/pooling.py): the engine line's
# pooler_config=PoolerConfig(...) (ModelConfig.__post_init__ sets one only when runner_type is
# "pooling", vllm/config/model.py 0.12.0), the non-default args' 'runner': 'pooling' (0.10.2 on),
# a pooling 'convert' or the older 'task', and "Resolved `--runner auto` to `--runner pooling`".
_POOLER = re.compile(r"(?<![\w.])pooler_config=PoolerConfig\(")
_POOLING_ARG = re.compile(r"'(?:runner': 'pooling|convert': '(?:embed|classify|reward)|"
                          r"task': '(?:embed|embedding|classify|score|reward))'")


def _runner_resolved(match, sink, n, line):
    sink.take("vllm-runner", match[1], n, line, "vLLM resolved --runner auto")


def _take_setting(sink, option, value, n, line, how=""):
    value = value.strip("'\"")
    if option == "kv-dtype":
        if value == "auto":
            sink.show("kv_dtype_default", value, n, line)    # the model's dtype, printed: no inference
            return
        value = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8_e5m2"}.get(value, value)
    if option in ("enforce-eager", "prefix-caching", "language-model-only"):
        value = "on" if value == "True" else "off"
    if option == "mamba-ssm-dtype" and value == "auto":
        return                              # the config's mamba_ssm_dtype, else the model's: the default
    if option == "max-cudagraph-capture-size" and value == "None":
        return                              # a whole compilation_config printed: unset, the default
    sink.take(option, value, n, line, how)


# 'key': value pairs of the non-default args line (a Python dict's repr).
_ARG_KEYS = {"max_model_len": "context", "tensor_parallel_size": "tp", "pipeline_parallel_size": "pp",
             "data_parallel_size": "dp", "gpu_memory_utilization": "memory-utilization",
             "max_num_seqs": "batch", "max_num_batched_tokens": "prefill-chunk", "kv_cache_dtype": "kv-dtype",
             "block_size": "block-size", "enforce_eager": "enforce-eager", "enable_expert_parallel": "ep",
             "kv_cache_memory_bytes": "kv-memory-bytes", "enable_prefix_caching": "prefix-caching",
             "mamba_ssm_cache_dtype": "mamba-ssm-dtype", "language_model_only": "language-model-only",
             # Given at the top or inside 'compilation_config' (its -cc / --compilation-config form): either is given.
             "max_cudagraph_capture_size": "max-cudagraph-capture-size"}
_ARGS = re.compile(r"'(" + "|".join(_ARG_KEYS) + r")': ('[^']{0,40}'|[\w.\-]+)")


# An explicit list of CUDA-graph sizes (cudagraph_capture_sizes, --cudagraph-capture-sizes, the older
# --cuda-graph-sizes): not modelled; the estimate takes the sizes a limit gives.
_SIZES_LIST = re.compile(r"'cudagraph_capture_sizes': \[|--cudagraph-capture-sizes\b|--cuda-graph-sizes\b")
_SIZES_NOTE = ("line {n:,}: the CUDA graphs' sizes are given as a list, which is not modelled: the graphs' estimate "
               "takes the sizes vLLM lists up to --max-cudagraph-capture-size (or its default)")


def _closed(args: str) -> bool:
    """Whether a printed dict is whole: its braces close where the line ends (a paste or a log
    collector may cut a long line, leaving out keys that were given). Braces inside its repr'd
    strings are text; a string left open is a cut line."""
    body = _STRINGS.sub("", args.rstrip())
    if "'" in body or '"' in body:
        return False
    depth = 0
    for part in re.split(r"([{}])", body):
        depth += (part == "{") - (part == "}")
        if depth < 0:
            return False
    return depth == 0 and body.endswith("}")


_STRINGS = re.compile(r"'(?:[^'\\\n]|\\.){0,100000}'|\"(?:[^\"\\\n]|\\.){0,100000}\"")


# 'limit_mm_per_prompt': {'image': 0, 'video': 0}: every modality at zero serves the model text-only.
_LIMITS = re.compile(r"'limit_mm_per_prompt': \{([^{}]{0,200})\}")
# The KV connector of --kv-transfer-config: the args' dict ('kv_transfer_config': {'kv_connector': 'X', ...}
# or KVTransferConfig(kv_connector='X', ...)), the command's JSON ("kv_connector": "X").
_CONNECTOR = re.compile(r"""kv_transfer_config['"]?[:=]\s*(?:KVTransferConfig\(|\{)[^{}()]{0,400}?kv_connector['"]?\s*[:=]"""
                        r"""\s*['"](\w{1,80})['"]""")
_CONNECTOR_FLAG = re.compile(r"""--kv-transfer-config[=\s]+['"]?\{[^{}]{0,400}?['"]kv_connector['"]\s*:\s*['"](\w{1,80})['"]""")
_HMA_ARG = re.compile(r"'disable_hybrid_kv_cache_manager': (True|False)")
# 'kv_cache_dtype_skip_layers': ['0', 'sliding_window']: the layers kept in the model's dtype.
_SKIP_LAYERS = re.compile(r"'kv_cache_dtype_skip_layers': \[([^\[\]]{0,8000})\]")


def _non_default(match, sink, n, line):
    begin(sink, "non-default args " + _process(line), n, line)
    if _closed(match["args"]):
        sink.show("args_line", n, n, line)      # whole: a size it leaves out is its default
    else:
        sink.notes.append(f"line {n:,}: the non-default args are cut short, so a size they do not show is not "
                          "taken as its default (1)")
    quantization = re.search(r"'quantization': '([\w.\-]{1,40})'", match["args"])
    if quantization:
        sink.show("quantization", quantization[1], n, line)
    if _SIZES_LIST.search(match["args"]):
        sink.notes.append(_SIZES_NOTE.format(n=n))
    for key, value in _ARGS.findall(match["args"]):
        option = _ARG_KEYS[key]
        if option == "ep":
            sink.take("ep", "on" if value == "True" else "off", n, line)
        elif option == "kv-memory-bytes":
            if re.fullmatch(r"[0-9]{1,20}", value):
                sink.take("kv-memory-gib", _gib_text(int(value)), n, line, "--kv-cache-memory bytes in GiB")
            else:
                sink.rejected.append(f"line {n:,}: kv-memory-gib (kv_cache_memory_bytes) {value[:40]!r} not taken "
                                     "(not a whole number of bytes)")
        else:
            _take_setting(sink, option, value, n, line)
    model = re.search(r"'model': '([^']{1,300})'", match["args"])
    if model:
        sink.show("model_path", model[1], n, line)
    limits = _LIMITS.search(match["args"])
    if limits and not re.search(r"[1-9]", limits[1]) and ":" in limits[1]:
        sink.take("language-model-only", "on", n, line, "--limit-mm-per-prompt 0 for every modality")
    elif limits:
        pairs = re.findall(r"'(\w{1,20})': (\d{1,4})", limits[1])
        sink.take("limit-mm-per-prompt", "/".join(f"{k}={v}" for k, v in pairs), n, line)
    connector = _CONNECTOR.search(match["args"])
    if connector:
        sink.take("kv-connector", connector[1], n, line)
    hma = _HMA_ARG.search(match["args"])
    if hma:
        sink.take("hybrid-kv-cache-manager", "off" if hma[1] == "True" else "on", n, line)
    skip = _SKIP_LAYERS.search(match["args"])
    if skip and skip[1].strip():
        entries = re.findall(r"'([\w]{1,20})'", skip[1])
        sink.take("kv-dtype-skip-layers", "/".join(entries), n, line)
    if _POOLING_ARG.search(match["args"]):
        sink.take("vllm-runner", "pooling", n, line, "--runner pooling (or a pooling --convert / --task)")
    _speculative(match["args"], sink, n, line)


# 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 3} in the non-default args, and
# speculative_config=SpeculativeConfig(method='mtp', model=..., num_spec_tokens=3) in the engine's
# config line (the method vLLM resolved, when the args left it out). What they are is decided in
# complete(), from both lines: the model's own MTP heads (vLLM's "mtp" and the per-family names
# config/speculative.py maps to it), or a draft_model whose 'model' names a preset. EAGLE, EAGLE3,
# DFlash, n-gram and the other proposers are no input here: a note says so.
_SPECULATIVE = re.compile(r"'speculative_config': \{([^{}]{0,400})\}")
_SPECULATIVE_REPR = re.compile(r"speculative_config=SpeculativeConfig\(([^()]{0,400})\)")
_MTP_METHODS = ("mtp", "deepseek_mtp", "qwen3_next_mtp", "qwen3_5_mtp", "glm4_moe_mtp")
_DRAFT_METHOD = "draft_model"


# The two spellings vLLM prints a speculative config in: the non-default args' dict and the
# engine line's SpeculativeConfig repr, each as (the config, its method, model and tokens).
_SPEC_DICT = (_SPECULATIVE, re.compile(r"'method': '([\w.\-]{1,40})'"), re.compile(r"'model': '([^']{1,300})'"),
              re.compile(r"'num_speculative_tokens': (\d{1,2})\b"))
_SPEC_REPR = (_SPECULATIVE_REPR, re.compile(r"method='([\w.\-]{1,40})'"), re.compile(r"(?<![\w.])model='([^']{1,300})'"),
              re.compile(r"num_spec_tokens=(\d{1,2})\b"))


def _speculative(text: str, sink, n, line, spelling=_SPEC_DICT) -> None:
    config, *parts = spelling
    found = config.search(text)
    if found:
        _spec_parts(sink, *(pattern.search(found[1]) for pattern in parts), n, line)


def _spec_parts(sink, method, model, tokens, n, line) -> None:
    # The first line that gives each part keeps it: the non-default args come before the engine's
    # config line, which repeats them with the method resolved.
    for name, found in (("spec_method", method), ("spec_model", model), ("spec_tokens", tokens)):
        if found:
            sink.show(name, found[1], n, line)


def _take_speculative(sink) -> None:
    """The proposer the speculative_config lines name, as inputs: mtp on, or a draft-model preset,
    with spec-tokens; what no input can say, in a note."""
    printed = sink.printed
    method, model, tokens = (printed.get(k) for k in ("spec_method", "spec_model", "spec_tokens"))
    if method is None and model is None:
        return
    entry = model_entry(model.value) if model is not None else None
    if method is not None and method.value in _MTP_METHODS:
        sink.take("mtp", "on", method.line_number, method.line, "speculative_config method " + method.value)
    elif method is not None and method.value != _DRAFT_METHOD:
        sink.notes.append(f"speculative decoding not read: method {method.value!r} (an EAGLE head, DFlash, n-gram "
                          "or another proposer) is no input here; only the model's MTP heads and a draft model are")
        return
    elif entry is None:
        shown = repr(model.value[:80]) if model is not None else "not printed"
        sink.notes.append(f"draft model not read: its path {shown} is not a preset's Hugging Face id (a local "
                          "file cannot be one); give its config.json as draft-hf-config")
        return
    elif method is None and "model" in sink.reads and entry["id"] == sink.reads["model"].text:
        return                  # the target's own id without a method: not a draft model
    else:
        # No method printed: vLLM (config/speculative.py) takes a model that is a whole causal LM,
        # as every preset is, for a draft_model.
        how = "speculative_config model" + ("" if method is not None else ", a draft_model (no method printed)")
        sink.take("draft-model", entry["id"], model.line_number, model.line, how)
    if tokens is not None:
        sink.take("spec-tokens", tokens.value, tokens.line_number, tokens.line,
                  "speculative_config num_speculative_tokens")


def _gib_text(byte_count: int) -> str:
    return f"{byte_count / (1 << 30):.6f}".rstrip("0").rstrip(".")


def _max_len(match, sink, n, line):
    # A speculative draft model prints its own max model len after the target's.
    sink.take("context", number(match[1]), n, line, keep="first")


def _chunk(match, sink, n, line):
    # The API server prints its scheduler's default before the engine's own.
    sink.take("prefill-chunk", number(match[1]), n, line, keep="last")


def _loading(match, sink, n, line):
    # V0 printed "Loading model weights took X GB" from bytes / 2^30: GiB by another name. It
    # prints no thousands separator: "1,234.5" is no weight it printed.
    sink.take("loaded-weights-gib", match[1], n, line, keep="max")


# What vLLM does with a KV cache of nothing (v1/core/kv_cache_utils.py, V0's cache engine).
REFUSAL = "vLLM does not start: \"ValueError: No available memory for the cache blocks\""


def _empty(sink, text: str, n: int, line: str, printed: str) -> bool:
    """A KV memory of zero or less printed ("Available KV cache memory: -3.5 GiB"): carried as the
    empty pool it is (Sink.empty_pool), never dropped as a value no input takes."""
    if not _DECIMAL.fullmatch(text) or Fraction(text) > 0:
        return False
    sink.empty_pool("kv-memory-gib", printed, -Fraction(text), n, line, REFUSAL)
    sink.show("kv_memory_gib", Fraction(text), n, line, keep="min", text=f"{text} GiB")
    return True


def _kv_memory(match, sink, n, line):
    _ready(sink, n, line)
    if _empty(sink, match[1], n, line, f"Available KV cache memory: {match[1]} GiB"):
        return
    gib = _gib_option(sink, "kv-memory-gib", match[1], n, line)
    if gib is not None:
        sink.show("kv_memory_gib", gib, n, line, keep="min", text=f"{match[1]} GiB")


def _kv_tokens(match, sink, n, line):
    _ready(sink, n, line)
    tokens = _figure(sink, "GPU KV cache size", match[1], n, _COUNT)
    if tokens is not None:
        sink.show("kv_tokens", tokens, n, line, keep="min")
    if tokens == 0:
        sink.empty_pool("kv-memory-gib", f"GPU KV cache size: {match[1]} tokens", None, n, line, REFUSAL)


def _blocks(match, sink, n, line):
    blocks = _figure(sink, "GPU blocks", match[1], n, _COUNT)
    if blocks is not None:
        sink.show("gpu_blocks", blocks, n, line, keep="min")
    if blocks == 0:
        sink.empty_pool("kv-memory-gib", f"# GPU blocks: {match[1]}", None, n, line, REFUSAL)


def _concurrency(match, sink, n, line):
    if _COUNT.fullmatch(match[1]):
        sink.take("context", number(match[1]), n, line, "the context its concurrency is for")
    else:
        _figure(sink, "context", match[1], n, _COUNT)
    concurrency = _figure(sink, "Maximum concurrency", match[2], n)
    if concurrency is not None:
        sink.show("max_concurrency", concurrency, n, line, keep="min")


def _budget_v0(match, sink, n, line):
    sink.take("gpu-memory-gib", match["total"], n, line, "total_gpu_memory, as PyTorch reports it")
    _take_setting(sink, "memory-utilization", match["util"], n, line)


def _profile_results(match, sink, n, line):
    """V0 0.6.2-0.6.4's one line (vllm/worker/worker.py determine_num_available_blocks): the device
    total, non-torch memory, the KV memory and the utilization. Its peak_torch_memory is the
    weights and the activation peak together: neither input takes the sum, so it is not read."""
    sink.take("gpu-memory-gib", match["total"], n, line, "total_gpu_memory, as PyTorch reports it")
    _take_setting(sink, "memory-utilization", match["util"], n, line)
    sink.take("non-torch-gib", match["non_torch"], n, line, keep="max")
    if _empty(sink, match["kv"], n, line, f"kv_cache_size={match['kv']}GiB"):
        return
    gib = _gib_option(sink, "kv-memory-gib", match["kv"], n, line)
    if gib is not None:
        sink.show("kv_memory_gib", gib, n, line, keep="min")


def _parts_v0(match, sink, n, line):
    sink.take("loaded-weights-gib", match["weights"], n, line, keep="max")
    sink.take("non-torch-gib", match["non_torch"], n, line, keep="max")
    sink.take("activation-gib", match["activation"], n, line, keep="max")
    gib = _gib_option(sink, "kv-memory-gib", match["kv"], n, line)
    if gib is not None:
        sink.show("kv_memory_gib", gib, n, line, keep="min")


def _parts_v1(match, sink, n, line):
    sink.take("gpu-memory-gib", match["total"], n, line, "the device total, as PyTorch reports it")
    _take_setting(sink, "memory-utilization", match["util"], n, line)
    if match["weights"]:
        sink.take("loaded-weights-gib", match["weights"], n, line, keep="max")
        sink.take("non-torch-gib", match["non_torch"], n, line, keep="max")
    else:
        consumed = _figure(sink, "consumed memory", match["consumed"], n)
        if consumed is not None:
            sink.show("consumed_gib", consumed, n, line)
            # One figure for both: the weights are read, not alone (no input takes the sum).
            words = (f"line {n:,} printed {match['consumed']} GiB for the weights and the non-torch memory "
                     "together (\"consumed memory (weights + non-torch)\"), neither alone")
            sink.covered.setdefault("loaded-weights-gib", words)
    sink.take("activation-gib", match["activation"], n, line, keep="max")
    if match["graphs"]:
        sink.take("cudagraph-gib", match["graphs"], n, line, keep="max")


def _parts_profile(match, sink, n, line):
    # 0.8-0.10: "Total non KV cache memory: X; torch peak memory increase: Y; non-torch forward
    # increase memory: Z; weights memory: W"
    sink.take("activation-gib", match["activation"], n, line, keep="max")
    sink.take("non-torch-gib", match["non_torch"], n, line, keep="max")
    sink.take("loaded-weights-gib", match["weights"], n, line, keep="max")


def _table_row(option, how=""):
    def handle(match, sink, n, line):
        if option == "memory-utilization":
            _take_setting(sink, option, match[1], n, line)
        else:
            sink.take(option, match[1], n, line, how, keep="max" if option != "gpu-memory-gib" else "same")
    return handle


def _graph_estimate(match, sink, n, line):
    gib = _figure(sink, "Estimated CUDA graph memory", match[1], n)
    if gib is not None:
        sink.show("cudagraph_estimate_gib", gib, n, line)


def _graph_actual(match, sink, n, line):
    gib = _figure(sink, "CUDA graph memory", match[1], n)
    if gib is not None:
        sink.show("cudagraph_actual_gib", gib, n, line)


def _device(match, sink, n, line):
    sink.show("device_name", match[1].strip(), n, line)


def _capability(match, sink, n, line):
    # The compute capability torch reports (symm_mem.py's "Device capability 8.6 not supported";
    # worker.py's bf16 refusal, which names the device too): ranks of two capabilities say none.
    cc = capability(match["cc"])
    old = sink.printed.get("device_capability")
    if old is not None and old.value != cc:
        sink.show("device_capability", None, n, line, keep="last")
    elif old is None:
        sink.show("device_capability", cc, n, line)
    if match["name"]:
        sink.show("device_name", match["name"].strip(), n, line)


def _eager(match, sink, n, line):
    sink.take("enforce-eager", "on", n, line)


def _hybrid_block(match, sink, n, line):
    sink.show("attention_block_size", int(match[1]), n, line)


def _backend_block(match, sink, n, line):
    # The platform sets the block size its attention backend takes where none was given
    # (vllm/platforms/interface.py, printed 0.20-0.28): 64 on XPU's FLASH_ATTN and ROCm's AITER
    # unified attention; a hybrid's attention block grows in steps of it.
    sink.take("block-size", match[1], n, line, f"the {match[2]} backend's block size", keep="last")


def _source_line(match, sink, n, line):
    # "[kv_cache_utils.py:1291] GPU KV cache size" (or "[v1/core/kv_cache_utils.py:1291]"): where the
    # release logs it from, which tells a release that is not printed (complete(): _release_from_lines).
    sink.show("source_line " + _SOURCE_KINDS[match[3]], (match[1], int(match[2])), n, line, keep="first")


_SOURCE_KINDS = {"GPU KV cache size": "kv_tokens", "Maximum concurrency for": "concurrency",
                 "Available KV cache memory": "kv_memory"}


def _refusal(match, sink, n, line):
    sink.show("refusal", line.strip()[:300], n, line)
    if "No available memory for the cache blocks" in match[0]:
        sink.empty_pool("kv-memory-gib", "No available memory for the cache blocks", None, n, line, REFUSAL)
    needed = re.search(r"max seq len \((\d+)\)", line)
    available = re.search(r"available KV cache memory \(([\d.]+) GiB\)", line)
    if needed:
        sink.take("context", needed[1], n, line)
    gib = _gib_option(sink, "kv-memory-gib", available[1], n, line) if available else None
    if gib is not None:
        sink.show("kv_memory_gib", gib, n, line, keep="min")


# `vllm serve MODEL --flag value ...` as users paste it above the log, and the inputs its flags are.
_FLAGS = {"--tensor-parallel-size": "tp", "-tp": "tp", "--pipeline-parallel-size": "pp", "-pp": "pp",
          "--data-parallel-size": "dp", "-dp": "dp", "--max-model-len": "context",
          "--gpu-memory-utilization": "memory-utilization", "--max-num-seqs": "batch",
          "--max-num-batched-tokens": "prefill-chunk", "--kv-cache-dtype": "kv-dtype", "--block-size": "block-size",
          "--mamba-ssm-cache-dtype": "mamba-ssm-dtype", "--limit-mm-per-prompt": "limit-mm-per-prompt",
          "--kv-cache-dtype-skip-layers": "kv-dtype-skip-layers",
          "--max-cudagraph-capture-size": "max-cudagraph-capture-size"}
_LIST_FLAGS = ("--kv-cache-dtype-skip-layers",)
_SWITCHES = {"--enforce-eager": ("enforce-eager", "on"), "--enable-expert-parallel": ("ep", "on"),
             "--language-model-only": ("language-model-only", "on"),
             "--disable-hybrid-kv-cache-manager": ("hybrid-kv-cache-manager", "off"),
             "--no-disable-hybrid-kv-cache-manager": ("hybrid-kv-cache-manager", "on"),
             "--enable-hybrid-kv-cache-manager": ("hybrid-kv-cache-manager", "on")}


def _command(match, sink, n, line):
    begin(sink, "command", n, line)
    words = match["args"].split()
    if words and not words[0].startswith("-"):
        sink.show("model_path", words[0], n, line)
    _flags(sink, match["args"], n, line)



# --speculative-config '{"method": "mtp", "num_speculative_tokens": 3}' in the command: JSON, its
# words split by the spaces after its colons and commas, so read from the line, not the words.
_SPEC_FLAG = re.compile(r"--speculative-config[=\s]+['\"]?(\{[^{}]{0,400}\})")


def _json_part(key: str, text: str, value: str):
    return re.search(r"[\"']" + key + r"[\"']\s*:\s*" + value, text)


def _flags(sink, args: str, n: int, line: str) -> None:
    if _SIZES_LIST.search(args):
        sink.notes.append(_SIZES_NOTE.format(n=n))
    connector = _CONNECTOR_FLAG.search(args)
    if connector:
        sink.take("kv-connector", connector[1], n, line)
    spec = _SPEC_FLAG.search(args)
    if spec:
        _spec_parts(sink, _json_part("method", spec[1], r"[\"']([\w.\-]{1,40})[\"']"),
                    _json_part("model", spec[1], r"[\"']([^\"']{1,300})[\"']"),
                    _json_part("num_speculative_tokens", spec[1], r"(\d{1,2})\b"), n, line)
    words, _ = command_words(sink, args, n, line)
    for i, word in enumerate(words):
        flag, equals, value = word.partition("=")
        if flag in _SWITCHES:
            sink.take(*_SWITCHES[flag], n, line)
        elif flag in _FLAGS:
            value = value if equals else (words[i + 1] if i + 1 < len(words) else "")
            if flag in _LIST_FLAGS and not equals:
                # nargs="+" (arg_utils.py: a list[str] field): every word up to the next flag.
                value = "/".join(itertools.takewhile(lambda w: not w.startswith("-"), words[i + 1:]))
            if flag == "--max-model-len" and value[-1:] in "kK":
                value = str(int(value[:-1]) * 1024) if re.fullmatch(r"[0-9]{1,12}", value[:-1]) else value
            _take_setting(sink, _FLAGS[flag], value, n, line)


def _kv_in_use(match, sink, n, line):
    # The memory summary's last sentence (0.10.2 and later): "Current kv cache memory in use is
    # 59212694937 bytes." (0.10-0.11), "... is 19.54 GiB." later: the KV memory again.
    _ready(sink, n, line)
    if match["bytes"]:
        # The bytes are the figure the rounded "Available KV cache memory" line printed: they
        # replace it, exactly; a rank's smaller figure still binds.
        exact = Fraction(int(match["bytes"]), 1 << 30)
        old = sink.reads.get("kv-memory-gib")
        keep = "last" if old is not None and abs(Fraction(old.text) - exact) <= Fraction(1, 200) else "min"
        sink.take("kv-memory-gib", _gib_text(int(match["bytes"])), n, line, "kv cache memory in use, bytes in GiB",
                  keep=keep)
        sink.show("kv_memory_gib", exact, n, line, keep=keep,
                  text=f"{int(match['bytes']):,} bytes ({float(exact):,.2f} GiB)")
    else:
        sink.take("kv-memory-gib", match["gib"], n, line, "kv cache memory in use", keep="min")
        sink.show("kv_memory_gib", Fraction(match["gib"]), n, line, keep="min", text=f"{match['gib']} GiB")


def _hma_off(match, sink, n, line):
    # kv_cache_utils.py unify_hybrid_kv_cache_specs warns once it has made every local layer full: a
    # state vLLM derives (a flag, chunked attention, a connector), shown, not taken as the flag, so the
    # launch does not write a --disable-hybrid-kv-cache-manager nobody passed.
    sink.show("hybrid_manager_off", "off", n, line)


def _prefix_off(match, sink, n, line):
    # vllm/model_executor/models/config.py MambaModelConfig.verify_and_update_config (0.11-0.25,
    # read in 0.13.0): a hybrid whose model does not support Mamba prefix caching has it turned
    # off, whatever was asked: "Hybrid or mamba-based model detected without support for prefix
    # caching: disabling." (its state then keeps one page a request).
    sink.take("prefix-caching", "off", n, line, "vLLM disabled it for this hybrid", keep="last")


def _table_kv(match, sink, n, line):
    _ready(sink, n, line)
    gib = _gib_option(sink, "kv-memory-gib", match[1], n, line, "available_kv_cache_memory")
    if gib is not None:
        sink.show("kv_memory_gib", gib, n, line, keep="min")


_VERSION = r"(?P<version>v?\d{1,4}(?:\.\d{1,4}){0,3}[\w.+\-]{0,80})"
# The engine line prints what the build says, a source build's "(vdev)" too (said, not taken).
_ENGINE_VERSION = r"(?P<version>v?[\w.+\-]{1,80}?)"
RULES = (
    Rule(re.compile(r"vLLM API server version " + _VERSION), _version, True, "API server version"),
    Rule(re.compile(r"\u2580\u2584\u2580 \u2588 {1,8}version {1,8}" + _VERSION), _banner, True, "version"),
    Rule(re.compile(r"\u2588\u2584\u2588\u2580 [\u2588 ]{1,40}model {1,8}([^\s'\"]{1,300})"), _banner_model, False,
         "model"),
    Rule(re.compile(r"\((?P<name>[A-Za-z][\w =]{0,40}?) pid=\d{1,10}\)"), _ranks, False, " pid="),
    Rule(re.compile(r"Initializing an? (?:V0 |(?P<v1>V1 ))?LLM engine \(" + _ENGINE_VERSION + r"\) with config: "
                    r"(?P<config>.*)"), _engine_line, True, "LLM engine ("),
    Rule(re.compile(r"non-default args: (?P<args>\{.*)"), _non_default, False, "non-default args"),
    Rule(re.compile(r"Resolved `--runner auto` to `--runner (pooling|generate)`"), _runner_resolved, True,
         "Resolved `--runner auto`"),
    Rule(re.compile(r"Using max model len (\d+)"), _max_len, True, "Using max model len"),
    Rule(re.compile(r"max_num_batched_tokens=(\d+)"), _chunk, False, "max_num_batched_tokens="),
    Rule(re.compile(r"(?:Model loading|Loading model weights) took " + _WORD + r"\s*(GiB|GB)"), _loading, True,
         " took "),
    Rule(re.compile(r"Available KV cache memory: " + _WORD + GIB), _kv_memory, True, "Available KV cache memory"),
    Rule(re.compile(r"GPU KV cache size: " + _WORD + r" tokens"), _kv_tokens, True, "GPU KV cache size"),
    Rule(re.compile(r"# (?:GPU|CUDA|cuda|gpu) blocks: " + _NUM), _blocks, True, " blocks: "),
    Rule(re.compile(r"Maximum concurrency for " + _WORD + r" tokens per request: " + _WORD + "x"), _concurrency, True,
         "Maximum concurrency for"),
    Rule(re.compile(r"total_gpu_memory \((?P<total>[\d.]+)\s*GiB\) x gpu_memory_utilization "
                    r"\((?P<util>[\d.]+)\)"), _budget_v0, True, "total_gpu_memory ("),
    Rule(re.compile(r"Memory profiling results: total_gpu_memory=(?P<total>[\d.]+)\s*GiB\b.{0,120}?"
                    r"non_torch_memory=(?P<non_torch>[\d.]+)\s*GiB kv_cache_size=(?P<kv>-?[\d.]+)\s*GiB "
                    r"gpu_memory_utilization=(?P<util>[\d.]+)"), _profile_results, True, "Memory profiling results"),
    Rule(re.compile(r"model weights take (?P<weights>[\d.]+)\s*GiB; non_torch_memory takes (?P<non_torch>[\d.]+)"
                    r"\s*GiB; PyTorch activation peak memory takes (?P<activation>[\d.]+)\s*GiB; the rest of the "
                    r"memory reserved for KV Cache is (?P<kv>[\d.]+)\s*GiB"), _parts_v0, True, "model weights take"),
    Rule(re.compile(r"Free memory on device \((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\) on startup\. Desired GPU "
                    r"memory utilization is \((?P<util>[\d.]+), [\d.]+ GiB\)\. Actual usage is (?:(?P<weights>"
                    r"[\d.]+) GiB for weight, |(?P<consumed>[\d.]+) GiB for consumed memory \(weights \+ "
                    r"non-torch\), )(?P<activation>[\d.]+) GiB for peak activation, (?:(?P<non_torch>[\d.]+) GiB "
                    r"for non-torch memory, )?(?:and )?(?:(?P<graphs>[\d.]+) GiB for CUDAGraph memory)?"),
         _parts_v1, True, "Free memory on device"),
    Rule(re.compile(r"torch peak memory increase: (?P<activation>[\d.]+)\s*GiB; non-torch forward increase memory: "
                    r"(?P<non_torch>[\d.]+)\s*GiB; weights memory: (?P<weights>[\d.]+)\s*GiB"), _parts_profile, True,
         "torch peak memory increase"),
    # V0 0.6-0.7 printed its profile as a table of rows.
    Rule(re.compile(r"\]\s+total_gpu_memory\s+([\d.]+)\s*GiB"), _table_row("gpu-memory-gib", "total_gpu_memory"),
         True, "total_gpu_memory"),
    Rule(re.compile(r"\]\s+gpu_memory_utilization\s+([\d.]+)\s*$"), _table_row("memory-utilization"), False,
         "gpu_memory_utilization"),
    Rule(re.compile(r"\]\s+model weights take\s+([\d.]+)\s*GiB"), _table_row("loaded-weights-gib"), False,
         "model weights take"),
    Rule(re.compile(r"\]\s+non_torch_memory\s+([\d.]+)\s*GiB"), _table_row("non-torch-gib"), False, "non_torch_memory"),
    Rule(re.compile(r"\]\s+PyTorch activation peak memory\s+([\d.]+)\s*GiB"), _table_row("activation-gib"), False,
         "PyTorch activation peak memory"),
    Rule(re.compile(r"Current kv cache memory in use is (?:(?P<bytes>\d{1,20}) bytes|(?P<gib>\d{1,9}(?:\.\d{1,9})?) GiB)"),
         _kv_in_use, True, "kv cache memory in use"),
    Rule(re.compile(r"\]\s+available_kv_cache_memory\s+([\d.]+)\s*GiB"), _table_kv, True,
         "available_kv_cache_memory"),
    Rule(re.compile(r"Estimated CUDA graph memory: ([\d.]+) GiB"), _graph_estimate, True, "Estimated CUDA graph"),
    Rule(re.compile(r"Graph capturing finished in \d+ secs?, took (-?[\d.]+) GiB"), _graph_actual, True,
         "Graph capturing finished"),
    Rule(re.compile(r"device_name=([\w\-]+)"), _device, False, "device_name="),
    Rule(re.compile(r"Device capability (?P<cc>\d{1,2}\.\d{1,2}) not supported(?P<name>)"), _capability, False,
         "Device capability"),
    Rule(re.compile(r"Your (?P<name>[^\n]{2,80}?) GPU has compute capability (?P<cc>\d{1,2}\.\d{1,2})"), _capability,
         False, "GPU has compute capability"),
    Rule(re.compile(r"Enforce eager set|Cudagraph is disabled under eager mode"), _eager, True, "ager"),
    Rule(re.compile(r"Setting attention block size to (\d{1,9}) tokens"), _hybrid_block, True, "attention block size"),
    Rule(re.compile(r"\[(?:[\w.\-]{1,40}/){0,6}(kv_cache_utils\.py|gpu_worker\.py):(\d{1,6})\]\s{1,4}"
                    r"(GPU KV cache size|Maximum concurrency for|Available KV cache memory)"), _source_line, False, ".py:"),
    Rule(re.compile(r"Setting kv cache block size to (\d{1,4}) for (\w{1,40}) backend"), _backend_block, True,
         "kv cache block size to"),
    Rule(re.compile(r"Hybrid KV cache manager is disabled for this hybrid model"), _hma_off, True,
         "Hybrid KV cache manager is disabled"),
    Rule(re.compile(r"Hybrid or mamba-based model detected without support for prefix caching: disabling"),
         _prefix_off, True, "without support for prefix caching"),
    # Each "ValueError: " scans only up to the next one: linear however often a line repeats it.
    Rule(re.compile(r"ValueError: (?:(?!ValueError: ).)*?(?:KV cache is needed|No available memory for the cache "
                    r"blocks)"), _refusal,
         True, "ValueError"),
    Rule(re.compile(r"(?:^|[\s$#>])vllm serve (?P<args>.*)"), _command, True, "vllm serve"),
    continuation(_flags),
)

# What a full start-up prints, and how the page names it when it is missing.
EXPECTED = (("engine-version", "the release (vLLM API server version)"),
            ("tp", "tensor_parallel_size (the engine's config line)"),
            ("context", "max_model_len (Using max model len)"),
            ("gpu-memory-gib", "the GPU's total (the memory profile line)"),
            ("memory-utilization", "gpu_memory_utilization (the memory profile line)"),
            ("loaded-weights-gib", "the weights (Model loading took)"),
            ("kv-memory-gib", "the KV memory (Available KV cache memory)"),
            ("model", "the model (no Hugging Face id of a preset printed)"))


def complete(sink) -> None:
    """What follows from the lines together: the model and GPU presets they name, the GPU count,
    the V0 engine of 0.8-0.10, the default utilization where only the budget was printed."""
    reads = sink.reads
    take_model(sink)
    _take_speculative(sink)
    device = sink.printed.get("device_name")
    if device is not None:
        # The device's name, checked against what else vLLM printed of it: PyTorch's total (the
        # memory profile's), the compute capability.
        total = Fraction(reads["gpu-memory-gib"].text) if "gpu-memory-gib" in reads else None
        cc = sink.printed.get("device_capability")
        take_gpu(sink, Device(device.value, total, capability=cc.value if cc else None), device.line_number, device.line)
    _release_from_lines(sink)
    variant = sink.printed.get("engine_variant")
    version = reads.get("engine-version")
    if variant is not None and version is not None:
        try:
            release = releases.parse(engine, version.text)
        except InputError:
            release = None
        if release is not None and release.at_least(0, 8, 0) and not release.at_least(0, 11, 0):
            sink.take("vllm-engine", variant.value, variant.line_number, variant.line)
    _layout(sink)
    _tokens_from_blocks(sink)
    tp, pp, dp = (int(reads[k].text) if k in reads else 1 for k in ("tp", "pp", "dp"))
    anchor = reads.get("tp")
    if anchor is not None and "gpus" not in reads:
        sink.take("gpus", str(tp * pp * dp), anchor.line_number, anchor.line, "tp x pp x dp")


# The release rules take where a log prints "GPU KV cache size" that is not int(concurrency x max_model_len)
# and no source line names a release: the newest that counted blocks // groups x block size.
BEFORE_TOKENS_AS_CONCURRENCY = "0.20.0"


def _release_from_lines(sink) -> None:
    """A log that prints no release (an excerpt, a source build's "dev") still shows which releases
    could have printed it: the source line each KV-cache line names (release.SOURCE_LINES, every wheel
    0.8.0-0.34.0 read), and whether its "GPU KV cache size" is concurrency x max_model_len (0.20.1 on)
    or blocks // groups x block size (before). The newest release they allow is taken, said as
    inferred; nothing where they allow none (a build between releases) or name no release."""
    reads, printed = sink.reads, sink.printed
    if "engine-version" in reads:
        return
    allowed, anchor, why = None, None, []
    for kind in rules.SOURCE_LINES:
        figure = printed.get("source_line " + kind)
        if figure is None:
            continue
        file, number = figure.value
        found = rules.releases_printing_at(kind, file, number)
        if found is None:
            continue
        allowed = found if allowed is None else allowed & found
        anchor = anchor or figure
        why.append(f"{file}:{number}")
    tokens, concurrency, context = printed.get("kv_tokens"), printed.get("max_concurrency"), reads.get("context")
    counted = tokens is not None and concurrency is not None and context is not None \
        and "GPU KV cache size" in tokens.line and concurrency.value > 0 \
        and not rules.tokens_as_concurrency(tokens.value, concurrency.value, int(context.text))
    if counted:
        before = {v for v in (allowed if allowed is not None else ())
                  if not rules.logs_tokens_as_concurrency(releases.pep440(v))}
        if allowed is None:
            before = {BEFORE_TOKENS_AS_CONCURRENCY}
            anchor = tokens
        allowed = before
        why.append(f"GPU KV cache size {tokens.value:,} tokens, not {float(concurrency.value):.2f}x x "
                   f"{int(context.text):,} (blocks // groups x block size: before 0.20.1)")
    if not allowed:
        if why:
            sink.notes.append("release not inferred: no release read prints " + " and ".join(why))
        return
    ordered = sorted(allowed, key=lambda v: releases.pep440(v).key)
    newest = ordered[-1]
    words = (f"inferred from {', '.join(why)}: " + (f"vLLM {newest}" if len(ordered) == 1 else
             f"vLLM {ordered[0]} to {newest} print these lines; {newest} is taken"))
    before = len(sink.rejected)
    _take_version(sink, newest, anchor.line_number, anchor.line, words)
    if len(sink.rejected) == before:
        sink.notes.append(f"release not printed; {words}: check it")


# vLLM's block size where none is printed: 16 tokens (CacheConfig's default on CUDA, V0 and V1).
DEFAULT_BLOCK_SIZE = 16


def _tokens_from_blocks(sink) -> None:
    """Early V1 (0.7) printed "# GPU blocks: 33660" and no "GPU KV cache size" line: its KV
    tokens are the blocks times the block size (the one printed or set, else vLLM's default)."""
    printed = sink.printed
    blocks = printed.get("gpu_blocks")
    if blocks is None or "kv_tokens" in printed or not blocks.value:
        return
    size = sink.reads.get("block-size")
    if size is not None:
        block, how = int(size.text), f"block_size {size.text}, line {size.line_number:,}"
    elif "attention_block_size" in printed:
        block, how = printed["attention_block_size"].value, "the attention block size printed"
    else:
        block, how = DEFAULT_BLOCK_SIZE, f"vLLM's default block size {DEFAULT_BLOCK_SIZE}"
    sink.show("kv_tokens", blocks.value * block, blocks.line_number, blocks.line,
              text=f"{blocks.value:,} GPU blocks (x {block} = {blocks.value * block:,} tokens)")
    sink.notes.append(f"KV cache tokens read as {blocks.value:,} GPU blocks (line {blocks.line_number:,}) x {how}")


# A model path that names a quantized re-release: its weights are not the preset's.
_QUANTIZED_PATH = re.compile(r"awq|gptq|fp8|fp4|int4|int8|w4a|w8a|bnb|4bit|8bit|gguf|exl2|quant|mxfp|nvfp", re.I)


def _layout(sink) -> None:
    """tp, pp and dp where no config line or argument printed them: the worker names' highest
    ranks (a lower bound: TP1 seen means tp >= 2), the weights per GPU against the model's total
    (about 1/k of them means tp x pp = k), and the non-default args line, which leaves out a size
    that is its default (1). What stays unknown is said, so the page can ask for it."""
    reads, printed = sink.reads, sink.printed
    bound = {kind: printed[f"highest_{kind}_rank"] for kind in ("tp", "pp", "dp", "world")
             if f"highest_{kind}_rank" in printed}
    least = {kind: figure.value + 1 for kind, figure in bound.items()}
    args = printed.get("args_line")
    for kind in ("tp", "pp", "dp"):
        if kind in reads:
            if least.get(kind, 1) > int(reads[kind].text):
                figure = bound[kind]
                sink.notes.append(f"line {figure.line_number:,} names {kind.upper()} rank {figure.value}, more than "
                                  f"{kind} {reads[kind].text} allows: the paste may hold more than one start-up")
            continue
        if args is not None:
            sink.take(kind, "1", args.value, args.line, "the default: the non-default args leave it out")
    if "tp" in reads:
        return
    pp = int(reads["pp"].text) if "pp" in reads else least.get("pp", 1)
    dp = int(reads["dp"].text) if "dp" in reads else least.get("dp", 1)
    if "dp" not in reads and dp > 1:
        figure = bound["dp"]
        sink.take("dp", str(dp), figure.line_number, figure.line,
                  f"at least: the engine cores DP0 to DP{figure.value} it prints")
    tp_least = max(least.get("tp", 1), -(-least.get("world", 1) // pp))
    k, words = _weights_share(sink) if dp == 1 else (None, "")
    if k is not None and k % pp == 0 and k // pp >= tp_least:
        weights = reads["loaded-weights-gib"]
        if "pp" not in reads and pp > 1:
            figure = bound["pp"]
            sink.take("pp", str(pp), figure.line_number, figure.line, f"the pipeline ranks PP0 to PP{figure.value}")
        sink.take("tp", str(k // pp), weights.line_number, weights.line, f"inferred: {words}"
                  + (f" over pp {pp}" if pp > 1 else ""))
        sink.notes.append(f"tp {k // pp} inferred, not printed: {words}; check it")
        return
    if k is not None:
        sink.notes.append(f"tp not inferred from the weights: {words}, which the worker ranks printed contradict")
    if tp_least > 1 or (pp > 1 and "pp" not in reads):
        figure = bound.get("tp") or bound.get("world") or bound["pp"]
        if "pp" not in reads and pp > 1:
            sink.take("pp", str(pp), bound["pp"].line_number, bound["pp"].line,
                      f"at least: the pipeline ranks PP0 to PP{bound['pp'].value}")
        sink.take("tp", str(tp_least), figure.line_number, figure.line,
                  f"at least: the highest worker rank printed is {_rank_words(bound)}")
        sink.notes.append(f"tp {tp_least} read from the worker names ({_rank_words(bound)}): a lower bound, and a "
                          "paste that leaves out the highest rank's lines says less; check tensor_parallel_size")
        return
    sink.notes.append("tp not read: no config line, argument or worker name gives tensor_parallel_size; give tp "
                      "(and pp) as the log's deployment ran")


def _rank_words(bound: dict) -> str:
    return ", ".join(f"{'rank' if kind == 'world' else kind.upper()}{figure.value}" for kind, figure in bound.items()
                     if kind != "dp")


def _weights_share(sink) -> tuple[int | None, str]:
    """k where the weights one GPU loaded are about 1/k of the model's (within 8%), and the words
    saying so; None where the model's own weights are not known: no preset read, a quantized
    re-release or a quantization printed, no weights line."""
    reads, printed = sink.reads, sink.printed
    weights, model = reads.get("loaded-weights-gib"), reads.get("model")
    quantization = printed.get("quantization")
    path = printed.get("model_path")
    if weights is None or model is None or (quantization is not None and quantization.value not in ("None", "none")):
        return None, ""
    if path is not None and _QUANTIZED_PATH.search(str(path.value)):
        return None, ""
    try:
        preset = presets.preset_model(model.text)
        total = preset.checkpoint_bytes or (precision(preset.weights_dtype, field="weights-dtype").bytes_for(
            preset.params) if preset.weights_dtype and preset.params else None)
    except InputError:
        return None, ""
    loaded = Fraction(weights.text) * (1 << 30)
    if not total or loaded <= 0:
        return None, ""
    ratio = total / loaded
    k = round(ratio)
    words = (f"the {weights.text} GiB of weights one GPU loaded are 1/{float(ratio):.2f} of {model.text}'s "
             f"{float(Fraction(total, 1 << 30)):.2f} GiB")
    if k < 1 or k > 1024 or abs(ratio - k) > Fraction(8, 100) * k:
        return None, ""
    return k, words
