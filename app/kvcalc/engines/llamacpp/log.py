"""llama.cpp's start-up lines, b2000s to b9000s (llama-server, llama-cli, and the copies Ollama
and LLamaSharp vendor): the build, the command, the devices, the model's metadata, the context's
parameters, the KV cache it allocates and the buffers beside it (src/llama-context.cpp,
src/llama-kv-cache.cpp, src/llama-kv-cache-iswa.cpp, src/llama-model.cpp, common/arg.cpp).

Function names in the prefixes changed over the builds (llama_new_context_with_model ->
llama_init_from_model -> llama_context; llama_kv_cache_init -> llama_kv_cache_unified ->
llama_kv_cache; llm_load_tensors -> load_tensors): the rules name the line by what follows.
Buffers are printed in MiB (2^20 bytes).
"""

import re
from fractions import Fraction

from . import allocator, engine
from .. import releases
from ...errors import InputError
from ...precision import precision
from ...readers import presets
from ...readers.log_rules import (
    Device, Read, Rule, capability, command_words, continuation, model_entry, model_match, take_gpu,
    take_model)  # no cycle
from ..sglang.log import cut

NAME = "llama.cpp"
_PLAIN_DECIMAL = re.compile(r"\d{1,12}(?:\.\d{1,12})?", re.A)     # ASCII digits: "١٢" is none llama.cpp prints
_PLAIN_INT = re.compile(r"\d{1,12}", re.A)
MAX_CELLS = 1 << 32           # llama.cpp keeps n_ctx in a uint32: past that a line was built to break us
_CONTEXT = r"(?:llama_context|llama_new_context_with_model|llama_init_from_model)"
# ggml's type names as precision.py names them.
_TYPES = {"f16": "fp16", "f32": "fp32", "bf16": "bf16", "q8_0": "q8_0", "q5_0": "q5_0", "q5_1": "q5_1",
          "q4_0": "q4_0", "q4_1": "q4_1", "iq4_nl": "iq4_nl"}
# Architectures whose GGUF metadata gives the whole KV shape: every layer full attention with
# key_length wide heads (no sliding window, no latent, no recurrent state).
_PLAIN_ARCHITECTURES = {"llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "command-r", "mistral", "granite",
                        "starcoder2", "internlm2", "baichuan", "olmo", "olmo2"}


# The input a printed count becomes, for the note that says it was not taken.
_OPTION_OF = {"n_ctx": "context", "n_ctx_per_seq": "context", "n_ctx_seq": "context", "n_parallel": "batch",
              "n_seq_max": "batch", "n_batch": "prefill-chunk", "n_ubatch": "prefill-chunk"}


def _bad(sink, what: str, text: str, n: int, reason: str) -> None:
    sink.rejected.append(f"line {n:,}: {what} {text[:40]!r} not taken ({reason})")


def _count(sink, what: str, text: str, n: int, limit: int = MAX_CELLS) -> int | None:
    if not _PLAIN_INT.fullmatch(text) or int(text) > limit:
        _bad(sink, what, text, n, "not a plausible count")
        return None
    return int(text)


def _mib(sink, what: str, text: str, n: int) -> Fraction | None:
    if not _PLAIN_DECIMAL.fullmatch(text) or Fraction(text) > 1 << 40:
        _bad(sink, what, text, n, "not a plain number of MiB")
        return None
    return Fraction(text)


def _largest(sink, name: str, value, n: int, line: str) -> None:
    old = sink.printed.get(name)
    sink.show(name, value, n, line, keep="last" if old is not None and value > old.value else "first")


def _draft(sink, n: int) -> bool:
    """Whether line n comes after llama-server's "loading draft model": a speculative draft's own
    context, cache and buffers follow, which are not the target's."""
    draft = sink.printed.get("draft_from")
    return draft is not None and n > draft.value


def _target_only(handle):
    """A rule's handler that leaves the draft model's lines unread."""
    def handled(match, sink, n, line):
        if not _draft(sink, n):
            handle(match, sink, n, line)
    return handled


def _draft_model(match, sink, n, line):
    sink.show("draft_from", n, n, line)
    sink.notes.append(f"the lines after line {n:,} are the draft model's ({match[1][:80]!r}): its own context, "
                      "cache and buffers, not read")


def _slots(match, sink, n, line):
    # llama-server's init() (server.cpp, 2024-25; research note 1.3) prints "initializing slots"
    # and then gives each slot its own draft context (llama_init_from_model(model_dft,
    # cparams_dft)): a context built after this line is a draft's, even when the paste leaves out
    # the "loading draft model" line before it.
    if "draft_from" not in sink.printed:
        sink.show("draft_from", n, n, line)
        sink.notes.append(f"the contexts after line {n:,} (initializing slots) are a speculative draft's, one a "
                          "slot: not read as the model's")


# A backend's device as llama.cpp names it: CUDA0, ROCm1, Vulkan0, CPU_Mapped, and an RPC server
# ("RPC[172.31.27.42:50052]", ggml-rpc: a remote machine's device, holding its layers' KV buffers).
_DEVICE = r"[\w\-]{1,40}(?:\[[\w.:\-]{1,80}\])?"


def _device_kind(device: str) -> str:
    return "cpu" if device.upper().startswith("CPU") or device.endswith("_Host") else "gpu"


# --- build, command, devices -------------------------------------------------------------------

def _build(match, sink, n, line):
    sink.start(match["kind"], n)
    text = "b" + match["build"]
    try:
        releases.parse(engine, text)
    except InputError as e:
        # A build outside those modelled would refuse every figure: said, not taken.
        _bad(sink, "engine-version", text, n, e.message)
        return
    sink.take("engine-version", text, n, line, f"build {match['build']}")


# llama-server / llama-cli flags (common/arg.cpp) and the inputs they are.
_FLAGS = {"-c": "n_ctx", "--ctx-size": "n_ctx", "-np": "n_parallel", "--parallel": "n_parallel",
          "-ub": "prefill-chunk", "--ubatch-size": "prefill-chunk", "-ngl": "n-gpu-layers",
          "--gpu-layers": "n-gpu-layers", "--n-gpu-layers": "n-gpu-layers", "-ctk": "kv-dtype",
          "--cache-type-k": "kv-dtype", "-ctv": "kv-dtype-v", "--cache-type-v": "kv-dtype-v",
          "--n-cpu-moe": "n-cpu-moe", "-ncmoe": "n-cpu-moe", "-m": "model_file", "--model": "model_file",
          "-hf": "model_repo", "--hf-repo": "model_repo", "-fa": "flash-attn", "--flash-attn": "flash-attn",
          "-md": "draft_file", "--model-draft": "draft_file", "-hfd": "draft_repo", "-hfrd": "draft_repo",
          "--hf-repo-draft": "draft_repo", "--draft-max": "draft_max", "--draft": "draft_max",
          "--draft-n": "draft_max", "-ts": "tensor-split", "--tensor-split": "tensor-split"}
