"""The GPU presets, read lazily from data/gpus.json (presets are data, not code): each GPU typed
with its facts, checked as read, and found by the names people and logs give it (the id matcher
is the model presets', readers/presets)."""

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from ..errors import InputError
from ..words import listed
from .presets import SHOWN_CANDIDATES, read_data, shown_id, typed_id


# The words a GPU's facts are given in (data/gpus.json): how a program reaches it, how several of
# it talk to each other. Windows / WSL2 is not here: it is how a machine runs, not what the GPU is.
PLATFORMS = ("cuda", "rocm", "xpu", "metal")
INTERCONNECTS = (
    "nvlink",     # NVLink (SXM boards on NVSwitch; a bridged pair of PCIe cards)
    "pcie",       # PCIe only: no peer link between the cards
    "xgmi",       # AMD Infinity Fabric between Instinct GPUs
    "network",    # one GPU per machine (DGX Spark's ConnectX-7, Macs over Thunderbolt): several talk over a network
    "none",       # one device that talks to no other: a MIG instance (no peer-to-peer; CUDA enumerates one)
)
# Each platform's architecture fact: CUDA's compute capability, ROCm's gfx target; none for Metal.
ARCH_FACT = {"cuda": "compute_capability", "rocm": "gfx_arch", "xpu": None, "metal": None}
# Facts every preset states: a missing one is refused, never guessed.
GPU_FACTS = ("vendor", "platform", "compute_units", "interconnect", "unified_memory", "device_name", "facts_source")
# A MIG instance's facts: its GPU's preset, its profile as nvidia-smi names it ("3g.40gb"; "1g.10gb+me" is
# the same memory and SMs with the media engines, so no preset of its own), its memory slices of 8.
MIG_FACTS = ("mig_of", "mig_profile", "mig_memory_slices")
MIG_PROFILE = re.compile(r"[1-7]g\.\d{1,3}gb")
MIG_SLICES = 8                              # a memory slice is an eighth of the GPU's memory and bandwidth


@dataclass(frozen=True)
class GPU:
    id: str
    name: str                               # the display name (the page's, the plan's rows)
    vendor: str
    memory_bytes: int
    bandwidth_bytes_per_s: int
    memory_note: str
    source: str
    torch_memory_bytes: int | None = None   # the total PyTorch reports (what vLLM and SGLang multiply)
    torch_memory_source: str | None = None
    # Unified memory: the lowest total PyTorch reports where it follows the machine's kernel and firmware (DGX
    # Spark: 119.70-121.69 GiB); torch_memory_bytes is the newest machines', the estimate's. None: one total.
    torch_memory_low_bytes: int | None = None
    torch_memory_low_source: str | None = None
    peak_flops: dict | None = None          # dense tensor FLOP/s per compute precision (bf16, fp8, fp4, int8)
    peak_flops_source: str | None = None
    unified_memory: bool = False            # memory shared with the CPU and OS (Apple M-series, DGX Spark GB10)
    aliases: tuple[str, ...] = ()           # common names this preset goes by ("H100 SXM5", "RTX4090")
    # The hardware's facts, each from a spec sheet or what PyTorch reports (facts_source says which):
    platform: str = ""                      # PLATFORMS: cuda, rocm, xpu, metal
    compute_capability: tuple[int, int] | None = None   # CUDA's (major, minor), torch.cuda.get_device_capability()
    gfx_arch: str | None = None             # ROCm's gfx target (gcnArchName): gfx942, gfx950
    compute_units: int | None = None        # SMs (multi_processor_count), CUs on AMD, GPU cores on Apple
    interconnect: str = ""                  # INTERCONNECTS: how several of this GPU talk
    device_name: str = ""                   # as the device reports it (torch.cuda.get_device_name(), Metal's name)
    facts_source: str = ""
    # A MIG instance (NVIDIA Multi-Instance GPU): one device with a share of its GPU, sized as a card of its
    # own memory. None on a whole GPU.
    mig_of: str | None = None               # the whole GPU's preset id
    mig_profile: str | None = None          # "3g.40gb": compute slices of 7, the memory the name rounds
    mig_memory_slices: int | None = None    # eighths of the GPU's memory and bandwidth

    def cuda_at(self, *capabilities: tuple[int, int]) -> bool:
        """Whether this is a CUDA device of one of these exact compute capabilities."""
        return self.platform == "cuda" and self.compute_capability in capabilities

    def cuda_major(self) -> int | None:
        """The CUDA compute capability's major version (9 Hopper, 10 and 12 Blackwell), None off CUDA."""
        return self.compute_capability[0] if self.platform == "cuda" and self.compute_capability else None


