"""One evaluation: parse, build the scenario, size it (the exact ideal, the chosen engine's rules
and the time bounds side by side). The one boundary: it never raises; what goes wrong comes back
as refusals naming the fields."""

import math
from dataclasses import dataclass, fields, is_dataclass, replace
from fractions import Fraction

from . import engines, parallel
from .serving import NONE as NO_SERVING, for_engine
from .engines.result import EngineResult
from .errors import InputError
from .inputs.options import MODEL_INPUTS, parse_options
from .inputs.scenario import Scenario, build_scenario
from .sizing import Result, compute
from .serving.timing import Timing, compute_precision, time_bounds


@dataclass(frozen=True)
class Evaluation:
    """One evaluation's answers side by side: the exact ideal (sizing's Result), the chosen
    engine's (None without one) and the time bounds (None, with the reason, where there are none)."""
    values: dict
    errors: tuple[InputError, ...]
    scenario: Scenario | None = None
    result: Result | None = None            # the exact ideal
    engine: EngineResult | None = None      # the chosen engine's answer
    timing: Timing | None = None            # the time bounds, where the GPU's peaks are known
    timing_missing: str | None = None       # why there are none, in words

    @property
    def ok(self) -> bool:
        return self.result is not None and not self.errors

    @property
    def capacity(self) -> int | None:
        """The requests that fit as the chosen rules size them: the engine's (0 when it refuses,
        None when it cannot tell) when one was chosen, else the exact ideal's max_concurrency."""
        engine = self.engine
        if engine is None:
            return self.result.max_concurrency
        # An engine prints one data-parallel rank's concurrency: each rank holds as many whole requests.
        return None if engine.starts is None else 0 if not engine.starts else int(engine.max_concurrency) * self.result.dp

    # The figures below follow the chosen engine as `capacity` does, so every section shows one
    # set: the exact ideal's own stay in the result's fields of the same names.
    @property
    def context_limit(self) -> tuple[int | None, str | None]:
        """(longest context for the batch, what limits it) as the chosen rules size it."""
        engine = self.engine
        if engine is None:
            return self.result.max_context, self.result.max_context_limited_by
        return engine.max_context, engine.max_context_limited_by

    @property
    def budget_bytes_per_gpu(self) -> int | None:
        """The KV memory per GPU: the engine's when one was chosen, else memory x utilization -
        weights - overhead."""
        return self.result.kv_budget_bytes_per_gpu if self.engine is None else self.engine.kv_budget_bytes_per_gpu


def evaluate(raw: dict, searches: bool = True) -> Evaluation:
    """Parse, build and compute. Never raises InputError: it comes back in `errors`.
    `searches=False` leaves out the longest-context searches (max_context is None), for the
    planner's probes that ask only whether a deployment fits."""
    return carry_on(begin(raw, searches), searches)


def begin(raw: dict, searches: bool = True) -> Evaluation:
    """evaluate's first half: parsed, built and the exact ideal computed, before the engine's
    rules and the time bounds (the planner screens a deployment on the ideal's bytes here).
    carry_on(begin(raw, s), s) is evaluate(raw, s)."""
    values, errors = parse_options(raw)
    if errors:
        return Evaluation(values, tuple(errors))
    try:
        scenario = build_scenario(values)
        result = compute(scenario.model, scenario.workload, scenario.deployment, searches=searches)
    except Exception as e:      # noqa: BLE001 - the one boundary: no input may end in a traceback
        return refused(values, e)
    return Evaluation(values, (), scenario, result)


def searched(evaluation: Evaluation) -> Evaluation:
    """evaluate(values) from any evaluation of the same values that built its scenario (begin's,
    or one with searches=False): the scenario is a function of the values alone, so only the
    sizing is done again, with its searches."""
    if not evaluation.ok:
        return evaluate(evaluation.values)
    scenario = evaluation.scenario
    try:
        result = compute(scenario.model, scenario.workload, scenario.deployment)
    except Exception as e:      # noqa: BLE001 - the one boundary: no input may end in a traceback
        return refused(evaluation.values, e)
    return carry_on(Evaluation(evaluation.values, (), scenario, result))


def carry_on(begun: Evaluation, searches: bool = True) -> Evaluation:
    """evaluate's second half on begin's answer: the engine's rules, the time bounds, the check."""
    if not begun.ok:
        return begun
    values, scenario, result = begun.values, begun.scenario, begun.result
    try:
        engine = _engine_answer(scenario, result, searches) if scenario.settings.engine else None
        timing, missing = _time_bounds(scenario, result, engine)
        evaluation = Evaluation(values, (), scenario, result, engine, timing, missing)
        check_figures(evaluation)
    except Exception as e:      # noqa: BLE001 - the one boundary: no input may end in a traceback
        return refused(values, e)
    return evaluation


def refused(values: dict, error: Exception) -> Evaluation:
    """The boundary's answer to a fault: a refusal as it came, anything else the refusal
    `unexpected` words."""
    return Evaluation(values, (error if isinstance(error, InputError) else unexpected(error, values),))


class Unexpected(InputError):
    """A refusal the engine did not foresee: shown like any other, and told apart by the tests,
    for which every one is a bug (an input that validation let through)."""


