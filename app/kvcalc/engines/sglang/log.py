"""SGLang's start-up lines, 0.3.6 to 0.5.x: the launch command and the ServerArgs it prints, the
memory around loading the weights, the token pool it allocates and the scheduler's summary
(python/sglang/srt/model_executor/model_runner.py, model_runner_kv_cache_mixin.py,
mem_cache/memory_pool.py, managers/scheduler.py, server_args.py).

What it prints in "GB" is bytes / 2^30 (memory_pool.py, get_available_gpu_memory): GiB by another
name, taken as GiB. Ranks print their own copy of each line, prefixed "[time TP0]", "[time DP1
TP3]" or "[time PP1 TP0]"; the rules search anywhere in a line, so the prefix does not matter.
"""

import re
from fractions import Fraction

from ...readers import gpu_presets
from .. import releases
from . import engine
from ...errors import InputError
from ...readers.log_rules import (  # no cycle
    Device, Rule, capability, command_words, continuation, model_entry, take_gpu, take_model)

NAME = "sglang"
# A loose capture for a printed number: what is not a plain number (NaN, 1e999, 99...9) is said
# in the notes by the handlers, never taken.
_VALUE = r"([^\s()]+?)"           # with its commas: "1,234.5 GB" is said, never read as "234.5"
_PLAIN_DECIMAL = re.compile(r"\d{1,12}(?:\.\d{1,12})?", re.A)     # ASCII digits: "١٢" is none SGLang prints
_PLAIN_INT = re.compile(r"\d{1,15}", re.A)
MAX_TOKENS = 1 << 40          # a token pool past 10^12 tokens is a line built to break the reader
_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32",
                 "float8_e4m3fn": "fp8", "float8_e4m3fnuz": "fp8", "float8_e5m2": "fp8_e5m2",
                 "float8_e5m2fnuz": "fp8_e5m2"}
# --kv-cache-dtype as SGLang spells it, in the precision names of precision.py ("auto" is the
# model's dtype: the default, not read).
_KV_DTYPES = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8_e5m2", "bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16",
              "float16": "fp16", "fp4_e2m1": "nvfp4"}


def _bad(sink, what: str, text: str, n: int, reason: str) -> None:
    sink.rejected.append(f"line {n:,}: {what} {text[:40]!r} not taken ({reason})")


def _decimal(sink, what: str, text: str, n: int) -> Fraction | None:
    if not _PLAIN_DECIMAL.fullmatch(text):
        _bad(sink, what, text, n, "not a plain number")
        return None
    return Fraction(text)


def _count(sink, what: str, text: str, n: int, limit: int = MAX_TOKENS) -> int | None:
    # SGLang prints its counts plain: "1,234" or "1_234" is no count it printed.
    if not _PLAIN_INT.fullmatch(text) or int(text) > limit:
        _bad(sink, what, text, n, "not a plausible count")
        return None
    return int(text)


def cut(sink, n: int, line: str, end: int, what: str) -> bool:
    """Whether a value ending at `end` ends the paste's last line, which had no line end: it may
    be cut mid-number ("context_len=80" of 8096), so it is said and left unread."""
    if getattr(sink, "cut_line", 0) != n or line[end:].strip():
        return False
    sink.notes.append(f"line {n:,} ends the paste without a line end: its {what} may be cut short, not read")
    return True


def _gib(value: Fraction) -> str:
    return f"{float(value):.6f}".rstrip("0").rstrip(".")


# --- the launch command and ServerArgs -------------------------------------------------------

# Settings by their ServerArgs field name; the command's flags are the same names with dashes.
_SETTINGS = {"model_path": "model_path", "tp_size": "tp_size", "pp_size": "pp_size", "dp_size": "dp_size",
             "ep_size": "ep_size", "enable_dp_attention": "dp_attention", "mem_fraction_static": "memory-utilization",
             "context_length": "context", "chunked_prefill_size": "prefill-chunk", "page_size": "block-size",
             "kv_cache_dtype": "kv-dtype", "max_running_requests": "max_running_requests",
             "max_total_tokens": "max_total_tokens", "speculative_algorithm": "spec_algorithm",
             "speculative_draft_model_path": "spec_draft_path", "speculative_num_steps": "spec_steps"}
