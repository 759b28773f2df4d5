"""What a multimodal model's profiling run adds for its vision encoder (issue 36), from the tower's
shapes the config gives (readers/vision_params: model.shapes.vision) and vLLM's budget rules.

V1's profile_run (vllm/v1/worker/gpu_model_runner.py, read in 0.10.2 and 0.26.0) first encodes a dummy
batch of the largest items of the modality with the most tokens per item, keeps the outputs in the
encoder cache through the language model's dummy run and sampler warm-up, and clears them after. How many
items (MultiModalBudget._get_max_items: vllm/v1/worker/utils.py in 0.10.2, vllm/multimodal/encoder_budget.py
in 0.26.0, the same rule): the encoder budget is max(max_num_batched_tokens, tokens per item)
(compute_mm_encoder_budget, vllm/v1/core/encoder_cache_manager.py: max_num_encoder_input_tokens and
encoder_cache_size default to max_num_batched_tokens, config/scheduler.py), and the batch is
max(1, min(budget // tokens per item, max_num_seqs x max(1, min(999, max_model_len // tokens per item))))
(999 items per prompt: MultiModalConfig.get_limit_per_prompt's V1 default). The logs print it: "Encoder cache
will be initialized with a budget of 16384 tokens, and profiled with 1 image items of the maximum feature size".

The largest image: the Qwen towers' processor resizes to at most max_pixels (smart_resize, factor = patch x
spatial merge: qwen2_vl.py _get_vision_info), which is the checkpoint's preprocessor_config.json, not its
config.json: Qwen2.5-VL's repositories give 12,845,056 (3584 x 3584), Qwen3-VL's and Qwen3.5's
size.longest_edge 16,777,216 (4096 x 4096); both make 65,536 patches and 16,384 tokens an image (the logs'
budget of 16384 tokens). Qwen2.5-VL's dummy video takes its frames at that size, as many as max_model_len
holds, two frames a temporal patch, at most _MAX_FRAMES_PER_VIDEO (16 to 0.10.2, 14 from 0.11.0; qwen2_vl.py
get_num_frames_with_most_features): from a max_model_len of twice an image's tokens the video has more, and
profile_run encodes it instead (get_modality_with_max_tokens). Qwen3-VL's and Qwen3.5's video processor keeps a
video under an image (the logs profile an image at a max_model_len of 262,144).

The tower's peak on one patch, in the model dtype (b bytes) on a hidden width d and an MLP width w, read in
0.26.0 qwen3_vl.py Qwen3_VisionTransformer.forward / Qwen3_VisionBlock and qwen2_5_vl.py
Qwen2_5_VisionAttention / Qwen2_5_VisionMLP:
- kept through every block: the dummy pixel values on the GPU (channels x temporal x patch^2, already in
  the model dtype: the processor's output is cast to it, InputProcessingContext maybe_cast_dtype in 0.10.2
  vllm/inputs/registry.py, _postprocess_output in 0.26.0 vllm/multimodal/processing/context.py; the caller
  holds them), the residual stream (d) and, for a tower with a learned position table (Qwen3-VL, Qwen3.5),
  the interpolated position embeddings (d) in the encoder metadata;
- then the larger of the attention's live set, 9 d (the fused qkv 3 d, the contiguous q/k copy 2 d, the
  rotated q/k 2 d, the context and its contiguous copy 2 d; the head-split parts / tp) and the MLP's, the
  normed input d and w / tp per output of fc1 and the activation (gate_up 2 w and the activation w gated).
Qwen2-VL's tower (0.10.2 qwen2_vl.py, the Qwen2.5-VL tower's origin: the same processor, dummy image and
video rules) differs in its blocks: LayerNorms, a plain fc1 / QuickGELU / fc2 MLP of embed_dim x mlp_ratio,
and an attention that keeps the fused qkv bound while it copies q, k, v contiguous and rotates q and k in
float32 (QWEN2_VL_ATTENTION_WIDTHS). Its QuickGELU (hard-coded in qwen2_vl.py Qwen2VisionMLP) is a CustomOp:
where the model is compiled (V1 without --enforce-eager: compilation level 3 with Inductor) vLLM turns
custom ops off by default (0.10.2 custom_op.py default_on; CompilationConfig custom_ops), so it runs
forward_native, x * torch.sigmoid(1.702 * x): fc1's output, the sigmoid and the product live at once, one
width more than the fused kernel's output (QUICK_GELU_NATIVE_WIDTHS); eager (V0, --enforce-eager) takes the
fused gelu_quick kernel. LLaVA's CLIP tower (0.10.2 llava.py, clip.py) encodes images of its
fixed image_size: the class token and (image_size / patch)^2 patches, each patch's features one token
(the "default" feature strategy drops the class token); a batch of them is the same count per patch.
The encoder outputs (tokens x the text width x (1 + deepstack mergers)) stay cached through the language
model's run. So, on the V1 runner, does the dummy batch itself: profile_run binds batched_dummy_mm_inputs (the
items' pixel values stacked on the GPU by group_and_batch_mm_kwargs, in the model dtype) to a local that lives
until the function returns, through _dummy_run and _dummy_sampler_run (vllm/v1/worker/gpu_model_runner.py, read
in the 0.10.2, 0.20.0, 0.27.1 and 0.29.0 wheels). The V2 runner's encoder pass (0.27.0 on,
vllm/v1/worker/gpu/mm/encoder_runner.py profile_encoder_cache) batches them inside execute_mm_encoder and keeps
only the outputs. vllm-gemma3-4b-b200-bench-latency-kvmem-hint-v0.10.1dev.log (vLLM PR #21489) prints a 9.96
GiB peak activation: the sampler's 9.62 GiB by profile.py plus its 64 images' pixel values (0.287 GiB) and
their 256 tokens each in the encoder cache (0.078 GiB) is 9.99 GiB.
Gemma 3's SigLIP tower (0.10.2 gemma3_mm.py, siglip.py) encodes one crop an image at its fixed image_size (pan
and scan is off by default: get_num_crops returns 0 crops past the image), every patch of it through the
tower with no class token, and its projector pools them to mm_tokens_per_image tokens (256 in every
published Gemma 3 config: GEMMA3_TOKENS; image_seq_length in get_num_image_tokens). The band's top is a quarter of the tower's peak above it (what the unit count leaves out:
the rotary tables, allocator rounding, a platform's rotary and attention kernels); its bottom adds nothing,
since flags this calculator does not take skip the pass. The logs: on an AMD R9700 (ROCm, an out-of-tree
build of 0.26.0) Qwen3.6-27B / 35B-A3B print a 2.1 GiB peak where the tower's is 1.73 GiB by this count
(-17%, inside the top); at tp 2 on an A100 (0.27.1) Qwen3.6-27B prints 2.32 GiB, the language model's
peak with the 1.13 GiB pass under it.
"""

