"""What the summary and the log's panel say of a pasted log after every update: its printed
figures beside ours, those that differ by more than its rounding, the layout and the GPU it does
not say (asked for until the user gives them), and a log naming no model read over a config or
dimensions the user gave. Split from web.log_paste, which reads the text and fills the form."""

from kvcalc.inputs import log_flow
from kvcalc.inputs.startup_log import MEASURED_PARTS, comparison

from web import errors, form, state, strip
from web.dom import put, view

MEASURED = (*MEASURED_PARTS, "measured-with", "kv-memory-gib")   # what "Forget the log" clears

set_by_log = {}                  # field -> the value the log put there
_model_at_paste = [None]         # the model inputs the log was read over: an edit of them since is a choice
_layout_at_paste = [None]        # the layout fields then: an edit of them answers a layout the log does not say
_gpu_at_paste = [None]           # the GPU fields then: an edit of them answers a GPU the log does not name


def remember() -> None:
    """The inputs as the log left them: an edit since is the user's answer."""
    _model_at_paste[0] = errors.model_inputs(form.read())
    _layout_at_paste[0] = _layout()
    _gpu_at_paste[0] = _gpu()


def _layout() -> dict:
    return {name: form.fields.get(name, "") for name in log_flow.LAYOUT_GIVEN}


def _gpu() -> dict:
    return {name: form.fields.get(name, "") for name in log_flow.GPU_GIVEN}


def gpu_is_the_logs() -> bool:
    """The GPU fields are as the log left them (the user has not chosen one since the paste)."""
    return _gpu() == _gpu_at_paste[0]


def model_warning() -> None:
    """A log naming no model read over a config or dimensions the user gave: the figures assume
    them, said in the panel until the model is chosen again. (A model withheld is said beside
    the box and in the summary instead.)"""
    reading = state.reading
    given = reading is None or log_flow.model_given(reading) or log_flow.named_model(reading) is not None
    if given or errors.held() or errors.model_inputs(form.read()) != _model_at_paste[0]:
        put("#log-model", True, "hidden")
        return
    chosen = "the pasted config.json" if form.model_choice() == "config" else "custom dimensions"
    put("#log-model", False, "hidden")
    put("#log-model", f"The log names no model: every figure here assumes {chosen}, the model chosen now. "
                      "Choose the model the log's server ran if it is another.")


def render_comparison() -> None:
    """The log's figures beside what the inputs on screen give: a side step of every update. In
    the summary: the figures that differ by more than the log's rounding, and the layout the
    log does not say, asked for."""
    if state.reading is None:
        put("#log-check", True, "hidden")
        strip.relabel()
        _from_link()
        return
    rows = comparison(state.reading, state.evaluation)
    view("#log-compare tbody").show([("", [(label, None, ""), (printed, None, "num"), (ours, None, "num"),
                                           (f"{line:,}", None, "num")]) for label, printed, ours, line in rows])
    put("#log-compare", not rows, "hidden")
    model_warning()
    empty = log_flow.no_cache(state.reading)
    said = [empty[:1].upper() + empty[1:] if empty else "",
            log_flow.mismatch_text(log_flow.mismatches(state.reading, state.evaluation))]
    user_gave = _layout() != _layout_at_paste[0]
    assumed = log_flow.assumed_layout(state.reading, state.evaluation, user_gave)
    if assumed:
        assumed = ", ".join(f"{errors.label(name)} {value}" for name, value in assumed)
        said.append(f"The log does not say its layout: these figures assume {assumed}; "
                    "set it as the log's server ran")
    gpu = log_flow.assumed_gpu(state.reading, state.evaluation, _gpu() != _gpu_at_paste[0])
    if gpu:
        why = log_flow.gpu_unsaid(state.reading)
        said.append(f"{why[0].upper()}{why[1:]}: the memory checks use the {gpu} on screen; "
                    "choose the one its server ran")
    text = ". ".join(part for part in said if part)
    put("#log-check", text + "." if text else "")
    put("#log-check", not text, "hidden")
    strip.relabel()


def _from_link() -> None:
    """A link (or a reload) carries what a log measured, not the log: the panel says so and
    keeps "Forget the log" at hand."""
    measured = {name: form.fields.get(name, "") for name in MEASURED}
    measured = {name: value for name, value in measured.items() if value}
    if "measured-with" not in measured or measured == set_by_log:
        return                           # nothing measured, or said already (the box may be closed since)
    set_by_log.clear()
    set_by_log.update(measured)
    put("#log-fields", False, "hidden")
    put("#source-log", "true", "aria-pressed")
    put("#log-reading", False, "hidden")
    figures = ", ".join(f"{name} {value}" for name, value in measured.items() if name != "measured-with")
    put("#log-summary", "These inputs carry figures a start-up log measured" + (f" ({figures})" if figures else "")
        + ", never the log itself: paste it again to see each line they came from.")
    put("#log-model", True, "hidden")
    put("#log-compare", True, "hidden")
    put("#log-read", True, "hidden")
    put("#log-not-read", "")
    view("#log-notes", item_tag="li").show([])