_FLAGS = {"--" + key.replace("_", "-"): key for key in _SETTINGS}
_FLAGS.update({"--model": "model_path", "--tp": "tp_size", "--pp": "pp_size", "--dp": "dp_size", "--ep": "ep_size",
               # --tp-size's other name, which the launch in PR #3582 passed and argparse took (its
               # traceback is the draft worker's, after the arguments were parsed).
               "--tensor-parallel-size": "tp_size",
               # argparse takes a flag's unambiguous prefix: these two are in SGLang's 2025 DeepSeek docs
               # and threads (PR #3582).
               "--speculative-algo": "speculative_algorithm", "--speculative-draft": "speculative_draft_model_path"})
_SWITCHES = {"--enable-dp-attention": "enable_dp_attention"}
# key=value pairs of the ServerArgs(...) repr; a value must end in "," or ")", so a line cut
# mid-value ("chunked_prefill_size=163") is not read as a number it never was.
_PAIR = re.compile(r"(?<![\w.])(" + "|".join(_SETTINGS) + r")=('[^']{0,300}'|[^,()\s]{1,300})(?=[,)])")


def _setting(sink, key: str, value: str, n: int, line: str, how: str = "") -> None:
    """One launch setting, in its option's syntax; the layout waits for complete()."""
    value = value.strip().strip("'\"")
    if value in ("None", "", "null"):
        return
    target = _SETTINGS[key]
    if target == "model_path":
        sink.show_once("model_path", value, n, line, "model_path")
    elif target in ("tp_size", "pp_size", "dp_size", "ep_size"):
        size = _count(sink, f"{key.split('_')[0]} ({key})", value, n, 1 << 20)
        if size is not None:
            sink.show_once(target, size, n, line, key)
    elif target == "dp_attention":
        sink.show_once("dp_attention", value in ("True", "true", "1", "on"), n, line, key)
    elif target in ("max_running_requests", "max_total_tokens"):
        count = _count(sink, key, value, n)
        if count is not None:
            sink.show_once(target, count, n, line, key)
    elif target in ("spec_algorithm", "spec_draft_path", "spec_steps"):
        sink.show_once(target, value, n, line, key)         # what they are waits for complete()
    elif target == "kv-dtype":
        if value != "auto":
            sink.take("kv-dtype", _KV_DTYPES.get(value, value), n, line, how)
        else:
            sink.show("kv_dtype_default", value, n, line)    # printed: the model's dtype, no inference
    elif target == "prefill-chunk":
        if value.lstrip("-").isdigit() and int(value) <= 0:
            return                   # -1: chunked prefill off, no option says that
        sink.take("prefill-chunk", value, n, line, how)
    else:
        sink.take(target, value, n, line, how)


def _server_args(match, sink, n, line):
    for key, value in _PAIR.findall(match["args"]):
        _setting(sink, key, value, n, line, "ServerArgs")


def _command(match, sink, n, line):
    sink.start("command", n)
    args = match["args"]
    words = args.split()
    if match["serve"] and words and not words[0].startswith("-"):
        sink.show_once("model_path", words[0], n, line, "model_path")   # `sglang serve MODEL`
    _flags(sink, args, n, line)


def _flags(sink, args: str, n: int, line: str) -> None:
    words, continues = command_words(sink, args, n, line)
    for i, word in enumerate(words):
        flag, equals, value = word.partition("=")
        if flag in _SWITCHES:
            _setting(sink, _SWITCHES[flag], "True", n, line)
        elif flag in _FLAGS:
            last = i + 1 == len(words) - (0 if equals else 1) and not continues
            value = value if equals else (words[i + 1] if i + 1 < len(words) else "")
            if value.startswith("--") or not value:
                continue
            if last and cut(sink, n, line, len(line.rstrip()), flag):
                continue
            _setting(sink, _FLAGS[flag], value, n, line)



