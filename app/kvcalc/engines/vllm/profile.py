"""What vLLM's start-up takes besides the weights, estimated as its profiling run measures it.

vLLM sizes the KV cache as total x utilization - (weights + the torch peak of a profiling run +
non-torch memory) and, from 0.20.0, minus its CUDA-graph estimate (determine_available_memory in
vllm/v1/worker/gpu_worker.py; V0: vllm/worker/worker.py determine_num_available_blocks). The
profiling run (gpu_model_runner.py profile_run) is a dummy forward pass over
max_num_batched_tokens tokens and then a sampler warm-up (_dummy_sampler_run) over min(max_num_seqs,
max_num_batched_tokens) rows of the vocabulary; the peak is the larger of the two.

The terms, each from vLLM's code (docs/research/vllm-profile-peak.md gives file and function):
- Forward, per token of the batch: the layer input, residual and MLP input (3 x hidden; Qwen2-
  and Gemma-style MLPs keep gate_up alive through down_proj, a fourth, and a fifth for the
  out-of-place all-reduce under tp), and gate_up plus the activated output (3 x the MLP width /
  tp), in the model's dtype. Fused MoE holds top-k rows per token of max(2 x expert width / tp,
  hidden) and expert width / tp, over at most its chunk of tokens; from 0.22.0 (the modular Triton
  experts) of max(expert width / tp, hidden) and max(2 x expert width / tp, hidden), held through the
  sampler's warm-up too (moe_workspace).
- Sampler warm-up: bytes per row and vocabulary entry of the top-k/top-p path the release takes
  by default (native sort 38, FlashInfer or Triton 14, the V2 runner's 6 until 0.25.x and its
  model-dtype logits alone from 0.26.0), plus the hidden states it keeps (all of them from 0.9.2).
  V0 samples only on the driver, over max_num_seqs sequences, and the driver's budget binds.
- The cuBLAS workspace its first matmul allocates: 32 MiB on compute capability 9.x to 12.x
  (Hopper, Blackwell), 8 MiB before.
- CUDA graphs (0.20.0 on, V1 runner; V2 from 0.29.0): the graphs the capture sizes give x the
  layers on the stage x 256 KiB (cudagraph_estimate).
- From 0.27.0 (memory consumed since start-up counts), the V2 sampler's per-request penalty
  statistics over the vocabulary (runner_buffers).
- Pipeline parallelism: the last stage runs the sampler and keeps the intermediate tensors it
  receives (pipeline_buffers); the stages before it keep the difference (stage_surplus).
- From 0.27.0 the printed peak activation is the transient above what the run leaves allocated
  (Estimate.kept: cuBLAS and MoE workspaces, the Triton buffer, intermediate tensors), plus the
  CUDA-graph estimate; the total is the same sum.

What the GPU is comes from its preset's facts (readers/gpu_presets.GPU: compute capability, SMs,
interconnect, platform), never from its display name; a custom GPU (given only by its memory) takes
an H100's 132 SMs and the smaller cuBLAS workspace. Non-torch memory (by platform, interconnect,
unified memory and tp; a custom GPU PCIe-joined, Windows / WSL2 in the band's top) is non_torch.py's.

Calibrated on the real logs in tests/fixtures/logs (vllm-*.log, SOURCES.md; the README's table
gives the error per release): the band is what those logs support.
"""

from dataclasses import dataclass
from fractions import Fraction

from ...errors import InputError
from ...units import MIB
from . import release as rules
from .non_torch import counts_cached, non_torch_memory
from . import encoder_profile
from . import pooling as pooler

