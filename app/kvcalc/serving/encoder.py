"""A multimodal model's vision encoder (issue 26, part 3): the tower's weights as each engine
places them under tensor parallel, the encoder cache budget, and llama.cpp's mmproj file.

- vLLM (config/multimodal.py mm_encoder_tp_mode, 0.33.0): "weights", the default, splits the
  tower's linears over the tp ranks like the language model's (qwen2_5_vl.py builds them from
  QKVParallelLinear, RowParallelLinear and Merged/ColumnParallelLinear), so a GPU holds its tp
  share of them, already inside the model's weights / tp; "data" keeps the whole tower on every
  rank and splits the images instead (only for models with supports_encoder_tp_data; others fall
  back to weights). SGLang's --mm-enable-dp-encoder is the same choice.
- The encoder cache (vLLM v1/core/encoder_cache_manager.py) is not preallocated: a dict of encoder
  outputs capped at a budget in tokens, encoder_cache_size = max_num_batched_tokens
  (config/scheduler.py, 0.7 on; the V1 preview of 0.6.x hard-coded 16,384). The profiling pass
  keeps a budget's worth of outputs alive during the text dummy run, so its peak holds about
  budget x text hidden x the dtype's bytes: an estimate, inside the profiled activation peak that
  the overhead estimate already bounds (engines/vllm/profile.py ENCODER), never added to it.
- llama.cpp (tools/server, mtmd_init_from_file) loads the --mmproj GGUF whole into its own
  buffer on one device, not split with -ngl: its tensor bytes (gguf.mmproj_bytes) sit on the
  first GPU beside that GPU's layers.

The tower's parameters come from the config (vision_params.py: Qwen2.5-VL, Qwen3-VL / Qwen3.5 and
Gemma 3's SigLIP); its bytes are at the model's 16-bit dtype, since the quantized formats the
calculator prices (quantized_bytes.quantized_weights) leave the tower unquantized. A tower not counted
there gives no encoder (a data mode asked for on it is refused, having nothing to size).

Each engine's rules (which flag its data mode takes, the towers whose data mode was read, the
encoder cache budget, the projector file) are data in its home (engines/<engine>/serving.py
ENCODER), asked through rules.py.
"""

from dataclasses import dataclass, field, replace

from ..errors import InputError
from ..model import VisionTower
from ..precision import precision
from ..units import ceil_div
from .rules import rules_of, written_rules

MODES = ("weights", "data")
REPLICATED = ("patch_embed", "patch_embedding", "norm", "ln_q", "layer_norm", "layernorm", "pos_embed",
              "position_embedding")


@dataclass(frozen=True)
class Encoder:
    mode: str                    # "weights" (split over tp), "data" (whole on every GPU) or "mmproj" (llama.cpp)
    weights_bytes: int           # the whole tower's (or the mmproj file's tensor) bytes
    params: int | None = None    # None for an mmproj (its tensors' types vary; only bytes are given)
    dtype: str | None = None
    text_hidden: int | None = None
    replicated_params: int = 0   # patch embedding, position table and norms: not split under "weights"
    wrapper: str | None = None   # the config's model_type (which tower)
    mode_given: bool = False
    # What vLLM splits over tp under "weights" (vision_params.tp_splits): (key, what, count), each
    # of which tp must divide; and a SigLIP's heads, whose attention it keeps whole where tp does not.
    splits: tuple = ()
    unsplit_heads: int | None = None
    tower: VisionTower | None = field(default=None, compare=False, repr=False)   # as its config gives it


