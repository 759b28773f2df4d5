"""vLLM's start-up lines, V0 and V1, 0.6 to 0.33: the config it prints, the memory profile and
the KV cache it allocates (vllm/v1/worker/gpu_worker.py, vllm/v1/core/kv_cache_utils.py,
vllm/worker/worker.py and vllm/executor/executor_base.py for V0)."""

import re
from fractions import Fraction

from ..engines import releases, vllm as engine
from ..errors import InputError
from .rules import Rule, command_words, continuation, gpu_preset, model_entry, number, take_model

NAME = "vllm"
_NUM = r"(\d[\d,]*(?:\.\d+)?)"
GIB = r"\s*GiB"


def _version(match, sink, n, line):
    sink.start("server version", n)
    sink.take("engine-version", match["version"].lstrip("v"), n, line)


def _engine_line(match, sink, n, line):
    sink.take("engine-version", match["version"].lstrip("v"), n, line)
    sink.show("engine_variant", "v1" if match["v1"] else "v0", n, line)
    config = match["config"]
    _config_pairs(config, sink, n, line)


# key=value pairs of the engine's config line, and the inputs they are.
_CONFIG_KEYS = {"tensor_parallel_size": "tp", "pipeline_parallel_size": "pp", "data_parallel_size": "dp",
                "max_seq_len": "context", "kv_cache_dtype": "kv-dtype", "enforce_eager": "enforce-eager"}
_CONFIG = re.compile(r"(?<![\w.])(" + "|".join(_CONFIG_KEYS) + r")=([\w.\-]+)")
_MODEL = re.compile(r"(?<![\w.])model='([^']{1,300})'")


def _config_pairs(config: str, sink, n, line):
    for key, value in _CONFIG.findall(config):
        _take_setting(sink, _CONFIG_KEYS[key], value, n, line)
    model = _MODEL.search(config)
    if model:
        sink.show("model_path", model[1], n, line)
    _speculative(config, sink, n, line, _SPEC_REPR)


def _take_setting(sink, option, value, n, line, how=""):
    value = value.strip("'\"")
    if option == "kv-dtype":
        if value == "auto":
            return                          # the model's dtype: the default
        value = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8_e5m2"}.get(value, value)
    if option == "enforce-eager":
        value = "on" if value == "True" else "off"
    sink.take(option, value, n, line, how)


# 'key': value pairs of the non-default args line (a Python dict's repr).
_ARG_KEYS = {"max_model_len": "context", "tensor_parallel_size": "tp", "pipeline_parallel_size": "pp",
             "data_parallel_size": "dp", "gpu_memory_utilization": "memory-utilization",
             "max_num_seqs": "batch", "max_num_batched_tokens": "prefill-chunk", "kv_cache_dtype": "kv-dtype",
             "block_size": "block-size", "enforce_eager": "enforce-eager", "enable_expert_parallel": "ep",
             "kv_cache_memory_bytes": "kv-memory-bytes"}
_ARGS = re.compile(r"'(" + "|".join(_ARG_KEYS) + r")': ('[^']{0,40}'|[\w.\-]+)")


def _non_default(match, sink, n, line):
    for key, value in _ARGS.findall(match["args"]):
        option = _ARG_KEYS[key]
        if option == "ep":
            sink.take("ep", "on" if value == "True" else "off", n, line)
        elif option == "kv-memory-bytes":
            if value.isdigit():
                sink.take("kv-memory-gib", _gib_text(int(value)), n, line, "--kv-cache-memory bytes in GiB")
        else:
            _take_setting(sink, option, value, n, line)
    model = re.search(r"'model': '([^']{1,300})'", match["args"])
    if model:
        sink.show("model_path", model[1], n, line)
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
    # V0 printed "Loading model weights took X GB" from bytes / 2^30: GiB by another name.
    sink.take("loaded-weights-gib", number(match[1]), n, line, keep="max")


