"""Speculative decoding: a draft model or the target's own MTP / EAGLE heads (issue 26, part 1).
Interface (filled in by the draft work): draft_from, sizing_model, weights_bytes_per_gpu."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Draft:
    kind: str                    # "mtp" (the model's own heads) or "draft" (a separate model)
    name: str
    spec_tokens: int


def draft_from(values: dict, model, engine):
    return None


def sizing_model(model, draft, engine):
    return model


def weights_bytes_per_gpu(draft, model, deployment, engine) -> int:
    return 0