def gpu_from_row(row: dict, presets: dict | None = None) -> GPU:
    """A preset from its row of data/gpus.json, every fact checked: a row missing one, or giving one
    in words this calculator does not know, is refused (ValueError naming the preset and the fact).
    `presets`: the presets read before it, where a MIG instance's GPU must be."""
    name = row.get("id", "?")
    for fact in GPU_FACTS:
        if fact not in row:
            raise ValueError(f"GPU preset {name} does not state its {fact} (data/gpus.json)")
    platform, link = row["platform"], row["interconnect"]
    if platform not in PLATFORMS:
        raise ValueError(f"GPU preset {name}: platform {platform!r} is none of {', '.join(PLATFORMS)}")
    if link not in INTERCONNECTS:
        raise ValueError(f"GPU preset {name}: interconnect {link!r} is none of {', '.join(INTERCONNECTS)}")
    if not isinstance(row["unified_memory"], bool):
        raise ValueError(f"GPU preset {name}: unified_memory is true or false")
    arch = ARCH_FACT[platform]
    for fact in ("compute_capability", "gfx_arch"):
        if fact == arch and row.get(fact) is None:
            raise ValueError(f"GPU preset {name} runs {platform} and does not state its {fact} (data/gpus.json)")
        if fact != arch and row.get(fact) is not None:
            owner = "CUDA" if fact == "compute_capability" else "ROCm"
            raise ValueError(f"GPU preset {name}: {fact} is a fact of {owner} devices, not of a {platform} one")
    cc = row.get("compute_capability")
    if cc is not None and not (isinstance(cc, list) and len(cc) == 2 and all(type(v) is int and v >= 0 for v in cc)):
        raise ValueError(f"GPU preset {name}: compute_capability is [major, minor], got {cc!r}")
    units = row["compute_units"]
    if units is None and platform in ("cuda", "rocm"):
        raise ValueError(f"GPU preset {name}: compute_units (its SMs or CUs) are read by engine rules on {platform}")
    if units is not None and not (type(units) is int and units > 0):
        raise ValueError(f"GPU preset {name}: compute_units is a positive count, got {units!r}")
    low = row.get("torch_memory_low_bytes")
    if low is not None and not (type(low) is int and 0 < low <= (row.get("torch_memory_bytes") or 0)
                                and row.get("unified_memory") and row.get("torch_memory_low_source")):
        raise ValueError(f"GPU preset {name}: torch_memory_low_bytes is a unified-memory GPU's lowest total, "
                         "at most its torch_memory_bytes, with its torch_memory_low_source")
    if any(fact in row for fact in MIG_FACTS) or link == "none":
        _check_mig(row, presets or {})
    fields = GPU.__dataclass_fields__
    values = {k: v for k, v in row.items() if k in fields}
    values["aliases"] = tuple(row.get("aliases", ()))
    values["compute_capability"] = None if cc is None else (cc[0], cc[1])
    return GPU(**values)


