"""A host-memory KV tier (issue 26, part 2): how many tokens and requests a tier of N GiB holds as
each engine counts it, what the host must hold for it, and a lower bound on the time to bring one
request's prefix back over a stated link.

The engines' rules (docs/research/issue-26-engine-rules.md section 2, re-read for this module in
the unpacked vLLM wheels 0.11.0-0.33.0 and SGLang 0.4.6-0.5.23):
- vLLM `--kv-offloading-size X` (GiB, the total over the engine's ranks; config/cache.py
  kv_offloading_size) with `--kv-offloading-backend native`: config/vllm.py
  _post_init_kv_transfer_config passes cpu_bytes_to_use = X x 2^30 to the OffloadingConnector, and
  v1/kv_offload/cpu/spec.py CPUOffloadingSpec.__init__ cuts it into chunks of one worker's block
  bytes x copies (world_size = tp x pp ranks, or 1 for the replicated MLA layout), rounded up to
  the 4 KiB page (0.23.0 on). Write-through: each completed chunk is stored as it is computed.
- `--kv-offloading-backend lmcache`, or LMCache itself: max_local_cpu_size GiB per worker (tp
  rank), chunks of 256 tokens rounded up to 4 KiB (lmcache/v1/storage_backend/local_cpu_backend.py).
- SGLang `--enable-hierarchical-cache --hicache-size G`: G decimal GB per rank, a whole number
  (server_args.py: type=int), mem_cache/pool_host/base.py HostKVCache.__init__:
  size = G x 10^9 // size_per_token, page_num = size // page + 1.
- llama.cpp has no host KV tier sized this way: its `--cache-ram` (MiB) is a host prompt cache of
  whole slot states (llama.cpp PR #16391), refused here.
"""

from dataclasses import dataclass
from fractions import Fraction

from ..errors import InputError
from ..engines.releases import pep440
from ..sizing import bytes_per_token
from ..units import GB, GIB, ceil_div

# GPUs on one host: a deployment of more spans ceil(gpus / 8) hosts, filled in order, so the
# busiest host has min(gpus, 8) ranks (the DGX/HGX 8-GPU node every preset GPU ships in).
GPUS_PER_HOST = 8

# The 4 KiB page vLLM (mmap.PAGESIZE, v1/kv_offload/cpu/spec.py BLOCK_SIZE_ALIGNMENT, 0.23.0 on)
# and LMCache round one chunk up to.
PAGE_ALIGNMENT = 4096

# LMCache's chunk (lmcache/v1/config.py _CONFIG_DEFINITIONS chunk_size, default 256 tokens).
LMCACHE_CHUNK_TOKENS = 256


@dataclass(frozen=True)
class Link:
    name: str
    title: str
    bytes_per_s: Fraction       # one direction, after line encoding
    source: str


def _pcie(gt_per_s: int, lanes: int) -> Fraction:
    # PCI-SIG, PCI Express Base Specification 4.0 (16.0 GT/s) and 5.0 (32.0 GT/s) per lane, with
    # 128b/130b encoding: GT/s x lanes x 128/130 bits per transfer / 8 bits per byte, per direction.
    return Fraction(gt_per_s * 10 ** 9 * lanes * 128, 130 * 8)


LINKS = {
    "pcie4": Link("pcie4", "PCIe Gen4 x16", _pcie(16, 16),
                  "PCI-SIG PCI Express Base Specification 4.0: 16 GT/s per lane, 128b/130b encoding; "
                  "16 x 16 x 128/130 / 8 = 31.5 GB/s per direction"),
    "pcie5": Link("pcie5", "PCIe Gen5 x16", _pcie(32, 16),
                  "PCI-SIG PCI Express Base Specification 5.0: 32 GT/s per lane, 128b/130b encoding; "
                  "32 x 16 x 128/130 / 8 = 63.0 GB/s per direction"),
    # Assumed: an NVMe drive on a PCIe Gen4 x4 link, whose 7.88 GB/s caps any such drive's
    # sequential read (the fastest Gen4 drives are rated about 7 GB/s, so the bound stays a bound).
    "nvme": Link("nvme", "an NVMe drive (PCIe Gen4 x4)", _pcie(16, 4),
                 "assumed a drive on a PCIe Gen4 x4 link (PCI-SIG PCI Express Base Specification 4.0: "
                 "16 x 4 x 128/130 / 8 = 7.88 GB/s), the ceiling of any Gen4 drive's sequential read"),
}

