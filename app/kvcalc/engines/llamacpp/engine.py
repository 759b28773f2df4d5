"""llama.cpp: a cache of cells, padded, per sequence unless unified; K and V types apart.

Read from llama.cpp's sources (2025-2026 master):
- src/llama-context.cpp (llama_context::llama_context): n_ctx is padded to a multiple of 256;
  with -np N and a cache that is not unified each sequence gets n_ctx_seq = pad(n_ctx / N, 256)
  cells and the cache holds n_ctx_seq x N.
- src/llama-kv-cache.cpp (llama_kv_cache constructor, size_k_bytes / size_v_bytes): each layer
  stores ggml_row_size(type_k, n_embd_k_gqa) and ggml_row_size(type_v, n_embd_v_gqa) bytes per
  cell and stream; logged as "llama_kv_cache: size = X MiB (N cells, L layers, S/S seqs), K (t):
  .. MiB, V (t): .. MiB".
- src/llama-kv-cache-iswa.cpp: the sliding layers get their own cache of
  pad(min(n_ctx_seq, n_swa x (unified ? n_seq : 1) + n_ubatch), 256) cells (--swa-full: all).
- Default -ub (n_ubatch) 512; K and V f16.

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

import re
import sys
from dataclasses import dataclass
from fractions import Fraction

from ... import parallel
from . import PLACEMENT
from ...errors import InputError
from ...layers import IndexedAttention
from ...precision import precision
from ...command_line import Launch, past_limit, prefill_chunk, requests, shell_join
from ...units import GIB, ceil_div
from ...words import plural
from .. import releases
from ..result import Band, Budget, BudgetSource, EngineResult
from .serving import SERVING  # noqa: F401  its serving rules, asked by serving/ through the registry

# Builds as llama.cpp numbers them (b5192); the rules below were read across these builds: from
# b4462 (the oldest start-up log checked, tests/fixtures/logs/llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log)
# to b9272 (issue #23527: the last build known to reserve n_ubatch logits rows).
FIRST_RELEASE, NEWEST_RELEASE = "b4462", "b9272"
VERSION_EXAMPLE, VERSIONS_BY_BUILD = "b5192", True
parse_version = releases.build_number
NAME, TITLE = "llama.cpp", "llama.cpp"
ALIASES = ("llamacpp", "llama-cpp", "llama_cpp")     # as --engine also takes it
LOG_READER = "log"           # its start-up log's reader: engines/llamacpp/log.py
OWN_OPTIONS = ("flash-attn", "n-gpu-layers", "n-cpu-moe")     # options only llama.cpp takes
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

MIB = 1 << 20
PAD = 256
PADS_CELLS_TO = PAD          # the cells a context takes, padded to whole 256s (the source formula says so)
DEFAULT_UBATCH = 512
LLAMA_MAX_SEQ = 256                  # src/llama-cparams.h
N_BATCH = 2048                       # default -b; n_ubatch = min(n_batch, n_ubatch), so a larger -ub needs -b
FA_AUTO_BUILD = 6325                 # PR #15434: -fa on|off|auto, default auto (release b6325's notes)
N_CPU_MOE_BUILD = 6089               # PR #15077: --n-cpu-moe (release b6089)
OP_OFFLOAD_MIN_BATCH = 32            # ggml-cuda.cu offload_op: CPU-held weights are copied to the GPU for
                                     # ops of a batch >= 32 (ggml-backend.cpp scheduler, "1.off")
# Architectures whose sliding layers llama.cpp gives their own cache (LLAMA_SWA_TYPE_STANDARD in
# src/llama-model.cpp). Others with a window in config.json (Mistral's llama arch, Phi-3, where
# "Phi SWA is currently disabled") keep every token in every layer.
ISWA_ARCHITECTURES = ("Gemma2", "Gemma3", "Gemma4", "Cohere2", "GptOss", "Exaone4")
GGML_TYPES = {"fp32": "f32", "fp16": "f16", "bf16": "bf16", "q8_0": "q8_0", "q5_1": "q5_1", "q5_0": "q5_0",
              "q4_1": "q4_1", "q4_0": "q4_0", "iq4_nl": "iq4_nl"}


def _pad(n: int) -> int:
    return ceil_div(n, PAD) * PAD


@dataclass(frozen=True)
class Cache:
    cells: int                    # per stream, as logged
    layers: int
    k_bytes: int
    v_bytes: int


@dataclass(frozen=True)
class Pool:
    caches: tuple[Cache, ...]     # the main cache, then the sliding-window cache of iSWA models
    layer_bytes: tuple[int, ...]  # each layer's K and V, in model order (for the split over GPUs)
    seqs: int
    unified: bool
    k_type: str
    v_type: str
    kv_tokens: int                # cells of the main cache
    max_context_per_seq: int      # cells one sequence may use
    bytes_total: int

    @property
    def max_concurrency(self) -> Fraction:
        return Fraction(self.seqs)


def ggml_type(precision, field: str) -> str:
    name = GGML_TYPES.get(precision.name)
    if name is None:
        raise InputError(field, f"llama.cpp cannot store the KV cache as {precision.name}; it takes "
                                f"{', '.join(GGML_TYPES)}")
    return name


def allocate(model, k_precision, v_precision, context: int, seqs: int, unified: bool = False,
             ubatch: int = DEFAULT_UBATCH) -> Pool:
    k_type, v_type = ggml_type(k_precision, "kv-dtype"), ggml_type(v_precision, "kv-dtype-v")
    if any(layer.kind in ("mla", "state", "chunked") or isinstance(layer, IndexedAttention) for layer in model.layers):
        raise InputError("engine", "llama.cpp's caches for MLA, recurrent, chunked-attention and index-key layers are "
                                   "not modelled yet, so llama.cpp figures for this model are refused")
    if seqs > LLAMA_MAX_SEQ:
        raise InputError("batch", f"llama.cpp serves at most {LLAMA_MAX_SEQ} parallel sequences (-np)")
    if context * seqs >= 1 << 32:
        raise InputError("context", "llama.cpp's context (-c = context x requests) must be under 2^32 tokens")
    n_ctx = _pad(context * seqs)
    n_ctx_seq = n_ctx if unified else _pad(n_ctx // seqs)
    iswa = any(name in (model.architecture or "") for name in ISWA_ARCHITECTURES)
    full = [layer for layer in model.layers if layer.kind == "full" or (layer.kind == "sliding" and not iswa)]
    sliding = [layer for layer in model.layers if layer.kind == "sliding" and iswa]
    caches = []

    def cache(layers, cells_per_stream, streams):
        k = sum(k_precision.bytes_for(layer.kv_heads * layer.head_dim) for layer in layers)
        v = sum(v_precision.bytes_for(layer.kv_heads * (layer.v_head_dim or layer.head_dim)) for layer in layers)
        return Cache(cells_per_stream, len(layers), k * cells_per_stream * streams,
                     v * cells_per_stream * streams)

    streams = 1 if unified else seqs
    swa_cells = None
    if full or not sliding:
        caches.append(cache(full, n_ctx_seq, streams))
    if sliding:
        window = max(layer.window for layer in sliding)
        swa_cells = _pad(min(n_ctx_seq, window * (seqs if unified else 1) + ubatch))
        caches.append(cache(sliding, swa_cells, streams))
    per_layer = []
    for layer in model.layers:
        if layer.held_range(1) is None:
            per_layer.append(0)
            continue
        cells = swa_cells if (layer.kind == "sliding" and iswa) else n_ctx_seq
        per_cell = k_precision.bytes_for(layer.kv_heads * layer.head_dim) + \
            v_precision.bytes_for(layer.kv_heads * (layer.v_head_dim or layer.head_dim))
        per_layer.append(per_cell * cells * streams)
    return Pool(tuple(caches), tuple(per_layer), seqs, unified, k_type, v_type, caches[0].cells, n_ctx_seq,
                sum(c.k_bytes + c.v_bytes for c in caches))


# The compute buffer, an estimate: llama_context reserves the graph of one ubatch of
# min(n_ctx, n_ubatch) tokens, every one an output, and ggml-alloc (ggml/src/ggml-alloc.c)
# keeps the high-water mark of one layer's live tensors plus the output head. With flash
# attention (on by default on CUDA from b6325, -fa auto) no n_head x n_kv score matrix is built;
# what remains is the logits (4 B x n_vocab per token), the attention mask (n_kv per token) and
# a few hidden-width activations. Fitted on published CUDA0 lines: GLM-Z1-32B at 32K 352 vs 353
# MiB (ik_llama.cpp PR #370), GLM-4.5-Air at 128K with -ub 4096 3,520 vs 3,584 MiB (PR #689),
# Qwen2.5-VL-3B at 4K, -ub 4096 2,470 vs 2,470 MiB; across eleven logs within about 15%.
#
# Without flash attention (src/llama-graph.cpp build_attn_mha) each layer builds
# kq = mul_mat(k, q), f32 [n_kv, n_tokens, n_head], and soft_max_ext writes over it in place
# (ggml-alloc reuses a parent that has no other user), with an f32 mask [n_kv, n_tokens]: the
# layer's peak is 4 B x n_tokens x n_kv x (n_head + 1) plus four hidden-width rows. On a
# Mistral-7B-class log (fedora-copr/logdetective PR #106, flash_attn = 0, -ub 512) that is
# 164.00 MiB at 2,048 cells and 2,144.00 MiB at 32,768, both to the MiB.
COMPUTE_BUFFER_ERROR = "within about 15%"
COMPUTE_BUFFER_BAND = Fraction(15, 100)     # the band the eleven logs support, either way


def compute_buffer_bytes(model, pool: Pool, ubatch: int, flash: bool = True) -> int | None:
    """llama.cpp's "CUDA0 compute buffer size", estimated; None without the model's widths."""
    if not model.hidden_size or not model.vocab_size:
        return None
    tokens = min(ubatch, pool.kv_tokens * (1 if pool.unified else pool.seqs))
    n_kv = pool.max_context_per_seq
    hidden = 4 * tokens * model.hidden_size
    output = 4 * tokens * model.vocab_size + 2 * tokens * n_kv + 2 * hidden
    if flash:
        return max(output, 6 * tokens * n_kv + 5 * hidden)
    if not model.attention_heads:
        raise InputError("attention-heads", "llama.cpp without flash attention keeps a heads x context x ubatch "
                                            "score buffer: it needs the model's query heads (attention-heads), "
                                            "or set flash-attn on")
    return max(output, 4 * tokens * n_kv * (model.attention_heads + 1) + 4 * hidden)


def output_buffer_bytes(model, seqs: int) -> int | None:
    """llama.cpp's host "output buffer size": the logits of n_seq_max outputs, f32
    (llama_context::output_reserve(n_seq_max), in every build read here since PR #6122); it lives
    in pinned host memory (CUDA_Host), not on the GPU, and grows when a batch asks for more."""
    if not model.vocab_size:
        return None
    return 4 * model.vocab_size * seqs


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


@dataclass(frozen=True)
class Offload:
    """Where -ngl puts the layers (src/llama-model.cpp load_tensors): the last `gpu_layers`
    repeating layers on the GPU (i_gpu_start = n_layer - ngl), the output head too only when
    ngl > n_layer; each layer's KV cache on its layer's device (src/llama-kv-cache.cpp,
    model.dev_layer(il), unless --no-kv-offload)."""
    layers: int
    gpu_layers: int
    output_on_gpu: bool

    @property
    def partial(self) -> bool:
        return self.gpu_layers < self.layers or not self.output_on_gpu

    @property
    def first_gpu_layer(self) -> int:
        return self.layers - self.gpu_layers


def offload(model, settings) -> Offload:
    n_layer = len(model.layers)
    ngl = settings.n_gpu_layers
    if ngl is None:
        return Offload(n_layer, n_layer, True)
    return Offload(n_layer, min(ngl, n_layer), ngl > n_layer)


def _output_head_bytes(model, settings) -> int | None:
    """The output head's bytes, vocabulary x hidden at the weights' dtype, where both are known."""
    dtype = settings.weights_dtype or model.weights_dtype
    if not (model.vocab_size and model.hidden_size and dtype):
        return None
    return precision(dtype, field="weights-dtype").bytes_for(model.vocab_size * model.hidden_size)


def _weights_on_cpu(model, settings, weights: int, place: Offload, notes: list) -> tuple[int, int]:
    """The weights -ngl leaves in CPU memory, and the largest of them one prompt ubatch copies to
    the GPU: the CPU layers' even share (as for a split over GPUs: what each layer weighs is not
    known here) and the output head when it stays there."""
    head = _output_head_bytes(model, settings)
    if head is not None and head >= weights:
        head = None
    layer = (weights - (head or 0)) // place.layers
    cpu_layers = place.layers - place.gpu_layers
    cpu = layer * cpu_layers
    parts = [f"{cpu_layers} of the {place.layers} layers"] if cpu_layers else []
    if not place.output_on_gpu and head is not None:
        cpu += head
        parts.append("the output head")
    staging = max(layer if cpu_layers else 0, head if not place.output_on_gpu and head is not None else 0) or layer
    notes.append(f"-ngl {settings.n_gpu_layers}: llama.cpp keeps {' and '.join(parts) or 'nothing'} in CPU memory "
                 f"({cpu / GIB:.2f} GiB of weights, an even share per layer"
                 f"{', and those layers’ KV cache' if cpu_layers else ''}); the GPU holds the last "
                 f"{place.gpu_layers} layers' weights and cache.")
    return cpu, staging


def compute_buffer_line(compute_bytes: int) -> str:
    # src/llama-context.cpp: "%10s compute buffer size = %8.2f MiB" per backend.
    return f"llama_context: {'CUDA0':>10s} compute buffer size = {compute_bytes / MIB:8.2f} MiB"


def bytes_on_busiest_gpu(model, pool: Pool, gpus: int) -> int:
    """llama.cpp splits layers over GPUs (--split-mode layer, an even split by default): the
    cache on the GPU that holds the most."""
    busiest, start = 0, 0
    for stage in model.stages(gpus):
        size = sum(stage.values())
        busiest = max(busiest, sum(pool.layer_bytes[start:start + size]))
        start += size
    return busiest


def log_lines(pool: Pool) -> list[str]:
    lines = []
    seqs = f"{pool.seqs:2d}/{1 if pool.unified else pool.seqs}"
    for n, c in enumerate(pool.caches):
        if len(pool.caches) > 1:
            lines.append(f"llama_kv_cache_iswa: creating {'non-SWA' if n == 0 else '    SWA'} KV cache, "
                         f"size = {c.cells} cells")
        # src/llama-kv-cache.cpp: "size = %7.2f MiB (%6u cells, %3d layers, %2u/%u seqs), K (%s): %7.2f MiB, ..."
        lines.append(f"llama_kv_cache: size = {(c.k_bytes + c.v_bytes) / MIB:7.2f} MiB ({c.cells:6d} cells, "
                     f"{c.layers:3d} layers, {seqs} seqs), K ({pool.k_type}): {c.k_bytes / MIB:7.2f} MiB, "
                     f"V ({pool.v_type}): {c.v_bytes / MIB:7.2f} MiB")
    return lines


# Our own full cache's size line (log_lines): "llama_kv_cache: size = X MiB (N cells, L layers".
_OUR_SIZE = re.compile(r"llama_kv_cache: size = {0,8}(\d{1,12}\.\d\d) MiB \( {0,8}\d{1,12} cells, {0,8}(\d{1,6}) layers")


def _our_full_cache(result):
    return next((m for m in map(_OUR_SIZE.match, result.log or ()) if m), None)


def our_cache_mib(result):
    """The full cache's MiB as our llama_kv_cache line prints it (K + V of its buffers), or None."""
    found = _our_full_cache(result)
    return None if found is None else Fraction(found[1])