def _check_mig(row: dict, presets: dict) -> None:
    """A MIG instance's row: every MIG fact, a whole GPU of the same vendor and chip read before it, a
    profile as nvidia-smi names one, and the bandwidth its memory slices take of the GPU's."""
    name = row.get("id", "?")
    missing = [fact for fact in MIG_FACTS if fact not in row]
    if missing:
        raise ValueError(f"GPU preset {name}: a MIG instance states {', '.join(MIG_FACTS)}; "
                         f"it does not state {', '.join(missing)}")
    if row["interconnect"] != "none":
        raise ValueError(f"GPU preset {name}: a MIG instance has no peer link; its interconnect is none")
    parent = presets.get(row["mig_of"])
    if parent is None or parent.mig_of is not None:
        raise ValueError(f"GPU preset {name}: mig_of {row['mig_of']!r} is no whole GPU's preset above it")
    if (row["vendor"], row["platform"]) != (parent.vendor, parent.platform) or \
            tuple(row.get("compute_capability") or ()) != (parent.compute_capability or ()):
        raise ValueError(f"GPU preset {name}: a MIG instance is {parent.id}'s chip: its vendor, platform "
                         "and compute capability")
    if not (isinstance(row["mig_profile"], str) and MIG_PROFILE.fullmatch(row["mig_profile"])):
        raise ValueError(f"GPU preset {name}: mig_profile {row['mig_profile']!r} is not a profile such as 3g.40gb")
    slices = row["mig_memory_slices"]
    if not (type(slices) is int and 1 <= slices <= MIG_SLICES):
        raise ValueError(f"GPU preset {name}: mig_memory_slices is 1 to {MIG_SLICES}, got {slices!r}")
    if row["bandwidth_bytes_per_s"] * MIG_SLICES != parent.bandwidth_bytes_per_s * slices:
        raise ValueError(f"GPU preset {name}: a MIG instance's bandwidth is its {slices}/{MIG_SLICES} of "
                         f"{parent.id}'s {parent.bandwidth_bytes_per_s:,} B/s")
    if not (row["memory_bytes"] <= parent.memory_bytes and row["compute_units"] <= parent.compute_units):
        raise ValueError(f"GPU preset {name}: a MIG instance holds at most {parent.id}'s memory and SMs")


@lru_cache(maxsize=None)
def gpus() -> dict[str, GPU]:
    table: dict[str, GPU] = {}
    for row in json.loads(read_data("gpus.json"))["gpus"]:
        table[row["id"]] = gpu_from_row(row, table)
    return table


def whole_gpus() -> dict[str, GPU]:
    """The presets that are whole GPUs: every one but the MIG instances (which a family's name, a
    plan's default list and "all" leave out: a share of a GPU is chosen by its own name)."""
    return {gpu_id: g for gpu_id, g in gpus().items() if g.mig_of is None}


def mig_profiles(gpu_id: str) -> tuple[str, ...]:
    """The MIG profiles a whole GPU's presets have, in the presets' order; () where it has none."""
    return tuple(g.mig_profile for g in gpus().values() if g.mig_of == gpu_id)


# ---- GPUs by their common names --------------------------------------------------------------

# Words that name the maker or the product line, said or not ("Tesla T4" is the T4 preset).
GPU_NOISE = frozenset({"nvidia", "amd", "apple", "geforce", "tesla", "instinct", "gpu", "gpus", "card", "edition"})
_GB = re.compile(r"(\d)\s{0,3}(?:gib|gb|g)\b")


def _gpu_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", _GB.sub(r"\1gb", text.lower()))


@lru_cache(maxsize=None)
def _gpu_index() -> tuple[dict, dict]:
    """(a name's words joined -> the preset, for ids, names and aliases; preset id -> every
    word it goes by, neighbours run together too: "rtx4090")."""
    exact, words, clashes = {}, {}, set()
    for g in whole_gpus().values():     # a MIG instance is found by its profile (_mig_match), never by family words
        names = [g.id.replace("-", " "), g.name, *g.aliases]
        seen = set()
        for name in names:
            ws = _gpu_words(name)
            seen.update(ws)
            seen.update(a + b for a, b in zip(ws, ws[1:]))
            key = " ".join(ws)
            if exact.get(key, g.id) != g.id:
                clashes.add(key)
            exact[key] = g.id
        words[g.id] = frozenset(seen)
    for key in clashes:
        del exact[key]
    return exact, words


