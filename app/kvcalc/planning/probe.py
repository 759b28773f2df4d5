"""A probe asks only whether a deployment fits: the exact ideal and the engine's answer
(engines.answer, without the ends of its overhead band, which change the verdict's words, never
whether it fits), no time bounds and no longest-context search, screened first by the lower
bounds (bounds). With a request rate, the concurrency it must hold is Little's law on its own time
bounds, N = rate x (TTFT + output tokens x decode step at N), iterated from N = 1 (the step grows
with N, so the iteration rises to the least fixed point, or past what fits: the rate is more than
it serves); a lower bound, as queueing and scheduling only add.
"""

from dataclasses import dataclass, replace
from fractions import Fraction

from .. import engines
from ..evaluation import Evaluation, begin, carry_on, refused
from ..reports.verdict import verdict
from .ask import Ask
from .bounds import memo_key, room_bytes, room_key_of, screen_bytes


# Little's law iterations: the concurrency rises each step; past this many it is not settling.
FIXED_POINT_STEPS = 60


@dataclass(frozen=True)
class Probe:
    values: dict                              # the deployment's inputs, at the concurrency it must hold
    evaluation: Evaluation | None             # of these values, as judged (see quick_evaluation); None: not evaluated
    rate_met: bool = True
    fits: bool = False
    held: int | None = None                   # the requests it holds, where evaluation does not say

    @property
    def holds(self) -> int:
        """The requests it holds (-1: refused or not evaluated): the fallback picks the most."""
        evaluation = self.evaluation
        if evaluation is None:
            return -1 if self.held is None else self.held
        return (evaluation.capacity or 0) if evaluation.ok else -1


_UNKNOWN = object()


def quick_evaluation(ask: Ask, values: dict, memory: int, screen: bool, timed: bool = False) -> Evaluation | None:
    """Enough of evaluate(values, searches=False) to say whether the deployment fits: the exact
    ideal and the engine's answer (engines.answer: its sizing without the ends of its overhead
    band, which change the verdict's words, never whether it fits); with `timed`, all of it, the
    time bounds too. None when screened out before the engine's rules: the exact ideal's bytes on
    the busiest GPU (screen_bytes, worked out for a layout on the first GPU type and kept for the
    others) over the GPU's room (room_bytes, kept per GPU type where no layout moves it)."""
    key = ("screen", memo_key(values))
    room_key = room_key_of(values)
    if screen and _screened_out_as_kept(ask, key, room_key, memory):
        return None
    begun = begin(values, searches=False)
    if screen and begun.ok and _screened_out(ask, key, room_key, memory, begun):
        return None
    if timed or not begun.ok or not begun.scenario.settings.engine:
        return carry_on(begun, searches=False) if timed else begun
    try:
        engine = engines.answer(begun.scenario, begun.result)
    except Exception as e:      # noqa: BLE001 - as evaluate: a fault is a refusal, the row says which
        return refused(begun.values, e)
    return replace(begun, engine=engine)


def _screened_out_as_kept(ask: Ask, key: tuple, room_key: tuple, memory: int) -> bool:
    """Screened out before anything is worked out: the layout's bytes on its busiest GPU, kept
    from another GPU type, over this GPU type's room as kept (else its whole memory)."""
    known = ask.memo.get(key, _UNKNOWN)
    room = ask.memo.get(room_key, memory)
    return known is not _UNKNOWN and known is not None and known > room


def _screened_out(ask: Ask, key: tuple, room_key: tuple, memory: int, begun: Evaluation) -> bool:
    """Screened out once begun: the layout's bytes on its busiest GPU (worked out here the first
    time and kept) over the room this deployment's rules leave (kept for the GPU type where no
    layout moves it)."""
    known = ask.memo.get(key, _UNKNOWN)
    if known is _UNKNOWN:
        known = ask.memo[key] = screen_bytes(begun, ask.engine)
    if known is None:
        return False
    room = room_bytes(begun)
    # Kept per GPU type where the chosen rules' memory for the weights and the cache (the
    # total times the utilization, before any overhead) depends on the GPU and the settings
    # only (the exact ideal's; an engine's USABLE_BY_GPU): SGLang's mem_fraction_static
    # shrinks as tp x pp grows, so its room is taken layout by layout.
    if (not ask.engine or engines.member(engines.REGISTRY[ask.engine], "USABLE_BY_GPU")) and room is not None:
        ask.memo[room_key] = room
    return known > (memory if room is None else room)


def probe_deployment(ask: Ask, values: dict, memory: int, screen: bool = True) -> Probe:
    """Whether the deployment fits at the concurrency it must hold (the inputs' requests, or
    Little's law's), without the longest-context searches.

    Little's law: N = rate x (TTFT + output tokens x decode step at N), each bound at N requests.
    The right side grows with N, so iterating from N = 1 rises to its least fixed point (never
    past it: below a fixed point the next N stays below it); it stops there, or once N is more
    than the deployment holds (the rate is past what it serves: the decode step grows with N, so
    a rate above what the largest batch decodes has no fixed point within it), or after
    FIXED_POINT_STEPS steps without settling."""
    if ask.rate is None:
        evaluation = quick_evaluation(ask, values, memory, screen)
        return Probe(values, evaluation, True, evaluation is not None and verdict_fits(evaluation))
    batch = 1
    for _ in range(FIXED_POINT_STEPS):
        row_values = dict(values, batch=batch)
        evaluation = quick_evaluation(ask, row_values, memory, screen, timed=True)
        if evaluation is None or not evaluation.ok:
            return Probe(row_values, evaluation, False)
        step, ttft = step_seconds(evaluation), _ttft_seconds(evaluation)
        if step is None:
            return Probe(row_values, evaluation, rate_met=False)
        needed = _ceil(ask.rate * (ttft + ask.output_tokens * step))
        if needed <= batch:
            return Probe(row_values, evaluation, True, verdict_fits(evaluation))
        capacity = evaluation.capacity
        if capacity is not None and needed > capacity:
            # More requests in flight than fit: the rate is past what it serves.
            return Probe(dict(values, batch=needed), None, rate_met=False, held=capacity)
        batch = needed
    return Probe(row_values, evaluation, rate_met=False)


def verdict_fits(evaluation: Evaluation) -> bool:
    if not evaluation.ok:
        return False
    return bool(verdict(evaluation.scenario, evaluation).fits)


def step_seconds(evaluation: Evaluation) -> Fraction | None:
    timing = evaluation.timing
    return timing.decode_step_seconds if timing else evaluation.result.decode_step_seconds


def _ttft_seconds(evaluation: Evaluation) -> Fraction:
    timing = evaluation.timing
    return timing.ttft_seconds if timing else Fraction(0)


def _ceil(value: Fraction) -> int:
    return max(1, -(-value.numerator // value.denominator))
