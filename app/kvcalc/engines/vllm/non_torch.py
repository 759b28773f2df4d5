"""Memory outside PyTorch's allocator that vLLM's start-up counts against the KV cache: by the GPU
preset's facts (platform, interconnect, unified memory, compute capability) and tp.

Where the figure comes from (vLLM's code):
- vllm/utils/mem_utils.py (vllm/utils/__init__.py before 0.11.1) memory_profiling: non-torch memory is
  (total - free) - torch.cuda.memory_reserved(), its increase from the worker's first snapshot
  (gpu_worker.init_device) to after the profiling run. determine_available_memory
  (vllm/v1/worker/gpu_worker.py, 0.7-0.34; vllm/worker/worker.py in V0) subtracts it with the weights and
  the activation peak from total x utilization.
- What grows between the two snapshots: the CUDA context's lazily loaded kernels and cuBLAS/cuDNN
  handles (0.02-0.35 GiB on one discrete GPU in the logs), and under tensor parallelism NCCL's
  buffers and vLLM's custom all-reduce. Custom all-reduce
  (vllm/distributed/device_communicators/custom_all_reduce.py, CustomAllreduce.__init__, 0.6-0.34) takes
  only 8 MiB + its metadata + 8 MiB of rank data, and is disabled on more than two GPUs that are not
  fully NVLink-connected ("not supported on more than two PCIe-only GPUs"), so PCIe-joined cards run on
  NCCL alone. NCCL's own buffers are what differ: on Hopper and later GPUs joined by NVLink (NVSwitch),
  its NVLink SHARP (NVLS) algorithm keeps far larger buffers, which NCCL 2.22 on connects lazily, at the
  first large all-reduce, i.e. during the profiling run. From 0.11.0 (vLLM PR #25359,
  "ensuring consistent NCCL memory accounting") the first snapshot is taken after NCCL is initialized,
  so only what the profiling run connects counts; the band spans both.
- Unified memory: on Orin (8.7), Thor (11.0) and DGX Spark's GB10 (12.1) MemorySnapshot.measure reads
  the host's available memory (psutil.virtual_memory().available) as the GPU's free memory
  (vllm/utils/mem_utils.py, "On UMA (Orin, Thor and Spark) platform" in 0.13.0; is_integrated_gpu from
  0.22.0; device_memory_info in 0.34.0, read in their wheels; cudaMemGetInfo reports system memory there
  before), so what the host and the process take while it loads and profiles (Python, compile workers,
  pinned buffers, the page cache the OS does not count as available) is counted as non-torch memory: about
  2.2 GiB on a DGX Spark, 1.3 to 4.0 GiB in its logs (the two vLLM 0.20.0 Gemma 4 26B-A4B runs, same flags,
  eleven minutes apart, keep 40.61 and 44.03 GiB for the KV cache). The total stays cudaMemGetInfo's
  (mem_utils.py: total_memory from torch.cuda.mem_get_info / torch.accelerator.get_memory_info), which on an
  integrated GPU is the machine's memory as its kernel counts it, and vLLM requests ceil(total x utilization)
  of it (vllm/v1/worker/utils.py request_memory, 0.25.1): on DGX Spark 119.70 to 121.69 GiB (the preset's
  torch_memory_low_bytes and torch_memory_bytes, data/gpus.json, each from real logs). The estimate takes the
  preset's total; the band's top adds what the lowest total takes away, (total - lowest) x utilization.
  The host moves the CUDA-graph estimate too: profile_cudagraph_memory samples cudaMemGetInfo's own free
  memory around each capture (vllm/v1/worker/gpu_model_runner.py, 0.25.1 wheel), MemFree on an integrated
  GPU (the Gemma 4 twins: 1.69 and 0.91 GiB estimated, 0.66 and 0.28 taken); this band's top holds it.
- Intel XPU: vllm/v1/worker/xpu_worker.py determine_available_memory adds (total - free) - the torch
  allocation (an estimate on client GPUs, which cannot report their free memory): about 1.5 GiB.

- 0.6.4 alone counted the whole of it: its determine_num_available_blocks (vllm/worker/worker.py, read in the
  0.6.4.post1 wheel; PR #9352) takes everything in use on the GPU (mem_get_info's total - free, after
  empty_cache) less what PyTorch has allocated, so the process's own CUDA context (and whatever else runs on
  the GPU) is non-torch memory. 0.6.5 (PR #10511, read in the 0.6.5 wheel: memory_profiling's
  baseline_memory_in_bytes, what was in use at init_device) and every later release count only the increase
  since start-up. CUDA_CONTEXT is added for 0.6.4.

Windows (native) and WSL2 keep more outside PyTorch through their drivers (0.56 GiB on WSL2 at tp 1,
0.74 GiB on Windows at tp 2 in the logs issue 36 names): how a machine runs, not a fact of the GPU, so
it is the band's top and said in the words, never the estimate.

A GPU given only by its memory (no preset) is taken as a workstation's PCIe-joined card, as most such
users run (the consumer and workstation logs: 0.20 GiB at tp 8 on 24 GB Ampere cards, 0.30 at tp 2 on
L40S); the band's top covers NVLink-joined Hopper cards, and the words say which was assumed.
"""