_ON_OFF = {"on": "on", "1": "on", "true": "on", "enabled": "on", "off": "off", "0": "off", "false": "off",
           "disabled": "off"}


def _command(match, sink, n, line):
    sink.start("command", n)
    _flags(sink, match["args"], n, line)



def _flags(sink, args: str, n: int, line: str) -> None:
    words, continues = command_words(sink, args, n, line)
    for i, word in enumerate(words):
        flag, equals, value = word.partition("=")
        target = _FLAGS.get(flag)
        if target is not None and not continues and i + 1 == len(words) - (0 if equals else 1) and \
                cut(sink, n, line, len(line.rstrip()), flag):
            continue
        if target is None:
            if flag in ("--kv-unified", "-kvu"):
                sink.show("arg_unified", True, n, line)
            continue
        following = words[i + 1] if i + 1 < len(words) else ""
        if target == "flash-attn":
            # Before b6325 -fa was a bare switch; from it, -fa on|off|auto.
            word = (value if equals else following).lower()
            if word in _ON_OFF:
                sink.take("flash-attn", _ON_OFF[word], n, line, f"{flag} {word}")
            elif word != "auto":
                sink.take("flash-attn", "on", n, line, f"{flag}, a switch")
            continue
        value = value if equals else following
        if not value or value.startswith("-"):
            continue
        if target in ("kv-dtype", "kv-dtype-v"):
            sink.show_once("cache_type_k" if target == "kv-dtype" else "cache_type_v", value.lower(), n, line, flag)
        elif target in ("n_ctx", "n_parallel"):
            count = _count(sink, f"{_OPTION_OF[target]} ({flag})", value, n)
            if count is not None:
                sink.show_once("arg_" + target, count, n, line, flag)
        elif target in ("model_file", "model_repo", "draft_file", "draft_repo"):
            sink.show(target, value, n, line)
        elif target == "draft_max":
            count = _count(sink, flag, value, n, 1 << 10)
            if count is not None:
                sink.show_once("draft_max", count, n, line, flag)
        else:
            of = sink.printed.get("offloadable_layers")
            old = sink.reads.get(target)
            if target == "n-gpu-layers" and of is not None and old is not None and value.isdigit() and \
                    int(value) >= of.value and int(old.text) == of.value:
                continue            # "offloaded 41/41" read first, and -ngl 99: both say every layer
            if target == "tensor-split":
                value = "/".join(p for p in re.split(r"[,/]+", value) if p)   # as the option writes it
            sink.take(target, value, n, line, flag)


def _device(match, sink, n, line):
    name = match["name"].strip()
    # One dict kept and added to (a line per device, up to a thousand indexes): not copied per line.
    devices = sink.printed["device_map"].value if "device_map" in sink.printed else {}
    index = int(match["index"]) if "index" in match.re.groupindex else 0
    devices[index] = name
    sink.show("device_map", devices, n, line, keep="last")
    groups = match.re.groupindex
    # What the line says of the device besides its name: ggml_cuda_init's compute capability
    # (CUDA) or gfx target (ROCm), the model loader's MiB free (its total is at least that).
    for key, fact in (("cc", "capability"), ("gfx", "gfx"), ("free", "free_mib")):
        if key in groups and match[key] is not None:
            facts = sink.printed["device_facts"].value if "device_facts" in sink.printed else {}
            value = capability(match[key]) if key == "cc" else match[key] if key == "gfx" else int(match[key])
            facts.setdefault(index, {})[fact] = value
            sink.show("device_facts", facts, n, line, keep="last")


def _found(match, sink, n, line):
    count = _count(sink, "devices", match[1], n, 1 << 16)
    if count is not None:
        sink.show_once("devices_found", count, n, line, "CUDA devices found")


# --- the model's metadata ------------------------------------------------------------------------

_METADATA = {"block_count": "layers", "attention.head_count_kv": "kv-heads", "attention.key_length": "head-dim",
             "attention.value_length": "v_head_dim", "attention.head_count": "attention-heads",
             "embedding_length": "hidden", "attention.sliding_window": "sliding", "attention.kv_lora_rank": "mla",
             "context_length": "context_train"}


@_target_only
def _metadata(match, sink, n, line):
    arch, key = match["arch"], match["key"]
    if match["arch"] == "general":
        if key == "architecture":
            sink.show("gguf_architecture", match["value"].strip().strip("'\""), n, line)
        elif key in ("name", "basename", "size_label"):
            sink.show("gguf_" + key, match["value"].strip().strip("'\"")[:120], n, line)
        return
    field = _METADATA.get(key)
    if field is None or cut(sink, n, line, len(line.rstrip()), f"{arch}.{key}"):
        return
    value = match["value"].strip()
    if not _PLAIN_INT.fullmatch(value):
        if field in ("sliding", "mla"):
            sink.show("gguf_" + field, value[:40], n, line)   # an array or a float: it is there
        elif field in ("layers", "kv-heads", "head-dim", "attention-heads", "hidden"):
            _bad(sink, f"{arch}.{key}", value, n, "not a whole number (per-layer arrays are not read)")
        return
    sink.show("gguf_arch", arch, n, line)
    sink.show_once("gguf_" + field, int(value), n, line, f"{arch}.{key}")


# --- the context -----------------------------------------------------------------------------------

@_target_only
def _context_param(match, sink, n, line):
    key, value = match["key"], match["value"]
    if cut(sink, n, line, match.end("value"), key):
        return
    if key == "n_ctx_seq":
        key = "n_ctx_per_seq"
    if key == "flash_attn":
        word = value.lower()
        if word in _ON_OFF:
            sink.take("flash-attn", _ON_OFF[word], n, line, f"flash_attn = {value}")
        elif word != "auto":
            _bad(sink, "flash_attn", value, n, "neither on nor off")
        return
    count = _count(sink, f"{_OPTION_OF[key]} ({key})", value, n)
    if count is None:
        return
    if key == "n_ubatch":
        sink.take("prefill-chunk", str(count), n, line, "n_ubatch")
    elif key == "n_seq_max":
        sink.take("batch", str(count), n, line, "n_seq_max: sequences served at once (-np)")
    elif key in ("n_ctx", "n_ctx_per_seq", "n_batch"):
        sink.show_once(key, count, n, line, key)


@_target_only
def _flash_auto(match, sink, n, line):
    sink.take("flash-attn", "on" if match[1] == "enabled" else "off", n, line, f"-fa auto, set to {match[1]}")


@_target_only
def _kv_init(match, sink, n, line):
    # "kv_size = 4096, offload = 1, type_k = 'f16', type_v = 'f16', n_layer = 64"
    size = _count(sink, "context (kv_size)", match["size"], n)
    if size is not None:
        sink.show_once("kv_size", size, n, line, "kv_size")
    sink.show_once("cache_type_k", match["k"], n, line, "type_k")
    sink.show_once("cache_type_v", match["v"], n, line, "type_v")
    if match["layers"]:
        layers = _count(sink, "n_layer", match["layers"], n, 100_000)
        if layers is not None:
            sink.show_once("kv_layers", layers, n, line, "n_layer")


