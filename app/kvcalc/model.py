"""A model as the cache sees it: a tuple of layers plus what sizing needs beside them, and what
its config.json says of its tensors, its vision tower and its MTP layers, read once where the
config is read (readers/) into the typed records below."""

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

from .errors import InputError
from .layers import Layer


@dataclass(frozen=True)
class Tensors:
    """`copies` tensors of rows x cols (a vector has cols 1), `active` of them used per token."""
    name: str            # the module's name in the checkpoint (model.layers.3.self_attn.q_proj)
    role: str            # embed, head, linear, expert, router, vector, vision (tower and projector)
    rows: int
    cols: int = 1
    copies: int = 1
    active: int = 1
    fp32: bool = False   # stored in float32 whatever the checkpoint's dtype (DeepSeek's router bias)

    @property
    def elements(self) -> int:
        return self.rows * self.cols * self.copies


@dataclass(frozen=True)
class VisionTower:
    """A config's vision tower and projector (readers/vision_params), as vLLM builds them."""
    groups: tuple[tuple[str, int, int], ...]   # (name, rows, cols); () without a vision_config
    unread: InputError | None                  # why the tower is not counted, where it is not
    wrapper: str                               # the config's model_type (which tower)
    tp_splits: tuple[tuple[str, str, int], ...]   # (vision_config key, what, count) split over tp
    unsplit_heads: int | None                  # a SigLIP's heads, kept whole where tp does not divide them
    splits_unread: InputError | None = None    # why those two are not read (a key they need refused)


@dataclass(frozen=True)
class AddedLayers:
    """`count` more decoder layers after a config's last (its MTP layers are built so): the
    config with `count` more layers, less the config, counted once."""
    count: int
    params: int | None = None            # the parameters they add (an unquantized checkpoint)
    quantized_bytes: int | None = None   # their bytes as the quantization_config stores them
    quantized_rule: str | None = None
    no_layer_count: bool = False         # the config gives no num_hidden_layers to add to
    unread: InputError | None = None     # why they are not counted


@dataclass(frozen=True)
class MtpConfig:
    """What a config's language model says of its multi-token-prediction layers, as written
    (serving/draft.py judges it): its keys, the MTP layer counts and the widths they need."""
    prefix: str                  # "text_config." where the language model's keys sit there, else ""
    model_type: str
    keys: frozenset[str]         # the language model's config keys
    nextn_layers: object         # num_nextn_predict_layers (DeepSeek, GLM), as written
    mtp_layers: object           # mtp_num_hidden_layers (Qwen3.5, Qwen3-Next), as written
    hidden_size: object
    dedicated_embeddings: bool   # mtp_use_dedicated_embeddings
    conv_kernel: object          # linear_conv_kernel_dim (a Gated DeltaNet's)
    added: AddedLayers | None    # the layers the MTP count adds, where it is a count of 1 to 16


@dataclass(frozen=True)
class ConfigShapes:
    """What the config.json a model was read from says beyond its layers, read once where the
    config is read: its tensors by name (which split the weights by rank), how its
    quantization_config prices each, its vision tower and its MTP layers."""
    tensors: tuple[Tensors, ...]            # () where the parameters are not counted by tensor
    tensors_unread: InputError | None       # why they are not counted, where the count was refused
    quantized: bool                         # the config has a quantization_config
    tensor_bytes: tuple[int, ...] | None    # each of `tensors` as the quantization_config stores it
    quantized_rule: str | None
    quantized_unread: InputError | None     # why the quantization_config does not price them
    vision: VisionTower
    mtp: MtpConfig
    rope_cache: tuple[int, bool] | None = None   # vLLM's rotary cache: (elements, M-RoPE) (quantized_bytes.rope_cache_elements)


class LayerCounts(Counter):
    """Layers and how many of each (a model's, or one pipeline stage's), with the memo of what
    sizing derives from them: the searches ask for the same rows dozens of times per update."""

    def __init__(self, layers=()):
        super().__init__(layers)
        self.memo = {}


