"""A pasted start-up log becomes the inputs it implies: the engine and its release, the layout,
the memory it measured and the KV cache it allocated, each with the line it was read from.

Each engine has one log reader (its LOG_READER, engines/<engine>/log.py, which the registry hands
out: engines.log_readers()) with a tuple of `Rule`s: a pattern searched
anywhere in a line (so ANSI colours, timestamps and the `(VllmWorker TP1 pid=...)` prefixes of
interleaved workers do not matter) and a function turning its match into readings. The reader
takes the text in slices (`LogReader.feed`), so the page can read a long log without blocking;
`read_log` reads it at once. Every value is typed by its option's own parser before it is taken:
a number a line was built to break (NaN, 1e999) is said, never used.
"""

import re
from dataclasses import dataclass, replace
from fractions import Fraction

from .. import engines
from ..errors import InputError
from .options import MODEL_INPUTS, OPTION_BY_NAME, OPTIONS, parse_options, parse_value
from .scenario import build_scenario
from ..readers.log_rules import Read, Sink
from ..sizing import compute
from ..units import GIB

MAX_LOG_CHARS = 16 << 20      # a start-up is a few hundred lines; a server's whole day is not needed
MAX_LINE_CHARS = 1 << 16      # a config line with a long --hf-overrides is a few thousand
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Options whose values set the measured deployment, and the measured figures (per GPU, GiB).
MEASURED_PARTS = ("loaded-weights-gib", "activation-gib", "non-torch-gib", "cudagraph-gib")


@dataclass(frozen=True)
class Reading:
    engine: str
    values: dict             # option -> text, what the form and the link take
    read: tuple              # Read, in line order
    printed: dict            # name -> Printed
    not_read: tuple          # inputs the log does not give, in words
    notes: tuple = ()

    def summary(self) -> str:
        return (f"{len(self.read)} inputs read from a {engines.title(self.engine)} log"
                + (f"; not in it: {', '.join(self.not_read)}" if self.not_read else ""))


def _check(option: str, text: str) -> None:
    """A value read from a log is taken only as its option would take it typed."""
    parse_value(OPTION_BY_NAME[option], text)


def _modules():
    """The registered engines' log readers (the registry loads them on this first ask)."""
    return engines.log_readers()


class LogReader:
    """Reads a log in slices: `feed` each piece of text as it comes, then `finish`."""

    def __init__(self, engine: str | None = None):
        self.expected = engine
        readers = _modules()
        self.sinks = {m.NAME: Sink(m.NAME, _check) for m in readers}
        self.rules = [(m.NAME, rule) for m in readers for rule in m.RULES]
        self.chars = 0
        self.line_number = 0
        self._tail = ""
        # The reader's own slicing: how many pieces it was fed, and the most characters one feed
        # read (its text and the line an earlier piece left open, at most MAX_LINE_CHARS + 1).
        self.feeds = 0
        self.largest_feed = 0

    @staticmethod
    def check_length(chars: int) -> None:
        """Refuse a text too long to read before reading any of it (the page knows its length)."""
        if chars > MAX_LOG_CHARS:
            raise InputError("log", f"is longer than {MAX_LOG_CHARS >> 20} MiB; paste the start-up, its first "
                                    "few thousand lines")

    def feed(self, text: str) -> None:
        self.chars += len(text)
        self.check_length(self.chars)
        self.feeds += 1
        self.largest_feed = max(self.largest_feed, len(self._tail) + len(text))
        lines = (self._tail + text).split("\n")
        # A line is read up to MAX_LINE_CHARS: an open line keeps no more than that (and one more,
        # to know it runs on), so a line of 16 MB without a line end is carried, not copied again
        # and again with every piece.
        self._tail = lines.pop()[:MAX_LINE_CHARS + 1]
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
            # The paste ends without a line end: its last line may be cut mid-value. A reader can
            # leave a number that ends that line unread (`sink.cut_line`, sglang and llamacpp).
            for sink in self.sinks.values():
                sink.cut_line = self.line_number + 1
            self._line(self._tail)
            self._tail = ""
        found = [s for s in self.sinks.values() if s.signatures]
        if not found:
            titles = [_title(name) for name in self.sinks]
            raise InputError("log", f"is not a start-up log of {_either(titles)}: none of the lines they "
                                    "print at start-up is in it")
        if len(found) > 1:
            where = ", ".join(f"{_title(s.engine)} from line {s.first_line:,}" for s in found)
            raise InputError("log", f"holds the logs of more than one engine ({where}); paste one")
        sink = found[0]
        if self.expected and sink.engine != self.expected:
            raise InputError("log", f"is {_title(sink.engine)}'s, not {_title(self.expected)}'s, the engine chosen; "
                                    f"choose {sink.engine} or paste {_title(self.expected)}'s log")
        if sink.restarts:
            first, again = sink.restarts[0]
            raise InputError("log", f"holds more than one start-up: lines {first:,} and {again:,} each begin one; "
                                    "paste one")
        if sink.conflicts:
            option, old, new = sink.conflicts[0]
            raise InputError("log", f"holds more than one start-up: {option} is {old.text} at line "
                                    f"{old.line_number:,} and {new.text} at line {new.line_number:,}; paste one")
        module = next(m for m in _modules() if m.NAME == sink.engine)
        module.complete(sink)
        reading = _reading(module, sink)
        # A log that names its model: what its figures imply is read now (implied()); one that
        # does not waits for the model the user chooses.
        return implied(reading, reading.values)


