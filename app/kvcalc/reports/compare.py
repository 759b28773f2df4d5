"""Side tables: the same workload under other attention designs and other KV precisions."""

from dataclasses import dataclass, replace

from .. import engines
from ..errors import InputError
from ..evaluation import Evaluation
from ..experts import weight_parts
from ..layers import FullAttention, MLAAttention, SlidingWindowAttention
from ..inputs.scenario import Scenario
from ..precision import PRECISIONS
from ..sizing import compute

# DeepSeek-V2/V3's latent: kv_lora_rank 512 + qk_rope_head_dim 64 (seed 000, engines.md).
DEEPSEEK_LATENT = (512, 64)
# The KV heads a GQA row has where the model's own attention is MLA (Llama 3's 8 groups).
GQA_GROUPS = 8
TABLE_PRECISIONS = ("fp32", "bf16", "fp8", "int8", "q8_0", "q5_0", "nvfp4", "q4_0", "int4")


@dataclass(frozen=True)
class Row:
    label: str
    detail: str
    evaluation: Evaluation | None   # the row's exact ideal and its engine's answer side by side
    refused: str | None = None      # why this row has no numbers
    current: bool = False
    why: str = ""                   # why it fits what it fits: its bytes on a GPU, split or copied over tp


def _run(scenario: Scenario, model=None, workload=None, label="", detail="", current=False) -> Row:
    # Each row is a full computation, sized by the engine chosen as the headline is, so its
    # requests are the engine's (Evaluation.capacity); a design the deployment cannot split, or the
    # engine cannot store, says why instead.
    variant = replace(scenario, model=model or scenario.model, workload=workload or scenario.workload)
    weights = scenario.deployment.weights_bytes
    if variant.model is not scenario.model and scenario.deployment.dp > 1 and weights is not None:
        # The rows hold the weights fixed (the model's own), so their split by rank is the model's.
        variant.model.memo.setdefault(("weight parts", weights), weight_parts(scenario.model, weights))
    try:
        result = compute(variant.model, variant.workload, scenario.deployment, searches=False)
        engine = engines.answer(variant, result) if scenario.settings.engine else None
    except InputError as e:
        return Row(label, detail, None, e.message, current)
    # No inputs of its own were parsed (values empty): the row is the scenario's variant.
    return Row(label, detail, Evaluation({}, (), variant, result, engine), None, current)


def attention_variants(scenario: Scenario) -> list[Row]:
    """MHA, GQA, MQA and MLA for this model's layer count and head dims, computed, each with why
    it fits what it fits (fits_why)."""
    return [replace(_run(scenario, model, label=label, detail=detail, current=current), why=fits_why(scenario, model))
            for label, model, detail, current in _variants(scenario)]


def fits_why(scenario: Scenario, model) -> str:
    """What one token costs the most loaded GPU under this design, and why: its KV heads split
    over tp, or copied where tp is past them (each GPU keeps max(1, kv_heads // tp)); an MLA
    latent, which no engine splits, whole on every GPU; the layers a window caps. Worked example,
    Llama 3.1 70B at tp 8: GQA's 8 heads are 1 a GPU, MQA's 1 head is copied to all 8, so both
    cost 320 B a token and layer on a GPU in bf16 and fit as many requests; the MLA latent (576
    elements, 1,152 B) sits whole on each GPU and fits fewer."""
    tp, precision = scenario.deployment.tp, scenario.workload.kv_precision
    cached = [layer for layer in model.layers if isinstance(layer, (FullAttention, MLAAttention))]
    if not cached:
        return ""
    first = cached[0]
    try:
        # The busiest pipeline stage's layers, as the figures count the most loaded GPU.
        per_gpu = max(sum(layer.row_bytes(precision, tp) * count for layer, count in stage.items()
                          if isinstance(layer, (FullAttention, MLAAttention)))
                      for stage, _ in model.stage_groups(scenario.deployment.pp))
    except (InputError, ValueError):
        return ""           # a design this precision cannot store, or the layout cannot split: its row says why
    if isinstance(first, MLAAttention):
        how = (f"one latent of {first.kv_lora_rank + first.rope_dim:,} elements a token and layer, no separate K and V"
               + (f"; not split over tp: each of the {tp} GPUs holds it whole" if tp > 1 else ""))
    else:
        heads = first.kv_heads
        named = f"{heads} kv head{'s' if heads != 1 else ''}"
        if tp == 1:
            how = f"{named} a layer, on the one GPU"
        elif heads >= tp:
            how = f"{named} split over tp {tp}: {heads // tp} a GPU"
        else:
            how = f"{named} copied at tp {tp}: each GPU keeps 1, {tp // heads} copies of each"
    windowed = [layer for layer in cached if isinstance(layer, SlidingWindowAttention)]
    if windowed:
        how += f"; {len(windowed)} of its {len(cached)} attention layers keep at most {windowed[0].window:,} tokens"
    return f"{per_gpu:,} B a token on the most loaded GPU ({how})"


def attention_variants_models(scenario: Scenario) -> list[tuple[str, object, bool]]:
    """(label, model, whether it is this model's own design) for each attention design: the
    charts' lines."""
    return [(label, model, current) for label, model, _, current in _variants(scenario)]


def _variants(scenario: Scenario) -> list[tuple]:
    """(label, model, detail, is_current) for each attention design, made once per model."""
    memo = scenario.model.memo
    if "_variants" not in memo:
        memo["_variants"] = _make_variants(scenario.model)
    return memo["_variants"]


