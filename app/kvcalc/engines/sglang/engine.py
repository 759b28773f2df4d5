"""SGLang as the Engine protocol (engines/__init__.py) asks for it: its defaults (chunk, graph
batch and mem_fraction_static by release and GPU), the memory its pool may take, its figures and
their notes, and its launch command. Each member asks the piece that owns the rule:
- allocator: the token pool (cells of every layer's K and V, the split sliding-window pools,
  a draft's cell; model_runner_kv_cache_mixin.py, mem_cache/memory_pool.py);
- printing: what its start-up log prints;
- launch: `python -m sglang.launch_server`;
- log: its start-up log's reader; serving: its rules for drafts, offload, LoRA and encoders.

Speculative decoding (0.5.23): the draft's weights are loaded before the pool is sized
(managers/scheduler.py init_model_worker), so they come out of it. Releases before 0.5.16 sized
the target's cell alone and took the draft from the 1 - mem_fraction_static slack (0.5.9
profile_max_num_token): refused here.
"""

import sys
from dataclasses import replace
from fractions import Fraction

from ... import parallel
from . import PLACEMENT
from ...errors import InputError
from ...units import GIB, MIB
from .. import releases
from . import allocator, launch as command, printing, release as rules
from ..result import Budget, BudgetSource, EngineResult, Sharing, torch_total, without_budget
from .serving import SERVING  # noqa: F401  its serving rules, asked by serving/ through the registry
from ...readers.quantized_bytes import vllm_loaded_extra

# The releases read (docs/research/vllm-release-rules.md): a version outside them is refused.
FIRST_RELEASE, NEWEST_RELEASE = "0.3.6", "0.5.23"
VERSION_EXAMPLE, VERSIONS_BY_BUILD = "0.5.2", False
parse_version = releases.pep440
NAME, TITLE = "sglang", "SGLang"
KV_PRECISIONS = ("fp32", "fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2")   # --kv-cache-dtype (fp8 is e4m3)
LOG_READER = "log"           # its start-up log's reader: engines/sglang/log.py
FAILURES = "failures"        # its failed starts and their fixes: engines/sglang/failures.py
OWN_OPTIONS = ("memory-in-use-gib",)     # options only SGLang takes
# The GPUs it runs on (CUDA and ROCm builds): the planner considers no others.
VENDORS = ("NVIDIA", "AMD")
KV_MEMORY_LOGGED = True      # its log prints the pool's K and V sizes to 0.01 GB (GiB)
# dp > 1 is --dp-size dp --enable-dp-attention (launch.py): only the attention runs data-parallel,
# each rank's over attn_tp_size = tp_size // dp_size GPUs with its own KV pool; the MLP / MoE layers
# and the head stay tensor-parallel over all tp_size GPUs (layers/dp_attention.py,
# models/deepseek_v2.py; Llama since sgl-project/sglang#15268, 2025-12). The deployment carries it
# (Deployment.dp_attention), so the exact ideal sized beside SGLang places the weights as it does.
DP_ATTENTION = True
KV_MEMORY_HALF_WIDTH = Fraction(1, 100)   # K and V each printed to 0.01 GiB: their sum to +-0.01
SEPARATE_V = False
TOKENS_LABEL = "#tokens (max_total_num_tokens)"
REFUSED_MAX_LEN_WORDS = ""
CONCURRENCY_FORMAT = "{:,.2f} requests"       # pool / context: it prints no concurrency
# The engine card's labels, in its own words: SGLang prints no concurrency, only its pool.
LABELS = {"engine_max_concurrency": "Requests of this context its pool holds (#tokens / context; not printed)",
          "engine_kv_tokens": "KV cache it prints (#tokens)",
          "engine_kv_budget_bytes_per_gpu": "KV pool per GPU (its K size + V size)",
          "engine_kv_bytes_per_request": "One request's tokens in the pool, per GPU",
          "engine_max_model_len": "Longest context one request can have (its context_len, within the pool)",
          "engine_overhead_band": "Overhead per GPU (activations live in 1 - mem_fraction_static)"}
# Its KV pool is allocated whole at start-up: what the requests leave is the cache's, not free.
ALLOCATES_WHOLE_BUDGET = True
USABLE_WORDS = (" Usable is mem_fraction_static x the memory free when SGLang starts (after its CUDA "
                "context); activations and CUDA graphs live in the share it leaves free.")

# SGLang tiers its chunk, CUDA-graph batch and mem_fraction_static by get_device_memory_capacity, nvidia-smi's
# memory.total: inside a MIG instance that query reports the parent GPU or fails ("[Insufficient Permissions]"
# in NVIDIA-AI-Blueprints/video-search-and-summarization issue #25); no SGLang log on a MIG instance was found.
MIG_TIER_WORDS = ("On a MIG instance SGLang's defaults are tiered here by the instance's memory; SGLang asks "
                  "nvidia-smi, which inside a MIG instance may report the whole GPU's memory or refuse the query "
                  "(not verified on a MIG log): give the memory utilization (mem_fraction_static) to fix it.")

