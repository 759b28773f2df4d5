"""The results: the headline summary and the figure cards (each with data-metric and the exact
data-value), the arithmetic written out, the live numbers in the explanations, and one GPU's
memory as a bar. Every text comes from the engine's `page_texts` and `memory_bar`."""

from kvcalc.words import size
from kvcalc.reports.memory_bar import memory_bar

from web.dom import lines_of, put, view
from web.errors import in_page_words


def write_metrics(metrics: dict) -> None:
    """Each figure: its text, its exact form, and the exact value in data-value."""
    for key, (value, figure, exact) in metrics.items():
        selector = f'[data-metric="{key}"]'
        put(selector + " .figure", figure)
        put(selector + " .exact", exact)
        put(selector, value, "value")


def render(texts: dict) -> None:
    write_metrics(texts["metrics"])
    put("#model-line", texts["model_line"])
    put("#conditions", texts["conditions"])
    for key, text in texts["metric_conditions"].items():
        put(f'[data-cond="{key}"]', text)
    view("#formula", item_tag="li").show(lines_of([in_page_words(line) for line in texts["formula"]]))
    for key, text in texts["live"].items():
        put(f'[data-live="{key}"]', text)


BAR_PARTS = ("weights", "draft", "lora", "encoder", "kv", "overhead", "free", "reserved")
# What a GPU holds beside the model's weights (a draft, LoRA slots, an encoder kept whole): drawn
# and named only when the inputs ask for it (memory_bar gives 0 otherwise).
BESIDE = ("draft", "lora", "encoder")


def render_bar(evaluation, scenario, u: str) -> None:
    bar = memory_bar(evaluation, scenario)
    shown = {key: max(0, bar.get(key) or 0) for key in BAR_PARTS}
    # Over the cap, the bar is drawn to what was asked for, so the overflow shows past the line.
    whole = max(bar["total"] or 0, sum(shown.values())) or 1
    legends = {}
    parts = [key for key in BAR_PARTS if key not in BESIDE or bar.get(key)]
    for key in BESIDE:
        put(f"#legend-item-{key}", key not in parts, "hidden")
    for key in BAR_PARTS:
        value = bar.get(key, 0)
        put(f"#bar-{key}", f"{shown[key] * 100 / whole:.3f}%", "width")
        put(f"#bar-{key}", "" if value is None else str(value), "bytes")
        legends[key] = "n/a (no GPU chosen)" if value is None else size(value, u) if value >= 0 \
            else f"none: over by {size(-value, u)}"
        put(f"#legend-{key}", legends[key])
        put(f"#legend-name-{key}", bar["labels"][key])
    put("#memory-bar", "true" if bar["fits"] else "false", "fits")
    over = "" if bar["fits"] else f"over the usable memory by {size(bar['over'], u)}: it does not fit" \
        if bar["over"] else ""
    put("#bar-over", over)
    label = "Per-GPU memory: " + ", ".join(f"{bar['labels'][key]} {legends[key]}" for key in parts) + (
        f"; {over}" if over else "")
    put("#memory-bar", label, "aria-label")
