"""What a failed start printed, read line by line: the shared pieces of every engine's failure
reader (engines/<engine>/failures.py gives its own patterns as `FailureRule`s).

A failure is a kind (what refused), the engine's words (the line), the figures that line and the
lines before it printed, and the phase it failed in. Torch's "CUDA out of memory" is not any
engine's own words: vLLM and SGLang both raise it, so its pattern lives here, and the engine's
phases (which function was running) say where it struck.

Worked example (vLLM 0.11.0, tests/fixtures/logs/vllm-gpt-oss-120b-h100-refusal.log):
    ValueError: To serve at least one request with the models's max seq len (131072), (4.54 GiB KV
    cache is needed, which is larger than the available KV cache memory (1.71 GiB). Based on the
    available memory, the estimated maximum model length is 48624. ...
is Failure(kind="kv-short", figures: context 131,072, kv_needed_gib 4.54, kv_memory_gib 1.71,
estimated_max_len 48,624): 2.83 GiB short; the fixes start from those figures.
"""

import re
from dataclasses import dataclass
from fractions import Fraction

# What each kind of failure is, in our words (the engine's are the line it printed).
KINDS = {
    "kv-short": "its KV cache cannot hold one request at the longest context it was asked for",
    "no-kv-memory": "the weights and its overhead leave no memory for the KV cache",
    "state-blocks": "it was asked to hold more sequences than it has state-cache blocks",
    "free-memory": "the GPU had less free memory at start-up than it was asked to take",
    "out-of-memory": "the GPU ran out of memory",
    "pool-short": "its memory share leaves no room for the KV pool",
    "buffer": "a buffer it needs did not fit in the device's memory",
    "host-memory": "the host ran out of memory (its RAM or shared memory), not the GPU",
    "memory-moved": "the GPU's free memory changed while it measured its peak: another process took or freed memory",
}
# The refusals an engine's own sizing foresees (its checks of the KV memory, its blocks, its
# buffers): where the inputs, sized again, start, the log measured something else. Running out of
# memory at a phase (graphs, the sampler) or beside other processes is not foreseen by it.
SIZED_KINDS = ("kv-short", "no-kv-memory", "state-blocks", "pool-short", "buffer")
PHASES = {
    "loading": "while loading the weights",
    "profiling": "while measuring its peak memory (the profile run)",
    "kv-cache": "while allocating the KV cache",
    "graphs": "while capturing CUDA graphs",
    "sampler": "while warming up the sampler",
    "compute": "while reserving its compute buffers",
}


@dataclass(frozen=True)
class Failure:
    """One failure a log printed, with the figures read with it."""
    engine: str | None          # whose rules refused (None: torch's words, no engine's marks seen)
    kind: str                   # a KINDS key
    line_number: int
    printed: str                # the line, as printed (clipped)
    figures: tuple = ()         # (name, value) pairs: GiB as Fraction, counts as int
    phase: str | None = None    # a PHASES key, where the log shows it

    def figure(self, name: str, default=None):
        return dict(self.figures).get(name, default)

    @property
    def words(self) -> str:
        """Our words: what refused, where, and by how much."""
        phase = f" {PHASES[self.phase]}" if self.phase in PHASES else ""
        short = self.figure("short_gib")
        by = f", {_gib(short)} GiB short" if short is not None and short > 0 else ""
        return f"{KINDS[self.kind]}{phase}{by}"


@dataclass(frozen=True)
class FailureRule:
    """An engine's pattern for one failure: the kind it is, the figures its groups give
    (group name -> "gib", "mib", "bytes" or "int"), and the phase it names, if any."""
    kind: str
    pattern: re.Pattern
    phase: str | None = None
    needle: str = ""            # a plain substring every match contains: lines without it are skipped


@dataclass(frozen=True)
class OtherError:
    """An error the log printed that is not about memory (a missing file, a network error)."""
    line_number: int
    printed: str


def _gib(value) -> str:
    return f"{float(value):,.2f}"


