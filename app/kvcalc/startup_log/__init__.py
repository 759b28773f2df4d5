"""A pasted start-up log becomes the inputs it implies: the engine and its release, the layout,
the memory it measured and the KV cache it allocated, each with the line it was read from.

Each engine has one module (vllm, sglang, llamacpp) with a tuple of `Rule`s: a pattern searched
anywhere in a line (so ANSI colours, timestamps and the `(VllmWorker TP1 pid=...)` prefixes of
interleaved workers do not matter) and a function turning its match into readings. The reader
takes the text in slices (`LogReader.feed`), so the page can read a long log without blocking;
`read_log` reads it at once. Every value is typed by its option's own parser before it is taken:
a number a line was built to break (NaN, 1e999) is said, never used.
"""

import re
from dataclasses import dataclass, field
from fractions import Fraction

from ..errors import InputError

MAX_LOG_CHARS = 16 << 20      # a start-up is a few hundred lines; a server's whole day is not needed
MAX_LINE_CHARS = 1 << 16      # a config line with a long --hf-overrides is a few thousand
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Options whose values set the measured deployment, and the measured figures (per GPU, GiB).
MEASURED_PARTS = ("loaded-weights-gib", "activation-gib", "non-torch-gib", "cudagraph-gib")
# Figures printed once the cache is allocated: a start-up line after them begins another.
FIGURES = frozenset({"kv_memory_gib", "kv_tokens", "gpu_blocks", "max_concurrency", "refusal"})


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


@dataclass(frozen=True)
class Reading:
    engine: str
    values: dict             # option -> text, what the form and the link take
    read: tuple              # Read, in line order
    printed: dict            # name -> Printed
    not_read: tuple          # inputs the log does not give, in words
    notes: tuple = ()

    def summary(self) -> str:
        return (f"{len(self.read)} inputs read from a {self.engine} log"
                + (f"; not in it: {', '.join(self.not_read)}" if self.not_read else ""))


@dataclass
class Sink:
    """What the rules found so far, for one engine."""
    engine: str
    reads: dict = field(default_factory=dict)       # option -> Read (the first, unless a rule says)
    printed: dict = field(default_factory=dict)
    conflicts: list = field(default_factory=list)
    rejected: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    restarts: list = field(default_factory=list)
    signatures: int = 0       # lines only this engine prints
    first_line: int = 0

    def take(self, option: str, text, number: int, line: str, how: str = "", keep: str = "same") -> None:
        """Take an input's value, typed by its option's parser. `keep`: "same" (a second, different
        value is a conflict: two start-ups in one paste), "min" or "max" over the ranks, "first" or
        "last" (a line printed again for another part, a draft model's config)."""
        from ..options import OPTION_BY_NAME, parse_value
        text = str(text).strip()
        try:
            parse_value(OPTION_BY_NAME[option], text)
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

    def start(self, number: int, line: str) -> None:
        """A line printed once per start-up (the command, the server's version): after the cache
        was allocated, it begins another start-up."""
        figures = [p for p in self.printed.values() if p.name in FIGURES]
        if figures:
            self.restarts.append((min(p.line_number for p in figures), number))

    def show(self, name: str, value, number: int, line: str, keep: str = "first") -> None:
        if name not in self.printed or keep == "last" or (
                keep == "min" and value < self.printed[name].value):
            self.printed[name] = Printed(name, value, number, _clip(line.strip(), 160))


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


def _modules():
    from . import llamacpp, sglang, vllm
    return (vllm, sglang, llamacpp)


