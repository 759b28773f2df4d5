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

from dataclasses import dataclass
from fractions import Fraction

from ...errors import InputError
from ...layers import IndexedAttention

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


def request_bytes(model, precision, tp: int, pp: int, context: int, draft=None) -> int:
    """What one request of `context` tokens takes in the first stage's pool: the model and the
    context decide it, not the memory."""
    check_modelled(model)
    return _request_bytes(_stage_layers(model, pp)[0], swa_pool_layers(model), precision, tp, context, draft)


def check_modelled(model) -> None:
    if any(layer.kind == "state" for layer in model.layers):
        raise InputError("engine", "SGLang's hybrid Mamba / linear-attention pools are not modelled yet, so "
                                   "engine figures for this model are refused")
    if any(layer.kind == "chunked" for layer in model.layers):
        raise InputError("engine", "SGLang's pools for chunked local attention are not modelled yet")
    if any(isinstance(layer, IndexedAttention) for layer in model.layers):
        raise InputError("engine", "SGLang's cache for sparse-attention index keys (MiniMax-M3) is not modelled yet")


def allocate(model, precision, tp: int, pp: int, context: int, available_bytes: int, page_size: int = 1,
             draft=None) -> Pool:
    """The token pool; `draft` (see cell_bytes) when a draft's layers end the model (pp 1)."""
    check_modelled(model)
    stages = _stage_layers(model, pp)
    tokens = None
    for layers in stages:
        cell = cell_bytes(layers, precision, tp, draft)
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
    return Pool(full_tokens, swa_tokens, k_bytes, v_bytes, any(layer.kind == "mla" for layer in first),
                concurrency, per_request)