def _title(name: str) -> str:
    return engines.title(name)


def _either(titles: list) -> str:
    """"vLLM, SGLang or llama.cpp"."""
    return titles[0] if len(titles) == 1 else ", ".join(titles[:-1]) + " or " + titles[-1]


# The inputs a measured figure depends on: carried in `measured-with`, so a what-if knows what
# the log measured and can re-estimate only what the edit changes.
NOT_MEASURED_WITH = frozenset(MEASURED_PARTS) | {"kv-memory-gib", "measured-with"}


def _reading(module, sink: Sink) -> Reading:
    reads = sorted(sink.reads.values(), key=lambda r: r.line_number)
    values = {"engine": module.NAME, **{r.option: r.text for r in reads}}
    if any(part in values for part in MEASURED_PARTS) or "kv-memory-gib" in values:
        values["measured-with"] = measured_with(values)
    covered = [words for option, words in sink.covered.items() if option not in values]
    notes = covered + _first(sink.notes, "notes") + _first(sink.rejected, "values not taken")
    not_read = tuple(words for option, words in module.EXPECTED if option not in values and option not in sink.covered)
    return Reading(module.NAME, values, tuple(reads), dict(sink.printed), not_read, tuple(notes))


MAX_NOTES = 20


def _first(notes: list, what: str) -> list:
    """The first MAX_NOTES of a reader's notes, and how many more: a log built to repeat a bad line
    gets a few lines said, not one a line."""
    seen = list(dict.fromkeys(notes))
    if len(seen) <= MAX_NOTES:
        return seen
    return seen[:MAX_NOTES] + [f"and {len(seen) - MAX_NOTES:,} more {what} like these"]


def measured_with(values: dict) -> str:
    """The inputs of the measured deployment, as `measured-with` carries them: name:value pairs,
    in the options' order, so a log gives one link however its lines were ordered."""
    return ",".join(f"{o.name}:{values[o.name]}" for o in OPTIONS
                    if o.name in values and o.name not in NOT_MEASURED_WITH and o.kind in ("int", "decimal", "text",
                                                                                          "count"))