class LogReader:
    """Reads a log in slices: `feed` each piece of text as it comes, then `finish`."""

    def __init__(self, engine: str | None = None):
        self.expected = engine
        self.sinks = {m.NAME: Sink(m.NAME) for m in _modules()}
        self.rules = [(m.NAME, rule) for m in _modules() for rule in m.RULES]
        self.chars = 0
        self.line_number = 0
        self._tail = ""

    def feed(self, text: str) -> None:
        self.chars += len(text)
        if self.chars > MAX_LOG_CHARS:
            raise InputError("log", f"is longer than {MAX_LOG_CHARS >> 20} MiB; paste the start-up, its first "
                                    "few thousand lines")
        lines = (self._tail + text).split("\n")
        self._tail = lines.pop()
        for line in lines:
            self._line(line)

    def _line(self, raw: str) -> None:
        self.line_number += 1
        if len(raw) > MAX_LINE_CHARS:
            raw = raw[:MAX_LINE_CHARS]
        line = _ANSI.sub("", raw.replace("\r", "")) if "\x1b" in raw or "\r" in raw else raw
        for engine, rule in self.rules:
            if rule.needle and rule.needle not in line:
                continue
            match = rule.pattern.search(line)
            if match is None:
                continue
            sink = self.sinks[engine]
            if rule.signature:
                sink.signatures += 1
                sink.first_line = sink.first_line or self.line_number
            rule.handle(match, sink, self.line_number, line)

    def finish(self) -> Reading:
        if self._tail:
            self._line(self._tail)
            self._tail = ""
        found = [s for s in self.sinks.values() if s.signatures]
        if not found:
            raise InputError("log", "is not a start-up log of vLLM, SGLang or llama.cpp: none of the lines they "
                                    "print at start-up is in it")
        if len(found) > 1:
            where = ", ".join(f"{_title(s.engine)} from line {s.first_line:,}" for s in found)
            raise InputError("log", f"holds the logs of more than one engine ({where}); paste one")
        sink = found[0]
        if self.expected and sink.engine != self.expected:
            raise InputError("log", f"is {_title(sink.engine)}'s, not {_title(self.expected)}'s, the engine chosen; "
                                    f"choose {sink.engine} or paste {_title(self.expected)}'s log")
        if sink.restarts:
            figure, again = sink.restarts[0]
            raise InputError("log", f"holds more than one start-up: its cache was allocated by line {figure:,} and "
                                    f"another start-up begins at line {again:,}; paste one")
        if sink.conflicts:
            option, old, new = sink.conflicts[0]
            raise InputError("log", f"holds more than one start-up: {option} is {old.text} at line "
                                    f"{old.line_number:,} and {new.text} at line {new.line_number:,}; paste one")
        module = next(m for m in _modules() if m.NAME == sink.engine)
        module.complete(sink)
        return _reading(module, sink)


def _title(name: str) -> str:
    from .. import engines
    return engines.title(name)


# The inputs a measured figure depends on: carried in `measured-with`, so a what-if knows what
# the log measured and can re-estimate only what the edit changes.
NOT_MEASURED_WITH = frozenset(MEASURED_PARTS) | {"kv-memory-gib", "measured-with"}


def _reading(module, sink: Sink) -> Reading:
    reads = sorted(sink.reads.values(), key=lambda r: r.line_number)
    values = {"engine": module.NAME, **{r.option: r.text for r in reads}}
    if any(part in values for part in MEASURED_PARTS) or "kv-memory-gib" in values:
        values["measured-with"] = measured_with(values)
    notes = list(sink.notes) + list(sink.rejected)
    not_read = tuple(words for option, words in module.EXPECTED if option not in values)
    return Reading(module.NAME, values, tuple(reads), dict(sink.printed), not_read, tuple(notes))


def measured_with(values: dict) -> str:
    """The inputs of the measured deployment, as `measured-with` carries them: name:value pairs."""
    return ",".join(f"{name}:{text}" for name, text in values.items()
                    if name not in NOT_MEASURED_WITH and name != "hf-config")


def read_log(text: str, engine: str | None = None) -> Reading:
    """The inputs a whole log implies (the CLI's --from-log); the page feeds it in slices."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("log", "is empty: paste the lines the engine printed when it started")
    reader = LogReader(engine)
    step = 1 << 20
    for start in range(0, len(text), step):
        reader.feed(text[start:start + step])
    return reader.finish()


def number(text: str) -> str:
    """A printed number in the options' syntax: thousands separators dropped."""
    return text.replace(",", "").replace("_", "")


def gpu_preset(device: str, total_gib: Fraction | None = None) -> str | None:
    """The GPU preset a device name printed in a log is (NVIDIA_H100_80GB_HBM3, Tesla T4, NVIDIA
    GeForce RTX 4090), or None when no preset is that device or it is not clear which."""
    from .. import presets
    name = " " + re.sub(r"[\s_\-]+", " ", device.upper()) + " "
    sized = re.search(r" (\d+) ?GB ", name)
    matches = []
    for gpu in presets.gpus().values():
        words = gpu.id.split("-")
        memory = int(words.pop()[:-2]) if words[-1].endswith("gb") else None
        variant = words.pop() if len(words) > 1 and words[-1] in ("sxm", "pcie", "nvl", "server") else None
        chip = " ".join(words).upper()
        if f" {chip} " not in name or (" TI " in name and " TI " not in f" {chip} "):
            continue
        if variant in ("pcie", "nvl", "server") and f" {variant.upper()} " not in name:
            continue
        if variant in ("sxm", None) and any(f" {v} " in name for v in ("PCIE", "NVL", "SERVER")):
            continue
        if sized and memory is not None and int(sized[1]) != memory:
            continue
        matches.append((gpu, memory))
    if total_gib is not None and len(matches) > 1:
        # The total PyTorch reports is a few GiB under the preset's GB: the nearest is the one.
        matches.sort(key=lambda m: abs(m[0].memory_bytes - total_gib * (1 << 30)))
        return matches[0][0].id
    return matches[0][0].id if len(matches) == 1 else None
