"""llama.cpp as the Engine protocol (engines/__init__.py) asks for it: its builds, flash
attention's default, -ngl and --n-cpu-moe placement, its figures and their notes, and its launch
command. Each member asks the piece that owns the rule:
- allocator: the KV cells (padded, per sequence stream unless unified, K and V types apart, the
  sliding layers' own cache), the split over GPUs, the compute and output buffers;
- printing: what its start-up log prints of them;
- launch: `llama-server`;
- log: its start-up log's reader.

Rules that changed between builds, each keyed to the build that changed it (sources and logs in
docs/research/llamacpp-builds.md):
- b6325, PR #15434 ("llama: use FA + max. GPU layers by default"): -fa takes on|off|auto and
  defaults to auto, which src/llama-context.cpp resolves to on when every layer's attention
  lands on the layer's own device ("Flash Attention was auto, set to enabled"); before it -fa
  was a bare switch and flash attention was off unless given.
- b6089, PR #15077 (common/arg.cpp): --n-cpu-moe N keeps the expert tensors (ffn_*_exps) of
  layers 0..N-1 in CPU memory (tensor buffer-type overrides).
- The compute buffer's logits rows: every build read here (to b9272, issue #23527) reserves the
  worst case of n_ubatch output rows (llama_context::sched_reserve passes n_outputs = n_tokens);
  PR #23861 (in a build of b9443-b9479) lets llama-server reserve n_seq_max rows, and #23764 (up
  to b9442) halves the flash-attention mask. Neither build is pinned and no log after them re-fits
  the estimate, so builds after b9272 are refused (docs/research/llamacpp-builds.md).
"""

import sys
from fractions import Fraction

from ... import parallel
from . import PLACEMENT
from ...errors import InputError
from ...precision import precision
from ...units import GIB, ceil_div
from ...words import plural
from .. import releases
from . import allocator, launch as command, printing
from .allocator import MIB
from .launch import FA_AUTO_BUILD, N_CPU_MOE_BUILD
from ..result import Band, Budget, BudgetSource, EngineResult, Sharing
from .serving import SERVING  # noqa: F401  its serving rules, asked by serving/ through the registry

# Builds as llama.cpp numbers them (b5192); the rules below were read across these builds: from
# b4462 (the oldest start-up log checked, tests/fixtures/logs/llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log)
# to b9272 (issue #23527: the last build known to reserve n_ubatch logits rows).
FIRST_RELEASE, NEWEST_RELEASE = "b4462", "b9272"
VERSION_EXAMPLE, VERSIONS_BY_BUILD = "b5192", True
parse_version = releases.build_number
NAME, TITLE = "llama.cpp", "llama.cpp"
KV_PRECISIONS = ("fp32", "fp16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl")   # -ctk / -ctv
ALIASES = ("llamacpp", "llama-cpp", "llama_cpp")     # as --engine also takes it
LOG_READER = "log"           # its start-up log's reader: engines/llamacpp/log.py
FAILURES = "failures"        # its failed starts and their fixes: engines/llamacpp/failures.py
OWN_OPTIONS = ("flash-attn", "n-gpu-layers", "n-cpu-moe", "tensor-split")     # options only llama.cpp takes
USABLE_BY_GPU = True         # the memory utilization x the GPU's total: no layout moves it
# No tensor parallelism: over several GPUs it splits the layers (--split-mode layer, the default),
# so a layout of N GPUs is N stages of whole layers (scenario._deployment), whatever the heads.
SPLITS_LAYERS = True
FILE_FORMATS = ("gguf",)           # a checkpoint in this format is this engine's own
VENDORS = ("NVIDIA", "AMD", "Apple")   # CUDA, ROCm/HIP and Metal builds: every preset
KV_MEMORY_LOGGED = False     # it logs the cache in MiB of its own buffers, not a memory budget
SEPARATE_V = True            # -ctk and -ctv
TOKENS_LABEL = "cells per sequence stream"
REFUSED_MAX_LEN_WORDS = ""
CONCURRENCY_FORMAT = "{:,.0f} sequences"      # its -np
# The engine card's labels, in its own words: llama.cpp serves a fixed number of sequences (-np).
LABELS = {"engine_max_concurrency": "Sequences served at once (-np)",
          "engine_kv_tokens": "KV cells it prints, per sequence stream",
          "engine_kv_budget_bytes_per_gpu": "Memory left for its KV buffers, per GPU",
          "engine_kv_bytes_per_request": "One sequence's KV buffer, all GPUs together",
          "engine_max_model_len": "Context of each sequence (n_ctx_seq it prints)",
          "engine_overhead_band": "Compute buffer per GPU, estimated"}