def _version(match, sink, n, line):
    sink.start("version", n)
    _take_version(sink, match["version"], n, line)


def _take_version(sink, text: str, n: int, line: str) -> None:
    # A release outside those modelled would refuse every figure: said, not taken.
    try:
        releases.parse(engine, text)
    except InputError as e:
        _bad(sink, "engine-version", text, n, e.message)
        return
    sink.take("engine-version", text.lstrip("v"), n, line)


# --- memory and the pools --------------------------------------------------------------------

def _load_begin(match, sink, n, line):
    free = _decimal(sink, "avail mem", match[1], n)
    if free is not None:
        sink.show("free_at_start_gib", free, n, line)


def _load_end(match, sink, n, line):
    kind = re.search(r"\btype=(\w{1,80})", match[0])
    if kind:
        sink.show("architecture", kind[1], n, line)
    avail = _decimal(sink, "avail mem", match["avail"], n)
    usage = _decimal(sink, "loaded-weights-gib (mem usage)", match["usage"], n) if match["usage"] is not None else None
    if usage is not None:
        # Ranks print their own; the busiest rank's weights bind.
        sink.take("loaded-weights-gib", match["usage"], n, line, "mem usage at Load weight end", keep="max")
    if usage is None and getattr(sink, "cut_line", 0) == n:
        # The paste's last line, with no line end: its "mem usage" may have followed the cut, so the
        # weights are not derived from the avail mem it kept (44.11 - 37.97 = 6.14 where the whole
        # line prints 6.13).
        sink.notes.append(f"line {n:,} ends the paste without a line end: the weights it may print are not read")
        return
    if avail is not None:
        sink.show("avail_after_weights_gib", avail, n, line, keep="min")
        if usage is not None:
            sink.show("free_before_weights_gib", avail + usage, n, line, keep="min")


def _kv_dtype(match, sink, n, line):
    _take_kv_dtype(match[1], sink, n, line)


def _take_kv_dtype(torch_name: str, sink, n, line):
    name = _TORCH_DTYPES.get(torch_name)
    if name is None:
        _bad(sink, "kv-dtype", torch_name, n, "not a dtype the calculator names")
        return
    sink.take("kv-dtype", name, n, line, f"torch.{torch_name}")


def _swa_pool(match, sink, n, line):
    full = _count(sink, "full_layer_tokens", match[1], n)
    swa = _count(sink, "swa_layer_tokens", match[2], n)
    if full is not None and swa is not None:
        sink.show_once("full_tokens", full, n, line, "full_layer_tokens")
        sink.show_once("swa_tokens", swa, n, line, "swa_layer_tokens")


def _kv_pool(match, sink, n, line):
    """Every rank prints its pool; a hybrid model prints a full and a sliding-window pool. The
    pools are gathered by their #tokens and sorted out in complete(), whatever the lines' order."""
    if match["dtype"] is not None:
        # 2026 releases name the pool's dtype on this line ("dtype: torch.float16, #tokens: ...").
        _take_kv_dtype(match["dtype"], sink, n, line)
    # Releases before 0.4.4 print no #tokens here (the summary line gives them): kept as 0.
    tokens = _count(sink, "#tokens", match["tokens"], n) if match["tokens"] is not None else 0
    if tokens is None:
        return
    parts = [_decimal(sink, label, match[group], n) for group, label in (
        ("k", "kv-memory-gib (K size)"), ("v", "kv-memory-gib (V size)"), ("kv", "kv-memory-gib (KV size)"))
        if match[group] is not None]
    if None in parts:
        return
    gib = sum(parts, Fraction(0))
    # One dict kept and added to (a line per rank and pool), never copied per line.
    pools = sink.printed["kv_pools"].value if "kv_pools" in sink.printed else {}
    old = pools.get(tokens)
    # Pipeline stages hold different layers: the stage whose cell is largest bound the tokens and
    # holds the most memory, the KV memory every stage was sized in.
    if old is None or gib > old[0]:
        pools[tokens] = (gib, n, line.strip()[:160], match["kv"] is not None)
    sink.show("kv_pools", pools, n, line, keep="last")