def encoder_from(asked, model, engine: str | None) -> Encoder | None:
    """The vision encoder the inputs (asked: the ServingSettings) and the model give, or None (a
    text-only model, a tower not counted here, an engine that loads one only from a projector file
    without one)."""
    mode, mmproj = asked.mm_encoder_tp_mode, asked.mmproj_bytes
    if mode is None and mmproj is None and written_rules(engine) is None:
        return None                 # not asked for, on an engine whose encoder rules are not written down
    rules = rules_of(engine).encoder
    if mmproj is not None and not rules.mmproj:
        raise InputError("mmproj-bytes", f"the mmproj file is llama.cpp's (--mmproj); {engine} loads the vision "
                                         "tower from the checkpoint itself: leave mmproj-bytes out, or size llama.cpp")
    if mode is not None and rules.tp_mode_refusal:
        raise InputError("mm-encoder-tp-mode", rules.tp_mode_refusal)
    if mode is not None and mode not in MODES:
        raise InputError("mm-encoder-tp-mode", f"expected weights or data, not {str(mode)[:20]!r}")
    if mmproj is not None:
        return Encoder(mode="mmproj", weights_bytes=mmproj, text_hidden=model.hidden_size, mode_given=True)
    if not rules.tower_from_checkpoint:
        return None                 # without its projector file (llama.cpp --mmproj) no vision tower
    if not model.multimodal:
        if mode is not None:
            raise InputError("mm-encoder-tp-mode", f"{model.name} is a text-only model: it has no vision encoder "
                                                   "to place")
        return None
    tower = model.shapes.vision if model.shapes is not None else None   # read with the model's config
    groups = tower.groups if tower is not None else ()
    e = tower.unread if tower is not None else None
    if e is not None:
        if mode is not None:
            raise InputError("mm-encoder-tp-mode", f"{model.name}'s vision tower is not counted here ({e.field}: "
                                                   f"{e.message}), so where it goes cannot be sized") from None
        return None
    if not groups:
        if mode is not None:
            raise InputError("mm-encoder-tp-mode", f"the config held for {model.name} has no vision_config, so "
                                                   "its vision tower cannot be sized: paste the full config.json")
        return None
    params = sum(rows * cols for _, rows, cols in groups)
    replicated = sum(rows * cols for name, rows, cols in groups if any(k in name for k in REPLICATED))
    dtype = model.dtype
    return Encoder(mode=mode or "weights", weights_bytes=precision(dtype).bytes_for(params), params=params,
                   dtype=dtype, text_hidden=model.hidden_size, replicated_params=replicated,
                   wrapper=tower.wrapper, mode_given=mode is not None, tower=tower)


def check_tp(encoder: Encoder, tp: int, checked: bool) -> Encoder:
    """vLLM's own limits on the tower under tensor parallel (vision_params.TP_SPLITS, read in vLLM
    0.33.0's qwen2_5_vl.py / qwen3_vl.py): in the "weights" mode each of its split widths must be
    divisible by tp, or the model fails to build ("AssertionError: 16 is not divisible by 32") and
    vLLM refuses to start; --mm-encoder-tp-mode data builds the tower whole (tp_size 1 in it), so
    nothing is split. The encoder with what it splits, or the refusal naming tp. `checked`: the
    engine builds its towers so (its CHECKS_ENCODER_SPLIT: vLLM's; the exact ideal and SGLang, whose
    towers are not read, have no such check)."""
    if encoder.mode != "weights" or encoder.tower is None or not checked:
        return encoder
    refused = encoder.tower.splits_unread
    if refused is not None:
        raise InputError(refused.field, refused.message)
    splits = encoder.tower.tp_splits
    if tp > 1:
        for key, what, count in splits:
            if count % tp:
                fits = [d for d in range(1, count + 1) if count % d == 0 and d <= 64]
                raise InputError("tp", f"vLLM refuses to start: the vision tower's {count:,} {what} (vision_config."
                                       f"{key}) are not divisible by tp {tp}; it splits them over tp when it builds "
                                       f"the tower ({encoder.wrapper}). Keep the tower whole on every GPU with "
                                       "--mm-encoder-tp-mode data (mm-encoder-tp-mode), or use a tp of "
                                       f"{', '.join(map(str, fits))}")
    return replace(encoder, splits=splits, unsplit_heads=encoder.tower.unsplit_heads)


def added_bytes_per_gpu(encoder: Encoder, tp: int, engine: str | None) -> int:
    """What a GPU holds of the encoder beyond its tp share of the model's weights."""
    if encoder.mode == "mmproj":
        return encoder.weights_bytes         # a file of its own, whole on the first GPU
    if encoder.mode == "data":
        return ceil_div(encoder.weights_bytes * (tp - 1), tp)
    return 0


def held_bytes_per_gpu(encoder: Encoder, tp: int) -> int:
    """The tower's bytes on one GPU: its tp share under "weights", all of it otherwise."""
    return ceil_div(encoder.weights_bytes, tp) if encoder.mode == "weights" else encoder.weights_bytes


def budget_tokens(release, prefill_chunk: int | None, rules) -> int | None:
    """The encoder cache budget in tokens by the engine's EncoderRules: the prefill chunk, or a
    fixed budget before its preview_before (vLLM: max_num_batched_tokens from 0.7.0, 16,384 in the
    0.6.x V1 preview)."""
    if rules.preview_before is not None and release is not None and not release.at_least(*rules.preview_before):
        return rules.preview_budget_tokens
    return prefill_chunk


