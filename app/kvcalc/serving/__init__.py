"""What a production deployment runs beside the bare model (issue 26): a speculative draft or
the model's own MTP heads, LoRA adapter slots, a vision encoder, a host-memory KV tier and a
prefix hit rate. One module per part, each owning its byte formula and its engines' rules; this
module types them from the inputs once (`serving_from`) and answers what the rest of the engine
asks of all of them together: the layers that join the KV pool, the weights each GPU holds
beside the model's share, the parts' figures for reports and their launch flags."""

from dataclasses import dataclass, field, replace
from fractions import Fraction

from .. import engines
from ..errors import InputError

from . import draft as _draft
from . import encoder as _encoder
from . import lora as _lora
from . import offload as _offload
from . import prefix_hits as _prefix_hits

# The memory bar's segment and the words for each part a GPU holds beside the model's weights.
WEIGHT_PARTS = {"draft": "Draft weights", "lora": "LoRA adapter slots", "encoder": "Vision encoder (beside the split)"}


@dataclass(frozen=True)
class Serving:
    """The parts typed from the inputs; None for each part not asked for."""
    draft: "_draft.Draft | None" = None
    lora: "_lora.Lora | None" = None
    offload: "_offload.OffloadAsk | None" = None
    prefix_hit_rate: object = None             # a Fraction in [0, 1], with prefix-tokens
    encoder: "_encoder.Encoder | None" = None  # the model's vision tower (or llama.cpp's mmproj), when it has one
    # (part, bytes on each GPU beside the model's share), set once the deployment is known.
    added: tuple = ()
    # What they were typed from, to size them again for another engine (for_engine): the
    # target model (before a draft joins its pool) and the inputs.
    target: object = field(default=None, compare=False)
    values: dict = field(default_factory=dict, compare=False)

    @property
    def added_weights_bytes_per_gpu(self) -> int:
        return sum(n for _, n in self.added)


NONE = Serving()


def serving_from(values: dict, model, deployment, engine: str | None) -> Serving:
    """The parts the inputs ask for, each typed and checked against the target model and the
    deployment (InputError naming the field otherwise), with what each adds on every GPU."""
    serving = Serving(draft=_draft.draft_from(values, model, engine), lora=_lora.lora_from(values),
                      offload=_offload.offload_from(values, engine, deployment),
                      prefix_hit_rate=_prefix_hits.hit_rate_from(values),
                      encoder=_encoder.encoder_from(values, model, engine))
    if serving == NONE:
        return NONE
    if serving.draft is not None and serving.encoder is not None and serving.encoder.mode == "mmproj":
        raise InputError("draft-model" if "draft-model" in values else "mtp",
                         "llama-server refuses speculative decoding with a multimodal projector (\"err: speculative "
                         "decode is not supported by multimodal\", tools/server/server-context.cpp): leave out "
                         "mmproj-bytes or the draft")
    if serving.encoder is not None:
        checks = getattr(engines.REGISTRY.get(engine), "CHECKS_ENCODER_SPLIT", False)
        serving = replace(serving, encoder=_encoder.check_tp(serving.encoder, deployment.tp, checks))
    serving = replace(serving, target=model, values=values)
    added = []
    if serving.draft is not None:
        added.append(("draft", _draft.weights_bytes_per_gpu(serving.draft, model, deployment, engine)))
    if serving.lora is not None:
        added.append(("lora", _lora.slots(serving.lora, model, deployment.tp, engine, deployment.pp).bytes_per_gpu))
    if serving.encoder is not None:
        extra = _encoder.added_bytes_per_gpu(serving.encoder, deployment.tp, engine)
        if extra:
            added.append(("encoder", extra))
    return replace(serving, added=tuple(added))


def for_engine(serving: Serving, deployment, engine: str | None):
    """(the parts, the sizing model, the deployment) as `engine` runs them: the same inputs, that
    engine's rules (a draft's pool, its default spec tokens, its LoRA slots)."""
    if serving is NONE:
        return serving, None, deployment
    typed = serving_from(serving.values, serving.target, deployment, engine)
    deployment = replace(deployment, added_weights_bytes_per_gpu=typed.added_weights_bytes_per_gpu)
    return typed, sizing_model(serving.target, typed, engine), deployment


def sizing_model(model, serving: Serving, engine: str | None):
    """The model the KV pool is sized with: the target's layers, and the draft's where the engine
    keeps them in the same pool (vLLM, SGLang and the exact ideal; llama.cpp gives a draft its own
    context)."""
    if serving.draft is None:
        return model
    return _draft.sizing_model(model, serving.draft, engine)


# Keys every JSON answer carries (null where the part is not asked for), as the issue names them.
FLAT_KEYS = {"draft": ("draft_weights_bytes", "draft_weights_bytes_per_gpu", "draft_kv_bytes_per_token",
                       "draft_kv_bytes_per_gpu"),
             "lora": ("lora_bytes_per_gpu",),
             "encoder": ("encoder_weights_bytes", "encoder_weights_bytes_per_gpu", "encoder_budget_tokens",
                         "encoder_cache_bytes"),
             "offload": ("offload_bytes", "offload_tokens", "offload_requests", "offload_restore_seconds",
                         "offload_link"),
             "prefix_hits": ("expected_cached_tokens_per_request", "expected_requests_fit",
                             "expected_prefill_tokens_skipped")}


def _parts(serving: Serving):
    """(name, the part, its module) for each part asked for."""
    for name, part, module in (("draft", serving.draft, _draft), ("lora", serving.lora, _lora),
                               ("encoder", serving.encoder, _encoder), ("offload", serving.offload, _offload),
                               ("prefix_hits", serving.prefix_hit_rate, _prefix_hits)):
        if part is not None:
            yield name, part, module


def figures(scenario, result) -> dict:
    """{"serving": {part: its figures and lines}, and the flat keys}: every part's figures for
    these inputs as sized (the engine's where one is chosen)."""
    serving = scenario.serving
    out = {key: None for keys in FLAT_KEYS.values() for key in keys}
    parts = {}
    for name, part, module in _parts(serving):
        data = _json_ready(module.figures(part, scenario, result))
        parts[name] = data
        out.update({key: data.get(key) for key in FLAT_KEYS[name]})
    out["serving"] = parts
    return out


def _json_ready(value):
    """A part's figures as JSON holds them: expectations and seconds (Fractions) as floats, an
    exact whole one as an int."""
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else float(value)
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    return value


def launch_env(scenario, engine: str) -> dict:
    """Environment variables the parts need on `engine`'s command (LMCache's tier size)."""
    env = {}
    for _, part, module in _parts(scenario.serving):
        more = getattr(module, "launch_env", None)
        if more is not None:
            env.update(more(part, engine))
    return env


def launch_flags(scenario, engine: str) -> list:
    """The flags each part adds to `engine`'s launch command, in the parts' order."""
    args = []
    for _, part, module in _parts(scenario.serving):
        flags = getattr(module, "launch_flags", None)
        if flags is not None:
            args += flags(part, engine)
    return args
