"""The typed ConfigShapes read once from a config for the stages past the layers: its tensors and
their quantized bytes (experts), its vision tower (serving/encoder) and its MTP layers
(serving/draft)."""

from ..errors import InputError
from ..model import AddedLayers, ConfigShapes, MtpConfig, VisionTower
from .params import count_params
from .quantized_bytes import has_quantization, quantized_weights, rope_cache_elements
from .vision_params import tp_splits, unsplit_attention_heads, vision_groups


def config_shapes(cfg: dict, text_hidden: int) -> ConfigShapes:
    """What the sizing past the layers needs of a config, read here once so that no later stage
    reads the config again: its tensors by name and their quantized bytes (experts.py splits the
    weights by rank with them), its vision tower (serving/encoder.py), its MTP layers
    (serving/draft.py). What cannot be read is kept as the refusal, for the stage that needs it."""
    try:
        counted, tensors_unread = count_params(cfg), None
    except InputError as e:
        counted, tensors_unread = None, e
    tensors = counted.tensors if counted is not None else ()
    quantized = has_quantization(cfg)
    tensor_bytes = rule = quantized_unread = priced = None
    if quantized and tensors:
        try:
            priced = quantized_weights(cfg, counted)
            tensor_bytes, rule = priced.group_bytes, priced.rule
        except InputError as e:
            quantized_unread = e
    return ConfigShapes(tensors, tensors_unread, quantized, tensor_bytes, rule, quantized_unread,
                        _vision_tower(cfg, text_hidden), _mtp_config(cfg, counted, priced), rope_cache_elements(cfg))


def _vision_tower(cfg: dict, text_hidden: int) -> VisionTower:
    try:
        groups, unread = tuple(vision_groups(cfg, text_hidden)), None
    except InputError as e:
        groups, unread = (), e
    try:
        splits, heads, splits_unread = tp_splits(cfg), unsplit_attention_heads(cfg), None
    except InputError as e:
        splits, heads, splits_unread = (), None, e
    return VisionTower(groups, unread, str(cfg.get("model_type") or ""), splits, heads, splits_unread)


def _mtp_config(cfg: dict, counted=None, priced=None) -> MtpConfig:
    """The language model's MTP keys, and the decoder layers its MTP count adds, counted as the
    config with that many more layers less the config (in its quantization_config's format)."""
    inner = cfg.get("text_config")
    text, prefix = (inner, "text_config.") if isinstance(inner, dict) else (cfg, "")
    model_type = str(text.get("model_type") or cfg.get("model_type") or "")
    key = next((k for k in ("num_nextn_predict_layers", "mtp_num_hidden_layers") if k in text), None)
    n = text.get(key) if key else None
    added = _added_layers(cfg, text, n, counted, priced) if isinstance(n, int) and not isinstance(n, bool) and 0 < n <= 16 else None
    return MtpConfig(prefix, model_type, frozenset(text), text.get("num_nextn_predict_layers"),
                     text.get("mtp_num_hidden_layers"), text.get("hidden_size"),
                     bool(text.get("mtp_use_dedicated_embeddings")), text.get("linear_conv_kernel_dim"), added)


def _added_layers(cfg: dict, text: dict, n: int, counted, priced) -> AddedLayers:
    """`counted` and `priced`: the config's own count and quantized bytes where already made."""
    layers = text.get("num_hidden_layers")
    if not isinstance(layers, int):
        return AddedLayers(n, no_layer_count=True)
    longer = dict(text, num_hidden_layers=layers + n)
    if isinstance(text.get("layer_types"), list):
        longer["layer_types"] = list(text["layer_types"]) + ["full_attention"] * n
    extended = dict(cfg, text_config=longer) if text is not cfg else longer
    try:
        if has_quantization(cfg):
            base = priced or quantized_weights(cfg)
            return AddedLayers(n, quantized_bytes=quantized_weights(extended).bytes - base.bytes,
                               quantized_rule=base.rule)
        return AddedLayers(n, params=count_params(extended).total - (counted or count_params(cfg)).total)
    except InputError as e:
        return AddedLayers(n, unread=e)
