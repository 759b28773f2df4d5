"""One update: read the form, ask the engine, show errors or the figures. The headline figures
(and the charts and time, where their folds are open) are written first; the open folds' tables,
comparison, commands, export and source's formula follow step by step (web.folds), in the same
task unless a keystroke waits; the link once edits pause."""

from pyscript import window

from kvcalc.evaluation import evaluate
from kvcalc.reports.report import page_texts

from web import engine_view, errors, folds, form, pending, plan_start, results, serving_view, share, state
from web.dom import absent, guarded, proxy, put


def update(*_) -> None:
    """One update; whatever goes wrong in it is said as a refusal and marks the figures stale."""
    try:
        _update()
    except Exception as e:      # noqa: BLE001 - see dom.guarded
        errors.fault(e)


def _update() -> None:
    raw = state.raw = form.read()
    problems = []
    if form.model_choice() == "config":
        if state.config_error is not None:
            problems.append(state.config_error)
        elif state.config is None:
            errors.waiting("waiting for a config.json: showing the last figures")
            folds.pin_button()
            return
    evaluation = None if problems else evaluate(raw)
    if evaluation is not None:
        problems = list(evaluation.errors)
    problems = errors.with_held(problems, raw)      # a pasted log's refusal, or its model not known yet
    errors.show(problems, form.model_choice())
    folds.pin_button()
    if problems:
        return
    u = state.unit = form.unit()
    scenario = evaluation.scenario
    state.computed = (scenario, evaluation)
    state.evaluation = evaluation
    texts = state.texts = page_texts(scenario, evaluation, u)
    state.current = texts["data"]
    results.render(texts)
    engine_view.render(texts["engine"])
    folds.draw_with_figures()           # the charts and the time, while their folds are open
    results.render_bar(evaluation, scenario, u)
    serving_view.render(texts["data"], u)
    if not state.valid_once:
        window.performance.mark("kvcalc-figures")
    state.valid_once = True
    _schedule_side_sections()
    share.schedule(raw)


def _schedule_side_sections() -> None:
    """This update's side sections, each a step: run at once while no keystroke waits (the
    browser says so: navigator.scheduling.isInputPending), so the page is whole in the same
    frame; when one waits, or where the browser cannot tell, the rest go to a later task and
    the keystroke goes first."""
    _side[:] = SIDE_STEPS
    pending.mark("side", True)
    if _CAN_TELL:
        run_side_sections()
    else:
        window.setTimeout(_side_proxy, 0)


def run_side_sections(*_) -> None:
    try:
        while _side:
            if _CAN_TELL and _input_pending():
                window.setTimeout(_side_proxy, 0)
                return
            _side.pop(0)()
    except BaseException:
        _side.clear()           # failed and said so (dom.guarded): nothing is left waiting
        raise
    finally:
        if not _side:
            pending.mark("side", False)


def _log() -> None:
    # Only once a log was pasted, or a link carries what one measured: web.log_check is loaded then.
    if state.reading is not None or form.fields.get("measured-with"):
        from web import log_check
        log_check.render_comparison()


def _fixes() -> None:
    # Only for a failed start pasted, or a verdict that does not fit: web.fixes_view is loaded then.
    if state.failed is not None or (state.current or {}).get("fits") is False:
        from web import fixes_view
        fixes_view.render()
    else:
        put("#fixes", True, "hidden")


SIDE_STEPS = folds.SIDE_STEPS + (_log, _fixes, plan_start.side_step)
_side = []
_scheduling = getattr(window.navigator, "scheduling", None)
_CAN_TELL = not absent(_scheduling) and not absent(getattr(_scheduling, "isInputPending", None))


def _input_pending() -> bool:
    return bool(_scheduling.isInputPending())


_side_proxy = proxy(guarded(run_side_sections))


def finish_now() -> None:
    """Everything due written now: ready means everything on the page is current."""
    if pending.due["side"]:
        _side[:] = _side or SIDE_STEPS
        while _side:
            _side.pop(0)()
        pending.mark("side", False)
    if pending.due["link"]:
        share.flush()
