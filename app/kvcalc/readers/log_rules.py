"""The pieces every engine's reader is made of: a rule (a pattern and what its match means),
the sink its readings go to, and the GPU preset a printed device name is."""

import re
from dataclasses import dataclass, field
from fractions import Fraction

from . import gpu_presets, presets
from ..errors import InputError

@dataclass(frozen=True)
class Read:
    """One input read: its option, its text in the option's syntax, where it came from."""
    option: str
    text: str
    line_number: int
    line: str
    how: str = ""            # words, when the value is derived rather than printed

    def describe(self) -> str:
        how = f" ({self.how})" if self.how else ""
        return f"{self.option} = {self.text}{how}, line {self.line_number:,}: {self.line}"


@dataclass(frozen=True)
class Printed:
    """A figure the log printed, for comparing with what we compute: kv_tokens, max_concurrency..."""
    name: str
    value: object
    line_number: int
    line: str
    text: str = ""          # the figure as the log printed it ("10.65 GiB"), where it is shown so


@dataclass
class Sink:
    """What the rules found so far, for one engine."""
    engine: str
    # (option, text) -> None, or the InputError of the option's own parser: the options are
    # above the engines' readers, so the one who reads the log hands their parser down.
    check: object = None
    reads: dict = field(default_factory=dict)       # option -> Read (the first, unless a rule says)
    printed: dict = field(default_factory=dict)
    conflicts: list = field(default_factory=list)
    rejected: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    restarts: list = field(default_factory=list)
    starts: dict = field(default_factory=dict)      # a start-up line's kind -> where first seen
    signatures: int = 0       # lines only this engine prints
    first_line: int = 0
    # option -> words: what the log printed for an input no value of the option can be (a negative
    # KV memory, a figure covering the weights and more together): read, so not "not in the log".
    covered: dict = field(default_factory=dict)

    def take(self, option: str, text, number: int, line: str, how: str = "", keep: str = "same") -> None:
        """Take an input's value, typed by its option's parser. `keep`: "same" (a second, different
        value is a conflict: two start-ups in one paste), "min" or "max" over the ranks, "first" or
        "last" (a line printed again for another part, a draft model's config)."""
        text = str(text).strip()
        try:
            self.check(option, text)
        except InputError as e:
            self.rejected.append(f"line {number:,}: {option} {_clip(text)!r} not taken ({e.message})")
            return
        read = Read(option, text, number, _clip(line.strip(), 160), how)
        old = self.reads.get(option)
        if old is None or keep == "last":
            self.reads[option] = read
        elif keep == "first":
            return
        elif keep in ("min", "max"):
            # Ranks print their own: vLLM sizes every rank by the least KV memory; the busiest
            # rank's weights and activations are the ones that bind.
            if (Fraction(text) < Fraction(old.text)) == (keep == "min") and Fraction(text) != Fraction(old.text):
                self.reads[option] = read
        elif old.text != text and not _same_number(old.text, text):
            self.conflicts.append((option, old, read))

    def start(self, kind: str, number: int) -> None:
        """A line printed once per start-up (the command, the server's version): seen again, it
        begins another start-up, in whatever order the lines were pasted."""
        if kind in self.starts:
            self.restarts.append((self.starts[kind], number))
        else:
            self.starts[kind] = number

    def show(self, name: str, value, number: int, line: str, keep: str = "first", text: str = "") -> None:
        if name not in self.printed or keep == "last" or (
                keep == "min" and value < self.printed[name].value):
            self.printed[name] = Printed(name, value, number, _clip(line.strip(), 160), text[:80])

    def show_once(self, name: str, value, number: int, line: str, label: str = "") -> None:
        """A figure printed once per start-up (every rank prints the same): a different value on
        another line is another start-up in the same paste, or another model's (a draft's)."""
        old = self.printed.get(name)
        if old is not None and old.value != value:
            said = label or name
            self.conflicts.append((said, Read(said, str(old.value), old.line_number, old.line),
                                   Read(said, str(value), number, line.strip()[:160])))
            return
        self.show(name, value, number, line)

    def empty_pool(self, option: str, printed: str, short, number: int, line: str, refusal: str) -> None:
        """The engine printed a KV cache of nothing: a KV memory of zero or less (`short`: how many
        GiB below zero, a Fraction; None where only a count of 0 was printed). No input is that:
        the reading carries it as "kv_pool_empty" (log_flow.no_cache says the engine does not
        start, by how much, naming the line) and as read, never as not in the log."""
        old = self.printed.get("kv_pool_empty")
        if old is None or (short is not None and old.value[1] is None):
            self.printed["kv_pool_empty"] = Printed("kv_pool_empty", (printed[:80], short, refusal), number,
                                                    _clip(line.strip(), 160), printed[:80])
        kept = self.printed["kv_pool_empty"]
        self.covered[option] = f"line {kept.line_number:,} printed {kept.text!r}: no KV cache"


