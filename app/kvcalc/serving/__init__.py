"""What a deployment serves beside the bare model (issue 26): a speculative draft or the model's
own MTP heads, LoRA adapter slots, a vision encoder, a host-memory KV tier and a prefix hit rate.
One module per part, each owning its byte formula; each engine's rules for them are data in its
own home (engines/<engine>/serving.py), asked through rules.py. This module holds what the inputs
ask for, typed once (ServingSettings, in the scenario's Settings), types the parts from it
(`serving_from`) and answers what the rest of the calculator asks of all of them together: the
layers that join the KV pool, the weights each GPU holds beside the model's share, the parts'
figures for reports and their launch flags."""

from dataclasses import dataclass, field, replace
from fractions import Fraction

from .. import engines
from ..errors import InputError

from . import draft as _draft
from . import encoder as _encoder
from . import lora as _lora
from . import offload as _offload
from . import prefix_hits as _prefix_hits
from .rules import rules_of, written_rules

__all__ = ["NONE", "Serving", "ServingSettings", "figures", "for_engine", "launch_env", "launch_flags",
           "serving_from", "sizing_model"]

# The memory bar's segment and the words for each part a GPU holds beside the model's weights.
WEIGHT_PARTS = {"draft": "Draft weights", "lora": "LoRA adapter slots", "encoder": "Vision encoder (beside the split)"}


@dataclass(frozen=True)
class ServingSettings:
    """What the inputs ask to run beside the model, typed once by the scenario's builder
    (inputs/scenario.py, Settings.serving): each field as its option gives it, None (or False,
    or the option's default) where it is not given. The parts read these, never the inputs."""
    mtp: bool = False                          # mtp on: the model's own MTP heads
    draft_model: str | None = None             # a preset or repo id
    draft_hf_config: dict | None = field(default=None, compare=False)   # a draft's config.json
    spec_tokens: int | None = None
    pp: int = 1                                # pipeline and data parallel as given (a draft refuses them)
    dp: int = 1
    weights_given: bool = False                # weights-bytes, weights-gib or layer-weights-bytes: a checkpoint's own
    max_loras: int | None = None
    max_lora_rank: int | None = None
    offload_gib: Fraction | None = None
    offload_backend: str | None = None         # None: native
    offload_link: str | None = None
    host_memory_gib: Fraction | None = None
    prefix_hit_rate: Fraction | None = None
    prefix_tokens: int = 0
    mm_encoder_tp_mode: str | None = None
    mmproj_bytes: int | None = None


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
    # target model (before a draft joins its pool) and the scenario's Settings.
    target: object = field(default=None, compare=False)
    settings: object = field(default=None, compare=False)

    @property
    def added_weights_bytes_per_gpu(self) -> int:
        return sum(n for _, n in self.added)


NONE = Serving()


def serving_from(settings, model, deployment) -> Serving:
    """The parts the scenario's Settings ask for (settings.serving, a ServingSettings), each typed
    and checked against the target model and the deployment by the rules of the engine sized as
    (settings.engine; the exact ideal's for None), InputError naming the field otherwise, with what
    each adds on every GPU."""
    asked, engine = settings.serving, settings.engine
    serving = Serving(draft=_draft.draft_from(asked, model, engine), lora=_lora.lora_from(asked),
                      offload=_offload.offload_from(asked, engine, deployment, settings.release),
                      prefix_hit_rate=_prefix_hits.hit_rate_from(asked, engine),
                      encoder=_encoder.encoder_from(asked, model, engine))
    if serving == NONE:
        return NONE
    refusal = rules_of(engine).encoder.mmproj_draft_refusal
    if serving.draft is not None and serving.encoder is not None and serving.encoder.mode == "mmproj" and refusal:
        raise InputError("draft-model" if asked.draft_model is not None else "mtp", refusal)
    if serving.encoder is not None:
        checks = engines.member(engines.REGISTRY.get(engine), "CHECKS_ENCODER_SPLIT")
        serving = replace(serving, encoder=_encoder.check_tp(serving.encoder, deployment.tp, checks))
    serving = replace(serving, target=model, settings=settings)
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
    engine's rules (a draft's pool, its default spec tokens, its LoRA slots). Another engine than
    the one sized as takes its newest release, as evaluation.sized_as sizes it."""
    if serving is NONE:
        return serving, None, deployment
    settings = serving.settings
    if settings.engine != engine:
        settings = replace(settings, engine=engine, release=None)
    typed = serving_from(settings, serving.target, deployment)
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
    """Environment variables the parts need on `engine`'s command (LMCache's tier size); none for
    an engine whose serving rules are not written down."""
    env = {}
    if written_rules(engine) is None:
        return env
    for _, part, module in _parts(scenario.serving):
        more = getattr(module, "launch_env", None)
        if more is not None:
            env.update(more(part, engine))
    return env


def launch_flags(scenario, engine: str) -> list:
    """The flags each part adds to `engine`'s launch command, in the parts' order; none for an
    engine whose serving rules are not written down."""
    args = []
    if written_rules(engine) is None:
        return args
    for _, part, module in _parts(scenario.serving):
        flags = getattr(module, "launch_flags", None)
        if flags is not None:
            args += flags(part, engine)
    return args
