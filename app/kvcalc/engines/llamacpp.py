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
"""

from dataclasses import dataclass
from fractions import Fraction

from ..errors import InputError
from ..layers import IndexedAttention
from ..command_line import Launch, past_limit, prefill_chunk, requests, shell_join
from ..units import GIB, ceil_div
from .result import Budget, EngineResult

NAME, TITLE = "llama.cpp", "llama.cpp"
KV_MEMORY_LOGGED = False     # it logs the cache in MiB of its own buffers, not a memory budget
SEPARATE_V = True            # -ctk and -ctv
TOKENS_LABEL = "cells per sequence stream"
REFUSED_MAX_LEN_WORDS = ""
USABLE_WORDS = ""

MIB = 1 << 20
PAD = 256
DEFAULT_UBATCH = 512
LLAMA_MAX_SEQ = 256                  # src/llama-cparams.h
N_BATCH = 2048                       # default -b; n_ubatch = min(n_batch, n_ubatch), so a larger -ub needs -b
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
# attention (on by default on CUDA, -fa auto) no n_head x n_kv score matrix is built; what
# remains is the logits (4 B x n_vocab per token), the attention mask (n_kv per token) and a
# few hidden-width activations. Fitted on published CUDA0 lines: GLM-Z1-32B at 32K 352 vs 353
# MiB (ik_llama.cpp PR #370), GLM-4.5-Air at 128K with -ub 4096 3,520 vs 3,584 MiB (PR #689),
# Qwen2.5-VL-3B at 4K, -ub 4096 2,470 vs 2,470 MiB; across eleven logs within about 15%.
COMPUTE_BUFFER_ERROR = "within about 15%"


def compute_buffer_bytes(model, pool: Pool, ubatch: int) -> int | None:
    """llama.cpp's "CUDA0 compute buffer size", estimated; None without the model's widths."""
    if not model.hidden_size or not model.vocab_size:
        return None
    tokens = min(ubatch, pool.kv_tokens * (1 if pool.unified else pool.seqs))
    n_kv = pool.max_context_per_seq
    hidden = 4 * tokens * model.hidden_size
    return max(4 * tokens * model.vocab_size + 2 * tokens * n_kv + 2 * hidden, 6 * tokens * n_kv + 5 * hidden)


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


def default_chunk(dep) -> int:
    return DEFAULT_UBATCH


def usable_memory(dep, settings, chunk: int, notes: list, ideal_usable: int) -> int:
    return ideal_usable             # it allocates what it is asked for, within the GPU's memory


def estimate_overhead(model, tp: int, chunk: int, notes: list) -> tuple[None, int]:
    # Its compute buffer depends on the cache it allocates: size() subtracts it.
    return None, 0


def size(scenario, chunk: int, budget: Budget, notes: list) -> EngineResult:
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    v_precision = scenario.settings.v_precision or work.kv_precision
    pool = allocate(model, work.kv_precision, v_precision, work.context_tokens, work.batch, ubatch=chunk)
    on_gpu = bytes_on_busiest_gpu(model, pool, dep.gpus)
    compute = compute_buffer_bytes(model, pool, chunk)
    available, activation, overhead = budget.kv_bytes_per_gpu, budget.activation_bytes_per_gpu, budget.overhead_bytes_per_gpu
    extra_log = []
    if compute is None:
        notes.append("llama.cpp's compute buffer (a few hundred MiB) is not counted: this model does not give "
                     "its vocabulary size and hidden size.")
    else:
        extra_log.append(compute_buffer_line(compute) + f"   (estimated, {COMPUTE_BUFFER_ERROR})")
        if available is not None and budget.source != "overhead-gib":
            available -= compute
            activation = overhead = compute
        notes.append(f"llama.cpp's compute buffer, estimated at {compute / MIB:,.0f} MiB "
                     f"({COMPUTE_BUFFER_ERROR}) for -ub {chunk:,} with flash attention, comes out of the "
                     "memory beside the weights.")
    starts = None if available is None else on_gpu <= available
    if dep.gpus > 1:
        notes.append(f"llama.cpp splits layers over the {dep.gpus} GPUs; the busiest holds "
                     f"{on_gpu / GIB:.2f} GiB of the cache.")
    refusal = None
    if starts is False:
        refusal = "the KV cache does not fit beside the weights: llama.cpp fails to allocate its buffers"
    return EngineResult(
        engine=NAME, block_size=PAD, prefill_chunk=chunk, kv_budget_bytes_per_gpu=available,
        kv_bytes_per_request=pool.bytes_total // pool.seqs, kv_tokens=pool.kv_tokens,
        max_concurrency=pool.max_concurrency, starts=starts, max_model_len=pool.max_context_per_seq,
        refusal=refusal, activation_bytes_per_gpu=activation, overhead_bytes_per_gpu=overhead,
        budget_source=budget.source, log=tuple(log_lines(pool) + extra_log + ([refusal] if refusal else [])),
        notes=tuple(notes))


def stores(kv_precision) -> bool:
    return NAME in kv_precision.engines


def explain(scenario, out: EngineResult) -> list[str]:
    return ["llama.cpp allocates exactly the cache it is asked for: -c cells padded to 256, one stream per "
            "sequence unless unified, sliding layers in their own smaller cache."]


def launch(scenario, result=None) -> Launch:
    """`llama-server` with the flags that size this deployment."""
    work, dep, notes = scenario.workload, scenario.deployment, []
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
    args = ["llama-server", "-m", model, "-c", str(work.context_tokens * slots), "-np", str(slots),
            "-ctk", cache, "-ctv", v_cache, "-ngl", "999"]
    if past_limit(scenario):
        notes.append(f"the context is past the model's training context ({scenario.model.max_context_tokens:,}): "
                     "llama.cpp starts, warns that n_ctx_per_seq > n_ctx_train, and quality past it may suffer")
    ubatch = prefill_chunk(scenario, default_chunk(scenario.deployment), "-ub", notes)
    if ubatch and int(ubatch[1]) > N_BATCH:
        args += ["-b", ubatch[1]]        # llama.cpp takes min(-b, -ub), and -b defaults to N_BATCH
    args += ubatch
    if v_cache not in ("f32", "f16", "bf16"):
        args += ["-fa", "on"]
        notes.append("a quantized V cache needs flash attention (-fa on)")
    notes.append("point -m at a GGUF conversion of the model")
    if dep.gpus > 1:
        notes.append(f"llama.cpp has no tensor parallelism: over {dep.gpus} GPUs it splits layers "
                     "(--split-mode layer, the default)")
    if work.block_size_tokens > 1 or work.prefix_tokens:
        notes.append("llama.cpp has no block-size or shared-prefix flag; those inputs are not in this command")
    return Launch(NAME, shell_join(args), tuple(notes))