NATIVE, FUSED = 38, 14                         # sampler bytes per row x vocabulary entry
# The V2 runner's warm-up (vllm/v1/worker/gpu/model_runner.py _dummy_sampler_run, 0.22.0-0.32.0) samples a
# dummy batch without top-k/top-p, and gumbel_sample's Triton kernel reads the logits in place. Its
# Sampler.apply_sampling_params (vllm/v1/worker/gpu/sample/sampler.py) copies the bf16 logits to fp32 first
# in 0.22.0-0.25.x (RUNNER_V2_COPY: 2 + 4 B); from 0.26.0 it works on them in place, and from 0.27.0 returns
# them untouched when no request needs processing (RUNNER_V2: the 2 B logits alone). Under tensor
# parallelism the logits' all-gather (all_gather_into_tensor, then movedim and reshape: a copy) holds two
# whole copies and the rank's slice for a moment.
RUNNER_V2_COPY, RUNNER_V2 = 6, 2
# The Triton top-k/top-p kernel (0.17.0 on) caches a buffer of (SMs) rows of the vocabulary in fp32:
# the device's compute units (current_platform.num_compute_units: SMs, CUs on ROCm), the preset's
# compute_units; a custom GPU takes an H100's 132.
DEFAULT_SMS = 132
TRITON_MIN_ROWS = 8           # apply_top_k_top_p_triton from 8 rows (0.17.0); whenever Triton exists (0.30.0)
# PyTorch's default cuBLAS workspace (aten/src/ATen/cuda/CublasHandlePool.cpp parseChosenWorkspaceSize):
# 4096 x 8 KiB on compute capability 9.x to 12.x (Hopper, Blackwell), ":4096:2:16:8" before.
CUBLAS_32MIB_MAJORS = (9, 10, 11, 12)
CUBLAS_WORKSPACE, CUBLAS_WORKSPACE_BEFORE_HOPPER = 4096 * 8 * 1024, 4096 * 1024 * 2 + 16 * 1024 * 8
# Architectures whose MLP keeps gate_up alive through down_proj (Qwen2MLP, Gemma3MLP).
KEEPS_GATE_UP = ("Qwen2", "Qwen3", "Gemma")
# When a config gives no MLP width, Llama's ratio (14,336 / 4,096 = 7 / 2) stands in for it.
# The CUDA-graph estimate subtracted from 0.20.0 (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "1"
# in vllm/envs.py of the 0.20.0 wheel already, though the log line says "default since v0.21.0").
# V1's GPUModelRunner.profile_cudagraph_memory (vllm/v1/worker/gpu_model_runner.py, 0.18.0-0.34.0) captures the
# two largest graphs of each mode and returns max(first captures) + sum over modes of max(second, 1 MiB) x
# (graphs - 1); V2's (vllm/v1/worker/gpu/cudagraph_utils.py, 0.29.0 on) captures every PIECEWISE graph and
# extrapolates FULL ones the same way. A graph's memory follows its pieces and kernels: one piece per layer
# under PIECEWISE, every layer's kernels in a FULL graph. So the estimate is graphs x layers on the stage x a
# cost per graph and layer: the logs put it at 0.03-0.85 MiB (median 0.24: Phi-3-mini 0.19, Qwen2.5-72B at tp 4
# over PCIe 0.41, Qwen3-30B-A3B 0.10, Gemma 4 26B-A4B 0.25, Qwen3.8-27B int4 0.03, Laguna S 2.1 0.85).
# The band's top: 1 MiB per graph and layer, past the highest the logs show (Laguna S 2.1's 0.85).
GRAPH_LAYER, GRAPH_LAYER_HIGH = 256 * 1024, MIB
GRAPH_FLOOR = MIB                     # max(second capture, 1 << 20) per graph after the first of a mode
# Hybrid GDN models from 0.26.0: the first FULL sample's warm-up runs max_num_batched_tokens of context and its
# transient (about 128 KiB per batched token on Qwen3.5-122B-A10B, vllm-project/vllm#50780) is charged as graph
# memory: the band's top holds it.
HYBRID_TRANSIENT = 128 * 1024
# A multimodal model's profiling run also encodes a batch of its largest inputs (profile_run's
# encoder pass): encoder_profile.py models it from the tower's shapes where they are read (Qwen2.5-VL,
# Qwen3-VL, Qwen3.5 towers on the V1 engine). Elsewhere (a tower not read, V0) nothing is added to the
# estimate and the band's top widens: on the logs it added nothing (LLaVA 1.5) to 2.9 GiB (Qwen3-VL-30B-A3B
# at tp 2) over the language model's peak (36 GiB for V0 Mllama at 128 sequences, past any band).
ENCODER = (0, 0, 3584 * MIB)
# How far the activation estimate may land from a log, either way: torch.compile's buffer reuse
# (the eager live set is an upper bound) and what a log does not print.
ACTIVATION_SLACK = 300 * MIB
ACTIVATION_SHARE = Fraction(8, 100)
# From 0.27.0 vLLM's peak activation is the profiling run's transient only: the torch peak less what is still
# allocated after it (vllm/utils/mem_utils.py memory_profiling: transient_peak_headroom = torch_peak -
# torch_allocated; gpu_worker.py determine_available_memory prints it plus the CUDA-graph estimate as "peak
# activation", read in the 0.27.1 and 0.29.0 wheels). What the run leaves allocated is in "consumed memory
# (weights + non-torch)" (total_consumed, from mem_get_info). Until 0.26.x it printed the torch peak increase.
PEAK_IS_TRANSIENT = (0, 27, 0)


@dataclass(frozen=True)
class Estimate:
    activation: int       # the torch peak increase of the profiling run
    non_torch: int
    cudagraph: int        # what this release subtracts for CUDA graphs (0 where it does not)
    low: int              # the total's band
    high: int
    words: str
    buffers: int = 0      # the runner's own buffers, outside the weights and the peak, that this release counts
    kept: int = 0         # what the profiling run leaves allocated, counted apart from its peak (0.27.0 on)

    @property
    def total(self) -> int:
        return self.activation + self.kept + self.non_torch + self.cudagraph + self.buffers


def _dtype_bytes(model) -> int:
    return 4 if model.dtype == "fp32" else 2       # activations stay in the model dtype when weights are quantized


def cublas_workspace(gpu) -> int:
    """The cuBLAS workspace PyTorch allocates on the first matmul, by the preset's compute
    capability (a custom GPU: the smaller one). ROCm's default in the same file (32 MiB, 128 MiB on
    gfx94x/gfx95x) is not applied: no ROCm vLLM log calibrates it, so ROCm keeps the smaller figure."""
    major = None if gpu is None else gpu.cuda_major()
    return CUBLAS_WORKSPACE if major in CUBLAS_32MIB_MAJORS else CUBLAS_WORKSPACE_BEFORE_HOPPER