def _make_variants(model) -> list[tuple]:
    attn = [layer for layer in model.layers if isinstance(layer, FullAttention)]
    mla = [layer for layer in model.layers if isinstance(layer, MLAAttention)]
    if attn:
        base = attn[0]
        q_heads = model.attention_heads or base.kv_heads
        head_dim, v_dim = base.head_dim, base.v_head_dim
    elif mla and model.attention_heads:
        base = mla[0]
        q_heads, head_dim, v_dim = model.attention_heads, 128 + base.rope_dim, 128
        if model.mla_head_dims:
            head_dim, v_dim = model.mla_head_dims
    else:
        return []

    def swapped(swap):
        # Swap each distinct layer once; models repeat a handful of layers many times.
        table = {layer: swap(layer) for layer in model.layer_counts()}
        return replace(model, layers=tuple(table[layer] for layer in model.layers))

    def with_heads(kv_heads):
        def swap(layer):
            if isinstance(layer, SlidingWindowAttention):
                return replace(layer, kv_heads=kv_heads, head_dim=head_dim, v_head_dim=v_dim)
            if isinstance(layer, (FullAttention, MLAAttention)):
                return FullAttention(kv_heads, head_dim, v_dim)
            return layer
        return swapped(swap)

    def as_mla(rank, rope):
        def swap(layer):
            if isinstance(layer, (FullAttention, MLAAttention)):
                return MLAAttention(rank, rope)
            return layer
        return swapped(swap)

    own_kv = attn[0].kv_heads if attn else None
    rows = [("MHA", with_heads(q_heads), f"{q_heads} kv heads (one per query head)",
             bool(attn) and own_kv == q_heads)]
    if attn and 1 < own_kv < q_heads:
        rows.append(("GQA", model, f"{own_kv} kv heads (this model)", True))
    if not attn and q_heads > GQA_GROUPS and q_heads % GQA_GROUPS == 0:
        # An MLA model's GQA: the KV heads of Llama 3's groups, on its own head dims.
        rows.append(("GQA", with_heads(GQA_GROUPS), f"{GQA_GROUPS} kv heads (Llama 3's groups)", False))
    rows.append(("MQA", with_heads(1), "1 kv head", bool(attn) and own_kv == 1))
    if mla:
        rows.append(("MLA", model, f"latent {mla[0].kv_lora_rank} + rope {mla[0].rope_dim} (this model)", True))
    else:
        rows.append(("MLA", as_mla(*DEEPSEEK_LATENT), "latent 512 + rope 64 (DeepSeek's dims)", False))
    return rows


def precision_rows(scenario: Scenario) -> list[Row]:
    current = scenario.workload.kv_precision.name
    names = list(TABLE_PRECISIONS) + ([current] if current not in TABLE_PRECISIONS else [])
    rows = []
    for name in names:
        p = PRECISIONS[name]
        stored_by = ", ".join(name for name, engine in engines.REGISTRY.items() if engine.stores(p)) or \
            "no engine named"
        detail = f"{p.description}; {stored_by}" if p.packed else f"{float(p.bits_per_element):g} bits; {stored_by}"
        try:
            # Each precision's own kept layers (TurboQuant's boundary layers, a skip list): placed again.
            at = engines.at_kv_precision(scenario, p)
        except InputError as e:
            rows.append(Row(name, detail, None, e.message, name == current))
            continue
        rows.append(_run(scenario, model=at.model, workload=at.workload, label=name, detail=detail,
                         current=name == current))
    return rows


# Headline figures for the side-by-side comparison: (label, key in report.to_json, kind).
COMPARE_METRICS = (
    ("Verdict", "verdict", "text"), ("Model", "model", "text"), ("KV precision", "kv_dtype", "text"), ("GPU", "gpu", "text"),
    ("Sized as", "sized_as", "text"),
    ("GPUs", "gpus", "count"), ("Tensor parallel", "tp", "count"), ("Pipeline parallel", "pp", "count"),
    ("Memory utilization", "memory_utilization", "text"), ("Context", "context", "count"),
    ("Requests", "batch", "count"), ("Shared prefix", "prefix_tokens", "count"),
    ("Block size", "block_size", "text"),
    ("KV per token", "kv_bytes_per_token", "bytes"), ("KV per request", "kv_bytes_per_request", "bytes"),
    ("KV total, one copy", "kv_bytes_total", "bytes"), ("KV per GPU", "kv_bytes_per_gpu", "bytes"),
    ("KV on all GPUs", "kv_bytes_all_gpus", "bytes"), ("Weights", "weights_bytes", "bytes"),
    ("Overhead per GPU", "overhead_bytes_per_gpu", "bytes"), ("Max concurrent requests", "max_concurrency", "count"),
    ("Longest context that fits", "max_context", "count"),
    ("KV equals weights at", "kv_equals_weights_context", "count"),
)


def compare_table(columns: list[dict]) -> list[dict]:
    """Rows of the comparison: each metric's value per configuration (to_json dicts, in order)
    and whether they differ."""
    rows = []
    for label, key, kind in COMPARE_METRICS:
        values = [column.get(key) for column in columns]
        rows.append({"label": label, "key": key, "kind": kind, "values": values,
                     "differs": len({repr(v) for v in values}) > 1})
    return rows
