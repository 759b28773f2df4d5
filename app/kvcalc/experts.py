"""The weights a step of a mixture-of-experts model reads: the attention and shared weights, and
of the routed experts only those its tokens are expected to touch (issue 23, point 6).

A MoE layer routes each token to k of its E routed experts. Under uniform routing (every token
picks k distinct experts, all choices alike, tokens independent) an expert is missed by one token
with probability 1 - k/E, so a step of B tokens touches on average
    E x (1 - (1 - k/E)^B)
distinct experts per layer: k at B = 1, nearly all E for a large batch. The weights a step reads
per GPU are then
    ceil((W - X x (1 - k/E)^B) / tp)
with W the whole model's weights bytes and X the bytes of every routed expert of every MoE layer
(tensor parallelism splits each expert; expert parallelism is not modelled). Shared experts,
routers, attention, embeddings and dense layers are in W - X: read every step. It is an
expectation, not a bound: real routers are not uniform, and a skewed router touches fewer.

X is the routed experts' share of W as W prices them, from the parameter count by tensor
(params.count_params): the tensors that are routed (each of E copies, k used per token), priced at
the weights' one precision when W is the parameter count at one precision, or as the
quantization_config stores them when W is what that config computes (or a preset checkpoint's own
bytes). A model without the config's tensors at hand takes X from its exact counts instead,
E (total - active) / (E - k) parameters (the routed experts are all that total and active
differ by). Where neither says what X is, every weight is read, and a note says so.

Exact: the expectation is a Fraction while (1 - k/E)^B is small to write out (B log2 E up to
EXACT_BITS bits); past that (a batch of a million is millions of bits) the power is bracketed
in fixed point, between a floor and a ceiling that rounding only ever widens, until both ends
give the same whole byte count, which is then the exact ceiling. Pure: values in, ints and
Fractions out; what is derived once per model stays in its memo.
"""

from dataclasses import dataclass
from fractions import Fraction
import re

from .readers import presets
from .errors import InputError
from .model import ConfigShapes
from .precision import PRECISIONS, precision
from .units import ceil_div

EXACT_BITS = 4096           # (1 - k/E)^B written out as a Fraction up to this many bits
FIXED_POINT_BITS = 128      # the bracket's first precision, doubled until its ends agree
_LAYER = re.compile(r"layers\.(\d+)\.")


@dataclass(frozen=True)
class RoutedExperts:
    """The routed experts of a model, as its weights price them."""
    experts: int            # E: routed experts in each MoE layer
    top_k: int              # k: the experts each token is routed to
    layers: int | None      # MoE layers (None where only the parameter counts give the share)
    routed_bytes: Fraction  # X: every routed expert of every MoE layer, at the weights' prices
    how: str                # where X comes from, in words


def routed_experts(model, weights_bytes: int | None) -> tuple[RoutedExperts | None, str | None]:
    """The routed experts' share of `weights_bytes`, and a note where a model with experts has
    no share that can be known (then every weight counts as read). (None, None) for a dense
    model. Derived once per model and weights size."""
    if weights_bytes is None:
        return None, None
    key = ("routed experts", weights_bytes)
    memo = model.memo
    if key not in memo:
        memo[key] = _routed(model, weights_bytes)
    return memo[key]


def _routed(model, weights: int) -> tuple[RoutedExperts | None, str | None]:
    moe = bool(model.experts) or (model.active_params is not None and model.params is not None
                                   and model.active_params != model.params)
    shapes = _preset_shapes(model)
    why = "the experts per layer and per token are not known"
    if shapes is not None:
        e = shapes.tensors_unread
        if e is not None:
            why = f"its parameters are not counted by tensor ({e.field}: {e.message})"
        elif shapes.tensors:
            return _from_tensors(model, weights, shapes)
        else:
            why = "its parameters are not counted by tensor"
    if model.experts and model.experts_per_token:
        routed, note = _from_counts(model, weights)
        return (routed, None) if routed else (None, note if shapes is None else _unknown(why))
    return None, _unknown(why) if moe else None


def _unknown(why: str) -> str:
    return (f"the routed experts' share of the weights is not known ({why}), so a decode step counts every "
            "weight as read, as if the batch touched every expert; a small batch can run faster than this bound")


