"""The vision tower and projector of a multimodal wrapper, counted from its vision_config the way
transformers builds the modules.

A wrapper config (architectures ...ForConditionalGeneration with a vision_config) loads the
tower's weights beside the language model's, so they take GPU memory too. These towers are known:
- Qwen2.5-VL's (Qwen2_5_VisionTransformerPretrainedModel): a Conv3d patch embedding without bias,
  `depth` blocks of two RMSNorms (weight only), a biased fused qkv and proj, and a gated SiLU MLP
  (gate_proj, up_proj, down_proj, all biased), then the merger: an RMSNorm (ln_q) over one patch
  and two biased linears on spatial_merge_size^2 patches side by side. No position table (2D
  rotary positions). Its wrapper config is flat in the original checkpoints (the language model's
  keys beside vision_config) and nested under text_config when transformers 4.53 on re-saves it.
- Qwen3-VL's (Qwen3VLVisionModel; Qwen3.5 and 3.6 reuse it without the DeepStack mergers): a
  Conv3d patch embedding with bias, a learned position table, `depth` pre-norm blocks (LayerNorm,
  fused qkv, proj, a biased two-layer MLP), the patch merger (LayerNorm over one patch, then two
  biased linears on spatial_merge_size^2 patches side by side) and, for Qwen3-VL, one more merger
  per deepstack_visual_indexes entry with its LayerNorm over the merged width.
- Qwen2-VL's (Qwen2VisionTransformerPretrainedModel; vLLM 0.10.2 qwen2_vl.py Qwen2VisionTransformer):
  a Conv3d patch embedding without bias, `depth` blocks of two LayerNorms (weight and bias), a
  biased fused qkv and proj, and a biased two-layer QuickGELU MLP of embed_dim x mlp_ratio, then
  the merger: a LayerNorm (ln_q) over one patch and two biased linears on spatial_merge_size^2
  patches side by side, the second to the text width (vision_config.hidden_size). Its config.json
  is flat, as Qwen2.5-VL's original one.
- CLIP's (LLaVA: a clip_vision_model vision_config), as vLLM builds it (0.10.2 llava.py
  init_vision_tower_for_llava, clip.py CLIPVisionTransformer): the class embedding, a Conv2d patch
  embedding without bias, a position table of (image_size / patch_size)^2 + 1 rows, the pre-LayerNorm,
  and only the encoder layers up to vision_feature_layer (_get_num_hidden_layers: -2 of 24 builds
  23), each two LayerNorms, a biased fused qkv and out_proj, a biased fc1 / fc2; no post-LayerNorm
  (require_post_norm=False). Then LlavaMultiModalProjector: linear_1 (vision width to text width)
  and linear_2 (text width to text width), biased where multimodal_projector_bias (LlavaConfig's
  default true). A quantization_config leaves them in 16 bits where modules_to_not_convert names
  them (AWQ: vllm/model_executor/layers/quantization/awq.py is_layer_skipped_awq), as every
  "vision" group here is priced (readers/quantized_bytes).
- SigLIP's (SiglipVisionModel, Gemma 3): a Conv2d patch embedding with bias, a position table of
  (image_size / patch_size)^2 rows, encoder layers (two LayerNorms, biased q, k, v, out and
  fc1, fc2), a post LayerNorm and, where vision_use_head, the attention-pooling head; Gemma 3's
  projector adds mm_input_projection_weight (vision width x text width) and its RMSNorm.
Any other vision_config is refused: a parameter count that leaves a tower out sizes the weights low.
Each function returns (name, rows, cols) groups; params.py turns them into its Tensors.
"""

from .config_fields import ConfigFields
from ..errors import InputError

MAX_WIDTH = 1 << 24
MAX_DEPTH = 10_000

# The wrapper's model_type -> the tower its modeling code builds.
QWEN3_VL_TOWER = {"qwen3_vl": True, "qwen3_vl_moe": True, "qwen3_5": False, "qwen3_5_moe": False}
# transformers Qwen2_5_VLVisionConfig's defaults for the keys the original config.json leaves out
# (it spells the channels in_chans, which the class ignores: in_channels defaults to 3).
QWEN2_5_VL_DEFAULTS = {"in_channels": 3, "patch_size": 14, "temporal_patch_size": 2, "spatial_merge_size": 2}
# transformers Qwen2VLVisionConfig's defaults (the published config.json spells the channels in_chans,
# which the class ignores: in_channels defaults to 3).
QWEN2_VL_DEFAULTS = {"depth": 32, "embed_dim": 1280, "mlp_ratio": 4, "num_heads": 16, "in_channels": 3,
                     "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}
# transformers CLIPVisionConfig's defaults, for a key a LLaVA vision_config leaves out (LlavaConfig
# builds the dict through CONFIG_MAPPING[model_type]), and LlavaConfig's own defaults.
CLIP_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
                 "num_channels": 3, "image_size": 224, "patch_size": 32}