# It allocates the cells its sequences need (-c), not all the memory left.
ALLOCATES_WHOLE_BUDGET = False
USABLE_WORDS = ""

PADS_CELLS_TO = allocator.PAD          # the cells a context takes, padded to whole 256s (the source formula says so)
OP_OFFLOAD_MIN_BATCH = allocator.OP_OFFLOAD_MIN_BATCH   # ggml-cuda.cu offload_op: CPU-held weights are copied
                                     # to the GPU for ops of a batch >= 32 (ggml-backend.cpp scheduler, "1.off")


def build_of(settings) -> int:
    """The llama.cpp build the rules are read for: the one given, else the newest modelled."""
    return releases.in_force(sys.modules[__name__], settings).key[0]


def flash_attention(settings, v_type: str) -> tuple[bool, str]:
    """Whether flash attention runs, and why: given, -fa auto (from b6325, on where the GPU's
    kernels take the model), or off by default before b6325. A quantized V needs it in every
    build (src/llama-context.cpp refuses "V cache quantization requires flash_attn")."""
    quantized_v = v_type not in ("f32", "f16", "bf16")
    if settings.flash_attn is not None:
        if settings.flash_attn == "off" and quantized_v:
            raise InputError("flash-attn", f"llama.cpp refuses a quantized V cache ({v_type}) without flash "
                                           "attention: set flash-attn on, or a 16-bit kv-dtype-v")
        return settings.flash_attn == "on", f"-fa {settings.flash_attn}"
    if build_of(settings) >= FA_AUTO_BUILD:
        return True, "-fa auto, on where the GPU's kernels take the model (PR #15434, b6325)"
    if quantized_v:
        return True, "-fa, which the quantized V cache needs"
    return False, f"off by default before b{FA_AUTO_BUILD} (PR #15434)"


# src/llama-quant.cpp (llama_tensor_get_type): a quantized GGUF stores output.weight (or, where the
# model ties it, token_embd.weight) as Q6_K unless the file type's own type is Q8_0; 16-bit files
# keep 16 bits. A checkpoint's mean bits per parameter tell which: under 8 a quantized file, 8 to
# 12 a Q8_0 one, else 16-bit.
HEAD_TYPES = {"fp32": precision("fp32"), "fp16": precision("fp16"), "bf16": precision("bf16"),
              "q8_0": precision("q8_0")}


def _output_head_bytes(model, settings, weights: int | None) -> int | None:
    """The output layer's weight, n_vocab x n_embd at the type llama-quant.cpp gives it (above),
    where the widths are known: from weights-dtype when given, else from the checkpoint's mean bits
    per parameter (its weights over its parameters), else the model's dtype."""
    if not (model.vocab_size and model.hidden_size):
        return None
    elements = model.vocab_size * model.hidden_size
    dtype = settings.weights_dtype
    if dtype is None and weights and model.params:
        bits = Fraction(8 * weights, model.params)
        bits_per = Fraction(16) if bits >= 12 else HEAD_TYPES["q8_0"].bits_per_element if bits >= 8 else allocator.Q6_K
        return ceil_div(elements * bits_per.numerator, bits_per.denominator * 8)
    dtype = dtype or model.weights_dtype
    if not dtype:
        return None
    p = precision(dtype, field="weights-dtype")
    if p.name in HEAD_TYPES or p.name not in KV_PRECISIONS:
        return p.bytes_for(elements)          # 16-bit, Q8_0, or a checkpoint that is not a GGUF type
    bits_per = allocator.Q6_K                 # Q4_0, Q5_1, IQ4_NL ... files: a Q6_K head
    return ceil_div(elements * bits_per.numerator, bits_per.denominator * 8)