@_target_only
def _cache_kind(match, sink, n, line):
    # llama-kv-cache-iswa.cpp names the two caches' cells before their size lines.
    sink.show("next_cache", "swa" if match[1] == "SWA" else "full", n, line, keep="last")
    cells = _count(sink, "cells", match[2], n)
    if cells is not None:
        sink.show_once("swa_cells" if match[1] == "SWA" else "iswa_cells", cells, n, line, f"{match[1]} cells")


@_target_only
def _kv_size(match, sink, n, line):
    """A cache's size line; which cache it is (an iSWA model's full or sliding one) is settled in
    complete() by its cells, so the lines may come in any order."""
    kind = sink.printed["next_cache"].value if "next_cache" in sink.printed else "full"
    sink.show("next_cache", "full", n, line, keep="last")
    total = _mib(sink, "KV size", match["total"], n)
    k_mib, v_mib = _mib(sink, "K size", match["k_mib"], n), _mib(sink, "V size", match["v_mib"], n)
    if None in (total, k_mib, v_mib):
        return
    cells = layers = seqs = streams = None
    if match["cells"]:
        cells = _count(sink, "cells", match["cells"], n)
        layers = _count(sink, "layers", match["layers"], n, 100_000)
        # Builds before the split streams (mid-2025, "( 32768 cells,  40 layers,  1 seqs)") print no
        # streams: their cache was one stream shared by every sequence.
        seqs = _count(sink, "seqs", match["seqs"], n, 1 << 16)
        streams = _count(sink, "seqs", match["streams"] or "1", n)
        if None in (cells, layers, seqs, streams):
            return
    cache = (cells, layers, total, k_mib, v_mib, match["k_type"], match["v_type"], seqs, streams, kind)
    caches = list(sink.printed["kv_caches"].value) if "kv_caches" in sink.printed else []
    if any(c[0][:9] == cache[:9] for c in caches):
        return                  # every start-up prints each cache once; the same line again adds nothing
    if len(caches) >= 3:
        return                  # a full and a sliding cache at most: three already hold two of one kind
    caches.append((cache, n, line.strip()[:160]))
    sink.show("kv_caches", tuple(caches), n, line, keep="last")


def _main_cache(sink):
    """(the full cache, the sliding one) of the size lines, or InputError for two start-ups."""
    printed = sink.printed
    caches = list(printed["kv_caches"].value) if "kv_caches" in printed else []
    swa_cells = printed["swa_cells"].value if "swa_cells" in printed else None
    full_cells = printed["iswa_cells"].value if "iswa_cells" in printed else None

    def is_swa(entry):
        # By cells where they tell the caches apart, else by the "creating ... KV cache" line
        # printed just before it.
        cells, kind = entry[0][0], entry[0][9]
        if cells is None or swa_cells == full_cells:
            return kind == "swa"
        if swa_cells is not None:
            return cells == swa_cells
        return full_cells is not None and cells != full_cells

    full = [c for c in caches if not is_swa(c)]
    swa = [c for c in caches if is_swa(c)]
    for group in (full, swa):
        if len(group) > 1:
            (a, an, _), (b, bn, _) = group[0], group[1]
            raise InputError("log", f"holds more than one start-up: the KV cache is {float(a[2]):.2f} MiB at line "
                                    f"{an:,} and {float(b[2]):.2f} MiB at line {bn:,}; paste one")
    return (full[0] if full else None), (swa[0] if swa else None)


def _caches(sink) -> None:
    full, swa = _main_cache(sink)
    printed = sink.printed
    if full is None and "iswa_cells" in printed:
        cells = printed["iswa_cells"]            # "creating non-SWA KV cache, size = N cells"
        sink.show("kv_tokens", cells.value, cells.line_number, cells.line)
    elif full is not None and full[0][0] is None and "kv_size" in printed:
        # Older builds print the cells as kv_size, every sequence's together: one sequence's
        # cells where it serves one (llama-server's default -np 1 then), as the context assumes.
        cells = printed["kv_size"]
        if "batch" not in sink.reads or sink.reads["batch"].text == "1":
            sink.show("kv_tokens", cells.value, cells.line_number, cells.line)
    for entry, which in ((full, "full"), (swa, "swa")):
        if entry is None:
            continue
        (cells, layers, total, k_mib, v_mib, k_type, v_type, seqs, streams, _), n, line = entry
        prefix = "" if which == "full" else "swa_"
        sink.show(prefix + "kv_cache_mib", total, n, line)
        sink.show(prefix + "k_cache_mib", k_mib, n, line)
        sink.show(prefix + "v_cache_mib", v_mib, n, line)
        if cells is not None:
            sink.show("kv_tokens" if which == "full" else "swa_cells", cells, n, line)
            sink.show(prefix + "kv_layers", layers, n, line)
        if seqs is not None:
            sink.show_once("seqs", seqs, n, line, "seqs")
            sink.show_once("unified", streams == 1 and seqs > 1, n, line, "streams")
        sink.show_once("cache_type_k", k_type, n, line, "K type")
        sink.show_once("cache_type_v", v_type, n, line, "V type")


@_target_only
def _kv_buffer(match, sink, n, line):
    mib = _mib(sink, "kv-memory-gib (KV buffer)", match["mib"], n)
    device = match["device"]
    # One dict kept and added to, sorted in complete(): a line per device, never copied per line.
    buffers = sink.printed["kv_buffer_map"].value if "kv_buffer_map" in sink.printed else {}
    if mib is None:
        # Its size is not read, but the device holds a KV buffer: it is still one of the GPUs.
        buffers.setdefault(device, None)
        sink.show("kv_buffer_map", buffers, n, line, keep="last")
        return
    if device in buffers and buffers[device] != mib:
        return                  # a draft model's or the SWA cache's buffer on the same device
    buffers[device] = mib
    sink.show("kv_buffer_map", buffers, n, line, keep="last")
    if _device_kind(device) == "gpu":
        _largest(sink, "kv_buffer_mib", mib, n, line)


@_target_only
def _weights_buffer(match, sink, n, line):
    mib = _mib(sink, "model buffer", match["mib"], n)
    if mib is None:
        return
    device = match["device"]
    if _device_kind(device) == "gpu":
        # The weights on the busiest GPU, in GiB as the option takes them.
        gib = mib / 1024
        sink.take("loaded-weights-gib", f"{float(gib):.6f}".rstrip("0").rstrip("."), n, line,
                  f"{device} model buffer {float(mib):.2f} MiB in GiB", keep="max")
        _largest(sink, "model_buffer_mib", mib, n, line)
    else:
        sink.show("cpu_model_buffer_mib", mib, n, line)