_VLLM, _SGLANG, _LLAMACPP = "vllm", "sglang", "llama.cpp"


@dataclass(frozen=True)
class OffloadAsk:
    """The tier asked for, as typed: offload-gib means what the engine's own flag means (vLLM:
    the total over its ranks; SGLang: per rank; LMCache: per worker; the exact ideal: the total)."""
    gib: Fraction
    backend: str                     # "native" or "lmcache"
    link: str | None                 # a key of LINKS, or None: no restore time
    host_memory_gib: Fraction | None  # per host, where given
    engine: str | None
    tp: int = 1
    pp: int = 1
    dp: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp


def _layout(values: dict, deployment) -> tuple[int, int, int]:
    if deployment is not None:
        return deployment.tp, deployment.pp, deployment.dp
    # Without the deployment (the scenario's builder passes it once it is wired), its counts
    # from the inputs, as scenario._deployment reads them.
    pp, dp = values.get("pp", 1), values.get("dp", 1)
    tp = values.get("tp") or max(1, values.get("gpus", pp * dp) // (pp * dp))
    return tp, pp, dp


# offload_from's default engine: the one the inputs name (values["engine"]), as the scenario reads it.
_FROM_VALUES = object()


def offload_from(values: dict, engine=_FROM_VALUES, deployment=None, release=None) -> OffloadAsk | None:
    """The tier the inputs ask for, checked (InputError naming the field otherwise): its options
    need offload-gib; lmcache is vLLM's backend; llama.cpp has no such tier; the busiest host
    must hold it within host-memory-gib. With `release` (the engine's Release) it is refused
    where that release has no such flag."""
    if engine is _FROM_VALUES:
        engine = values.get("engine")
    gib = values.get("offload-gib")
    if gib is None:
        for name in ("offload-backend", "offload-link", "host-memory-gib"):
            if name in values:
                raise InputError(name, "describes a host-memory KV tier: give its size with offload-gib "
                                       "(GiB, e.g. 64) too, or leave it out")
        return None
    if gib == 0:
        return None                  # a tier of nothing: none
    backend = values.get("offload-backend", "native")
    if engine == _LLAMACPP:
        raise InputError("offload-gib", "llama.cpp has no host-memory KV tier sized in tokens: its --cache-ram "
                                        "(MiB, 8192 by default) keeps whole prompt states in host memory "
                                        "(llama.cpp PR #16391), which this calculator does not model; choose "
                                        "engine vllm or sglang, or leave offload-gib out")
    if backend == "lmcache" and engine not in (_VLLM, None):   # the exact ideal sizes any tier as one copy
        if engine == _SGLANG:
            raise InputError("offload-backend", "SGLang runs LMCache with its own --enable-lmcache (0.5.2 on), sized "
                                                "by an LMCache config file this calculator does not model; use "
                                                "offload-backend native (SGLang's HiCache, --hicache-size) or engine "
                                                "vllm")
        raise InputError("offload-backend", "lmcache is vLLM's --kv-offloading-backend lmcache: choose engine vllm "
                                            "for it, or offload-backend native")
    tp, pp, dp = _layout(values, deployment)
    ask = OffloadAsk(gib=Fraction(gib), backend=backend, link=values.get("offload-link"),
                     host_memory_gib=values.get("host-memory-gib"), engine=engine, tp=tp, pp=pp, dp=dp)
    if release is None and engine in (_VLLM, _SGLANG) and "engine-version" in values:
        # The scenario's builder checks the version against the modelled range; a text that is
        # no version is left to it.
        release = pep440(str(values["engine-version"]))
    if release is not None:
        check_release(ask, release)
    if engine == _SGLANG:
        _sglang_gb(ask)              # refuses a size under one whole GB
    host = host_bytes(ask)
    if ask.host_memory_gib is not None and host > ask.host_memory_gib * GIB:
        raise InputError("offload-gib", f"the tier needs {_gib(host)} GiB on the busiest host ({host_rule(ask)}), "
                                        f"more than host-memory-gib {_dec(ask.host_memory_gib)} GiB: give at most "
                                        f"{_dec(_largest_fitting(ask))} GiB, or more host memory")
    return ask


def check_release(ask: OffloadAsk, release) -> None:
    """Refuse a release without the flag (vLLM before 0.11.1, SGLang before 0.4.6) or whose
    native path cannot start (vLLM 0.11.1-0.13.x)."""
    if ask.engine == _VLLM:
        if not release.at_least(0, 11, 1):
            raise InputError("engine-version", f"vLLM {release} has no --kv-offloading-size (first in 0.11.1): give "
                                               "engine-version 0.14.0 or later, or leave offload-gib out")
        if ask.backend == "native" and not release.at_least(0, 14, 0):
            raise InputError("engine-version", f"vLLM {release}'s native offload passes num_cpu_blocks 0, and "
                                               "v1/kv_offload/cpu.py raises 'num_cpu_blocks must be specified' "
                                               "(0.11.1-0.13.0): give engine-version 0.14.0 or later, or "
                                               "offload-backend lmcache")
    elif ask.engine == _SGLANG and not release.at_least(0, 4, 6):
        raise InputError("engine-version", f"SGLang {release} has no --hicache-size (first in 0.4.6, "
                                           "server_args.py): give engine-version 0.4.6 or later, or leave "
                                           "offload-gib out")


def _sglang_gb(ask: OffloadAsk) -> int:
    """The whole GB per rank --hicache-size takes (type=int) for the GiB typed: the most that
    does not exceed them."""
    gb = ask.gib * GIB // GB
    if gb < 1:
        raise InputError("offload-gib", f"{_dec(ask.gib)} GiB is under SGLang's smallest --hicache-size, 1 GB "
                                        "(a whole number of decimal GB per rank): give at least 0.931323 GiB")
    return int(gb)


def _ranks_on_host(ask: OffloadAsk) -> int:
    return min(ask.gpus, GPUS_PER_HOST)


def capacity_bytes(ask: OffloadAsk) -> int:
    """The tier's bytes as the engine's flag counts them: vLLM and the ideal the total (over one
    engine's tp x pp ranks), SGLang per rank (whole GB), LMCache per worker."""
    if ask.engine == _SGLANG:
        return _sglang_gb(ask) * GB
    return int(ask.gib * GIB)


def host_bytes(ask: OffloadAsk) -> int:
    """The bytes the busiest host holds for the tier, before chunk rounding: per-rank sizes
    times its ranks, a total spread over the GPUs it spans."""
    ranks = _ranks_on_host(ask)
    if ask.engine == _SGLANG or ask.backend == "lmcache":
        return capacity_bytes(ask) * ranks
    # vLLM: X for each data-parallel engine (each builds its connector from the same config, not
    # traced), spread over the engine's tp x pp ranks; the ideal: X over all the GPUs.
    per_engine_gpus = ask.tp * ask.pp if ask.engine == _VLLM else ask.gpus
    return ceil_div(capacity_bytes(ask) * ranks, per_engine_gpus)


def host_rule(ask: OffloadAsk) -> str:
    ranks = _ranks_on_host(ask)
    if ask.engine == _SGLANG:
        return f"--hicache-size {_sglang_gb(ask)} GB per rank x {ranks} ranks on the host"
    if ask.backend == "lmcache":
        return f"max_local_cpu_size {_dec(ask.gib)} GiB per worker x {ranks} workers on the host"
    if ask.engine == _VLLM:
        return (f"--kv-offloading-size {_dec(ask.gib)} GiB is the total over the engine's {ask.tp * ask.pp} ranks, "
                f"{ranks} of them on the host")
    return f"{_dec(ask.gib)} GiB over the {ask.gpus} GPUs, {ranks} of them on the host"


def _largest_fitting(ask: OffloadAsk) -> Fraction:
    """The largest offload-gib the host holds, in steps of 1/1024 GiB (1 MiB)."""
    room = ask.host_memory_gib * GIB
    ranks = _ranks_on_host(ask)
    if ask.engine == _SGLANG or ask.backend == "lmcache":
        per_rank = room / ranks
    else:
        per_rank = room * (ask.tp * ask.pp if ask.engine == _VLLM else ask.gpus) / ranks
    return Fraction(int(per_rank // (1 << 20)), 1024)


@dataclass(frozen=True)
class Tier:
    engine: str | None
    backend: str
    capacity_bytes: int               # as the engine's flag counts it (see capacity_bytes)
    capacity_scope: str               # "engine total", "per rank" or "per worker"
    bytes_per_token_per_rank: int     # one rank's KV bytes per token (the busiest stage's)
    bytes_per_token_stored: int       # what the tier stores per token, summed over the ranks' copies
    copies: int                       # ranks whose KV the tier stores per token (1: replicated MLA layout)
    replicated_layout: bool
    chunk_tokens: int                 # vLLM's chunk (one block), SGLang's page, LMCache's chunk, 1 ideally
    chunk_bytes: int                  # one chunk as allocated (4 KiB-rounded where the engine rounds)
    chunks: int                       # per capacity: vLLM's num_chunks, SGLang's page_num, LMCache's per worker
    tokens: int                       # tokens the tier holds
    host_bytes: int                   # bytes allocated on the busiest host
    requests: int                     # whole requests at the scenario's context held
    write_policy: str
    restore_tokens: int               # one request's tokens that come back (whole chunks)
    restore_bytes: int                # what crosses the link for them
    restore_seconds: Fraction | None  # lower bound: restore_bytes / link bandwidth
    link: Link | None
    rule: str                         # the formula with its source
    release: str | None


def _per_rank_bytes_per_token(scenario) -> int:
    """One rank's KV bytes per token at the busiest pipeline stage, replication over tp counted
    (an MLA latent is whole on every rank): what the engine's worker sees per block."""
    model, dep, kv = scenario.model, scenario.deployment, scenario.workload.kv_precision
    return max(bytes_per_token(stage, kv, dep.tp) for stage, _ in model.stage_groups(dep.pp))


def _block_tokens(engine: str | None, scenario, result) -> int:
    if result.engine is not None and result.engine.engine == engine:
        return result.engine.block_size
    if scenario.settings.block_size is not None:
        return scenario.settings.block_size
    return 16 if engine == _VLLM else 1      # vLLM's default block; SGLang's page 1


def _all_mla(model) -> bool:
    return all(layer.kind == "mla" for layer, _ in model.layer_counts().items())


def _replicated(ask: OffloadAsk, scenario, release) -> bool:
    """vLLM 0.27.0 on (distributed/kv_transfer/kv_connector/v1/offloading/config.py): one copy of an
    MLA latent for all tp ranks when MLA, tp > 1, pp = 1, one node (mp backend) and the shared
    mmap region (CUDA or XPU, not ROCm: v1/kv_offload/cpu/spec.py _uses_shared_region)."""
    dep = scenario.deployment
    if ask.backend != "native" or release is None or not release.at_least(0, 27, 0):
        return False
    platform = dep.gpu.platform if dep.gpu is not None else "cuda"     # a custom GPU: CUDA
    return (_all_mla(scenario.model) and dep.tp > 1 and dep.pp == 1 and dep.tp <= GPUS_PER_HOST
            and platform != "rocm")


def tier(ask: OffloadAsk, engine: str | None, scenario, result) -> Tier:
    """The tier as `engine` sizes it for this scenario (its release from scenario.settings)."""
    release = scenario.settings.release if scenario.settings.engine == engine else None
    if release is not None:
        check_release(ask, release)
    per_rank = _per_rank_bytes_per_token(scenario)
    world = ask.tp * ask.pp
    ctx = scenario.workload.context_tokens
    capacity = capacity_bytes(ask)
    ranks = _ranks_on_host(ask)
    replicated = False
    if engine is None:
        stored = bytes_per_token(scenario.model.layer_counts(), scenario.workload.kv_precision)
        copies, chunk_tokens = 1, 1
        chunk_bytes = stored
        chunks = capacity // chunk_bytes
        tokens = chunks
        host = ceil_div(chunks * chunk_bytes * ranks, ask.gpus)
        scope, policy = "engine total", "none: the ideal holds exactly the tier's bytes of one logical copy"
        rule = (f"the exact ideal: {capacity:,} B // {stored:,} B per token of one logical copy "
                f"= {tokens:,} tokens")
    elif ask.backend == "lmcache":
        chunk_tokens = LMCACHE_CHUNK_TOKENS
        raw = per_rank * chunk_tokens
        chunk_bytes = ceil_div(raw, PAGE_ALIGNMENT) * PAGE_ALIGNMENT
        chunks = capacity // chunk_bytes
        tokens = chunks * chunk_tokens
        copies, stored = world, per_rank * world
        host = chunks * chunk_bytes * ranks
        scope, policy = "per worker", "write-through: each whole 256-token chunk is stored as it is computed"
        rule = (f"LMCache (lmcache/v1/storage_backend/local_cpu_backend.py, per worker): int({_dec(ask.gib)} x 2^30) "
                f"= {capacity:,} B // round_up({per_rank:,} B x {chunk_tokens} tokens = {raw:,} B, 4,096) "
                f"= {chunks:,} chunks x {chunk_tokens} = {tokens:,} tokens")
        if release is not None and release.at_least(0, 23, 0):
            rule += (f"; vLLM {release} runs LMCacheMPConnector and does not pass --kv-offloading-size on "
                     "(config/vllm.py): the LMCache server's max_local_cpu_size sizes it")
    elif engine == _VLLM:
        chunk_tokens = _block_tokens(engine, scenario, result)
        replicated = _replicated(ask, scenario, release)
        copies = 1 if replicated else world
        raw = per_rank * chunk_tokens * copies
        aligned = release is None or release.at_least(0, 23, 0)
        chunk_bytes = ceil_div(raw, PAGE_ALIGNMENT) * PAGE_ALIGNMENT if aligned else raw
        chunks = capacity // chunk_bytes
        tokens = chunks * chunk_tokens
        stored = per_rank * copies
        host = ceil_div(chunks * chunk_bytes * ranks, world)
        scope = "engine total"
        policy = "write-through: each completed chunk is stored as it is computed; the GPU copy stays"
        where = ("v1/kv_offload/cpu/spec.py CPUOffloadingSpec.__init__" if release is None or release.at_least(0, 19, 0)
                 else "v1/kv_offload/cpu.py CPUOffloadingSpec.__init__")
        copies_words = ("1 copy (the replicated MLA layout: one latent for all tp ranks, 0.27.0 on)" if replicated
                        else f"{copies} cop{'y' if copies == 1 else 'ies'} (world_size = tp x pp)")
        rule = (f"vLLM {release or 'newest'} ({where}): {capacity:,} B // "
                f"{'round_up(' if aligned else ''}{per_rank:,} B x {chunk_tokens} tokens x {copies_words} "
                f"= {raw:,} B{', 4,096)' if aligned else ' (no 4 KiB rounding before 0.23.0)'} "
                f"= {chunks:,} chunks of one {chunk_tokens}-token block = {tokens:,} tokens")
    else:                            # SGLang HiCache
        page = _block_tokens(engine, scenario, result)
        gb = _sglang_gb(ask)
        size = gb * GB // per_rank
        chunks = size // page + 1
        tokens = chunks * page
        chunk_tokens, chunk_bytes = page, page * per_rank
        copies, stored = world, per_rank * world
        host = tokens * per_rank * ranks
        scope = "per rank"
        newer = release is None or release.at_least(0, 5, 2)
        policy = ("write-through (--hicache-write-policy write_through, the default from 0.5.2)" if newer
                  else "write-through-selective (--hicache-write-policy write_through_selective, the default "
                       "before 0.5.2): only pages hit more than once are copied to the host")
        rule = (f"SGLang (mem_cache/pool_host/base.py HostKVCache.__init__, per rank): {_dec(ask.gib)} GiB typed "
                f"= {float(ask.gib * GIB / GB):.3f} GB, --hicache-size takes whole GB, so {gb}; {gb} x 10^9 // "
                f"{per_rank:,} B per token = {size:,}; page_num = {size:,} // {page} + 1 = {chunks:,} "
                f"= {tokens:,} tokens")
    units_per_request = ctx // chunk_tokens
    requests = chunks // units_per_request if units_per_request else 0
    restore_tokens = units_per_request * chunk_tokens
    link = LINKS.get(ask.link) if ask.link else None
    if link is None:
        restore_bytes, seconds = restore_tokens * per_rank, None
    elif link.name == "nvme":
        # One drive per host, read for every rank of it (once for a replicated latent).
        share = stored if engine is None else per_rank * (1 if replicated else min(world, GPUS_PER_HOST))
        restore_bytes = restore_tokens * share
        seconds = Fraction(restore_bytes) / link.bytes_per_s
    else:
        # Each GPU's own x16 link, all at once: the bound is one rank's share.
        restore_bytes = restore_tokens * per_rank
        seconds = Fraction(restore_bytes) / link.bytes_per_s
    return Tier(engine=engine, backend=ask.backend, capacity_bytes=capacity, capacity_scope=scope,
                bytes_per_token_per_rank=per_rank, bytes_per_token_stored=stored, copies=copies,
                replicated_layout=replicated, chunk_tokens=chunk_tokens, chunk_bytes=chunk_bytes, chunks=chunks,
                tokens=tokens, host_bytes=host, requests=requests, write_policy=policy,
                restore_tokens=restore_tokens, restore_bytes=restore_bytes, restore_seconds=seconds, link=link,
                rule=rule, release=None if release is None else str(release))


def _per_rank_gib(ask: OffloadAsk) -> Fraction:
    """One rank's share of the tier in GiB: offload-gib as the chosen engine's flag means it."""
    if ask.backend == "native" and ask.engine in (None, _VLLM):
        return ask.gib / (ask.tp * ask.pp)        # a total over one engine's ranks
    return ask.gib                                # SGLang per rank, LMCache per worker


def launch_flags(ask: OffloadAsk, engine: str | None) -> list[str]:
    """The flags for the tier on `engine`'s launch command (the LMCache size goes in the
    environment: launch_env). For an engine other than the one sized as, the same bytes per rank in
    that engine's unit; none where it cannot hold the tier as asked (llama.cpp; LMCache on SGLang;
    SGLang under 1 GB a rank). Never raises: every launch command is written."""
    per_rank = _per_rank_gib(ask)
    if engine == _VLLM:
        return ["--kv-offloading-size", _dec(per_rank * ask.tp * ask.pp), "--kv-offloading-backend", ask.backend]
    if engine == _SGLANG and ask.backend == "native":
        gb = int(per_rank * GIB // GB)            # --hicache-size: whole decimal GB per rank
        return ["--enable-hierarchical-cache", "--hicache-size", str(gb)] if gb >= 1 else []
    return []


def launch_env(ask: OffloadAsk, engine: str | None) -> dict:
    """LMCache's per-worker size (lmcache/v1/config.py reads LMCACHE_<KEY>)."""
    if engine == _VLLM and ask.backend == "lmcache":
        return {"LMCACHE_MAX_LOCAL_CPU_SIZE": _dec(ask.gib)}
    return {}


def figures(ask: OffloadAsk, scenario, result) -> dict:
    """The tier's figures for reports and the CLI JSON, with plain sentences."""
    t = tier(ask, ask.engine, scenario, result)
    flags = launch_flags(ask, ask.engine)
    env = launch_env(ask, ask.engine)
    ctx = scenario.workload.context_tokens
    lines = [f"KV offload tier: {t.rule}.",
             f"It stores {t.bytes_per_token_stored:,} B per token ({t.bytes_per_token_per_rank:,} B per rank x "
             f"{t.copies}); the busiest host holds {_gib(t.host_bytes)} GiB of it.",
             f"At {ctx:,} tokens a request it holds {t.requests:,} whole requests; write policy: {t.write_policy}."]
    if ask.engine == _SGLANG:
        lines.append(f"offload-gib {_dec(ask.gib)} GiB = {float(ask.gib * GIB / GB):.3f} GB; SGLang's --hicache-size is "
                     f"a whole number of decimal GB per rank, so --hicache-size {_sglang_gb(ask)}.")
    if t.link is None:
        lines.append("No offload-link given: no time to bring a prefix back (pcie4, pcie5 or nvme).")
    else:
        lines.append(f"Bringing one request's {t.restore_tokens:,} tokens back moves {t.restore_bytes:,} B over "
                     f"{t.link.title} at {float(t.link.bytes_per_s) / GB:.2f} GB/s ({t.link.source}): at least "
                     f"{float(t.restore_seconds) * 1000:,.1f} ms, a lower bound (the link's peak, no latency or "
                     f"engine overhead).")
    if flags or env:
        lines.append("Launch: " + " ".join([f"{k}={v}" for k, v in env.items()] + flags) + ".")
    return {"offload_bytes": t.capacity_bytes, "offload_capacity_scope": t.capacity_scope,
            "offload_host_bytes": t.host_bytes, "offload_tokens": t.tokens, "offload_requests": t.requests,
            "offload_chunks": t.chunks, "offload_chunk_tokens": t.chunk_tokens, "offload_chunk_bytes": t.chunk_bytes,
            "offload_bytes_per_token": t.bytes_per_token_stored,
            "offload_bytes_per_token_per_rank": t.bytes_per_token_per_rank,
            "offload_replicated_layout": t.replicated_layout, "offload_write_policy": t.write_policy,
            "offload_restore_tokens": t.restore_tokens, "offload_restore_bytes": t.restore_bytes,
            "offload_restore_seconds": t.restore_seconds,
            "offload_link": None if t.link is None else t.link.name,
            "offload_link_bytes_per_s": None if t.link is None else t.link.bytes_per_s,
            "offload_flags": flags, "offload_env": env, "lines": lines}


def _dec(value) -> str:
    """An exact decimal for a Fraction with a finite expansion (what the parser reads), else 6 places."""
    value = Fraction(value)
    for digits in range(0, 13):
        scaled = value * 10 ** digits
        if scaled.denominator == 1:
            whole = int(scaled)
            text = str(whole).rjust(digits + 1, "0")
            return text if digits == 0 else f"{text[:-digits]}.{text[-digits:]}"
    return f"{float(value):.6f}"


def _gib(n: int) -> str:
    return f"{n / GIB:,.2f}"
