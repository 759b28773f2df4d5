"""Two lower bounds skip what cannot fit, without the engine's rules. Every layout stores each
weight at least once and each request's cache at least once, and every engine only adds (blocks,
pages, padding, a prefix copied per rank, its overhead): so a count whose GPUs' memory together is
less than the exact ideal's weights plus every request's KV cache is skipped (need_bytes), and a
layout whose busiest GPU, as the exact ideal fills it, needs more than the GPU's room is screened
out (screen_bytes, room_bytes). Neither depends on anything but bytes the engines are known to hold
at least; tests/planning/test_plan.py checks both against full evaluations over every preset.
The keys these are kept under in the ask's memo (memo_key, room_key_of) are here too.
"""

from .. import engines
from .. import parallel
from ..errors import InputError
from ..evaluation import Evaluation, begin
from .ask import Ask


def memo_key(values: dict) -> tuple:
    """The inputs but the GPU, as a key: what the model, its layouts and the screen depend on."""
    return tuple(sorted((k, str(v)) for k, v in values.items() if k != "gpu"))


def need_bytes(ask: Ask, values: dict) -> int | None:
    """Bytes all a deployment's GPUs together can do with no less of: the weights and every
    request's KV cache as the exact ideal sizes them (one logical copy, no overhead). Every
    layout stores each weight at least once (tensor parallelism splits or copies, data-parallel
    ranks copy, SGLang's DP attention copies its embedding) and each request's cache at least
    once, and every engine only adds (blocks, pages, padding, a prefix copied per rank, its
    overhead), so a count whose GPUs' whole memory is less cannot fit. None where it cannot be
    said: weights unknown, or llama.cpp keeping layers or experts in CPU memory."""
    if any(name in values for name in ("n-gpu-layers", "n-cpu-moe")):
        return None
    key = ("need", memo_key(values))
    if key not in ask.memo:
        begun = begin(dict(values, batch=1) if ask.rate else values, searches=False)
        result = begun.result
        ask.memo[key] = None if not begun.ok or result.weights_bytes is None else \
            result.weights_bytes + result.kv_bytes_total
    return ask.memo[key]


def gpu_memory(gpu) -> int:
    """A GPU's memory as the most generous sizing counts it (nvidia-smi's or PyTorch's total)."""
    return max(gpu.memory_bytes, gpu.torch_memory_bytes or 0)


def screen_bytes(begun: Evaluation, engine: str | None) -> int | None:
    """The exact ideal's weights and KV cache on the deployment's busiest GPU, no overhead: every
    engine holds at least those bytes there (the same weights per GPU; blocks, pages and pools
    only add), so a GPU with less memory cannot fit it. None where that does not hold or is not
    known (unknown weights). SGLang's DP attention places less than the ideal on a GPU (the
    embedding whole, dense layers over all tp x dp GPUs): its ranks count the weights as it places
    them. The figure depends on the layout and the workload, not on the GPU."""
    if not begun.ok:
        return None
    result, dep = begun.result, begun.scenario.deployment
    weights = result.weights_bytes_per_gpu
    if weights is not None and dep.dp_attention:
        try:
            # The deployment carries the engine's DP attention (its DP_ATTENTION, dp > 1): the
            # weights as those ranks place them.
            weights = parallel.weights_bytes_per_gpu(begun.scenario.model, dep)
        except InputError:
            return None
    return None if weights is None else weights + result.kv_bytes_per_gpu


def room_bytes(begun: Evaluation) -> int | None:
    """The most memory a GPU of this deployment has for its weights and cache as the chosen rules
    size it: the exact ideal's memory x utilization, or the engine's usable memory (usable_memory,
    before it takes its overhead). Every engine's KV memory is that less the weights and an
    overhead of no less than nothing. None where it cannot be said."""
    result, scenario = begun.result, begun.scenario
    if result.usable_bytes_per_gpu is None:
        return None
    name = scenario.settings.engine
    if not name:
        return result.usable_bytes_per_gpu
    try:
        module = engines.REGISTRY[engines.engine_name(name)]
        chunk = scenario.settings.prefill_chunk or engines.default_prefill_chunk(module.NAME, scenario)
        return module.usable_memory(scenario, chunk, [], result.usable_bytes_per_gpu)
    except InputError:
        return None


_LAYOUT_KEYS = ("gpus", "tp", "pp", "dp", "ep", "batch")


def room_key_of(values: dict) -> tuple:
    """The key a GPU type's room is kept under: the GPU and the inputs but the layout's."""
    return ("room", values["gpu"], memo_key({k: v for k, v in values.items() if k not in _LAYOUT_KEYS}))