def _mamba(match, sink, n, line):
    slots = _count(sink, "max_mamba_cache_size", match[1], n)
    if slots is not None:
        sink.show("mamba_slots", slots, n, line)
    conv, ssm = (_decimal(sink, what, match[i], n) for i, what in ((2, "conv_state size"), (3, "ssm_state size")))
    if conv is not None and ssm is not None:
        sink.show("mamba_pool_gib", conv + ssm, n, line)


def _pool_end(match, sink, n, line):
    avail = _decimal(sink, "avail mem", match[1], n)
    if avail is not None:
        sink.show("avail_after_pool_gib", avail, n, line, keep="min")


def _graph_end(match, sink, n, line):
    usage = _decimal(sink, "cuda graph mem usage", match[1], n)
    if usage is not None:
        sink.show("cuda_graph_gib", usage, n, line)


def _summary(match, sink, n, line):
    # managers/scheduler.py: printed once by the first rank when the scheduler is ready.
    tokens = _count(sink, "max_total_num_tokens", match["tokens"], n)
    if tokens is not None:
        sink.show_once("summary_tokens", tokens, n, line, "max_total_num_tokens")
    chunk = match["chunk"]
    if chunk is not None and not chunk.startswith("-") and chunk != "None":
        sink.take("prefill-chunk", chunk, n, line, "chunked_prefill_size")
    if match["requests"] is not None:
        count = _count(sink, "max_running_requests", match["requests"], n)
        if count is not None:
            sink.show_once("max_running_requests", count, n, line, "max_running_requests")
    if match["context"] is not None and not cut(sink, n, line, match.end("context"), "context_len"):
        sink.take("context", match["context"], n, line, "context_len")


def _check_env(match, sink, n, line):
    # `python -m sglang.check_env`, often pasted above the log: "GPU 0,1,2,3: NVIDIA H100 80GB HBM3".
    sink.show("device_name", match["name"].strip(), n, line)


def _check_env_capability(match, sink, n, line):
    # check_env's next line, "GPU 0,1,2,3 Compute Capability: 9.0"; one line a capability when
    # the GPUs differ: two printed say no one capability.
    cc = capability(match["cc"])
    old = sink.printed.get("device_capability")
    if old is None:
        sink.show("device_capability", cc, n, line)
    elif old.value != cc:
        sink.show("device_capability", None, n, line, keep="last")


def _moe_config(match, sink, n, line):
    # The fused MoE kernel's config file, named by the device as torch reports it with "_" for
    # spaces ("E=128,N=768,device_name=NVIDIA_H100_80GB_HBM3.json"), in its "not found" warning.
    sink.show("device_name", match[1], n, line)


def _ranks(match, sink, n, line):
    # "[2025-05-14 09:29:03 DP1 TP3]": the highest rank printed, for the layout when no command
    # or ServerArgs gives it (complete()).
    for kind, index in re.findall(r"\b(DP|TP|PP|EP)(\d{1,5})\b", match[0]):
        name = f"highest_{kind.lower()}_rank"
        old = sink.printed.get(name)
        if old is None or int(index) > old.value:
            sink.show(name, int(index), n, line, keep="last")