def _weights_on_cpu(model, settings, weights: int, head: int | None, place: allocator.Offload, notes: list) -> int:
    """The weights -ngl leaves in CPU memory: the CPU layers' even share (as for a split over GPUs:
    what each layer weighs is not known here) and the output layer when it stays there."""
    if head is not None and head >= weights:
        head = None
    layer = (weights - (head or 0)) // place.layers
    cpu_layers = place.layers - place.gpu_layers
    cpu = layer * cpu_layers
    parts = [f"layers 0-{cpu_layers - 1} of {place.layers}" if cpu_layers > 1 else
             f"layer 0 of {place.layers}"] if cpu_layers else []
    if not place.output_on_gpu:
        cpu += head or 0
        parts.append("the output layer")
    gpu = [f"the last {place.gpu_layers} layers" if place.gpu_layers else "no repeating layer"]
    if place.output_on_gpu:
        gpu.append("the output layer")
    notes.append(f"-ngl {settings.n_gpu_layers}: llama.cpp keeps {' and '.join(parts) or 'nothing'} in CPU memory "
                 f"({cpu / GIB:.2f} GiB of weights, an even share per layer"
                 f"{', and those layers’ KV cache' if cpu_layers else ''}); the GPU holds {' and '.join(gpu)}"
                 f"{', with their cache' if place.gpu_layers else ''} (src/llama-model.cpp load_tensors).")
    return cpu


def compute_widths(model) -> bool:
    """Whether the compute buffer can be estimated: the model's hidden and vocabulary widths."""
    return bool(model.hidden_size and model.vocab_size)


def _cpu_weights_moved(scenario, weights: int | None, head: int | None, place: allocator.Offload,
                       notes: list) -> int:
    """With the GPU's weights a log measured (its model buffer, for the log's -ngl): the CPU
    weights this -ngl leaves out beyond the log's, 0 when it is the log's own."""
    measured = scenario.settings.measured
    then = measured.scenario if measured is not None else None
    then_place = allocator.offload(then.model, then.settings, build_of(then.settings)) if then is not None else None
    if then_place is None or then_place == place:
        notes.append(f"-ngl {scenario.settings.n_gpu_layers}: the GPU's weights are the log's model buffer, which "
                     "already leaves the CPU layers' weights out.")
        return 0
    if weights is None:
        raise InputError("n-gpu-layers", f"-ngl {scenario.settings.n_gpu_layers} is not the log's: moving layers off "
                                         "the GPU needs the weights' size (params or weights-gib)")
    quiet = []
    moved = _weights_on_cpu(scenario.model, scenario.settings, weights, head, place, notes) - \
        _weights_on_cpu(then.model, then.settings, weights, head, then_place, quiet)
    notes.append(f"The log's model buffer was for -ngl {then.settings.n_gpu_layers}: this -ngl moves "
                 f"{abs(moved) / GIB:.2f} GiB {'off' if moved > 0 else 'onto'} the GPU.")
    return moved


# The figures llama.cpp prints of its KV cache that ours gives in the same terms, for
# log_flow.mismatches: (the reader's printed name, what it is, ours from an EngineResult, how
# far apart two figures printed to 2 decimals of a MiB may be, the unit).
LOG_FIGURES = (("kv_cache_mib", "KV cache size (its KV buffers)", printing.our_cache_mib, Fraction(1, 100), "MiB"),
               ("kv_layers", "KV cache layers", printing.our_cache_layers, 0, "layers"))


def sharing(scenario) -> Sharing:
    """How a llama-server shares a GPU: it allocates what it needs (its weights, the cells of -c,
    its compute buffers) and no share of the memory, so servers fit together when what each holds
    adds up to the memory at most. Its port: llama-server's default, 8080 (common/arg.cpp)."""
    return Sharing("needs", 0, 8080, (
        "llama.cpp allocates what it needs on each GPU (its weights, the cells of its -c and its compute buffers; "
        "llama-context.cpp) and takes no share of the memory, so the servers fit together when what each holds adds "
        "up to the memory at most; its CUDA context is not counted"))


def default_chunk(scenario) -> int:
    return allocator.DEFAULT_UBATCH


def usable_memory(scenario, chunk: int, notes: list, ideal_usable: int) -> int:
    return ideal_usable             # it allocates what it is asked for, within the GPU's memory


def estimate_overhead(scenario, chunk: int, notes: list) -> tuple[None, int, None]:
    # Its compute buffer depends on the cache it allocates: size() subtracts it.
    return None, 0, None


def _check_cpu_moe(model, settings, notes: list) -> None:
    n = settings.n_cpu_moe
    if not n:
        return
    if build_of(settings) < N_CPU_MOE_BUILD:
        raise InputError("n-cpu-moe", f"--n-cpu-moe came in llama.cpp b{N_CPU_MOE_BUILD} (PR #15077); "
                                      f"b{build_of(settings)} does not have it")
    if model.active_params is None and not model.experts:
        notes.append(f"--n-cpu-moe {n} changes nothing here: this model has no expert tensors (ffn_*_exps) "
                     "for its overrides to match.")