LLAVA_FEATURE_LAYER = -2
# transformers Siglip2VisionConfig's defaults (NaFlex: num_patches positions, no image_size).
SIGLIP2_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_channels": 3,
                    "num_attention_heads": 12, "num_patches": 256}
# transformers SiglipVisionConfig's defaults, which apply to a key Gemma 3's vision_config leaves out.
SIGLIP_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_channels": 3,
                   "image_size": 224, "patch_size": 16}


def vision_groups(cfg: dict, text_hidden: int) -> list:
    """The (name, rows, cols) groups of cfg's vision tower and projector; [] for a text-only config."""
    vision = cfg.get("vision_config")
    if vision is None:
        return []
    if not isinstance(vision, dict):
        raise InputError("vision_config", "expected an object")
    wrapper = str(cfg.get("model_type") or "")
    c = ConfigFields(vision, "vision_config.", maximum=MAX_WIDTH,
                     missing="is missing from config.json, and the vision tower's parameter count needs it")
    if wrapper in QWEN3_VL_TOWER:
        return _qwen3_vl(c, deepstack=QWEN3_VL_TOWER[wrapper])
    if wrapper == "qwen2_5_vl":
        return _qwen2_5_vl(c)
    if wrapper == "qwen2_vl":
        return _qwen2_vl(c)
    if wrapper == "gemma3":
        return _siglip(c) + _gemma3_projector(c, text_hidden)
    if wrapper == "llava" and vision.get("model_type") == "clip_vision_model":
        return _llava_clip(cfg, c, text_hidden)
    if wrapper == "phi4-siglip":
        return _phi4_siglip2(cfg, c, text_hidden)
    raise InputError("vision_config", f"the vision tower of a {wrapper or 'unnamed'!r} wrapper is not counted here "
                                      "(only Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5, Gemma 3's and Phi-4's SigLIP "
                                      "and LLaVA's CLIP towers); give the parameter count or the weights' size")


# What vLLM splits over tp in each tower under mm_encoder_tp_mode "weights", each a divide() that
# asserts divisibility when the model is built (vllm/model_executor/models/qwen2_5_vl.py
# Qwen2_5_VisionAttention: num_attention_heads_per_partition = dist_utils.divide(num_heads, tp_size);
# its MLP a MergedColumnParallelLinear of [intermediate_size] x 2; qwen3_vl.py's blocks reuse that
# attention with a ColumnParallelLinear MLP; Qwen3.5 reuses Qwen3-VL's tower). The Qwen towers call
# is_vit_use_data_parallel() without their head count, so the fallback to data parallel it offers
# other towers does not apply (vLLM issue #55517: "16 is not divisible by 3"; PRs #55587 and
# #57119, open, would pass it). Gemma 3's SigLIP (siglip.py SiglipEncoderLayer) instead builds an
# unsplit attention when its heads do not divide tp: no refusal, see encoder.py. Audio towers are
# not counted here, and set no limit of their own in vLLM's Qwen2-Audio (qwen2_audio.py builds
# transformers' Qwen2AudioEncoder, plain linears on every rank): its 20 heads do not stop tp 8.
# wrapper model_type -> (config key, what it counts, transformers' default) in the order vLLM builds them.
TP_SPLITS = {
    **{wrapper: (("num_heads", "attention heads", None), ("intermediate_size", "MLP channels", None))
       for wrapper in (*QWEN3_VL_TOWER, "qwen2_5_vl")},
}
# Qwen2-VL (0.10.2 qwen2_vl.py Qwen2VisionAttention): num_attention_heads_per_partition = divide(num_heads, tp).
TP_SPLITS["qwen2_vl"] = (("num_heads", "attention heads", QWEN2_VL_DEFAULTS["num_heads"]),)
# Phi-4-reasoning-vision (0.34.0 phi4siglip.py builds lfm2_siglip2.py's Siglip2Model, whose attention asserts
# num_heads % tp == 0 before it splits them: Siglip2VisionConfig's default 12).
TP_SPLITS["phi4-siglip"] = (("num_attention_heads", "attention heads", SIGLIP2_DEFAULTS["num_attention_heads"]),)
UNSPLIT_ATTENTION = {"gemma3": ("num_attention_heads", "attention heads", 12)}   # SiglipVisionConfig's default


