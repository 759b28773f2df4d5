"""One deployment's row: the single view's own evaluation of the probe's inputs, what limits it
(weights, kv, context, layout, hybrid, engine, rate, unknown, or the field of any other refusal),
its decode bound and its price.
"""

from dataclasses import dataclass
from fractions import Fraction

from ..readers import gpu_presets
from ..errors import InputError
from ..evaluation import Evaluation, evaluate, searched
from ..reports.verdict import verdict
from .ask import Ask
from .candidates import Layout
from .probe import FIXED_POINT_STEPS, Probe, step_seconds


SECONDS_PER_HOUR = 3600
TOKENS_PER_MILLION = 10 ** 6


def usd_per_million_tokens(usd_per_hour: Fraction | None, tokens_per_s: Fraction | None) -> Fraction | None:
    """An hour's price over the tokens of that hour, per million; None without either."""
    if usd_per_hour is None or not tokens_per_s:
        return None
    return usd_per_hour * TOKENS_PER_MILLION / (tokens_per_s * SECONDS_PER_HOUR)


@dataclass(frozen=True)
class Row:
    """One deployment, as the single view sizes it."""
    gpu: str                                  # preset id
    gpu_name: str
    layout: Layout
    kv_dtype: str
    weights_dtype: str | None
    fits: bool | None
    max_concurrency: int | None               # requests that fit, as the engine sizes them
    max_context_tokens: int | None            # the longest context for the requests
    limit: str                                # what limits it: weights, kv, context, layout, rate, unknown
    why: str                                  # the verdict's sentence, or the refusal
    batch: int                                # the concurrency the row must hold
    decode_tokens_per_s: Fraction | None      # an upper bound, all requests together
    usd_per_hour: Fraction | None
    values: dict                              # the inputs that give this row in the single view
    # What each GPU holds beside its share of the model's weights in this layout (a draft, LoRA
    # slots, an encoder kept whole), by part: counted in every figure above.
    beside: tuple = ()

    @property
    def gpus(self) -> int:
        return self.layout.gpus

    @property
    def usd_per_million_tokens(self) -> Fraction | None:
        """A lower bound on the cost of output tokens: the hour's price over the decode bound."""
        return usd_per_million_tokens(self.usd_per_hour, self.decode_tokens_per_s)

    def form_values(self) -> dict:
        """The deployment's inputs as a form holds them (text), to apply the row to the form. The
        precisions are the ones it was evaluated with: empty where the model's own was used (naming
        the model's dtype can size a quantized checkpoint's weights another way), and the
        concurrency is the one it holds (Little's law's, with a rate)."""
        return {"gpu": self.gpu, "gpus": str(self.gpus), "tp": "", "pp": str(self.layout.pp),
                "dp": str(self.layout.dp), "ep": "on" if self.layout.ep else "off",
                "kv-dtype": str(self.values.get("kv-dtype", "")),
                "weights-dtype": str(self.values.get("weights-dtype", "")), "batch": str(self.batch)}

    def words(self) -> str:
        """"8 x H200 fits 12 requests": a row as the verdict names it."""
        head = f"{self.gpus} x {self.gpu_name}"
        if self.fits is None:
            return f"{head}: whether it fits is not known ({self.limit})"
        if not self.fits:
            return f"{head} does not fit ({self.limit})"
        return f"{head} ({self.layout.words()}) fits {self.max_concurrency:,} request" + \
            ("s" * (self.max_concurrency != 1))


def row_of(ask: Ask, probe: Probe) -> Row:
    """The row of a probe: evaluate(values), the single view's own evaluation of its inputs (from
    the scenario the probe built of the same values, evaluation.searched)."""
    values = probe.values
    gpu = gpu_presets.gpu(values["gpu"])
    layout = Layout(values["tp"], values["pp"], values["dp"], values.get("ep") == "on")
    price = ask.prices.get(gpu.id)
    hourly = None if price is None else price * layout.gpus
    probed = probe.evaluation
    evaluation = searched(probed) if probed is not None and probed.ok else evaluate(values)
    batch = values.get("batch", 1)
    if not evaluation.ok:
        error = evaluation.errors[0]
        return Row(gpu.id, gpu.name, layout, values.get("kv-dtype", ""), values.get("weights-dtype"), False, None,
                   None, _refusal_limit(error), f"{error.field}: {error.message}", batch, None, hourly,
                   _shown(values))
    scenario = evaluation.scenario
    judged = verdict(scenario, evaluation)
    fits = judged.fits and probe.rate_met
    longest, limited_by = evaluation.context_limit
    limit, why = _limit_and_why(ask, probe, evaluation, judged, limited_by)
    step = step_seconds(evaluation)
    tokens_per_s = Fraction(batch) / step if step and fits else None
    return Row(gpu.id, gpu.name, layout, scenario.workload.kv_precision.name,
               scenario.settings.weights_dtype or scenario.model.weights_dtype, fits, evaluation.capacity, longest, limit,
               why, batch, tokens_per_s, hourly, _shown(values), scenario.serving.added)


def _limit_and_why(ask: Ask, probe: Probe, evaluation: Evaluation, judged,
                   limited_by: str | None) -> tuple[str, str]:
    """What limits an evaluated row, and the sentence that says so: the rate, where it holds
    requests but not Little's law's; else the verdict's own."""
    if not probe.rate_met and (judged.fits or (evaluation.capacity and set(judged.reasons) <= {"kv", "engine"})):
        # It holds requests, but not the many Little's law puts in flight at this rate.
        return "rate", _rate_words(ask, probe.values.get("batch", 1), evaluation)
    if judged.fits is False:
        return _limit(judged.reasons, evaluation), judged.sentence
    if judged.fits is None:
        return "unknown", judged.sentence
    return ("context" if limited_by == "model" else "kv"), judged.sentence


def _rate_words(ask: Ask, batch: int, evaluation: Evaluation) -> str:
    capacity = evaluation.capacity
    if capacity is not None and batch > capacity:
        return (f"{batch:,} requests in flight at {as_decimal(ask.rate)}/s (Little's law) are more than the "
                f"{capacity:,} that fit")
    return (f"Little's law at {as_decimal(ask.rate)}/s does not settle within {FIXED_POINT_STEPS} steps: the rate is at "
            "the edge of what it serves")


# The limits a row names: weights, kv, context (the model's own limit), layout (a refused tp, pp,
# dp or ep: heads not divisible by tp and the like), hybrid (an engine that refuses the model's
# hybrid state pages), engine (another refusal of the engine's), rate, unknown, or the field of
# any other refusal (kv-dtype an engine cannot store, ...).
LAYOUT_FIELDS = ("tp", "pp", "dp", "ep", "gpus")


def _refusal_limit(error: InputError) -> str:
    if error.field in LAYOUT_FIELDS:
        return "layout"
    if error.field == "engine":
        return "hybrid" if "hybrid" in error.message else "engine"
    return error.field


def _limit(reasons: tuple, evaluation: Evaluation) -> str:
    if "context" in reasons:
        return "context"
    if "weights" in reasons:
        return "weights"
    budget = evaluation.budget_bytes_per_gpu
    if "engine" in reasons and budget is not None and budget < 0:
        return "weights"
    return "kv"


def _shown(values: dict) -> dict:
    """The row's inputs as the single view takes them (the link, the form): tp follows from the
    GPUs over pp x dp, and pp 1, dp 1 are the defaults."""
    return {k: v for k, v in values.items() if k != "tp" and not (k in ("pp", "dp") and v == 1)}


def as_decimal(value: Fraction) -> str:
    return f"{float(value):g}"