def experts_on_cpu(model, settings, weights: int | None, notes: list) -> tuple[int, int]:
    """(expert weights --n-cpu-moe keeps in CPU memory, the largest a prompt ubatch copies to the
    GPU): layers 0 to N-1's ffn_(gate|up|down)_exps, each experts x 3 x hidden x expert width
    parameters at the checkpoint's mean bytes per parameter (common/arg.cpp, PR #15077)."""
    n = settings.n_cpu_moe
    if not n or not model.experts:
        return 0, 0
    if not (model.moe_mlp_size and model.hidden_size and model.params and weights):
        raise InputError("n-cpu-moe", f"--n-cpu-moe {n} moves each layer's experts to the CPU; this model does not "
                                      "give its expert count, width and parameter count with the weights' size, so "
                                      "what they weigh is not known")
    layer_params = model.experts * 3 * model.hidden_size * model.moe_mlp_size
    per_layer = weights * layer_params // model.params
    layers = min(n, len(model.layers))
    notes.append(f"--n-cpu-moe {n}: the experts of {layers} layers stay in CPU memory, "
                 f"{per_layer * layers / GIB:.2f} GiB ({model.experts} experts x 3 x {model.hidden_size:,} x "
                 f"{model.moe_mlp_size:,} parameters a layer at the checkpoint's mean {weights / model.params:.3g} B "
                 "a parameter, an estimate: quantized files differ per tensor); a prompt ubatch copies them to "
                 "the GPU one expert tensor at a time.")
    return per_layer * layers, per_layer