def tp_splits(cfg: dict) -> tuple[tuple[str, str, int], ...]:
    """(vision_config key, what it counts, its value) for each width vLLM splits over tp in cfg's
    tower under the "weights" mode, each of which tp must divide; () where none is known."""
    vision = cfg.get("vision_config") if isinstance(cfg, dict) else None
    spec = TP_SPLITS.get(str(cfg.get("model_type") or "")) if isinstance(vision, dict) else None
    if spec is None:
        return ()
    c = ConfigFields(vision, "vision_config.", maximum=MAX_WIDTH,
                     missing="is missing from config.json, and the vision tower's split over tp needs it")
    defaults = QWEN2_5_VL_DEFAULTS
    return tuple((key, what, c.int(key, default if default is not None else defaults.get(key)))
                 for key, what, default in spec)


def unsplit_attention_heads(cfg: dict) -> int | None:
    """The head count of a tower whose attention vLLM keeps whole on every rank when tp does not
    divide it (SigLIP), or None."""
    vision = cfg.get("vision_config") if isinstance(cfg, dict) else None
    spec = UNSPLIT_ATTENTION.get(str(cfg.get("model_type") or "")) if isinstance(vision, dict) else None
    if spec is None:
        return None
    key, _, default = spec
    return ConfigFields(vision, "vision_config.", maximum=MAX_WIDTH, missing="").int(key, default)


def _linear(name, rows, cols):
    return [(name, rows, cols), (name + ".bias", rows, 1)]


def _layer_norm(name, width):
    return [(name + ".weight", width, 1), (name + ".bias", width, 1)]


def _qwen3_vl(c: ConfigFields, deepstack: bool) -> list:
    hidden, width = c.int("hidden_size"), c.int("intermediate_size")
    depth = c.int("depth", maximum=MAX_DEPTH)
    patch, frames = c.int("patch_size"), c.int("temporal_patch_size")
    channels = c.int("in_channels", 3)
    merged = hidden * c.int("spatial_merge_size") ** 2
    out = c.int("out_hidden_size")
    groups = _linear("visual.patch_embed.proj", hidden, channels * frames * patch * patch)
    groups.append(("visual.pos_embed", c.int("num_position_embeddings"), hidden))
    block = "visual.blocks"
    for i in range(depth):
        name = f"{block}.{i}"
        groups += _layer_norm(name + ".norm1", hidden) + _layer_norm(name + ".norm2", hidden)
        groups += _linear(name + ".attn.qkv", 3 * hidden, hidden) + _linear(name + ".attn.proj", hidden, hidden)
        groups += _linear(name + ".mlp.linear_fc1", width, hidden) + _linear(name + ".mlp.linear_fc2", hidden, width)
    groups += _merger("visual.merger", hidden, merged, out)
    if deepstack:
        indexes = c.cfg.get("deepstack_visual_indexes", [8, 16, 24])   # Qwen3VLVisionConfig's default
        if not isinstance(indexes, list) or len(indexes) > depth:
            raise InputError("vision_config.deepstack_visual_indexes", f"expected a list of at most {depth} "
                                                                       "block indices")
        for i in range(len(indexes)):
            groups += _merger(f"visual.deepstack_merger_list.{i}", merged, merged, out)
    return groups


def _qwen2_5_vl(c: ConfigFields) -> list:
    d = QWEN2_5_VL_DEFAULTS
    hidden, width = c.int("hidden_size"), c.int("intermediate_size")
    depth = c.int("depth", maximum=MAX_DEPTH)
    patch, frames = c.int("patch_size", d["patch_size"]), c.int("temporal_patch_size", d["temporal_patch_size"])
    channels = c.int("in_channels", d["in_channels"])
    merged = hidden * c.int("spatial_merge_size", d["spatial_merge_size"]) ** 2
    out = c.int("out_hidden_size")
    groups = [("visual.patch_embed.proj", hidden, channels * frames * patch * patch)]   # Conv3d, bias=False
    for i in range(depth):
        name = f"visual.blocks.{i}"
        groups += [(name + ".norm1.weight", hidden, 1), (name + ".norm2.weight", hidden, 1)]
        groups += _linear(name + ".attn.qkv", 3 * hidden, hidden) + _linear(name + ".attn.proj", hidden, hidden)
        groups += _linear(name + ".mlp.gate_proj", width, hidden) + _linear(name + ".mlp.up_proj", width, hidden)
        groups += _linear(name + ".mlp.down_proj", hidden, width)
    groups.append(("visual.merger.ln_q.weight", hidden, 1))
    return groups + _linear("visual.merger.mlp.0", merged, merged) + _linear("visual.merger.mlp.2", out, merged)