# SGLang's "total" is the memory free when it starts (get_available_gpu_memory), after its CUDA
# context: on the H100 of tests/fixtures/logs/sglang-qwen3-8b-tp1-mfs090.log, avail after load
# 63.49 + weights 15.35 = 78.84 GiB, 0.38 GiB under the 79.22 GiB PyTorch reports. The pool is
# then mem_fraction_static x that - the weights.
CONTEXT_BYTES = 390 * MIB


def sharing(scenario) -> Sharing:
    """How an SGLang server shares a GPU: its --mem-fraction-static is of the memory free when it
    starts (get_available_gpu_memory, after its CUDA context: usable_memory), so a server started
    after others is sized with what they hold as memory-in-use-gib, and holds its CUDA context
    plus that fraction of what it found free (its weights and its pool). Its port: 30000
    (server_args.py ServerArgs.port)."""
    release = releases.in_force(sys.modules[__name__], scenario.settings)
    return Sharing("free", CONTEXT_BYTES, 30000, (
        f"SGLang {release} takes its --mem-fraction-static of the memory free when it starts (model_runner.py, "
        "get_available_gpu_memory), so each server is sized with what the servers started before it hold as memory "
        "in use, in the order given, and holds its CUDA context and that fraction (its weights and its KV pool); its "
        "CUDA graphs and activations live in the rest it leaves free, which a server started after it may take"),
        in_use_option="memory-in-use-gib")


def defaults(gpu_memory_bytes: int | None, tp: int, pp: int, chunk: int | None = None,
             release=None, dp: int = 1, launch: rules.Launch | None = None) -> tuple[int, int, Fraction]:
    """(chunked_prefill_size, cuda_graph_max_bs, mem_fraction_static) as this SGLang release picks
    them (release.py, each release's own code). `tp` is SGLang's --tp-size (all tp x dp GPUs under
    DP attention), `dp` its --dp-size with --enable-dp-attention; `launch` the rest of what the
    rule reads (the model's attention, a multimodal model, the GPU's platform, --disable-cuda-graph,
    the context), a plain dense text model on CUDA when not given. The chunk is the one given,
    before _handle_data_parallelism divides it by dp."""
    out = release_defaults(gpu_memory_bytes, tp, pp, chunk, release, dp, launch)
    return out.chunk, out.graph_bs, out.fraction


def release_defaults(gpu_memory_bytes, tp, pp, chunk=None, release=None, dp=1, launch=None) -> rules.Defaults:
    release = release or releases.newest(sys.modules[__name__])
    launch = replace(launch or rules.Launch(), tp=tp, pp=pp, dp=dp, chunk=chunk)
    return rules.defaults(release, gpu_memory_bytes, launch)


def launch_facts(scenario) -> rules.Launch:
    """What release.py's rule reads from these inputs besides the memory and the layout."""
    model, dep, settings, serving = scenario.model, scenario.deployment, scenario.settings, scenario.serving
    return rules.Launch(
        mla=any(layer.kind == "mla" for layer in model.layers), multimodal=bool(model.multimodal),
        architecture=model.architecture or "", platform=dep.gpu.platform if dep.gpu is not None else "",
        enforce_eager=bool(settings.enforce_eager), context=scenario.workload.context_tokens,
        requests=scenario.workload.batch if settings.batch_given else None,
        lora=serving.lora is not None, draft=serving.draft is not None)


def _scenario_defaults(scenario, chunk: int | None, release) -> rules.Defaults:
    dep = scenario.deployment
    return release_defaults(dep.gpu_memory_bytes, tp_size(dep), dep.pp, chunk, release, dep.dp,
                            launch_facts(scenario))


def draft_rule(scenario):
    """(the draft's layers at the end of the sizing model, SGLang's L_draft), or None."""
    draft = scenario.serving.draft
    return None if draft is None else (len(draft.layers), draft.sglang_layers)


def _check_draft(scenario, model) -> None:
    if scenario.serving.draft is None:
        return
    release = releases.in_force(sys.modules[__name__], scenario.settings)
    if not release.at_least(0, 5, 16):
        raise InputError("engine-version", f"SGLang {release} sized the target's cell alone and took the draft's weights "
                                           "and pool from the 1 - mem_fraction_static slack with a reserve for it "
                                           "(0.5.9 profile_max_num_token, server_args.py _handle_gpu_memory_settings): "
                                           "not modelled; the combined cell is read from 0.5.23 (0.5.16 and later)")
    if allocator.swa_pool_layers(model):
        raise InputError("engine", "SGLang's split sliding-window pools with a draft are not modelled")