import math

from .printing import format_gib
from ...units import GIB, MIB


# (estimate, lowest, highest), from the real logs in tests/fixtures/logs (SOURCES.md gives each URL):
# one discrete GPU: 0.02 (RTX 4080, 0.10.2), 0.07 (H100 PCIe, 0.10.2), 0.16 (80 GB, 0.9.1), 0.33 (A100,
# 0.26.1), 0.35 (RTX 3090, 0.6.4); the top holds WSL2's 0.56.
ONE_GPU = (150 * MIB, 16 * MIB, 600 * MIB)
# Several GPUs joined by PCIe (or one per machine, over a network): NCCL alone past two cards. 0.30 at tp 2
# on L40S (0.8.2), 0.20 at tp 8 on RTX 3090s (0.8.1); the top holds Windows' 0.74 at tp 2.
# Those logs predate 0.11.0, whose first snapshot follows NCCL's set-up (vllm/v1/worker/gpu_worker.py init_device,
# read in the 0.11.0 and 0.17.0 wheels: init_worker_distributed_environment, then "Now take memory snapshot after
# NCCL is initialized"; PyNcclCommunicator.__init__ already runs "a small all_reduce for warmup",
# device_communicators/pynccl.py 0.11.0), while V0 (worker.py, 0.8.2 wheel) and V1 before 0.11.0 snapshot first.
# Yet the later PCIe logs, less the weights they print and our activation peak, still leave 0.03 GiB at tp 4 on
# RTX 3090s (0.18.1, eager), 0.19 at tp 2 on T4s (0.22.0, eager), 0.25 at tp 4 on L40S (0.19.0) and 0.65 at
# tp 4 on RTX PRO 6000s (0.27.1: 56.89 consumed - 55.19 weights - 1.05 the run keeps): the same spread, so the
# figure stands for every release (tests/engines/test_vllm_pcie_overhead.py), the growth it measures not named.
PCIE = (256 * MIB, 16 * MIB, 800 * MIB)
# NVLink without NVLink SHARP (compute capability under 9.0: A100, V100) and AMD's Infinity Fabric: NCCL's
# ring and tree buffers plus custom all-reduce. 0.17 at tp 2 on A100 80GB (0.27.1), 0.34-0.43 at tp 4 on
# A100 40GB (0.8.3). By tp: 2, up to 4, more.
NVLINK = {2: (256 * MIB, 64 * MIB, 1024 * MIB), 4: (400 * MIB, 64 * MIB, 1280 * MIB),
          8: (512 * MIB, 64 * MIB, 1536 * MIB)}
# NVLink on Hopper and later (NVLS buffers): 1.38 at tp 2 on H200 and about 0.5 at tp 2 on H100 (0.12.0,
# implied by its overhead), 2.04 at tp 4 on H200 (0.10.0); up to about 4.5 GiB at tp 8 before 0.11.0
# counted NCCL's whole set-up (vLLM PR #25359). The lowest is NVLink without NVLS (bridged H100 NVL pairs).
NVLS = {2: (1024 * MIB, 200 * MIB, 2560 * MIB), 4: (1600 * MIB, 300 * MIB, 3072 * MIB),
        8: (1800 * MIB, 300 * MIB, 4608 * MIB)}