def read_log(text: str, engine: str | None = None) -> Reading:
    """The inputs a whole log implies (the CLI's --from-log); the page feeds it in slices."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("log", "is empty: paste the lines the engine printed when it started")
    LogReader.check_length(len(text))
    reader = LogReader(engine)
    step = 1 << 20
    for start in range(0, len(text), step):
        reader.feed(text[start:start + step])
    return reader.finish()


# The figures a log prints that the engine's answer gives too: (label, printed name, how ours is read).
COMPARED = (("KV cache tokens", "kv_tokens", "kv_tokens"),
            ("Maximum concurrency", "max_concurrency", "max_concurrency"),
            ("KV memory per GPU", "kv_memory_gib", "kv_budget_bytes_per_gpu"))


def comparison(reading: Reading, evaluation) -> list[tuple[str, str, str, int]]:
    """(label, what the log printed, what the inputs on screen give, the log's line) for each
    figure both have: equal while the inputs are the log's, a what-if's answer after an edit."""
    engine = evaluation.engine if evaluation is not None and evaluation.ok else None
    rows = []
    for label, name, ours_name in COMPARED:
        printed = reading.printed.get(name)
        if printed is None:
            continue
        ours = getattr(engine, ours_name, None) if engine is not None and engine.engine == reading.engine else None
        rows.append((label, printed.text or _figure(name, printed.value), "-" if ours is None else _figure(name, ours, computed=True),
                     printed.line_number))
    return rows


def _figure(name: str, value, computed: bool = False) -> str:
    if name == "kv_memory_gib":
        gib = value / (1 << 30) if computed else value
        return f"{float(gib):,.2f} GiB"
    if name == "max_concurrency":
        return f"{float(value):,.2f}x"
    return f"{int(value):,}"


def log_lines(reading: Reading, evaluation) -> list[str]:
    """What was read from which line, what was not, and the log's figures beside ours, as the
    CLI prints them to standard error."""
    lines = [f"read from the {_title(reading.engine)} log:"]
    lines += [f"  {r.option} = {r.text}" + (f" ({r.how})" if r.how else "") + f", line {r.line_number:,}"
              for r in reading.read]
    if reading.not_read:
        lines.append("not in the log: " + "; ".join(reading.not_read))
    lines += [f"note: {note}" for note in reading.notes]
    for label, printed, ours, line_number in comparison(reading, evaluation):
        lines.append(f"{label}: the log printed {printed} (line {line_number:,}); sized here {ours}")
    return lines


# What a log's figures settle where its lines leave an input unsaid (implied()): the layouts and
# KV dtypes tried, each sized by the engine's own rules with the log's KV memory.
IMPLIED_TP = (1, 2, 4, 8, 16)
IMPLIED_KV = (None, "fp8")          # the model's dtype, or one byte (fp8 and fp8_e5m2 alike in size)
PRINTED_HALF = Fraction(1, 200)     # a concurrency printed to 2 decimals


def implied(reading: Reading, values: dict) -> Reading:
    """The reading with what its printed figures imply, given the model in `values` (the log's
    own, or the one the user chose over a log that names none): the tensor-parallel size and the
    KV cache's dtype where no line printed them.

    A log that prints its KV memory ("Available KV cache memory", SGLang's K and V sizes) and what
    the engine made of it (vLLM's "GPU KV cache size: N tokens" and "Maximum concurrency", V0's
    "# CUDA blocks" x the block size, SGLang's #tokens) prints the bytes one token takes on one
    GPU: a model's heads split over tp (vllm/v1/core/kv_cache_utils.py get_kv_cache_config: the
    blocks are the memory over each worker's page; 0.6-0.28 alike), in the dtype the cache is
    stored in. Where the inputs as read do not give the printed figures, every tp of IMPLIED_TP
    (from the least the worker names allow) and every dtype of IMPLIED_KV is sized by the engine's
    own rules; an input every fitting candidate agrees on is taken, naming the lines it comes
    from. Where none fits, or they disagree (a 1-byte cache at tp 1 holds what a 2-byte one does
    at tp 2 where the heads allow both), nothing is taken and the layout stays as read (the
    summary's "assumed tp 1"). An input the user set (a value other than the log's) is theirs."""
    reading = _engine_implied(reading, values)
    values = {**values, **{k: v for k, v in reading.values.items() if k not in values}}
    printed = reading.printed
    figures = [printed[name] for name in ("kv_tokens", "max_concurrency") if name in printed]
    memory = printed.get("kv_memory_gib")
    if not figures or memory is None or "kv-memory-gib" not in values or \
            not any(name in values for name in MODEL_INPUTS) or values.get("engine") != reading.engine:
        return reading
    if _fits(reading, values)[0] is not False:
        return reading                      # the inputs as read give the log's figures (or cannot be sized)
    unknown = _unknown(reading, values)
    if not unknown:
        return reading
    names = list(unknown)
    found, weighed = [], []
    logged = reading.values.get("loaded-weights-gib")
    for combination in _combinations([unknown[name] for name in names]):
        changes = dict(zip(names, combination))
        fits, weights = _fits(reading, _with(reading, values, changes))
        if fits:
            found.append(changes)
            # The weights one GPU loaded ("Model loading took"), where the log printed them, tell
            # the layouts apart that the KV figures leave open (a 1-byte cache at tp 1 holds what
            # a 2-byte one does at tp 2): the model's weights split over tp, within 8% (a
            # checkpoint's own quantization aside, they are the preset's).
            if logged is not None and weights and abs(Fraction(logged) * GIB - weights) <= Fraction(8, 100) * weights:
                weighed.append(changes)
    if weighed and len(weighed) < len(found):
        found = weighed
    taken = {}
    for name in names:
        settled = {changes[name] for changes in found}
        if len(settled) == 1 and None not in settled:
            taken[name] = settled.pop()
    if not taken:
        return reading
    model = values.get("model") or "the model's config"
    where = (f"{memory.text or f'{float(memory.value):,.2f} GiB'} of KV memory (line {memory.line_number:,}) holds "
             + " and ".join(f"{f.text or _shown(f)} (line {f.line_number:,})" for f in figures))
    reads, notes = list(reading.read), list(reading.notes)
    anchor = figures[0]
    for name, value in taken.items():
        text = str(value)
        tried = ", ".join(str(v) for v in unknown[name] if v is not None) if name == "tp" else "2 or 1 bytes"
        how = f"implied: {where} for {model} only at {name} {text} (of {tried} tried)"
        reads = [r for r in reads if r.option != name]        # a lower bound read (tp "at least") gives way
        reads.append(Read(name, text, anchor.line_number, anchor.line, how))
        notes.append(f"{name} {text} implied, not printed: {where} for {model} only at {name} {text}; check it")
    new_values = _with(reading, dict(reading.values), taken)
    if "tp" in taken:
        reads = [r for r in reads if r.option != "gpus"]
        reads.append(Read("gpus", new_values["gpus"], anchor.line_number, anchor.line, "tp x pp x dp"))
        notes = [note for note in notes if not note.startswith("tp not read") and "from the worker names" not in note]
    module = next(m for m in _modules() if m.NAME == reading.engine)
    now_read = {words for option, words in module.EXPECTED if option in new_values}
    not_read = tuple(words for words in reading.not_read if words not in now_read)
    return replace(reading, values=new_values, read=tuple(sorted(reads, key=lambda r: r.line_number)),
                   not_read=not_read, notes=tuple(notes))


def _engine_implied(reading: Reading, values: dict) -> Reading:
    """What the engine's own reader says its figures imply given the model (its log module's
    implied(printed, model, values) -> ([Read], [notes]), e.g. llama.cpp's context from its K and
    V sizes), where the model is given; an input the user set stays theirs."""
    module = next((m for m in _modules() if m.NAME == reading.engine), None)
    hook = getattr(module, "implied", None)
    if hook is None or values.get("engine") != reading.engine or not any(n in values for n in MODEL_INPUTS):
        return reading
    parsed, errors = parse_options(values)
    if errors:
        return reading
    try:
        model = build_scenario(parsed).model
    except (InputError, ArithmeticError, ValueError):
        return reading
    reads, notes = hook(reading.printed, model, values)
    reads = [r for r in reads if r.option not in values]
    if not reads and not notes:
        return reading
    new_values = {**reading.values, **{r.option: r.text for r in reads}}
    now_read = {words for option, words in module.EXPECTED if option in new_values}
    return replace(reading, values=new_values, read=tuple(sorted((*reading.read, *reads), key=lambda r: r.line_number)),
                   not_read=tuple(w for w in reading.not_read if w not in now_read),
                   notes=tuple(dict.fromkeys((*reading.notes, *notes))))


def _shown(figure) -> str:
    if figure.name == "max_concurrency":
        return f"a concurrency of {float(figure.value):,.2f}x"
    return f"{int(figure.value):,} tokens"


def _unknown(reading: Reading, values: dict) -> dict:
    """option -> the candidates tried, for each input the log leaves unsaid and the user left too."""
    unknown = {}
    tp = next((r for r in reading.read if r.option == "tp"), None)
    if values.get("tp") == reading.values.get("tp") and values.get("gpus") == reading.values.get("gpus"):
        if tp is None:
            unknown["tp"] = IMPLIED_TP
        elif tp.how.startswith("at least"):
            least = int(tp.text)
            unknown["tp"] = tuple(sorted({least} | {k for k in IMPLIED_TP if k > least}))
    if "kv-dtype" not in reading.values and "kv-dtype" not in values and "kv_dtype_default" not in reading.printed:
        unknown["kv-dtype"] = IMPLIED_KV
    return unknown


def _combinations(choices: list) -> list:
    out = [()]
    for options in choices:
        out = [done + (option,) for done in out for option in options]
    return out


def _with(reading: Reading, values: dict, changes: dict) -> dict:
    """`values` with the candidate inputs: tp with its GPUs (tp x pp x dp), the KV dtype, and the
    measured deployment (measured-with) as the log's own inputs and these."""
    out = dict(values)
    for name, value in changes.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = str(value)
    if "tp" in changes:
        pp, dp = (int(out.get(k, 1)) for k in ("pp", "dp"))
        out["gpus"] = str(int(out["tp"]) * pp * dp)
    if "measured-with" in out and out["measured-with"] == reading.values.get("measured-with"):
        logged = {**reading.values, **{k: out[k] for k in ("tp", "gpus", "kv-dtype") if k in out}}
        out["measured-with"] = measured_with(logged)
    return out


def _fits(reading: Reading, values: dict) -> tuple:
    """(whether the engine's rules at these inputs give every token count and concurrency the log
    printed, within its rounding (the KV memory to 2 decimals: kv_tokens_range), None when they
    cannot be sized; the weights per GPU they load)."""
    parsed, errors = parse_options(values)
    if errors:
        return None, None
    try:
        scenario = build_scenario(parsed)
        result = compute(scenario.model, scenario.workload, scenario.deployment, searches=False)
        out = engines.size(scenario, result)
    except (InputError, ArithmeticError, ValueError):
        return None, None
    if out is None or out.engine != reading.engine or out.kv_tokens is None:
        return None, None
    return _matches(reading, out), result.weights_bytes_per_gpu


def _matches(reading: Reading, out) -> bool:
    spread = out.kv_tokens_range
    for name in ("kv_tokens", "max_concurrency"):
        figure = reading.printed.get(name)
        if figure is None:
            continue
        if name == "kv_tokens" and "max_concurrency" in reading.printed and "engine-version" not in reading.values:
            # What "GPU KV cache size" counts changed by release (vLLM 0.20.1: max concurrency x
            # max_model_len, before: blocks // groups x block size, kv_cache_utils.py
            # _report_kv_cache_config): with no release printed, the concurrency alone decides.
            continue
        if name == "kv_tokens":
            low, high = sorted(spread) if spread else (out.kv_tokens, out.kv_tokens)
            if not min(low, out.kv_tokens) <= figure.value <= max(high, out.kv_tokens):
                return False
        elif out.max_concurrency is not None:
            slack = PRINTED_HALF
            if spread and out.kv_tokens:
                slack += Fraction(out.max_concurrency) * abs(spread[1] - spread[0]) / out.kv_tokens
            if out.max_concurrency_range:
                slack = max(slack, PRINTED_HALF + max(abs(Fraction(end) - Fraction(out.max_concurrency))
                                                      for end in out.max_concurrency_range))
            if abs(Fraction(figure.value) - Fraction(out.max_concurrency)) > slack:
                return False
    return True