def our_cache_layers(result):
    found = _our_full_cache(result)
    return None if found is None else int(found[2])


# The figures llama.cpp prints of its KV cache that ours gives in the same terms, for
# log_flow.mismatches: (the reader's printed name, what it is, ours from an EngineResult, how
# far apart two figures printed to 2 decimals of a MiB may be, the unit).
LOG_FIGURES = (("kv_cache_mib", "KV cache size (its KV buffers)", our_cache_mib, Fraction(1, 100), "MiB"),
               ("kv_layers", "KV cache layers", our_cache_layers, 0, "layers"))


def default_chunk(scenario) -> int:
    return DEFAULT_UBATCH


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
                 "a parameter, an estimate: quantized files differ per tensor); a prompt ubatch copies one layer's "
                 "experts to the GPU.")
    return per_layer * layers, per_layer


def size(scenario, chunk: int, budget: Budget, notes: list) -> EngineResult:
    model, work, dep, settings = scenario.model, scenario.workload, scenario.deployment, scenario.settings
    parallel.check(model, dep, PLACEMENT)      # no data or expert parallelism
    v_precision = settings.v_precision or work.kv_precision
    pool = allocate(model, work.kv_precision, v_precision, work.context_tokens, work.batch, ubatch=chunk)
    flash, why_flash = flash_attention(settings, pool.v_type)
    if not flash and work.context_tokens % PAD:
        # Before PR #16812 a cache without flash attention was padded to 32 cells (PR #7257); from
        # PR #17046 always to 256. Which builds between b4462 and b9272 those are is not pinned here.
        raise InputError("context", f"without flash attention llama.cpp padded the cache to 32 cells in older "
                                    f"builds and to 256 in newer ones: give a context that is a multiple of "
                                    f"{PAD} (or flash-attn on) for figures that hold in every build")
    _check_cpu_moe(model, settings, notes)
    draft_pool = _draft_pool(scenario, chunk)
    place = offload(model, settings)
    if place.partial and draft_pool is not None:
        raise InputError("n-gpu-layers", "partial offload (-ngl) with a draft model is not modelled; offload every layer")
    if place.partial and dep.gpus > 1:
        raise InputError("n-gpu-layers", f"-ngl {settings.n_gpu_layers} over {dep.gpus} GPUs: llama.cpp splits "
                                         "the offloaded layers by -ts or free memory, which is not modelled; "
                                         "use one GPU or all layers")
    available, activation, overhead = budget.kv_bytes_per_gpu, budget.activation_bytes_per_gpu, budget.overhead_bytes_per_gpu
    staging = 0
    if place.partial:
        on_gpu = sum(pool.layer_bytes[place.first_gpu_layer:])
        weights = dep.weights_bytes
        if available is not None and budget.source is not BudgetSource.GIVEN_KV_MEMORY:
            if weights is None:
                raise InputError("n-gpu-layers", "partial offload needs the weights' size (params or weights-gib)")
            cpu_weights, staging = _weights_on_cpu(model, settings, weights, place, notes)
            available += cpu_weights
        else:
            notes.append(f"-ngl {settings.n_gpu_layers}: the KV cache of the {place.layers - place.gpu_layers} "
                         "CPU layers stays in CPU memory.")
    else:
        on_gpu = bytes_on_busiest_gpu(model, pool, dep.gpus)
    moe_cpu, moe_staging = experts_on_cpu(model, settings, dep.weights_bytes, notes)
    if moe_cpu:
        if dep.gpus > 1:
            raise InputError("n-cpu-moe", "--n-cpu-moe over several GPUs depends on how llama.cpp splits the "
                                          "layers left on them, which is not modelled; use one GPU")
        if available is not None and budget.source is not BudgetSource.GIVEN_KV_MEMORY:
            available += moe_cpu
        staging = max(staging, moe_staging)
    if draft_pool is not None:
        if available is not None and budget.source is not BudgetSource.GIVEN_KV_MEMORY:
            available -= draft_pool.bytes_total
        notes.append(_draft_words(scenario.serving.draft, draft_pool))
    compute = compute_buffer_bytes(model, pool, chunk, flash)
    if compute is not None and min(chunk, pool.kv_tokens) >= OP_OFFLOAD_MIN_BATCH:
        # A prompt ubatch runs the CPU layers' matmuls on the GPU, their weights copied into the
        # compute buffer one split (layer) at a time (ggml-backend.cpp scheduler, op offload).
        compute += staging
    else:
        staging = 0
    extra_log = []
    if settings.n_gpu_layers is not None:
        extra_log.append(f"load_tensors: offloaded {place.gpu_layers + place.output_on_gpu}/{place.layers + 1} "
                         "layers to GPU")
    if place.partial:
        extra_log.append(f"llama_kv_cache: {'CUDA0':>10s} KV buffer size = {on_gpu / MIB:8.2f} MiB")
        if pool.bytes_total > on_gpu:
            extra_log.append(f"llama_kv_cache: {'CPU':>10s} KV buffer size = {(pool.bytes_total - on_gpu) / MIB:8.2f} MiB")
    if compute is None:
        notes.append("llama.cpp's compute buffer (a few hundred MiB) is not counted: this model does not give "
                     "its vocabulary size and hidden size.")
    else:
        extra_log.append(compute_buffer_line(compute) + f"   (estimated, {COMPUTE_BUFFER_ERROR})")
        if available is not None and budget.source is not BudgetSource.GIVEN_OVERHEAD:
            available -= compute
            activation = overhead = compute
        attention = "with flash attention" if flash else \
            f"without flash attention (its {model.attention_heads} heads x {pool.max_context_per_seq:,} cells score buffer)"
        if settings.flash_attn is not None or not flash:
            attention += f", {why_flash}"
        staged = f", {staging / MIB:,.0f} MiB of it one CPU layer's weights copied in for prompt ubatches" \
            if staging else ""
        notes.append(f"llama.cpp's compute buffer, estimated at {compute / MIB:,.0f} MiB "
                     f"({COMPUTE_BUFFER_ERROR}) for -ub {chunk:,} {attention}{staged}, comes out of the "
                     "memory beside the weights.")
    starts = None if available is None else on_gpu <= available
    if dep.gpus > 1:
        notes.append(f"llama.cpp splits layers over the {dep.gpus} GPUs; the busiest holds "
                     f"{on_gpu / GIB:.2f} GiB of the cache.")
    refusal = None
    if starts is False:
        refusal = "the KV cache does not fit beside the weights: llama.cpp fails to allocate its buffers"
    band = None
    if compute is not None and available is not None and budget.source is BudgetSource.ESTIMATE:
        spread = int(compute * COMPUTE_BUFFER_BAND)
        band = tuple(Band(compute + d, available - d, on_gpu <= available - d, pool.max_concurrency, pool.kv_tokens)
                     for d in (spread, -spread))
    return EngineResult(
        engine=NAME, block_size=PAD, prefill_chunk=chunk, kv_budget_bytes_per_gpu=available,
        kv_bytes_per_request=pool.bytes_total // pool.seqs, kv_tokens=pool.kv_tokens,
        max_concurrency=pool.max_concurrency, starts=starts, max_model_len=pool.max_context_per_seq,
        refusal=refusal, activation_bytes_per_gpu=activation, overhead_bytes_per_gpu=overhead,
        budget_source=budget.source, log=tuple(log_lines(pool) + extra_log + (
            log_lines(draft_pool) if draft_pool is not None else []) + ([refusal] if refusal else [])),
        notes=tuple(notes), band=band, kv_bytes_on_busiest_gpu=on_gpu)