def _qwen2_vl(c: ConfigFields) -> list:
    d = QWEN2_VL_DEFAULTS
    embed = c.int("embed_dim", d["embed_dim"])
    ratio = c.cfg.get("mlp_ratio", d["mlp_ratio"])
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 64:
        raise InputError("vision_config.mlp_ratio", f"expected a positive number, got {ratio!r}")
    width = int(embed * ratio)          # Qwen2VisionBlock: mlp_hidden_dim = int(dim * mlp_ratio)
    depth = c.int("depth", d["depth"], maximum=MAX_DEPTH)
    patch, frames = c.int("patch_size", d["patch_size"]), c.int("temporal_patch_size", d["temporal_patch_size"])
    channels = c.int("in_channels", d["in_channels"])
    merged = embed * c.int("spatial_merge_size", d["spatial_merge_size"]) ** 2
    out = c.int("hidden_size")          # the merger's output: the language model's width
    groups = [("visual.patch_embed.proj", embed, channels * frames * patch * patch)]   # Conv3d, bias=False
    for i in range(depth):
        name = f"visual.blocks.{i}"
        groups += _layer_norm(name + ".norm1", embed) + _layer_norm(name + ".norm2", embed)
        groups += _linear(name + ".attn.qkv", 3 * embed, embed) + _linear(name + ".attn.proj", embed, embed)
        groups += _linear(name + ".mlp.fc1", width, embed) + _linear(name + ".mlp.fc2", embed, width)
    groups += _layer_norm("visual.merger.ln_q", embed)
    return groups + _linear("visual.merger.mlp.0", merged, merged) + _linear("visual.merger.mlp.2", out, merged)


def llava_feature_layers(cfg: dict, layers: int) -> int:
    """The CLIP encoder layers vLLM builds for a LLaVA wrapper: up to the deepest vision_feature_layer
    (0.10.2 llava.py _get_num_hidden_layers / _get_layer_index: a negative index i builds layers + i + 1)."""
    feature = cfg.get("vision_feature_layer", LLAVA_FEATURE_LAYER)
    indexes = feature if isinstance(feature, list) else [feature]
    if not indexes or not all(isinstance(i, int) and not isinstance(i, bool) and -layers <= i <= layers
                              for i in indexes):
        raise InputError("vision_feature_layer", f"expected a layer index of the {layers}-layer vision tower (or a "
                                                 f"list of them), got {feature!r}")
    return max(layers + i + 1 if i < 0 else i for i in indexes)


