"""vLLM (V1 and V0) as the Engine protocol (engines/__init__.py) asks for it: its defaults, the
memory it leaves for the KV cache, its overhead, its figures and their notes, and its launch
command. Each member asks the piece that owns the rule:
- allocator: the spec per layer kind, the KV cache groups and the pool (kv_cache_interface.py,
  kv_cache_utils.py);
- printing: what its start-up log prints;
- launch: `vllm serve`;
- release: what each release changed; profile: the profiling run's overhead; log: its log's reader.
"""

import math
import sys
from fractions import Fraction

from ...errors import InputError
from ... import parallel
from . import PLACEMENT
from .. import releases
from . import allocator, launch as command, printing, profile as profile, release as rules
from ..result import Budget, BudgetSource, EngineResult, Sharing, torch_total, without_budget
from .serving import SERVING  # noqa: F401  its serving rules, asked by serving/ through the registry
from .kv_layers import kv_layers  # noqa: F401  each layer's KV dtype, asked by inputs/ through the registry
from .pooling import is_pooling, loaded_weights as _pooling_weights
from .non_torch import CUDA_CONTEXT
from ...readers.quantized_bytes import mxfp4_padding_bytes, vllm_loaded_extra

def loaded_weights(scenario, weights: int | None) -> tuple[int | None, str]:
    """(the weights per GPU vLLM holds after loading, the note), engines._budget asks: the pooling
    runner's (no lm_head, pooling.py), and an mxfp4 MoE padded for the Marlin kernel where vLLM
    picks it (rules.mxfp4_marlin)."""
    weights, words = _pooling_weights(scenario, weights)
    dep = scenario.deployment
    model = scenario.model
    counted = dep.weights_bytes in (model.checkpoint_bytes, model.config_weights_bytes) or \
        (model.params and dep.weights_bytes == 2 * model.params and model.weights_dtype in ("bf16", "fp16"))
    if weights is not None and dep.weights_bytes and counted:
        # what "Model loading took" counts beyond the checkpoint's tensors (quantized_bytes.vllm_loaded_extra)
        ranks = dep.tp * dep.dp if dep.expert_parallel else 1
        # MRotaryEmbedding's cache holds 4 x max_position from 0.7.3 (rotary_embedding.py; 0.7.0 holds 1 x)
        release = scenario.settings.release
        mrope = 4 if release is None or release.at_least(0, 7, 3) else 1
        loaded = vllm_loaded_extra(model, dep.tp, ranks, dep.pp, head=not is_pooling(model, scenario.settings),
                                   mrope_positions=mrope, dp=dep.dp)
        if loaded:
            weights, words = weights + loaded[0], "; ".join(w for w in (words, loaded[1]) if w)
    if weights is None or dep.weights_bytes not in (model.checkpoint_bytes, model.config_weights_bytes) \
            or not rules.mxfp4_marlin(scenario.settings.release, dep.gpu):
        return weights, words         # weights given (weights-gib: as loaded) are not padded again
    ranks = dep.tp * dep.dp if dep.expert_parallel else 1
    extra = mxfp4_padding_bytes(model, 256, 128, tp=1 if dep.expert_parallel else dep.tp,
                                expert_ranks=ranks, stages=dep.pp)
    if not extra:
        return weights, words
    padded = (f"vLLM {scenario.settings.release} runs this GPU's mxfp4 experts on the Marlin kernel, which pads "
              f"the hidden size to a multiple of 256 and each rank's expert width to 128 (mxfp4.py): {extra:,} B "
              "per GPU beyond the checkpoint")
    return weights + extra, "; ".join(w for w in (words, padded) if w)


# The releases read (docs/research/vllm-release-rules.md): a version outside them is refused.
FIRST_RELEASE, NEWEST_RELEASE = "0.6.4", "0.33.0"
VERSION_EXAMPLE, VERSIONS_BY_BUILD = "0.10.2 or v0.19.1", False
parse_version = releases.pep440
NAME, TITLE = "vllm", "vLLM"
KV_PRECISIONS = ("fp32", "fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2", "nvfp4",   # --kv-cache-dtype (fp8 is e4m3)
                 "turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc")