def default_chunk(scenario) -> int:
    dep = scenario.deployment
    return _scenario_defaults(scenario, None, releases.in_force(sys.modules[__name__], scenario.settings)).chunk


def attention_tp(tp: int, pp: int, dp: int, gpus: int | None) -> int | None:
    """Our tp (the attention's, inside one data-parallel rank) from the tp the inputs give, read in
    SGLang's own words: dp > 1 launches --dp-size dp --enable-dp-attention, where --tp-size counts
    every GPU of a pipeline stage and each rank's attention runs on tp_size // dp_size of them
    (server_args.py _handle_data_parallelism asserts tp_size % dp_size == 0; layers/dp_attention.py
    attn_tp_size = tp_size // dp_size). So `--tp 8 --dp 8` is 8 GPUs, 8 ranks of attention tp 1.
    None where the tp given is already the attention's: dp 1, or gpus = tp x pp x dp given with it
    (a layout written in our words: the planner's rows, a log's reading)."""
    if dp == 1 or (gpus is not None and gpus == tp * pp * dp):
        return None
    if tp % dp:
        fits = (dp, 2 * dp, 4 * dp, 8 * dp)
        raise InputError("tp", f"with SGLang's DP attention (--dp-size {dp} --enable-dp-attention) tp is its "
                               f"--tp-size, every GPU of a pipeline stage, which dp must divide (server_args.py "
                               f"asserts tp_size % dp_size == 0): tp {tp} is not a multiple of dp {dp}; give tp "
                               f"{', '.join(map(str, fits))}, ...")
    if gpus is not None and gpus != tp * pp:
        raise InputError("gpus", f"gpus={gpus} does not match SGLang's --tp-size {tp} --dp-size {dp}"
                                 + (f" --pp-size {pp}" if pp > 1 else "") +
                                 f": under DP attention --tp-size counts every GPU of a pipeline stage, so that is "
                                 f"tp x pp = {tp * pp} GPUs, {dp} ranks of attention tp {tp // dp}; give gpus "
                                 f"{tp * pp}, or the tp of your own --tp-size")
    return tp // dp


def tp_size(dep) -> int:
    """SGLang's --tp-size: every GPU of a pipeline stage, tp x dp under DP attention (attn_tp_size =
    tp_size // dp_size is our tp)."""
    return dep.tp * dep.dp


def data_parallel(moe: bool) -> bool:
    """Its data-parallel ranks are DP attention, which it runs for a mixture of experts."""
    return moe


# What "Load weight end. mem usage" counts beyond the checkpoint's tensors. SGLang measures it as
# the fall of the free memory (model_runner.py load_model: get_available_gpu_memory, torch.cuda.
# mem_get_info after empty_cache, 0.3.6-0.5.23), so it holds:
# - what its layers add, the same rules as vLLM's (they are its ports: layers/vocab_parallel_embedding.py
#   DEFAULT_VOCAB_PADDING_SIZE = 64, rotary_embedding.py's cos_sin_cache buffer) and the caching allocator's
#   2 MiB segments around each fused 16-bit parameter (readers/quantized_bytes.py vllm_loaded_extra);
# - what the load leaves on the GPU outside PyTorch's tensors (the CUDA kernels loaded lazily on first
#   use), which no code states: the remainder on three 16-bit logs, tests/fixtures/logs
#   sglang-qwen3-8b-tp1-mfs090.log (H100, 0.4.6: 15.35 GB printed, 15.26 GiB of tensors + 0.01 of rope
#   cache, 0.08 left), sglang-llama3.2-3b-l40s-mfs02-hicache-35k.log (L40S, 0.5.8: 6.13, 5.98 + 0.03,
#   0.11 left), sglang-qwq-32b-4xl4-tp4-mfs085-v0.4.3.post4.log (L4 tp 4, 0.4.3.post4: 15.54, 15.26 +
#   0.16, 0.13 left): their median.
LOAD_REMAINDER = Fraction("0.11")