@_target_only
def _compute_buffer(match, sink, n, line):
    mib = _mib(sink, "compute buffer", match["mib"], n)
    if mib is None:
        return
    if _device_kind(match["device"]) == "gpu":
        _largest(sink, "compute_buffer_mib", mib, n, line)
    else:
        sink.show("host_compute_buffer_mib", mib, n, line)


@_target_only
def _output_buffer(match, sink, n, line):
    mib = _mib(sink, "output buffer", match["mib"], n)
    if mib is not None:
        sink.show("output_buffer_mib", mib, n, line)


@_target_only
def _offloaded(match, sink, n, line):
    done, of = _count(sink, "offloaded layers", match[1], n, 100_000), _count(sink, "layers", match[2], n, 100_000)
    if done is None or of is None:
        return
    sink.show("offloadable_layers", of, n, line)
    old = sink.reads.get("n-gpu-layers")
    if old is not None and done == of and old.text.isascii() and old.text.isdigit() and int(old.text) >= of:
        return                  # -ngl 99 and "offloaded 41/41": both say every layer
    sink.take("n-gpu-layers", str(done), n, line, f"offloaded {done}/{of} layers")


def _model_file(match, sink, n, line):
    sink.show("model_file", match[1], n, line)


@_target_only
def _gguf_path(match, sink, n, line):
    # llama_model_loader: loaded meta data with 26 key-value pairs and 579 tensors from PATH (version GGUF V3 (latest))
    sink.show("gguf_path", match["path"].strip(), n, line)


# print_info (llama-model.cpp, 2025-) and llm_load_print_meta (before): the shapes the model was
# built with, after the architecture's defaults; per-layer arrays ("[8, 8, ...]") are not read.
_INFO = {"n_layer": "layers", "n_head_kv": "kv-heads", "n_embd_head_k": "head-dim", "n_embd_head_v": "v_head_dim",
         "n_head": "attention-heads", "n_embd": "hidden", "n_ctx_train": "context_train"}


@_target_only
def _print_info(match, sink, n, line):
    key, value = match["key"], match["value"].strip()
    if key == "general.name":
        sink.show("gguf_name", value[:120], n, line)
    elif _PLAIN_INT.fullmatch(value) and not cut(sink, n, line, len(line.rstrip()), key):
        sink.show_once("info_" + _INFO[key], int(value), n, line, key)


# A GGUF's quantization as file names write it, with or without its underscores (iq4xs, Q4_K_M).
_GGUF_QUANT = re.compile(r"(?<=[-_.])(i?q[1-8])(?:_?(k))?(?:_?(xxs|xs|nl|[sml01]))?(?=(?:-\d{5}-of-\d{5})?\.gguf$|$)",
                         re.IGNORECASE | re.A)
_MAX_PARTS = 8          # the underscores of a llama.cpp cache file's name tried as its start


def _names(text: str) -> list[str]:
    """The names a printed model may be a preset by: as printed; a -hf repo's QUANT tag as a
    word of its name; a GGUF quantization with its underscores (iq4xs is IQ4_XS); and a
    llama.cpp cache file's name (USER_REPO_FILE.gguf) or an Org_Model re-release from each
    underscore on, the last folder's whole name first."""
    text = text.strip().strip("'\"")[:300]
    repo, colon, tag = text.partition(":")
    if colon and tag and not any(c in tag for c in "/\\") and not text.startswith(("/", "~")):
        text = f"{repo}-{tag}"      # bartowski/Qwen_Qwen3-14B-GGUF:Q8_0, Ollama's qwen2.5-coder:32b-instruct-q8_0
    folder, slash, last = text.replace("\\", "/").rpartition("/")
    last = _GGUF_QUANT.sub(lambda m: "_".join(p.upper() for p in m.groups() if p), last, count=1)
    names = [f"{folder}{slash}{last}" if slash else last]
    parts = last.split("_", _MAX_PARTS)
    names += ["_".join(parts[i:]) for i in range(1, len(parts))]
    # Ollama's family words run into their version (llama3.1:70b): the preset's Llama-3.1-70B.
    names.append(_FAMILY_VERSION.sub(r"\1-\2", last, count=1))
    return list(dict.fromkeys(n for n in names if n))


_FAMILY_VERSION = re.compile(r"^([A-Za-z]{2,20})(\d)")


def _preset_named(text: str, words: bool):
    """(the name that is a preset, its match) for a printed model, or None. A path or a repo is a
    name (`words` False): words alone ("0.gguf") never make it one."""
    for name in _names(text):
        match = model_match(name)
        if match is not None and (words or match.how in ("id", "variant")):
            return name, match
    return None


def _preset_shape_differs(sink, entry) -> list[str]:
    """Where the shapes llama.cpp printed (GGUF metadata, print_info) differ from the preset's:
    ["n_layer 48, the preset's 40", ...]; empty when every printed one agrees."""
    try:
        model = presets.preset_model(entry["id"])
    except InputError:
        return []
    attention = [layer for layer in model.layers if hasattr(layer, "kv_heads") and hasattr(layer, "head_dim")]
    kv_heads = {layer.kv_heads for layer in attention}
    head_dims = {layer.head_dim for layer in attention}
    v_dims = {layer.v_head_dim or layer.head_dim for layer in attention if hasattr(layer, "v_head_dim")}
    ours = {"layers": {len(model.layers)}, "kv-heads": kv_heads, "head-dim": head_dims, "v_head_dim": v_dims,
            "attention-heads": {model.attention_heads} if model.attention_heads else set(),
            "hidden": {model.hidden_size} if model.hidden_size else set()}
    said = []
    for field, theirs in ours.items():
        for source in ("gguf_", "info_"):
            printed = sink.printed.get(source + field)
            if printed is None or not theirs or printed.value in theirs:
                continue
            what = {v: k for k, v in _INFO.items()}[field] if source == "info_" else \
                f"{sink.printed['gguf_arch'].value if 'gguf_arch' in sink.printed else 'general'}." \
                f"{ {v: k for k, v in _METADATA.items()}[field]}"
            said.append(f"{what} {printed.value} (line {printed.line_number:,}), the preset's "
                        f"{'/'.join(str(v) for v in sorted(theirs))}")
            break
    return said