# The GPUs it runs on (CUDA and ROCm builds): the planner considers no others.
VENDORS = ("NVIDIA", "AMD")
# It builds a vision tower's linears split over tp under --mm-encoder-tp-mode weights, and refuses
# to start where tp does not divide their widths (serving/encoder.py check_tp).
CHECKS_ENCODER_SPLIT = True
LOG_READER = "log"           # its start-up log's reader: engines/vllm/log.py
FAILURES = "failures"        # its failed starts and their fixes: engines/vllm/failures.py
OWN_OPTIONS = ("vllm-runner", "vllm-entry", "vllm-engine", "enforce-eager", "max-cudagraph-capture-size", "prefix-caching",
               "language-model-only", "limit-mm-per-prompt", "kv-dtype-skip-layers", "hybrid-kv-cache-manager",
               "kv-connector")    # options only vLLM takes
# Printed in "non-default args" whenever given: a log without it ran with vLLM's default.
LOGGED_WHEN_SET = ("max-cudagraph-capture-size",)
USABLE_BY_GPU = True         # --gpu-memory-utilization x the GPU's total: no layout moves it
KV_MEMORY_LOGGED = True      # its log prints "Available KV cache memory" to 0.01 GiB
SEPARATE_V = False           # K and V in one dtype
TOKENS_LABEL = "GPU KV cache size"            # what its log calls the token count
REFUSED_MAX_LEN_WORDS = "vLLM's estimate"     # a refusal prints the longest length it estimates
CONCURRENCY_FORMAT = "{:,.2f}x"              # as its log prints it
# The engine card's labels, in the words of its start-up log.
LABELS = {"engine_max_concurrency": "Maximum concurrency it prints",
          "engine_kv_tokens": "GPU KV cache size it prints",
          "engine_kv_budget_bytes_per_gpu": "Available KV cache memory it prints, per GPU",
          "engine_kv_bytes_per_request": "Reserved per request, per GPU",
          "engine_max_model_len": "max_model_len it starts with",
          "engine_overhead_band": "Overhead per GPU, estimated"}
# Its KV pool is allocated whole at start-up: what the requests leave is the cache's, not free.
ALLOCATES_WHOLE_BUDGET = True
USABLE_WORDS = ""


def release_of(scenario):
    return releases.in_force(sys.modules[__name__], scenario.settings)


def _batch_defaults(scenario) -> tuple[int, int]:
    dep, model, release = scenario.deployment, scenario.model, release_of(scenario)
    vision = getattr(model.shapes, "vision", None) if model.shapes is not None else None
    return rules.batch_defaults(release, dep.gpu_memory_bytes, dep.gpu, scenario.workload.context_tokens,
                                scenario.settings.vllm_entry,
                                rules.mm_batch_floor(release, vision.wrapper if vision is not None else ""),
                                model.multimodal)


def default_chunk(scenario) -> int:
    return _batch_defaults(scenario)[0]


def max_num_seqs(scenario) -> int:
    """--max-num-seqs: the requests asked for when chosen (the launch command sets it), else the
    release's default for this GPU. It is each data-parallel rank's (every engine core schedules
    its own), so a rank's share of the requests: ceil(batch / dp)."""
    work = scenario.workload
    return parallel.rank_batch(work.batch, scenario.deployment.dp) if scenario.settings.batch_given \
        else _batch_defaults(scenario)[1]


def memory_utilization(scenario, chunk: int) -> Fraction:
    """--gpu-memory-utilization in force: the one given, else this release's default."""
    if scenario.settings.utilization_given:
        return scenario.deployment.memory_utilization
    return rules.default_utilization(release_of(scenario))


def usable_memory(scenario, chunk: int, notes: list, ideal_usable: int) -> int:
    """The total PyTorch reports, times --gpu-memory-utilization (its default when not given)."""
    dep, settings = scenario.deployment, scenario.settings
    memory = torch_total(dep, settings, notes)
    release = release_of(scenario)
    if dep.gpu is not None and dep.gpu.mig_of is not None and not settings.batch_given:
        notes.append(rules.MIG_TIER_WORDS)
    # requested memory: int(total x util), math.ceil from 0.14.0 (vllm/v1/worker/utils.py request_memory).
    rounding = math.ceil if release.at_least(0, 14, 0) else int
    if settings.utilization_given:
        return rounding(memory * dep.memory_utilization)
    default = rules.default_utilization(release)
    notes.append(f"vLLM {release}'s default --gpu-memory-utilization {float(default):g} is used (0.9 before "
                 "0.20.0, 0.92 from it; set a memory utilization to change it).")
    return rounding(memory * default)