def _llava_clip(cfg: dict, c: ConfigFields, text_hidden: int) -> list:
    d = CLIP_DEFAULTS
    hidden, width = c.int("hidden_size", d["hidden_size"]), c.int("intermediate_size", d["intermediate_size"])
    layers = c.int("num_hidden_layers", d["num_hidden_layers"], maximum=MAX_DEPTH)
    channels, patch = c.int("num_channels", d["num_channels"]), c.int("patch_size", d["patch_size"])
    side = c.int("image_size", d["image_size"])
    if side % patch:
        raise InputError("vision_config.image_size", f"{side:,} is not a multiple of patch_size {patch:,}")
    base = "vision_tower.vision_model"
    groups = [(base + ".embeddings.class_embedding", hidden, 1),
              (base + ".embeddings.patch_embedding", hidden, channels * patch * patch),      # Conv2d, bias=False
              (base + ".embeddings.position_embedding", (side // patch) ** 2 + 1, hidden)]
    groups += _layer_norm(base + ".pre_layrnorm", hidden)
    for i in range(llava_feature_layers(cfg, layers)):
        name = f"{base}.encoder.layers.{i}"
        groups += _layer_norm(name + ".layer_norm1", hidden) + _layer_norm(name + ".layer_norm2", hidden)
        groups += _linear(name + ".self_attn.qkv_proj", 3 * hidden, hidden)
        groups += _linear(name + ".self_attn.out_proj", hidden, hidden)
        groups += _linear(name + ".mlp.fc1", width, hidden) + _linear(name + ".mlp.fc2", hidden, width)
    bias = cfg.get("multimodal_projector_bias", True) is not False
    for name, rows, cols in (("multi_modal_projector.linear_1", text_hidden, hidden),
                             ("multi_modal_projector.linear_2", text_hidden, text_hidden)):
        groups += _linear(name, rows, cols) if bias else [(name, rows, cols)]
    return groups


def _merger(name, norm_width, merged, out):
    return _layer_norm(name + ".norm", norm_width) + _linear(name + ".linear_fc1", merged, merged) + \
        _linear(name + ".linear_fc2", out, merged)


def _siglip(c: ConfigFields) -> list:
    d = SIGLIP_DEFAULTS
    hidden, width = c.int("hidden_size", d["hidden_size"]), c.int("intermediate_size", d["intermediate_size"])
    layers = c.int("num_hidden_layers", d["num_hidden_layers"], maximum=MAX_DEPTH)
    channels, patch = c.int("num_channels", d["num_channels"]), c.int("patch_size", d["patch_size"])
    side = c.int("image_size", d["image_size"])
    if side % patch:
        raise InputError("vision_config.image_size", f"{side:,} is not a multiple of patch_size {patch:,}")
    base = "vision_tower.vision_model"
    groups = _linear(base + ".embeddings.patch_embedding", hidden, channels * patch * patch)
    groups.append((base + ".embeddings.position_embedding", (side // patch) ** 2, hidden))
    for i in range(layers):
        groups += _siglip_layer(f"{base}.encoder.layers.{i}", hidden, width)
    groups += _layer_norm(base + ".post_layernorm", hidden)
    if c.flag("vision_use_head", True):
        # SiglipMultiheadAttentionPoolingHead: a probe, torch's MultiheadAttention, a LayerNorm, an MLP
        head = base + ".head"
        groups.append((head + ".probe", hidden, 1))
        groups += _linear(head + ".attention.in_proj", 3 * hidden, hidden)
        groups += _linear(head + ".attention.out_proj", hidden, hidden)
        groups += _layer_norm(head + ".layernorm", hidden)
        groups += _linear(head + ".mlp.fc1", width, hidden) + _linear(head + ".mlp.fc2", hidden, width)
    return groups


def _phi4_siglip2(cfg: dict, c: ConfigFields, text_hidden: int) -> list:
    """Phi-4-reasoning-vision's tower as vLLM 0.34.0 builds it (phi4siglip.py): a NaFlex SigLIP2
    (lfm2_siglip2.py Siglip2Model) cut at its second-to-last layer (num_hidden_layers_override =
    layers - 1), no post-norm, its patches a linear of channels x patch^2 (patch_size 16 where the
    config leaves it out) and a table of num_patches positions; then LLaVA's two-layer projector from
    mm_hidden_size to the text width."""
    d = SIGLIP2_DEFAULTS
    hidden, width = c.int("hidden_size", d["hidden_size"]), c.int("intermediate_size", d["intermediate_size"])
    layers = c.int("num_hidden_layers", d["num_hidden_layers"], maximum=MAX_DEPTH)
    channels, patch = c.int("num_channels", d["num_channels"]), c.int("patch_size", 16)
    positions = c.int("num_patches", d["num_patches"])
    base = "vision_tower.vision_model"
    groups = _linear(base + ".embeddings.patch_embedding", hidden, channels * patch * patch)
    groups.append((base + ".embeddings.position_embedding", positions, hidden))
    for i in range(max(0, layers - 1)):
        groups += _siglip_layer(f"{base}.encoder.layers.{i}", hidden, width)
    mm_hidden = ConfigFields(cfg, "", maximum=MAX_WIDTH, missing="").int("mm_hidden_size", hidden)
    return groups + _linear("multi_modal_projector.linear_1", text_hidden, mm_hidden) + \
        _linear("multi_modal_projector.linear_2", text_hidden, text_hidden)


def _siglip_layer(name, hidden, width):
    groups = _layer_norm(name + ".layer_norm1", hidden) + _layer_norm(name + ".layer_norm2", hidden)
    for part in ("q_proj", "k_proj", "v_proj", "out_proj"):
        groups += _linear(f"{name}.self_attn.{part}", hidden, hidden)
    return groups + _linear(name + ".mlp.fc1", width, hidden) + _linear(name + ".mlp.fc2", hidden, width)


def _gemma3_projector(c: ConfigFields, text_hidden: int) -> list:
    # Gemma3MultiModalProjector: one weight matrix (no bias) and the soft-embedding RMSNorm.
    hidden = c.int("hidden_size", SIGLIP_DEFAULTS["hidden_size"])
    return [("multi_modal_projector.mm_input_projection_weight", hidden, text_hidden),
            ("multi_modal_projector.mm_soft_emb_norm", hidden, 1)]
