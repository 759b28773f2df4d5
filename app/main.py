"""The page's entry point: wires the browser modules (package `web`) to the page's events and
starts. Every figure comes from the engine (`kvcalc`, the same package the CLI runs)."""

from pyscript import document, window

window.performance.mark("kvcalc-python")      # the boot script's watchdog: Python is running


def failed(exc: BaseException) -> None:
    """Python's own failure: the boot script's "failed" state, with the reason and the Reload
    button (the stylesheet shows it), never "loading" forever."""
    document.documentElement.dataset.state = "failed"
    document.getElementById("status").hidden = False
    document.getElementById("status-text").textContent = \
        f"The calculator failed to start: {type(exc).__name__}: {exc}. Reload to try again."


try:
    from web.generated_code import precompiled

    # The engine's dataclass methods come compiled with the build (web/generated_code.py).
    with precompiled():
        from kvcalc.reports import link

        from web import (early, engine_view, folds, form, later, loop, model_picker, plan_start, privacy,
                         sections, serving_fields, share, state, strip)
        from web import files as files_module
        from web.dom import HTML, el, on, put, watch_scrolling_tables
except Exception as exc:
    failed(exc)
    raise


def on_user_input(event) -> None:
    if event.target.id == "startup-log":
        return          # the log box is no input: what it gives is written when it has been read
    put("#link-notes", "")      # the notes were about the link; the inputs are the user's now
    form.note(event.target)
    loop.update()


def on_model_picked(picked: bool) -> None:
    if picked:
        files_module.forget()
        form.sync()
        _model_given()
        loop.update()


def _model_given() -> None:
    if state.reading is not None:
        from web import log_paste           # loaded with the log that made state.reading
        log_paste.model_given()


def on_config_text(*_) -> None:
    model_picker.parse_config()
    _model_given()
    loop.update()


def after_file() -> None:
    form.sync()
    loop.update()


def take_files(files) -> None:
    import asyncio
    # The list is taken now: the input is cleared right after, and its FileList with it.
    chosen = [files.item(i) for i in range(files.length)]
    asyncio.ensure_future(files_module.open_files(chosen, after_file))


def on_config_file(event) -> None:
    files = event.target.files
    if files.length:
        take_files(files)
    event.target.value = ""          # the same file chosen again is read again


def on_drop(event) -> None:
    # Only files are ours to take; text dropped into the box goes in as the browser does it.
    files = event.dataTransfer.files if event.dataTransfer else None
    if files and files.length:
        event.preventDefault()
        take_files(files)


def on_dragover(event) -> None:
    types = event.dataTransfer.types if event.dataTransfer else None
    if types and types.includes("Files"):
        event.preventDefault()      # so a dropped file is read here, not opened over the page


def on_source(source: str):
    def handler(*_):
        files_module.forget()
        model_picker.use_source(source)
        form.sync()
        loop.update()
    return handler


def after_log() -> None:
    put("#link-notes", "")      # the inputs are the log's now
    loop.update()


def on_log_toggle(*_) -> None:
    from web import log_paste           # the log reader is loaded on first use, not at start-up
    log_paste.toggle()


def on_log_text(*_) -> None:
    import asyncio
    from web import log_paste
    asyncio.ensure_future(log_paste.take(after_log))


def on_forget_log(*_) -> None:
    from web import log_paste
    log_paste.forget(loop.update)
    el("#startup-log").focus()


def _use_fix(event) -> None:
    from web import fixes_view           # loaded with the first fix shown, whose button was clicked
    fixes_view.use(event, loop.update)


def on_attention_kind(*_) -> None:
    model_picker.show_fields()
    form.sync()
    loop.update()


def load_link(fragment: str) -> None:
    kept = share.load(fragment)
    if state.reading is not None:
        from web import log_paste
        log_paste.drop()            # the panel was about the log, not about this link's inputs
    if "hf-config" in kept:
        model_picker.parse_config()
    loop.update()


def on_hash_change(*_) -> None:
    fragment = share.changed_from_outside()
    if fragment is not None:
        load_link(fragment)


def on_pin(*_) -> None:
    folds.on_pin(link.encode(form.link_values(form.read())))
    loop.update()


def on_compare_click(event) -> None:
    if folds.on_unpin(event):
        loop.update()
        el("#pin").focus()        # the button pressed is gone with the header row it sat in


def on_context_shortcut(event) -> None:
    if form.on_context_shortcut(event):
        loop.update()


def wire() -> None:
    on(el("#calc"), "input", on_user_input)
    on(el("#calc"), "submit", lambda event: event.preventDefault())
    search = el("#model-search")
    on(search, "input", model_picker.on_input)
    on(search, "keydown", lambda event: on_model_picked(model_picker.on_key(event)))
    on(search, "click", model_picker.on_click)
    on(search, "blur", model_picker.on_blur)
    on(el("#model-list"), "mousedown", model_picker.on_list_pointer)
    on(el("#model-list"), "click", lambda event: on_model_picked(model_picker.on_list_click(event)))
    on(el("#source-config"), "click", on_source("config"))
    on(el("#source-custom"), "click", on_source("custom"))
    on(el("#source-log"), "click", on_log_toggle)
    on(el("#startup-log"), "input", on_log_text)
    on(el("#forget-log"), "click", on_forget_log)
    on(el("#source-file"), "click", lambda *_: el("#hf-config-file").click())
    on(el("#attention-kind"), "change", on_attention_kind)
    on(el("#hf-config"), "input", on_config_text)
    on(el("#hf-config-file"), "change", on_config_file)
    files_module.wire()
    on(document, "dragover", on_dragover)
    on(document, "drop", on_drop)
    on(el(".shortcuts"), "click", on_context_shortcut)
    on(el("#plan-fields"), "input", on_user_input)
    on(el("#together-fields"), "input", on_user_input)
    plan_start.wire(loop.update)
    on(el("#fix-list"), "click", _use_fix)
    serving_fields.wire()
    on(el("#copy-link"), "click", share.on_copy)
    on(window, "hashchange", on_hash_change)
    watch_scrolling_tables()
    on(window, "pagehide", share.flush)
    on(el("#pin"), "click", on_pin)
    on(el("#compare-table"), "click", on_compare_click)
    folds.wire(on)
    on(el("#recheck-files"), "click", privacy.list_loaded_files)
    on(el("#copy-engine-log"), "click", engine_view.on_copy)
    on(el("#strip-toggle"), "click", strip.on_toggle)
    on(el("#summary .verdict"), "click", strip.on_verdict_click)
    on(document, "click", share.on_anchor_click)
    sections.wire(share.on_section_toggle)


def main() -> None:
    later.install()
    typed = early.take()
    early.forget_preview()         # the boot script's view of the link; share.load reads it here
    wire()
    form.sync()
    fragment = share.current_fragment()
    if fragment:
        kept = share.load(fragment)
        if "hf-config" in kept:
            model_picker.parse_config()
    else:
        model_picker.show_fields()
    if typed:
        early.restore(typed)
        form.sync()
        put("#link-notes", "")       # what the user typed now stands over the link
    loop.update()
    if "model-search" in typed:
        model_picker.on_input(None)
    loop.finish_now()
    sections.settled()
    for button in document.querySelectorAll("#export-download, #export-copy, [data-until-ready]"):
        button.disabled = False
    el("#status").hidden = True
    HTML.dataset.state = "ready"
    window.performance.mark("kvcalc-ready")
    later.fetch_in_background()
    privacy.list_loaded_files()
    privacy.register_offline_copy()


try:
    main()
except Exception as exc:   # the page must say it failed, not sit in "loading" forever
    failed(exc)
    raise