@dataclass(frozen=True)
class Model:
    name: str
    layers: tuple[Layer, ...]
    dtype: str = "bf16"                      # the serving dtype: default KV precision
    kv_dtype: str | None = None              # the checkpoint's own KV precision (a kv_cache_scheme), when set
    weights_dtype: str | None = "bf16"       # None when the checkpoint's bits per weight vary
    attention_heads: int | None = None       # query heads, which tensor parallelism must divide
    params: int | None = None
    active_params: int | None = None
    max_context_tokens: int | None = None    # max_position_embeddings
    hidden_size: int | None = None           # the residual stream's width (engines' activation estimates)
    architecture: str | None = None          # config.json architectures[0]: engines special-case some
    vocab_size: int | None = None            # the logits' width (llama.cpp's compute buffer)
    mlp_size: int | None = None              # intermediate_size: the dense MLP's width
    moe_mlp_size: int | None = None          # moe_intermediate_size: one expert's width
    experts_per_token: int | None = None     # num_experts_per_tok
    experts: int | None = None               # routed experts per MoE layer
    multimodal: bool = False                 # a vision or audio encoder beside the language model
    vision_shape: tuple[int, int] | None = None  # vision_config's (num_hidden_layers, hidden_size)
    checkpoint_bytes: int | None = None      # the published checkpoint's exact tensor bytes, where sourced
    config_weights_bytes: int | None = None  # a quantized checkpoint's bytes computed from its config's shapes
    config_weights_rule: str | None = None   # how (what is quantized, what stays 16-bit), in words
    config_weights_estimated: bool = False   # config_weights_bytes holds a part from a rounded count (a tower)
    config_weights_typed: str | None = None  # the typed weights-dtype config_weights_bytes prices (None: the config's own)
    hf_repo: str | None = None
    source: str | None = None
    notes: tuple[str, ...] = field(default=())
    # For MLA models: (qk_nope + qk_rope, v_head_dim) per head, the decompressed K and V that
    # HF transformers caches instead of the latent.
    mla_head_dims: tuple[int, int] | None = None
    # A looped model's caches per physical layer (IQuest LoopCoder's loop_num): `layers` holds every
    # loop's, in vLLM's order (loop x num_hidden_layers + layer), so they are not pipeline stages.
    loop_caches: int = 1
    # What its config.json says beyond its layers (None for a model not read from one). Not
    # compared: a model is its shape and figures; the record rides along.
    shapes: ConfigShapes | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if not self.layers:
            raise InputError("layers", "the model has no layers")

    def past_limit(self, context_tokens: int) -> bool:
        """Whether a context is longer than the model's max_position_embeddings (when known)."""
        return bool(self.max_context_tokens) and context_tokens > self.max_context_tokens

    def layer_counts(self) -> LayerCounts:
        return self._layer_counts

    # Derived once per model (cached_property writes past the frozen dataclass's __setattr__):
    # every update asks for these, and layers never change.
    @cached_property
    def _layer_counts(self) -> LayerCounts:
        return LayerCounts(self.layers)

    @cached_property
    def memo(self) -> dict:
        """What other modules derive from this model once (stages, attention variants)."""
        return {}

    def check_parallel(self, tp: int, pp: int) -> None:
        if pp > 1 and self.loop_caches > 1:
            raise InputError("pp", f"each of this looped model's layers keeps {self.loop_caches} caches on its own "
                                   "stage; pipeline stages of a looped model are not modelled: use pp 1")
        if pp > len(self.layers):
            raise InputError("pp", f"pp={pp} is more than the model's {len(self.layers)} layers")
        try:
            self._check_tp(tp)
        except InputError as e:
            near = self.valid_tp_near(tp)
            hint = f"; the nearest that work: {' or '.join(map(str, near))}" if near else ""
            raise InputError(e.field, e.message + hint) from None

    def _check_tp(self, tp: int) -> None:
        if self.attention_heads and self.attention_heads % tp:
            raise InputError("tp", f"tp={tp} does not divide the model's {self.attention_heads} "
                                   f"attention heads (vLLM and SGLang require it)")
        for layer in self.layer_counts():
            layer.check_tp(tp)

    def valid_tp_near(self, tp: int) -> list[int]:
        """The closest tensor-parallel sizes below and above `tp` that this model can be split by."""
        def valid(n: int) -> bool:
            try:
                self._check_tp(n)
            except InputError:
                return False
            return True
        below = next((n for n in range(tp - 1, 0, -1) if valid(n)), None)
        above = next((n for n in range(tp + 1, 4 * tp + 2) if valid(n)), None)
        return [n for n in (below, above) if n is not None]

    def stages(self, pp: int) -> list[LayerCounts]:
        """Layers of each pipeline stage, as vLLM's get_pp_indices splits them: an even share
        each, the remainder going one layer apiece to the stages before the last."""
        memo = self.memo
        if pp in memo:
            return memo[pp]
        n = len(self.layers)
        sizes = [n // pp] * pp
        for i in range(2, n % pp + 2):
            sizes[-i] += 1
        out, start = [], 0
        for size in sizes:
            out.append(LayerCounts(self.layers[start:start + size]))
            start += size
        memo[pp] = out
        return out

    def stage_groups(self, pp: int) -> list[tuple[LayerCounts, int]]:
        """The distinct pipeline stages and how many GPUs' worth of each: uniform models
        repeat one or two stages many times, and limits only need each once."""
        memo = self.memo
        key = ("groups", pp)
        if key not in memo:
            counts: dict = {}
            first: dict = {}
            for stage in self.stages(pp):
                identity = frozenset(stage.items())
                counts[identity] = counts.get(identity, 0) + 1
                first.setdefault(identity, stage)
            memo[key] = [(first[identity], n) for identity, n in counts.items()]
        return memo[key]