def _model(sink) -> None:
    """The model the log names, as the path the loader read, -m, -hf, its general.name, or its
    basename and size label, resolved to the preset of identical shape (rules.take_model); a
    preset whose shapes differ from those llama.cpp printed is not taken, and a note says why."""
    printed = sink.printed
    if "model" in sink.reads:
        return
    named = [(printed[k].value, printed[k], False) for k in ("gguf_path", "model_file", "model_repo") if k in printed]
    if "gguf_name" in printed:
        named.append((printed["gguf_name"].value, printed["gguf_name"], True))
    if "gguf_basename" in printed and "gguf_size_label" in printed:
        base = printed["gguf_basename"]
        named.append((f"{base.value}-{printed['gguf_size_label'].value}", base, True))
    if not named:
        return
    # The earliest line first: a paste cut after the command names its model as the whole log does.
    named.sort(key=lambda item: item[1].line_number)
    found = next(((text, figure, hit) for text, figure, words in named
                  for hit in [_preset_named(str(text), words)] if hit is not None), None)
    if found is None:
        text, figure, _ = named[0]
        sink.show("model_path", str(text), figure.line_number, figure.line)
        return                  # take_model's note, and the summary names it
    text, figure, (name, match) = found
    differs = _preset_shape_differs(sink, match.entry)
    if differs:
        sink.notes.append(f"model not read as the preset {match.entry['id']}: {str(text)[:80]!r} names it, but the "
                          f"shapes llama.cpp printed differ ({'; '.join(differs[:3])}); the GGUF's own shapes are "
                          "used where its architecture gives them, else choose the model or paste its config.json")
        sink.show("model_path", str(text), figure.line_number, figure.line)   # the summary names it
        return
    trained = printed.get("info_context_train") or printed.get("gguf_context_train")
    sink.show("model_path", name, figure.line_number, figure.line)
    take_model(sink)
    if trained is not None and "model" in sink.reads:
        model_limit = presets.preset_model(match.entry["id"]).max_context_tokens
        if model_limit and model_limit != trained.value:
            sink.notes.append(f"the GGUF's n_ctx_train is {trained.value:,} (line {trained.line_number:,}), the "
                              f"preset's context limit {model_limit:,}: not a shape of the KV cache, which is the "
                              "preset's")


@_target_only
def _copies(match, sink, n, line):
    sink.show("pipeline_copies", int(match[1]), n, line)


@_target_only
def _assigned(match, sink, n, line):
    # src/llama-model.cpp load_tensors (debug level): "layer %3d assigned to device %s" for every
    # slot, the output layer's (n_layer) last. One dict kept and added to, not copied per line.
    slots = sink.printed["layer_devices"].value if "layer_devices" in sink.printed else {}
    slots.setdefault(int(match["il"]), match["device"])
    sink.show("layer_devices", slots, n, line, keep="last")


@_target_only
def _layer_line(match, sink, n, line):
    # LLamaSharp and debug builds print one line per layer: the highest index + 1 is the count.
    index = int(match[1])
    old = sink.printed.get("highest_layer")
    if old is None or index > old.value:
        sink.show("highest_layer", index, n, line, keep="last")


_MIB = r"(\S+?)\s*MiB"           # the whole word before MiB: "1,234.5" is said, never read as "234.5"
RULES = (
    Rule(re.compile(r"(?:^|\s)(?P<kind>build(?::|\s*=)|version:)\s*(?P<build>\d{1,6})\s*\([0-9a-f]{6,40}\)"), _build, True,
         " ("),
    Rule(re.compile(r"(?:^|[\s*/\\$>`])llama-(?:server|cli|run)(?:\.exe)?\*{0,2}(?P<args>\s+(?:-|\\).*)"), _command, True,
         "llama-"),
    continuation(_flags),
    # Builds before the llama- prefix (mid-2024): ./server and ./main.
    Rule(re.compile(r"(?:^|[\s$>`])\./(?:server|main)(?P<args>\s+-.*)"), _command, True, "./"),
    # ggml_cuda_init's list (CUDA: compute capability; ROCm: gfx), then the model loader's
    # "using device CUDA0 (NAME) - N MiB free", Vulkan's "0 = NAME (driver) | uma" and Metal's.
    Rule(re.compile(r"Device (?P<index>\d{1,3}): (?P<name>[^,]{2,80}), (?:compute capability (?P<cc>\d{1,2}\.\d{1,2})|"
                    r"(?P<gfx>gfx[0-9a-f]{2,6})\b|compute capability|gfx)"), _device, False, "Device "),
    Rule(re.compile(r"using device \w{0,40}?(?P<index>\d{1,3}) \((?P<name>[^()]{2,80})\)(?: \([^()]{0,40}\))?"
                    r"(?: - (?P<free>\d{1,9}) MiB free)?"), _device, False, "using device"),
    Rule(re.compile(r"ggml_vulkan: (?P<index>\d{1,3}) = (?P<name>[^()|]{2,80}?) ?[(|]"), _device, False,
         "ggml_vulkan:"),
    Rule(re.compile(r"ggml_metal_\w{0,40}: (?:found device:|GPU name:)\s{1,40}(?P<name>.{2,80})"), _device, False,
         "ggml_metal"),
    Rule(re.compile(r"ggml_cuda_init: found (\S+) CUDA devices"), _found, True, "ggml_cuda_init"),
    Rule(re.compile(r"llama_model_loader: - kv\s+\d+:\s+(?P<arch>[\w\-]+)\.(?P<key>[\w.]+)\s+\S+\s+=\s+(?P<value>.*)"),
         _metadata, True, "llama_model_loader"),
    Rule(re.compile(_CONTEXT + r":\s+(?P<key>n_seq_max|n_ctx|n_ctx_per_seq|n_ctx_seq|n_batch|n_ubatch|flash_attn)"
                    r"\s+=\s+(?P<value>\S+)"), _context_param, True, " = "),
    Rule(re.compile(r"Flash Attention was auto, set to (enabled|disabled)"), _flash_auto, True, "Flash Attention was"),
    Rule(re.compile(r"kv_size = (?P<size>[^\s,]+), (?:offload = \d, )?type_k = '(?P<k>\w+)', type_v = '(?P<v>\w+)'"
                    r"(?:, n_layer = (?P<layers>[^\s,]+))?"), _kv_init, True, "kv_size ="),
    Rule(re.compile(r"llama_kv_cache\w{0,40}: creating\s{1,40}(non-SWA|SWA) KV cache, size = (\S+) cells"), _cache_kind, True,
         "KV cache, size"),
    Rule(re.compile(r"(?:KV self size|llama_kv_cache\w{0,40}: size)\s{0,40}=\s*(?P<total>[^\s,]+?)\s*MiB"
                    r"(?: \(\s*(?P<cells>\d+) cells,\s*(?P<layers>\d+) layers,\s*(?P<seqs>\d{1,6})(?:/\s{0,3}(?P<streams>\d{1,6}))? seqs\))?"
                    r", K \((?P<k_type>\w+)\):\s*(?P<k_mib>[^\s,]+?)\s*MiB, V \((?P<v_type>\w+)\):\s*"
                    r"(?P<v_mib>[^\s,]+?)\s*MiB"), _kv_size, True, "size"),
    Rule(re.compile(r"(?<![\w\-])(?P<device>" + _DEVICE + r") KV buffer size =\s*" + _MIB.replace("(", "(?P<mib>", 1)), _kv_buffer, True,
         "KV buffer size"),
    Rule(re.compile(r"(?:llm_load_tensors|load_tensors):\s+(?P<device>" + _DEVICE + r") (?:model )?buffer size =\s*"
                    + _MIB.replace("(", "(?P<mib>", 1)), _weights_buffer, True, "buffer size"),
    Rule(re.compile(r"(?<![\w\-])(?P<device>[\w\-]{1,40}) compute buffer size =\s*" + _MIB.replace("(", "(?P<mib>", 1)),
         _compute_buffer, True, "compute buffer size"),
    Rule(re.compile(r"(?<![\w\-])(?P<device>[\w\-]{1,40})\s{1,40}output buffer size =\s*" + _MIB.replace("(", "(?P<mib>", 1)),
         _output_buffer, True, "output buffer size"),
    Rule(re.compile(r"offloaded ([^\s/]+)/([^\s/]+) layers to GPU"), _offloaded, True, "layers to GPU"),
    Rule(re.compile(r"loading draft model '([^']{1,300})'"), _draft_model, True, "loading draft model"),
    Rule(re.compile(r"\binit: initializing slots, n_slots = \d+"), _slots, True, "initializing slots"),
    # llama-server's "srv    load_model: loading model 'path.gguf'" names the file, for the notes.
    Rule(re.compile(r"load_model: loading model '([^']{1,300})'"), _model_file, True, "loading model '"),
    Rule(re.compile(r"pipeline parallelism enabled \(n_copies=(\d{1,3})\)"), _copies, True, "pipeline parallelism"),
    Rule(re.compile(r"llama_kv_cache\w{0,40}: layer\s{1,40}(\d{1,5}):"), _layer_line, True, ": layer"),
    Rule(re.compile(r"load_tensors: layer\s{1,40}(?P<il>\d{1,6}) assigned to device (?P<device>" + _DEVICE + r")"),
         _assigned, True, "assigned to device"),
    Rule(re.compile(r"loaded meta data with \d{1,9} key-value pairs and \d{1,9} tensors from (?P<path>\S.{0,999}?) "
                    r"\(version "), _gguf_path, True, "loaded meta data with"),
    Rule(re.compile(r"(?:print_info|llm_load_print_meta):\s{0,40}(?P<key>n_layer|n_head_kv|n_head|n_embd_head_k|"
                    r"n_embd_head_v|n_embd|n_ctx_train|general\.name)\s{0,40}=\s{0,40}(?P<value>\S.{0,199})"),
         _print_info, True, "print_"),
)

