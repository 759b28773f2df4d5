"""The weights' bytes a config.json's quantization_config gives them, computed from the shapes the
parameter count (readers/params) keeps: each group of same-shaped tensors priced as the format
stores it (fp8, mxfp4, ModelOpt NVFP4, AWQ, GPTQ, compressed-tensors pack-quantized), what the
format leaves out (its skip list, embeddings, head, norms, routers) in the checkpoint's 16-bit
dtype; any other method or setting refused with the reason."""

from dataclasses import dataclass, replace
from fractions import Fraction
import fnmatch
import re
from functools import lru_cache

from .config_fields import show
from ..errors import InputError
from ..units import ceil_div
from .params import MAX_WIDTH, ParamCount, count_params

# Roles a quantization rule may store in fewer bits: nn.Linear weights of the decoder layers
# ("linear") and of the routed experts ("expert"). The rest ("embed", "head", "router",
# "vector": norms, biases, convolutions, gates' scalars, and "vision": the tower the quantizers
# of these formats leave out) stays in the checkpoint's 16-bit dtype.
QUANTIZABLE = ("linear", "expert")


@dataclass(frozen=True)
class QuantizedWeights:
    bytes: int           # every tensor of the language model, as the rule stores it
    rule: str            # the rule, in words (what is quantized, what stays 16-bit)
    routed_bytes: int = 0   # the part of `bytes` in routed experts (tensors used by top-k of their copies)
    group_bytes: tuple[int, ...] = ()   # each of the count's tensors groups, in its order: `bytes` is their sum


def has_quantization(cfg: dict) -> bool:
    inner = cfg.get("text_config")
    return cfg.get("quantization_config") is not None or (
        isinstance(inner, dict) and inner.get("quantization_config") is not None)


def _quant_config(cfg: dict) -> dict | None:
    quant = cfg.get("quantization_config")
    inner = cfg.get("text_config")
    if quant is None and isinstance(inner, dict):
        quant = inner.get("quantization_config")
    if quant is not None and not isinstance(quant, dict):
        raise InputError("quantization_config", f"expected an object, got {show(quant)}")
    return quant


def _skip_list(quant: dict, *keys) -> tuple:
    names = []
    for key in keys:
        value = quant.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError(f"quantization_config.{key}", f"expected a list of module names, got {show(value)}")
        names.extend(value)
    return tuple(names)


@lru_cache(maxsize=64)
def _skip_pattern(skip: tuple):
    """A skip list as (dotted names, one regular expression of its globs). A glob (ModelOpt's
    exclude_modules, gpt-oss's modules_to_not_convert) matches the whole name or a whole-segment
    suffix, prefix or middle of it; a dotted name ("lm_head", "mlp.gate", "model.layers.0")
    matches as whole segments anywhere in it. Built once per list: real lists name hundreds of
    modules, so the dotted ones are looked up, not scanned."""
    globs, names = [], set()
    skip = tuple(glob for entry in skip for glob in (_regex_globs(entry[3:]) if entry.startswith("re:") else (entry,)))
    for entry in skip:
        if "*" in entry or "?" in entry or "[" in entry:
            # fnmatch.translate gives (?s:...)\Z (3.11) or (?s:...)\z (3.14): keep the inside
            inner = re.fullmatch(r"\(\?s:(.*)\)\\[zZ]", fnmatch.translate(entry), re.S)
            glob = inner.group(1) if inner else _glob_regex(entry)
            globs.append(rf"(?:.*\.)?(?:{glob})(?:\..*)?")
        elif entry.strip("."):
            names.add(entry.strip("."))
    pattern = re.compile("|".join(f"(?:{g})" for g in globs), re.S) if globs else None
    return frozenset(names), pattern


# compressed-tensors' "re:" entries (re.match on a module's name) in the forms real configs
# write them: literal name characters, an escaped dot, .*, a bare dot, one group of literal
# alternatives and a final $. Anything else is refused rather than run: a config's regular
# expression could backtrack without end.
_RE_PART = re.compile(r"\\\.|\.\*|\(([A-Za-z0-9_]+(?:\|[A-Za-z0-9_]+)*)\)|[A-Za-z0-9_-]+|\.|\$\Z")
MAX_ALTERNATIVES = 64


def _regex_globs(pattern: str) -> tuple:
    """A "re:" entry as the globs that match the same names (alternatives expanded)."""
    globs, at, end = [""], 0, False
    while at < len(pattern):
        m = _RE_PART.match(pattern, at)
        alternatives = m.group(1).split("|") if m and m.group(1) else ()
        if m is None or len(globs) * max(1, len(alternatives)) > MAX_ALTERNATIVES:
            raise InputError("quantization_config.ignore", f"{show('re:' + pattern)}: only literal names, \\., "
                             f".*, up to {MAX_ALTERNATIVES} literal alternatives (a|b) and a final $ are read in a "
                             "regular expression here")
        part, at = m.group(0), m.end()
        if alternatives:
            globs = [g + alt for g in globs for alt in alternatives]
            continue
        end = part == "$"
        piece = {"\\.": ".", ".*": "*", ".": "?", "$": ""}.get(part, part)
        globs = [g + piece for g in globs]
    return tuple(g if end else g + "*" for g in globs)     # re.match: open at the end unless $


