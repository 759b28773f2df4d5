"""vLLM's launch command: `vllm serve` with the flags that size this deployment (vllm/engine/
arg_utils.py EngineArgs), and the notes that say what each flag does here."""

from ...errors import InputError
from ...command_line import (
    Launch, common_notes, env, kv_flag, own_answer, prefill_chunk, repo, requests, shell_join, utilization)
from ... import parallel
from . import PLACEMENT
from . import release as rules
from .allocator import BLOCK_SIZES, block_size_for

# --kv-cache-dtype choices (vllm/config/cache.py CacheDType) by our precision name.
LAUNCH_KV = {"fp8": "fp8", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "bf16": "bfloat16",
             **{name: name for name in ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc",
                                        "turboquant_3bit_nc")}}
# What lets it take a context past the model's max_position_embeddings: _get_and_verify_max_len
# raises unless it is set (vllm/envs.py).
LONG_CONTEXT_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
# Its MLA backends on NVIDIA (FlashInfer MLA, FlashMLA) take no fp8_e5m2 cache.
MLA_KV = {"fp8", "fp8_e4m3", "bf16"}


def _hybrid_manager_flags(scenario) -> list:
    """The connector and the manager as asked: --kv-transfer-config with the connector, and
    --disable-hybrid-kv-cache-manager for off (on is vLLM's rule, or for chunked local attention
    its environment variable, written before the command)."""
    settings, args = scenario.settings, []
    if settings.kv_connector:
        args += ["--kv-transfer-config", '{"kv_connector": "%s", "kv_role": "kv_both"}' % settings.kv_connector]
    if settings.hybrid_kv_manager == "off":
        args += ["--disable-hybrid-kv-cache-manager"]
    return args


def command(scenario, result, name: str, release, chunk: int) -> Launch:
    """`vllm serve` for vLLM `release` (the one in force) whose default --max-num-batched-tokens
    here is `chunk`; `result` is the evaluation sized (None for a command alone); `name` is the
    engine's registry name (result.engine.engine when vLLM sized it)."""
    work, dep, notes = scenario.workload, scenario.deployment, common_notes(scenario, "vLLM", LONG_CONTEXT_ENV)
    kv, why = kv_flag(scenario, LAUNCH_KV, "vLLM")
    if why:
        return Launch(name, None, (why,))
    if kv != "auto" and any(layer.kind == "mla" for layer in scenario.model.layers) and \
            scenario.workload.kv_precision.name not in MLA_KV:
        return Launch(name, None, (f"vLLM's MLA backends cannot store the latent as {kv}; use fp8 (e4m3)",))
    args = env(scenario, LONG_CONTEXT_ENV)
    if scenario.settings.hybrid_kv_manager == "on" and any(layer.kind == "chunked" for layer in scenario.model.layers):
        args = (args or ["env"]) + [rules.CHUNKED_HMA_ENV]
    args += ["vllm", "serve", repo(scenario, notes), "--max-model-len", str(work.context_tokens)]
    try:
        parallel.check(scenario.model, dep, PLACEMENT)
    except InputError as e:
        return Launch(name, None, (e.message,))
    own = own_answer(result, name)
    seqs = requests(scenario, result, name, "--max-num-seqs", notes)
    if seqs and dep.dp > 1:
        seqs = _per_rank(scenario, own is not None, seqs, notes)
    args += ["--max-num-seqs", str(seqs)] if seqs else []
    args += ["--kv-cache-dtype", kv, "--tensor-parallel-size", str(dep.tp), "--pipeline-parallel-size", str(dep.pp)]
    args += ["--kv-cache-dtype-skip-layers", *scenario.settings.kv_skip_layers] if scenario.settings.kv_skip_layers else []
    args += _hybrid_manager_flags(scenario)
    args += ["--data-parallel-size", str(dep.dp)] if dep.dp > 1 else []
    args += ["--enable-expert-parallel"] if dep.expert_parallel else []
    args += utilization(scenario, "--gpu-memory-utilization", notes,
                        f"{float(rules.default_utilization(release)):g} in vLLM {release}")
    args += prefill_chunk(scenario, chunk, "--max-num-batched-tokens", notes)
    args += ["--enforce-eager"] if scenario.settings.enforce_eager else []
    limit = scenario.settings.capture_size_limit
    if limit is not None and scenario.settings.enforce_eager:
        notes.append("no --max-cudagraph-capture-size: --enforce-eager captures no CUDA graphs")
    elif limit is not None:
        args += ["--max-cudagraph-capture-size", str(limit)]
    # --runner (0.10.2 on, vllm/engine/arg_utils.py); --task before it: "embedding" from 0.6.4, which 0.10.2's
    # TaskOption (vllm/config/__init__.py) still takes beside "embed".
    runner = scenario.settings.vllm_runner
    args += [] if runner == "auto" else (["--runner", runner] if release.at_least(0, 10, 2) else
                                         ["--task", "embedding" if runner == "pooling" else "generate"])
    prefix = scenario.settings.prefix_caching
    args += [] if prefix is None else ["--enable-prefix-caching" if prefix == "on" else "--no-enable-prefix-caching"]
    limits = dict(scenario.settings.mm_limits)
    if scenario.settings.language_model_only:
        args += rules.text_only_flags(release)
    elif limits:
        args += rules.limits_flags(release, limits)
    args += _pin(own, release, notes)
    if scenario.settings.vllm_entry == "llm":
        notes.append(f"sized for the LLM() class; `vllm serve` batches fewer tokens by default: pass "
                     f"--max-num-batched-tokens {chunk} to size it the same")
    if work.block_size_tokens > 1:
        if work.block_size_tokens not in BLOCK_SIZES:
            return Launch(name, None, (f"vLLM block sizes are {', '.join(map(str, BLOCK_SIZES))}; "
                                       f"not {work.block_size_tokens}",))
        args += ["--block-size", str(work.block_size_tokens)]
    else:
        block = own.block_size if own is not None else block_size_for(scenario.model, dep.gpu, None)[0]
        notes.append(f"vLLM pages this model's cache in blocks of {block} tokens here; its figures above count "
                     "them (the exact ideal's count single tokens)")
    return Launch(name, shell_join(args), tuple(notes))


