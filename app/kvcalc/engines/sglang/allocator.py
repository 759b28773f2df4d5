"""SGLang's token pool: one cell per token holding every layer's K and V on the rank, and the
split full / sliding-window pools of its hybrid models.

Read from SGLang's sources (python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py and
mem_cache/memory_pool.py, 2025-2026 main):
- get_cell_size_per_token: a cell is the K and V rows of every layer on the rank (kv heads // tp,
  at least one; MLA: kv_lora_rank + qk_rope_head_dim, in K alone).
- profile_max_num_token / init_memory_pool: the pool's memory // cell, rounded down to page_size
  (1 by default), the smallest over pipeline stages; hybrid sliding-window models
  (is_hybrid_swa_model) split the tokens into a full pool and a SWA pool
  (set_num_tokens_hybrid_swa, swa_full_tokens_ratio 0.8 by default).
- MHATokenToKVPool / MLATokenToKVPool / SWAKVPool allocate (tokens + page_size) rows per layer.
- Speculative decoding (0.5.23, model_executor/pool_configurator.py DefaultPoolConfigurator):
  cell = cell_target + int(cell_target x L_draft / L_target).

Worked example, Llama 3.1 8B (32 layers, 8 KV heads of 128, bf16, tp 1): a cell is 32 x (2,048 +
2,048) = 131,072 B; 40 GiB of pool memory is 327,680 cells, and the pool allocates 327,681 rows
per layer (tokens + page_size): K size = V size = 32 x 327,681 x 2,048 B = 20.00 GB as it prints
GiB; a request of 32,768 tokens takes 4,294,967,296 B, so 10 of them fit.
"""

from dataclasses import dataclass, replace
from fractions import Fraction

from ...errors import InputError
from ...layers import IndexedAttention
from ...units import GIB

SWA_FULL_TOKENS_RATIO = Fraction(4, 5)
# configs/model_config.py is_hybrid_swa_model: only these architectures get separate full and
# sliding-window pools; every other model keeps one full-size pool for all its layers (Gemma 2/3,
# Mistral, Phi-3). Releases differ for gpt-oss: some disabled its split pools.
HYBRID_SWA_ARCHITECTURES = ("Llama4", "GptOss", "MiMoV2", "Step3p5", "Gemma4")


@dataclass(frozen=True)
class Pool:
    kv_tokens: int                # max_total_num_tokens (the full-attention pool for hybrids)
    swa_tokens: int | None        # the sliding-window pool of hybrid models
    k_bytes: int
    v_bytes: int
    mla: bool
    max_concurrency: Fraction     # requests at the full context the pool holds at once
    bytes_per_request: int
    # A hybrid's state pool (mamba_pool) and the request ceiling SGLang derives from it.
    max_running_requests: int | None = None
    request_cap: int | None = None             # the state slots // slots a request
    wanted_requests: int | None = None         # what it would run without the state pool's cap
    slots_per_request: int | None = None
    mamba: object = None
    mamba_lines: tuple = ()
    refusal: str | None = None


def _stage_layers(model, pp: int):
    start, out = 0, []
    for stage in model.stages(pp):
        size = sum(stage.values())
        out.append(model.layers[start:start + size])
        start += size
    return out


