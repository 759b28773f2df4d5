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
    rules = getattr(module, "SERVING", None)
    if rules is None:
        raise InputError("engine", f"{module.TITLE}'s rules for what runs beside the model (drafts, LoRA slots, "
                                   "encoders, offload tiers, prefix hits) are not written down: leave those parts out")
    return rules


def launch_rules(engine: str | None) -> ServingRules | None:
    """The rules whose launch flags `engine`'s command takes; None where it has none written down
    (its command is still written, without the parts' flags)."""
    module = engines.REGISTRY.get(engine) if engine is not None else None
    return getattr(module, "SERVING", None) if module is not None else None


def title(engine: str | None) -> str:
    """The engine's name as it writes it; the exact ideal's words with no engine."""
    return engines.title(engine) if engine is not None else "the exact ideal"