def _kv_memory(match, sink, n, line):
    sink.take("kv-memory-gib", match[1], n, line, keep="min")
    sink.show("kv_memory_gib", Fraction(match[1]), n, line, keep="min")


def _kv_tokens(match, sink, n, line):
    sink.show("kv_tokens", int(number(match[1])), n, line, keep="min")


def _blocks(match, sink, n, line):
    sink.show("gpu_blocks", int(number(match[1])), n, line, keep="min")


def _concurrency(match, sink, n, line):
    sink.take("context", number(match[1]), n, line, "the context its concurrency is for")
    sink.show("max_concurrency", Fraction(match[2]), n, line, keep="min")


def _budget_v0(match, sink, n, line):
    sink.take("gpu-memory-gib", match["total"], n, line, "total_gpu_memory, as PyTorch reports it")
    _take_setting(sink, "memory-utilization", match["util"], n, line)


def _parts_v0(match, sink, n, line):
    sink.take("loaded-weights-gib", match["weights"], n, line, keep="max")
    sink.take("non-torch-gib", match["non_torch"], n, line, keep="max")
    sink.take("activation-gib", match["activation"], n, line, keep="max")
    sink.take("kv-memory-gib", match["kv"], n, line, keep="min")
    sink.show("kv_memory_gib", Fraction(match["kv"]), n, line, keep="min")


def _parts_v1(match, sink, n, line):
    sink.take("gpu-memory-gib", match["total"], n, line, "the device total, as PyTorch reports it")
    _take_setting(sink, "memory-utilization", match["util"], n, line)
    if match["weights"]:
        sink.take("loaded-weights-gib", match["weights"], n, line, keep="max")
        sink.take("non-torch-gib", match["non_torch"], n, line, keep="max")
    else:
        sink.show("consumed_gib", Fraction(match["consumed"]), n, line)
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
    sink.show("cudagraph_estimate_gib", Fraction(match[1]), n, line)


def _graph_actual(match, sink, n, line):
    sink.show("cudagraph_actual_gib", Fraction(match[1]), n, line)


def _device(match, sink, n, line):
    sink.show("device_name", match[1].strip(), n, line)


def _eager(match, sink, n, line):
    sink.take("enforce-eager", "on", n, line)


def _hybrid_block(match, sink, n, line):
    sink.show("attention_block_size", int(match[1]), n, line)


def _refusal(match, sink, n, line):
    sink.show("refusal", line.strip()[:300], n, line)
    needed = re.search(r"max seq len \((\d+)\)", line)
    available = re.search(r"available KV cache memory \(([\d.]+) GiB\)", line)
    if needed:
        sink.take("context", needed[1], n, line)
    if available:
        sink.take("kv-memory-gib", available[1], n, line, keep="min")
        sink.show("kv_memory_gib", Fraction(available[1]), n, line, keep="min")


# `vllm serve MODEL --flag value ...` as users paste it above the log, and the inputs its flags are.
_FLAGS = {"--tensor-parallel-size": "tp", "-tp": "tp", "--pipeline-parallel-size": "pp", "-pp": "pp",
          "--data-parallel-size": "dp", "-dp": "dp", "--max-model-len": "context",
          "--gpu-memory-utilization": "memory-utilization", "--max-num-seqs": "batch",
          "--max-num-batched-tokens": "prefill-chunk", "--kv-cache-dtype": "kv-dtype", "--block-size": "block-size"}
_SWITCHES = {"--enforce-eager": ("enforce-eager", "on"), "--enable-expert-parallel": ("ep", "on")}


def _command(match, sink, n, line):
    sink.start("command", n)
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
            if flag == "--max-model-len" and value[-1:] in "kK":
                value = str(int(value[:-1]) * 1024) if value[:-1].isdigit() else value
            _take_setting(sink, _FLAGS[flag], value, n, line)