# Before 0.11.0 the V1 worker took its first snapshot before NCCL was set up (0.10.0 wheel,
# vllm/v1/worker/gpu_worker.py init_device: MemorySnapshot(), then init_worker_distributed_environment,
# which also builds custom all-reduce and the KV connector; 0.11.0 moves the snapshot after it, "Now take
# memory snapshot after NCCL is initialized"), so the communicators' whole set-up is non-torch memory:
# 2.04 GiB at tp 4 on H200 (0.10.0, the PR #21429 debug log), where 0.11.0 on counts what the profiling run
# connects. Only tp 3-4 is measured; tp 2 and past 4 keep the table's estimate.
NVLS_WHOLE_SETUP = {4: 2089 * MIB}
WHOLE_SETUP_UNTIL = (0, 11, 0)
# What a unified-memory device counts of the host's memory (about 2.2 GiB on a DGX Spark), and Intel XPU's
# non-torch allocation (about 1.5 GiB); each in place of ONE_GPU, with the interconnect's share on top.
# DGX Spark logs (tests/fixtures/logs, SOURCES.md), requested - weights - KV - applied CUDA-graph estimate -
# our activation peak: 3.96 and 1.32 GiB for the 0.20.0 Gemma 4 twins at their 119.70 GiB total, 0.67 (0.19.2rc1
# Qwen3.6 at 0.95), 1.39-1.89 (0.13.0 gpt-oss-20b), 2.4 (0.25.1 Gemma 4 AWQ and NVFP4), 3.3 (0.25.1 Qwen3.6 NVFP4).
UNIFIED = (2250 * MIB, 512 * MIB, 4096 * MIB)
XPU = (1536 * MIB, 512 * MIB, 2560 * MIB)
WINDOWS_TOP = 760 * MIB       # the most a Windows / WSL2 log shows outside PyTorch (0.74 GiB at tp 2)
# The CUDA context a process holds before it loads anything (the runtime, its modules and the per-thread local
# memory it reserves on every SM), which 0.6.4 counts as non-torch memory (WHOLE_GPU): 0.38 GiB on an H100 at
# SGLang's start (engines/sglang/engine.py CONTEXT_BYTES, sglang-qwen3-8b-tp1-mfs090.log), 0.35 GiB context and
# libraries together on an RTX 3090 after loading (vllm-llama3.1-8b-rtx3090-20k-profile-v0.6.4.log, 0.10 GiB of
# them the increase ONE_GPU holds at least); it grows with the SMs, the band spans both cards.
CUDA_CONTEXT = (256 * MIB, 128 * MIB, 512 * MIB)
WHOLE_GPU = ((0, 6, 4), (0, 6, 5))     # the releases that count it: 0.6.4 to its post releases
# 0.6.4 to 0.6.6.post1 subtract what PyTorch has allocated (allocated_bytes.all.current: 0.6.4 worker.py
# determine_num_available_blocks; 0.6.5 and 0.6.6.post1 utils.py MemorySnapshot.measure, read in their wheels), not
# what its caching allocator reserves, from the memory in use after the profiling run and empty_cache(): the
# segments it cannot release (the run's freed blocks split from a segment a surviving tensor shares) are counted
# as non-torch memory. 0.7.0 subtracts torch.cuda.memory_reserved() (utils.py MemorySnapshot.measure, 0.7.0
# wheel). How much stays cached follows the order of allocations, not the inputs: none on the RTX 3090 0.6.4 log
# (15.34 GiB in use before its profiling run, 15.35 after), 1.6 GiB on an H100 at 0.6.5 (1.79 GiB printed):
# up to the profiling run's peak, the band's top (profile.estimate).
ALLOCATED_ONLY = ((0, 6, 4), (0, 7, 0))


def counts_cached(release) -> bool:
    """Whether this release counts what PyTorch's allocator keeps cached as non-torch memory (ALLOCATED_ONLY)."""
    first, until = ALLOCATED_ONLY
    return release is not None and release.at_least(*first) and not release.at_least(*until)


def _by_tp(table: dict, tp: int) -> tuple[int, int, int]:
    return table[2] if tp <= 2 else table[4] if tp <= 4 else table[8]


def _link(tp: int, gpu) -> tuple[tuple[int, int, int], str]:
    """What several GPUs' communicators add, with the whole non-torch figure of a discrete GPU, and
    how they are joined, in words."""
    if gpu is None or gpu.interconnect in ("pcie", "network"):
        joined = "over a network" if gpu is not None and gpu.interconnect == "network" else "by PCIe"
        alone = ", NCCL alone (no custom all-reduce past two cards)" if tp > 2 else ""
        return PCIE, f"{joined}{alone}"
    if gpu.interconnect == "nvlink" and (gpu.cuda_major() or 0) >= 9:
        return _by_tp(NVLS, tp), "by NVLink on Hopper or later (NCCL's NVLink SHARP buffers)"
    fabric = "Infinity Fabric" if gpu.interconnect == "xgmi" else "NVLink"
    return _by_tp(NVLINK, tp), f"by {fabric} (NCCL and custom all-reduce buffers)"