RULES = (
    Rule(re.compile(r"(?:^|[\s$#>=])(?:python3?\s+-m\s+sglang\.launch_server|(?P<serve>sglang\s+serve))"
                    r"(?P<args>.*)"), _command, True, "sglang"),
    continuation(_flags),
    Rule(re.compile(r"(?:server_args=)?ServerArgs\((?P<args>.*)"), _server_args, True, "ServerArgs("),
    Rule(re.compile(r"^GPU \d{1,4}(?:,\d{1,4})*: (?P<name>[^:]{2,80})$"), _check_env, False, "GPU "),
    Rule(re.compile(r"^GPU \d{1,4}(?:,\d{1,4})* Compute Capability: (?P<cc>\d{1,2}\.\d{1,2})\s*$"), _check_env_capability,
         False, "Compute Capability"),
    Rule(re.compile(r"device_name=([\w\-]{2,80}?)(?:\.json|[^\w\-]|$)"), _moe_config, False, "device_name="),
    Rule(re.compile(r"\bsglang(?:==|:\s*|\s+version:?\s*|\s+v)(?P<version>v?\d{1,4}\.\d{1,4}[\w.+\-]*)", re.I),
         _version, True, "glang"),
    Rule(re.compile(r"Load weight begin\. avail mem=" + _VALUE + r"\s*GB"), _load_begin, True, "Load weight begin"),
    # Up to "avail mem=" within the line's part before the next "Load weight end." (each start
    # scans its own part: linear); the type is searched in the match (_load_end).
    Rule(re.compile(r"Load weight end\.(?:(?!Load weight end\.|avail mem=).){0,400}?avail mem=(?P<avail>[^\s()]+?)"
                    r"\s*GB(?:, mem usage=(?P<usage>[^\s()]+?)\s*GB)?"), _load_end, True, "Load weight end"),
    Rule(re.compile(r"Using KV cache dtype: torch\.(\w+)"), _kv_dtype, False, "Using KV cache dtype"),
    Rule(re.compile(r"Use sliding window memory pool\. full_layer_tokens=" + _VALUE + r", swa_layer_tokens="
                    + _VALUE + r"(?:$|\s|,(?!\d))"), _swa_pool, True, "sliding window memory pool"),
    Rule(re.compile(r"KV Cache is allocated\. (?:dtype: torch\.(?P<dtype>\w{1,40}), )?"
                    r"(?:#tokens: (?P<tokens>[^\s,]+), )?(?:K size: (?P<k>\S+?)\s*GB, "
                    r"V size: (?P<v>\S+?)\s*GB|KV size: (?P<kv>\S+?)\s*GB)"), _kv_pool, True,
         "KV Cache is allocated"),
    Rule(re.compile(r"Mamba Cache is allocated\. max_mamba_cache_size: ([^\s,]+), conv_state size: ([^\s,]+?)\s*GB, "
                    r"ssm_state size: ([^\s,]+?)\s*GB"), _mamba, True, "Mamba Cache is allocated"),
    Rule(re.compile(r"Memory pool end\. avail mem=" + _VALUE + r"\s*GB"), _pool_end, True, "Memory pool end"),
    Rule(re.compile(r"Capture cuda graph end\.(?:(?!Capture cuda graph end\.|mem usage=).){0,400}?mem usage="
                    + _VALUE + r"\s*GB"), _graph_end, True,
         "Capture cuda graph end"),
    Rule(re.compile(r"Capture cuda graph begin"), lambda *a: None, True, "Capture cuda graph begin"),
    # Each field is read only with the comma after it, so a line cut mid-number is not read short.
    Rule(re.compile(r"max_total_num_tokens=(?P<tokens>[^\s,]{1,64}),(?: chunked_prefill_size=(?P<chunk>-?[^\s,]{1,64}),)?"
                    r"(?: max_prefill_tokens=[^\s,]{1,64},)?(?: max_running_requests=(?P<requests>[^\s,]{1,64}),)?"
                    r"(?: context_len=(?P<context>[^\s,]{1,64}?)(?=,|\s|$))?"), _summary, True, "max_total_num_tokens="),
    # "[2025-05-14 09:29:03 DP1 TP3]", and without the time as some builds print it: "[TP1]".
    Rule(re.compile(r"^\s*\[(?:[\d\-]{1,12} [\d:.]{1,15} )?(?:DP|TP|PP|EP)\d{1,5}(?: (?:DP|TP|PP|EP)\d{1,5}){0,3}\]"),
         _ranks, False, "TP"),
)