def _same_number(a: str, b: str) -> bool:
    try:
        return Fraction(a) == Fraction(b)
    except (ValueError, ZeroDivisionError):
        return False


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern
    handle: object              # (match, sink, line number, line) -> None
    signature: bool = False     # a line only this engine prints: it names the engine
    needle: str = ""            # a plain substring the line must hold, tested before the pattern


def number(text: str) -> str:
    """A printed number in the options' syntax: thousands separators dropped."""
    return text.replace(",", "").replace("_", "")


@dataclass(frozen=True)
class Device:
    """What a log printed of the GPU it ran on: the name the driver reports (torch.cuda.
    get_device_name(), llama.cpp's ggml_cuda_init list) and, where the log prints them, the total
    PyTorch reports (vLLM's total_gpu_memory), the memory free as it started (llama.cpp's "N MiB
    free", SGLang's first avail mem: the total is at least that), the CUDA compute capability or
    the ROCm gfx target."""
    name: str
    total_gib: Fraction | None = None
    free_gib: Fraction | None = None
    capability: tuple[int, int] | None = None
    gfx: str | None = None


@dataclass(frozen=True)
class GpuMatch:
    """The GPU preset a log's device is, or None; `candidates` the presets its name fits before
    its facts are checked; `how` words: how the preset was found (a take's), or why none was (a
    note's, beginning "the log's GPU 'X' ...")."""
    device: Device
    preset: str | None
    candidates: tuple[str, ...]
    how: str


# The totals and free memory a log prints are rounded to 0.01 GiB (vLLM's, SGLang's) or to a MiB;
# SGLang's free memory before the weights is two such figures added.
_ROUNDING = Fraction(2, 100)


def _gib(value) -> str:
    return f"{float(value):,.2f} GiB"


def _against(gpu, device: Device) -> str:
    """Why a log's device is not this preset by a fact it printed, or "" when none says so."""
    if device.capability is not None:
        if gpu.platform != "cuda":
            return f"{gpu.id} is no CUDA device (compute capability {device.capability[0]}.{device.capability[1]} printed)"
        if gpu.compute_capability != device.capability:
            return (f"compute capability {device.capability[0]}.{device.capability[1]} printed, "
                    f"{gpu.id}'s is {gpu.compute_capability[0]}.{gpu.compute_capability[1]}")
    if device.gfx is not None:
        if gpu.platform != "rocm":
            return f"{gpu.id} is no ROCm device ({device.gfx} printed)"
        if gpu.gfx_arch != device.gfx:
            return f"{device.gfx} printed, {gpu.id} is {gpu.gfx_arch}"
    # Neither PyTorch's total nor the memory free can be more than the card holds.
    holds = Fraction(max(gpu.memory_bytes, gpu.torch_memory_bytes or 0), 1 << 30) + _ROUNDING
    if device.total_gib is not None and device.total_gib > holds:
        return f"a total of {_gib(device.total_gib)} printed, more than {gpu.id}'s {_gib(holds - _ROUNDING)}"
    if device.free_gib is not None and device.free_gib > holds:
        return f"{_gib(device.free_gib)} free printed, more than {gpu.id}'s {_gib(holds - _ROUNDING)}"
    return ""


def match_gpu(device: Device) -> GpuMatch:
    """The GPU preset a log's device is. Its name is matched first against every preset's
    device_name (data/gpus.json, as the driver reports it; case, spaces and underscores aside),
    then, when none states it, by the matcher of --gpu (every word of the name one the preset goes
    by; an alias only one preset has is that preset). The facts the log printed rule presets out
    (another compute capability or gfx target, less memory than the log's total or free memory);
    of several left, the one whose memory is nearest the printed total, when no other has the same
    memory (SXM or PCIe: the total cannot tell them), else the one the name is an alias of. Still
    several, or none: no preset, said with the presets it fits or why none is."""
    name = device.name.strip()
    shown = repr(_clip(name, 80))
    if len(name) > 200 or not name:
        return GpuMatch(device, None, (), f"the log's GPU {shown} is no preset")
    preferred = None
    candidates = gpu_presets.gpus_by_device(name)
    if not candidates:
        words = re.sub(r"[\s_]+", " ", name)
        try:
            candidates = gpu_presets.gpu_family(words)
        except InputError:
            candidates = ()
        try:
            preferred = gpu_presets.gpu(words, device=True).id
        except InputError:
            preferred = None
        if preferred is not None and preferred not in candidates:
            candidates += (preferred,)
    if not candidates:
        return GpuMatch(device, None, (), f"the log's GPU {shown} is no preset")
    table = gpu_presets.gpus()
    kept, against = [], []
    for gpu_id in candidates:
        why = _against(table[gpu_id], device)
        (against if why else kept).append(why or gpu_id)
    if not kept:
        return GpuMatch(device, None, candidates, f"the log's GPU {shown} is no preset: " + "; ".join(against[:3]))
    how = f"the preset {name} is"
    if len(kept) > 1 and device.total_gib is not None:
        total = device.total_gib * (1 << 30)
        near = sorted(kept, key=lambda gpu_id: abs(table[gpu_id].memory_bytes - total))
        if table[near[0]].memory_bytes != table[near[1]].memory_bytes:
            return GpuMatch(device, near[0], candidates,
                            f"{how}, of {', '.join(kept)} the one whose memory is nearest its {_gib(device.total_gib)}")
        kept = [gpu_id for gpu_id in kept if table[gpu_id].memory_bytes == table[near[0]].memory_bytes]
    if len(kept) > 1 and preferred in kept:
        kept = [preferred]
    if len(kept) == 1:
        if against:
            how += f", of {', '.join(candidates)} the one the facts it printed allow ({against[0]})"
        return GpuMatch(device, kept[0], candidates, how)
    untold = "" if device.total_gib is not None else " (the log prints no total memory to tell them apart)"
    return GpuMatch(device, None, candidates, f"the log's GPU {shown} fits {len(kept)} presets, "
                                              f"{', '.join(kept)}{untold}")


