"""Speculative decoding: a draft model or the target's own MTP heads (issue 26, part 1).

What each engine does with them (docs/research/issue-26-engine-rules.md section 1):
- vLLM (v1, read in 0.33.0): the drafter's attention layers join the target's KV cache groups
  (gpu_model_runner.py get_kv_cache_spec; KVCacheSpec.is_draft is compare=False, so a draft layer
  with the target's spec is one more layer of its group, any other spec goes through the hybrid
  grouping). Its weights load inside the same memory profile ("Model loading took" counts them).
  An MTP head (deepseek_mtp.py, qwen3_5_mtp.py) shares the target's embed_tokens and lm_head;
  DeepSeek's eh_proj is a plain nn.Linear (replicated, model dtype), its decoder layer sharded like
  a target layer. A draft_model must have the target's vocabulary (config/speculative.py
  verify_equal_vocab_size_if_draft_model) and its tensor-parallel size. Gated DeltaNet layers keep
  k more conv positions per request (mamba_utils.py gated_delta_net_state_shape: conv_kernel_size
  - 1 + num_spec).
- SGLang (0.5.23): one cell per token of cell_target + int(cell_target x L_draft / L_target)
  (model_executor/pool_configurator.py DefaultPoolConfigurator); the draft's weights are loaded
  before the pool is sized, so they come out of it (engines/sglang/engine.py applies the cell rule).
- llama.cpp: the draft gets a context of its own, f16 by default, as many cells as the target's
  (common/speculative.cpp, 2026), on the GPU beside the target (engines/llamacpp/engine.py places it).

Each engine's rules (its pool or own context, default spec tokens, vocabulary check, flags) are
data in its home (engines/<engine>/serving.py DRAFT), asked through rules.py. This module types
the inputs into a Draft, gives the model the KV pool is sized with, the draft's weights on each
GPU, the launch flags and the figures, each with its source."""

from dataclasses import dataclass, replace
from functools import lru_cache

from ..readers import presets
from ..errors import InputError
from ..readers.hfconfig import model_from_config
from ..model import LayerCounts, Model, MtpConfig
from ..readers.params import count_params
from ..precision import precision
from ..sizing import batch_bytes
from ..units import ceil_div
from .rules import rules_of

MTP, DRAFT = "mtp", "draft"

# Model types whose MTP layers this module sizes, by their config key. DeepSeek's layout
# (deepseek_mtp.py DeepSeekMultiTokenPredictorLayer) was read; GLM-5 runs DeepSeek-V3.2's model
# code in vLLM and SGLang, and its MTP layer is taken to have the same layout (said in a note).
DEEPSEEK_MTP_TYPES = ("deepseek_v3", "deepseek_v32")
GLM_MTP_TYPES = ("glm_moe_dsa",)
QWEN_MTP_TYPES = ("qwen3_5_text", "qwen3_5_moe_text", "qwen3_next")
# MTP keys of families whose draft layers are not sized here (their layouts were not read).
UNMODELLED_MTP_KEYS = ("mtp_hybrid_override_pattern", "mtp_layers_block_type", "use_mtp", "num_mtp_modules",
                       "mtp_transformer_layers")


@dataclass(frozen=True)
class Draft:
    kind: str                    # "mtp" (the model's own heads) or "draft" (a separate model)
    name: str
    spec_tokens: int | None      # tokens proposed per step; None: the engine's own default (llama.cpp)
    spec_tokens_given: bool = False
    layers: tuple = ()           # the KV layers it adds (layers.py objects), at the target's tp
    sglang_layers: int = 0       # SGLang's eagle_draft_num_layers (L_draft of its cell rule)
    weights_bytes: int = 0       # its own tensors, whole (embeddings and head shared with the target left out)
    split_bytes: int = 0         # the part split over tensor parallel ranks
    replicated_bytes: int = 0    # the part every GPU holds whole
    weights_rule: str = ""       # how the weights were counted, in words
    vocab_size: int | None = None
    model: Model | None = None   # the separate draft model
    repo: str | None = None      # its Hugging Face repo id, for the launch flags
    conv_kernel: int | None = None   # the target's Gated DeltaNet conv kernel (vLLM widens its state by k)
    notes: tuple = ()

    @property
    def mtp_layers(self) -> int:
        return len(self.layers)