def size(scenario, chunk: int, budget: Budget, notes: list) -> EngineResult:
    model, work, dep, settings = scenario.model, scenario.workload, scenario.deployment, scenario.settings
    parallel.check(model, dep, PLACEMENT)      # no data or expert parallelism
    v_precision = settings.v_precision or work.kv_precision
    pool = allocator.allocate(model, work.kv_precision, v_precision, work.context_tokens, work.batch, ubatch=chunk)
    flash, why_flash = flash_attention(settings, pool.v_type)
    if not flash and work.context_tokens % allocator.PAD:
        # Before PR #16812 a cache without flash attention was padded to 32 cells (PR #7257); from
        # PR #17046 always to 256. Which builds between b4462 and b9272 those are is not pinned here.
        raise InputError("context", f"without flash attention llama.cpp padded the cache to 32 cells in older "
                                    f"builds and to 256 in newer ones: give a context that is a multiple of "
                                    f"{allocator.PAD} (or flash-attn on) for figures that hold in every build")
    _check_cpu_moe(model, settings, notes)
    draft_pool = _draft_pool(scenario, chunk)
    place = allocator.offload(model, settings, build_of(settings))
    if place.partial and draft_pool is not None:
        raise InputError("n-gpu-layers", "partial offload (-ngl) with a draft model is not modelled; offload every layer")
    if place.partial and dep.gpus > 1 and budget.weights_bytes_per_gpu is not None:
        raise InputError("n-gpu-layers", f"-ngl {settings.n_gpu_layers} over {dep.gpus} GPUs with a log's model "
                                         "buffer: which GPU's buffer it is, for the layers this -ngl moves, is not "
                                         "known; use one GPU or all layers, or leave out the log's weights")
    available, activation, overhead = budget.kv_bytes_per_gpu, budget.activation_bytes_per_gpu, budget.overhead_bytes_per_gpu
    weights = dep.weights_bytes
    head = _output_head_bytes(model, settings, weights)
    per_param = Fraction(weights, model.params) if weights and model.params else None
    copies = []               # (bytes, what) the compute buffer peaks at when weights in CPU memory are copied in
    slack = 0                 # over several GPUs: how much less than the busiest's the tightest GPU has spare
    per_gpu_kv = [None]       # partial offload over several GPUs: each GPU's KV buffer, for the log lines
    if place.partial:
        on_gpu = sum(pool.layer_bytes[place.first_gpu_layer:])
        if dep.gpus > 1:
            # The offloaded layers split over the GPUs (-ts or free memory): each GPU's own weights
            # and cache; the CPU layers' weights are on none of them.
            if weights is not None:
                _weights_on_cpu(model, settings, weights, head, place, notes)
            elif available is not None and budget.source is not BudgetSource.GIVEN_KV_MEMORY:
                raise InputError("n-gpu-layers", "partial offload needs the weights' size (params or weights-gib)")
            on_gpu, available, slack = _split_over_gpus(scenario, pool, place, budget, available, head, notes)
            per_gpu = allocator.split(place, dep.gpus, settings.tensor_split)
            per_gpu_kv = [sum(pool.layer_bytes[i] for i in layers) for layers in per_gpu.layers]
        elif available is not None and budget.source is not BudgetSource.GIVEN_KV_MEMORY:
            if budget.weights_bytes_per_gpu is not None:
                # A log's own model buffer on the GPU: its -ngl's CPU weights are already out of it.
                available += _cpu_weights_moved(scenario, weights, head, place, notes)
            elif weights is None:
                raise InputError("n-gpu-layers", "partial offload needs the weights' size (params or weights-gib)")
            else:
                available += _weights_on_cpu(model, settings, weights, head, place, notes)
        else:
            notes.append(f"-ngl {settings.n_gpu_layers}: the KV cache of the {place.layers - place.gpu_layers} "
                         "CPU layers stays in CPU memory.")
        if not place.output_on_gpu and head is not None:
            copies.append((allocator.head_copy_bytes(model, pool, chunk, head),
                           f"the output layer's weight ({head / MIB:,.0f} MiB) copied in beside the logits"))
        if place.gpu_layers < place.layers and per_param is not None:
            layer = allocator.layer_copy_bytes(model, pool, chunk, per_param)
            if layer is not None:
                copies.append((layer, "a CPU layer's largest weight copied in"))
        cpu_cache = max(pool.layer_bytes[:place.first_gpu_layer], default=0) // (1 if pool.unified else pool.seqs)
        if cpu_cache and compute_widths(model):
            copies.append((allocator.attention_bytes(model, pool, chunk, flash) + cpu_cache,
                           "a CPU layer's K and V copied in for its attention"))
    elif dep.gpus > 1:
        on_gpu, available, slack = _split_over_gpus(scenario, pool, place, budget, available, head, notes)
    else:
        if settings.tensor_split and len(settings.tensor_split) > 1:
            raise InputError("tensor-split", f"-ts gives {len(settings.tensor_split)} proportions for one GPU: "
                                             "give a proportion a GPU, and the GPUs")
        on_gpu = allocator.bytes_on_busiest_gpu(model, pool, dep.gpus)
    moe_cpu, _ = experts_on_cpu(model, settings, weights, notes)
    if moe_cpu:
        if dep.gpus > 1:
            raise InputError("n-cpu-moe", "--n-cpu-moe over several GPUs depends on how llama.cpp splits the "
                                          "layers left on them, which is not modelled; use one GPU")
        if available is not None and budget.source is not BudgetSource.GIVEN_KV_MEMORY:
            available += moe_cpu
        expert = allocator.layer_copy_bytes(model, pool, chunk, per_param)
        if expert is not None:
            copies.append((expert, "one CPU layer's expert tensor copied in"))
    if draft_pool is not None:
        if available is not None and budget.source is not BudgetSource.GIVEN_KV_MEMORY:
            available -= draft_pool.bytes_total
        notes.append(_draft_words(scenario.serving.draft, draft_pool))
    compute = allocator.compute_buffer_bytes(model, pool, chunk, flash)
    staged = ""
    if compute is not None and copies and allocator.reserve_tokens(pool, chunk) >= OP_OFFLOAD_MIN_BATCH:
        # A prompt ubatch runs the CPU-held weights' matmuls on the GPU, each weight copied into
        # the compute buffer in a split of its own (ggml-backend.cpp scheduler, op offload).
        peak, what = max(copies)
        if peak > compute:
            compute = peak
            staged = f", decided by {what} for prompt ubatches"
    extra_log = []
    if settings.n_gpu_layers is not None:
        extra_log.append(f"load_tensors: offloaded {place.offloaded}/{place.layers + 1} "
                         "layers to GPU")
    if place.partial:
        held = [on_gpu] if per_gpu_kv == [None] else per_gpu_kv
        extra_log += [f"llama_kv_cache: {f'CUDA{gpu}':>10s} KV buffer size = {kv / MIB:8.2f} MiB"
                      for gpu, kv in enumerate(held)]
        if pool.bytes_total > sum(held):
            extra_log.append(f"llama_kv_cache: {'CPU':>10s} KV buffer size = {(pool.bytes_total - sum(held)) / MIB:8.2f} MiB")
    if compute is None:
        notes.append("llama.cpp's compute buffer (a few hundred MiB) is not counted: this model does not give "
                     "its vocabulary size and hidden size.")
    else:
        extra_log.append(printing.compute_buffer_line(compute) + f"   (estimated, {allocator.COMPUTE_BUFFER_ERROR})")
        if available is not None and budget.source is not BudgetSource.GIVEN_OVERHEAD:
            available -= compute
            activation = overhead = compute
        attention = "with flash attention" if flash else \
            f"without flash attention (its {model.attention_heads} heads x {pool.max_context_per_seq:,} cells score buffer)"
        if settings.flash_attn is not None or not flash:
            attention += f", {why_flash}"
        notes.append(f"llama.cpp's compute buffer, estimated at {compute / MIB:,.0f} MiB "
                     f"({allocator.COMPUTE_BUFFER_ERROR}) for -ub {chunk:,} {attention}{staged}, comes out of the "
                     "memory beside the weights.")
    starts = None if available is None else on_gpu + slack <= available
    refusal = None
    if starts is False:
        refusal = "the KV cache does not fit beside the weights: llama.cpp fails to allocate its buffers"
    band = None
    if compute is not None and available is not None and budget.source is BudgetSource.ESTIMATE:
        spread = int(compute * allocator.COMPUTE_BUFFER_BAND)
        band = tuple(Band(compute + d, available - d, on_gpu + slack <= available - d, pool.max_concurrency,
                          pool.kv_tokens)
                     for d in (spread, -spread))
    return EngineResult(
        engine=NAME, block_size=allocator.PAD, prefill_chunk=chunk, kv_budget_bytes_per_gpu=available,
        kv_bytes_per_request=pool.bytes_total // pool.seqs, kv_tokens=pool.kv_tokens,
        max_concurrency=pool.max_concurrency, starts=starts, max_model_len=pool.max_context_per_seq,
        refusal=refusal, activation_bytes_per_gpu=activation, overhead_bytes_per_gpu=overhead,
        budget_source=budget.source, log=tuple(printing.log_lines(pool) + extra_log + (
            printing.log_lines(draft_pool) if draft_pool is not None else []) + ([refusal] if refusal else [])),
        notes=tuple(notes), band=band, kv_bytes_on_busiest_gpu=on_gpu)


