"""llama.cpp's KV cells and buffers: a cache of cells per layer, padded to 256, one stream per
sequence unless unified, K and V types apart; the sliding layers' own cache (iSWA); where -ngl and
the GPUs put each layer's cache; and its compute and output buffers.

Read from llama.cpp's sources (2025-2026 master):
- src/llama-context.cpp (llama_context::llama_context): n_ctx is padded to a multiple of 256;
  with -np N and a cache that is not unified each sequence gets n_ctx_seq = pad(n_ctx / N, 256)
  cells and the cache holds n_ctx_seq x N.
- src/llama-kv-cache.cpp (llama_kv_cache constructor, size_k_bytes / size_v_bytes): each layer
  stores ggml_row_size(type_k, n_embd_k_gqa) and ggml_row_size(type_v, n_embd_v_gqa) bytes per
  cell and stream.
- src/llama-kv-cache-iswa.cpp: the sliding layers get their own cache of
  pad(min(n_ctx_seq, n_swa x (unified ? n_seq : 1) + n_ubatch), 256) cells (--swa-full: all).
- Default -ub (n_ubatch) 512; K and V f16.

Worked example, Llama 3.1 8B (32 layers, 8 KV heads of 128) at -c 8192 -np 2, f16: each sequence
gets pad(8,192 / 2, 256) = 4,096 cells in its own stream; a cell is 32 x 8 x 128 x 2 B = 65,536 B
of K and as much of V, so K = V = 4,096 x 2 x 65,536 B = 512.00 MiB, 1,024.00 MiB in all, and one
sequence's buffer is 536,870,912 B.
"""

import bisect
import struct
from dataclasses import dataclass
from fractions import Fraction

from ...errors import InputError
from ...layers import IndexedAttention
from ...units import MIB, ceil_div

PAD = 256
DEFAULT_UBATCH = 512
LLAMA_MAX_SEQ = 256                  # src/llama-cparams.h
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


def bytes_on_busiest_gpu(model, pool: Pool, gpus: int, proportions: tuple | None = None) -> int:
    """The cache on the GPU that holds the most, the layers split as llama.cpp splits them (split())."""
    place = split(Offload(len(model.layers), len(model.layers), True), gpus, proportions)
    return max(sum(pool.layer_bytes[i] for i in layers) for layers in place.layers)


def _f32(x: float) -> float:
    """x rounded to a C float (IEEE binary32), as llama.cpp's split points are computed: one
    operation of two floats done in a double and rounded once is the float operation's result."""
    return struct.unpack("f", struct.pack("f", x))[0]


@dataclass(frozen=True)
class Split:
    """Which GPU holds which layer (--split-mode layer): each GPU's repeating layers, in model
    order, and the GPU holding the output layer (None: it stays on the CPU)."""
    layers: tuple[tuple[int, ...], ...]
    output: int | None


def split(place: "Offload", gpus: int, proportions: tuple | None = None) -> Split:
    """llama.cpp's placement of the offloaded layers over its GPUs, src/llama-model.cpp
    llama_model::load_tensors (b4462 to b9272 alike): the split points are the proportions' running
    sums over their total, in floats (-ts / --tensor-split, common/arg.cpp std::stof each; with none,
    or all 0, each device's free memory: identical GPUs an even split); a layer slot il of
    i_gpu_start..i_gpu_start + act_gpu_layers - 1 (slot n_layer is the output layer) goes to GPU
    std::upper_bound(splits, float(il - i_gpu_start) / act_gpu_layers), the first point above its
    fraction. So 64 layers and the output over -ts 10,6 are 41 on the first GPU and 23 with the
    output on the second (tests/fixtures/logs/llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log: CUDA0
    2788.00 and CUDA1 1564.00 MiB of KV, 68 MiB a layer), and an even split of 80 layers is 41/39,
    not 40/40 (the output layer is the 81st slot: llamacpp-llama31-70b-q4_0-rpc-2nodes-b6209.log,
    656.00 and 624.00 MiB)."""
    values = [1.0] * gpus if proportions is None or not any(proportions) else         [_f32(float(p)) for p in proportions] + [0.0] * (gpus - len(proportions))
    points, total = [], 0.0
    for value in values:
        total = _f32(total + value)
        points.append(total)
    points = [_f32(point / total) for point in points]
    start, act = place.first_gpu_layer, place.offloaded
    held: list[list[int]] = [[] for _ in range(gpus)]
    output = None
    for il in range(start, start + act):
        fraction = _f32(float(il - start) / float(act))
        gpu = bisect.bisect_right(points, fraction)
        if il == place.layers:
            output = gpu
        else:
            held[gpu].append(il)
    return Split(tuple(tuple(layers) for layers in held), output)