def _exact(typed: str) -> str | None:
    """The preset whose id or display name this is, case aside."""
    table = gpus()
    key = typed.lower()
    if key in table:
        return key
    return next((g.id for g in table.values() if g.name.lower() == key), None)


def _gpu_matches(typed: str) -> tuple[str | None, list[str], list[str]]:
    """(the preset the name is exactly, or None; the whole GPUs having every word typed; those
    having each word or a word starting so, for a suggestion)."""
    key = _exact(typed)
    if key is not None:
        return key, [key], [key]
    exact, words = _gpu_index()
    typed_words = _gpu_words(typed)
    tokens = [w for w in typed_words if w not in GPU_NOISE] or typed_words
    if not tokens:
        return None, [], []
    whole = [gid for gid, ws in words.items() if all(t in ws for t in tokens)]
    started = [gid for gid, ws in words.items() if all(any(w.startswith(t) for w in ws) for t in tokens)]
    return exact.get(" ".join(typed_words)) or exact.get(" ".join(tokens)), whole, started


def _gpu_refusal(typed: str, field: str, candidates: list[str], fits: bool) -> InputError:
    if not candidates:
        return InputError(field, f"unknown GPU {shown_id(typed)}; kvcalc --list-gpus lists the presets "
                                 "(e.g. h100-sxm-80gb, h200-141gb, mi300x-192gb)")
    shown = ", ".join(candidates[:SHOWN_CANDIDATES])
    if len(candidates) > SHOWN_CANDIDATES:
        shown += f" or {len(candidates) - SHOWN_CANDIDATES} more"
    what = f"fits {len(candidates)} GPU presets" if fits else "is no GPU preset's name"
    return InputError(field, f"{shown_id(typed)} {what}; did you mean {shown}?")


# A MIG profile as typed: "3g.40gb", an id's "3g-40gb", "3g 40gb" ("+me", the media engines, changes neither
# memory nor SMs: the same preset); the word "mig" alone says an instance is meant too.
_MIG_TYPED = re.compile(r"\b(\d{1,2})g\s{0,3}[.\-]?\s{0,3}(\d{1,3})\s{0,3}gb(?:\s{0,3}\+\s{0,3}me)?(?![a-z0-9])", re.I)
_MIG_WORD = re.compile(r"\bmig\b", re.I)


def _mig_match(typed: str, field: str) -> list[str] | None:
    """The MIG presets a name covers, None when it names no MIG instance: a profile ("3g.40gb") or
    the word "mig", with the words of its GPU ("H100 3g.40gb": the H100 presets' 3g.40gb) or alone
    ("3g.40gb": every GPU's of that profile). A GPU without MIG presets, or a profile its presets do
    not have: one line naming them (InputError)."""
    exact = _exact(typed)
    if exact is not None:
        return [exact] if gpus()[exact].mig_of else None
    found = _MIG_TYPED.search(typed)
    if found is None and not _MIG_WORD.search(typed):
        return None
    profile = f"{found[1]}g.{found[2]}gb" if found else None
    rest = " ".join(_MIG_WORD.sub(" ", _MIG_TYPED.sub(" ", typed)).split())
    with_mig = [gpu_id for gpu_id in whole_gpus() if mig_profiles(gpu_id)]
    if any(w not in GPU_NOISE for w in _gpu_words(rest)):
        parents = gpu_family(rest, field)
        named = parents[0] if len(parents) == 1 else f"no {rest} preset"
    else:
        parents, named = tuple(with_mig), "no GPU preset"
    parents = [gpu_id for gpu_id in parents if gpu_id in with_mig]
    if not parents:
        wrong = f"{named} has no MIG presets" if len(named.split()) == 1 else f"the {rest} presets have no MIG presets"
        raise _mig_refusal(field, typed, wrong, f"the MIG presets are of {listed(with_mig)}")
    chosen = [g.id for g in gpus().values() if g.mig_of in parents and profile in (None, g.mig_profile)]
    if not chosen:
        has = "; ".join(f"{gpu_id} has {', '.join(mig_profiles(gpu_id))}" for gpu_id in parents)
        if len(parents) == 1:
            raise _mig_refusal(field, typed, f"{parents[0]} has no MIG profile {profile}", f"its profiles are "
                                f"{', '.join(mig_profiles(parents[0]))}")
        raise _mig_refusal(field, typed, f"{named} has MIG profile {profile}", has)
    return chosen