UNITS = {"B": 1, "bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_NUMBER = re.compile(r"\d{1,12}(?:\.\d{1,6})?")


def to_gib(text: str, unit: str) -> Fraction:
    """A printed size in GiB, exactly: "512.00 MiB" is 1/2."""
    return Fraction(text) * UNITS[unit] / UNITS["GiB"]


def figures_of(match: re.Match) -> tuple:
    """The figures a FailureRule's named groups printed: a group "x_gib" with a sibling
    "x_unit" is a size in that unit, read as GiB; "x_gib" alone is GiB; "x_bytes" is bytes
    (read as GiB under the same name with _gib); anything else an int."""
    out = []
    groups = {k: v for k, v in match.groupdict().items() if v is not None}
    for name, text in groups.items():
        if name.endswith("_unit"):
            continue
        text = text.replace(",", "")
        if name.endswith("_gib"):
            unit = groups.get(name[:-4] + "_unit", "GiB")
            out.append((name, to_gib(text, unit if unit in UNITS else "GiB")))
        elif name.endswith("_bytes"):
            out.append((name[:-6] + "_gib", Fraction(int(text), UNITS["GiB"])))
        elif name.endswith("_frac"):
            out.append((name[:-5], Fraction(text)))
        elif text.lstrip("-").isdigit():
            out.append((name, int(text)))
        else:
            out.append((name, text))        # a name it printed (llama.cpp's buffer "CUDA0")
    return tuple(out)


# Torch's words, raised by vLLM and SGLang alike (CUDA and ROCm's HIP): the new form
# "Tried to allocate X. GPU 0 has a total capacity of Y of which Z is free" and the old
# "Tried to allocate X (GPU 0; Y total capacity; W already allocated; Z free; ...)".
_SIZE = r"(?P<{0}_gib>\d{{1,9}}(?:\.\d{{1,4}})?) ?(?P<{0}_unit>GiB|MiB|KiB|bytes|B)"
TORCH_OOM = re.compile(
    r"(?:(?:CUDA|HIP) out of memory\. )?Tried to allocate " + _SIZE.format("tried") +
    r"(?:\. GPU (?P<device>\d{1,3}) has a total capaci?ty of " + _SIZE.format("total") +
    r" of which " + _SIZE.format("free") + r" (?:is )?free"
    r"|\s?\(GPU (?P<device_old>\d{1,3}); " + _SIZE.format("total_old") + r" total capacity; " +
    _SIZE.format("allocated") + r" already allocated; " + _SIZE.format("free_old") + r" free)?")
TORCH_NEEDLE = "Tried to allocate"
# The CUDA runtime's own words, where no allocator said how much (torch's "CUDA error: out of
# memory", NCCL's "unhandled cuda error ... out of memory" and "Cuda failure 'out of memory'",
# ROCm's "HIP error: out of memory", the driver's CUDA_ERROR_OUT_OF_MEMORY, cuBLAS failing to
# allocate its workspace).
RUNTIME_OOM = re.compile(r"(?:CUDA|HIP|cuda|hip) error: out of memory|NCCL (?:error|WARN).{0,80}out of memory|"
                         r"Cuda failure.{0,12}out of memory|CUDA_ERROR_OUT_OF_MEMORY|hipErrorOutOfMemory|"
                         r"cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED")

# An error line a traceback ends with, as Python prints it ("KeyError: 'x'", "OSError: ...",
# "huggingface_hub.errors.GatedRepoError: ..."), after an engine's prefixes ("(EngineCore pid=1)",
# "ERROR 05-01 10:00:00 [core.py:12]").
ERROR_LINE = re.compile(r"(?:^|[\s)\]|>])(?P<type>(?:[A-Za-z_]\w{0,40}\.){0,5}[A-Z]\w{0,60}(?:Error|Exception)):"
                        r" (?P<message>\S.{0,400})")
# Errors that only wrap another one printed above them: they say nothing of the cause.
WRAPPERS = re.compile(r"See root cause above|Engine core initialization failed|Worker failed|"
                      r"Initialization failed|Failed core proc|died unexpectedly|process is terminated|"
                      r"^Traceback", re.IGNORECASE)


def with_shortfall(figures: tuple) -> tuple:
    """The figures with what was missing, in GiB, where the line printed both sides: the KV
    cache needed against the KV memory, the share asked for against the free memory."""
    found = dict(figures)
    if "short_gib" not in found:
        for need, have in (("needed_gib", "kv_memory_gib"), ("wanted_gib", "free_gib"), ("tried_gib", "free_gib")):
            if need in found and have in found:
                found["short_gib"] = max(found[need] - found[have], Fraction(0))
                break
    return tuple(found.items())


def torch_oom(line: str, own: int | None = None) -> tuple | None:
    """The figures of torch's out-of-memory line, GiB: tried, total, free, short (tried - free);
    () for the runtime's out-of-memory without figures; None for any other line. `line` may
    have the next lines joined to it (a wrapped message): a match must begin in its first
    `own` characters."""
    own = len(line) if own is None else own
    if TORCH_NEEDLE not in line:
        first = line[:own]
        quick = "out of memory" in first or "OUT_OF_MEMORY" in first or "OutOfMemory" in first or \
            "MemoryAllocation" in first or "ALLOC_FAILED" in first
        return () if quick and RUNTIME_OOM.search(first) else None
    match = TORCH_OOM.search(line)
    # Torch's words begin in this line; without "out of memory" before them, only a wrapped message's own start.
    if match is None or match.start() >= own or (match.group(0)[:1] == "T" and "out of memory" not in line[:own]
                                                 and not line[:own].lstrip().startswith("Tried to allocate")):
        return None
    found = dict(figures_of(match))
    for old, new in (("total_old_gib", "total_gib"), ("free_old_gib", "free_gib"), ("device_old", "device")):
        if old in found:
            found[new] = found.pop(old)
    tried, free = found.get("tried_gib"), found.get("free_gib")
    if tried is not None and free is not None:
        found["short_gib"] = max(tried - free, Fraction(0))
    return tuple(found.items())


# The host's words for running out (the kernel's ENOMEM, C++'s bad_alloc, a shared-memory
# segment too small for the workers, torch's CPU allocator, Ray's memory monitor killing a
# worker, Ollama's own check of system memory).
HOST_OOM = re.compile(r"\[Errno 12\] Cannot allocate memory|std::bad_alloc|No space left on device.{0,40}/dev/shm|"
                      r"DefaultCPUAllocator: not enough memory|node running low on memory|"
                      r"requires more system memory \((?P<needed_gib>\d{1,6}(?:\.\d{1,4})?) GiB\) than is available "
                      r"\((?P<free_gib>\d{1,6}(?:\.\d{1,4})?) GiB\)")


def host_oom(line: str) -> tuple | None:
    """The figures of a host out-of-memory line (Ollama prints what it needed and had), or None."""
    if "memory" not in line and "bad_alloc" not in line and "/dev/shm" not in line:     # the cheap test first
        return None
    match = HOST_OOM.search(line)
    return None if match is None else figures_of(match)


def other_error(line: str) -> str | None:
    """The error a line ends a traceback with, when it is one and not a wrapper of another."""
    match = ERROR_LINE.search(line)
    if match is None or WRAPPERS.search(match["message"]):
        return None
    return f"{match['type']}: {match['message']}".strip()[:300]