def _draft_pool(scenario, chunk: int) -> Pool | None:
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
        return allocate(draft.model, f16, f16, work.context_tokens, work.batch, ubatch=chunk)
    except InputError as e:
        raise InputError("draft-model", f"the draft {draft.name}: {e.message}") from None


def _draft_words(draft, pool: Pool) -> str:
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
    return NAME in kv_precision.engines


def explain(scenario, out: EngineResult) -> list[str]:
    return ["llama.cpp allocates exactly the cache it is asked for: -c cells padded to 256, one stream per "
            "sequence unless unified, sliding layers in their own smaller cache."]


def launch(scenario, result=None) -> Launch:
    """`llama-server` with the flags that size this deployment."""
    work, dep, notes = scenario.workload, scenario.deployment, []
    try:
        parallel.check(scenario.model, dep, PLACEMENT)
    except InputError as e:
        return Launch(NAME, None, (e.message,))
    kv = scenario.workload.kv_precision.name
    if kv not in GGML_TYPES:
        return Launch(NAME, None, (f"llama.cpp cannot store the KV cache as {kv}; its cache types: "
                                          f"{', '.join(GGML_TYPES)}",))
    cache = GGML_TYPES[kv]
    v_cache = cache
    if scenario.settings.v_precision is not None:
        v_name = scenario.settings.v_precision.name
        if v_name not in GGML_TYPES:
            return Launch(NAME, None, (f"llama.cpp cannot store the V cache as {v_name}; its cache types: "
                                              f"{', '.join(GGML_TYPES)}",))
        v_cache = GGML_TYPES[v_name]
    model = f"{scenario.model.hf_repo.split('/')[-1]}.gguf" if scenario.model.hf_repo else "MODEL.gguf"
    # -c is the whole cache, shared by the -np parallel slots: context x requests.
    slots = requests(scenario, result, "llama.cpp", "-np", notes) or 1
    settings = scenario.settings
    ngl = "999" if settings.n_gpu_layers is None else str(settings.n_gpu_layers)
    args = ["llama-server", "-m", model, "-c", str(work.context_tokens * slots), "-np", str(slots),
            "-ctk", cache, "-ctv", v_cache, "-ngl", ngl]
    if past_limit(scenario):
        notes.append(f"the context is past the model's training context ({scenario.model.max_context_tokens:,}): "
                     "llama.cpp starts, warns that n_ctx_per_seq > n_ctx_train, and quality past it may suffer")
    ubatch = prefill_chunk(scenario, default_chunk(scenario), "-ub", notes)
    if ubatch and int(ubatch[1]) > N_BATCH:
        args += ["-b", ubatch[1]]        # llama.cpp takes min(-b, -ub), and -b defaults to N_BATCH
    args += ubatch
    # From b6325 (PR #15434) -fa takes on|off|auto; before it, a bare -fa switched it on.
    valued = build_of(settings) >= FA_AUTO_BUILD
    if settings.flash_attn is not None:
        if settings.flash_attn == "off" and v_cache not in ("f32", "f16", "bf16"):
            return Launch(NAME, None, (f"llama.cpp refuses a quantized V cache ({v_cache}) without flash attention",))
        if valued:
            args += ["-fa", settings.flash_attn]
        elif settings.flash_attn == "on":
            args += ["-fa"]
    elif v_cache not in ("f32", "f16", "bf16"):
        args += ["-fa", "on"] if valued else ["-fa"]
        notes.append("a quantized V cache needs flash attention (-fa on)")
    if settings.n_cpu_moe:
        if build_of(settings) < N_CPU_MOE_BUILD:
            return Launch(NAME, None, (f"--n-cpu-moe came in llama.cpp b{N_CPU_MOE_BUILD} (PR #15077)",))
        args += ["--n-cpu-moe", str(settings.n_cpu_moe)]
    notes.append("point -m at a GGUF conversion of the model")
    if dep.gpus > 1:
        notes.append(f"llama.cpp has no tensor parallelism: over {dep.gpus} GPUs it splits layers "
                     "(--split-mode layer, the default)")
    if work.block_size_tokens > 1 or work.prefix_tokens:
        notes.append("llama.cpp has no block-size or shared-prefix flag; those inputs are not in this command")
    return Launch(NAME, shell_join(args), tuple(notes))