def sharing(scenario) -> Sharing:
    """How a vLLM server shares a GPU (docs/research/vllm-release-rules.md, rule 3). From 0.6.5 (V0,
    PR #10511) and 0.9.1 (V1, PR #19312) it measures from a snapshot taken at its start, so its
    --gpu-memory-utilization is its own share of the whole memory, whatever runs beside it, and it
    holds that share plus its CUDA context (before the snapshot: non_torch.CUDA_CONTEXT). V1 from
    0.9.1 refuses to start where the memory free at its start is under its share (gpu_worker.py
    init_device, "Free memory on device ... on startup is less than desired GPU memory
    utilization"). 0.6.4, and V1 before 0.9.1, count what other processes hold as their own
    non-torch memory: a server beside another is sized smaller than its share, not modelled here.
    Its port: `vllm serve --port`'s default, 8000 (entrypoints/openai/cli_args.py)."""
    release = release_of(scenario)
    v1 = rules.v1(release)
    context = CUDA_CONTEXT[0]
    if not release.at_least(0, 6, 5) or (v1 and not release.at_least(0, 9, 1)):
        fixed = "0.9.1 (V1, PR #19312)" if v1 else "0.6.5 (V0, PR #10511)"
        return Sharing("total", context, 8000, "", refusal=(
            f"vLLM {release} counts the memory other processes hold as its own non-torch memory, so a server beside "
            f"another is sized smaller than its share, which is not modelled; from {fixed} each server's "
            "--gpu-memory-utilization is its own share of the whole GPU"))
    graphs = "" if release.at_least(0, 20, 0) else \
        "; its CUDA graphs, captured after the cache, come on top of its share and are not counted here"
    return Sharing("total", context, 8000, (
        f"vLLM {release} takes its --gpu-memory-utilization share of the GPU's whole memory, whatever runs beside "
        f"it (its memory profile starts from a snapshot at its start), and holds that share plus its CUDA context "
        f"(about {printing.format_gib(context)} GiB, before the snapshot)"
        + ("; it refuses to start where the memory free at its start is under its share (gpu_worker.py init_device)"
           if v1 else "") + graphs), start_check=v1)


def usable_words(scenario, out: EngineResult, usable: int) -> str:
    """What usable_memory took, in vLLM's terms (the source formula's words)."""
    dep, settings = scenario.deployment, scenario.settings
    share = memory_utilization(scenario, out.prefill_chunk)
    whose = "yours" if settings.utilization_given else f"vLLM {release_of(scenario)}'s default"
    torch = torch_total(dep, settings, [])
    total = f"the {torch:,} B PyTorch reports (nvidia-smi: {dep.gpu_memory_bytes:,} B)" \
        if torch != dep.gpu_memory_bytes else f"the {torch:,} B"
    return f"--gpu-memory-utilization {float(share):g} ({whose}) of {total}"


def overhead_words(scenario, out: EngineResult) -> str:
    activation = out.activation_bytes_per_gpu
    return ("vLLM's estimate per GPU: the activation peak of its profiling run"
            + (f" ({activation:,} B)" if activation else "") + ", CUDA graphs and non-torch memory")


def count_words(scenario, out: EngineResult) -> str:
    return "vLLM counts whole blocks of its pool against the blocks one request needs at the full context"


def estimate_overhead(scenario, chunk: int, notes: list) -> tuple[int, int, tuple[int, int]]:
    """(activation peak, everything subtracted besides the weights, that total's band) per GPU,
    as vLLM's profiling run and start-up measure them in this release."""
    estimate = profile.estimate(scenario, release_of(scenario), chunk, max_num_seqs(scenario))
    notes.append(f"The overhead is an estimate ({estimate.words}; its band {printing.format_gib(estimate.low)}-"
                 f"{printing.format_gib(estimate.high)} GiB): paste \"Available KV cache memory\" from your log as "
                 "kv-memory-gib for exact figures")
    return estimate.activation, estimate.total, (estimate.low, estimate.high)


