"""What do I need? until it is first asked for: when the page plans (its section near the screen,
a plan input set, or a verdict that does not fit), the plan's task that stops an older one, and
the section's events. Light on purpose: the planner (kvcalc.planning.plan, web.plan_view and its table)
is imported by the first plan, so the page starts without it."""

import asyncio

import js

from kvcalc.inputs.options import OPTIONS

from web import form, state
from web.dom import el, guarded, js_obj, on, proxy, put
from web.generated_code import precompiled

PLAN_FIELDS = tuple(o.name for o in OPTIONS if o.group == "plan")
_tasks = set()                  # asyncio keeps only a weak reference to a running task


def side_step() -> None:
    """After an update (web.loop's side steps): planned once the section has been on screen, a
    plan input is set, or the verdict does not fit; otherwise web.plan_view is never loaded."""
    fits = None if state.current is None else state.current.get("fits")
    if state.plan_seen or fits is False or any(form.fields.get(name, "") != (form.DEFAULTS.get(name) or "")
                                               for name in PLAN_FIELDS):
        plan_now()
    else:
        put("#plan-best", True, "hidden")


def plan_now() -> None:
    """Plan the last valid inputs, in slices (web.plan_view.run), stopping any plan still running."""
    if state.evaluation is None or state.stale:
        return                  # the inputs are in error: the last plan stays
    state.plan_generation += 1
    put("#plan", "computing", "state")
    put("#plan-best", True, "hidden")
    task = asyncio.ensure_future(_task(state.plan_generation, state.evaluation.values))
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


async def _task(generation: int, values: dict) -> None:
    try:
        with precompiled():
            from web import plan_view       # loaded on first use, not at start-up
        await plan_view.run(generation, values)
    except Exception as e:      # noqa: BLE001 - a fault in the plan is said in its section
        put("#plan-status", f"The plan failed: {type(e).__name__}: {e}")
        put("#plan", "failed", "state")


def wire(update) -> None:
    """The section's events; `update` recomputes the single view (web.loop.update)."""
    def on_seen(entries, *_) -> None:
        # The section came near the screen: planned now, and after every update from now on.
        if not state.plan_seen and any(entry.isIntersecting for entry in entries):
            state.plan_seen = True
            plan_now()

    def on_choose(event) -> None:
        from web import plan_table          # loaded with the first plan, whose rows are clicked
        if not plan_table.sort_by(event) and plan_table.choose(event):
            update()

    def on_everything(*_) -> None:
        with precompiled():
            from web import plan_view
        plan_view.toggle_everything()
        state.plan_seen = True
        plan_now()

    on(el("#plan-table"), "click", on_choose)
    on(el("#plan-everything"), "click", on_everything)
    js.IntersectionObserver.new(proxy(guarded(on_seen)), js_obj({"rootMargin": "200px"})).observe(el("#plan"))