def _preset_shapes(model) -> ConfigShapes | None:
    """The config's tensors of the preset this model is (by its repo, with the same layers and
    counts): its own where it was read from a config of the preset's shape (a pasted one, a
    checkpoint of the preset's shape without the preset's quantization), else the preset's."""
    if model.config_weights_typed and model.shapes is not None and model.shapes.tensor_bytes is not None:
        return model.shapes          # priced for a typed weights-dtype (readers/quantized_bytes.with_typed_weights)
    entry = presets.find_model_entry(model.hf_repo) if model.hf_repo else None
    if entry is None:
        return None
    preset = presets.preset_model(entry["id"])
    same = preset is model or (preset.layers == model.layers and all(
        getattr(preset, name) == getattr(model, name) for name in ("params", "active_params", "experts",
                                                                  "experts_per_token", "hidden_size")))
    if not same:
        return None
    return model.shapes if model.shapes is not None else preset.shapes


def _uniform_bits(model, weights: int) -> Fraction | None:
    """The bits per parameter when the weights are the parameter count at one precision (the
    weights' own first, then any on record), else None."""
    params = model.params
    if not params:
        return None
    names = [model.weights_dtype] if model.weights_dtype else []
    for bits in [precision(n).bits_per_element for n in names] + [p.bits_per_element for p in PRECISIONS.values()
                                                                  if not p.packed]:
        if ceil_div(params * bits.numerator, bits.denominator * 8) == weights:
            return bits
    return None


def _from_tensors(model, weights: int, shapes: ConfigShapes) -> tuple[RoutedExperts | None, str | None]:
    routed = [g for g in shapes.tensors if g.active < g.copies]
    if not routed:
        return None, None
    routes = {(g.copies, g.active) for g in routed}
    if len(routes) != 1:
        return None, _unknown("its MoE layers route to different numbers of experts")
    (experts, top_k), = routes
    layers = {m.group(1) for m in (_LAYER.search(g.name) for g in routed) if m}
    pricing, why = _pricing(model, weights, shapes)
    if pricing is None:
        return None, _unknown(why)
    price, how = pricing
    x = price(routed)
    if x > weights:
        return None, _unknown(f"the routed experts' {float(x):,.0f} bytes are more than the weights' {weights:,}")
    return RoutedExperts(experts, top_k, len(layers) or None, x, how.format(what="routed-expert tensors",
                                                                            elements=sum(g.elements for g in routed))), None


def _pricing(model, weights: int, shapes: ConfigShapes):
    """((groups -> their bytes at the weights' prices, how in words), None), or (None, why not):
    the config's quantization_config prices when the weights are its bytes (or the checkpoint's),
    else one precision when the weights are the parameter count at it."""
    quantized = shapes.quantized
    if quantized and weights in (model.config_weights_bytes, model.checkpoint_bytes):
        refused = shapes.quantized_unread
        if refused is not None:
            raise InputError(refused.field, refused.message)
        each = dict(zip(shapes.tensors, shapes.tensor_bytes))
        computed = sum(shapes.tensor_bytes)

        def price(groups) -> Fraction:
            return Fraction(sum(each[g] for g in groups))
        stored = f"weights-dtype {model.config_weights_typed}" if model.config_weights_typed else "its quantization_config"
        how = f"the config's {{what}} as {stored} stores them ({shapes.quantized_rule})"
        if weights != computed:
            how += f"; the rest of the checkpoint's {weights:,} bytes is read every step"
        return (price, how), None
    bits = _uniform_bits(model, weights)
    if bits is None and not quantized and weights == model.checkpoint_bytes and model.weights_dtype:
        bits = precision(model.weights_dtype).bits_per_element
    if bits is None:
        return None, (f"the weights' {weights:,} bytes are not the parameter count at one precision "
                      "nor the config's quantized bytes, so which of them are experts is not known")

    def price(groups) -> Fraction:
        return sum(g.elements for g in groups) * bits / 8
    return (price, f"the {{elements:,}} parameters of the config's {{what}} at {float(bits):g} bits each"), None