def _per_rank(scenario, sized: bool, seqs: int, notes: list) -> int:
    """--max-num-seqs is each engine core's: a rank's share of the requests asked for, or what one
    rank holds (vLLM's own concurrency is per rank already, when vLLM `sized` them)."""
    if scenario.settings.batch_given or not sized:
        per_rank = parallel.rank_batch(seqs, scenario.deployment.dp)
        notes.append(f"--max-num-seqs {per_rank:,} is each of the {scenario.deployment.dp} data-parallel ranks' "
                     f"(ceil({seqs:,} / {scenario.deployment.dp}))")
        return per_rank
    notes.append(f"--max-num-seqs {seqs:,} is each data-parallel rank's: {scenario.deployment.dp} x {seqs:,} requests "
                 "in all")
    return seqs


def _pin(own, release, notes: list) -> list[str]:
    """--kv-cache-memory-bytes (0.10.2 on, CacheConfig.kv_cache_memory_bytes): the KV memory we
    computed (`own`, vLLM's figures, or None), so vLLM allocates exactly the pool they describe."""
    if own is None or not own.starts or not own.kv_budget_bytes_per_gpu:
        return []
    if not rules.kv_cache_memory_flag(release):
        notes.append(f"vLLM {release} cannot pin the KV memory (--kv-cache-memory-bytes came in 0.10.2): its own "
                     "profiling decides it")
        return []
    notes.append(f"--kv-cache-memory-bytes {own.kv_budget_bytes_per_gpu:,} pins the KV memory computed here: vLLM "
                 "then allocates exactly this pool instead of measuring what is left, so the figures above are "
                 "what it prints; if its activations need more than the estimate leaves, it runs out of memory "
                 "at run time instead of starting smaller (drop the flag to let it measure)")
    return ["--kv-cache-memory-bytes", str(own.kv_budget_bytes_per_gpu)]