def size(scenario, chunk: int, budget: Budget, notes: list) -> EngineResult:
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    parallel.check(model, dep, PLACEMENT)
    if scenario.settings.language_model_only:
        rules.check_text_only(release_of(scenario), dict(scenario.settings.mm_limits))
    if scenario.settings.capture_size_limit is not None:
        draft = scenario.serving.draft
        rules.check_capture_size_limit(release_of(scenario), scenario.settings.capture_size_limit,
                                       draft.spec_tokens or 0 if draft is not None else 0)
    if scenario.serving.draft is not None:
        _check_draft(scenario, notes)
    block, why = allocator.block_size_for(model, dep.gpu, scenario.settings.block_size)
    if why:
        notes.append(why)
    if dep.dp > 1:
        notes.append(_dp_words(dep, work))
    # What a sliding layer reserves beside its window, and whether the hybrid manager runs: asked once.
    reserved, hma, release = reserved_chunk(scenario, chunk), hybrid_manager_on(scenario, notes), release_of(scenario)
    if budget.kv_bytes_per_gpu is None:
        return without_budget(NAME, TITLE, block, chunk, budget, notes, allocator.request_bytes(
            model, work.kv_precision, dep.tp, dep.pp, work.context_tokens, reserved, block, work.state_precision,
            state_pages(scenario), release, hma))
    available = budget.kv_bytes_per_gpu
    pages = state_pages(scenario)
    pool, refusal, longest, config_lines = allocator.allocate(
        model, work.kv_precision, dep.tp, dep.pp, work.context_tokens, reserved, block,
        available, work.state_precision,
        pages, 0 if budget.source is BudgetSource.GIVEN_KV_MEMORY else      # a KV memory given holds on every worker
        profile.stage_surplus(scenario, release, chunk, max_num_seqs(scenario)), release,
        rules.mamba_state_pages(release, _prefix_caching(scenario)) == 1, hma)
    if not scenario.settings.release_given:
        older = allocator.count_words(pool, work.context_tokens,
                                      rules.mamba_state_pages(release, _prefix_caching(scenario)) == 1)
        if older:
            notes.append(older)
    # A hybrid's decode sequences each need a Mamba cache block (allocator.mamba_ceiling): it
    # prints the pool's lines, then refuses.
    ceiling, over_words = allocator.mamba_ceiling(model, pool, release, scenario.settings.enforce_eager), None
    if ceiling is not None and max_num_seqs(scenario) > ceiling:
        refusal = allocator.mamba_ceiling_refusal(max_num_seqs(scenario), ceiling)
        over_words = _mamba_words(scenario, pool, budget, chunk, release)
    # A refusal still quotes what one request needs ("X GiB KV cache is needed").
    needed = pool.bytes_per_request if pool is not None else allocator.request_bytes(
        model, work.kv_precision, dep.tp, dep.pp, work.context_tokens, reserved, block,
        work.state_precision, pages, release, hma)
    return EngineResult(
        engine=NAME, block_size=block if pool is None else pool.block_size, prefill_chunk=chunk,
        kv_budget_bytes_per_gpu=available, kv_bytes_per_request=needed,
        kv_tokens=None if pool is None else pool.kv_tokens,
        max_concurrency=None if pool is None else pool.max_concurrency, starts=pool is not None and refusal is None,
        max_model_len=work.context_tokens if pool is not None else longest, refusal=refusal, refusal_words=over_words,
        activation_bytes_per_gpu=budget.activation_bytes_per_gpu, overhead_bytes_per_gpu=budget.overhead_bytes_per_gpu,
        budget_source=budget.source, log=tuple(printing.log_lines(
            pool, refusal, available, work.context_tokens, config_lines, release,
            allocator.swap_blocks(model, work.kv_precision, dep.tp, block))),
        notes=tuple(notes))


def _mamba_words(scenario, pool, budget: Budget, chunk: int, release) -> str:
    """How far max_num_seqs is over the Mamba cache blocks, and the flags that fix it."""
    seqs, blocks, dep, settings = max_num_seqs(scenario), pool.num_blocks, scenario.deployment, scenario.settings
    whose = "yours" if settings.batch_given else f"vLLM {release}'s default for this GPU"
    rank = " per data-parallel rank" if dep.dp > 1 else ""
    short = seqs * pool.block_bytes - budget.kv_bytes_per_gpu
    more = f"{printing.format_gib(short)} GiB more KV memory per GPU"
    if budget.source is not BudgetSource.GIVEN_KV_MEMORY:
        total = torch_total(dep, settings, [])
        share = Fraction(math.ceil((total * memory_utilization(scenario, chunk) + short) * 100 / total), 100)
        more += f" (--gpu-memory-utilization {float(share):.2f})" if share <= 1 else \
            " (more than this GPU has at any --gpu-memory-utilization)"
    return (f"max_num_seqs {seqs:,}{rank} ({whose}) exceeds its {blocks:,} Mamba cache blocks by {seqs - blocks:,}: "
            f"each decode sequence of its full CUDA graphs needs one block ({pool.block_bytes:,} B per GPU). Pass "
            f"--max-num-seqs {blocks} or fewer, or give it {more}, or --enforce-eager (no full graphs, no check); a "
            "shorter --max-model-len leaves the block count as it is")