@dataclass(frozen=True)
class WeightParts:
    """A model's weights split the way the engines place them over GPUs, in bytes at the weights'
    prices: the routed experts, the attention (and linear-attention) layers, the input embedding,
    and the rest (dense MLPs, shared experts, routers, norms, the output head, and whatever part of
    a checkpoint the config's tensors do not name)."""
    routed: Fraction
    attention: Fraction
    embedding: Fraction
    rest: Fraction
    experts: int | None          # routed experts per MoE layer (None for a dense model)
    expert_width: int | None     # one routed expert's intermediate size, where the config gives it
    top_k: int | None = None     # the experts each token is routed to


def weight_parts(model, weights_bytes: int | None) -> tuple[WeightParts | None, str | None]:
    """The weights split into routed experts, attention, embedding and the rest, from the preset's
    config tensors priced as routed_experts prices them; (None, why) where the config's tensors
    are not at hand or do not price the weights. Derived once per model and weights size."""
    if weights_bytes is None:
        return None, "the weights' size is not known"
    key = ("weight parts", weights_bytes)
    memo = model.memo
    if key not in memo:
        memo[key] = _parts(model, weights_bytes)
    return memo[key]


def _parts(model, weights: int) -> tuple[WeightParts | None, str | None]:
    # The config's tensors the model was read with (a preset's, a pasted config's). Only the split
    # by rank reads them: a dp-1 figure never moves.
    shapes = model.shapes if model.shapes is not None else _preset_shapes(model)
    if shapes is None:
        return None, "the model's tensors by name are known only for a preset's config"
    e = shapes.tensors_unread
    if e is not None:
        return None, f"its parameters are not counted by tensor ({e.field}: {e.message})"
    if not shapes.tensors:
        return None, "its parameters are not counted by tensor"
    pricing, why = _pricing(model, weights, shapes)
    if pricing is None:
        return None, why
    price = pricing[0]
    tensors = shapes.tensors
    routed = [g for g in tensors if g.active < g.copies]
    attention = [g for g in tensors if g.active == g.copies and _ATTENTION.search(g.name)]
    embedding = [g for g in tensors if g.role == "embed"]
    x, a, e = price(routed), price(attention), price(embedding)
    rest = weights - x - a - e
    if rest < 0:
        return None, f"the config's tensors price at more than the weights' {weights:,} bytes"
    routes = {(g.copies, g.active) for g in routed}
    widths = {min(g.rows, g.cols) for g in routed if g.name.endswith(("gate_proj", "up_proj", "down_proj"))}
    experts, top_k = max(routes) if routes else (None, None)
    return WeightParts(x, a, e, rest, experts, widths.pop() if len(widths) == 1 else None,
                       top_k if len(routes) == 1 else None), None


_ATTENTION = re.compile(r"\.(self_attn|linear_attn|attn|attention)\.")


def _from_counts(model, weights: int) -> tuple[RoutedExperts | None, str | None]:
    """The routed experts from the total and active counts alone: total - active = (E - k) x one
    copy of every MoE layer's experts, exact for counted parameters (not for rounded ones)."""
    experts, top_k, total, active = model.experts, model.experts_per_token, model.params, model.active_params
    if not (total and active and total > active and experts > top_k):
        return None, _unknown("the total and active parameter counts are not both known")
    if total % 10 ** 6 == 0 or active % 10 ** 6 == 0 or (total - active) % (experts - top_k):
        return None, _unknown("the parameter counts are rounded, so the experts' part of them is not exact")
    elements = experts * (total - active) // (experts - top_k)
    bits = _uniform_bits(model, weights)
    if bits is None and weights == model.config_weights_bytes:
        return None, _unknown("the weights are the quantization_config's bytes, whose experts' part is kept only "
                              "for a preset's config")
    if bits is None or elements > total:
        return None, _unknown(f"the weights' {weights:,} bytes are not the parameter count at one precision")
    how = (f"{elements:,} parameters, {experts} x (total - active) / ({experts} - {top_k}) from the parameter counts, "
           f"at {float(bits):g} bits each")
    return RoutedExperts(experts, top_k, None, elements * bits / 8, how), None


