"""A what-if from a measured deployment: the KV memory a pasted log printed, moved only by what
the edit changes.

The log measured, on one deployment, the memory the engine had to use (total x utilization),
the weights on the busiest GPU, what it subtracted besides them (activation peak, non-torch
memory, CUDA graphs) and the KV memory left. For the inputs on screen, each of those is the
log's figure moved by as much as the engine's own estimate moves between the two deployments:

    KV = usable_now - (weights_log + weights_now - weights_then)
                    - (overhead_log + overhead_now - overhead_then)

where overhead_log = usable_then - weights_log - KV_log. An edit that moves none of them (the
KV dtype, the context, the requests) keeps the log's KV memory exactly; one that does (tp, the
chunk, the GPU) is re-estimated, and says which parts and by how much, with the moves as its band.
"""

from ..errors import InputError
from ..sizing import compute
from ..units import GIB
from .llamacpp import engine as llamacpp
from .sglang import engine as sglang
from .vllm import engine as vllm
from .result import Budget, BudgetSource

TITLES = {module.NAME: module.TITLE for module in (vllm, sglang, llamacpp)}


def _gib(n: int) -> str:
    return f"{n / GIB:.2f}"


def budget(engine, scenario, result, chunk: int, notes: list) -> Budget | None:
    """The budget from the log's measurements, or None when the log measured another engine or
    measured nothing to size with (then the engine's own estimate applies, as without a log)."""
    measured = scenario.settings.measured
    if measured is None:
        return None
    if measured.engine != engine.NAME:
        notes.append(f"The log measured {_title(measured.engine)}; {engine.TITLE} sizes its own memory here, "
                     "so the log's KV memory and overhead are not used.")
        return None
    then = measured.scenario
    then_result = compute(then.model, then.workload, then.deployment, searches=False)   # its weights and memory
    then_chunk = then.settings.prefill_chunk or engine.default_chunk(then)
    usable_now, usable_then = _usable(engine, scenario, chunk, result), _usable(engine, then, then_chunk, then_result)
    weights_now, weights_then = result.weights_bytes_per_gpu, then_result.weights_bytes_per_gpu
    # A checkpoint whose weights no preset gives (a quantized GGUF of a preset's shape): the log's
    # weights per GPU are its weights, while the model and its split are the log's.
    logged_weights = weights_now is None and weights_then is None and measured.weights_bytes is not None and \
        _same_weights(scenario, then)
    if logged_weights:
        weights_now = weights_then = measured.weights_bytes
        # compute() leaves the usable memory out without the weights: the engine's, from the card.
        usable_now = _usable(engine, scenario, chunk, result, from_card=True)
        usable_then = _usable(engine, then, then_chunk, then_result, from_card=True)
    over_now, act_now, band_now = _overhead(engine, scenario, chunk)
    over_then, act_then, _ = _overhead(engine, then, then_chunk)
    moves = [(what, now - before) for what, now, before in (
        ("the memory it may use", usable_now, usable_then), ("the weights per GPU", weights_now, weights_then),
        ("the overhead", over_now, over_then)) if now is not None and before is not None and now != before]
    if not moves and measured.kv_bytes is not None:
        notes.append(f"The KV memory is the log's {_gib(measured.kv_bytes)} GiB: nothing changed here moves it "
                     "(the KV dtype, the context and the requests share the memory the log measured).")
        return Budget(measured.kv_bytes, measured.activation_bytes,
                      _logged_overhead(measured, usable_then, weights_then), BudgetSource.GIVEN_KV_MEMORY)
    if usable_now is None or weights_now is None or weights_then is None or usable_then is None:
        notes.append("The log's KV memory does not hold for these inputs, and without the GPU's memory and the "
                     "weights it cannot be re-estimated: choose the GPU and the model.")
        return Budget(None, act_now, over_now, BudgetSource.NONE, band_now)
    weights_log = measured.weights_bytes if measured.weights_bytes is not None else weights_then
    overhead_log = _logged_overhead(measured, usable_then, weights_then)
    if overhead_log is None:
        if over_then is None:
            return None         # nothing measured to move: the engine's own estimate, as without a log
        overhead_log = over_then
    weights = weights_log + (weights_now - weights_then)
    overhead = max(0, overhead_log + ((over_now or 0) - (over_then or 0)))
    activation = None
    if act_now is not None:
        activation = max(0, (measured.activation_bytes if measured.activation_bytes is not None else act_then or 0)
                         + act_now - (act_then or 0))
    # The weights split by the layout as the checkpoint's tensors do: exact. The overhead's move is
    # the estimate's, which may be off by as much as it moved.
    spread = sum(abs(move) for what, move in moves if what == "the overhead")
    if logged_weights and not moves:
        notes.append(f"The weights are the log's {_gib(weights)} GiB per GPU (the checkpoint's own, not the "
                     f"preset's), and the engine's estimated overhead beside them: "
                     f"{_gib(usable_now - weights - overhead)} GiB are left for its KV cache and buffers.")
        return Budget(usable_now - weights - overhead, activation, overhead, BudgetSource.MEASURED, band_now,
                      weights_bytes_per_gpu=weights)
    said = "; ".join(f"{what} {'+' if move > 0 else '-'}{_gib(abs(move))} GiB" for what, move in moves)
    notes.append(f"Re-estimated from the log: your edit moves {said} (the engine's estimate at your inputs less at "
                 f"the log's), so the KV memory is {_gib(usable_now - weights - overhead)} GiB, not the log's "
                 f"{_gib(measured.kv_bytes) + ' GiB' if measured.kv_bytes is not None else 'figure'}; the band "
                 f"allows each move to be off by its whole size.")
    return Budget(usable_now - weights - overhead, activation, overhead, BudgetSource.MEASURED,
                  (max(0, overhead - spread), overhead + spread), weights_bytes_per_gpu=weights)


def _same_weights(now, then) -> bool:
    """Whether the weights on the busiest GPU are those the log measured: the same model, split
    the same way, with the same weights beside it."""
    a, b = now.deployment, then.deployment
    return now.model == then.model and (a.tp, a.pp, a.dp, a.added_weights_bytes_per_gpu) == \
        (b.tp, b.pp, b.dp, b.added_weights_bytes_per_gpu)


def _usable(engine, scenario, chunk: int, result, from_card: bool = False) -> int | None:
    total = result.usable_bytes_per_gpu
    dep = scenario.deployment
    if total is None and from_card and dep.gpu_memory_bytes is not None:
        total = int(dep.gpu_memory_bytes * dep.memory_utilization)
    if total is None:
        return None
    try:
        return engine.usable_memory(scenario, chunk, [], total)
    except InputError:
        return None


def _overhead(engine, scenario, chunk: int):
    """(the overhead the engine subtracts besides the weights, its activation part, its band)."""
    if scenario.settings.overhead_given:
        return scenario.deployment.overhead_bytes, None, None
    try:
        activation, overhead, band = engine.estimate_overhead(scenario, chunk, [])
    except InputError:
        return None, None, None
    return overhead, activation, band


def _logged_overhead(measured, usable_then: int | None, weights_then: int | None) -> int | None:
    """What the log implies was subtracted besides the weights: the memory it could use less the
    weights (the log's, else ours for its deployment) and the KV memory it printed; the parts it
    printed where it printed no KV memory. None: it measured neither."""
    weights = measured.weights_bytes if measured.weights_bytes is not None else weights_then
    if usable_then is not None and measured.kv_bytes is not None and weights is not None:
        return max(0, usable_then - weights - measured.kv_bytes)
    return measured.parts_bytes


def _title(name: str | None) -> str:
    return TITLES.get(name, "no engine")