EXPECTED = (("engine-version", "the build (build: / version: N (hash))"),
            ("context", "n_ctx_per_seq (llama_context) or the cache's cells"),
            ("batch", "n_seq_max (llama_context) or the cache's seqs"),
            ("kv-dtype", "the cache types (K (f16) ...)"),
            ("flash-attn", "flash_attn (llama_context)"),
            ("gpus", "the devices holding the KV buffers"))


def complete(sink) -> None:
    """What follows from the lines together: the context per sequence and the sequences, the cache
    types, the GPUs and their preset, the model's shape from a plain architecture's metadata."""
    printed, reads = sink.printed, sink.reads
    for kept, name in (("kv_buffer_map", "kv_buffers"), ("device_map", "device_names")):
        if kept in printed:     # the devices' dicts as (device, value) pairs in order
            sink.show(name, tuple(sorted(printed[kept].value.items())), printed[kept].line_number,
                      printed[kept].line, keep="last")
    _caches(sink)
    if sink.conflicts:
        option, old, new = sink.conflicts[0]
        raise InputError("log", f"holds more than one start-up: {option} is {old.text} at line "
                                f"{old.line_number:,} and {new.text} at line {new.line_number:,}; paste one")
    _types(sink)
    _sequences(sink)
    _gpus(sink)
    _split(sink)
    _model(sink)
    _shape(sink)
    _draft_inputs(sink)
    if printed.get("unified") is not None and printed["unified"].value:
        sink.notes.append("the cache is unified (one stream shared by the sequences, --kv-unified): no input says "
                          "that yet, so figures for its sequences are each sequence's own stream")
    buffers = printed.get("kv_buffers")
    if buffers is not None and any(_device_kind(d) == "cpu" for d, _ in buffers.value):
        sink.notes.append("part of the KV cache is in CPU memory (a CPU KV buffer: -ngl or --no-kv-offload)")
    if "model" not in reads and "layers" not in reads:
        name = printed.get("model_file") or printed.get("model_repo") or printed.get("gguf_name")
        sink.notes.append("model not read: " + (f"{str(name.value)[:80]!r} is a GGUF file, not a preset" if name else
                                                "the lines name no model")
                          + "; choose the model (a plain architecture's llama_model_loader lines give its shape)")


def _draft_inputs(sink) -> None:
    """A speculative draft (-md FILE, -hfd REPO) as the draft-model input when it names a preset,
    with --draft-max as spec-tokens; a GGUF file never is one, so a note says what to choose."""
    printed = sink.printed
    draft = printed.get("draft_repo") or printed.get("draft_file")
    steps = printed.get("draft_max")
    if draft is None:
        return
    entry = model_entry(str(draft.value)) if "draft_repo" in printed else None
    if entry is not None:
        sink.take("draft-model", entry["id"], draft.line_number, draft.line, "-hfd")
        if steps is not None:
            sink.take("spec-tokens", str(steps.value), steps.line_number, steps.line, "--draft-max")
        return
    also = f" (and --draft-max {steps.value}, spec-tokens, which needs the draft)" if steps is not None else ""
    sink.notes.append(f"draft model not read{also}: {str(draft.value)[:80]!r} is a GGUF file, not a preset (a "
                      "local file cannot be one); choose the draft as draft-model or give its config.json as "
                      "draft-hf-config")


def _types(sink) -> None:
    printed = sink.printed
    k, v = printed.get("cache_type_k"), printed.get("cache_type_v")
    for which, figure in (("kv-dtype", k), ("kv-dtype-v", v)):
        if figure is None:
            continue
        name = _TYPES.get(figure.value, figure.value)
        if which == "kv-dtype-v" and k is not None and _TYPES.get(k.value, k.value) == name:
            continue                # -ctv is read only where it differs from -ctk
        sink.take(which, name, figure.line_number, figure.line, f"ggml type {figure.value}")