# The connector an offload backend puts in kv_transfer_config (config/vllm.py _post_init_kv_transfer_config).
OFFLOAD_CONNECTORS = {None: "OffloadingConnector", "native": "OffloadingConnector", "lmcache": "LMCacheConnectorV1"}


def kv_connector(scenario) -> str | None:
    """The KV connector the hybrid manager's rule sees: the one given, else the one --kv-offloading-size
    sets where vLLM sets it before that rule runs (_post_init_kv_transfer_config: after it in 0.20.0 and
    0.21.0, before it from 0.26.0; 0.22-0.25 not read, where the native connector keeps the manager on
    anyway). Both at once is vLLM's error (it asks for a MultiConnector)."""
    settings = scenario.settings
    if settings.kv_connector and settings.serving.offload_gib:
        raise InputError("kv-connector", "with offload-gib vLLM sets its own offloading connector, and asks for "
                                         "both in a MultiConnector instead: leave one out")
    if settings.kv_connector:
        return settings.kv_connector
    if settings.serving.offload_gib and release_of(scenario).at_least(*rules.OFFLOAD_CONNECTOR_BEFORE_HMA_FROM):
        return OFFLOAD_CONNECTORS.get(settings.serving.offload_backend, "OffloadingConnector")
    return None


def reserved_chunk(scenario, chunk: int) -> int:
    """The new tokens a sliding or chunked layer reserves a request beside its window
    (release.in_flight_tokens): from 0.26.0 every concurrent batch's max_num_batched_tokens."""
    release, dep, model = release_of(scenario), scenario.deployment, scenario.model
    if not release.at_least(*rules.IN_FLIGHT_FROM) or not rules.v1(release):
        return chunk
    pooling = is_pooling(model, scenario.settings)
    quantized, separate = profile.runner_inputs(scenario)
    v2 = profile.uses_runner_v2(model, release, quantized, separate, pooling)
    return rules.in_flight_tokens(release, chunk, rules.concurrent_batches(release, dep.pp, pooling, separate, v2))


def hybrid_manager_on(scenario, notes: list) -> bool:
    """Whether vLLM's hybrid KV cache manager runs (release.hybrid_manager); off, every sliding or
    chunked layer is charged for the whole context, and a model with state layers does not start."""
    model = scenario.model
    local = any(layer.kind in ("sliding", "chunked") for layer in model.layers)
    draft = scenario.serving.draft
    on, why = rules.hybrid_manager(release_of(scenario), scenario.settings.hybrid_kv_manager, kv_connector(scenario),
                                   any(layer.kind == "chunked" for layer in model.layers),
                                   draft is not None and draft.kind == "mtp")
    if on:
        return True
    if any(layer.kind == "state" for layer in model.layers):
        field = ("hybrid-kv-cache-manager" if scenario.settings.hybrid_kv_manager == "off" else
                 "kv-connector" if scenario.settings.kv_connector else "offload-gib")
        raise InputError(field, f"{rules.hma_refusal(release_of(scenario))} (vLLM): the hybrid "
                                                    f"KV cache manager is off ({why}), and a model with state layers "
                                                    "needs it; leave it on or choose a connector that supports it")
    if local:
        notes.append(f"vLLM's hybrid KV cache manager is off ({why}): every sliding-window and chunked layer keeps "
                     "the whole context, as a full-attention layer does")
    return False


def _prefix_caching(scenario) -> bool | None:
    given = scenario.settings.prefix_caching
    return None if given is None else given == "on"