def _spec_tokens(asked, rules, kind: str, n_predict: int | None) -> tuple[int | None, bool]:
    """(tokens per step, whether given): the engine's default when not given."""
    if asked.spec_tokens is not None:
        return asked.spec_tokens, True
    if rules.default_spec_tokens is not None:
        return rules.default_spec_tokens, False
    if rules.spec_tokens_left_to_build:
        return None, False          # left to the build's default (it changed between builds)
    if kind == MTP:
        return n_predict, False     # vLLM config/speculative.py: num_speculative_tokens defaults to n_predict
    if rules.draft_spec_tokens_refusal:
        raise InputError("spec-tokens", rules.draft_spec_tokens_refusal)
    return None, False


def draft_from(asked, model: Model, engine: str | None) -> Draft | None:
    """The draft or MTP heads the inputs ask for (asked: the ServingSettings), checked against the
    target by `engine`'s rules (InputError naming the field otherwise); None when neither is asked for."""
    mtp = asked.mtp
    separate = [name for name, value in (("draft-model", asked.draft_model), ("draft-hf-config", asked.draft_hf_config))
                if value is not None]
    if not mtp and not separate:
        if asked.spec_tokens is not None:
            raise InputError("spec-tokens", "spec-tokens needs a draft (draft-model or draft-hf-config) or the model's "
                                            "MTP heads (mtp on)")
        return None
    if mtp and separate:
        raise InputError(separate[0], "give a draft model or the model's MTP heads (mtp on), not both: every engine "
                                      "runs one proposer")
    rules = rules_of(engine).draft
    if asked.pp > 1:
        raise InputError("pp", "speculative decoding with pipeline parallelism is not modelled: which stage holds the "
                               "draft's layers and weights was not read; use pp 1")
    if mtp:
        if asked.dp > 1:
            raise InputError("dp", "MTP heads with data parallelism are not modelled: how the engines split the MTP "
                                   "layer's experts over the ranks was not read; use dp 1")
        if rules.mtp_refusal:
            raise InputError("mtp", rules.mtp_refusal)
        heads = _mtp(model)
        tokens, given = _spec_tokens(asked, rules, MTP, len(heads.layers))
        return replace(heads, spec_tokens=tokens, spec_tokens_given=given)
    if asked.draft_hf_config is not None:
        draft_model = _config_draft(asked.draft_hf_config)
    else:
        draft_model = presets.preset_model(asked.draft_model, field="draft-model")
    field = separate[-1]
    draft = _separate(draft_model, asked.draft_model, field)
    _check_vocab(model, draft, rules, field)
    tokens, given = _spec_tokens(asked, rules, DRAFT, None)
    return replace(draft, spec_tokens=tokens, spec_tokens_given=given)


def _check_vocab(model: Model, draft: Draft, rules, field: str) -> None:
    """The engine's vocabulary check (its DraftRules): equal, or within its slack."""
    t, d = model.vocab_size, draft.vocab_size
    if t is None or d is None or abs(t - d) <= rules.vocab_slack:
        return
    raise InputError(field, rules.vocab_refusal.format(t=t, d=d, slack=rules.vocab_slack))


_last_config: list = [None, None]     # (config dict, its Model): the page passes the same dict on every edit


def _config_draft(cfg) -> Model:
    if _last_config[0] is not cfg:
        try:
            model = model_from_config(cfg)
        except InputError as e:
            raise InputError("draft-hf-config", f"{e.field}: {e.message}") from None
        if model.params is None:
            try:
                model = replace(model, params=count_params(cfg).total)
            except InputError:
                pass
        model = presets.with_config_weights(model, cfg)
        _last_config[:] = [cfg, model]
    return _last_config[1]