# What a full start-up prints, and how the page names it when it is missing.
EXPECTED = (("model", "the model (--model-path; no Hugging Face id of a preset printed)"),
            ("tp", "tp_size (the launch command or its ServerArgs)"),
            ("context", "context_len (the scheduler's max_total_num_tokens line)"),
            ("memory-utilization", "mem_fraction_static (the launch command or its ServerArgs)"),
            ("loaded-weights-gib", "the weights (Load weight end ... mem usage)"),
            ("kv-memory-gib", "the KV pool (KV Cache is allocated ... K size, V size)"),
            ("engine-version", "the release (SGLang does not print it at start-up: choose it)"))


def complete(sink) -> None:
    """What follows from the lines together: the model preset its path names, the layout (SGLang's
    --tp-size counts every GPU; with --enable-dp-attention each data-parallel rank's attention
    runs on tp_size / dp_size of them), a hybrid model's two pools, what it cannot say."""
    printed, reads = sink.printed, sink.reads
    take_model(sink)
    _speculative(sink)
    _layout(sink)
    _pools(sink)
    if "mamba_pool_gib" in printed:
        sink.notes.append(f"the Mamba state pool ({float(printed['mamba_pool_gib'].value):.2f} GiB, "
                          f"{printed['mamba_slots'].value if 'mamba_slots' in printed else '?'} slots) is beside "
                          "the KV pool: the KV memory read is the KV pool's alone")
    if "max_total_tokens" in printed:
        sink.notes.append(f"--max-total-tokens {printed['max_total_tokens'].value} caps the pool: the #tokens it "
                          "printed is what it kept")
    begin, end = printed.get("free_at_start_gib"), printed.get("avail_after_weights_gib")
    if "loaded-weights-gib" not in reads and begin is not None and end is not None and begin.value >= end.value:
        # Before 0.4.x Load weight end printed no mem usage: the weights are what loading took.
        sink.take("loaded-weights-gib", _gib(begin.value - end.value), end.line_number, end.line,
                  "avail mem at Load weight begin less at its end")
    _memory_in_use(sink)


# --speculative-algorithm (server_args.py, 0.5.x): NEXTN runs the model's own next-n (MTP) layers,
# from the model's checkpoint or, in early 2025 (PR #3582), an extracted copy given as the draft
# path; it is EAGLE by another name (arg_groups/speculative_hook.py). EAGLE without a draft path
# is the same MTP heads (server_args.py sets the draft path to the model's for the MTP families);
# EAGLE or EAGLE3 with a path of its own is a separate EAGLE head and NGRAM no model at all: no
# input says either.
_NEXTN, _EAGLE, _DRAFT_ALGORITHM = "NEXTN", "EAGLE", "STANDALONE"


def _speculative(sink) -> None:
    """The proposer --speculative-algorithm and --speculative-draft-model-path name, as inputs:
    mtp on, or a draft-model preset, with --speculative-num-steps as spec-tokens."""
    printed = sink.printed
    algorithm = printed.get("spec_algorithm")
    if algorithm is None:
        return
    name = str(algorithm.value).upper()
    path, steps, model = printed.get("spec_draft_path"), printed.get("spec_steps"), printed.get("model_path")
    own = path is None or (model is not None and path.value.rstrip("/") == str(model.value).rstrip("/"))
    if name == _NEXTN or (name == _EAGLE and own):
        sink.take("mtp", "on", algorithm.line_number, algorithm.line,
                  f"--speculative-algorithm {algorithm.value}" + ("" if own else ", its next-n layers from the draft "
                                                                  "path"))
    elif name == _DRAFT_ALGORITHM and path is not None:
        entry = model_entry(path.value)
        if entry is None:
            sink.notes.append(f"draft model not read: --speculative-draft-model-path {path.value[:80]!r} is not a "
                              "preset's Hugging Face id (a local file cannot be one); give its config.json as "
                              "draft-hf-config")
            return
        sink.take("draft-model", entry["id"], path.line_number, path.line, "--speculative-draft-model-path")
    else:
        sink.notes.append(f"speculative decoding not read: --speculative-algorithm {algorithm.value}"
                          + (f" with the draft {path.value[:80]!r}" if path is not None else "")
                          + " is no input here; only the model's MTP heads (NEXTN) and a STANDALONE draft model are")
        return
    if steps is not None:
        sink.take("spec-tokens", steps.value, steps.line_number, steps.line, "--speculative-num-steps")