def weights_read(routed: RoutedExperts | None, weights_bytes: int, tp: int, tokens: int, replicas: int = 1) -> int:
    """Bytes of weights a step of `tokens` tokens reads on each GPU: all of them for a dense model
    (or one whose experts' share is not known), else ceil((W - X (1 - k/E)^B) / tp), the
    routed experts expected to be touched under uniform routing and everything else.

    `replicas` data-parallel ranks of tp GPUs each (parallel.py) hold every weight but the routed
    experts once per rank, and the experts once over all tp x replicas GPUs, which the tokens of
    every rank reach: ceil((W - X) / tp + X (1 - (1 - k/E)^B) / (tp x replicas)), B all ranks' tokens."""
    if routed is None or not routed.routed_bytes:
        return ceil_div(weights_bytes, tp)
    e, k, x = routed.experts, routed.top_k, routed.routed_bytes
    missed, n, d = e - k, x.numerator, x.denominator
    # W d as a whole number of 1/d bytes, the rest taken once per rank: (W - X) r + X over tp r GPUs.
    wd, tp = weights_bytes * replicas * d - n * (replicas - 1), tp * replicas
    if tokens <= 0:                          # no token: no routed expert touched
        return ceil_div(wd - n, d * tp)
    if missed == 0:                          # every expert used by every token
        return ceil_div(wd, d * tp)
    if tokens * e.bit_length() <= EXACT_BITS:
        p, q = missed ** tokens, e ** tokens
        return ceil_div(wd * q - n * p, q * d * tp)
    bits = FIXED_POINT_BITS
    while bits < tokens * e.bit_length():
        low, high = _power_bracket(missed, e, tokens, bits)
        scale = d << bits
        fewest = ceil_div((wd << bits) - n * high, scale * tp)
        most = ceil_div((wd << bits) - n * low, scale * tp)
        if fewest == most:
            return fewest
        bits *= 2
    p, q = missed ** tokens, e ** tokens
    return ceil_div(wd * q - n * p, q * d * tp)


def every_weight(routed: RoutedExperts | None, weights_bytes: int, tp: int, replicas: int = 1) -> int:
    """Each GPU's share of every weight: ceil(W / tp), or with `replicas` data-parallel ranks
    ceil((W - X) / tp + X / (tp x replicas)), the routed experts split over all their GPUs."""
    if routed is None or not routed.routed_bytes or replicas == 1:
        return ceil_div(weights_bytes, tp)
    n, d = routed.routed_bytes.numerator, routed.routed_bytes.denominator
    return ceil_div(weights_bytes * replicas * d - n * (replicas - 1), d * tp * replicas)


def _power_bracket(m: int, e: int, power: int, bits: int) -> tuple[int, int]:
    """(low, high) with low / 2^bits <= (m / e)^power <= high / 2^bits, for 0 < m < e: squaring
    in fixed point, every product floored for the low end and raised for the high end."""
    low, high = (m << bits) // e, ceil_div(m << bits, e)
    out_low = out_high = 1 << bits
    while power:
        if power & 1:
            out_low, out_high = (out_low * low) >> bits, ceil_div(out_high * high, 1 << bits)
        power >>= 1
        if power:
            low, high = (low * low) >> bits, ceil_div(high * high, 1 << bits)
    return out_low, out_high


def expected_experts(experts: int, top_k: int, tokens: int) -> Fraction:
    """E x (1 - (1 - k/E)^B): the distinct routed experts per MoE layer a step of B tokens is
    expected to touch under uniform routing. Exact while (1 - k/E)^B takes at most EXACT_BITS
    bits; past that, below the exact value by less than E / 2^FIXED_POINT_BITS (only a figure to
    show: the bytes are exact in weights_read)."""
    missed = experts - top_k
    if missed <= 0 or tokens <= 0:
        return Fraction(experts if tokens > 0 else 0)
    if tokens * experts.bit_length() <= EXACT_BITS:
        q = experts ** tokens
        return Fraction(experts * (q - missed ** tokens), q)
    _, high = _power_bracket(missed, experts, tokens, FIXED_POINT_BITS)
    return Fraction(experts * ((1 << FIXED_POINT_BITS) - high), 1 << FIXED_POINT_BITS)