def _glob_regex(glob: str) -> str:
    """* and ? as fnmatch reads them, the rest literal (a [set] kept as written)."""
    return "".join(".*" if c == "*" else "." if c == "?" else c if c in "[]!" else re.escape(c) for c in glob)


def _skipped(name: str, skip: tuple) -> bool:
    """Whether a module is left unquantized by a skip list entry (_skip_pattern)."""
    names, pattern = _skip_pattern(skip)
    if names:
        segments = name.split(".")
        if any(".".join(segments[a:b]) in names for a in range(len(segments))
               for b in range(a + 1, len(segments) + 1)):
            return True
    return bool(pattern and pattern.fullmatch(name))


def _int_of(quant: dict, key: str, allowed: tuple):
    value = quant.get(key)
    if isinstance(value, bool) or value not in allowed:
        raise InputError(f"quantization_config.{key}", f"{show(value)} is not one this calculator prices "
                                                       f"exactly (only {', '.join(map(str, allowed))})")
    return value


def quantized_weights(cfg: dict, counted: ParamCount | None = None) -> QuantizedWeights:
    """The bytes of the weights a config's quantization_config stores, computed from its shapes.

    Exact where the checkpoint format fixes every tensor's bytes from its shape; any other
    method, or a setting outside those formats, is refused (InputError) with the reason.
    Sources: vLLM `fp8.py` (Fp8LinearMethod: an e4m3 weight plus weight_scale_inv, one float32
    per weight_block_size block, ceil-divided) and DeepSeek-V3's checkpoint layout; transformers
    `integrations/mxfp4.py` and the gpt-oss checkpoints (expert weights as *_blocks, two 4-bit
    values a byte, and *_scales, one uint8 exponent per 32); NVIDIA ModelOpt NVFP4 (packed 4-bit
    weight, an fp8 weight_scale per 16, float32 weight_scale_2 and input_scale per linear);
    AutoAWQ's GEMM layout (qweight and qzeros packed in int32, fp16 scales per group) and
    AutoGPTQ's (qweight, qzeros, fp16 scales, int32 g_idx)."""
    quant = _quant_config(cfg)
    if quant is None:
        raise InputError("quantization_config", "the checkpoint is not quantized")
    counted = counted or count_params(cfg)
    if not counted.tensors:
        raise InputError("quantization_config", "this family's parameters are not broken down by module, so "
                                                "which of them are quantized is not known")
    method = str(quant.get("quant_method", "")).lower()
    rule = _RULES.get(method)
    if method == "modelopt" and str(quant.get("quant_algo", "")).upper() != "NVFP4":
        rule = None
    if rule is None:
        raise InputError("quantization_config.quant_method", f"{show(quant.get('quant_method'))} is not a method "
                         "whose bytes this calculator computes (fp8, mxfp4, ModelOpt NVFP4, AWQ, GPTQ, "
                         "compressed-tensors pack-quantized)")
    price, words, skip = rule(quant)
    total = routed = 0
    each = []
    for g in counted.tensors:
        if g.role in QUANTIZABLE and not _skipped(g.name, skip):
            cost = price(g.rows, g.cols, g.role)
            if cost is None:
                raise InputError("quantization_config", f"{g.name} ({g.rows:,} x {g.cols:,}) does not divide into "
                                                        f"the format's groups: {words}")
            cost *= g.copies
        else:
            cost = g.elements * (4 if g.fp32 else 2)
        total += cost
        each.append(cost)
        if g.active < g.copies:
            routed += cost
    return QuantizedWeights(total, words, routed, tuple(each))


def _fp8(quant: dict):
    skip = _skip_list(quant, "modules_to_not_convert", "ignored_layers")
    block = quant.get("weight_block_size")
    if block is None:
        # per-tensor fp8: one float32 weight_scale per linear, and an input_scale when static
        static = str(quant.get("activation_scheme", "dynamic")).lower() == "static"
        extra = 8 if static else 4
        return (lambda rows, cols, role: rows * cols + extra), \
            "fp8 weights with a float32 scale per tensor; embeddings, head, norms and routers 16-bit", skip
    if not (isinstance(block, list) and len(block) == 2 and all(
            isinstance(b, int) and not isinstance(b, bool) and 1 <= b <= MAX_WIDTH for b in block)):
        raise InputError("quantization_config.weight_block_size", f"expected two block sides, got {show(block)}")
    bn, bk = block
    return (lambda rows, cols, role: rows * cols + 4 * ceil_div(rows, bn) * ceil_div(cols, bk)), \
        (f"fp8 linear weights plus one float32 scale per {bn} x {bk} block; embeddings, head, norms and "
         "routers 16-bit"), skip


MXFP4_RULE = "mxfp4 experts (4 bits plus a uint8 scale per 32, 4.25 bits); the rest 16-bit"


def _mxfp4(quant: dict):
    skip = _skip_list(quant, "modules_to_not_convert")

    def price(rows, cols, role):
        if role != "expert":
            return rows * cols * 2           # only the experts are stored in mxfp4 (transformers Mxfp4)
        return None if cols % 32 else rows * cols // 2 + rows * cols // 32
    return price, MXFP4_RULE, skip


