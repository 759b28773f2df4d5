"""Which serving rules apply: the chosen engine's (its module's SERVING, engines/<engine>/serving.py)
or, with no engine, the exact ideal's (engines/ideal.py). Every part asks here; none compares an
engine's name."""

from .. import engines
from ..engines.ideal import IDEAL
from ..engines.serving_rules import ServingRules
from ..errors import InputError


def rules_of(engine: str | None) -> ServingRules:
    """The serving rules `engine` runs the parts by (the exact ideal's for None), or the refusal
    naming the engine: an unknown one, or one whose serving rules are not written down."""
    if engine is None:
        return IDEAL
    module = engines.REGISTRY.get(engine)
    if module is None:
        raise InputError("engine", f"unknown engine {str(engine)[:30]!r}; allowed: {', '.join(engines.ENGINES)}")
    rules = engines.member(module, "SERVING")
    if rules is None:
        raise InputError("engine", f"{module.TITLE}'s rules for what runs beside the model (drafts, LoRA slots, "
                                   "encoders, offload tiers, prefix hits) are not written down: leave those parts out")
    return rules


def written_rules(engine: str | None) -> ServingRules | None:
    """The rules `engine` has written down (the exact ideal's for None), or None where it has
    none: its command is then written without the parts' flags, and a part it was not asked for
    (a multimodal model's tower) is left out rather than refused."""
    if engine is None:
        return IDEAL
    module = engines.REGISTRY.get(engine)
    return engines.member(module, "SERVING") if module is not None else None


def title(engine: str | None) -> str:
    """The engine's name as it writes it; the exact ideal's words with no engine."""
    return engines.title(engine) if engine is not None else "the exact ideal"