@lru_cache(maxsize=64)
def _separate(draft_model: Model, repo: str | None, field: str = "draft-model") -> Draft:
    """A separate draft: its layers, its whole checkpoint split over the ranks."""
    if draft_model.checkpoint_bytes:
        weights, rule = draft_model.checkpoint_bytes, "the published checkpoint's bytes"
    elif draft_model.config_weights_bytes:
        weights, rule = draft_model.config_weights_bytes, f"computed from its quantization_config ({draft_model.config_weights_rule})"
    elif draft_model.params and draft_model.weights_dtype:
        weights = precision(draft_model.weights_dtype).bytes_for(draft_model.params)
        rule = f"{draft_model.params:,} parameters x {precision(draft_model.weights_dtype).bits_per_element // 8} B ({draft_model.weights_dtype})"
    else:
        hint = "give its config.json as draft-hf-config" if field == "draft-model" else \
            "its config.json's shapes do not give a parameter count (the vocabulary, widths and layers)"
        raise InputError(field, f"the weights of the draft {draft_model.name} are not known (no parameter count or "
                                f"weights' precision): {hint}")
    name = draft_model.name
    return Draft(kind=DRAFT, name=name, spec_tokens=None, layers=draft_model.layers,
                 sglang_layers=len(draft_model.layers), weights_bytes=weights, split_bytes=weights,
                 weights_rule=rule, vocab_size=draft_model.vocab_size, model=draft_model,
                 repo=repo if repo and "/" in repo else draft_model.hf_repo)


def _mtp(model: Model) -> Draft:
    if model.shapes is None:
        raise InputError("mtp", f"{model.name} has no config.json to read its MTP heads from (a preset or a pasted "
                                "config gives num_nextn_predict_layers or mtp_num_hidden_layers)")
    return _mtp_heads(model)


_mtp_memo: dict = {}


def _mtp_heads(model: Model) -> Draft:
    """The MTP heads, worked out once per model (its config's MTP keys, read with it: model.shapes.mtp)."""
    key = id(model)
    hit = _mtp_memo.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    draft = _read_mtp(model, model.shapes.mtp)
    if len(_mtp_memo) > 64:
        _mtp_memo.clear()
    _mtp_memo[key] = (model, draft)        # the model kept alive so its id is not reused
    return draft