def _round_up(n: int, multiple: int) -> int:
    return ceil_div(n, multiple) * multiple


def mxfp4_padding_bytes(model, hidden_multiple: int, intermediate_multiple: int, tp: int = 1,
                        expert_ranks: int = 1, stages: int = 1) -> int | None:
    """The bytes one GPU holds beyond the checkpoint's mxfp4 experts when a kernel pads them:
    vLLM's Mxfp4MoEMethod.create_weights (vllm/model_executor/layers/quantization/mxfp4.py,
    v0.10.1) sizes w13 (experts, 2 x I', H' / 2), w2 (experts, H', I' / 2), their uint8 scales
    (one per 32 of the last dimension) and 16-bit biases with H' the hidden size rounded up to
    `hidden_multiple` and I' each rank's expert width rounded up to `intermediate_multiple`
    (Marlin: 256 and 128, "n % 256 == 0 and k % 128 == 0"), and keeps those shapes after
    prepare_moe_fp4_layer_for_marlin repacks them (marlin_utils_fp4.py: scales back to one byte
    each). gpt-oss-120b: H = I = 2,880 -> H' = 3,072, I' = 2,944, 152,993,792 B a layer more.
    `tp` splits the width, `expert_ranks` the experts (expert parallelism), `stages` the layers.
    None where the model is not an mxfp4 checkpoint read by tensor (nothing to pad)."""
    shapes = model.shapes
    hidden = model.hidden_size
    if shapes is None or shapes.quantized_rule != MXFP4_RULE or not hidden:
        return None
    routed = [g for g in shapes.tensors if g.active < g.copies]
    down = [g for g in routed if g.role == "expert" and g.rows == hidden and g.cols != hidden]
    width = down[0].cols if down else hidden            # the expert's intermediate size (I)
    layers = {g.name.rsplit(".mlp.", 1)[0] for g in routed if g.role == "expert"}
    if not layers or width % tp:
        return None
    each = _round_up(width // tp, intermediate_multiple)

    def inner(n: int) -> tuple[int, int]:
        """An expert-width dimension (I, or 2 x I fused) as one rank holds it: (stored, padded)."""
        if n % width:
            raise InputError("quantization_config", f"an mxfp4 expert dimension of {n:,} is not a multiple of "
                                                    f"the expert width {width:,}")
        return n // width * (width // tp), n // width * each
    outer = (hidden, _round_up(hidden, hidden_multiple))
    extra = 0
    for g in routed:
        experts = ceil_div(g.copies, expert_ranks)
        # A tensor writing the hidden size (down_proj, w2, and its bias) reads the expert width;
        # the others (gate_up_proj, w13) write the expert width and read the hidden size. Told
        # apart by the rows, as gpt-oss's expert width equals its hidden size.
        if g.rows == hidden:
            (rows, rows_padded), (cols, cols_padded) = outer, inner(g.cols) if g.cols > 1 else (1, 1)
        else:
            (rows, rows_padded), (cols, cols_padded) = inner(g.rows), outer if g.cols > 1 else (1, 1)
        if g.role == "expert":
            before = rows * cols // 2 + rows * cols // 32
            after = rows_padded * cols_padded // 2 + rows_padded * cols_padded // 32
        else:                                          # the experts' biases, 16-bit
            before, after = 2 * rows * cols, 2 * rows_padded * cols_padded
        extra += (after - before) * experts
    return extra * ceil_div(len(layers), stages) // len(layers)


def _nvfp4(quant: dict):
    skip = _skip_list(quant, "exclude_modules", "ignore", "modules_to_not_convert")
    group = _int_of(quant, "group_size", (16,)) if "group_size" in quant else 16
    return (lambda rows, cols, role: None if cols % group else rows * cols // 2 + rows * cols // group + 8), \
        ("nvfp4 linear weights (4 bits plus an fp8 scale per 16 and two float32 scales per tensor); "
         "embeddings, head, norms and routers 16-bit"), skip


def _awq(quant: dict):
    bits = _int_of(quant, "bits", (4,)) if "bits" in quant else _int_of(quant, "w_bit", (4,))
    group = quant.get("group_size", quant.get("q_group_size"))
    if isinstance(group, bool) or not isinstance(group, int) or group < 1:
        raise InputError("quantization_config.group_size", f"expected a group size, got {show(group)}")
    version = str(quant.get("version", "gemm")).lower()
    if version not in ("gemm", "gemv_fast", "marlin") or version == "gemv_fast":
        raise InputError("quantization_config.version", f"{show(quant.get('version'))}: only AWQ's GEMM layout "
                                                        "is priced exactly")
    skip = _skip_list(quant, "modules_to_not_convert")

    def price(rows, cols, role):
        # qweight int32 (in, out / 8), qzeros int32 (in / group, out / 8), scales fp16 (in / group, out)
        if cols % group or rows % 8:
            return None
        groups = cols // group
        return rows * cols * bits // 8 + groups * rows * bits // 8 + 2 * groups * rows
    return price, (f"AWQ int{bits} weights, an fp16 scale and a packed {bits}-bit zero per {group} inputs; "
                   "embeddings, head, norms and routers 16-bit"), skip


def _gptq(quant: dict):
    bits = _int_of(quant, "bits", (2, 4, 8))
    group = quant.get("group_size", 128)
    if isinstance(group, bool) or not isinstance(group, int) or not (group == -1 or group >= 1):
        raise InputError("quantization_config.group_size", f"expected a group size or -1, got {show(group)}")
    if quant.get("lm_head") is True:
        raise InputError("quantization_config.lm_head", "a quantized output head is not priced here")
    if str(quant.get("checkpoint_format", "gptq")).lower() not in ("gptq", "gptq_v2"):
        raise InputError("quantization_config.checkpoint_format", f"{show(quant.get('checkpoint_format'))}: "
                                                                  "only AutoGPTQ's layout is priced exactly")
    skip = _skip_list(quant, "modules_to_not_convert", "modules_in_block_to_quantize") \
        if not quant.get("modules_in_block_to_quantize") else None
    if skip is None:
        raise InputError("quantization_config.modules_in_block_to_quantize", "a list of the modules quantized "
                                                                             "is not priced here")
    per = 32 // bits

    def price(rows, cols, role):
        # qweight int32 (in / per, out), qzeros int32 (groups, out / per), scales fp16 (groups, out),
        # g_idx int32 (in)
        groups = 1 if group == -1 else cols // group
        if cols % per or rows % per or (group != -1 and cols % group):
            return None
        return rows * cols * bits // 8 + groups * rows * bits // 8 + 2 * groups * rows + 4 * cols
    shown = "per column" if group == -1 else f"per {group} inputs"
    return price, (f"GPTQ int{bits} weights, an fp16 scale and a packed zero {shown}, an int32 g_idx per input; "
                   "embeddings, head, norms and routers 16-bit"), skip


def _compressed_tensors(quant: dict):
    """compressed-tensors' pack-quantized format (llm-compressor's W4A16 / W8A16, Kimi K2's INT4):
    each quantized Linear stores weight_packed (int32, 32 / bits values each), weight_scale (16-bit,
    one per group of group_size inputs, or per output channel) and weight_shape (int64 x 2);
    symmetric, so no zero point. One config group targeting Linear; anything else is refused."""
    fmt = quant.get("format")
    groups = quant.get("config_groups")
    if not isinstance(groups, dict) or len(groups) != 1 or not isinstance(next(iter(groups.values())), dict):
        raise InputError("quantization_config.quant_method" if fmt is None else "quantization_config.config_groups",
                         "compressed-tensors is priced for one config group of pack-quantized int weights only")
    group = next(iter(groups.values()))
    fmt = group.get("format", fmt)
    if fmt != "pack-quantized":
        raise InputError("quantization_config.format", f"{show(fmt)}: only compressed-tensors' pack-quantized "
                                                       "format is priced exactly")
    if group.get("targets") != ["Linear"]:
        raise InputError("quantization_config.config_groups", f"targets {show(group.get('targets'))}: only "
                                                              "[\"Linear\"] is priced")
    weights = group.get("weights")
    if not isinstance(weights, dict) or weights.get("type") != "int" or weights.get("symmetric") is not True \
            or weights.get("dynamic") not in (False, None) or weights.get("actorder") is not None:
        raise InputError("quantization_config.config_groups", "only static symmetric int weights without "
                                                              "activation reordering are priced")
    bits = _int_of(weights, "num_bits", (4, 8))
    activations = group.get("input_activations")
    if activations is not None and (not isinstance(activations, dict) or activations.get("dynamic") is not True):
        raise InputError("quantization_config.config_groups", "input activations with stored scales are not priced")
    strategy = weights.get("strategy")
    size = weights.get("group_size")
    if strategy == "group" and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise InputError("quantization_config.config_groups", f"group_size {show(size)}: expected a group size")
    if strategy not in ("group", "channel"):
        raise InputError("quantization_config.config_groups", f"strategy {show(strategy)}: only group and channel "
                                                              "scales are priced")
    skip = _skip_list(quant, "ignore")
    if not _skipped("lm_head", skip):
        raise InputError("quantization_config.ignore", "a quantized output head (lm_head not ignored) is not "
                                                       "priced here")
    per = 32 // bits

    def price(rows, cols, role):
        if cols % per or (strategy == "group" and cols % size):
            return None
        scales = rows * (cols // size if strategy == "group" else 1)
        return rows * cols * bits // 8 + 2 * scales + 16
    shown = f"per {size} inputs" if strategy == "group" else "per output channel"
    return price, (f"compressed-tensors pack-quantized int{bits} weights, a 16-bit scale {shown} and an int64 "
                   "weight_shape per linear; embeddings, head, norms and routers 16-bit"), skip


_RULES = {"fp8": _fp8, "mxfp4": _mxfp4, "modelopt": _nvfp4, "awq": _awq, "gptq": _gptq,
          "compressed-tensors": _compressed_tensors}


# ---- a typed weights-dtype on a checkpoint of the model's shape -------------------------------
#
# A user who types --weights-dtype int4 / nvfp4 / fp8 / int8 beside a model's shape means a
# quantized checkpoint of it, loaded by vLLM or SGLang. Both quantize only the decoder's linear
# layers and the routed experts: a quantization method is asked per module (vLLM
# base_config.QuantizationConfig.get_quant_method, v0.10.1 and every later release) and returns
# one only for LinearBase and FusedMoE; VocabParallelEmbedding / ParallelLMHead keep their
# UnquantizedEmbeddingMethod unless a format quantizes them, the norms are plain parameters, and
# the routers (Qwen3-MoE / Qwen3.5-MoE's `gate`: ReplicatedLinear(..., quant_config=None) in
# vllm/model_executor/models/qwen3_moe.py) and vision towers are left out by the published
# recipes' ignore lists (llm-compressor's ["lm_head", "re:.*mlp.gate$", "re:.*visual.*"],
# ModelOpt's exclude_modules). So the rest stays in the model's 16-bit dtype: pricing every
# parameter at 4 bits, as a uniform precision does, misses the embedding, the head and the
# tower (5.4 GB of Qwen3.6-27B's 27.4 B parameters at 16 bits against 1.4 GB at 4).
# What each format adds beside its values, per quantized tensor (rows x cols, one copy):
#   fp8 / fp8_e4m3: one byte a weight and a float32 weight_scale (vllm fp8.py Fp8LinearMethod,
#       per-tensor; a 128 x 128 block-scaled checkpoint adds 4 bytes per 16,384 weights more, 0.02%);
#   int8: one byte a weight and a float32 scale per output channel (compressed-tensors W8A8,
#       vllm compressed_tensors_w8a8_int8.py: weight_scale of shape (rows, 1));
#   int4: two weights a byte and a 16-bit scale per 128 inputs (the default group of GPTQ, AWQ,
#       AutoRound and compressed-tensors W4A16, vllm compressed_tensors_wNa16.py; symmetric: no zeros);
#   nvfp4: two weights a byte, an fp8 scale per 16 and two float32 global scales (ModelOpt NVFP4,
#       vllm modelopt.py ModelOptNvFp4LinearMethod: weight_scale, weight_scale_2, input_scale).
INT4_GROUP = 128

# A Gated DeltaNet hybrid's linear-attention projections (Qwen3-Next, Qwen3.5, Qwen3.6: the decoder's
# `linear_attn.in_proj_qkvz` / `in_proj_qkv` / `in_proj_z` / `out_proj`) are not stored at 4 bits by any
# published NVFP4 recipe of these models: llm-compressor's (vllm-project/llm-compressor
# examples/quantization_w4a4_fp4/qwen3_5_moe_example.py and qwen3_6_example.py: ignore "re:.*linear_attn.*",
# so 16-bit) and NVIDIA ModelOpt's (nvidia/Qwen3.6-27B-NVFP4's quantization_config,
# tests/fixtures/hf/nvidia__Qwen3.6-27B-NVFP4.json: quant_algo MIXED_PRECISION, every linear_attn projection
# FP8, the MLPs NVFP4; vllm-project/recipes models/Qwen/Qwen3.6-27B.yaml: "attention linears ... in FP8").
# A typed nvfp4 prices them as ModelOpt stores them, one byte a weight and a float32 per-tensor scale (the
# fewer bytes of the two recipes; llm-compressor's 16 bits hold 1.35 GiB more on Qwen3.6-35B-A3B), and their
# small in_proj_a / in_proj_b / in_proj_ba (in neither of ModelOpt's groups) in 16 bits. int4 recipes differ
# (AutoRound and llm-compressor's AWQ quantize them, GPTQModel's Qwen3-Coder-Next keeps them 16-bit): no change.
GDN_MODULE = ".linear_attn."
GDN_UNQUANTIZED = ("in_proj_a", "in_proj_b", "in_proj_ba")
GDN_AT_8_BITS = ("nvfp4",)


def _gdn_price(g) -> int | None:
    """A Gated DeltaNet projection's bytes under a typed nvfp4 (above), or None for any other tensor."""
    if GDN_MODULE not in g.name or g.role not in QUANTIZABLE:
        return None
    if g.name.rsplit(".", 1)[-1] in GDN_UNQUANTIZED:
        return g.elements * (4 if g.fp32 else 2)
    return (g.rows * g.cols + 4) * g.copies


def _typed_price(dtype: str):
    def fp8(rows, cols, role):
        return rows * cols + 4

    def int8(rows, cols, role):
        return rows * cols + 4 * rows

    def int4(rows, cols, role):
        return ceil_div(rows * cols, 2) + 2 * rows * ceil_div(cols, INT4_GROUP)

    def nvfp4(rows, cols, role):
        return ceil_div(rows * cols, 2) + rows * ceil_div(cols, 16) + 8
    return {"fp8": (fp8, "fp8 weights and a float32 scale per tensor"),
            "fp8_e4m3": (fp8, "fp8 weights and a float32 scale per tensor"),
            "int8": (int8, "int8 weights and a float32 scale per output channel"),
            "int4": (int4, f"int4 weights and a 16-bit scale per {INT4_GROUP} inputs"),
            "nvfp4": (nvfp4, "nvfp4 weights, an fp8 scale per 16 and two float32 scales per tensor"),
            }.get(dtype)


def typed_weights(tensors, dtype: str) -> QuantizedWeights | None:
    """The bytes of a checkpoint of these tensors in a typed weights-dtype, as vLLM and SGLang
    load it (the rule above): the decoder's linear layers and routed experts in that format, the
    embedding, head, norms, routers and vision tower in 16 bits. None for a precision that is not
    such a format (16-bit, llama.cpp's GGUF blocks) or without the tensors."""
    name = str(dtype).strip().lower().replace("-", "_")
    typed = _typed_price(name)
    if typed is None or not tensors:
        return None
    price, words = typed
    total = routed = 0
    each = []
    gdn = False
    for g in tensors:
        cost = _gdn_price(g) if name in GDN_AT_8_BITS else None
        gdn = gdn or cost is not None
        if cost is None:
            cost = price(g.rows, g.cols, g.role) * g.copies if g.role in QUANTIZABLE else g.elements * (4 if g.fp32 else 2)
        total += cost
        each.append(cost)
        if g.active < g.copies:
            routed += cost
    return QuantizedWeights(total, f"{words} in the linear layers and experts"
                                   + ("; the Gated DeltaNet projections fp8 (NVIDIA ModelOpt's recipe; llm-compressor's "
                                      "keeps them 16-bit)" if gdn else "")
                                   + "; embeddings, head, norms, routers and vision tower 16-bit", routed, tuple(each))


def with_typed_weights(model, dtype: str):
    """The model with its weights priced for a typed weights-dtype (typed_weights), its tensors'
    bytes beside them (so the routed experts and each rank's share follow); unchanged where that
    rule does not apply."""
    shapes = model.shapes
    typed = typed_weights(shapes.tensors if shapes is not None else (), dtype)
    if typed is None:
        return model
    return replace(model, config_weights_bytes=typed.bytes, config_weights_rule=typed.rule,
                   config_weights_estimated=False, config_weights_typed=dtype, checkpoint_bytes=None,
                   shapes=replace(shapes, quantized=True, tensor_bytes=typed.group_bytes,
                                  quantized_rule=typed.rule, quantized_unread=None))


# ---- what vLLM holds after loading beyond the checkpoint's tensors ------------------------------
#
# vLLM's "Model loading took X GiB" is DeviceMemoryProfiler.consumed_memory around load_model
# (vllm/v1/worker/gpu_model_runner.py; vllm/worker/model_runner.py before V1): torch's allocated
# bytes after loading less those before (platforms/cuda.py get_current_memory_usage: empty_cache,
# reset_peak_memory_stats, max_memory_allocated; the same in the 0.7.0, 0.13.0 and 0.25.1 wheels).
# So it counts, beside the checkpoint's tensors, what the model's modules build and what the
# caching allocator rounds them to:
# - the rotary cos/sin cache (rotary_embedding base.py RotaryEmbedding.__init__: max_position x
#   rotary_dim, cast to the model dtype, one per distinct rope, shared by the layers through
#   get_rope's _ROPE_DICT: 0.7.0, 0.13.0, 0.25.1);
# - the vocabulary padded to a multiple of 64 (vocab_parallel_embedding.py pad_vocab_size,
#   DEFAULT_VOCAB_PADDING_SIZE = 64, then divide(num_embeddings_padded, tp_size): the embedding
#   and the lm_head both, in every release 0.7.0 to 0.27.0);
# - each tensor's block: PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp,
#   the torch 2.5-2.10 these releases pin) takes a request over 1 MiB from a segment of 20 MiB
#   (under 10 MiB) or of the request rounded up to 2 MiB, and splits the segment only where more
#   than 1 MiB would remain (should_split: remaining > kSmallSize), so a 36,700,160-byte qkv_proj
#   (Qwen2.5-32B at tp 2) is allocated 37,748,736 bytes; requests are rounded to 512 bytes.
ALLOC_MIN_BLOCK = 512
ALLOC_SMALL = 1 << 20            # kSmallSize: the small pool's largest request; a split's least remainder
ALLOC_MIN_LARGE = 10 << 20       # kMinLargeAlloc: below it a large request shares a 20 MiB segment
ALLOC_ROUND_LARGE = 2 << 20      # kRoundLarge
VOCAB_PADDING = 64               # vLLM DEFAULT_VOCAB_PADDING_SIZE


def torch_block_bytes(size: int) -> int:
    """The bytes torch's CUDA caching allocator counts as allocated for one request of `size`
    bytes taken from a fresh segment (see above)."""
    size = max(ALLOC_MIN_BLOCK, ceil_div(size, ALLOC_MIN_BLOCK) * ALLOC_MIN_BLOCK)
    if size <= ALLOC_SMALL or size < ALLOC_MIN_LARGE:
        return size        # the small pool splits to 512 B; a 20 MiB segment keeps over 10 MiB free
    segment = ceil_div(size, ALLOC_ROUND_LARGE) * ALLOC_ROUND_LARGE
    return segment if segment - size <= ALLOC_SMALL else size


# vLLM fuses the checkpoint's projections into one parameter each (QKVParallelLinear,
# MergedColumnParallelLinear, FusedMoE's w13 / w2): the allocator rounds the fused tensor.
_FUSED = {"q_proj": "qkv", "k_proj": "qkv", "v_proj": "qkv", "gate_proj": "gate_up", "up_proj": "gate_up",
          "w1": "gate_up", "w3": "gate_up"}


def _rank_tensors(tensors, byte_sizes, tp: int, expert_ranks: int, expert_tp: int) -> list[tuple[str, int]]:
    """(the layer a tensor belongs to, or "" for the embedding and head; its bytes on one rank)
    for each parameter as vLLM allocates it: fused as above, split over tp (the routed experts
    over `expert_ranks` where experts are split whole, else their width over `expert_tp`: tp x dp, as
    FusedMoE splits them, parallel.py's expert group), the vocabulary padded to 64."""
    fused: dict[tuple[str, str], list] = {}
    for g, size in zip(tensors, byte_sizes):
        module, _, last = g.name.rpartition(".")
        if last == "bias":
            continue                     # small: the 512-byte rounding of the small pool
        kind = _FUSED.get(last, last)
        key = (module, kind)
        layer = g.name.split(".layers.")[1].split(".")[0] if ".layers." in g.name else ""
        if g.role in ("embed", "head"):
            rows = _round_up(g.rows, VOCAB_PADDING)
            share = ceil_div(size * rows // g.rows, tp)
        elif g.role == "expert":
            share = size // g.copies * ceil_div(g.copies, expert_ranks) // (1 if expert_ranks > 1 else expert_tp)
        elif g.role in ("linear", "vision"):
            share = size // tp
        else:
            share = size                 # norms, routers: replicated
        entry = fused.setdefault(key, [layer, 0])
        entry[1] += share
    return [(layer, size) for layer, size in fused.values()]


def rope_cache_elements(cfg: dict) -> tuple[int, bool] | None:
    """(elements, M-RoPE) of the rotary cos/sin cache vLLM builds for a config: max_position x
    rotary_dim, rotary_dim = head_dim x partial_rotary_factor (get_rope, rotary_embedding/__init__.py,
    base.py, llama3_rope.py: the default and llama3 ropes size it from the max_position they are
    given, the config's max_position_embeddings); M-RoPE (an mrope_section, or Qwen2-VL's "mrope"
    type) is MRotaryEmbedding, whose cache a release may enlarge (vllm_loaded_extra's
    mrope_positions). None for the other kinds (YaRN, long-rope, dynamic, a model without rope...),
    whose caches are not priced here."""
    inner = cfg.get("text_config")
    text = inner if isinstance(inner, dict) else cfg
    scaling = text.get("rope_parameters") or text.get("rope_scaling") or {}
    if not isinstance(scaling, dict):
        return None
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind not in ("default", "llama3", "mrope"):
        return None
    position, heads, hidden = (text.get(k) for k in ("max_position_embeddings", "num_attention_heads", "hidden_size"))
    head_dim = text.get("head_dim") or (hidden // heads if isinstance(hidden, int) and isinstance(heads, int)
                                        and heads > 0 else None)
    factor = scaling.get("partial_rotary_factor", text.get("partial_rotary_factor", 1))
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_WIDTH * 16 for v in
               (position, head_dim)) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
        return None
    if str(text.get("model_type", "")) not in _ROPE_FAMILIES:
        return None
    architectures = cfg.get("architectures")
    if isinstance(architectures, list) and architectures and architectures[0] in MROPE_STRIPPED:
        return position * int(head_dim * factor), False
    return position * int(head_dim * factor), kind == "mrope" or "mrope_section" in scaling


# Text-only Qwen3.5 checkpoints: vLLM's Qwen3_5ForCausalLMConfig drops the M-RoPE fields the
# multimodal config carries (vllm/model_executor/models/config.py, 0.34.0): one-dimensional positions.
MROPE_STRIPPED = ("Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM")


# The families whose vLLM model builds one rope from the config's max_position_embeddings for all
# its attention layers (llama.py, which also runs mistral / ministral, qwen2.py, qwen3.py,
# qwen2_moe.py, qwen3_moe.py, qwen3_next.py, phi3 through llama.py, mixtral.py, olmo2.py; the
# language models of qwen2_vl.py, qwen2_5_vl.py, qwen3_vl.py and qwen3_5.py with M-RoPE; 0.25.1).
# Gemma's two ropes and the rest are left out.
_ROPE_FAMILIES = ("llama", "mistral", "ministral", "qwen2", "qwen3", "qwen3_moe", "qwen2_moe", "phi3", "phi4-siglip", "mixtral",
                  "olmo2", "qwen3_next", "qwen2_vl", "qwen2_5_vl", "qwen2_5_vl_text", "qwen3_vl_text",
                  "qwen3_vl_moe_text", "qwen3_5_text", "qwen3_5_moe_text")


# Modules vLLM builds whole on every tensor-parallel rank, where parallel.py splits every weight
# over tp: the norms (RMSNorm, q/k norms, MLA's latent norms), the MoE routers (qwen2_moe.py,
# qwen3_moe.py, qwen3_next.py, mixtral.py, gpt_oss.py: ReplicatedLinear; deepseek_v2.py GateLinear,
# a ReplicatedLinear, with its e_score_correction_bias; glm4_moe.py an nn.Linear), MLA's q_a_proj
# and kv_a_proj_with_mqa (deepseek_v2.py: ReplicatedLinear, DeepSeekV2FusedQkvAProjLinear with
# disable_tp=True) and DeepSeek-V3.2's indexer (wq_b a ReplicatedLinear, wk and weights_proj one
# MergedColumnParallelLinear with disable_tp=True, its k_norm), and the K and V heads where tp is
# more than their count (linear.py QKVParallelLinear: num_kv_heads = 1, num_kv_head_replicas =
# tp / kv heads). Read in 0.25.1.
_WHOLE_LINEARS = ("q_a_proj", "kv_a_proj_with_mqa", "wq_b", "wk", "weights_proj")


def replicated_bytes(model, tp: int) -> int:
    """The bytes one rank holds beyond its even 1 / tp share of the tensors above."""
    shapes = model.shapes
    if tp == 1 or shapes is None or not shapes.tensors:
        return 0
    sizes = shapes.tensor_bytes or tuple(g.elements * (4 if g.fp32 else 2) for g in shapes.tensors)
    head_dim = next((layer.head_dim for layer in model.layers if getattr(layer, "kv_heads", None)
                     and getattr(layer, "head_dim", None)), None)
    extra = Fraction(0)
    for g, size in zip(shapes.tensors, sizes):
        last = g.name.rpartition(".")[2]
        whole = g.role == "router" or g.name.endswith("e_score_correction_bias") or last in _WHOLE_LINEARS or \
            (g.role == "vector" and "norm" in last and not g.name.startswith("backbone."))
        if whole:
            extra += size - Fraction(size, tp)
        elif last in ("k_proj", "v_proj") and head_dim and g.rows % head_dim == 0 and g.rows // head_dim < tp:
            kv = g.rows // head_dim             # one head a rank, each head on tp / kv ranks
            extra += Fraction(size, kv) - Fraction(size, tp)
    return int(extra)


def vllm_loaded_extra(model, tp: int, expert_ranks: int = 1, stages: int = 1,
                      head: bool = True, mrope_positions: int = 4, dp: int = 1) -> tuple[int, str] | None:
    """(bytes, words): what vLLM's "Model loading took" counts on one GPU beyond the checkpoint's
    tensors split as parallel.py splits them: the vocabulary's padding and the rotary cache (the
    rules above) wherever the tensors are counted from a config; the allocator's blocks for a
    16-bit checkpoint only (a quantized format repacks its tensors after loading, so which block
    each ends in is not known). `head`: whether the lm_head is loaded (vLLM's pooling runner
    deletes it). `mrope_positions`: how many times max_position an M-RoPE cache holds (the
    release's MRotaryEmbedding). None where nothing is added."""
    shapes = model.shapes
    if shapes is None or not shapes.tensors:
        return None
    tensors = tuple(g for g in shapes.tensors if head or g.role != "head")
    width = 4 if model.dtype == "fp32" else 2          # the model dtype: the rope cache's and the embedding's
    rounding = embedding = 0
    if not shapes.quantized and not model.config_weights_typed and model.weights_dtype in ("bf16", "fp16"):
        rank = _rank_tensors(tensors, [g.elements * (4 if g.fp32 else 2) for g in tensors], tp, expert_ranks,
                             tp * dp)
        layers = sorted({layer for layer, _ in rank if layer})
        for layer, size in rank:
            if layer:
                rounding += torch_block_bytes(size) - size
            else:
                embedding += torch_block_bytes(size) - size
        rounding = rounding * ceil_div(len(layers), stages) // len(layers) if layers else 0
    padding = sum(width * ceil_div((_round_up(g.rows, VOCAB_PADDING) - g.rows) * g.cols, tp)
                  for g in tensors if g.role in ("embed", "head"))
    rope = 0
    if shapes.rope_cache:
        elements, mrope = shapes.rope_cache
        rope = width * elements * (mrope_positions if mrope else 1)
    whole = replicated_bytes(model, tp)
    whole = whole * ceil_div(model_layers := max(1, len(model.layers)), stages) // model_layers
    extra = rounding + embedding + padding + rope + whole
    if not extra:
        return None
    parts = [f"{rope:,} B of rotary cos/sin cache" if rope else "",
             f"{padding:,} B of vocabulary padded to a multiple of {VOCAB_PADDING}" if padding else "",
             f"{whole:,} B of modules every rank holds whole (norms, routers, replicated KV heads)" if whole else "",
             f"{rounding + embedding:,} B of the allocator's 2 MiB segment rounding" if rounding + embedding else ""]
    return extra, ("vLLM's loaded weights count " + ", ".join(p for p in parts if p) +
                   " per GPU beyond the checkpoint's tensors (vocab_parallel_embedding.py, rotary_embedding, "
                   "torch's CUDA caching allocator)")