# Where -ngl puts the layers, src/llama-model.cpp (llama_model::load_tensors, get_layer_buft_list):
# layer slots 0..n_layer-1 are the repeating layers and slot n_layer the output layer (output_norm,
# output); a slot at or past i_gpu_start goes to the GPU, and the token embeddings always stay on
# the CPU (dev_input). Before PR #18148 ("llama: offload output layer to GPU first", opened
# 2025-12-17) i_gpu_start = max(n_layer - ngl, 0): the last ngl repeating layers, the output layer
# only once ngl > n_layer. From it i_gpu_start = max(n_layer + 1 - ngl, 0): the output layer
# first, then the last ngl - 1 repeating layers, so -ngl n_layer leaves layer 0 on the CPU. Either
# way llama.cpp prints "offloaded min(ngl, n_layer + 1)/(n_layer + 1) layers to GPU", so that line
# does not tell the two apart; its order does (the new code prints "offloading output layer to
# GPU" before the repeating layers). Neither build is pinned: b7003 was out by 2025-11-09 (a log
# in PR #16653), before the PR was opened, and a master build of 2025-12-23 already puts the
# output first with -ngl 14 of Gemma 3 1B's 26 layers ("offloading output layer to GPU",
# "offloading 13 repeating layers to GPU", tests/fixtures/logs/llamacpp-gemma3-1b-ngl14-940m-
# ub64-nofa.log); b8299 (March 2026) is past it. Builds between are refused for a partial -ngl.
OUTPUT_LAST_UNTIL = 7003
OUTPUT_FIRST_FROM = 8299


@dataclass(frozen=True)
class Offload:
    """Where -ngl puts the layers: the last `gpu_layers` repeating layers on the GPU
    (first_gpu_layer on), the output layer there when `output_on_gpu`; each layer's KV cache on
    its layer's device (src/llama-kv-cache.cpp, model.dev_layer(il), unless --no-kv-offload)."""
    layers: int
    gpu_layers: int
    output_on_gpu: bool

    @property
    def partial(self) -> bool:
        return self.gpu_layers < self.layers or not self.output_on_gpu

    @property
    def first_gpu_layer(self) -> int:
        return self.layers - self.gpu_layers

    @property
    def offloaded(self) -> int:
        """What llama.cpp prints as "offloaded N/(n_layer + 1) layers": min(ngl, n_layer + 1)."""
        return self.gpu_layers + self.output_on_gpu


def offload(model, settings, build: int) -> Offload:
    """The placement -ngl gives in llama.cpp build `build` (see OUTPUT_LAST_UNTIL)."""
    n_layer = len(model.layers)
    ngl = settings.n_gpu_layers
    if ngl is None or ngl > n_layer:
        return Offload(n_layer, n_layer, True)
    if build <= OUTPUT_LAST_UNTIL:
        return Offload(n_layer, ngl, False)
    if build >= OUTPUT_FIRST_FROM:
        return Offload(n_layer, max(ngl - 1, 0), ngl >= 1)
    raise InputError("n-gpu-layers", f"-ngl {ngl} of {n_layer} layers: llama.cpp b{build} is between b{OUTPUT_LAST_UNTIL}, "
                                     f"which offloads the output layer last (only when ngl > n_layer), and "
                                     f"b{OUTPUT_FIRST_FROM}, which offloads it first (PR #18148); which of the two "
                                     f"this build does is not pinned. Give engine-version b{OUTPUT_LAST_UNTIL} or "
                                     f"older, b{OUTPUT_FIRST_FROM} or newer, or -ngl {n_layer + 1} (every layer)")


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
    tokens = reserve_tokens(pool, ubatch)
    hidden = 4 * tokens * model.hidden_size
    output = 4 * tokens * model.vocab_size + 2 * tokens * pool.max_context_per_seq + 2 * hidden
    return max(output, attention_bytes(model, pool, ubatch, flash))


def attention_bytes(model, pool: Pool, ubatch: int, flash: bool = True) -> int:
    """The compute buffer's attention moment (above): with flash attention the mask and a few
    hidden rows, without it the heads x cells x ubatch scores as well."""
    tokens = reserve_tokens(pool, ubatch)
    n_kv = pool.max_context_per_seq
    hidden = 4 * tokens * model.hidden_size
    if flash:
        return 6 * tokens * n_kv + 5 * hidden
    if not model.attention_heads:
        raise InputError("attention-heads", "llama.cpp without flash attention keeps a heads x context x ubatch "
                                            "score buffer: it needs the model's query heads (attention-heads), "
                                            "or set flash-attn on")
    return 4 * tokens * n_kv * (model.attention_heads + 1) + 4 * hidden