def compute_units(gpu) -> int:
    """The SMs (CUs on ROCm) vLLM's Triton sampler sizes its buffer by: the preset's; an H100's 132
    for a custom GPU or a preset whose count is not known."""
    return DEFAULT_SMS if gpu is None or not gpu.compute_units else gpu.compute_units


def moe_chunk(release, tokens: int) -> int:
    """VLLM_FUSED_MOE_CHUNK_SIZE: 32768 to 0.11.1, 16384 in 0.12.0-0.17.1, none from 0.18.0."""
    if release.at_least(0, 18, 0):
        return tokens
    return min(tokens, 16384 if release.at_least(0, 12, 0) else 32768)


def moe_workspace(model, release, tokens: int, moe_tp: int) -> int:
    """What the fused-MoE layer holds for the dummy run's tokens on one rank, in the model's dtype.
    From 0.22.0 the Triton experts run as a modular kernel (TritonExperts, fused_moe/experts/triton_moe.py
    workspace_shapes; read in the 0.22.0, 0.25.1, 0.26.0, 0.27.1 and 0.29.0 wheels): top-k rows per token
    of max(N / 2, hidden) (the gemm outputs, which the layer's output shares: modular_kernel.py
    _allocate_buffers) and of max(N, hidden) (the activation), N = 2 x expert width / tp, taken from the
    worker's WorkspaceManager (vllm/v1/worker/workspace.py get_simultaneous), which keeps them allocated.
    Before, fused_experts_impl (fused_moe.py) shares one cache of max(N, hidden) for the gemm outputs and
    adds N / 2 for the activation, over at most its chunk of tokens, freed after each layer."""
    if not (model.moe_mlp_size and model.experts_per_token):
        return 0
    b, hidden, k = _dtype_bytes(model), model.hidden_size, model.experts_per_token
    n = 2 * model.moe_mlp_size // moe_tp
    if release.at_least(0, 22, 0):
        return b * tokens * k * (max(n // 2, hidden) + max(n, hidden))
    return b * moe_chunk(release, tokens) * k * (max(n, hidden) + n // 2)


def forward_peak(model, release, tp: int, tokens: int, moe_tp: int | None = None) -> tuple[int, str]:
    """The dummy forward pass's peak on one rank, and how the MLP width was known. `moe_tp` is
    what splits an expert's width: tp, tp x dp under data parallelism (FusedMoEParallelConfig
    flattens tp across dp), 1 with expert parallelism (whole experts).
    What the eager code holds per token at the MLP (read in the 0.8.3 wheel, the same in 0.10.2 and 0.26.0): the
    model loop's layer input (Qwen2Model.forward keeps it bound through the layer), the residual and the MLP
    input, normalized in place (layers/layernorm.py fused_add_rms_norm): 3 hidden widths. Qwen2MLP (models/
    qwen2.py) binds gate_up through down_proj, whose output RowParallelLinear (layers/linear.py) keeps while the
    all-reduce fills a new tensor (device_communicators/pynccl.py all_reduce: torch.empty_like): 3 x MLP / tp + 4
    hidden widths, 5 under tp (vllm-qwen2.5-32b-2xl40s-tp2-10k-v0-v0.8.2.log's worker rank prints it to 0.01
    GiB). LlamaMLP (models/llama.py) frees gate_up once activated (tests/engines/test_vllm_forward_peak.py)."""
    b, hidden, how = _dtype_bytes(model), model.hidden_size, ""
    keeps = any(tag in (model.architecture or "") for tag in KEEPS_GATE_UP)
    rows = 3 + (1 + (tp > 1) if keeps else 0)
    if model.moe_mlp_size and model.experts_per_token:
        return tokens * b * (rows + 1) * hidden + moe_workspace(model, release, tokens,
                                                                tp if moe_tp is None else moe_tp), how
    mlp = model.mlp_size
    if not mlp:
        mlp, how = hidden * 7 // 2, "the MLP width taken as 3.5 x hidden (Llama's ratio)"
    if keeps or rules.v1(release):
        return tokens * b * (3 * mlp // tp + rows * hidden), how
    # V0 runs eagerly: LlamaMLP rebinds x, so gate_up is freed once activated, but the activated input stays
    # bound through down_proj, whose output RowParallelLinear keeps while the all-reduce fills a new tensor
    # (pynccl all_reduce: torch.empty_like). Either point may bind; the all-reduce's where hidden > MLP / tp.
    return tokens * b * (3 * hidden + max(3 * mlp // tp, mlp // tp + (1 + (tp > 1)) * hidden)), how


# vllm/config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES, by release.
V2_ARCHITECTURES = (((0, 22, 0), {"Qwen3ForCausalLM"}),
                    ((0, 23, 0), {"Qwen3ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM"}),
                    ((0, 24, 0), {"Qwen3ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM", "DeepseekV2ForCausalLM",
                                  "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM"}),
                    ((0, 25, 0), {"DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM"}),
                    ((0, 26, 0), {"DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM",
                                  "InklingForCausalLM", "InklingForConditionalGeneration",
                                  "LongcatFlashNgramForCausalLM"}),
                    ((0, 27, 0), {"DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM",
                                  "InklingForCausalLM", "InklingForConditionalGeneration",
                                  "LongcatFlashNgramForCausalLM", "KimiK3ForConditionalGeneration"}),
                    ((0, 28, 0), {"DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM",
                                  "InklingForCausalLM", "InklingForConditionalGeneration",
                                  "LongcatFlashNgramForCausalLM", "KimiK3ForConditionalGeneration",
                                  "DeepseekV4ForCausalLM"}))


def runner_inputs(scenario) -> tuple[bool, bool]:
    """(a quantized checkpoint, a separate draft model): what picks the model runner besides the model."""
    quantized = (scenario.settings.weights_dtype or scenario.model.weights_dtype) not in ("bf16", "fp16", "fp32")
    draft = scenario.serving.draft
    return quantized, draft is not None and draft.kind == "draft"     # a draft model, not the model's MTP heads


def uses_runner_v2(model, release, quantized: bool = False, draft_model: bool = False,
                   pooling: bool | None = None) -> bool:
    """Whether the V2 model runner is this model's default (vllm/config/vllm.py
    _is_default_v2_model_runner_model): 0.22-0.23 the listed dense, unquantized architectures;
    0.24 the listed ones; 0.25-0.28 the listed ones and every other non-MoE model, hybrids only if
    listed (from 0.28; none before); from 0.29 every model. A separate draft model (speculative method
    "draft_model") is a feature V2 lacks until 0.31.0 (_get_v2_model_runner_unsupported_features: 0.22.0
    takes eagle, eagle3 and mtp; 0.29.0 adds dflash, dspark; 0.31.0 refuses only ngram, suffix, medusa,
    mlp_speculator and custom classes): vLLM then runs the V1 runner. 0.34.0 has no V1 runner. A pooling
    model (`pooling`; None: as its architecture resolves, pooling.py) is no default V2 model before 0.29.0
    (0.28.0 _is_default_v2_model_runner_model: `if model_config.runner_type != "generate": return False`)."""
    if not release.at_least(0, 22, 0):
        return False
    if (pooler.is_pooling(model) if pooling is None else pooling) and not release.at_least(0, 29, 0):
        return False
    if draft_model and not release.at_least(0, 31, 0):
        return False
    if release.at_least(0, 29, 0):
        return True
    listed = set()
    for first, names in V2_ARCHITECTURES:
        if release.at_least(*first):
            listed = names
    named = (model.architecture or "") in listed
    moe = bool(model.moe_mlp_size and model.experts_per_token)
    if not release.at_least(0, 24, 0):
        return named and not moe and not quantized
    if not release.at_least(0, 25, 0):
        return named
    if any(layer.kind == "state" for layer in model.layers) and not (named and release.at_least(0, 28, 0)):
        return False
    return named or not moe


def sampler_bytes(model, release, rows: int = 8, quantized: bool = False,
                  draft_model: bool = False, gpu=None) -> tuple[int, int, str]:
    """(bytes per row x vocabulary entry, the lowest a default install may use, the path) of the V1
    runner's sampler warm-up (gpu_model_runner.py _dummy_sampler_run, 0.8.0-0.33.0: every row random,
    temperature 0.5, top_p 0.9, top_k vocab - 1, no logprobs, no penalties: the top-k/top-p path always
    runs). Which path the release takes by default, read in each wheel's
    vllm/v1/sample/ops/topk_topp_sampler.py (TopKTopPSampler.__init__) and vllm/envs.py:
    - 0.8.0-0.11.0: FlashInfer whenever it is importable on CUDA (VLLM_USE_FLASHINFER_SAMPLER None means
      on in V1); the wheel does not require it (0.9.0's METADATA names none; 0.10.1, 0.10.2, 0.11.0 only as
      the "flashinfer" extra), so pip installs sort natively while the docker image, which ships it,
      samples with FlashInfer: the lowest (from 0.9.0, which takes FlashInfer >= 0.2.3; 0.8.0 and 0.8.3
      skip it from 0.2.3). Only on CUDA (`current_platform.is_cuda()`).
    - 0.11.1-0.20.x: FlashInfer is a dependency (0.11.1, 0.12.0 METADATA) but opt-in
      (VLLM_USE_FLASHINFER_SAMPLER=1; unset is None, read as off): native. Its sort until 0.16.x; from
      0.17.0 apply_top_k_top_p runs the Triton kernel from 8 rows (`HAS_TRITON and logits.shape[0] >= 8`;
      0.16.0 has none), every row count from 0.30.0 (0.33.0; 0.29.0 still from 8).
    - 0.21.0 on: VLLM_USE_FLASHINFER_SAMPLER defaults to True (envs.py 0.21.0, 0.22.0, 0.27.1, 0.34.0) and
      CUDA GPUs FlashInfer supports sample with it, but _dummy_sampler_run then warms forward_native too,
      with a generator (0.21.0-0.33.0: "Also warm forward_native"), which forward_cuda hands to the native
      path: the Triton kernel (or the sort under 8 rows) runs on every GPU and its buffer is made
      (triton_buffer). Both passes hold about the same bytes (FlashInfer's top_k_top_p_sampling_from_logits
      masks and softmaxes the fp32 copy: 2 + 4 + 4 + 4), so the peak is the native pass's.
    Elsewhere the native pass binds too: ROCm runs forward_native (aiter's sampler needs VLLM_ROCM_USE_AITER,
    off by default), XPU's kernel (VLLM_XPU_USE_SAMPLER_KERNEL, on from 0.21.0) hands the generator pass to
    forward_native (0.27.1 envs.py, topk_topp_sampler.py forward_xpu)."""
    if not rules.v1(release):
        return NATIVE, NATIVE, "V0's native sort on the driver"
    if uses_runner_v2(model, release, quantized, draft_model) and not release.at_least(0, 33, 0):
        per = RUNNER_V2 if release.at_least(0, 26, 0) else RUNNER_V2_COPY
        return per, per, "the V2 runner's sampler, without top-k/top-p"
    cuda = gpu is None or gpu.platform in ("", "cuda")        # a custom GPU may be CUDA
    if release.at_least(0, 17, 0) and rows < TRITON_MIN_ROWS and not release.at_least(0, 30, 0):
        return NATIVE, NATIVE, "native top-k/top-p (under 8 rows)"
    if release.at_least(0, 17, 0):
        return FUSED, FUSED, "Triton top-k/top-p" if not release.at_least(0, 21, 0) or not cuda \
            else "FlashInfer, then Triton"
    if release.at_least(0, 9, 0) and not release.at_least(0, 11, 1) and cuda:
        # The pip wheel samples natively; the docker image ships FlashInfer, which it then uses.
        return NATIVE, FUSED, "native top-k/top-p (FlashInfer in the docker image)"
    return NATIVE, NATIVE, "native top-k/top-p"


def sampler_peak(model, release, gpu, tokens: int, rows: int,
                 quantized: bool = False, draft_model: bool = False, tp: int = 1,
                 pooling: bool | None = None) -> tuple[int, int, str]:
    """The sampler warm-up's live set (with what it keeps from the forward), at the path's bytes
    and at the lowest a default install may take. Under the pooling runner (`pooling`; None: as the
    architecture resolves, pooling.py) profile_run calls _dummy_pooler_run instead (gpu_model_runner.py,
    0.10.2, 0.12.0, 0.33.0): no logits; the pooler's largest task (token_embed) holds every token's hidden
    state kept from the forward, its copy in the fp32 head dtype (ModelConfig.head_dtype: "the pooling
    model defaults to using fp32 head", 0.12.0 vllm/config/model.py) and the normalized output."""
    b, vocab, hidden = _dtype_bytes(model), model.vocab_size, model.hidden_size
    if pooling is None:
        pooling = pooler.is_pooling(model)
    if pooling:
        live = tokens * hidden * (b + 4 + 4)
        return live, live, "the pooler's warm-up (_dummy_pooler_run, no sampler)"
    per, lowest, path = sampler_bytes(model, release, rows, quantized, draft_model, gpu)
    if per in (RUNNER_V2, RUNNER_V2_COPY):
        logits = b * rows * vocab
        copy = 4 * rows * vocab if per == RUNNER_V2_COPY else 0
        live = max(logits + copy, logits if tp == 1 else 2 * logits + logits // tp)
        kept = tokens * hidden * b + 2 * b * rows * hidden
        return live + kept, live + kept, path
    if not rules.v1(release) or release.at_least(0, 9, 2):
        kept = tokens * hidden * b + 2 * b * rows * hidden
    else:
        kept = 2 * b * rows * hidden
    triton = triton_buffer(model, release, gpu, rows) if per == FUSED else 0
    return per * rows * vocab + kept + triton, lowest * rows * vocab + kept + triton, path


def triton_buffer(model, release, gpu, rows: int) -> int:
    """The Triton top-k/top-p kernel's cached buffer (_TRITON_BUFFER_CACHE, vllm/v1/sample/ops/
    topk_topp_triton.py, 0.17.0 on): min(next power of two of min(SMs, rows), SMs) rows of the
    vocabulary in fp32, kept for the process's life once the warm-up made it."""
    if not release.at_least(0, 17, 0):
        return 0
    sms = compute_units(gpu)
    return 4 * min(1 << (min(sms, rows) - 1).bit_length(), sms) * model.vocab_size


def pipeline_buffers(model, pp: int, tokens: int) -> int:
    """Under pipeline parallelism the last stage binds: it alone runs the sampler warm-up (profile_run's
    `if get_pp_group().is_last_rank`), and as a stage after the first its first dummy run allocates the
    intermediate tensors it receives, hidden states and residual for max_num_batched_tokens tokens
    (_dummy_run's make_empty_intermediate_tensors, vllm/v1/worker/gpu_model_runner.py, 0.20.0-0.34.0), which
    stay allocated. The first stage runs no sampler, so the last one's peak is the one the budget takes."""
    return 2 * tokens * model.hidden_size * _dtype_bytes(model) if pp > 1 else 0


def runner_buffers(model, release, max_num_seqs: int, v2: bool, pooling: bool = False) -> int:
    """What the V2 runner's sampler keeps on the GPU for its requests: penalty statistics, an int32 count
    per request and vocabulary entry (output_bin_counts) and a bit per entry (prompt_bin_mask), made in
    load_model after its weights are measured (vllm/v1/worker/gpu/sample/penalties.py PenaltiesState,
    0.25.1-0.34.0; only on the last pipeline stage). Before 0.27.0 nothing allocated between loading and
    profiling was counted; from 0.27.0 the non-KV memory is everything consumed since start-up plus the
    transient peak (vllm/utils/mem_utils.py memory_profiling: total_consumed + transient_peak_headroom),
    so these come out of the KV budget: max_num_seqs x 4 B x (vocabulary + vocabulary / 32)."""
    if not v2 or not release.at_least(0, 27, 0) or pooling:
        return 0      # a pooling model gets no sampler (0.33.0 gpu/model_runner.py: `not self.is_pooling_model`)
    vocab = model.vocab_size
    return max_num_seqs * 4 * (vocab + -(-vocab // 32))


def capture_limit(release, max_num_seqs: int, chunk: int, gpu, spec_tokens: int = 0,
                  limit: int | None = None) -> int:
    """The largest batch vLLM captures graphs for (_set_cudagraph_sizes' max_cudagraph_capture_size):
    --max-cudagraph-capture-size where given, else min(2 x max_num_seqs x q, 512 or 1,024); either within
    max_num_batched_tokens."""
    q = 1 + spec_tokens
    top = 1024 if release.at_least(0, 28, 0) and gpu is not None and gpu.cuda_major() == 10 else 512
    return min(limit if limit is not None else min(2 * max_num_seqs * q, top), chunk)


def capture_sizes(release, max_num_seqs: int, chunk: int, gpu, spec_tokens: int = 0,
                  limit: int | None = None) -> tuple[int, int]:
    """(PIECEWISE graphs, FULL graphs) vLLM captures by default (VllmConfig._set_cudagraph_sizes, vllm/config/
    vllm.py, 0.20.0-0.34.0): batch sizes 1, 2, 4, multiples of 8 below 256, then of 16, up to
    min(2 x max_num_seqs x q, 512, max_num_batched_tokens), where q = 1 + the speculative tokens a decode step
    verifies; 1,024 instead of 512 on compute capability 10.x from 0.28.0 (is_device_capability_family(100)).
    From 0.22.0 max_num_batched_tokens is added when it is within that limit, and from 0.34.0 max_num_seqs.
    With a speculator every size is rounded up to a multiple of q
    (CompilationConfig.adjust_cudagraph_sizes_for_spec_decode). cudagraph_mode FULL_AND_PIECEWISE (the V1
    default) also captures a FULL graph of every size up to max_num_seqs x q (uniform decode batches).
    `limit`, --max-cudagraph-capture-size, stands for that default limit (still within
    max_num_batched_tokens): one of 64 with 256 sequences captures 1, 2, 4, 8, ... 64, ten sizes."""
    q = 1 + spec_tokens
    largest = capture_limit(release, max_num_seqs, chunk, gpu, spec_tokens, limit)
    sizes = [n for n in (1, 2, 4) if n <= largest] + list(range(8, min(largest + 1, 256), 8)) \
        + list(range(256, largest + 1, 16))
    if release.at_least(0, 22, 0) and chunk <= largest:
        sizes = sorted(set(sizes) | {chunk})            # 0.22.0 on: max_num_tokens itself is captured
    if release.at_least(0, 34, 0) and q == 1 and max_num_seqs <= largest:
        sizes = sorted(set(sizes) | {max_num_seqs})     # 0.34.0: the widest decode batch too
    if q > 1:
        # Rounded up, a size is kept within max_cudagraph_capture_size, which _set_cudagraph_sizes has already set to
        # the largest size listed (valid_max_size), not to the limit (0.26.0 wheel: vllm/config/vllm.py,
        # compilation.py adjust_cudagraph_sizes_for_spec_decode): 2 sequences x 5 under MTP 4 list 1, 2, 4, 8, 16
        # and capture 5 and 10, not 20.
        listed = sizes[-1] if sizes else 0
        sizes = sorted({-(-n // q) * q for n in sizes if -(-n // q) * q <= listed}) or ([q] if q <= listed else [])
    return len(sizes), sum(1 for n in sizes if n <= max_num_seqs * q)


def cudagraph_estimate(model, release, gpu, pp: int, chunk: int, max_num_seqs: int,
                       spec_tokens: int = 0, limit: int | None = None) -> tuple[int, int, int, str]:
    """(estimate, lowest, highest, words) of what profile_cudagraph_memory returns: the graphs
    capture_sizes counts x the layers on the busiest pipeline stage x GRAPH_LAYER. The lowest is the
    code's own floor, 1 MiB per PIECEWISE graph after the first (a backend without FULL graphs captures
    none of those); the highest GRAPH_LAYER_HIGH per graph and layer, plus a hybrid's transient from 0.26.0."""
    pieces, full = capture_sizes(release, max_num_seqs, chunk, gpu, spec_tokens, limit)
    layers = -(-len(model.layers) // pp)
    graphs = pieces + full
    high = graphs * layers * GRAPH_LAYER_HIGH
    if release.at_least(0, 26, 0) and any(layer.kind == "state" for layer in model.layers):
        high += chunk * HYBRID_TRANSIENT
    words = f"CUDA graphs subtracted ({pieces} PIECEWISE and {full} FULL over {layers} layers)"
    return graphs * layers * GRAPH_LAYER, (pieces - 1) * GRAPH_FLOOR, high, words


def _runs(scenario, release, chunk: int, max_num_seqs: int) -> tuple:
    """The profiling run's two phases on one rank: (forward peak, sampler peak, the sampler's lowest,
    its path, how the MLP width was known, sampler rows, quantized, a separate draft model)."""
    model, dep = scenario.model, scenario.deployment
    for field, value in (("hidden-size", model.hidden_size), ("vocab-size", model.vocab_size)):
        if not value:
            raise InputError(field, f"vLLM's start-up overhead is estimated from the model's {field.replace('-', ' ')}, "
                                    f"which this model does not give: give {field}, or set overhead-gib or "
                                    "kv-memory-gib")
    forward, how = forward_peak(model, release, dep.tp, chunk, 1 if dep.expert_parallel else dep.tp * dep.dp)
    rows = max_num_seqs if not rules.v1(release) else min(max_num_seqs, chunk)
    quantized, separate = runner_inputs(scenario)
    sampler, sampler_low, path = sampler_peak(model, release, dep.gpu, chunk, rows, quantized, separate, dep.tp,
                                              pooler.is_pooling(model, scenario.settings))
    return forward, sampler, sampler_low, path, how, rows, quantized, separate


def stage_surplus(scenario, release, chunk: int, max_num_seqs: int) -> int:
    """What the stages before the last keep beyond the last one under pipeline parallelism (V1 engine):
    the last alone runs the sampler warm-up after its forward (profile_run, `is_last_rank`) and alone
    holds the V2 sampler's buffers (load_model: `if self.is_last_pp_rank`), so the others have that much
    more KV memory: max(0, sampler - forward) + runner_buffers. vllm-deepseek-v2-lite-tp2-pp2-l4.log
    prints 12.13 GiB on the first stage's ranks and 11.33 GiB on the last's; the pool is the fewest
    blocks a worker holds, there the first stage's, which has 14 layers to the last's 13."""
    dep, model = scenario.deployment, scenario.model
    if dep.pp == 1 or not rules.v1(release) or not model.hidden_size or not model.vocab_size:
        return 0
    forward, sampler, _, _, _, _, quantized, separate = _runs(scenario, release, chunk, max_num_seqs)
    v2 = uses_runner_v2(scenario.model, release, quantized, separate, pooler.is_pooling(model, scenario.settings))
    return max(0, sampler - forward) + runner_buffers(scenario.model, release, max_num_seqs, v2,
                                                      pooler.is_pooling(model, scenario.settings))


def _encoder(scenario, release, chunk: int, max_num_seqs: int, lm_peak: int, v2: bool) -> tuple:
    """(added to the activation, its lowest, its highest, words) for a multimodal model's encoder pass:
    encoder_profile.term where the tower is read, else ENCODER's band with words that say so. The V2
    runner's profile_run (vllm/v1/worker/gpu/model_runner.py) runs no encoder pass until 0.27.0 (read in
    the 0.26.0 wheel: the dummy forward and the sampler only); 0.27.0 adds it
    (encoder_runner.profile_encoder_cache, vllm/v1/worker/gpu/mm/encoder_runner.py, the same budget)."""
    if not scenario.model.multimodal:
        return 0, 0, 0, ""
    if v2 and not release.at_least(0, 27, 0):
        return 0, 0, 0, "the V2 runner profiles no vision encoder pass before 0.27.0"
    # V1's profile_run keeps the dummy batch's pixel values through the language model's run; V2's encoder
    # runner frees them after encoding (encoder_profile.py's docstring: 0.10.2-0.29.0 and 0.27.1 wheels).
    if not rules.v1(release):
        # V0 encodes its dummy items inside the profiling forward (encoder_profile.term_v0: 0.7.0-0.8.3
        # vllm/worker/model_runner.py _dummy_run): the language model runs over the dummy prompts' tokens.
        dep = scenario.deployment
        moe_tp = 1 if dep.expert_parallel else dep.tp * dep.dp
        modelled = encoder_profile.term_v0(scenario, release, chunk, max_num_seqs, lm_peak,
                                           lambda tokens: forward_peak(scenario.model, release, dep.tp, tokens, moe_tp)[0])
    else:
        modelled = encoder_profile.term(scenario, release, chunk, max_num_seqs, lm_peak, inputs_kept=not v2)
    if modelled is not None:
        return modelled
    why = "V0's multimodal dummies" if not rules.v1(release) else "this tower's shapes (not read)"
    return (*ENCODER, f"the vision encoder's profiling pass is not modelled from {why}, only bounded "
                      f"(up to {ENCODER[2] / (1 << 30):.1f} GiB more in the band)")


def estimate(scenario, release, chunk: int, max_num_seqs: int) -> Estimate:
    model, dep = scenario.model, scenario.deployment
    forward, sampler, sampler_low, path, how, rows, quantized, separate = _runs(scenario, release, chunk,
                                                                                 max_num_seqs)
    draft = scenario.serving.draft
    workspace = cublas_workspace(dep.gpu) + pipeline_buffers(model, dep.pp, chunk)
    # From 0.22.0 the MoE workspace, made in the forward, is still held through the sampler's warm-up.
    moe = moe_workspace(model, release, chunk, 1 if dep.expert_parallel else dep.tp * dep.dp) \
        if release.at_least(0, 22, 0) else 0
    encoder, e_low, e_high, e_words = _encoder(scenario, release, chunk, max_num_seqs, max(forward, sampler + moe),
                                               uses_runner_v2(model, release, quantized, separate))
    pooling = pooler.is_pooling(model, scenario.settings)
    kept = 0
    if release.at_least(*PEAK_IS_TRANSIENT):
        # What stays allocated after the profiling run is consumed memory, not its peak: the cuBLAS workspace,
        # the pipeline's intermediate tensors, the MoE workspace and the Triton sampler's buffer (made in the
        # sampler's phase, inside its peak).
        fused = not pooling and sampler_bytes(model, release, rows, quantized, separate)[0] == FUSED
        triton = triton_buffer(model, release, dep.gpu, rows) if fused else 0
        kept = workspace + moe + triton
        parts = ["the cuBLAS workspace"] + (["the MoE workspace"] if moe else []) + \
            (["the Triton sampler's buffer"] if triton else []) + (["the pipeline's intermediate tensors"]
                                                                    if dep.pp > 1 else [])
        activation = max(forward - moe, sampler) - triton + encoder
        lowest = max(forward - moe, sampler_low) - triton + e_low
    else:
        activation = max(forward, sampler + moe) + workspace + encoder
        lowest = max(forward, sampler_low + moe) + workspace + e_low
    spread = max(ACTIVATION_SLACK, int((activation + kept) * ACTIVATION_SHARE))
    # The share of the preset's total requested (none when the total is the user's: gpu-memory-gib).
    share = (dep.memory_utilization if scenario.settings.utilization_given else rules.default_utilization(release)) \
        if dep.torch_memory_bytes else 0
    non_torch, nt_low, nt_high, nt_words = non_torch_memory(dep.tp, dep.gpu, release, share)
    if counts_cached(release):
        # 0.6.4-0.6.6.post1: what the allocator keeps cached after the run is non-torch memory, up to its peak.
        nt_high += activation
        nt_words = (f"{nt_words}; " if nt_words else "") + (
            f"vLLM {release} counts what PyTorch's allocator keeps cached after the profiling run as non-torch memory "
            f"(up to its {activation / (1 << 30):.2f} GiB peak more, the band's top)")
    rocm = dep.gpu is not None and dep.gpu.platform == "rocm"
    spec = draft.spec_tokens if draft is not None and draft.spec_tokens else 0
    # V2's profile_cudagraph_memory returns 0 until 0.29.0 (vllm/v1/worker/gpu/model_runner.py, read in the
    # 0.22.0, 0.25.1 and 0.28.0 wheels; 0.29.0 measures, cudagraph_utils.py).
    graphs, g_low, g_high, g_words = cudagraph_estimate(model, release, dep.gpu, dep.pp, chunk, max_num_seqs, spec,
                                                        scenario.settings.capture_size_limit) \
        if rules.subtracts_cudagraphs(release, scenario.settings.enforce_eager, rocm) and not (
            uses_runner_v2(model, release, quantized, separate, pooling) and not release.at_least(0, 29, 0)) \
        else (0, 0, 0, "")
    buffers = runner_buffers(model, release, max_num_seqs, uses_runner_v2(model, release, quantized, separate, pooling),
                             pooling)
    seqs = " (--max-num-seqs, your concurrent requests)" if scenario.settings.batch_given else ""
    words = (f"vLLM {release}: a profiling run of {chunk:,} tokens, then {path} over {rows:,} rows{seqs}"
             + (f", {g_words}" if graphs else "") + (f"; {how}" if how else "")
             + (f"; the V2 sampler's penalty statistics for {max_num_seqs:,} requests over the vocabulary "
                f"({buffers / (1 << 30):.2f} GiB)" if buffers else ""))
    if dep.dp > 1:
        words += (f"; each of the {dep.dp} data-parallel engine cores profiles its own rank (their all-to-all "
                  "buffers are not modelled)")
    if kept:
        words += (f"; {kept / (1 << 30):.2f} GiB of it stays allocated after the profiling run ({', '.join(parts)}): "
                  "vLLM counts that as consumed memory, apart from its peak activation")
    words += f"; {e_words}" if e_words else ""
    words += f"; {nt_words}" if nt_words else ""
    return Estimate(activation, non_torch, graphs, max(0, lowest - spread) + kept + nt_low + g_low + buffers,
                    activation - encoder + e_high + spread + kept + nt_high + g_high + buffers, words, buffers,
                    kept)
