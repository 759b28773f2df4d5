"""Data-parallel attention and expert parallelism (issue 24, parts 3 and 4): how a deployment's
GPUs split into ranks, which requests each rank's cache holds, and what weights each GPU keeps.

Our convention: `tp` is the tensor-parallel size inside one data-parallel rank (the attention's),
`dp` the number of ranks, GPUs = tp x pp x dp. The tp a user gives is read in the chosen engine's
own words (attention_tp): SGLang's `--tp 8 --dp 8` with DP attention is 8 GPUs, attention tp 1. `batch` is the whole deployment's requests; each
rank serves ceil(batch / dp) of them and its cache holds only its own (an MLA latent is
replicated within the rank's tp group, never across ranks).

Weights per GPU, as each engine places them (read from their sources, 2025-2026 main):
- Exact ideal and vLLM (`--data-parallel-size N`, `vllm/model_executor/layers/fused_moe/config.py`
  FusedMoEParallelConfig.make): every layer but the routed experts is replicated in each DP rank
  and split over its tp GPUs; the routed experts are split over all tp x dp GPUs, by tensor
  parallelism (flatten_tp_across_dp) or, with `--enable-expert-parallel`, whole experts over the
  tp x dp EP group (determine_expert_map gives the first E mod ep ranks one expert more, so the
  busiest GPU holds ceil(E / ep) of them).
- SGLang (`--tp-size tp x dp --dp-size dp --enable-dp-attention`; layers/dp_attention.py
  attn_tp_size = tp_size // dp_size): the attention is split over the rank's attn_tp GPUs and
  replicated across ranks; the input embedding is not split at all (VocabParallelEmbedding
  enable_tp=not is_dp_attention_enabled()); dense MLPs, shared experts and the output head stay
  over the whole tp_size (no moe_dense_tp_size, no enable_dp_lm_head), the routed experts over
  tp_size by tensor parallelism or, with `--ep-size`, whole over the EP group (FusedMoE asserts
  num_experts % ep_size == 0 and intermediate_size % moe_tp_size == 0).
Pure: values in, ints and Fractions out.
"""

from dataclasses import dataclass, replace
from fractions import Fraction

from .errors import InputError
from .experts import RoutedExperts, routed_experts, weight_parts, weights_read as _weights_read
from .units import ceil_div

@dataclass(frozen=True)
class Placement:
    """How an engine places a layout's weights and which layouts it refuses: each engine's
    PLACEMENT (engines/<engine>/__init__.py), EXACT for the exact ideal. The refusals are the
    engine's words, str.format templates filled with the layout's figures."""
    splits_experts: str = "Tensor-parallel experts"   # who splits each expert over tp x dp, in the dp refusal
    no_data_parallel: str | None = None      # its refusal of dp > 1 ({dp}), where it has no ranks
    no_expert_parallel: str | None = None    # its refusal of ep, where it has no expert parallelism
    # Its refusal of an EP group ({group} = {tp} x {dp}) that does not divide the {experts} routed
    # experts ({allowed}: the tp x dp that do), where it places whole experts only.
    whole_experts: str | None = None
    dp_attention: bool = False               # dp > 1 is data-parallel attention (the weights as _sglang places them)


EXACT = Placement()


def attention_tp(values: dict, engine) -> int:
    """Our tp (the attention's, inside one data-parallel rank) from the inputs' tp, read in the
    chosen engine's own words where it has them: `engine` is its module (engines.REGISTRY; None for
    the exact ideal), whose attention_tp, if it has one, reads them (SGLang's --tp-size counts every
    GPU under DP attention); values["tp"] as it is otherwise. InputError naming the field where the
    engine would refuse the layout."""
    tp = values["tp"]
    rule = getattr(engine, "attention_tp", None)
    if rule is None:
        return tp
    attention = rule(tp, values.get("pp", 1), values.get("dp", 1), values.get("gpus"))
    return tp if attention is None else attention


def gpus_given(tp: int, pp: int, dp: int, engine) -> int:
    """The GPUs a layout given as tp, pp and dp names, in the words of `engine` (its module, or
    None): attention_tp."""
    try:
        attention = attention_tp({"tp": tp, "pp": pp, "dp": dp}, engine)
    except InputError:
        attention = tp              # refused where it is sized, with the field named
    return attention * pp * dp


def rank_batch(batch: int, dp: int) -> int:
    """The requests the busiest data-parallel rank serves: ceil(batch / dp)."""
    return ceil_div(batch, dp)


def ranks_serving(batch: int, dp: int) -> int:
    """Ranks that hold at least one request (each keeps its own copy of a shared prefix)."""
    return min(batch, dp)