import math
from dataclasses import dataclass
from fractions import Fraction

from . import release as rules

# preprocessor_config.json's largest image, by wrapper (model_type): max_pixels (Qwen2.5-VL) or
# size.longest_edge (Qwen3-VL, Qwen3.5 / 3.6), as the published repositories give them.
# Qwen2-VL's repositories give max_pixels 12,845,056 as Qwen2.5-VL's (the 0.10.2 logs' Qwen2-VL-2B-Instruct).
MAX_PIXELS = {"qwen2_5_vl": 12_845_056, "qwen2_vl": 12_845_056, "qwen3_vl": 16_777_216, "qwen3_vl_moe": 16_777_216,
              "qwen3_5": 16_777_216, "qwen3_5_moe": 16_777_216}
# Qwen2-VL's attention in 0.10.2 (qwen2_vl.py Qwen2VisionAttention.forward): the fused qkv 3 d stays bound
# to `x` while the contiguous q, k, v copies (3 d) are made, and apply_rotary_pos_emb_vision rotates q, then
# k, through a float32 copy and a float32 output (2 + 2 d in 16-bit widths) cast back to d (type_as) while
# both are live: 11 widths.
QWEN2_VL_ATTENTION_WIDTHS = 11
# LLaVA's CLIP tower (0.10.2 clip.py CLIPAttention, vllm/attention/layer.py MultiHeadAttention): the fused
# qkv 3 d, its q, k, v made contiguous for the kernel 3 d, the context d and out_proj's d.
CLIP_ATTENTION_WIDTHS = 8
# QuickGELU's forward_native (activation.py, 0.10.2-0.26.0): x * torch.sigmoid(1.702 * x) holds the sigmoid
# and the product beside fc1's output: 2 widths of w, against the fused kernel's 1 (torch.empty_like out).
QUICK_GELU_NATIVE_WIDTHS = 2
CLIP = "vision_tower.vision_model"
GEMMA3_TOKENS = 256                     # mm_tokens_per_image of the Gemma 3 4B, 12B and 27B configs
# The towers whose dummy video profile_run sizes (qwen2_vl.py's processing info, which Qwen2.5-VL's inherits).
VIDEO_TOWERS = ("qwen2_5_vl", "qwen2_vl")
CHANNELS, FRAMES = 3, 2                 # RGB; an image is one temporal patch of 2 frames (temporal_patch_size)
ITEMS_PER_PROMPT = 999                  # MultiModalConfig.get_limit_per_prompt's V1 default
ATTENTION_WIDTHS = 9                    # qkv 3, q/k copy 2, rotated q/k 2, context 1 + its contiguous copy 1
SLACK = Fraction(1, 4)                  # the band: a quarter of the tower's peak either way