def absorbed_mla_bytes(model, dep) -> tuple[int, str]:
    """(bytes a GPU, words): the absorbed copies of MLA's kv_b_proj SGLang makes after loading.
    models/deepseek_v2.py DeepseekV2ForCausalLM.post_load_weights (0.4-0.5.23; read in 0.5.4) splits
    kv_b_proj into w_kc and w_vc and stores them as new contiguous tensors (bind_or_assign of
    .contiguous()) beside kv_b_proj, which the prefill path keeps: one more copy of its
    kv_lora_rank x heads on the rank x (qk_nope_head_dim + v_head_dim) elements, in bf16 where the
    checkpoint is 16-bit or a 128 x 128 block fp8 on CUDA (block_quant_dequant to torch.bfloat16), in
    fp8 on ROCm (block_quant_to_tensor_quant). Each rank holds its attention's heads: all of them
    under DP attention at attn_tp_size 1 (DeepSeek-V3.2's 128 x 512 x 256 x 2 B x 61 layers = 1.91 GiB)."""
    layers = [layer for layer in model.layers if layer.kind == "mla"]
    if not layers or not model.attention_heads or model.mla_head_dims is None:
        return 0, ""
    qk, v = model.mla_head_dims
    heads = -(-model.attention_heads // dep.tp)
    fp8_rocm = model.weights_dtype == "fp8" and dep.gpu is not None and dep.gpu.platform == "rocm"
    width = 1 if fp8_rocm else 2
    count = -(-len(layers) // dep.pp)
    total = sum(layer.kv_lora_rank * heads * (qk - layer.rope_dim + v) * width for layer in layers[:count])
    return total, (f"MLA's absorbed w_kc and w_vc beside kv_b_proj, {total / GIB:.2f} GiB ({count} layers x "
                   f"{layers[0].kv_lora_rank} x {heads} heads x {qk - layers[0].rope_dim + v} x {width} B; "
                   "deepseek_v2.py post_load_weights)")


def loaded_weights(scenario, weights: int | None) -> tuple[int | None, str]:
    """(the weights per GPU SGLang's load takes, the note): the checkpoint's tensors as parallel.py
    splits them, plus what its layers and the allocator add and what the load leaves outside
    PyTorch (LOAD_REMAINDER), where the weights are the checkpoint's (not a measured size given)."""
    dep, model = scenario.deployment, scenario.model
    counted = dep.weights_bytes in (model.checkpoint_bytes, model.config_weights_bytes) or \
        (model.params and dep.weights_bytes == 2 * model.params and model.weights_dtype in ("bf16", "fp16"))
    if weights is None or not dep.weights_bytes or not counted:
        return weights, ""
    extra = vllm_loaded_extra(model, dep.tp, dep.tp * dep.dp if dep.expert_parallel else 1, dep.pp)
    layers = extra[0] if extra else 0
    absorbed, absorbed_words = absorbed_mla_bytes(model, dep)
    remainder = int(LOAD_REMAINDER * GIB)
    words = (f"SGLang's 'Load weight end. mem usage' is the fall of the free memory (mem_get_info): the checkpoint's "
             f"{weights / GIB:.2f} GiB a GPU, " + (f"{layers / GIB:.3f} GiB of vocabulary padding, rotary cache and the "
                                                   "allocator's 2 MiB segments (its layers are vLLM's ports), "
                                                   if layers else "") +
             (absorbed_words + ", " if absorbed else "") +
             f"and about {float(LOAD_REMAINDER):.2f} GiB the load leaves outside PyTorch (CUDA kernels loaded on first "
             "use; 0.08-0.13 GiB on three 16-bit logs).")
    return weights + layers + absorbed + remainder, words


def _free_at_start(dep, settings, notes: list) -> int:
    """The memory free when SGLang starts: PyTorch's total less what is already in use (its CUDA
    context by default, or --memory-in-use-gib)."""
    in_use = CONTEXT_BYTES if settings.memory_in_use_gib is None else int(settings.memory_in_use_gib * GIB)
    return torch_total(dep, settings, notes) - in_use


def usable_memory(scenario, chunk: int, notes: list, ideal_usable: int) -> int:
    """The memory free when SGLang starts (the total less what is already in use: its CUDA context
    by default, or --memory-in-use-gib), times mem_fraction_static (given, or as it derives it)."""
    dep, settings = scenario.deployment, scenario.settings
    memory = _free_at_start(dep, settings, notes)
    if memory <= 0:
        raise InputError("memory-in-use-gib", "leaves no free memory on the GPU for SGLang to start in")
    if settings.memory_in_use_gib is not None:
        notes.append(f"SGLang starts with {float(settings.memory_in_use_gib):.4g} GiB already in use: its "
                     "mem_fraction_static applies to what is free.")
    # get_device_memory_capacity: the total nvidia-smi reports, in MiB.
    if dep.gpu is not None and dep.gpu.mig_of is not None and not settings.gpu_memory_given:
        notes.append(MIG_TIER_WORDS)
    release = releases.in_force(sys.modules[__name__], settings)
    chosen = _scenario_defaults(scenario, chunk, release)
    fraction = chosen.fraction
    forced = _nsa_fraction(scenario.model, release)
    if forced is not None:
        notes.append(f"SGLang {release} sets mem_fraction_static {float(forced):g} for DeepSeek's sparse attention "
                     "(NSA), given or not (server_args.py _handle_model_specific_adjustments; 0.5.4 drops it, "
                     "sgl-project/sglang#11309).")
        return int(memory * forced)
    if settings.utilization_given:
        notes.append(f"Your memory utilization {float(dep.memory_utilization):g} is SGLang's "
                     f"--mem-fraction-static; its own default here would be {float(fraction):.3g}.")
        return int(memory * dep.memory_utilization * _multimodal_share(scenario.model, release, notes, False))
    fraction *= _multimodal_share(scenario.model, release, notes, True)
    notes.append(f"SGLang {release} derives mem_fraction_static {float(fraction):.3g} from the GPU's memory"
                 + (", the prefill chunk and parallelism" if release.at_least(0, 5, 3) else
                    " and parallelism") + " (server_args.py)." + (" " + rules.words(release, chosen)
                                                                  if rules.words(release, chosen) else ""))
    return int(memory * fraction)


def memory_utilization(scenario, chunk: int) -> Fraction:
    """mem_fraction_static in force, of the memory free at start: the one given, or as this
    release derives it, each times what a multimodal model keeps (as usable_memory applies it)."""
    dep, settings = scenario.deployment, scenario.settings
    release = releases.in_force(sys.modules[__name__], settings)
    forced = _nsa_fraction(scenario.model, release)
    if forced is not None:
        return forced
    if settings.utilization_given:
        return dep.memory_utilization * _multimodal_share(scenario.model, release, [], False)
    fraction = _scenario_defaults(scenario, chunk, release).fraction
    return fraction * _multimodal_share(scenario.model, release, [], True)


# 0.5.3 server_args.py _handle_model_specific_adjustments: for DeepSeek NSA (is_deepseek_nsa) on CUDA and
# ROCm it sets mem_fraction_static = 0.8 whatever was given (with DP attention at dp = tp, pages of 64
# and fp8 KV on SM 10+, which the inputs carry); 0.5.4 keeps the rest and drops the fraction
# (sgl-project/sglang#11309: "main (hardcoded mem-fraction-static=0.8)",
# tests/fixtures/logs/sglang-deepseek-v32-exp-mla-tp8-dp8.log).
NSA_FRACTION_RELEASES = ((0, 5, 3), (0, 5, 4))
NSA_FRACTION = Fraction(8, 10)


def _nsa_fraction(model, release) -> Fraction | None:
    first, until = NSA_FRACTION_RELEASES
    if not release.at_least(*first) or release.at_least(*until):
        return None
    sparse = any(layer.kind == "mla" and getattr(layer, "indexer_row_bytes", 0) for layer in model.layers)
    return NSA_FRACTION if sparse else None


def _multimodal_share(model, release, notes: list, derived: bool) -> Fraction:
    """What SGLang keeps of mem_fraction_static for a multimodal model, by release:
    - 0.3.6-0.4.4: 0.95, given or derived (ModelRunner.model_specific_adjustment; the Gemma 3 4B
      H200 log of 0.4.4 holds 834,615 tokens, 0.836 of the memory free at start);
    - 0.4.5-0.4.8: 0.90, given or derived (the same place);
    - 0.4.9: 0.90 of a derived fraction (ServerArgs.__post_init__);
    - 0.4.10 on: of a derived fraction, 0.95 x (1 - 0.1 x (the vision tower's layers x width^2 over
      ViT-L's 24 x 1024^2, less 1)), that second factor kept within 0.8 and 1.05
      (adjust_mem_fraction_for_vlm; 0.5.19 on in arg_groups/memory_hook.py)."""
    if not model.multimodal:
        return Fraction(1)
    if not release.at_least(0, 4, 5):
        share = Fraction(95, 100)
    elif not release.at_least(0, 4, 9):
        share = Fraction(90, 100)
    elif not derived:
        return Fraction(1)
    elif not release.at_least(0, 4, 10):
        share = Fraction(90, 100)
    else:
        if model.vision_shape is None:
            notes.append("SGLang lowers mem_fraction_static for a multimodal model by its vision tower's depth and "
                         "width, which this model's config does not give: give the mem_fraction_static its log "
                         "prints as the memory utilization.")
            return Fraction(1)
        layers, width = model.vision_shape
        ratio = Fraction(layers * width * width, 24 * 1024 * 1024)
        share = Fraction(95, 100) * min(Fraction(105, 100), max(Fraction(8, 10), 1 - (ratio - 1) / 10))
    notes.append(f"SGLang {release} keeps {float(share):.4g} of mem_fraction_static for a multimodal model.")
    return share


def usable_words(scenario, out: EngineResult, usable: int) -> str:
    """What usable_memory took, in SGLang's terms (the source formula's words)."""
    free = _free_at_start(scenario.deployment, scenario.settings, [])
    return (f"mem_fraction_static {float(Fraction(usable, free)):.3g} of the {free:,} B free when SGLang "
            "starts (PyTorch's total less what is in use); its activations live in the rest")


def overhead_words(scenario, out: EngineResult) -> str:
    if out.overhead_bytes_per_gpu:
        return (f"mem_fraction_static x what its distributed start-up holds before the pool's base is measured "
                f"(NCCL's and the custom all-reduce's buffers): {out.overhead_bytes_per_gpu / GIB:.2f} GiB; its "
                "activations and CUDA graphs live in what mem_fraction_static leaves")
    return "SGLang subtracts none: its activations and CUDA graphs live in what mem_fraction_static leaves"


def reservation_words(scenario, out: EngineResult) -> str:
    model = scenario.model
    if any(layer.kind == "sliding" for layer in model.layers) and not any(
            name in (model.architecture or "") for name in allocator.HYBRID_SWA_ARCHITECTURES):
        return ("SGLang keeps every token in the sliding-window layers too: one pool of whole-context cells "
                "(its split pools are for " + ", ".join(allocator.HYBRID_SWA_ARCHITECTURES) + " models)")
    return explain(scenario, out)[0].rstrip(".")


def count_words(scenario, out: EngineResult) -> str:
    return "SGLang's pool is whole pages of token cells" + (
        ", split into a full and a sliding-window pool" if out.log and "sliding window" in out.log[0] else "")


# What SGLang's distributed start-up holds on each GPU before the memory mem_fraction_static multiplies
# is measured (model_executor/model_runner.py init_torch_distributed logs it: "Init torch distributed
# ends. mem usage=X GB"; load_model's "Load weight begin. avail mem" is then the base, 0.3.6-0.5.23):
# NCCL's communicators (NVLink SHARP buffers on Hopper and later) and the custom all-reduce's, and under
# DP attention its own groups'. The pool is mem_fraction_static x (free - this) - weights, so it loses
# mem_fraction_static x this. (estimate, lowest, highest) in GiB, each from a real log's ranks
# (tests/fixtures/logs, SOURCES.md): TP0's figure the estimate, the spread of the ranks the band.
COMM_NVLS_TP8 = (Fraction("1.96"), Fraction("1.77"), Fraction("2.01"))     # 8 x H200, sglang#11716
COMM_NVLS_DP8 = (Fraction("2.38"), Fraction("1.88"), Fraction("2.50"))     # 8 x B200, DP attention, sglang#5390
COMM_ROCM_TP8 = (Fraction("3.81"), Fraction("3.41"), Fraction("3.83"))     # 8 x MI355X, AITER all-reduce
# NCCL's NVLS set-up weighs about as much at tp 4 as at tp 8: vLLM 0.10.0 (which measured NCCL's whole
# set-up as SGLang does, before 0.11.0 took its snapshot after it) prints "non-torch forward increase
# memory: 2.04GiB" at tp 4 on H200 (vllm-qwen3-235b-a22b-fp8-tp4-h200-util05-debug-v0.10.0dev.log), and
# SGLang's Qwen3-235B-A22B-FP8 at tp 4 on H100 at 0.93 (sglang-qwen3-235b-a22b-fp8-tp4-mfs093.log) holds
# 367,404 tokens, 0.93 x 1.96 GiB under what our pool gives without it: so from tp 4 the tp 8 figure.
NVLS_WHOLE_FROM_TP = 4
# NCCL without NVLS and the custom all-reduce's few MiB: 0.13 GiB at tp 4 over PCIe (4 x L4, 0.4.3.post4,
# sglang-qwq-32b-4xl4-tp4-mfs085-v0.4.3.post4.log); the band up to 1 GiB holds vLLM's logs of the same
# buffers (0.17-0.43 GiB at tp 2-4 over PCIe and A100 NVLink, engines/vllm/non_torch.py) and Windows'.
COMM_OTHER = (Fraction("0.13"), Fraction("0.02"), Fraction(1))


def communicators(scenario) -> tuple[int, int, int, str]:
    """(estimate, lowest, highest, words): the bytes SGLang's distributed start-up holds on a GPU, by
    --tp-size (every GPU of a stage), DP attention and the GPU preset's platform and link."""
    dep = scenario.deployment
    size, gpu = tp_size(dep), dep.gpu
    if size <= 1:
        return 0, 0, 0, ""
    dp = dep.dp > 1
    if gpu is not None and gpu.platform == "rocm":
        top = COMM_ROCM_TP8
        where = "ROCm's RCCL and AITER custom all-reduce"
    elif gpu is not None and gpu.platform == "cuda" and gpu.interconnect == "nvlink" and (gpu.cuda_major() or 0) >= 9:
        top = COMM_NVLS_DP8 if dp else COMM_NVLS_TP8
        where = "NCCL's NVLink SHARP buffers on Hopper or later" + (" and DP attention's groups" if dp else "")
    else:
        top = None
        where = ("a GPU given only by its memory: NCCL over PCIe taken, NVLink on Hopper's figure the band's top"
                 if gpu is None else "NCCL without NVLink SHARP and the custom all-reduce")
    if top is not None and size >= 8:
        estimate, low, high = top
        said = f"as the tp 8 logs print it (ranks {float(low):.2f}-{float(high):.2f} GiB)"
    elif top is not None and size >= NVLS_WHOLE_FROM_TP:
        estimate, low, high = top[0], COMM_OTHER[1], top[2]
        said = (f"the tp 8 logs' {float(top[0]):.2f} GiB, as vLLM 0.10.0 prints NCCL's set-up at tp 4 on H200 "
                "(2.04 GiB); the band down to NCCL without NVLS")
    elif top is not None:
        estimate, low, high = top[0] / 2, COMM_OTHER[1], top[2]
        said = f"read at tp 8 only ({float(top[0]):.2f} GiB): half of it, the band up to it"
    else:
        estimate, low, high = COMM_OTHER
        if gpu is None:
            high = COMM_NVLS_DP8[2] if dp else COMM_NVLS_TP8[2]
        said = f"as 4 x L4 over PCIe print it at tp 4; the band up to {float(high):.2f} GiB"
    words = (f"SGLang's distributed start-up at --tp-size {size} holds about {float(estimate):.2f} GiB a GPU ({where}; "
             f"{said}) before it measures the memory mem_fraction_static multiplies (model_runner.py "
             "init_torch_distributed, 'Init torch distributed ends. mem usage').")
    return int(estimate * GIB), int(low * GIB), int(high * GIB), words


def estimate_overhead(scenario, chunk: int, notes: list) -> tuple[None, int, tuple | None]:
    """Its activations live in what mem_fraction_static leaves: what it loses beside them is
    mem_fraction_static x what its communicators hold before the base is measured (communicators),
    with its band; none where the memory in use at start is given (--memory-in-use-gib holds it)."""
    if scenario.settings.memory_in_use_gib is not None:
        return None, 0, None
    estimate, low, high, words = communicators(scenario)
    if not high:
        return None, 0, None
    fraction = memory_utilization(scenario, chunk)
    notes.append(words)
    return None, int(estimate * fraction), (int(low * fraction), int(high * fraction))


def size(scenario, chunk: int, budget: Budget, notes: list) -> EngineResult:
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    parallel.check(model, dep, PLACEMENT)
    _check_draft(scenario, model)
    draft = draft_rule(scenario)
    page = scenario.settings.block_size or 1
    placed = None                        # the weights per GPU as SGLang places them, where not the ideal's
    if dep.dp > 1:
        budget, placed = _dp_attention(scenario, chunk, budget, notes)
    hybrid = allocator.hybrid_rules(scenario, releases.in_force(sys.modules[__name__], scenario.settings),
                                    budget.source is BudgetSource.GIVEN_KV_MEMORY)      # its state pool, if any
    if budget.kv_bytes_per_gpu is None:
        return without_budget(NAME, TITLE, page, chunk, budget, notes,
                              allocator.request_bytes(model, work.kv_precision, dep.tp, dep.pp, work.context_tokens,
                                                      draft, hybrid))
    release = releases.in_force(sys.modules[__name__], scenario.settings)
    # The memory estimated is profile_max_num_token's rest memory, divided by this release's own
    # cell; a log's K + V (given) is the pool as allocated (allocator.profile_cell_bytes).
    profiled = None if budget.source is BudgetSource.GIVEN_KV_MEMORY else release
    pool = allocator.allocate(model, work.kv_precision, dep.tp, dep.pp, work.context_tokens, budget.kv_bytes_per_gpu,
                              page, draft, hybrid, profiled)
    notes += allocator.hybrid_notes(pool)
    budget = _outgrown(model, work.kv_precision, dep, budget, pool, profiled, draft, notes)
    if draft is not None:
        target = allocator.cell_bytes(model.layers[:len(model.layers) - draft[0]], work.kv_precision, dep.tp)
        notes.append(f"The draft's pool (its worker's, #tokens as the target's): its cell is sized as "
                     f"int({target:,} x {draft[1]} / {len(model.layers) - draft[0]}) = "
                     f"{allocator.cell_bytes(model.layers, work.kv_precision, dep.tp, draft) - target:,} B beside the "
                     f"target's "
                     f"{target:,} B (SGLang 0.5.23 pool_configurator.py: cell_target + int(cell_target x L_draft / "
                     "L_target)); the draft's weights were loaded before the pool was sized, so they come out of it."
                     + (" Not counted: a NEXTN head's own embed_tokens and lm_head, freed only after the pool is "
                        "sized (sgl-project/sglang#36452, open), shrink the pool by their bytes."
                        if scenario.serving.draft.kind == "mtp" else ""))
    starts = pool.kv_tokens > 0 and pool.refusal is None
    refusal = pool.refusal or (None if starts else printing.NOT_ENOUGH_MEMORY)
    return EngineResult(
        engine=NAME, block_size=page, prefill_chunk=chunk, kv_budget_bytes_per_gpu=budget.kv_bytes_per_gpu,
        kv_bytes_per_request=pool.bytes_per_request, kv_tokens=pool.kv_tokens, max_concurrency=pool.max_concurrency,
        # One request may use the whole full-attention pool, but no more than the --context-length
        # it is launched with (the context asked for), which SGLang keeps within the model's limit.
        starts=starts, max_model_len=min(pool.kv_tokens, work.context_tokens, model.max_context_tokens
                                         or work.context_tokens),
        refusal=refusal, activation_bytes_per_gpu=budget.activation_bytes_per_gpu,
        overhead_bytes_per_gpu=budget.overhead_bytes_per_gpu, budget_source=budget.source,
        log=tuple(list(pool.mamba_lines) + printing.log_lines(pool) + ([refusal] if refusal else [])),
        notes=tuple(notes), weights_bytes_per_gpu=placed, refusal_words=allocator.hybrid_refusal_words(pool))


def _outgrown(model, precision, dep, budget: Budget, pool, release, draft, notes: list) -> Budget:
    """Where this release's profile counted a smaller cell than the pool allocates (sparse-attention
    MLA before 0.5.17, allocator.profile_cell_bytes), the pool it prints (K size + V size) is more
    than the rest memory it was sized from: that is its KV memory, taken from the 1 -
    mem_fraction_static share."""
    if release is None or draft is not None or pool.kv_tokens <= 0:
        return budget
    first = allocator._stage_layers(model, dep.pp)[0]
    counted = allocator.profile_cell_bytes(first, precision, dep.tp, release)
    allocated = allocator.cell_bytes(first, precision, dep.tp)
    printed = pool.k_bytes + pool.v_bytes
    if counted >= allocated or printed <= budget.kv_bytes_per_gpu:
        return budget
    notes.append(f"SGLang {release} sizes the pool by a cell of {counted:,} B (get_cell_size_per_token: the MLA latent "
                 f"at the KV dtype's size" + (", the indexer's key beside it" if release.at_least(
                     *allocator.PROFILE_WITHOUT_INDEXER_BEFORE) else ", no indexer key") +
                 f") where NSATokenToKVPool allocates {allocated:,} B (the fp8 latent with its scales and bf16 rope, "
                 f"the indexer's key): {pool.kv_tokens:,} tokens of the {budget.kv_bytes_per_gpu / GIB:.2f} GiB rest memory "
                 f"take {printed / GIB:.2f} GiB, the excess out of the 1 - mem_fraction_static share "
                 "(model_runner.py profile_max_num_token, mem_cache/memory_pool.py; 0.5.17 on counts the row as allocated).")
    return replace(budget, kv_bytes_per_gpu=printed)


def _dp_attention(scenario, chunk: int, budget: Budget, notes: list) -> tuple[Budget, int | None]:
    """Under DP attention each rank's model runner sizes its own pool (profile_max_num_token with
    the cell of get_attention_tp_size()), and the weights sit as SGLang places them (parallel.py):
    the KV memory the budget took beside the exact ideal's weights per GPU moves by the difference.
    (the budget, SGLang's weights per GPU where they replaced the ideal's)."""
    dep, work = scenario.deployment, scenario.workload
    mine = parallel.weights_bytes_per_gpu(scenario.model, dep, PLACEMENT)
    ideal = parallel.weights_bytes_per_gpu(scenario.model, dep)
    words = (f"--tp-size {tp_size(dep)} --dp-size {dep.dp} --enable-dp-attention: {dep.dp} ranks of attn_tp_size "
             f"{dep.tp}, each with its own KV pool for its share of the requests (ceil(batch / dp) = "
             f"{parallel.rank_batch(work.batch, dep.dp):,}; the #tokens line is each rank's, printed once per DP rank); --max-running-requests is divided by dp_size and "
             f"the prefill chunk {chunk:,} too ({chunk // dep.dp:,} a rank).")
    if mine is not None:
        words += (f" Weights per GPU as SGLang places them: {mine / GIB:.2f} GiB (attention per rank over attn_tp, "
                  f"the embedding whole, dense layers and the head over all {tp_size(dep)}, experts "
                  + ("whole over the EP group)" if dep.expert_parallel else "sliced over tp_size)"))
    notes.append(words)
    if budget.kv_bytes_per_gpu is None or budget.source not in (BudgetSource.ESTIMATE, BudgetSource.GIVEN_OVERHEAD) or mine in (None, ideal):
        return budget, None
    return replace(budget, kv_bytes_per_gpu=budget.kv_bytes_per_gpu + ideal - mine), mine


def stores(kv_precision) -> bool:
    return kv_precision.name in KV_PRECISIONS


def explain(scenario, out: EngineResult) -> list[str]:
    return ["SGLang pools single tokens (page size 1 by default): every layer's K and V for one token "
            "make one cell, and the pool holds as many cells as the memory allows."]


def launch(scenario, result=None):
    """`python -m sglang.launch_server` with the flags that size this deployment (launch.py)."""
    return command.command(scenario, result, NAME, default_chunk(scenario), tp_size(scenario.deployment))