def _mig_refusal(field: str, typed: str, wrong: str, allowed: str) -> InputError:
    return InputError(field, f"{shown_id(typed)}: {wrong}; {allowed}")


def gpu(gpu_id: str, field: str = "gpu", device: bool = False) -> GPU:
    """The GPU preset a name is: its id, its name, or words only one preset has ("4090",
    "H100 SXM", "mi300x"). Several: "did you mean" with them ("a100": SXM or PCIe, 40 or 80 GB;
    "H100": SXM, PCIe or NVL); none: one line, never the whole list. An alias (data/gpus.json)
    is the preset when no other has its words; a `device` name as a log prints it (nvidia-smi's
    "NVIDIA H100 80GB HBM3", "NVIDIA H100" for the SXM card) is its alias's preset even so:
    typed, a family's name is never one card of it. A MIG instance: its id, its name, or its GPU's
    words with its profile ("H100 3g.40gb", "h100 mig 3g.40gb"), or a profile only one GPU has ("3g.40gb")."""
    typed = typed_id(gpu_id, field, "GPU", "h100-sxm-80gb")
    mig = _mig_match(typed, field)
    if mig is not None:
        if len(mig) == 1:
            return gpus()[mig[0]]
        raise _gpu_refusal(typed, field, mig, True)
    exact, whole, started = _gpu_matches(typed)
    if exact is not None and (device or len(whole) <= 1):
        return gpus()[exact]
    if len(whole) == 1:
        return gpus()[whole[0]]
    raise _gpu_refusal(typed, field, whole or started, bool(whole))


def device_key(name: str) -> str:
    """A device name as compared: case, runs of spaces and underscores aside (vLLM's config file
    names print torch's "NVIDIA H100 80GB HBM3" as "NVIDIA_H100_80GB_HBM3")."""
    return re.sub(r"[\s_]+", " ", name).strip().lower()


@lru_cache(maxsize=None)
def _device_index() -> dict[str, tuple[str, ...]]:
    index: dict[str, tuple[str, ...]] = {}
    for g in gpus().values():
        key = device_key(g.device_name)
        index[key] = index.get(key, ()) + (g.id,)
    return index


def gpus_by_device(name: str) -> tuple[str, ...]:
    """The presets whose `device_name` (data/gpus.json: what torch.cuda.get_device_name() reports)
    is this name, by device_key: one as a rule, several where the presets share a device name
    (then the device's other facts decide), none where no preset states it. Never by words."""
    return _device_index().get(device_key(name), ()) if len(name) <= 200 else ()


def gpu_family(text: str, field: str = "gpu") -> tuple[str, ...]:
    """The GPU presets a name covers, for a price or a list: a preset's id or name is itself;
    a family's name ("H100", "a100 80gb") is every preset having its words; an alias only
    one preset has is that preset. A family's name covers whole GPUs only ("H100=2.49" prices no MIG
    instance): MIG instances are named with their profile ("H100 3g.40gb", "h100 mig": every one)."""
    typed = typed_id(text, field, "GPU", "h100-sxm-80gb")
    mig = _mig_match(typed, field)
    if mig is not None:
        return tuple(mig)
    exact, whole, started = _gpu_matches(typed)
    if exact is not None and (exact == typed.lower() or not whole or whole == [exact]):
        return (exact,)
    if whole:
        return tuple(whole)
    raise _gpu_refusal(typed, field, started, False)