def _split_over_gpus(scenario, pool: allocator.Pool, place: allocator.Offload, budget: Budget,
                     available: int | None, head: int | None, notes: list) -> tuple[int, int | None, int]:
    """(the KV cache on the GPU holding the most, the memory left there for it, how much less the
    tightest GPU has spare than that one): the layers split as llama.cpp splits them
    (allocator.split, -ts or by free memory), each GPU's weights its layers' even share with the
    output layer's weight on the GPU holding it, so a GPU's memory left moves from the budget's even
    share of the weights by what its own layers weigh."""
    model, dep, settings = scenario.model, scenario.deployment, scenario.settings
    if settings.tensor_split and len(settings.tensor_split) > dep.gpus:
        raise InputError("tensor-split", f"-ts gives {len(settings.tensor_split)} proportions for {dep.gpus} GPUs: "
                                         f"give one a GPU (llama.cpp reads the first {dep.gpus} and ignores the rest)")
    where = allocator.split(place, dep.gpus, settings.tensor_split)
    kv = [sum(pool.layer_bytes[i] for i in layers) for layers in where.layers]
    weights = dep.weights_bytes
    if head is not None and weights is not None and head >= weights:
        head = None
    own = [None] * dep.gpus
    if weights is not None and available is not None and not dep.stage_weights_bytes and \
            budget.weights_bytes_per_gpu is None and budget.source in (BudgetSource.ESTIMATE, BudgetSource.GIVEN_OVERHEAD):
        layer = (weights - (head or 0)) // place.layers
        own = [layer * len(layers) + ((head or 0) if where.output == gpu else 0)
               for gpu, layers in enumerate(where.layers)]
    even = dep.weights_bytes_per_gpu
    spare = [None if available is None else available + (even - w if w is not None else 0) for w in own]
    busiest = max(range(dep.gpus), key=lambda gpu: (kv[gpu], -gpu))
    slack = 0
    if available is not None:
        slack = (spare[busiest] - kv[busiest]) - min(s - k for s, k in zip(spare, kv))
    how = f"-ts {','.join(f'{float(p):g}' for p in settings.tensor_split)}" if settings.tensor_split else \
        "each GPU's free memory (-ts not given): identical GPUs split evenly, the output layer the last slot " \
        "(a layer at an exact boundary may fall either side by the GPUs' free bytes)"
    parts = []
    for gpu, layers in enumerate(where.layers):
        part = f"GPU {gpu}: {len(layers)} layers{' and the output layer' if where.output == gpu else ''}, " \
               f"{kv[gpu] / MIB:,.2f} MiB of KV"
        if own[gpu] is not None:
            part += f", {own[gpu] / GIB:.2f} GiB of weights"
        parts.append(part)
    notes.append(f"llama.cpp splits the layers over the {dep.gpus} GPUs by {how} (src/llama-model.cpp load_tensors): "
                 + "; ".join(parts) + f". GPU {busiest} holds the most cache"
                 + (", each GPU's weights an even share per layer and the output layer's weight on its GPU"
                    if own[busiest] is not None else "" if weights is None or available is None
                    else ", the weights per GPU as measured or given")
                 + "; the compute buffer is counted on every GPU.")
    return kv[busiest], spare[busiest], slack