def _kv_split(layer, precision, tp: int) -> tuple[int, int]:
    """(K bytes, V bytes) per token for one layer on one rank."""
    if layer.kind == "mla":
        return layer.row_bytes(precision, tp), 0
    heads = max(1, layer.kv_heads // tp)
    return precision.bytes_for(heads * layer.head_dim), precision.bytes_for(heads * (layer.v_head_dim or layer.head_dim))


def swa_pool_layers(model) -> list:
    """The sliding layers SGLang gives a pool of their own (is_hybrid_swa_model); none for the
    other models, whose one pool holds every token in every layer."""
    sliding = [layer for layer in model.layers if layer.kind == "sliding"]
    hybrid = sliding and len(sliding) < len(model.layers) and any(
        name in (model.architecture or "") for name in HYBRID_SWA_ARCHITECTURES)
    return sliding if hybrid else []


def _request_bytes(first_stage, sliding: list, precision, tp: int, context: int, draft=None) -> int:
    if draft is not None:
        return cell_bytes(first_stage, precision, tp, draft) * context
    return sum(sum(_kv_split(layer, precision, tp)) * (min(context, layer.window)
                                                       if sliding and layer.kind == "sliding" else context)
               for layer in first_stage if layer.held_range(1) is not None)


def cell_bytes(layers, precision, tp: int, draft=None) -> int:
    """One token's cell on a rank. With a draft (its `draft` = (the draft layers at the end of
    `layers`, SGLang's L_draft)), 0.5.23's rule: the target's cell plus int(cell x L_draft /
    L_target), whatever the draft's own heads (pool_configurator.py DefaultPoolConfigurator)."""
    if draft is None:
        return sum(sum(_kv_split(layer, precision, tp)) for layer in layers if layer.held_range(1) is not None)
    added, l_draft = draft
    target = layers[:len(layers) - added]
    cell = cell_bytes(target, precision, tp)
    return cell + cell * l_draft // len(target)


# What profile_max_num_token divides the rest memory by (get_cell_size_per_token) is not always the
# row the pool then allocates, for DeepSeek's sparse attention (DSA / NSA: DeepSeek-V3.2, GLM-5):
# - 0.5.3 (model_executor/model_runner.py profile_max_num_token): an MLA layer counts
#   (kv_lora_rank + qk_rope_head_dim) x the KV dtype's size, without the indexer's key;
# - 0.5.4-0.5.16 (model_runner.py, then model_runner_kv_cache_mixin.py get_cell_size_per_token and
#   0.5.12 on model_executor/pool_configurator.py; sgl-project/sglang#11309 added the indexer): that
#   plus the indexer's 128 + 128 / 128 x 4 = 132 B (NSATokenToKVPool.index_k_with_scale_buffer, uint8);
# - 0.5.17 on (pool_configurator.py): calculate_mla_kv_cache_dim, the row as allocated.
# NSATokenToKVPool (mem_cache/memory_pool.py, 0.5.3-0.5.16) allocates an fp8 latent as 512 + 16 B of
# scales + 64 x 2 B of bf16 rope = 656 B and the indexer's 132 B beside it: 788 B a layer, where the
# profile counted 576 (0.5.3) or 708. So the pool holds rest // 708 x L tokens and prints their
# 788 x L: 8 x MI355X, GLM-5-FP8, fp8 KV, 0.5.8.post1 (tests/fixtures/logs/sglang-glm-5-fp8-mi355x-tp8-fp8kv-
# rocm-v0.5.8.post1.log): #tokens 3,262,823 x 708 x 78 = 167.84 GiB = 0.908 x 283.50 - 89.58 (its
# mem_fraction_static, avail mem before the load and the weights' mem usage), KV size 186.77 GB.
PROFILE_WITHOUT_INDEXER_BEFORE = (0, 5, 4)
PROFILE_AS_ALLOCATED_FROM = (0, 5, 17)


def profile_cell_bytes(layers, precision, tp: int, release) -> int:
    """The cell profile_max_num_token divides the rest memory by in this release (see above); the
    allocated cell (cell_bytes) for every model but a sparse-attention MLA one."""
    if release is None or release.at_least(*PROFILE_AS_ALLOCATED_FROM):
        return cell_bytes(layers, precision, tp)
    total = 0
    for layer in layers:
        if layer.held_range(1) is None:
            continue
        if layer.kind == "mla" and getattr(layer, "indexer_row_bytes", 0):
            total += precision.bytes_for(layer.kv_lora_rank + layer.rope_dim)
            if release.at_least(*PROFILE_WITHOUT_INDEXER_BEFORE):
                total += layer.indexer_row_bytes
        else:
            total += sum(_kv_split(layer, precision, tp))
    return total


def request_bytes(model, precision, tp: int, pp: int, context: int, draft=None, hybrid=None) -> int:
    """What one request of `context` tokens takes in the first stage's pool: the model and the
    context decide it, not the memory (a hybrid's state slots aside)."""
    check_modelled(model, hybrid, pp, draft)
    return _request_bytes(_stage_layers(model, pp)[0], swa_pool_layers(model), precision, tp, context, draft)


def check_modelled(model, hybrid=None, pp: int = 1, draft=None) -> None:
    if any(layer.kind == "state" for layer in model.layers):
        if hybrid is None:
            raise InputError("engine", "SGLang's hybrid Mamba / linear-attention pools are modelled from 0.5.9 "
                                       "(its own rules read in 0.5.9-0.5.23); this release's are not, so engine "
                                       "figures for this model are refused")
        if pp > 1 or draft is not None:
            raise InputError("engine", "SGLang's hybrid Mamba pools under pipeline parallelism or speculative "
                                       "decoding (per-stage state, intermediate draft states) are not modelled yet")
    if any(layer.kind == "chunked" for layer in model.layers):
        raise InputError("engine", "SGLang's pools for chunked local attention are not modelled yet")
    if any(isinstance(layer, IndexedAttention) for layer in model.layers):
        raise InputError("engine", "SGLang's cache for sparse-attention index keys (MiniMax-M3) is not modelled yet")


def allocate(model, precision, tp: int, pp: int, context: int, available_bytes: int, page_size: int = 1,
             draft=None, hybrid=None, profiled=None) -> Pool:
    """The token pool; `draft` (see cell_bytes) when a draft's layers end the model (pp 1);
    `hybrid` (HybridRules) for a model with Mamba / linear-attention layers: their state pool is
    taken from the memory first (mamba_pool) and the rest holds the full-attention tokens.
    `profiled`: the release whose profile_max_num_token divided `available_bytes` (its rest memory)
    by its own cell (profile_cell_bytes); None where `available_bytes` is a pool as allocated (a
    log's K + V), divided by the allocated cell."""
    check_modelled(model, hybrid, pp, draft)
    mamba = None
    if any(layer.kind == "state" for layer in model.layers):
        mamba = mamba_pool(model, tp, available_bytes, hybrid, precision)
        available_bytes = mamba.rest_bytes
    stages = _stage_layers(model, pp)
    tokens = None
    for layers in stages:
        cell = cell_bytes(layers, precision, tp, draft) if profiled is None or draft is not None else \
            profile_cell_bytes(layers, precision, tp, profiled)
        if cell == 0:
            continue
        stage_tokens = max(0, available_bytes) // cell // page_size * page_size
        tokens = stage_tokens if tokens is None else min(tokens, stage_tokens)
    if tokens is None:
        raise InputError("engine", "the model keeps no KV cache, so SGLang allocates no token pool")
    first = stages[0]
    swa_tokens = None
    sliding = swa_pool_layers(model)
    full_tokens = tokens
    if sliding:
        full_n, swa_n = len(model.layers) - len(sliding), len(sliding)
        total = tokens * len(model.layers)
        full_tokens = int(total / (SWA_FULL_TOKENS_RATIO * swa_n + full_n)) // page_size * page_size
        swa_tokens = int(int(total / (SWA_FULL_TOKENS_RATIO * swa_n + full_n)) * SWA_FULL_TOKENS_RATIO) \
            // page_size * page_size
    k_bytes = v_bytes = 0
    # The logged pool is the target's: the draft worker allocates and logs its own.
    for layer in (first if draft is None else first[:len(first) - draft[0]]):
        if layer.held_range(1) is None:
            continue
        k, v = _kv_split(layer, precision, tp)
        rows = (swa_tokens if sliding and layer.kind == "sliding" else full_tokens) + page_size
        k_bytes += rows * k
        v_bytes += rows * v
    per_request = _request_bytes(first, sliding, precision, tp, context, draft)
    concurrency = Fraction(full_tokens, context)
    if swa_tokens is not None:
        window = max(layer.window for layer in sliding)
        concurrency = min(concurrency, Fraction(swa_tokens, min(context, window)))
    if mamba is not None:
        return _with_requests(Pool(full_tokens, swa_tokens, k_bytes, v_bytes, any(layer.kind == "mla" for layer in first),
                                   concurrency, per_request), mamba, hybrid, context)
    return Pool(full_tokens, swa_tokens, k_bytes, v_bytes, any(layer.kind == "mla" for layer in first),
                concurrency, per_request)


# ---- Hybrid (Mamba / linear-attention) pools --------------------------------------------------
# Read from every SGLang wheel 0.5.9-0.5.23 (0.5.9-0.5.15 model_executor/model_runner_kv_cache_mixin.py
# handle_max_mamba_cache, init_memory_pool / _resolve_max_num_reqs; 0.5.16-0.5.23 mem_cache/
# kv_cache_configurator.py _handle_max_mamba_cache, resolve_max_num_reqs, _calculate_mamba_ratio) and
# memory_pool.py MambaPool ("Mamba Cache is allocated"); each "from" below is the first wheel with it:
# - the pool memory beside the weights (total_rest_memory) is split first: the state pool takes
#   rest x r / (1 + r), r = --mamba-full-memory-ratio (0.9; ServerArgs, then schedule.py's fallback),
#   max_mamba_cache_size = int(that // mamba_cache_per_req) slots to 0.5.16; from 0.5.17 the pool's
#   padding slot is counted: int((that - per_req) // per_req), and (slots + 1) x per_req is taken;
# - the full-attention layers' tokens are what is left // their cell;
# - max_running_requests: the given one (per DP rank) or the estimate max(min(int(tokens /
#   context_len x 512), 4096), 2048) (0.5.10 on, a given one no more than that estimate; 0.5.14 on, no
#   more than tokens // 2 instead; the estimate no more than tokens // 2 from 0.5.10), and no more than
#   slots // ratio: ratio 3 state slots a request with the radix cache
#   (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO), 1 with --disable-radix-cache; 0.5.9 caps nothing but
#   the slots;
# - 0.5.13 on, no slot at all or a ceiling of 0 requests is a RuntimeError; 0.5.17 on, a request
#   ceiling the state pool lowered is logged as a warning.
MAMBA_FULL_MEMORY_RATIO = Fraction(9, 10)
MAMBA_SLOTS_PER_REQUEST = 3            # with the radix cache; 1 with --disable-radix-cache
# 0.5.15 on (arg_groups/overrides.py _mamba_radix_cache_resolution): --mamba-radix-cache-strategy auto
# picks extra_buffer, with the overlap schedule on (its default), for the architectures that support it
# (_MAMBA_EXTRA_BUFFER_ARCHS): two ping-pong slots more a request (get_mamba_tracking_slots); no_buffer
# (3 slots) for the others and before 0.5.16. Architectures outside _MAMBA_RADIX_CACHE_ARCHS run without
# the radix cache: one slot a request. (Both lists as of 0.5.23.)
EXTRA_BUFFER_FROM = (0, 5, 15)
EXTRA_BUFFER_SLOTS = 2
MAMBA_RADIX_CACHE_ARCHS = (
    "KimiLinearForCausalLM", "KimiK3ForConditionalGeneration", "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM",
    "BailingMoeV3VLForConditionalGeneration", "Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration", "InternS2MobiusForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM", "Qwen3_5ForCausalLM", "Qwen4ExpForConditionalGeneration",
    "MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration", "NemotronHForCausalLM",
    "NemotronHPuzzleForCausalLM", "NemotronH_Omni_Reasoning_V3", "FalconH1ForCausalLM", "JetNemotronForCausalLM",
    "JetVLMForConditionalGeneration", "Lfm2ForCausalLM", "Lfm2MoeForCausalLM", "ZayaForCausalLM",
    "Glm5NextForConditionalGeneration", "GraniteMoeHybridForCausalLM")
MAMBA_EXTRA_BUFFER_ARCHS = (
    "KimiLinearForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "Qwen3_5MoeForCausalLM", "Qwen3_5ForCausalLM", "Qwen3NextForCausalLM", "Qwen4ExpForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration",
    "MiniCPMV4_7ForConditionalGeneration", "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM",
    "BailingMoeV3VLForConditionalGeneration", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM",
    "Glm5NextForConditionalGeneration", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
    "NemotronH_Omni_Reasoning_V3", "KimiK3ForConditionalGeneration", "InklingForConditionalGeneration")
MAMBA_FIRST = (0, 5, 9)                # the first release whose hybrid pools are read here
PADDING_SLOT_FROM = (0, 5, 17)         # slots = int((budget - per_req) // per_req), + 1 allocated; the warning
TOKENS_HALF_FROM = (0, 5, 10)          # the estimate capped at tokens // 2, a given one at the estimate
GIVEN_HALF_FROM = (0, 5, 14)           # a given --max-running-requests capped at tokens // 2 instead
REFUSES_FROM = (0, 5, 13)              # the RuntimeErrors of a state pool with no slot or no request


@dataclass(frozen=True)
class HybridRules:
    """What SGLang's hybrid pools depend on besides the memory and the model."""
    release: object                    # releases.Release
    state_precision: object            # the conv state's (and the SSM's unless the model names it)
    context_len: int
    requests: int | None               # --max-running-requests per DP rank, None for its default
    slots_per_request: int = MAMBA_SLOTS_PER_REQUEST   # _calculate_mamba_ratio
    full_memory_ratio: Fraction = MAMBA_FULL_MEMORY_RATIO
    given_kv: bool = False             # the memory given is a log's full-attention pool (K + V)


def hybrid_rules(scenario, release, given_kv: bool) -> HybridRules | None:
    """The hybrid pools' rules for these inputs, None for a model without state layers or a
    release before the ones read (check_modelled then refuses it)."""
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    if not any(layer.kind == "state" for layer in model.layers) or not release.at_least(*MAMBA_FIRST):
        return None
    requests = max(1, work.batch // dep.dp) if scenario.settings.batch_given else None
    return HybridRules(release, work.state_precision or work.kv_precision, work.context_tokens, requests,
                       slots_per_request(model.architecture or "", release), given_kv=given_kv)


def slots_per_request(architecture: str, release) -> int:
    """_calculate_mamba_ratio at SGLang's defaults (radix cache on, overlap schedule on)."""
    if not any(name == architecture for name in MAMBA_RADIX_CACHE_ARCHS):
        return 1
    extra = release.at_least(*EXTRA_BUFFER_FROM) and architecture in MAMBA_EXTRA_BUFFER_ARCHS
    return MAMBA_SLOTS_PER_REQUEST + (EXTRA_BUFFER_SLOTS if extra else 0)


@dataclass(frozen=True)
class MambaPool:
    slots: int                         # max_mamba_cache_size
    slot_bytes: int                    # mamba_cache_per_req: every state layer's conv + ssm on the rank
    conv_bytes: int                    # the conv states of (slots + 1) rows, as MambaPool allocates
    ssm_bytes: int
    rest_bytes: int                    # what is left for the full-attention tokens
    total_rest_bytes: int              # the pool memory it was split from (total_rest_memory)
    derived: bool                      # slots derived from a given full pool (one fewer is possible)


def _state_split(layer, precision, tp: int) -> tuple[int, int]:
    """(conv, ssm) bytes of one state layer on a rank."""
    total = layer.state_bytes(precision, tp)
    if not hasattr(layer, "conv_elements"):
        return 0, total
    share = layer.heads // tp if tp <= layer.heads else 1
    conv = precision.bytes_for(layer.conv_elements * share // layer.heads)
    return conv, total - conv


def mamba_pool(model, tp: int, available_bytes: int, rules: HybridRules, kv_precision=None) -> MambaPool:
    """The state pool SGLang takes out of `available_bytes` (its rest memory), and what it leaves.
    Where the memory given is a log's full-attention pool (rules.given_kv), the slots are the ratio's
    share of it: floor(full x r / per_req) slots counted with the padding one, exact or one over."""
    precision = rules.state_precision
    splits = [_state_split(layer, precision, tp) for layer in model.layers if layer.kind == "state"]
    conv = sum(c for c, _ in splits)
    per_req = sum(c + s for c, s in splits)
    padded = rules.release.at_least(*PADDING_SLOT_FROM)
    ratio = rules.full_memory_ratio
    if rules.given_kv:
        # The split kept floor(rest x r / (1 + r) / per_req) slots (to 0.5.16; one fewer after) of a rest
        # that is the full pool plus the slots: two slot counts fit a full pool, the lower is taken.
        counted = int(max(0, available_bytes) * ratio // per_req)
        slots = counted - (2 if padded else 1)
        rest = max(0, available_bytes)
    else:
        budget = Fraction(max(0, available_bytes)) * ratio / (1 + ratio)
        slots = int((budget - per_req) // per_req) if padded else int(budget // per_req)
        rest = available_bytes - (slots + 1 if padded else slots) * per_req
    rows = max(0, slots) + 1
    total = rest + (slots + 1 if padded else slots) * per_req if rules.given_kv else available_bytes
    return MambaPool(slots, per_req, rows * conv, rows * (per_req - conv), rest, total, rules.given_kv)


def _with_requests(pool: Pool, mamba: MambaPool, rules: HybridRules, context: int) -> Pool:
    release, tokens = rules.release, pool.kv_tokens
    estimated = max(min(int(Fraction(tokens, rules.context_len) * 512), 4096), 2048)
    if rules.requests is not None:
        wanted = min(rules.requests, tokens // 2) if release.at_least(*GIVEN_HALF_FROM) else \
            min(rules.requests, estimated) if release.at_least(*TOKENS_HALF_FROM) else rules.requests
    else:
        wanted = min(estimated, tokens // 2) if release.at_least(*TOKENS_HALF_FROM) else estimated
    per_request = rules.slots_per_request
    cap = max(0, mamba.slots) // per_request
    requests = min(wanted, cap)
    lines = [f"Mamba Cache is allocated. max_mamba_cache_size: {mamba.slots}, conv_state size: "
             f"{mamba.conv_bytes / GIB:.2f}GB, ssm_state size: {mamba.ssm_bytes / GIB:.2f}GB "]
    refusal = None
    if mamba.slots <= 0 and release.at_least(*REFUSES_FROM):
        refusal = (f"RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
                   f"Computed max_mamba_cache_size={mamba.slots} (total_rest_memory="
                   f"{mamba.total_rest_bytes / GIB:.2f} GB, mamba_cache_per_req={mamba.slot_bytes / (1 << 20):.2f} MB).")
    elif requests <= 0 and release.at_least(*REFUSES_FROM):
        refusal = (f"RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
                   f"max_mamba_cache_size={mamba.slots}, mamba_ratio={per_request}, resulting max_num_reqs={requests}.")
    elif cap < wanted and release.at_least(*PADDING_SLOT_FROM):
        lines.append(f"max_running_requests is capped to {cap} by the mamba state cache (max_mamba_cache_size="
                     f"{mamba.slots}, {per_request} state slots per request). To raise it: increase "
                     "--mamba-full-memory-ratio or --max-mamba-cache-size, or halve the state size with "
                     "--mamba-ssm-dtype bfloat16.")
    return replace(pool, max_concurrency=min(pool.max_concurrency, Fraction(max(0, requests))),
                   max_running_requests=max(0, requests), request_cap=cap, wanted_requests=wanted,
                   slots_per_request=per_request,
                   mamba=mamba, mamba_lines=tuple(lines), refusal=refusal)


def hybrid_notes(pool: Pool) -> list[str]:
    """The state pool and the request ceiling, in SGLang's terms (nothing for other models)."""
    mamba = pool.mamba
    if mamba is None:
        return []
    share = "derived from the full-attention pool given (SGLang's own split gives this or one slot more)" \
        if mamba.derived else "9/19 of the pool memory (--mamba-full-memory-ratio 0.9: state / full = 0.9)"
    notes = [f"SGLang's state pool: max_mamba_cache_size {mamba.slots:,} slots of {mamba.slot_bytes:,} B (every "
             f"linear-attention layer's conv + SSM state on the rank), {share}; the full-attention layers' "
             f"{pool.kv_tokens:,} tokens take the rest."]
    if pool.refusal is None and pool.request_cap is not None and pool.request_cap < pool.wanted_requests:
        notes.append(f"SGLang caps max_running_requests at {pool.max_running_requests:,}: its {mamba.slots:,} state "
                     f"slots // {pool.slots_per_request} a request ({_slot_words(pool.slots_per_request)}), "
                     f"under the {pool.wanted_requests:,} it would run otherwise, however many tokens are free. To raise "
                     "it: a --mamba-full-memory-ratio above 0.9, --max-mamba-cache-size, or --mamba-ssm-dtype bfloat16 "
                     "(half the SSM state).")
    return notes


def hybrid_refusal_words(pool: Pool) -> str | None:
    """The verdict's words for the state pool's refusal (0.5.16 on)."""
    if pool.refusal is None or pool.mamba is None:
        return None
    mamba = pool.mamba
    return (f"its state pool has {max(0, mamba.slots):,} slots of {mamba.slot_bytes:,} B, room for "
            f"{pool.request_cap or 0:,} requests of {pool.slots_per_request} slots each ({_slot_words(pool.slots_per_request)}), so it "
            f"refuses to serve any: raise --mem-fraction-static or --mamba-full-memory-ratio, or pass --mamba-ssm-dtype "
            "bfloat16 or --disable-radix-cache (1 slot a request)")


def _slot_words(slots: int) -> str:
    if slots == 1:
        return "no radix cache for this architecture: one slot a request"
    if slots == MAMBA_SLOTS_PER_REQUEST:
        return "the radix cache's no_buffer strategy; 1 with --disable-radix-cache"
    return ("the radix cache's extra_buffer strategy, its default for this architecture with the overlap schedule: "
            "3 + 2 ping-pong slots; 3 with --mamba-radix-cache-strategy no_buffer, 1 with --disable-radix-cache")