@dataclass(frozen=True)
class Tower:
    wrapper: str
    hidden: int          # the tower's width d
    width: int           # its MLP width w
    gated: bool          # gate_up + SiLU (Qwen2.5-VL) or fc1 + GELU (Qwen2-VL, Qwen3-VL, Qwen3.5, CLIP)
    pixel_values: int    # values a patch carries in (channels x temporal patch x patch^2)
    positions: bool      # a learned position table (its interpolation is kept per patch)
    merge: int           # patches per token (spatial_merge_size^2)
    outputs: int         # merger outputs a token (1 + the deepstack mergers)
    patches: int         # patches of the largest image
    tokens: int          # its tokens
    attention: int = ATTENTION_WIDTHS   # the attention's live widths of d
    cls: int = 0         # positions an item has without pixels (CLIP's class token)
    quick_gelu: bool = False   # vLLM builds its MLP with the QuickGELU CustomOp (Qwen2-VL's, hard-coded)


def _groups(model) -> dict:
    vision = getattr(model.shapes, "vision", None) if model.shapes is not None else None
    if vision is None or not vision.groups or vision.unread is not None:
        return {}
    return {name: (rows, cols) for name, rows, cols in vision.groups}


def tower(model) -> Tower | None:
    """The tower as vLLM's profiling encodes it, or None where its shapes are not read (no config with a
    vision_config, or a tower other than Qwen2-VL's, Qwen2.5-VL's, Qwen3-VL's, Qwen3.5's, LLaVA's CLIP and
    Gemma 3's SigLIP; Gemma 4's is not read by readers/vision_params, so its pass stays in the band)."""
    wrapper = model.shapes.vision.wrapper if model.shapes is not None else ""
    groups = _groups(model)
    if wrapper == "llava":
        return _clip(groups)
    if wrapper == "gemma3":
        return _siglip(groups)
    if wrapper not in MAX_PIXELS or "visual.patch_embed.proj" not in groups:
        return None
    hidden, values = groups["visual.patch_embed.proj"]
    gated = "visual.blocks.0.mlp.gate_proj" in groups
    qwen2 = wrapper == "qwen2_vl"       # fc1 / fc2 and merger.mlp.0 / .2 (0.10.2 qwen2_vl.py Qwen2VisionBlock)
    fc1 = groups.get("visual.blocks.0.mlp.gate_proj" if gated else
                     "visual.blocks.0.mlp.fc1" if qwen2 else "visual.blocks.0.mlp.linear_fc1")
    merged = groups.get("visual.merger.mlp.0" if gated or qwen2 else "visual.merger.linear_fc1")
    if fc1 is None or merged is None or not hidden or merged[0] % hidden or values % (CHANNELS * FRAMES):
        return None
    patch = math.isqrt(values // (CHANNELS * FRAMES))
    merge = merged[0] // hidden
    side = math.isqrt(merge)
    if patch * patch * CHANNELS * FRAMES != values or side * side != merge:
        return None
    factor = patch * side
    grid = math.isqrt(MAX_PIXELS[wrapper]) // factor * factor // patch
    if grid * grid // merge == 0:
        return None             # a merge past the largest image: no token to profile, the tower not read
    deepstack = sum(1 for name in groups if name.startswith("visual.deepstack_merger_list.")
                    and name.endswith(".linear_fc2"))
    return Tower(wrapper, hidden, fc1[0], gated, values, "visual.pos_embed" in groups, merge, 1 + deepstack,
                 grid * grid, grid * grid // merge, QWEN2_VL_ATTENTION_WIDTHS if qwen2 else ATTENTION_WIDTHS,
                 quick_gelu=qwen2)


def _clip(groups: dict) -> Tower | None:
    """LLaVA's CLIP tower: one image at its fixed image_size (0.10.2 llava.py get_image_size_with_most_features),
    the class token and (image_size / patch)^2 patches through the encoder, the patches' features to the
    language model (vision_feature_select_strategy "default" drops the class token: get_num_image_tokens)."""
    embed, table, fc1 = (groups.get(f"{CLIP}.{name}") for name in
                         ("embeddings.patch_embedding", "embeddings.position_embedding", "encoder.layers.0.mlp.fc1"))
    if embed is None or table is None or fc1 is None or table[0] < 2:
        return None
    hidden, values = embed
    return Tower("llava", hidden, fc1[0], False, values, False, 1, 1, table[0], table[0] - 1, CLIP_ATTENTION_WIDTHS, 1)


def _siglip(groups: dict) -> Tower | None:
    """Gemma 3's SigLIP tower: one crop of its fixed image_size, (image_size / patch)^2 patches through the
    encoder (no class token), pooled to GEMMA3_TOKENS tokens (Gemma3MultiModalProjector's avg_pool). Its
    attention's live set is counted as CLIP's (the fused qkv, the kernel's contiguous q, k, v, the context and
    out_proj's output)."""
    embed, table, fc1 = (groups.get(f"{CLIP}.{name}") for name in
                         ("embeddings.patch_embedding", "embeddings.position_embedding", "encoder.layers.0.mlp.fc1"))
    if embed is None or table is None or fc1 is None or table[0] < GEMMA3_TOKENS or table[0] % GEMMA3_TOKENS:
        return None             # a grid the projector's pool cannot make 256 tokens of: not read
    hidden, values = embed
    return Tower("gemma3", hidden, fc1[0], False, values, False, table[0] // GEMMA3_TOKENS, 1, table[0],
                 GEMMA3_TOKENS, CLIP_ATTENTION_WIDTHS)


def largest_item(t: Tower, release, max_model_len: int, limits: dict | None = None) -> tuple[str, int, int]:
    """(modality, patches, tokens) of the item profile_run encodes: Qwen2.5-VL's video where max_model_len
    holds more than one temporal patch of frames at the largest size, else the largest image; only
    modalities --limit-mm-per-prompt allows (get_modality_with_max_tokens over the allowed ones)."""
    limits = limits or {}
    image = ("image", t.patches, t.tokens)
    if t.wrapper not in VIDEO_TOWERS or limits.get("video") == 0:
        return image
    frames = 14 if release.at_least(0, 11, 0) else 16
    pairs = max(1, min(frames // FRAMES, max_model_len // t.tokens))
    video = ("video", pairs * t.patches, pairs * t.tokens)
    return video if pairs > 1 or limits.get("image") == 0 else image


def items(tokens: int, chunk: int, max_num_seqs: int, max_model_len: int, limit: int = ITEMS_PER_PROMPT) -> int:
    """The dummy batch's items (V1: MultiModalBudget._get_max_items with chunked prefill, the default), at most
    `limit` a prompt (the modality's --limit-mm-per-prompt)."""
    budget = max(chunk, tokens)
    per_prompt = max(1, min(limit, max_model_len // tokens))
    return max(1, min(budget // tokens, max_num_seqs * per_prompt))


def tower_peak(t: Tower, patches: int, b: int, tp: int, compiled: bool = False) -> int:
    """The tower's live set at its peak over `patches` patches on one rank. `compiled`: the model runs
    compiled with Inductor, so custom ops take their native path (a QuickGELU holds one width more)."""
    kept = b * (t.pixel_values + t.hidden * (1 + t.positions))
    attention = b * (t.attention * t.hidden // tp)
    act = QUICK_GELU_NATIVE_WIDTHS if t.quick_gelu and compiled else 1
    mlp = b * (t.hidden + (3 if t.gated else 1 + act) * t.width // tp)
    return patches * (kept + max(attention, mlp))


def inputs_bytes(t: Tower, items_: int, patches: int, b: int) -> int:
    """The dummy batch's pixel values on the GPU: every patch's values (a class token has none), in the
    model dtype, for `items_` items of `patches` patches."""
    return items_ * (patches - t.cls) * t.pixel_values * b


def term(scenario, release, chunk: int, max_num_seqs: int, lm_peak: int, inputs_kept: bool = True):
    """(added to the activation peak, its lowest, its highest, words), or None where the tower is not
    read (the caller then keeps the band's top for it). `lm_peak` is the language model's forward and
    sampler peak that the encoder pass competes with; `inputs_kept`: the runner keeps the dummy batch's
    pixel values through the language model's run (V1's profile_run; not V2's encoder runner)."""
    model, dep = scenario.model, scenario.deployment
    if not rules.v1(release):
        return None             # V0 runs the multimodal dummies inside its forward (model_runner.py): not modelled
    t = tower(model)
    if t is None:
        return None
    b = 4 if model.dtype == "fp32" else 2
    context = scenario.workload.context_tokens
    limits = dict(scenario.settings.mm_limits)
    modality, patches, tokens = largest_item(t, release, context, limits)
    if limits.get(modality) == 0:
        return 0, 0, 0, f"--limit-mm-per-prompt allows no {modality}: no encoder pass is profiled"
    n = items(tokens, chunk, max_num_seqs, context, limits.get(modality, ITEMS_PER_PROMPT))
    encoder = scenario.serving.encoder
    compiled = not scenario.settings.enforce_eager      # V1 compiles unless eager (V0 is handled apart)
    if encoder is not None and encoder.mode == "data" and dep.tp > 1:
        # --mm-encoder-tp-mode data: each rank runs the whole tower on its share of the items
        # (run_dp_sharded_mrope_vision_model, balanced by patches: 0.26.0 vllm/model_executor/models/vision.py); the
        # busiest rank binds.
        peak = tower_peak(t, -(-n // dep.tp) * patches, b, 1, compiled)
    else:
        peak = tower_peak(t, n * patches, b, dep.tp, compiled)
    kept = n * tokens * t.outputs * (model.hidden_size or 0) * b + (inputs_bytes(t, n, patches, b) if inputs_kept else 0)
    slack = int(peak * SLACK)
    added = max(peak, lm_peak + kept) - lm_peak
    high = max(peak + slack, lm_peak + kept) - lm_peak
    # The band's bottom adds nothing: --skip-mm-profiling (not an input here) skips the pass (profile_run:
    # skip_mm_profiling), as serving text-only does (the language-model-only input, which leaves no tower:
    # vllm-qwen3.6-27b-fp8-h100-util088-4k-eager-v0.27.1.log prints a 1.01 GiB overhead, the language model's).
    low = 0
    words = (f"the vision encoder's profiling pass: {n:,} {modality}{'s' if n > 1 else ''} of {tokens:,} tokens "
             f"({n * patches:,} patches of a {t.hidden:,}-wide tower) peak at {peak / (1 << 30):.2f} GiB")
    return added, low, high, words


# --- V0's multimodal profiling (issue 36) -------------------------------------------------------------------
# V0's profile_run (vllm/worker/model_runner.py _dummy_run, the same in the 0.7.0 and 0.8.3 wheels) runs no
# separate encoder pass: it makes max_num_seqs = max(1, min(max_num_seqs, max_num_batched_tokens // max_mm_tokens))
# dummy sequences (max_mm_tokens: MultiModalRegistry.get_max_multimodal_tokens, every modality's limit per prompt,
# 1 by default, times its most tokens an item at seq_len = max_model_len), the i-th of seq_len = max_num_batched_tokens
# // seqs (+1 for the first max_num_batched_tokens % seqs), each with the multimodal registry's dummy items for its
# seq_len (MultiModalProfiler.get_dummy_data, vllm/multimodal/profiling.py), and runs them through one forward: the
# model encodes the items inside it (Qwen2.5-VL's get_input_embeddings_v0: the images, merged into inputs_embeds,
# then the videos). Where a sequence's items hold more tokens than its seq_len the profiler, up to 0.8.2 (read in
# the 0.7.0, 0.7.3, 0.8.0, 0.8.1 and 0.8.2 wheels), drops them and profiles seq_len text tokens (a warning: "The context length
# (%d) of the model is too short to hold the multi-modal embeddings in the worst case"); in 0.8.3 ("The sequence
# length used for profiling (max_num_batched_tokens / max_num_seqs = %d) is too short ...", V0 only) it keeps
# them, and the language model runs over the items' whole prompt (its text is the items' pad tokens only:
# Qwen2VLDummyInputsBuilder.get_dummy_processor_inputs).
V0_FIRST_READ = (0, 7, 0)               # the first release read (MultiModalProfiler); before it, the band
V0_KEEPS_LONG_ITEMS = (0, 8, 3)         # the first release that keeps them (0.8.2 still drops them)
V0_MAX_FRAMES = 16                      # qwen2_vl.py _MAX_FRAMES_PER_VIDEO in 0.7.0-0.8.3
V0_PIXEL_BYTES = 4                      # 0.8.3 does not cast the processor's float32 pixel values before the
                                        # model (qwen2_5_vl.py _process_image_input: .type(self.visual.dtype))


@dataclass(frozen=True)
class V0Dummy:
    seqs: int            # dummy sequences
    tokens: int          # the forward's tokens over all of them
    images: int          # images encoded (one a sequence, or none where dropped)
    videos: int          # videos encoded
    video_patches: int   # patches of one video
    dropped: bool        # the items did not fit a sequence and were dropped (text only)


def _v0_video(t: Tower, max_tokens: int, videos: int = 1) -> tuple[int, int]:
    """(patches, tokens) of each dummy video whose frames fit max_tokens (qwen2_vl.py _get_max_video_frames and
    get_num_frames_with_most_features, 0.7.0-0.8.3): the most frames whose tokens fit, shared by the `videos`,
    two frames a temporal patch (an odd count padded), at most V0_MAX_FRAMES and at least one a video."""
    frames = 2 * (max_tokens // t.tokens) // videos if max_tokens >= t.tokens else 0
    frames = max(1, min(frames, V0_MAX_FRAMES))
    grid = max((frames + frames % FRAMES) // FRAMES, 1)
    return grid * t.patches, grid * t.tokens


def _v0_counts(t: Tower, limits: dict) -> tuple[int, int]:
    """(images, videos) a dummy sequence carries: its --limit-mm-per-prompt, V0's default one of each (only the
    Qwen towers take video)."""
    videos = limits.get("video", 1) if t.wrapper in VIDEO_TOWERS else 0
    return limits.get("image", 1), videos


def _v0_items(t: Tower, seq_len: int, limits: dict | None = None) -> tuple[int, int, int]:
    """(item tokens, patches of a video, tokens of a video) of one dummy sequence of seq_len: the largest images
    and, for the Qwen towers, videos whose frames fit what the images leave."""
    images, videos = _v0_counts(t, limits or {})
    if not videos:
        return images * t.tokens, 0, 0
    patches, tokens = _v0_video(t, seq_len - images * t.tokens, videos)
    return images * t.tokens + videos * tokens, patches, tokens


def v0_dummy(t: Tower, release, chunk: int, max_num_seqs: int, max_model_len: int,
             limits: dict | None = None) -> V0Dummy:
    """The dummy batch V0's _dummy_run builds (see above) for max_num_batched_tokens `chunk`."""
    limits = limits or {}
    most = _v0_items(t, max_model_len, limits)[0]
    per_seq_images, per_seq_videos = _v0_counts(t, limits)
    seqs = max(1, min(max_num_seqs, chunk // most)) if most else max(1, max_num_seqs)
    keeps = release.at_least(*V0_KEEPS_LONG_ITEMS)
    tokens = images = videos = 0
    video_patches = 0
    dropped = False
    for i in range(seqs):
        seq_len = chunk // seqs + (i < chunk % seqs)
        item_tokens, video_patches, video_tokens = _v0_items(t, seq_len, limits)
        if item_tokens > seq_len and not keeps:
            dropped = True
            tokens += seq_len
            continue
        tokens += max(seq_len, item_tokens)
        images += per_seq_images
        videos += per_seq_videos if video_tokens else 0
    return V0Dummy(seqs, tokens, images, videos, video_patches, dropped)


def term_v0(scenario, release, chunk: int, max_num_seqs: int, lm_peak: int, forward):
    """V0's profiling run for a read tower: (added to the activation peak, its lowest, its highest, words), or
    None where the tower is not read. `forward(tokens)` is the language model's forward peak over that many
    tokens (profile.forward_peak); `lm_peak` what the caller counts for the run over `chunk` tokens.
    The encoder's batches run inside the forward while inputs_embeds (tokens x hidden) is held; the dummy
    items' pixel values (float32, V0_PIXEL_BYTES) stay on the GPU in the model input through the forward."""
    model, dep = scenario.model, scenario.deployment
    t = tower(model)
    if t is None or not release.at_least(*V0_FIRST_READ):
        return None
    b = 4 if model.dtype == "fp32" else 2
    d = v0_dummy(t, release, chunk, max_num_seqs, scenario.workload.context_tokens, dict(scenario.settings.mm_limits))
    lm = forward(d.tokens)
    pixels = (d.images * (t.patches - t.cls) + d.videos * d.video_patches) * t.pixel_values * V0_PIXEL_BYTES
    embeds = d.tokens * (model.hidden_size or 0) * b
    encoder = max(tower_peak(t, d.images * t.patches, b, dep.tp), tower_peak(t, d.videos * d.video_patches, b, dep.tp))
    peak = max(lm, encoder + embeds) + pixels
    added = max(0, peak - lm_peak)
    # The band's bottom: where the items are dropped, the text's run alone.
    slack = int(encoder * SLACK)
    high = max(added, max(lm, encoder + slack + embeds) + pixels - lm_peak)
    if d.dropped:
        words = (f"V0's multimodal dummies do not fit its {d.seqs:,} profiling sequence{'s' if d.seqs > 1 else ''} "
                 f"of {chunk:,} tokens: vLLM {release} profiles text only")
    else:
        words = (f"V0's profiling run: {d.seqs:,} dummy sequence{'s' if d.seqs > 1 else ''} of {d.tokens:,} tokens "
                 f"with {d.images:,} image{'s' if d.images > 1 else ''}"
                 + (f" and {d.videos:,} video{'s' if d.videos > 1 else ''}" if d.videos else "")
                 + f" encoded inside the forward (peak {peak / (1 << 30):.2f} GiB)")
    return added, 0, high, words