def figures(encoder: Encoder, scenario, result) -> dict:
    """The encoder's figures and lines for a report."""
    engine, tp = scenario.settings.engine, scenario.deployment.tp
    rules = rules_of(engine).encoder
    held = held_bytes_per_gpu(encoder, tp)
    added = added_bytes_per_gpu(encoder, tp, engine)
    lines = []
    budget = cache = None
    if encoder.mode == "mmproj":
        lines += [f"llama.cpp's projector (--mmproj): {encoder.weights_bytes:,} B of tensors (its GGUF header), "
                  "loaded whole into its own buffer on the first GPU, not split with -ngl (tools/server "
                  "mtmd_init_from_file); added to that GPU's weights.",
                  "Its compute buffer (one warm-up image's graph, clip.cpp reserve_compute_meta; about 250 MiB in "
                  "a published log) is not modelled."]
        target = scenario.serving.target or scenario.model
        if target.multimodal:
            # A preset's or config's weights count the vision tower that a text GGUF leaves out.
            lines.append("This model's weights here are its checkpoint's, which hold the vision tower too; "
                         "llama.cpp's text GGUF leaves the tower to the mmproj file, so the tower is counted twice: "
                         "give the text GGUF itself (--gguf) for its weights.")
    else:
        bits = precision(encoder.dtype).bits_per_element
        lines.append(f"Vision tower ({encoder.wrapper}): {encoder.params:,} parameters x {bits} bits "
                     f"({encoder.dtype}, the model's dtype: the quantized formats priced here leave the tower "
                     f"unquantized) = {encoder.weights_bytes:,} B, counted in the model's weights when they are "
                     "counted from the config.")
        given = scenario.settings.weights_dtype
        if given and given != encoder.dtype:
            lines.append(f"weights-dtype {given} prices the model's weights, the tower's share among them; the tower "
                         f"itself is kept at {encoder.dtype} here, as the quantized checkpoints priced here keep it.")
        if encoder.mode == "weights" and encoder.unsplit_heads and tp > 1 \
                and encoder.unsplit_heads % tp:
            lines.append(f"The tower's {encoder.unsplit_heads} attention heads are not divisible by tp = {tp}: vLLM's "
                         "SiglipEncoderLayer then builds that attention unsplit on every GPU (siglip.py), a little "
                         "more than the share counted here; its MLP stays split.")
        if encoder.mode == "weights":
            lines.append(f"mm_encoder_tp_mode weights (vLLM's default): its linears split over tp = {tp} with the "
                         f"model's, {held:,} B per GPU, already in the model's share; nothing added. The patch "
                         f"embedding and norms ({encoder.replicated_params:,} parameters) stay whole on every rank "
                         "in vLLM, a rounding left inside that share.")
        else:
            lines.append(f"{rules.data_mode_words}: the whole tower on each of the {tp} GPUs, so each holds "
                         f"{encoder.weights_bytes:,} - {encoder.weights_bytes:,} / {tp} = {added:,} B beyond its "
                         "share.")
            if rules.data_mode_unverified and encoder.wrapper not in rules.data_mode_verified:
                lines.append(rules.data_mode_unverified.format(wrapper=encoder.wrapper))
        if rules.cache_budget_words:
            release = scenario.settings.release
            chunk = result.engine.prefill_chunk if result.engine is not None else None
            budget = budget_tokens(release, chunk, rules)
            if budget is not None and encoder.text_hidden:
                cache = precision(encoder.dtype).bytes_for(budget * encoder.text_hidden)
                lines.append(rules.cache_budget_words.format(budget=budget, hidden=encoder.text_hidden, bits=bits,
                                                             cache=cache))
        elif rules.cache_words:
            lines.append(rules.cache_words)
    return {"encoder_params": encoder.params, "encoder_weights_bytes": encoder.weights_bytes,
            "encoder_weights_bytes_per_gpu": held, "encoder_added_bytes_per_gpu": added,
            "encoder_mode": encoder.mode, "encoder_budget_tokens": budget, "encoder_cache_bytes": cache,
            "lines": lines}


def launch_flags(encoder: Encoder, engine: str | None) -> list:
    """The flags that place the encoder as sized: the engine's data mode, or its projector file
    (llama.cpp's --mmproj); none for the exact ideal."""
    if engine is None:
        return []
    rules = rules_of(engine).encoder
    if encoder.mode == "data" and encoder.mode_given:
        return list(rules.data_mode_flags)
    if encoder.mode == "mmproj":
        return list(rules.mmproj_flags)
    return []