def gpu_preset(device: str, total_gib: Fraction | None = None) -> str | None:
    """The GPU preset id a printed device name is (match_gpu), given PyTorch's total if printed."""
    return match_gpu(Device(device, total_gib)).preset


def take_gpu(sink, device: Device, number: int, line: str) -> GpuMatch:
    """The log's GPU taken as the preset it is, or a note saying why none is (several fit, none
    does, a printed fact rules it out); kept as printed "gpu_device" for who words the summary."""
    match = match_gpu(device)
    sink.show("gpu_device", match, number, line)
    if match.preset is not None:
        sink.take("gpu", match.preset, number, line, match.how)
    else:
        sink.notes.append(f"gpu not read: {match.how}; choose the one its server ran")
    return match


def unread_gpu(printed: dict) -> str | None:
    """Where a log named its GPU but no one preset is it: "the log's GPU 'X' is no preset" (or
    fits several), for the summary that says which GPU the memory checks use instead."""
    seen = printed.get("gpu_device")
    if seen is None or seen.value.preset is not None:
        return None
    return seen.value.how


def capability(text: str) -> tuple[int, int] | None:
    """A printed compute capability ("8.6") as (major, minor)."""
    match = re.fullmatch(r"(\d{1,2})\.(\d{1,2})", text.strip())
    return (int(match[1]), int(match[2])) if match else None


def command_words(sink, args: str, n: int, line: str) -> tuple[list[str], bool]:
    """A launch command's words, and whether it goes on on the next line: a command typed over
    several lines ends each but the last in "\\" (`continues_here` then reads the next)."""
    words = args.split()
    continues = bool(words) and words[-1] == "\\"
    if continues:
        words.pop()
        sink.show("command_continues", n, n, line, keep="last")
    return words, continues


def continues_here(sink, n: int) -> bool:
    """Whether line n goes on the command the line before it began."""
    before = sink.printed.get("command_continues")
    return before is not None and before.value == n - 1


def continuation(flags) -> "Rule":
    """The rule for a launch command's next line ("    --tp 4 \\"), read by `flags(sink, line,
    n, line)` only right after a line that went on."""
    def handle(match, sink, n, line):
        if continues_here(sink, n):
            flags(sink, line, n, line)
    return Rule(re.compile(r"^\s*--?[a-z]"), handle, False, "-")


def take_model(sink) -> None:
    """The model the log's path names ("model_path"), when it is a preset's; else a note."""
    path = sink.printed.get("model_path")
    if path is None:
        return
    match = model_match(path.value)
    if match is not None:
        entry = match.entry
        if entry["id"].lower() == path.value.strip().lower():
            how = ""
        elif match.weights_differ:
            # The path itself is taken: it sizes as the preset's shapes with the weights unknown
            # (presets.preset_model), where the preset's id would size the preset's weights.
            sink.take("model", path.value.strip(), path.line_number, path.line,
                      f"the preset of identical shape, {entry['id']}; its weights are {match.weights_words()}, "
                      "not the preset's: their size is the log's, or as given")
            return
        else:
            how = f"the preset of identical shape its path {_clip(path.value, 80)!r} names"
            if match.release:
                how += f"; {match.release} is a release of its own, whose context limit may differ"
        sink.take("model", entry["id"], path.line_number, path.line, how)
    else:
        sink.notes.append(f"model not read: {path.value[:80]!r} is not a preset's Hugging Face id; choose the model "
                          "or paste its config.json")


def model_match(path: str):
    """How a model path printed in a log is a preset (presets.resolve_model: its id, a variant
    of one -Instruct, -AWQ, -FP8, a local copy's folder), or None when no one preset is it."""
    try:
        return presets.resolve_model(path)
    except InputError:
        return None


def model_entry(path: str):
    """The preset a model path names: its id, a variant of it (-Instruct, a dated release, a
    quantized re-release of the same shape), or a local copy's folder; None when no one preset
    is it."""
    match = model_match(path)
    return None if match is None else match.entry
