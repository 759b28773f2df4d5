"""The plan's own inputs, typed (Ask) and bounded: the inputs less one deployment's, the GPU types
and precisions considered, the prices, the request rate; refused, naming the input to narrow, when
the search they ask is more work than the planner runs (check_bounds).
"""

from dataclasses import dataclass, field
from fractions import Fraction

from .. import engines
from ..readers import gpu_presets
from ..errors import InputError
from ..inputs.options import OPTION_BY_NAME
from ..inputs.scenario import MEASURED_INPUTS
from .candidates import gpu_counts_on


DEFAULT_MAX_GPUS = int(OPTION_BY_NAME["plan-max-gpus"].default)


# Inputs of one deployment, which the plan chooses or which were measured on one: dropped.
DEPLOYMENT_INPUTS = ("gpu", "gpus", "tp", "pp", "dp", "ep", "gpu-memory-gib", "kv-memory-gib", "measured-with",
                     *MEASURED_INPUTS)


_CHOSEN = ("gpu", "gpus", "tp", "pp", "dp", "ep")        # what every row sets anew
PLAN_INPUTS = ("rate", "output-tokens", "plan-gpus", "plan-max-gpus", "plan-kv-dtypes", "plan-weights-dtypes",
               "prices")


# The planner's work, bounded before it starts (issue 34): each GPU type and precision pair is one
# search over the GPU counts, stopping at the first that fits (a few ms each, up to 4096 GPUs:
# every preset at 15 x 15 precisions ran 34 s), and the whole table (--plan-all, "Show every
# deployment") sizes every count's every layout in full. Past these the plan is refused, naming
# the input to narrow, never run for minutes (bench/plan.py --limits times the largest allowed).
MAX_SEARCHES = 480            # GPU types x precision pairs: every whole GPU's preset (36 for vLLM) at 12 pairs


MAX_EVERY_COUNT = 800         # the whole table: GPU types x GPU counts x precision pairs (2x the default)


@dataclass(frozen=True)
class Ask:
    """The plan's own inputs, typed."""
    base: dict                                # the inputs less the deployment's
    gpus: tuple[str, ...]
    max_gpus: int
    kv_dtypes: tuple[str | None, ...]         # None: the inputs' own
    weights_dtypes: tuple[str | None, ...]
    prices: dict
    rate: Fraction | None
    output_tokens: int | None
    engine: str | None
    dropped: tuple[str, ...] = ()             # inputs of one deployment the plan leaves out
    price_names: dict = field(default_factory=dict, compare=False)   # GPU id -> the name that priced it
    # What depends on no GPU, worked out once for every GPU type: the model, its layouts and the
    # ideal's need per precision pair, and each layout's exact-ideal bytes on its busiest GPU (the screen).
    memo: dict = field(default_factory=dict, compare=False)


def ask_from(values: dict) -> Ask:
    """The plan's inputs from typed values (options.parse_options), InputError naming the field."""
    rate, output = values.get("rate"), values.get("output-tokens")
    base = _base(values, rate, output)
    engine = values.get("engine")
    ask = Ask(base=base, gpus=_considered(values, engine), max_gpus=values.get("plan-max-gpus", DEFAULT_MAX_GPUS),
              kv_dtypes=values.get("plan-kv-dtypes") or (None,),
              weights_dtypes=values.get("plan-weights-dtypes") or (None,),
              prices=dict(values.get("prices", ())),
              price_names=dict(getattr(values.get("prices"), "typed", {})), rate=rate, output_tokens=output, engine=engine,
              dropped=tuple(name for name in DEPLOYMENT_INPUTS if name in values and name not in _CHOSEN))
    check_bounds(ask)
    return ask


def _base(values: dict, rate: Fraction | None, output: int | None) -> dict:
    """The inputs less one deployment's and the plan's own; with output tokens, the prompt the
    context leaves them (or the prompt given, checked to fit beside them)."""
    if rate is not None and output is None:
        raise InputError("output-tokens", "a request rate needs the tokens each request generates (output-tokens) "
                                          "for its decode time")
    base = {k: v for k, v in values.items() if k not in DEPLOYMENT_INPUTS and k not in PLAN_INPUTS}
    if output is not None:
        context = values.get("context", int(OPTION_BY_NAME["context"].default))
        if "prompt-tokens" not in values:
            if output >= context:
                raise InputError("output-tokens", f"{output:,} output tokens leave no prompt in a context of "
                                                  f"{context:,}; the context holds the prompt and the output")
            base["prompt-tokens"] = context - output
        elif values["prompt-tokens"] + output > context:
            raise InputError("output-tokens", f"a prompt of {values['prompt-tokens']:,} and {output:,} output tokens "
                                              f"are longer than the context of {context:,}")
    return base


def _considered(values: dict, engine: str | None) -> tuple[str, ...]:
    """The GPU types the plan considers: plan-gpus (each one the engine runs on), else every whole
    GPU's preset with a memory and a bandwidth that the engine runs on (a MIG instance only when named)."""
    vendors = engines.REGISTRY[engine].VENDORS if engine else None
    if "plan-gpus" in values:
        considered = values["plan-gpus"]
        foreign = [gpu_id for gpu_id in considered if vendors and gpu_presets.gpu(gpu_id).vendor not in vendors]
        if foreign:
            raise InputError("plan-gpus", f"{engines.title(engine)} does not run on {', '.join(foreign)} "
                                          f"(it runs on {' and '.join(vendors)} GPUs)")
    else:
        considered = tuple(gpu_id for gpu_id, gpu in gpu_presets.whole_gpus().items() if gpu.memory_bytes and
                           gpu.bandwidth_bytes_per_s and (not vendors or gpu.vendor in vendors))
    return tuple(considered)


def check_bounds(ask: Ask, everything: bool = False) -> None:
    """InputError when the plan asked is more work than MAX_SEARCHES searches (or, `everything`,
    MAX_EVERY_COUNT deployments' counts), naming the input that multiplies it."""
    _check_searches(ask)
    if everything:
        _check_every_count(ask)


def _check_searches(ask: Ask) -> None:
    kv, weights = len(ask.kv_dtypes), len(ask.weights_dtypes)
    searches = len(ask.gpus) * kv * weights
    if searches > MAX_SEARCHES:
        field = "plan-kv-dtypes" if kv >= weights else "plan-weights-dtypes"
        raise InputError(field, f"{kv} KV x {weights} weight precisions on {len(ask.gpus)} GPU types is {searches:,} "
                                f"searches; the plan runs at most {MAX_SEARCHES} (every GPU type at 12 precision "
                                "pairs): name fewer precisions, or fewer GPU types in plan-gpus")


def _check_every_count(ask: Ask) -> None:
    kv, weights = len(ask.kv_dtypes), len(ask.weights_dtypes)
    counts = sum(len(gpu_counts_on(gpu_presets.gpu(gpu_id), ask.max_gpus)) for gpu_id in ask.gpus)
    total = counts * kv * weights
    if total > MAX_EVERY_COUNT:
        raise InputError("plan-max-gpus", f"every deployment of up to {ask.max_gpus:,} GPUs is {total:,} GPU "
                                          f"counts to size in full ({len(ask.gpus)} GPU types, {kv * weights} "
                                          f"precision pair{'s' if kv * weights > 1 else ''}); at most {MAX_EVERY_COUNT:,}: a smaller "
                                          "plan-max-gpus, fewer GPU types (plan-gpus) or precisions, or the "
                                          "smallest deployment per GPU type")