def is_moe(model) -> bool:
    return bool(model.experts) or (model.active_params is not None and model.params is not None
                                   and model.active_params != model.params)


def expert_group(dep) -> int:
    """The GPUs the routed experts are spread over: tp x dp (the EP group, or tensor parallel flattened
    across DP ranks)."""
    return dep.tp * dep.dp


def check(model, dep, engine: Placement = EXACT) -> None:
    """The refusals the engines make for this layout, as InputError naming the field (`engine`: the
    engine's PLACEMENT)."""
    dp, ep, group = dep.dp, dep.expert_parallel, expert_group(dep)
    if dp > 1 and engine.no_data_parallel:
        raise InputError("dp", engine.no_data_parallel.format(dp=dp))
    if ep and engine.no_expert_parallel:
        raise InputError("ep", engine.no_expert_parallel)
    if ep and not is_moe(model):
        raise InputError("ep", "the model has no routed experts: expert parallelism places a mixture of experts' "
                               "experts; set ep off")
    if not is_moe(model) or (dp == 1 and not ep):
        return
    experts = model.experts or _parts_experts(model, dep)
    if engine.whole_experts and ep and experts and experts % group:
        raise InputError("ep", engine.whole_experts.format(group=group, tp=dep.tp, dp=dp, experts=experts,
                                                           allowed=_divisors(experts)))
    width = model.moe_mlp_size or _parts_width(model, dep)
    if dp > 1 and not ep and width and width % group:
        raise InputError("dp", f"{engine.splits_experts} splits each expert over tp x dp = {group} GPUs without expert parallelism, "
                               f"which must divide the experts' width (moe_intermediate_size {width:,}); turn ep on "
                               f"to place whole experts instead, or use tp x dp of {_divisors(width, group * 4)}")


def _divisors(n: int, limit: int | None = None) -> str:
    found = [d for d in range(1, min(n, limit or n) + 1) if n % d == 0]
    return ", ".join(map(str, found[:12]))


def _parts_experts(model, dep) -> int | None:
    parts, _ = weight_parts(model, dep.weights_bytes)
    return parts.experts if parts else None


def _parts_width(model, dep) -> int | None:
    parts, _ = weight_parts(model, dep.weights_bytes)
    return parts.expert_width if parts else None


def weights_bytes_per_gpu(model, dep, engine: Placement = EXACT) -> int | None:
    """The weights on the busiest GPU as `engine` places them: Deployment.weights_bytes_per_gpu
    (every weight split over tp, evenly over pp stages) unless data or expert parallelism moves
    them, then the split the module docstring gives; plus what the deployment adds on every GPU
    (a draft, LoRA slots). InputError where the split cannot be known."""
    share = _model_share(model, dep, engine)
    return None if share is None else share + dep.added_weights_bytes_per_gpu


def model_share(model, dep, engine: Placement = EXACT) -> int | None:
    """The model's own weights on the busiest GPU (weights_bytes_per_gpu without what the deployment adds)."""
    return _model_share(model, dep, engine)


def _model_share(model, dep, engine: Placement) -> int | None:
    weights = dep.weights_bytes
    if weights is None:
        return None
    if dep.dp == 1 and not dep.expert_parallel:
        return dep.weights_bytes_per_gpu
    if dep.dp > 1 and (engine.dp_attention or (engine is EXACT and dep.dp_attention)):
        return _sglang(model, dep)      # the deployment's own placement: SGLang's DP attention
    x, experts, why = _routed_share(model, weights)
    if x is None:
        if dep.dp == 1 or not is_moe(model):
            return dep.weights_bytes_per_gpu      # every weight replicated per rank, split over its tp
        raise InputError("dp", f"with dp={dep.dp} the routed experts are split over all {expert_group(dep)} GPUs "
                               f"and the rest is copied in every rank, but {_why(why)}: the weights per GPU are not "
                               "known (give a preset whose config lists the experts, or dp 1)")
    if dep.dp == 1 and experts % dep.tp == 0:
        return dep.weights_bytes_per_gpu          # whole experts over tp weigh what tp slices do
    _check_stages(dep)
    per_gpu = (weights - x) / dep.tp + _expert_share(x, experts, dep)
    return ceil_div(per_gpu.numerator, per_gpu.denominator * dep.pp)


def _routed_share(model, weights: int) -> tuple[Fraction | None, int | None, str | None]:
    """(the routed experts' bytes, experts per layer, why not known): from the config's tensors
    (weight_parts, which also reads a config.json given whole), else routed_experts' counts."""
    parts, _ = weight_parts(model, weights)
    if parts is not None and parts.experts:
        return parts.routed, parts.experts, None
    routed, why = routed_experts(model, weights)
    if routed is None:
        return None, None, why
    return routed.routed_bytes, routed.experts, None