def state_pages(scenario) -> int:
    """Pages of state one request keeps in each Mamba group: the release's, plus one a speculative
    token (MambaSpec.num_speculative_blocks = num_speculative_tokens; max_memory_usage_bytes =
    page x (1 or 2 + num_speculative_blocks), kv_cache_interface.py)."""
    given, release = scenario.settings.prefix_caching, release_of(scenario)
    if given == "on" and any(layer.kind == "state" for layer in scenario.model.layers):
        allocator.check_prefix_caching(scenario.model, release, scenario.serving.draft is not None)
    pages = rules.mamba_state_pages(release, None if given is None else given == "on")
    draft = scenario.serving.draft
    return pages + (draft.spec_tokens or 0) if draft is not None else pages


def _check_draft(scenario, notes: list) -> None:
    """vLLM V1 pools a drafter's layers with the target's (gpu_model_runner.py get_kv_cache_spec;
    KVCacheSpec.is_draft compare=False, 0.33.0): the sizing model already holds them. V0's
    speculative worker kept a cache of its own, which is not modelled."""
    release = release_of(scenario)
    if not rules.v1(release):
        raise InputError("engine-version", f"vLLM {release}'s V0 engine ran the draft in a worker with a KV cache of "
                                           "its own, which is not modelled; V1 pools it with the target's")
    draft = scenario.serving.draft
    notes.append(f"The {'MTP heads' if draft.kind == 'mtp' else 'draft ' + draft.name}' {len(draft.layers)} "
                 "layer(s) share the target's KV cache groups (a layer with the target's spec joins its group; any "
                 "other spec is grouped by the hybrid rule), and its weights load with the target's, inside \"Model "
                 "loading took\". The capacity printed leaves out the lookahead slots (num_speculative_tokens per "
                 "running request) the scheduler reserves at run time.")


def _dp_words(dep, work) -> str:
    experts = ("whole over the expert-parallel group of" if dep.expert_parallel else
               "sliced by tensor parallelism over all")
    return (f"--data-parallel-size {dep.dp}: {dep.dp} engine cores, each of tp {dep.tp} GPUs with its own copy of the "
            f"attention and dense layers and its own KV cache for its share of the requests (ceil(batch / dp) = "
            f"{parallel.rank_batch(work.batch, dep.dp):,}); the routed experts are {experts} {dep.tp * dep.dp} GPUs (FusedMoEParallelConfig). The "
            "\"GPU KV cache size\" and \"Maximum concurrency\" lines are each rank's, printed once per engine core; "
            f"the deployment holds {dep.dp} x that.")


def stores(kv_precision) -> bool:
    return kv_precision.name in KV_PRECISIONS


def explain(scenario, out: EngineResult) -> list[str]:
    """Why its figures differ from the exact ideal, in its own terms."""
    work = scenario.workload
    kinds = {layer.kind for layer in scenario.model.layers}
    line = (f"vLLM hands out blocks of {out.block_size} tokens per layer; a request at "
            f"{work.context_tokens:,} tokens reserves whole blocks")
    if "sliding" in kinds and hybrid_manager_on(scenario, []):
        reserved = reserved_chunk(scenario, out.prefill_chunk)
        line += (f", and sliding-window layers reserve window - 1 + the prefill chunk ({out.prefill_chunk:,}) "
                 "tokens plus one block" if reserved == out.prefill_chunk else
                 f", and sliding-window layers reserve window - 1 + the tokens in flight ({reserved // out.prefill_chunk}"
                 f" concurrent batches x the prefill chunk {out.prefill_chunk:,} = {reserved:,}) plus one block")
    why = [line + "."]
    if "state" in kinds:
        pages = state_pages(scenario)
        mode = ("prefix caching's align mode, vLLM's default for hybrids from v0.28; one with "
                "--no-enable-prefix-caching" if rules.mamba_state_pages(release_of(scenario)) == 2 else
                "vLLM before v0.28 leaves prefix caching off for hybrids: one page, two under "
                "--enable-prefix-caching's align mode from v0.28")
        why.append(f"The state layers share the pool: the block grew to {out.block_size} tokens so one "
                   f"attention page holds a state, and each request keeps {pages} state page(s) in each state "
                   f"group ({mode}; one more per speculative token).")
    why.append("Its maximum concurrency is for requests at the full context (max_model_len); it is "
               "printed unrounded.")
    return why


def launch(scenario, result=None):
    """`vllm serve` with the flags that size this deployment (launch.py)."""
    return command.command(scenario, result, NAME, release_of(scenario), default_chunk(scenario))
