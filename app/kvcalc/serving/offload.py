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
Each engine's facts (what its size means, its backends, the releases that changed them, its flags)
are data in its home (engines/<engine>/serving.py OFFLOAD); each backend names the scheme whose
formula sizes it here (SCHEMES), asked through rules.py.
"""

from dataclasses import dataclass
from fractions import Fraction

from ..errors import InputError
from ..engines.serving_rules import OffloadBackend
from ..sizing import bytes_per_token
from ..units import GB, GIB, ceil_div
from .rules import rules_of, title

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


def _layout(deployment) -> tuple[int, int, int]:
    # Without the deployment (a tier typed alone), one GPU.
    if deployment is not None:
        return deployment.tp, deployment.pp, deployment.dp
    return 1, 1, 1


def _backend(ask: OffloadAsk) -> OffloadBackend:
    """The backend as the engine the tier was typed for runs it (what its size means)."""
    return rules_of(ask.engine).offload.backend(ask.backend)


def offload_from(asked, engine: str | None, deployment=None, release=None) -> OffloadAsk | None:
    """The tier the inputs ask for (asked: the ServingSettings), checked by `engine`'s rules
    (InputError naming the field otherwise): its options need offload-gib; a backend the engine
    does not run is refused, and an engine without such a tier; the busiest host must hold it
    within host-memory-gib. With `release` (the engine's Release) it is refused where that release
    has no such flag."""
    gib = asked.offload_gib
    if gib is None:
        for name, value in (("offload-backend", asked.offload_backend), ("offload-link", asked.offload_link),
                            ("host-memory-gib", asked.host_memory_gib)):
            if value is not None:
                raise InputError(name, "describes a host-memory KV tier: give its size with offload-gib "
                                       "(GiB, e.g. 64) too, or leave it out")
        return None
    if gib == 0:
        return None                  # a tier of nothing: none
    backend = asked.offload_backend or "native"
    rules = rules_of(engine).offload
    if rules.refusal:
        raise InputError("offload-gib", rules.refusal)
    runs = rules.backend(backend)
    if runs is None:
        raise InputError("offload-backend", dict(rules.refused_backends).get(
            backend, f"{title(engine)} runs no {backend} tier modelled here: choose offload-backend native, or "
                     "another engine"))
    tp, pp, dp = _layout(deployment)
    ask = OffloadAsk(gib=Fraction(gib), backend=backend, link=asked.offload_link,
                     host_memory_gib=asked.host_memory_gib, engine=engine, tp=tp, pp=pp, dp=dp)
    if release is not None:
        check_release(ask, release)
    if runs.whole_gb:
        _whole_gb(ask, runs)         # refuses a size under one whole GB
    host = host_bytes(ask)
    if ask.host_memory_gib is not None and host > ask.host_memory_gib * GIB:
        raise InputError("offload-gib", f"the tier needs {_gib(host)} GiB on the busiest host ({host_rule(ask)}), "
                                        f"more than host-memory-gib {_dec(ask.host_memory_gib)} GiB: give at most "
                                        f"{_dec(_largest_fitting(ask))} GiB, or more host memory")
    return ask


def check_release(ask: OffloadAsk, release) -> None:
    """Refuse a release without the flag, or whose backend cannot start (the engine's
    OffloadRules.first_release: vLLM before 0.11.1, its native path 0.11.1-0.13.x, SGLang before 0.4.6)."""
    for backend, first, words in rules_of(ask.engine).offload.first_release:
        if (backend is None or backend == ask.backend) and not release.at_least(*first):
            raise InputError("engine-version", words.format(release=release))


def _whole_gb(ask: OffloadAsk, backend: OffloadBackend) -> int:
    """The whole GB per rank a flag of whole decimal GB takes (SGLang's --hicache-size, type=int)
    for the GiB typed: the most that does not exceed them."""
    gb = ask.gib * GIB // GB
    if gb < 1:
        raise InputError("offload-gib", backend.whole_gb_refusal.format(gib=_dec(ask.gib)))
    return int(gb)


def _ranks_on_host(ask: OffloadAsk) -> int:
    return min(ask.gpus, GPUS_PER_HOST)


def capacity_bytes(ask: OffloadAsk) -> int:
    """The tier's bytes as the engine's flag counts them: vLLM and the ideal the total (over one
    engine's tp x pp ranks), SGLang per rank (whole GB), LMCache per worker."""
    backend = _backend(ask)
    if backend.whole_gb:
        return _whole_gb(ask, backend) * GB
    return int(ask.gib * GIB)


def host_bytes(ask: OffloadAsk) -> int:
    """The bytes the busiest host holds for the tier, before chunk rounding: per-rank sizes
    times its ranks, a total spread over the GPUs it spans."""
    ranks = _ranks_on_host(ask)
    backend = _backend(ask)
    if backend.scope != "engine total":
        return capacity_bytes(ask) * ranks
    # vLLM: X for each data-parallel engine (each builds its connector from the same config, not
    # traced), spread over the engine's tp x pp ranks; the ideal: X over all the GPUs.
    per_engine_gpus = ask.tp * ask.pp if backend.per_engine else ask.gpus
    return ceil_div(capacity_bytes(ask) * ranks, per_engine_gpus)


def host_rule(ask: OffloadAsk) -> str:
    backend = _backend(ask)
    return backend.host_words.format(gib=_dec(ask.gib), gb=_whole_gb(ask, backend) if backend.whole_gb else None,
                                     ranks=_ranks_on_host(ask), engine_ranks=ask.tp * ask.pp, gpus=ask.gpus)


def _largest_fitting(ask: OffloadAsk) -> Fraction:
    """The largest offload-gib the host holds, in steps of 1/1024 GiB (1 MiB)."""
    room = ask.host_memory_gib * GIB
    ranks = _ranks_on_host(ask)
    backend = _backend(ask)
    if backend.scope != "engine total":
        per_rank = room / ranks
    else:
        per_rank = room * (ask.tp * ask.pp if backend.per_engine else ask.gpus) / ranks
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


def _block_tokens(engine: str | None, backend: OffloadBackend, scenario, result) -> int:
    if result.engine is not None and result.engine.engine == engine:
        return result.engine.block_size
    if scenario.settings.block_size is not None:
        return scenario.settings.block_size
    return backend.chunk_tokens              # vLLM's default block; SGLang's page 1


def _all_mla(model) -> bool:
    return all(layer.kind == "mla" for layer, _ in model.layer_counts().items())


def _replicated(ask: OffloadAsk, backend: OffloadBackend, scenario, release) -> bool:
    """vLLM 0.27.0 on (distributed/kv_transfer/kv_connector/v1/offloading/config.py): one copy of an
    MLA latent for all tp ranks when MLA, tp > 1, pp = 1, one node (mp backend) and the shared
    mmap region (CUDA or XPU, not ROCm: v1/kv_offload/cpu/spec.py _uses_shared_region)."""
    dep = scenario.deployment
    first = backend.replicated_mla_from
    if first is None or release is None or not release.at_least(*first):
        return False
    platform = dep.gpu.platform if dep.gpu is not None else "cuda"     # a custom GPU: CUDA
    return (_all_mla(scenario.model) and dep.tp > 1 and dep.pp == 1 and dep.tp <= GPUS_PER_HOST
            and platform != "rocm")


def _version(release: tuple) -> str:
    return ".".join(map(str, release))


@dataclass(frozen=True)
class _Sized:
    """What a scheme sizes: the Tier's fields before the restore time."""
    capacity_scope: str
    bytes_per_token_stored: int
    copies: int
    replicated_layout: bool
    chunk_tokens: int
    chunk_bytes: int
    chunks: int
    tokens: int
    host_bytes: int
    write_policy: str
    rule: str


def _exact(ask, engine, backend, release, scenario, result, per_rank, capacity, ranks) -> _Sized:
    """The exact ideal: the tier's bytes of one logical copy, token by token."""
    stored = bytes_per_token(scenario.model.layer_counts(), scenario.workload.kv_precision)
    chunks = capacity // stored
    return _Sized("engine total", stored, 1, False, 1, stored, chunks, chunks,
                  ceil_div(chunks * stored * ranks, ask.gpus), backend.policy,
                  f"the exact ideal: {capacity:,} B // {stored:,} B per token of one logical copy = {chunks:,} tokens")


def _lmcache(ask, engine, backend, release, scenario, result, per_rank, capacity, ranks) -> _Sized:
    """LMCache's local CPU backend: per worker, chunks of 256 tokens rounded up to 4 KiB."""
    world = ask.tp * ask.pp
    chunk_tokens = LMCACHE_CHUNK_TOKENS
    raw = per_rank * chunk_tokens
    chunk_bytes = ceil_div(raw, PAGE_ALIGNMENT) * PAGE_ALIGNMENT
    chunks = capacity // chunk_bytes
    tokens = chunks * chunk_tokens
    rule = (f"LMCache (lmcache/v1/storage_backend/local_cpu_backend.py, per worker): int({_dec(ask.gib)} x 2^30) "
            f"= {capacity:,} B // round_up({per_rank:,} B x {chunk_tokens} tokens = {raw:,} B, 4,096) "
            f"= {chunks:,} chunks x {chunk_tokens} = {tokens:,} tokens")
    if backend.note_from is not None and release is not None and release.at_least(*backend.note_from):
        rule += backend.note_words.format(release=release)
    return _Sized(backend.scope, per_rank * world, world, False, chunk_tokens, chunk_bytes, chunks, tokens,
                  chunks * chunk_bytes * ranks, backend.policy, rule)


def _blocks(ask, engine, backend, release, scenario, result, per_rank, capacity, ranks) -> _Sized:
    """Chunks of one block of every rank's KV (vLLM's CPUOffloadingSpec: block bytes x world_size,
    4 KiB-rounded from backend.aligned_from; one copy of an MLA latent from replicated_mla_from)."""
    world = ask.tp * ask.pp
    chunk_tokens = _block_tokens(engine, backend, scenario, result)
    replicated = _replicated(ask, backend, scenario, release)
    copies = 1 if replicated else world
    raw = per_rank * chunk_tokens * copies
    aligned = backend.aligned_from is not None and (release is None or release.at_least(*backend.aligned_from))
    chunk_bytes = ceil_div(raw, PAGE_ALIGNMENT) * PAGE_ALIGNMENT if aligned else raw
    chunks = capacity // chunk_bytes
    tokens = chunks * chunk_tokens
    where = backend.source_before.words if backend.source_before is not None and \
        backend.source_before.applies(release) else backend.source
    copies_words = (f"1 copy (the replicated MLA layout: one latent for all tp ranks, "
                    f"{_version(backend.replicated_mla_from)} on)" if replicated
                    else f"{copies} cop{'y' if copies == 1 else 'ies'} (world_size = tp x pp)")
    unaligned = f" (no 4 KiB rounding before {_version(backend.aligned_from)})" if backend.aligned_from else ""
    rule = (f"{title(engine)} {release or 'newest'} ({where}): {capacity:,} B // "
            f"{'round_up(' if aligned else ''}{per_rank:,} B x {chunk_tokens} tokens x {copies_words} "
            f"= {raw:,} B{', 4,096)' if aligned else unaligned} "
            f"= {chunks:,} chunks of one {chunk_tokens}-token block = {tokens:,} tokens")
    return _Sized(backend.scope, per_rank * copies, copies, replicated, chunk_tokens, chunk_bytes, chunks, tokens,
                  ceil_div(chunks * chunk_bytes * ranks, world), backend.policy, rule)


def _pages(ask, engine, backend, release, scenario, result, per_rank, capacity, ranks) -> _Sized:
    """Whole GB per rank cut into pages (SGLang's HostKVCache: size // size_per_token, page_num =
    size // page + 1)."""
    world = ask.tp * ask.pp
    page = _block_tokens(engine, backend, scenario, result)
    gb = _whole_gb(ask, backend)
    size = gb * GB // per_rank
    chunks = size // page + 1
    tokens = chunks * page
    policy = backend.policy_before.words if backend.policy_before is not None and \
        backend.policy_before.applies(release) else backend.policy
    rule = (f"{title(engine)} ({backend.source}, per rank): {_dec(ask.gib)} GiB typed "
            f"= {float(ask.gib * GIB / GB):.3f} GB, {backend.size_flag} takes whole GB, so {gb}; {gb} x 10^9 // "
            f"{per_rank:,} B per token = {size:,}; page_num = {size:,} // {page} + 1 = {chunks:,} "
            f"= {tokens:,} tokens")
    return _Sized(backend.scope, per_rank * world, world, False, page, page * per_rank, chunks, tokens,
                  tokens * per_rank * ranks, policy, rule)


# The formula each backend's scheme names (engines/serving_rules.py OffloadBackend.scheme).
SCHEMES = {"exact": _exact, "lmcache": _lmcache, "blocks": _blocks, "pages": _pages}


def tier(ask: OffloadAsk, engine: str | None, scenario, result) -> Tier:
    """The tier as `engine` sizes it for this scenario (its release from scenario.settings)."""
    release = scenario.settings.release if scenario.settings.engine == engine else None
    if release is not None:
        check_release(ask, release)
    backend = rules_of(engine).offload.backend(ask.backend)
    if backend is None:
        raise InputError("offload-backend", f"{title(engine)} runs no {ask.backend} tier modelled here")
    per_rank = _per_rank_bytes_per_token(scenario)
    world = ask.tp * ask.pp
    ctx = scenario.workload.context_tokens
    capacity = capacity_bytes(ask)
    s = SCHEMES[backend.scheme](ask, engine, backend, release, scenario, result, per_rank, capacity,
                                _ranks_on_host(ask))
    units_per_request = ctx // s.chunk_tokens
    requests = s.chunks // units_per_request if units_per_request else 0
    restore_tokens = units_per_request * s.chunk_tokens
    link = LINKS.get(ask.link) if ask.link else None
    if link is None:
        restore_bytes, seconds = restore_tokens * per_rank, None
    elif link.name == "nvme":
        # One drive per host, read for every rank of it (once for a replicated latent).
        share = s.bytes_per_token_stored if engine is None else \
            per_rank * (1 if s.replicated_layout else min(world, GPUS_PER_HOST))
        restore_bytes = restore_tokens * share
        seconds = Fraction(restore_bytes) / link.bytes_per_s
    else:
        # Each GPU's own x16 link, all at once: the bound is one rank's share.
        restore_bytes = restore_tokens * per_rank
        seconds = Fraction(restore_bytes) / link.bytes_per_s
    return Tier(engine=engine, backend=ask.backend, capacity_bytes=capacity,
                capacity_scope=s.capacity_scope, bytes_per_token_per_rank=per_rank,
                bytes_per_token_stored=s.bytes_per_token_stored, copies=s.copies, replicated_layout=s.replicated_layout,
                chunk_tokens=s.chunk_tokens, chunk_bytes=s.chunk_bytes, chunks=s.chunks, tokens=s.tokens,
                host_bytes=s.host_bytes, requests=requests, write_policy=s.write_policy,
                restore_tokens=restore_tokens, restore_bytes=restore_bytes, restore_seconds=seconds, link=link,
                rule=s.rule, release=None if release is None else str(release))


def _per_rank_gib(ask: OffloadAsk) -> Fraction:
    """One rank's share of the tier in GiB: offload-gib as the chosen engine's flag means it."""
    if _backend(ask).scope == "engine total":
        return ask.gib / (ask.tp * ask.pp)        # a total over one engine's ranks
    return ask.gib                                # SGLang per rank, LMCache per worker


def launch_flags(ask: OffloadAsk, engine: str | None) -> list[str]:
    """The flags for the tier on `engine`'s launch command (the LMCache size goes in the
    environment: launch_env). For an engine other than the one sized as, the same bytes per rank in
    that engine's unit; none where it cannot hold the tier as asked (llama.cpp; LMCache on SGLang;
    SGLang under 1 GB a rank). Never raises: every launch command is written."""
    target = rules_of(engine).offload.backend(ask.backend)
    if target is None or not target.flags:
        return []
    per_rank = _per_rank_gib(ask)
    gb = int(per_rank * GIB // GB)                # a flag of whole decimal GB per rank
    if target.whole_gb and gb < 1:
        return []
    return [flag.format(total=_dec(per_rank * ask.tp * ask.pp), gb=gb, backend=ask.backend) for flag in target.flags]


def launch_env(ask: OffloadAsk, engine: str | None) -> dict:
    """The environment the engine's backend reads its size from (LMCache: LMCACHE_<KEY>)."""
    target = rules_of(engine).offload.backend(ask.backend)
    return {} if target is None else {name: value.format(gib=_dec(ask.gib)) for name, value in target.env}


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
    backend = _backend(ask)
    if backend.whole_gb:
        lines.append(backend.whole_gb_words.format(gib=_dec(ask.gib), gb_typed=f"{float(ask.gib * GIB / GB):.3f}",
                                                   gb=_whole_gb(ask, backend)))
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
