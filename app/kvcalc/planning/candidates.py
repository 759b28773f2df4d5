"""What the plan searches: the GPU counts and, at each count, the layouts, in the order people
deploy them.
- GPU counts: 1, 2, 4 and 8 on a node, then whole nodes of 8, up to plan-max-gpus; a machine
  whose memory the CPU shares (Apple, DGX Spark) is one device.
- Layouts at a count: tensor parallel within the node (the widest the model's heads divide) with
  pipeline stages across the rest; then data-parallel ranks (with the experts placed whole, expert
  parallel, for a mixture of experts); then narrower tensor parallel with more stages (an MLA
  latent is copied on every tensor-parallel GPU, so stages can hold more of it). Never more stages
  than layers. llama.cpp has neither tensor nor data parallelism: it splits the layers over its
  GPUs (tp 1, pp the count). SGLang's data-parallel ranks are DP attention, which it runs for a
  mixture of experts.
"""

from dataclasses import dataclass

from .. import engines
from ..errors import InputError
from ..parallel import is_moe


NODE_GPUS = 8


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int = 1
    dp: int = 1
    ep: bool = False

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def words(self) -> str:
        parts = [f"tp {self.tp}"] + [f"pp {self.pp}"] * (self.pp > 1) + [f"dp {self.dp}"] * (self.dp > 1) + \
            ["ep"] * self.ep
        return ", ".join(parts)


def gpu_counts(max_gpus: int) -> list[int]:
    """1, 2, 4, 8 on a node, then whole nodes of 8."""
    return [n for n in (1, 2, 4) if n <= max_gpus] + list(range(NODE_GPUS, max_gpus + 1, NODE_GPUS))


def gpu_counts_on(gpu, max_gpus: int) -> list[int]:
    """The counts searched on one GPU type: a machine whose memory is shared with its CPU is one
    device (no parallelism across machines), and so is a MIG instance (no peer link; a CUDA process
    enumerates one instance)."""
    return [1] if gpu.unified_memory or gpu.mig_of is not None else gpu_counts(max_gpus)


def layouts(count: int, model, engine: str | None) -> list[Layout]:
    """The layouts of `count` GPUs the plan tries, in the order it prefers them (module docstring),
    each one the engine and the model allow: tp a width the model's heads divide (no wider than a
    node), pp no more stages than layers, data-parallel ranks only where the engine has them
    (llama.cpp has none and no tensor parallelism either: it splits layers over its GPUs; SGLang's
    ranks are DP attention, which it runs for a mixture of experts)."""
    layers = len(model.layers)
    rules = engines.REGISTRY[engine] if engine else None
    if engines.member(rules, "SPLITS_LAYERS"):
        return [Layout(1, count)] if count <= layers else []
    widths = [tp for tp in (8, 4, 2, 1) if tp <= count and count % tp == 0 and _splits(model, tp)]
    moe = is_moe(model)
    data_parallel = engines.data_parallel(rules, moe)
    out = []
    if widths and count // widths[0] <= layers:
        out.append(Layout(widths[0], count // widths[0]))
    if widths and moe and count == widths[0]:
        out.append(Layout(widths[0], ep=True))
    if data_parallel:
        out.extend(Layout(tp, dp=count // tp, ep=moe) for tp in widths if count > tp)
    out.extend(Layout(tp, count // tp) for tp in widths[1:] if count // tp <= layers)
    return list(dict.fromkeys(out))


def _splits(model, tp: int) -> bool:
    try:
        model.check_parallel(tp, 1)
    except InputError:
        return False
    return True


def with_layout(values: dict, layout: Layout) -> dict:
    """The inputs with the layout filled in, as the single view takes them."""
    out = dict(values, gpus=layout.gpus, tp=layout.tp, pp=layout.pp, dp=layout.dp)
    if layout.ep:
        out["ep"] = "on"
    return out