def unexpected(error: BaseException, values: dict) -> InputError:
    """A fault inside the engine as the refusal every entry shows: the model input it came from
    (a config, a checkpoint's list, a preset) and that no figure is shown rather than a wrong one."""
    field = next((name for name in ("hf-config", "layer-weights-bytes", "weights-bytes") if name in values),
                 None) or next((name for name in MODEL_INPUTS if name in values), "model")
    detail = str(error).splitlines()[0][:80] if str(error) else ""
    return Unexpected(field, f"these inputs reach a case the calculator cannot size ({type(error).__name__}"
                             f"{': ' + detail if detail else ''}); no figures rather than wrong ones")


def check_figures(evaluation: Evaluation) -> None:
    """Refuse an answer with a negative or non-finite figure (the ideal's, the engine's, the time
    bounds'): no valid input gives one, so one seen here is a value that slipped past
    validation, and showing it would be a lie."""
    answers = ((evaluation.result, ""), (evaluation.engine, "engine."), (evaluation.timing, "timing."))
    for name, value in (figure for answer, prefix in answers if answer is not None
                        for figure in _figures(answer, prefix)):
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError("model", f"{name} came out as {value}; no figures rather than wrong ones")
        if isinstance(value, (int, Fraction, float)) and value < 0 and name not in SIGNED_FIGURES:
            raise InputError("model", f"{name} came out negative ({value}); no figures rather than wrong ones")


# Figures that are negative by meaning: what is left for the cache after the weights (a
# deployment that does not fit has less than nothing).
SIGNED_FIGURES = frozenset({"kv_budget_bytes_per_gpu", "engine.kv_budget_bytes_per_gpu"})


def _figures(result, prefix: str = ""):
    for name, nested in _field_plan(type(result)):
        value = getattr(result, name)
        if nested and is_dataclass(value) and not isinstance(value, type):
            yield from _figures(value, f"{prefix}{name}.")
        elif isinstance(value, (int, float, Fraction)):
            yield prefix + name, value


_FIELD_PLANS: dict = {}


def _field_plan(cls) -> tuple:
    """(field name, may hold a dataclass) per field of a dataclass type, read once: a figure is
    an int, float or Fraction, so a field typed as one of those is never walked into."""
    plan = _FIELD_PLANS.get(cls)
    if plan is None:
        plan = _FIELD_PLANS[cls] = tuple((f.name, f.type not in _SCALAR_TYPES) for f in fields(cls))
    return plan


_SCALAR_TYPES = frozenset({int, float, bool, str, Fraction, int | None, float | None, bool | None, str | None,
                           Fraction | None})


def _engine_answer(scenario: Scenario, result: Result, searches: bool = True) -> EngineResult:
    """The engine's figures for the inputs the exact ideal sized, its longest context too."""
    out = engines.size(scenario, result)
    if not searches:
        return out
    longest, limited_by = engines.longest_context(scenario, out)
    return replace(out, max_context=longest, max_context_limited_by=limited_by)


def sized_as(evaluation: Evaluation, engine: str) -> Evaluation | None:
    """The same inputs sized by `engine`'s rules (its newest release unless the inputs name one
    for it), for a section that speaks for that engine whatever is chosen: its launch command.
    None where that engine refuses these inputs."""
    if evaluation.engine is not None and evaluation.engine.engine == engine:
        return evaluation
    scenario, result = evaluation.scenario, evaluation.result
    # The release given and a KV memory read from a log belong to the engine sized as; another
    # engine takes its newest release and sizes its own memory.
    other = replace(scenario, settings=replace(scenario.settings, engine=engine, release=None, release_given=False,
                                               kv_memory_gib=None, measured=None))
    try:
        if scenario.serving is not NO_SERVING:
            # What runs beside the model is sized by that engine's rules too (llama.cpp gives a
            # draft its own context; vLLM and SGLang pool it with the target's layers).
            serving, model, dep = for_engine(scenario.serving, scenario.deployment, engine)
            other = replace(other, model=model, deployment=dep, serving=serving)
            result = replace(result, weights_bytes_per_gpu=parallel.weights_bytes_per_gpu(scenario.serving.target, dep))
        return replace(evaluation, result=result, engine=engines.size(other, result))
    except InputError:
        return None


def _time_bounds(scenario: Scenario, result: Result, engine: EngineResult | None) -> tuple[Timing | None, str | None]:
    """(the time bounds, None), or (None, the reason there are none)."""
    work, dep, model, settings = scenario.workload, scenario.deployment, scenario.model, scenario.settings
    prompt = settings.prompt_tokens or work.context_tokens
    if prompt > work.context_tokens:
        raise InputError("prompt-tokens", f"a prompt of {prompt:,} tokens is longer than the context of "
                                          f"{work.context_tokens:,}; the context holds the prompt and what is generated")
    missing = ("a GPU preset (its bandwidth and peak FLOP/s)" if not dep.bandwidth_bytes_per_s else
               "this GPU's peak FLOP/s, which is not on record" if compute_precision(
                   settings.weights_dtype or model.weights_dtype, dict(dep.peak_flops)) is None else
               "the weights' size" if result.weights_bytes is None else
               "the parameter count" if not (model.params or model.active_params) else None)
    if missing:
        return None, f"time bounds need {missing}"
    chunk = settings.prefill_chunk
    if chunk is None:
        # The exact ideal prefills in the default engine's chunks (engines.DEFAULT's).
        chunk = engines.default_prefill_chunk(engine.engine if engine else engines.DEFAULT, scenario)
    return time_bounds(scenario, result, prompt, chunk, dict(dep.peak_flops)), None
