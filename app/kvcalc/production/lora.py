"""LoRA adapter slots in GPU memory (issue 26, part 4). Interface: lora_from, slots."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Lora:
    max_loras: int
    max_rank: int


def lora_from(values: dict):
    return None


def slots(lora, model, tp: int, engine):
    raise NotImplementedError