def _memory_in_use(sink) -> None:
    """SGLang's mem_fraction_static multiplies the memory free when it starts, the avail mem before
    the weights: what was in use then is the GPU's total (as PyTorch reports it) less that."""
    printed, reads = sink.printed, sink.reads
    device = printed.get("device_name")
    free = printed.get("free_before_weights_gib") or printed.get("free_at_start_gib")
    if device is not None and "gpu" not in reads:
        # SGLang prints no total: the memory free as it started is the floor of the card's.
        cc = printed.get("device_capability")
        take_gpu(sink, Device(device.value, free_gib=free.value if free else None,
                              capability=cc.value if cc else None), device.line_number, device.line)
    if free is None:
        return
    if "gpu" not in reads:
        sink.notes.append(f"SGLang started with {float(free.value):.2f} GiB free (before the weights): "
                          "memory-in-use-gib is the GPU's total less that, once the GPU is chosen")
        return
    gpu = gpu_presets.gpu(reads["gpu"].text)
    total = gpu.torch_memory_bytes or gpu.memory_bytes
    in_use = Fraction(total, 1 << 30) - free.value
    if in_use < 0:
        sink.notes.append(f"memory-in-use-gib not read: {float(free.value):.2f} GiB free is more than "
                          f"{gpu.id}'s total; check the GPU")
        return
    sink.take("memory-in-use-gib", f"{float(in_use):.4f}".rstrip("0").rstrip(".") or "0", free.line_number,
              free.line, f"{gpu.id}'s {float(total / (1 << 30)):.2f} GiB"
              + ("" if gpu.torch_memory_bytes else " (nvidia-smi's: PyTorch's is not on record)")
              + f" less the {float(free.value):.2f} GiB free before the weights")


def _pools(sink) -> None:
    """The token pool and its memory from the pool lines, the sliding-window line and the
    scheduler's summary together: one start-up has one full pool (and one sliding-window pool)."""
    printed = sink.printed
    pools = dict(printed["kv_pools"].value) if "kv_pools" in printed else {}
    full, swa = printed.get("full_tokens"), printed.get("swa_tokens")
    summary = printed.get("summary_tokens")
    if full is not None:
        witnesses = [(full.value, full.line_number)]
    else:
        witnesses = [(tokens, pool[1]) for tokens, pool in pools.items() if tokens]
    if summary is not None and not (swa is not None and summary.value == swa.value):
        witnesses.append((summary.value, summary.line_number))
    distinct = sorted(set(witnesses), key=lambda w: w[1])
    if len({tokens for tokens, _ in distinct}) > 1:
        (a, at), (b, bt) = distinct[0], next(w for w in distinct if w[0] != distinct[0][0])
        raise InputError("log", f"holds more than one start-up: #tokens is {a} at line {at:,} and {b} at line "
                                f"{bt:,}; paste one")
    if not distinct:
        if 0 in pools and swa is None:
            gib, number, text, latent = pools[0]
            sink.take("kv-memory-gib", _gib(gib), number, text, "K size + V size")
            sink.show("kv_memory_gib", gib, number, text)
        return
    tokens, where = distinct[0]
    line = full.line if full is not None else pools[tokens][2] if tokens in pools else summary.line
    sink.show("kv_tokens", tokens, where, line)
    if swa is not None:
        sink.show("swa_tokens_printed", swa.value, swa.line_number, swa.line)
        if full.value in pools and swa.value in pools:
            total = pools[full.value][0] + pools[swa.value][0]
            sink.take("kv-memory-gib", _gib(total), pools[full.value][1], pools[full.value][2],
                      "the full pool's K + V and the sliding-window pool's")
            sink.show("kv_memory_gib", total, pools[full.value][1], pools[full.value][2])
        else:
            kept = "the full" if full.value in pools else "the sliding-window" if swa.value in pools else "neither"
            sink.notes.append(f"kv-memory-gib not read: a hybrid sliding-window model has a full and a sliding-window "
                              f"pool, and only {kept} pool's \"KV Cache is allocated\" line is in the paste")
        return
    if tokens in pools or 0 in pools:
        gib, number, text, latent = pools[tokens if tokens in pools else 0]
        sink.take("kv-memory-gib", _gib(gib), number, text,
                  "KV size (one latent, no K/V split)" if latent else "K size + V size")
        sink.show("kv_memory_gib", gib, number, text)


