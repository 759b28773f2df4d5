"""The pieces every engine's reader is made of: a rule (a pattern and what its match means),
the sink its readings go to, and the GPU preset a printed device name is."""

import re
from dataclasses import dataclass, field
from fractions import Fraction

from . import presets
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


def gpu_preset(device: str, total_gib: Fraction | None = None) -> str | None:
    """The GPU preset a device name printed in a log is (NVIDIA_H100_80GB_HBM3, Tesla T4, NVIDIA
    GeForce RTX 4090), by the same matcher as --gpu (presets.gpu: every word of the name is one
    the preset goes by, its aliases in gpus.json); where several presets have its words, the one
    whose memory is nearest the total PyTorch reports; None when no preset is that device (an
    RTX 4090 D, a GH200 480GB) or it is not clear which."""
    if len(device) > 200:
        return None             # no device name is this long: never matched on a part of it
    name = re.sub(r"[\s_]+", " ", device).strip()
    try:
        family = presets.gpu_family(name)
    except InputError:
        return None
    if total_gib is not None and len(family) > 1:
        # The total PyTorch reports is a few GiB under the preset's GB: the nearest is the one,
        # unless another has the same memory (SXM or PCIe): then the name alone decides.
        table = presets.gpus()
        near = sorted(family, key=lambda gpu_id: abs(table[gpu_id].memory_bytes - total_gib * (1 << 30)))
        if table[near[0]].memory_bytes != table[near[1]].memory_bytes:
            return near[0]
    try:
        return presets.gpu(name, device=True).id
    except InputError:
        return None


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