def _read_mtp(model: Model, mtp: MtpConfig) -> Draft:
    text, prefix, model_type = mtp.keys, mtp.prefix, mtp.model_type
    for key in UNMODELLED_MTP_KEYS:
        if key in text:
            raise InputError("mtp", f"{model.name}'s MTP layers ({prefix}{key}) are not modelled yet: their layout "
                                    "in the engines was not read; no number rather than a wrong one")
    if "num_nextn_predict_layers" in text:
        key, n = "num_nextn_predict_layers", mtp.nextn_layers
    elif "mtp_num_hidden_layers" in text:
        key, n = "mtp_num_hidden_layers", mtp.mtp_layers
    else:
        raise InputError("mtp", f"{model.name} has no MTP heads: its config.json gives neither "
                                "num_nextn_predict_layers nor mtp_num_hidden_layers")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0 or n > 16:
        raise InputError("mtp", f"{prefix}{key} = {repr(n)[:20]} is not a count of MTP layers (a whole number, "
                                "0 to 16; the published configs have 1)")
    if n == 0:
        raise InputError("mtp", f"{model.name} has no MTP heads ({prefix}{key} = 0)")
    if key == "num_nextn_predict_layers" and model_type not in DEEPSEEK_MTP_TYPES + GLM_MTP_TYPES or \
            key == "mtp_num_hidden_layers" and model_type not in QWEN_MTP_TYPES:
        raise InputError("mtp", f"the MTP layers of a {model_type or 'unnamed'!r} model are not modelled yet "
                                f"(only DeepSeek-V3/V3.2, GLM-5 and Qwen3.5/3.6/Qwen3-Next)")
    cached = [layer for layer in model.layers if layer.kind in ("mla", "full")]
    if not cached:
        raise InputError("mtp", f"{model.name} has no attention layer for its MTP heads to copy")
    # Each MTP layer is one decoder layer of the target's attention (DeepSeek: its MLA layer with
    # V3.2's indexer; Qwen3.5: full attention, qwen3_5_mtp.py builds it with
    # layer_type "full_attention"), so its cache row is the target's last attention layer's.
    layers = (cached[-1],) * n
    hidden = mtp.hidden_size
    if not isinstance(hidden, int):
        raise InputError("mtp", "the config gives no hidden_size to size the MTP heads' weights")
    dtype = precision(model.dtype)
    decoder, rule = _decoder_bytes(mtp, model)
    notes = []
    if key == "num_nextn_predict_layers":
        # deepseek_mtp.py DeepSeekMultiTokenPredictorLayer: enorm, hnorm, eh_proj = nn.Linear(2h, h)
        # (plain torch: every rank holds it whole, unquantized, in the model dtype), shared_head.norm;
        # its embed_tokens and shared_head.head are replaced by the target's.
        eh_proj = dtype.bytes_for(2 * hidden * hidden) * n
        norms = dtype.bytes_for(3 * hidden) * n
        split, replicated = decoder, eh_proj + norms
        rule = (f"{n} decoder layer{'s' if n > 1 else ''} {rule}: {decoder:,} B split over tp; eh_proj 2 x {hidden:,} x "
                f"{hidden:,} x {dtype.bits_per_element // 8} B = {eh_proj:,} B and enorm, hnorm, shared_head.norm 3 x "
                f"{hidden:,} x {dtype.bits_per_element // 8} B = {norms:,} B whole on every GPU (vLLM deepseek_mtp.py: "
                "eh_proj is a plain nn.Linear; embed_tokens and the head are the target's)")
        if model_type in GLM_MTP_TYPES:
            notes.append("GLM-5's MTP layer is sized with DeepSeek's MTP layout (enorm, hnorm, eh_proj, shared_head), "
                         "which its config's DeepSeek-V3.2 shapes follow; its module was not read line by line")
    else:
        # qwen3_5_mtp.py Qwen3_5MultiTokenPredictor: fc = ColumnParallelLinear(2h, h,
        # gather_output=True) (split over tp), pre_fc_norm_hidden, pre_fc_norm_embedding and norm;
        # embed_tokens and lm_head shared with the target (mtp_use_dedicated_embeddings false).
        if mtp.dedicated_embeddings:
            raise InputError("mtp", f"{prefix}mtp_use_dedicated_embeddings is true: MTP heads with embeddings of "
                                    "their own are not modelled")
        fc = dtype.bytes_for(2 * hidden * hidden)
        norms = dtype.bytes_for(3 * hidden)
        split, replicated = decoder + fc, norms
        rule = (f"{n} decoder layer{'s' if n > 1 else ''} {rule} and fc 2 x {hidden:,} x {hidden:,} x "
                f"{dtype.bits_per_element // 8} B = {fc:,} B, {decoder + fc:,} B split over tp; pre_fc_norm_hidden, "
                f"pre_fc_norm_embedding, norm 3 x {hidden:,} x {dtype.bits_per_element // 8} B = {norms:,} B whole on "
                "every GPU (vLLM qwen3_5_mtp.py: fc is a ColumnParallelLinear; embed_tokens and lm_head are the "
                "target's)")
    kernel = mtp.conv_kernel if any(
        getattr(layer, "label", "") == "gated deltanet" for layer in model.layers) else None
    return Draft(kind=MTP, name=f"{model.name} MTP", spec_tokens=None, layers=layers, sglang_layers=n,
                 weights_bytes=split + replicated, split_bytes=split, replicated_bytes=replicated,
                 weights_rule=rule, vocab_size=model.vocab_size, conv_kernel=kernel, notes=tuple(notes))


def _decoder_bytes(mtp: MtpConfig, model: Model) -> tuple[int, str]:
    """The bytes of n more decoder layers after the target's last (the MTP layers are built as
    layers num_hidden_layers.. of the same model code): the parameter count of the config with n
    more layers, less the target's, in the checkpoint's format (its quantization_config's, as the
    checkpoint stores its MTP layer) or the model dtype (counted where the config is read:
    readers/config_shapes.py's AddedLayers)."""
    added = mtp.added
    if added.no_layer_count:
        raise InputError("mtp", f"the config gives no {mtp.prefix}num_hidden_layers")
    if added.unread is not None:
        e = added.unread
        raise InputError("mtp", f"the MTP layer's weights cannot be counted from this config ({e.field}: "
                                f"{e.message})")
    if added.quantized_bytes is not None:
        return added.quantized_bytes, f"in the checkpoint's quantized format ({added.quantized_rule})"
    counted = added.params
    dtype = precision(model.weights_dtype or model.dtype)
    return dtype.bytes_for(counted), f"of {counted:,} parameters x {dtype.bits_per_element // 8} B ({dtype.name})"