def _layout(sink) -> None:
    printed = sink.printed
    tp_size, dp_size, pp_size = (printed.get(k) for k in ("tp_size", "dp_size", "pp_size"))
    anchor = tp_size or dp_size or pp_size
    if anchor is None:
        # No command or ServerArgs: the rank prefixes are the only witness of the layout. Without
        # data-parallel ranks, the highest TP rank printed + 1 is the tensor-parallel size.
        ranks = printed.get("highest_tp_rank")
        if ranks is not None and "highest_dp_rank" not in printed:
            tp = ranks.value + 1
            pp = printed["highest_pp_rank"].value + 1 if "highest_pp_rank" in printed else 1
            sink.take("tp", str(tp), ranks.line_number, ranks.line, f"the ranks TP0 to TP{ranks.value} it prints")
            if pp > 1:
                sink.take("pp", str(pp), printed["highest_pp_rank"].line_number, printed["highest_pp_rank"].line,
                          "the pipeline ranks it prints")
            sink.take("gpus", str(tp * pp), ranks.line_number, ranks.line, "tp x pp")
            sink.notes.append(f"tp {tp} read from the rank prefixes (TP0 to TP{ranks.value}): a paste that leaves "
                              "out the highest rank's lines says less; check it")
        elif ranks is not None:
            sink.notes.append("tp not read: the lines carry data-parallel ranks but no command or ServerArgs says "
                              "tp_size and dp_size")
        return
    tp = tp_size.value if tp_size else 1
    dp = dp_size.value if dp_size else 1
    pp = pp_size.value if pp_size else 1
    attention = printed.get("dp_attention")
    if dp > 1 and attention is not None and attention.value:
        if tp % dp:
            sink.notes.append(f"tp not read: --enable-dp-attention needs tp_size {tp} divisible by dp_size {dp}")
            return
        # DP attention: tp_size GPUs in all, each data-parallel rank's attention on tp / dp.
        sink.take("tp", str(tp // dp), anchor.line_number, anchor.line, f"tp_size {tp} / dp_size {dp} (DP attention)")
        sink.take("dp", str(dp), anchor.line_number, anchor.line, "dp_size, with DP attention")
        gpus = tp * pp
    else:
        # Plain data parallel: dp_size replicas of tp_size GPUs each.
        sink.take("tp", str(tp), anchor.line_number, anchor.line, "tp_size")
        if dp > 1:
            sink.take("dp", str(dp), anchor.line_number, anchor.line, "dp_size (replicas)")
        gpus = tp * pp * dp
    if pp > 1:
        sink.take("pp", str(pp), anchor.line_number, anchor.line, "pp_size")
    sink.take("gpus", str(gpus), anchor.line_number, anchor.line, "GPUs = tp x pp x dp")
    ep = printed.get("ep_size")
    if ep is not None and ep.value > 1:
        sink.take("ep", "on", ep.line_number, ep.line, f"ep_size {ep.value}")