def non_torch_memory(tp: int, gpu, release=None, share=None) -> tuple[int, int, int, str]:
    """(estimate, lowest, highest, words) of the non-torch memory vLLM counts on one rank: by the
    preset's facts and tp (the module's docstring gives the code it comes from), and by `release`
    (None: 0.11.0's accounting) where NCCL's set-up counted whole (NVLS_WHOLE_SETUP) and where the CUDA
    context counts (0.6.4: WHOLE_GPU). `gpu` None is a GPU given only by its memory: taken as a
    PCIe-joined workstation card, NVLink's top in the band. `share`: the --gpu-memory-utilization
    applied to the preset's total (0 when the total is the user's; None: 1, the most), by which a
    unified-memory preset's lowest total lowers the requested memory (_unified)."""
    estimate, low, high, words = _since_start_up(tp, gpu, release, share)
    first, until = WHOLE_GPU
    if release is None or not release.at_least(*first) or release.at_least(*until):
        return estimate, low, high, words
    context = (f"vLLM {release} counts everything on the GPU that PyTorch did not allocate, its CUDA context "
               f"too (about {format_gib(CUDA_CONTEXT[0])} GiB more)")
    return (estimate + CUDA_CONTEXT[0], low + CUDA_CONTEXT[1], high + CUDA_CONTEXT[2],
            f"non-torch memory {format_gib(estimate + CUDA_CONTEXT[0])} GiB: {context}" + (f"; {words}" if words else ""))


def _since_start_up(tp: int, gpu, release=None, share=None) -> tuple[int, int, int, str]:
    """What grows outside PyTorch from the first snapshot to after the profiling run (0.6.5 on)."""
    if gpu is not None and gpu.unified_memory:
        base, where = _unified(gpu, share)
    elif gpu is not None and gpu.platform == "xpu":
        base, where = XPU, "Intel XPU's non-torch allocation"
    else:
        base, where = None, ""
    consumer = gpu is None or gpu.interconnect == "pcie"
    windows = f"; Windows / WSL2 keep more (up to {format_gib(WINDOWS_TOP)} GiB): the band's top" if consumer else ""
    if tp <= 1:
        estimate, low, high = base or ONE_GPU
        high = max(high, WINDOWS_TOP) if consumer else high
        if not where and not windows:
            return estimate, low, high, ""
        return (estimate, low, high,
                f"non-torch memory {format_gib(estimate)} GiB" + (f" ({where})" if where else "") + windows)
    (estimate, low, high), joined = _link(tp, gpu)
    if release is not None and not release.at_least(*WHOLE_SETUP_UNTIL) and (estimate, low, high) == _by_tp(NVLS, tp) \
            and 2 < tp <= 4:
        estimate = NVLS_WHOLE_SETUP[4]
        joined += f"; vLLM {release} counts NCCL's whole set-up (its first snapshot is taken before it)"
    if base is not None:
        # The device's own share in place of one discrete GPU's, the link's on top of it.
        estimate, low, high = (estimate + base[0] - ONE_GPU[0], low + base[1] - ONE_GPU[1],
                               high + base[2] - ONE_GPU[2])
    high = max(high, WINDOWS_TOP) if consumer else high
    if gpu is None:
        high = max(high, _by_tp(NVLS, tp)[2])
        joined = (f"a GPU given only by its memory is taken as a workstation's, joined {joined}; "
                  f"NVLink-joined Hopper cards keep up to {format_gib(high)} GiB, the band's top")
    else:
        joined = f"{tp} GPUs joined {joined}"
    return (estimate, low, high, f"non-torch memory {format_gib(estimate)} GiB at tp {tp}: {joined}"
            + (f"; {where}" if where else "") + windows)


def _unified(gpu, share=None) -> tuple[tuple[int, int, int], str]:
    """A unified-memory GPU's share: UNIFIED, its top raised by what the preset's lowest total takes from the
    requested memory, (total - lowest) x utilization (torch_memory_low_bytes; the module's docstring), in
    words that say the host moves it."""
    estimate, low, high = UNIFIED
    words = (f"unified memory: vLLM takes the host's available memory as the GPU's free memory, so what the host "
             f"and this process hold while it starts moves the KV memory (the band holds up to "
             f"{format_gib(high)} GiB of it outside PyTorch)")
    total, lowest = gpu.torch_memory_bytes, gpu.torch_memory_low_bytes
    less = math.ceil((total - lowest) * (1 if share is None else share)) if total and lowest else 0
    if less > 0:
        high += less
        words += (f"; the total it multiplies is the machine's memory as its kernel counts it, "
                  f"{format_gib(lowest)}-{format_gib(total)} GiB on this GPU: {format_gib(total)} taken, "
                  f"up to {format_gib(less)} GiB less requested in the band's top")
    return (estimate, low, high), words