def _draft_pool(scenario, chunk: int) -> allocator.Pool | None:
    """A draft model's own context (-md): as many cells as the target's, one stream per slot, K
    and V in f16 unless -ctkd/-ctvd say otherwise (PR #10586 "Use F16 KV cache for the draft
    model; set draft context equal to slot context"; tools/server/server-context.cpp load_model,
    late 2025, gives each slot a context of n_ctx_seq cells; common/speculative.cpp
    common_speculative_init_result, 2026, one context of the target's n_ctx with its n_seq_max:
    the same cells). None without a draft."""
    draft = scenario.serving.draft
    if draft is None:
        return None
    if draft.model is None:
        raise InputError("mtp", "llama.cpp's MTP context is not modelled")
    work = scenario.workload
    f16 = precision("fp16")
    try:
        return allocator.allocate(draft.model, f16, f16, work.context_tokens, work.batch, ubatch=chunk)
    except InputError as e:
        raise InputError("draft-model", f"the draft {draft.name}: {e.message}") from None


def _draft_words(draft, pool: allocator.Pool) -> str:
    cache = pool.caches[0]
    return (f"The draft {draft.name} has its own context: {cache.cells:,} cells x {pool.seqs} slot(s) x "
            f"{cache.layers} layers, f16 K and V (-ctkd/-ctvd default) = {pool.bytes_total / MIB:,.2f} MiB on the GPU "
            f"beside its weights ({draft.weights_bytes / GIB:.2f} GiB, the whole draft on the one GPU); the draft "
            "context's compute buffer is not counted.")


def data_parallel(moe: bool) -> bool:
    """It runs no data-parallel ranks (nor tensor parallelism: SPLITS_LAYERS)."""
    return False


def overhead_words(scenario, out: EngineResult) -> str:
    return "llama.cpp's compute buffer per GPU, estimated"


def count_words(scenario, out: EngineResult) -> str:
    batch = scenario.workload.batch
    return (f"llama.cpp allocates the {plural(batch, 'sequence')} asked for (-np {batch}) and holds no more"
            if out.starts else f"llama.cpp does not start: the {plural(batch, 'sequence')} asked for do not fit")


def request_bytes_all_gpus(scenario, out: EngineResult) -> int | None:
    """One sequence's KV buffers on all GPUs: its figure is every GPU's together, split by layers,
    so it is not one GPU's times the GPUs once several GPUs or -ngl split it."""
    dep = scenario.deployment
    if out.kv_bytes_per_request is None or dep.gpus > 1 or scenario.settings.n_gpu_layers is not None:
        return None
    return dep.gpus * out.kv_bytes_per_request


def stores(kv_precision) -> bool:
    return kv_precision.name in KV_PRECISIONS


def explain(scenario, out: EngineResult) -> list[str]:
    return ["llama.cpp allocates exactly the cache it is asked for: -c cells padded to 256, one stream per "
            "sequence unless unified, sliding layers in their own smaller cache."]


def launch(scenario, result=None):
    """`llama-server` with the flags that size this deployment (launch.py)."""
    return command.command(scenario, result, NAME, build_of(scenario.settings), default_chunk(scenario))