def _sequences(sink) -> None:
    """Our context is each request's tokens; llama.cpp's n_ctx is every sequence's together (its
    -c), split into n_ctx_per_seq cells per sequence unless the cache is unified."""
    printed, reads = sink.printed, sink.reads
    seqs = printed.get("seqs")
    if "batch" not in reads:
        source = seqs or printed.get("arg_n_parallel")
        if source is not None:
            sink.take("batch", str(source.value), source.line_number, source.line, "sequences (-np)")
    batch = int(reads["batch"].text) if "batch" in reads else None
    per_seq = printed.get("n_ctx_per_seq")
    total = printed.get("n_ctx") or printed.get("kv_size") or printed.get("arg_n_ctx")
    cells = printed.get("kv_tokens")
    unified = printed.get("unified") is not None and printed["unified"].value
    if per_seq is not None and not unified:
        sink.take("context", str(per_seq.value), per_seq.line_number, per_seq.line, "n_ctx_per_seq")
    elif total is not None and not unified:
        # n_ctx (llama_context), kv_size (the cache of older builds) or -c: every sequence's cells.
        source = {"n_ctx": "n_ctx", "kv_size": "kv_size", "arg_n_ctx": "-c"}[total.name]
        how = source if batch == 1 else f"{source} / {batch} sequences" if batch else \
            f"{source}, one sequence (n_seq_max not printed)"
        sink.take("context", str(total.value // (batch or 1)), total.line_number, total.line, how)
    elif cells is not None and seqs is not None and not unified:
        sink.take("context", str(cells.value), cells.line_number, cells.line, "the cache's cells per sequence")
    elif unified and total is not None and batch:
        # One stream of n_ctx cells shared by the sequences: each sequence's share of it, the
        # same cells in all (a sequence may use more of a unified cache; the note says so).
        sink.take("context", str(total.value // batch), total.line_number, total.line,
                  f"n_ctx / {batch} sequences sharing a unified cache")
    elif unified:
        sink.notes.append("context not read: a unified cache's cells are shared by its sequences, and n_ctx is not "
                          "in the paste")


def _gpus(sink) -> None:
    printed = sink.printed
    buffers = printed.get("kv_buffers")
    gpus = [d for d, _ in buffers.value if _device_kind(d) == "gpu"] if buffers is not None else []
    unread = [d for d, mib in buffers.value if mib is None] if buffers is not None else []
    if unread:
        # A buffer whose size is not read still sits on a device: counting the others would be
        # fewer GPUs than the log's.
        sink.notes.append(f"gpus not read: the KV buffer's size on {', '.join(unread)} is not read")
    elif gpus:
        sink.take("gpus", str(len(gpus)), buffers.line_number, buffers.line, f"KV buffers on {', '.join(gpus)}")
    elif "devices_found" in printed and buffers is None:
        found = printed["devices_found"]
        sink.take("gpus", str(found.value), found.line_number, found.line, "CUDA devices found")
    names = printed.get("device_names")
    if names is not None:
        distinct = {name for _, name in names.value}
        if len(distinct) == 1 and next(iter(distinct)).startswith("Apple"):
            # One Apple chip comes with several memory sizes; the name does not say which.
            sink.notes.append(f"gpu not read: {next(iter(distinct))} comes with several memory sizes; choose the preset "
                              "or give gpu-memory-gib")
        elif len(distinct) == 1:
            take_gpu(sink, _device_facts(printed, distinct.pop()), names.line_number, names.line)
        else:
            sink.notes.append(f"gpu not read: the GPUs differ ({', '.join(sorted(distinct))}); choose the one that "
                              "binds")


_DEVICE_INDEX = re.compile(r"([A-Za-z_]{1,40}?)(\d{1,4})")


def _split(sink) -> None:
    """Where no -ts is printed, the split the GPUs' KV buffer lines imply: a layer's cache is the
    whole cache over n_layer (every layer full attention, no sliding cache), so each GPU's buffer
    is a whole number of layers (CUDA0 784.00 + CUDA1 496.00 of 1,280.00 MiB over 80 layers: 49
    and 31); taken as the tensor-split proportions that place them so (src/llama-model.cpp
    load_tensors: a GPU's layer slots, the output layer the last GPU's slot when offloaded), only
    where every buffer is a whole number of layers."""
    printed, reads = sink.printed, sink.reads
    if "tensor-split" in reads:
        return
    if "layer_devices" in printed:
        _split_from_assignments(sink, printed["layer_devices"])
        return
    kept = printed.get("kv_buffer_map")
    if kept is None or "swa_kv_cache_mib" in printed or "swa_cells" in printed:
        return
    buffers = list(kept.value.items())
    gpus = [(device, mib) for device, mib in buffers if _device_kind(device) == "gpu"]
    if len(gpus) < 2 or len(gpus) != len(buffers) or any(mib is None or mib <= 0 for _, mib in gpus):
        return
    # The devices in llama.cpp's order, by their index (CUDA0, CUDA1 ... CUDA10): interleaved lines
    # may come in any order. Devices named without one (an RPC server's address) are not ordered.
    indexed = [(_DEVICE_INDEX.fullmatch(device), device, mib) for device, mib in gpus]
    if any(m is None for m, _, _ in indexed) or len({m[1] for m, _, _ in indexed}) != 1:
        sink.notes.append("tensor-split not read: the devices holding the KV buffers ("
                          + ", ".join(d for d, _ in gpus)[:120] + ") carry no index that orders them")
        return
    gpus = [(device, mib) for _, device, mib in sorted(indexed, key=lambda e: int(e[0][2]))]
    layers = next((printed[k] for k in ("kv_layers", "info_layers", "gguf_layers") if k in printed), None)
    of = printed.get("offloadable_layers")          # "offloaded N/(n_layer + 1) layers to GPU"
    if layers is None and of is None:
        return
    n, total = layers.value if layers is not None else of.value - 1, sum(mib for _, mib in gpus)
    counts = [mib * n / total for _, mib in gpus]
    if any(c.denominator != 1 for c in counts) or sum(counts) != n:
        sink.notes.append("tensor-split not read: the GPUs' KV buffers are not whole layers of the cache")
        return
    ngl = reads.get("n-gpu-layers")
    output = ngl is None or not ngl.text.isdigit() or int(ngl.text) > n
    slots = [int(c) for c in counts]
    if output:
        slots[-1] += 1
    said = ", ".join(f"{device} {float(mib):,.2f} MiB" for device, mib in gpus)
    sink.take("tensor-split", "/".join(map(str, slots)), kept.line_number, kept.line,
              f"implied: {'/'.join(str(int(c)) for c in counts)} layers per GPU from the KV buffer lines ({said}; "
              f"{float(total / n):,.2f} MiB a layer of {n}){', the output layer with the last' if output else ''}")


def _split_from_assignments(sink, figure) -> None:
    """The split the "layer N assigned to device D" lines print: each GPU's slots (the output
    layer's among them), in the order the slots fill the GPUs (load_tensors gives each GPU one run
    of slots, std::upper_bound over the split points), as the tensor-split proportions that place
    them so; CPU slots (-ngl) are on none. Not taken where a GPU's slots are not one run."""
    slots = sorted(figure.value.items())
    indexes = [il for il, _ in slots]
    if indexes != list(range(indexes[0], indexes[0] + len(indexes))):
        sink.notes.append("tensor-split not read: the 'assigned to device' lines skip layers")
        return
    gpu_slots = [(il, device) for il, device in slots if _device_kind(device) == "gpu"]
    runs: list[list] = []
    for il, device in gpu_slots:
        if runs and runs[-1][0] == device:
            runs[-1][1] += 1
        else:
            runs.append([device, 1])
    if len(runs) < 2:
        return
    if len({device for device, _ in runs}) != len(runs):
        sink.notes.append("tensor-split not read: a GPU's layers in the 'assigned to device' lines are not one run")
        return
    said = ", ".join(f"{device} {count}" for device, count in runs)
    sink.take("tensor-split", "/".join(str(count) for _, count in runs), figure.line_number, figure.line,
              f"implied: the layer slots each GPU was assigned ({said} of slots {indexes[0]}-{indexes[-1]}, "
              "the output layer the last slot), from the 'assigned to device' lines")


def _device_facts(printed, name: str) -> Device:
    """The devices' name with what ggml_cuda_init and the loader printed of them: one compute
    capability or gfx target (two differing: none), the most MiB free on one (its floor)."""
    facts = printed["device_facts"].value.values() if "device_facts" in printed else ()
    capabilities = {f["capability"] for f in facts if "capability" in f}
    targets = {f["gfx"] for f in facts if "gfx" in f}
    free = max((f["free_mib"] for f in facts if "free_mib" in f), default=None)
    return Device(name, free_gib=None if free is None else Fraction(free, 1024),
                  capability=capabilities.pop() if len(capabilities) == 1 else None,
                  gfx=targets.pop() if len(targets) == 1 else None)


def _shape(sink) -> None:
    """A plain architecture's metadata is the KV cache's whole shape: the custom model inputs."""
    printed = sink.printed
    arch = printed.get("gguf_arch")
    if arch is None or "model" in sink.reads:
        return
    if arch.value not in _PLAIN_ARCHITECTURES or "gguf_sliding" in printed or "gguf_mla" in printed:
        sink.notes.append(f"model shape not read: llama.cpp's {arch.value} metadata is not every layer full "
                          "attention; choose the model")
        return
    layers, kv_heads, head_dim = (printed.get(k) for k in ("gguf_layers", "gguf_kv-heads", "gguf_head-dim"))
    heads, hidden, value_dim = (printed.get(k) for k in ("gguf_attention-heads", "gguf_hidden", "gguf_v_head_dim"))
    if head_dim is None and hidden is not None and heads is not None and hidden.value % heads.value == 0:
        head_dim = type(hidden)("head_dim", hidden.value // heads.value, hidden.line_number, hidden.line)
    if None in (layers, kv_heads, head_dim):
        sink.notes.append("model shape not read: the metadata lines for block_count, head_count_kv and key_length "
                          "are not all in the paste; choose the model")
        return
    if value_dim is not None and value_dim.value != head_dim.value:
        sink.notes.append("model shape not read: its V heads are not as wide as its K heads; choose the model")
        return
    for option, figure in (("layers", layers), ("kv-heads", kv_heads), ("head-dim", head_dim), ("attention-heads", heads)):
        if figure is not None:
            sink.take(option, str(figure.value), figure.line_number, figure.line, f"GGUF {arch.value} metadata")


# The smallest padding of the cells any build modelled uses (32 without flash attention before
# PR #17046, else 256: allocator.PAD): a cache's cells are a multiple of it.
_CELL_PAD = 32
_HALF_CENT = Fraction(1, 200)        # a MiB figure printed to 2 decimals


def implied(printed: dict, model, values: dict) -> tuple[list, list]:
    """([Read], [notes]) of what this log's figures imply given the model (startup_log.implied asks
    every engine's reader): the context, where no line prints n_ctx (nor -c, kv_size, the cells),
    from the cache's K and V sizes ("KV self size = 144.00 MiB, K (f16): 72.00 MiB, V (f16): 72.00
    MiB"): src/llama-kv-cache.cpp gives every layer ggml_row_size(type_k, n_embd_k_gqa) bytes of K a
    cell and stream, so K over the model's bytes a cell is the cells (allocator.allocate sizes them),
    taken only where one multiple of the padding fits K and V within their 2-decimal rounding, for
    a model whose every layer is in the one cache (no sliding cache); the sequences (-np) as read,
    else one. A context a little under the cells pads to the same cells: the cells are what
    sizes alike."""
    if "context" in values or any(k in printed for k in ("n_ctx", "n_ctx_per_seq", "kv_size", "arg_n_ctx",
                                                         "kv_tokens", "swa_kv_cache_mib", "swa_cells")):
        return [], []
    k_mib, v_mib = printed.get("k_cache_mib"), printed.get("v_cache_mib")
    k_type, v_type = printed.get("cache_type_k"), printed.get("cache_type_v")
    if None in (k_mib, v_mib, k_type, v_type) or k_type.value not in _TYPES or v_type.value not in _TYPES:
        return [], []
    try:
        pool = allocator.allocate(model, precision(_TYPES[k_type.value]), precision(_TYPES[v_type.value]),
                                  allocator.PAD, 1)
    except InputError:
        return [], []
    if len(pool.caches) != 1 or not pool.caches[0].k_bytes or not pool.caches[0].v_bytes:
        return [], []
    k_cell, v_cell = pool.caches[0].k_bytes // allocator.PAD, pool.caches[0].v_bytes // allocator.PAD
    mib = 1 << 20

    def cells_within(figure, per_cell):
        low, high = (figure.value - _HALF_CENT) * mib, (figure.value + _HALF_CENT) * mib
        first = -(-low // (per_cell * _CELL_PAD))
        return {c * _CELL_PAD for c in range(max(1, int(first)), int(high // (per_cell * _CELL_PAD)) + 1)}

    cells = cells_within(k_mib, k_cell) & cells_within(v_mib, v_cell)
    seqs = int(values["batch"]) if str(values.get("batch", "")).isdigit() and int(values["batch"]) > 0 else 1
    if len(cells) != 1:
        return [], [f"context not implied: K {float(k_mib.value):,.2f} MiB (line {k_mib.line_number:,}) is "
                    f"{'no' if not cells else 'more than one'} whole number of cells for this model"]
    n = cells.pop()
    if n % seqs:
        return [], []
    context = n // seqs
    share = f" over {seqs} sequences" if seqs > 1 else " (one sequence: n_seq_max not printed)" \
        if "batch" not in values else ""
    how = (f"implied: K ({k_type.value}) {float(k_mib.value):,.2f} MiB over {k_cell:,} B a cell of this model is "
           f"{n:,} cells{share}")
    return [Read("context", str(context), k_mib.line_number, k_mib.line, how)], [
        f"context {context:,} implied, not printed: the cache's K and V sizes (line {k_mib.line_number:,}) are "
        f"{n:,} cells of this model; a context a little under it pads to the same cells; check it"]
