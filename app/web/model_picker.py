"""The model input: one searchable combobox over the presets (ARIA 1.2 combobox with a
listbox popup), and its peers: paste a config.json, open a file, or give custom dimensions.

The chosen model lives in the hidden #model control the form reads: a preset id, "config" or
"custom". The presets' ranking is the engine's (`presets.search_models`); this module only
shows it and follows the keyboard and the pointer."""

from pyscript import document

from kvcalc.readers import presets
from kvcalc.errors import InputError
from kvcalc.readers.hfconfig import parse_config_text

from web import state
from web.dom import absent, el, js_obj, put

SOURCES = {"config": "#source-config", "custom": "#source-custom"}
_options = {}           # preset id -> its option element, in the page's order
_shown = []             # ids listed now, best first
_active = [-1]          # index into _shown of the highlighted option
NEAREST = js_obj({"block": "nearest"})   # scroll a highlighted option into view, no further
PLACEHOLDER = el("#model-search").placeholder


def _all_options() -> dict:
    if not _options:
        for option in document.querySelectorAll("#model-list [role=option]"):
            _options[option.dataset.value] = option
    return _options


def choose(value: str) -> None:
    """Make `value` (a preset id or alias, a name the CLI would resolve to one, "config" or
    "custom") the model, as text in the combobox and as the hidden control's value."""
    options = _all_options()
    match = presets.model_match_for(value) if value not in SOURCES else None
    preset = value
    if match is not None and not match.weights_differ:
        # A checkpoint whose weights are not the preset's stays as typed; so does a repo the preset
        # lists as its alias (an Instruct release), which its launch commands serve.
        preset = match.entry["id"]
        value = presets.repo_alias(match.entry, value) or preset
    el("#model").value = value
    box = el("#model-search")
    box.value = "" if value in SOURCES else (options[preset].dataset.name if preset in options else value)
    box.placeholder = PLACEHOLDER
    for option_id, option in options.items():
        option.setAttribute("aria-selected", "true" if option_id == preset else "false")
    for source, selector in SOURCES.items():
        put(selector, "true" if value == source else "false", "aria-pressed")
    _close()
    show_fields()


def current() -> str:
    return el("#model").value


def show_fields() -> None:
    choice = current()
    put("#custom-fields", choice != "custom", "hidden")
    put("#config-fields", choice != "config", "hidden")
    mla = el("#attention-kind").value == "mla"
    for element in document.querySelectorAll(".kind-mla"):
        element.hidden = not mla
    for element in document.querySelectorAll(".kind-gqa"):
        element.hidden = mla


# ---- the combobox --------------------------------------------------------------------

def _list(query: str, highlight_current: bool = False) -> None:
    """Show the presets that match, best first, and highlight the first (or, opening the whole
    list, the model chosen now, so Enter keeps it)."""
    options = _all_options()
    ids = [entry["id"] for entry in presets.search_models(query)]
    ids = [i for i in ids if i in options]
    if ids != _shown:
        box = el("#model-list")
        for option_id, option in options.items():
            option.hidden = True
        for option_id in ids:
            option = options[option_id]
            option.hidden = False
            box.appendChild(option)        # moves it: the list's order is the ranking
        _shown[:] = ids
    n = len(ids)
    put("#search-status", "" if not query.strip() else
        f"{n} model matches" if n == 1 else f"{n} models match" if n else "No model matches; try fewer words.")
    start = ids.index(current()) if highlight_current and current() in ids else 0
    _highlight(start if ids else -1)
    _open()


def _open() -> None:
    put("#model-list", False, "hidden")
    put("#model-search", "true", "aria-expanded")


def _close() -> None:
    put("#search-status", "")
    put("#model-list", True, "hidden")
    put("#model-search", "false", "aria-expanded")
    _highlight(-1)


def _highlight(index: int) -> None:
    before = _active[0]
    if 0 <= before < len(_shown):
        _all_options()[_shown[before]].classList.remove("active")
    _active[0] = index
    if 0 <= index < len(_shown):
        option = _all_options()[_shown[index]]
        option.classList.add("active")
        el("#model-search").setAttribute("aria-activedescendant", option.id)
        option.scrollIntoView(NEAREST)
    else:
        el("#model-search").removeAttribute("aria-activedescendant")


def _restore() -> None:
    """Put the chosen model's name back after a search that chose nothing."""
    choose(current())


def on_input(_event) -> None:
    _list(el("#model-search").value)


def on_key(event) -> bool:
    """Arrow keys move through the list, Enter picks, Escape closes. True when a model was picked."""
    key = event.key
    expanded = not el("#model-list").hidden
    if key in ("ArrowDown", "ArrowUp"):
        event.preventDefault()
        if not expanded:
            _list("", highlight_current=True)
            return False
        step = 1 if key == "ArrowDown" else -1
        if _shown:
            _highlight((_active[0] + step) % len(_shown))
        return False
    if key == "Enter":
        event.preventDefault()          # never submit the form
        if expanded and 0 <= _active[0] < len(_shown):
            return _pick(_shown[_active[0]])
        return False
    if key == "Escape" and expanded:
        event.preventDefault()
        _restore()
    return False


def on_list_pointer(event) -> None:
    event.preventDefault()              # keep focus in the combobox while the pointer picks


def on_list_click(event) -> bool:
    option = event.target.closest("[role=option]")
    if absent(option):
        return False
    el("#model-search").focus()
    return _pick(option.dataset.value)


def on_click(_event) -> None:
    if el("#model-list").hidden:
        box = el("#model-search")
        # Searching starts afresh: the chosen model's name waits in the placeholder, and comes
        # back if nothing is picked.
        if box.value:
            box.placeholder = box.value
            box.value = ""
        _list("", highlight_current=True)


def on_blur(_event) -> None:
    if not el("#model-list").hidden:
        _restore()


def _pick(model_id: str) -> bool:
    changed = model_id != current()
    choose(model_id)
    return changed


# ---- the other ways to give a model --------------------------------------------------

def use_source(source: str) -> None:
    """Paste config.json or Custom dimensions: show its fields and put the cursor there."""
    choose(source)
    el("#hf-config" if source == "config" else "#layers").focus()


def parse_config() -> None:
    """Read the config box into the shared state: a config, or why it is not one."""
    text = el("#hf-config").value
    state.config, state.config_error = None, None
    if text.strip():
        try:
            state.config = parse_config_text(text)
        except InputError as e:
            state.config_error = e