@lru_cache(maxsize=64)
def sizing_model(model: Model, draft: Draft, engine: str | None) -> Model:
    """The model the KV pool is sized with: the target's layers followed by the draft's (vLLM,
    SGLang and the exact ideal keep them in one pool), the target alone for llama.cpp (the draft
    has its own context there). vLLM also widens every Gated DeltaNet layer's conv state by the
    spec tokens (mamba_utils.py gated_delta_net_state_shape: conv_kernel_size - 1 + num_spec)."""
    rules = rules_of(engine).draft
    if not rules.pools:
        return model
    layers = model.layers
    if rules.widens_conv_by_spec_tokens and draft.conv_kernel and draft.spec_tokens:
        widened = {}
        for layer in set(layers):
            if getattr(layer, "label", "") == "gated deltanet":
                width = layer.conv_elements // (draft.conv_kernel - 1)
                widened[layer] = replace(layer, conv_elements=width * (draft.conv_kernel - 1 + draft.spec_tokens))
        layers = tuple(widened.get(layer, layer) for layer in layers)
    n = len(draft.layers)
    label = f"MTP ({n} layer{'s' if n > 1 else ''})" if draft.kind == MTP else f"draft {draft.name}"
    # It keeps the target's config tensors (model.shapes): experts.py splits the target's weights by them.
    return replace(model, name=f"{model.name} + {label}", layers=layers + draft.layers)


def weights_bytes_per_gpu(draft: Draft, model: Model, deployment, engine: str | None) -> int:
    """The draft's weights on each GPU beside the target's share: the split part over tp (an
    engine that pools the draft, vLLM and SGLang, runs it at the target's tp), the replicated part
    whole; one that gives it a context of its own (llama.cpp, no tensor parallelism) holds the
    whole draft on its one GPU."""
    tp = deployment.tp
    rules = rules_of(engine).draft
    if draft.model is not None:
        try:
            draft.model.check_parallel(tp if rules.pools else 1, 1)
        except InputError as e:
            raise InputError("draft-model", f"the draft {draft.name}: {e.message}") from None
    if not rules.pools:
        if deployment.gpus > 1:
            raise InputError("gpus", rules.multi_gpu_refusal)
        return draft.weights_bytes
    return ceil_div(draft.split_bytes, tp) + draft.replicated_bytes


def kv_bytes_per_token(draft: Draft, kv_precision, tp: int) -> int:
    """The draft layers' row: one token's cache in them on one GPU."""
    return sum(layer.row_bytes(kv_precision, tp) for layer in draft.layers if layer.held_range(1) is not None)


def launch_flags(draft: Draft, engine: str | None) -> list[str]:
    """The flags that start this draft in the engine's launch command (its DraftRules.flags)."""
    return list(rules_of(engine).draft.flags(draft))


