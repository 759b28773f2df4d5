"""What a production deployment runs beside the bare model (issue 26): a speculative draft or
the model's own MTP heads, LoRA adapter slots, a vision encoder, a host-memory KV tier and a
prefix hit rate. One module per part, each owning its byte formula and its engines' rules; this
module types them from the inputs once (`serving_from`) and answers what the rest of the engine
asks of all of them together: the layers that join the KV pool, the weights each GPU holds
beside the model's share, and the parts' figures for reports."""

from dataclasses import dataclass

from . import draft as _draft
from . import encoder as _encoder
from . import lora as _lora
from . import offload as _offload
from . import prefix_hits as _prefix_hits


@dataclass(frozen=True)
class Serving:
    """The parts typed from the inputs; None for each part not asked for."""
    draft: "_draft.Draft | None" = None
    lora: "_lora.Lora | None" = None
    offload: "_offload.OffloadAsk | None" = None
    prefix_hit_rate: object = None             # a Fraction in [0, 1], with prefix-tokens
    encoder: "_encoder.Encoder | None" = None  # the model's vision tower (or llama.cpp's mmproj), when it has one

    @property
    def any(self) -> bool:
        return any(p is not None for p in (self.draft, self.lora, self.offload, self.prefix_hit_rate))


NONE = Serving()


def serving_from(values: dict, model, engine: str | None) -> Serving:
    """The parts the inputs ask for, each typed and checked against the target model (InputError
    naming the field otherwise)."""
    return Serving(draft=_draft.draft_from(values, model, engine), lora=_lora.lora_from(values),
                   offload=_offload.offload_from(values),
                   prefix_hit_rate=_prefix_hits.hit_rate_from(values),
                   encoder=_encoder.encoder_from(values, model, engine))


def sizing_model(model, serving: Serving, engine: str | None):
    """The model the KV pool is sized with: the target's layers, and the draft's where the engine
    keeps them in the same pool (vLLM, SGLang and the exact ideal; llama.cpp gives a draft its own
    context)."""
    if serving.draft is None:
        return model
    return _draft.sizing_model(model, serving.draft, engine)


def added_weights_bytes_per_gpu(serving: Serving, model, deployment, engine: str | None) -> int:
    """What each GPU holds beside its share of the model's weights: the draft's weights, the LoRA
    slots, a vision encoder held whole on every GPU (data mode)."""
    total = 0
    if serving.draft is not None:
        total += _draft.weights_bytes_per_gpu(serving.draft, model, deployment, engine)
    if serving.lora is not None:
        total += _lora.slots(serving.lora, model, deployment.tp, engine).bytes_per_gpu
    if serving.encoder is not None:
        total += _encoder.added_bytes_per_gpu(serving.encoder, deployment.tp, engine)
    return total