def reserve_tokens(pool: Pool, ubatch: int) -> int:
    """The tokens of the graph llama_context reserves: min(n_ctx, n_ubatch)."""
    return min(ubatch, pool.kv_tokens * (1 if pool.unified else pool.seqs))


# Weights in CPU memory on the GPU's compute buffer (partial -ngl, --n-cpu-moe). The scheduler
# (ggml/src/ggml-backend.cpp, ggml_backend_sched_split_graph) runs an op whose weight lives in host
# memory on a GPU whose offload_op accepts it (CUDA/HIP: a batch of OP_OFFLOAD_MIN_BATCH = 32 rows
# or more, ggml-cuda.cu; PR #6083, "the weights are now copied to VRAM in the compute buffer"),
# and the ops between follow it there (pass 2, "expand gpu up/down"). Each such weight opens a split
# of its own ("by starting a new split, the memory of the previously offloaded weights can be
# reused"), and its copy is a node of the graph that ggml-alloc frees after its one use: the
# compute buffer holds one copied weight at a time, next to that moment's activations, not a layer.
# The reserved graph has n_ubatch tokens, every one an output (through b9272), so at -ub 512:
# - the output layer on the CPU: its weight copy, its input rows and the logits, exactly
#   head + 4 B x T x (n_vocab + n_embd). Qwen3 0.6B, -ngl 0 at b5489, -ub 512 (tied Q6_K head of
#   151,936 x 1,024: 127,626,240 B): 121.71 + 296.75 + 2.00 = 420.46 MiB against 422.92 printed
#   (tests/fixtures/logs/llamacpp-qwen3-0.6b-ngl0-orin-4k-nofa-b5489.log).
# - a repeating layer on the CPU: its largest matrix (dense: n_embd x n_ff; MoE: one of
#   ffn_{gate,up,down}_exps, every expert of it) and the FFN's rows around it, 4 B x T x
#   (2 x width + 2 x n_embd) with width n_ff, or experts_per_token x the expert width.
# - a CPU layer's attention: it follows the GPU-run matmuls around it (pass 2), and its K and V
#   views (one stream's cells, in CPU memory) are inputs the GPU cannot read, so pass 5 "creates a
#   copy of the input in the split's backend" beside the attention's own buffers.
# - with the output layer on the GPU (-ngl 14 of Gemma 3 1B from PR #18148) the logits peak as at
#   full offload: 4 x 64 x (262,144 + 1,152) B = 64.28 MiB, as printed
#   (tests/fixtures/logs/llamacpp-gemma3-1b-ngl14-940m-ub64-nofa.log).
OP_OFFLOAD_MIN_BATCH = 32
Q6_K = Fraction(210 * 8, 256)          # ggml-common.h block_q6_K: 210 B per 256 weights


def head_copy_bytes(model, pool: Pool, ubatch: int, head: int) -> int:
    """The compute buffer at the output layer when its weight (`head` bytes) is in CPU memory."""
    tokens = reserve_tokens(pool, ubatch)
    return head + 4 * tokens * (model.vocab_size + model.hidden_size)


def layer_copy_bytes(model, pool: Pool, ubatch: int, bytes_per_param: Fraction) -> int | None:
    """The compute buffer at a CPU layer's largest matrix, copied in for a prompt ubatch; None
    without the widths it needs."""
    tokens = reserve_tokens(pool, ubatch)
    if model.experts and model.moe_mlp_size and model.hidden_size:
        params = model.experts * model.hidden_size * model.moe_mlp_size
        width = (model.experts_per_token or 1) * model.moe_mlp_size
    elif model.mlp_size and model.hidden_size:
        params = model.hidden_size * model.mlp_size
        width = model.mlp_size
    else:
        return None
    return ceil_div(params * bytes_per_param.numerator, bytes_per_param.denominator) + \
        4 * tokens * (2 * width + 2 * model.hidden_size)


def output_buffer_bytes(model, seqs: int) -> int | None:
    """llama.cpp's host "output buffer size": the logits of n_seq_max outputs, f32
    (llama_context::output_reserve(n_seq_max), in every build read here since PR #6122); it lives
    in pinned host memory (CUDA_Host), not on the GPU, and grows when a batch asks for more."""
    if not model.vocab_size:
        return None
    return 4 * model.vocab_size * seqs