def figures(draft: Draft, scenario, result) -> dict:
    """The draft's figures and its arithmetic in sentences, for reports and the CLI JSON."""
    work, dep = scenario.workload, scenario.deployment
    engine = scenario.settings.engine
    rules = rules_of(engine).draft
    kv = work.kv_precision
    row = kv_bytes_per_token(draft, kv, dep.tp)
    per_gpu = weights_bytes_per_gpu(draft, scenario.serving.target or scenario.model, dep, engine)
    requests = _requests(result, work)
    held = work.context_tokens * requests
    lines = []
    n = len(draft.layers)
    what = "MTP heads" if draft.kind == MTP else f"draft model {draft.name}"
    lines.append(f"Speculative decoding with the {what}: {n} layer{'s' if n != 1 else ''} of KV cache, "
                 + (f"{draft.spec_tokens} token{'s' if draft.spec_tokens != 1 else ''} proposed a step" + ("" if draft.spec_tokens_given else
                                                                     " (the engine's default)")
                    if draft.spec_tokens is not None else "the engine's default number of tokens a step") + ".")
    lines.append(f"Draft weights: {draft.weights_rule} = {draft.weights_bytes:,} B in all; per GPU "
                 + (f"ceil({draft.split_bytes:,} / tp {dep.tp}) + {draft.replicated_bytes:,} = {per_gpu:,} B"
                    if rules.pools else f"{per_gpu:,} B, the whole draft on the one GPU") + ".")
    if not rules.pools:
        lines.append(rules.own_context_words)
        row = _f16_row(draft)
        # The context padded, each of the streams its padded share (llama.cpp: to 256, llama-context.cpp).
        seqs, pad = work.batch, rules.own_context_pad
        cells = ceil_div(ceil_div(work.context_tokens * seqs, pad) * pad // seqs, pad) * pad * seqs
        kv_per_gpu = row * cells
        lines.append(f"Draft KV: {n} layers of f16 K and V, {row:,} B a cell, x {cells:,} cells = {kv_per_gpu:,} B.")
    else:
        rows = sorted({layer.row_bytes(kv, dep.tp) for layer in draft.layers})
        layer_words = f"{n} layer{'s' if n != 1 else ''} x {rows[0]:,} B" if len(rows) == 1 else \
            " + ".join(f"{layer.row_bytes(kv, dep.tp):,}" for layer in draft.layers)
        lines.append(f"Draft KV per token per GPU: {layer_words} = {row:,} B, in the same pool as the target's layers "
                     + rules.pool_words.format(sglang_layers=draft.sglang_layers) + ".")
        # Each layer holds what it keeps (a sliding window at most its window), as the pool does.
        kv_per_gpu = batch_bytes(LayerCounts(draft.layers), work.context_tokens, work, requests, dep.tp)
        windowed = any(layer.held_range(work.context_tokens) != (0, work.context_tokens) for layer in draft.layers
                       if layer.held_range(1) is not None)
        lines.append(f"Draft KV for {requests:,} request{'s' if requests != 1 else ''} of {work.context_tokens:,} "
                     + (f"tokens, each layer holding what it keeps (sliding windows at most their window): "
                        f"{kv_per_gpu:,} B per GPU." if windowed else
                        f"tokens: {row:,} x {held:,} = {kv_per_gpu:,} B per GPU."))
        if draft.conv_kernel and rules.widens_conv_by_spec_tokens and draft.spec_tokens:
            lines.append(f"vLLM widens each Gated DeltaNet layer's conv state from {draft.conv_kernel - 1} to "
                         f"{draft.conv_kernel - 1 + draft.spec_tokens} positions (conv_kernel_size - 1 + num_spec, "
                         "mamba_utils.py gated_delta_net_state_shape).")
    if draft.kind == MTP and scenario.settings.serving.weights_given:
        lines.append("The weights given are a checkpoint's own: a published checkpoint also holds its MTP layer "
                     "(DeepSeek-V3's model.layers.61, Qwen3.5's mtp.*), which the engines load only with MTP on, so "
                     "it is counted twice here; give the weights without it (the preset's own) for the exact figure.")
    release = scenario.settings.release
    if rules.read_in is not None and rules.read_in.applies(release):
        lines.append(rules.read_in.words.format(release=release))
    lines.extend(draft.notes)
    return {"kind": draft.kind, "name": draft.name, "spec_tokens": draft.spec_tokens,
            "spec_tokens_given": draft.spec_tokens_given, "layers": n,
            "draft_weights_bytes": draft.weights_bytes, "draft_weights_bytes_per_gpu": per_gpu,
            "draft_kv_bytes_per_token": row, "draft_kv_bytes_per_gpu": kv_per_gpu,
            "launch_flags": launch_flags(draft, engine), "lines": lines}


def _f16_row(draft: Draft) -> int:
    f16 = precision("fp16")
    return sum(layer.row_bytes(f16, 1) for layer in draft.layers if layer.held_range(1) is not None)


def _requests(result, work) -> int:
    """The requests the figures are for: those asked for (the batch)."""
    return work.batch