RULES = (
    Rule(re.compile(r"vLLM API server version (?P<version>v?\d[\w.+\-]*)"), _version, True, "API server version"),
    Rule(re.compile(r"Initializing an? (?P<v1>V1 )?LLM engine \((?P<version>v?\d[\w.+\-]*)\) with config: "
                    r"(?P<config>.*)"), _engine_line, True, "LLM engine ("),
    Rule(re.compile(r"non-default args: (?P<args>\{.*)"), _non_default, False, "non-default args"),
    Rule(re.compile(r"Using max model len (\d+)"), _max_len, True, "Using max model len"),
    Rule(re.compile(r"max_num_batched_tokens=(\d+)"), _chunk, False, "max_num_batched_tokens="),
    Rule(re.compile(r"(?:Model loading|Loading model weights) took " + _NUM + r"\s*(GiB|GB)"), _loading, True,
         " took "),
    Rule(re.compile(r"Available KV cache memory: " + _NUM + GIB), _kv_memory, True, "Available KV cache memory"),
    Rule(re.compile(r"GPU KV cache size: " + _NUM + r" tokens"), _kv_tokens, True, "GPU KV cache size"),
    Rule(re.compile(r"# (?:GPU|CUDA|cuda|gpu) blocks: " + _NUM), _blocks, True, " blocks: "),
    Rule(re.compile(r"Maximum concurrency for " + _NUM + r" tokens per request: " + _NUM + "x"), _concurrency, True,
         "Maximum concurrency for"),
    Rule(re.compile(r"total_gpu_memory \((?P<total>[\d.]+)\s*GiB\) x gpu_memory_utilization "
                    r"\((?P<util>[\d.]+)\)"), _budget_v0, True, "total_gpu_memory ("),
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
    Rule(re.compile(r"Estimated CUDA graph memory: ([\d.]+) GiB"), _graph_estimate, True, "Estimated CUDA graph"),
    Rule(re.compile(r"Graph capturing finished in \d+ secs?, took (-?[\d.]+) GiB"), _graph_actual, True,
         "Graph capturing finished"),
    Rule(re.compile(r"device_name=([\w\-]+)"), _device, False, "device_name="),
    Rule(re.compile(r"Enforce eager set|Cudagraph is disabled under eager mode"), _eager, True, "ager"),
    Rule(re.compile(r"Setting attention block size to (\d+) tokens"), _hybrid_block, True, "attention block size"),
    Rule(re.compile(r"ValueError: .*(?:KV cache is needed|No available memory for the cache blocks)"), _refusal,
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
            ("model", "the model by its Hugging Face id (a local path is not one)"))


def complete(sink) -> None:
    """What follows from the lines together: the model and GPU presets they name, the GPU count,
    the V0 engine of 0.8-0.10, the default utilization where only the budget was printed."""
    reads = sink.reads
    take_model(sink)
    _take_speculative(sink)
    device = sink.printed.get("device_name")
    if device is not None:
        total = Fraction(reads["gpu-memory-gib"].text) if "gpu-memory-gib" in reads else None
        gpu = gpu_preset(device.value, total)
        if gpu is not None:
            sink.take("gpu", gpu, device.line_number, device.line, f"the preset {device.value} is")
    variant = sink.printed.get("engine_variant")
    version = reads.get("engine-version")
    if variant is not None and version is not None:
        try:
            release = releases.parse(engine, version.text)
        except InputError:
            release = None
        if release is not None and release.at_least(0, 8, 0) and not release.at_least(0, 11, 0):
            sink.take("vllm-engine", variant.value, variant.line_number, variant.line)
    tp, pp, dp = (int(reads[k].text) if k in reads else 1 for k in ("tp", "pp", "dp"))
    anchor = reads.get("tp") or reads.get("engine-version")
    if anchor is not None and "gpus" not in reads:
        sink.take("gpus", str(tp * pp * dp), anchor.line_number, anchor.line, "tp x pp x dp")