def _expert_share(x: Fraction, experts: int, dep) -> Fraction:
    """The routed experts' bytes on the busiest GPU: an even share of tp x dp by tensor parallelism,
    ceil(E / ep) whole experts of E with expert parallelism."""
    group = expert_group(dep)
    if dep.expert_parallel:
        return x * ceil_div(experts, group) / experts
    return x / group


def _sglang(model, dep) -> int:
    parts, why = weight_parts(model, dep.weights_bytes)
    if parts is None:
        raise InputError("dp", "SGLang under DP attention keeps the attention per rank and the embedding whole on "
                               f"every GPU, but this model's weights are not split by tensor ({why}): its weights per "
                               "GPU are not known (a preset with its full config is)")
    _check_stages(dep)
    group = expert_group(dep)
    routed = _expert_share(parts.routed, parts.experts, dep) if parts.experts else Fraction(0)
    per_gpu = parts.attention / dep.tp + parts.embedding + parts.rest / group + routed
    return ceil_div(per_gpu.numerator, per_gpu.denominator * dep.pp)


def _check_stages(dep) -> None:
    if dep.stage_weights_bytes and dep.pp > 1:
        raise InputError("dp", "a checkpoint's weights by pipeline stage are not split into experts and the rest, so "
                               "with data or expert parallelism the weights per GPU are not known; use pp 1 or dp 1")


def _why(why: str | None) -> str:
    text = why or "the routed experts' share of the weights is not known"
    return text.split(" (")[0] if text.startswith("the routed experts' share") else text


def routed_for(model, weights_bytes: int | None, dep) -> tuple[RoutedExperts | None, str | None]:
    """experts.routed_experts, and with data-parallel ranks, where it cannot tell, the experts from
    the config's tensors (weight_parts): every weight counted as read would be more than a GPU holds."""
    routed, note = routed_experts(model, weights_bytes)
    if routed is not None or dep.dp == 1 or weights_bytes is None:
        return routed, note
    parts, _ = weight_parts(model, weights_bytes)
    if parts is None or not parts.experts or not parts.top_k:
        return routed, note
    return RoutedExperts(parts.experts, parts.top_k, None, parts.routed,
                         "the config's routed-expert tensors at the weights' prices"), None


def weights_read(model, weights_bytes: int, dep, tokens: int) -> int:
    """Weights a step of `tokens` tokens (all ranks' together: they meet in the MoE layers) reads on
    each GPU: the rank's copy of everything but the routed experts, and of the experts, split over
    all tp x dp GPUs, those the tokens are expected to touch (experts.weights_read)."""
    routed = routed_for(model, weights_bytes, dep)[0]
    if dep.dp > 1 and dep.dp_attention:
        # SGLang's DP attention: each GPU reads what it holds (_sglang), its routed experts' share
        # only as far as the tokens touch them.
        placed = _model_share(model, dep, EXACT)
        if placed is not None:
            if routed is None or not routed.routed_bytes:
                return placed
            share = _expert_share(Fraction(routed.routed_bytes), routed.experts, dep) / dep.pp
            return _weights_read(replace(routed, routed_bytes=share), placed, 1, tokens)
    return _weights_read(routed, weights_bytes, dep.tp, tokens, dep.dp)


def summary_words(dep) -> str:
    """The layout as the summary line says it: "tp 8, pp 1, dp 8", or in SGLang's words under DP
    attention, "tp 8 (attention tp 1), pp 1, dp attention 8" (--tp-size counts every GPU of a stage)."""
    if dep.dp == 1:
        return f"tp {dep.tp}, pp {dep.pp}"
    ep = ", ep" if dep.expert_parallel else ""
    if dep.dp_attention:
        return f"tp {dep.tp * dep.dp} (attention tp {dep.tp}), pp {dep.pp}, dp attention {dep.dp}{ep}"
    return f"tp {dep.tp}, pp {dep.pp}, dp {dep.dp}{ep}"


def layout_words(dep, engine: Placement = EXACT) -> str:
    """The layout in words: "8 GPUs: dp 8 ranks of tp 1", with expert parallelism named."""
    words = f"{dep.gpus} GPUs: {dep.dp} data-parallel ranks of tp {dep.tp}" + (f" x pp {dep.pp}" if dep.pp > 1 else "")
    if dep.dp_attention:
        words += (f" for the attention alone, everything else tensor-parallel over all {dep.tp * dep.dp} GPUs "
                  f"of a stage (--tp-size {dep.tp * dep.dp} --dp-size {dep.dp} --enable-dp-attention)")
    if dep.expert_parallel:
        words += f", experts whole over the {expert_group(dep)} GPUs (expert parallel)"
    return words
