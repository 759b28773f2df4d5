"""Beside the model (issue 26): for each production part the inputs ask for (a draft or MTP
heads, LoRA slots, a vision encoder, a KV offload tier, a prefix hit rate), its headline figures
and the engine's sentences with their formula and source (the inputs they name said by their
labels, as the page's arithmetic says them). Every figure is the engine's
(`page_texts(...)["data"]["serving"]`, kvcalc.serving.figures); here each is only named,
written in the page's unit, or left out where the engine gives none. Hidden when no part is
asked for."""

from fractions import Fraction

from kvcalc.words import size

from web.dom import lines_of, put, view
from web.errors import in_page_words

# part -> its figures shown: (key in the part's figures, its name on the page, how it is written).
FIGURES = {
    "draft": (("name", "Draft", "text"), ("spec_tokens", "Tokens proposed a step", "count"),
              ("draft_weights_bytes", "Draft weights, total", "bytes"),
              ("draft_weights_bytes_per_gpu", "Draft weights per GPU", "bytes"),
              ("draft_kv_bytes_per_token", "Draft KV per token, per GPU", "bytes"),
              ("draft_kv_bytes_per_gpu", "Draft KV for the requests, per GPU", "bytes")),
    "lora": (("max_loras", "Adapter slots", "count"), ("max_lora_rank", "Rank of every slot", "count"),
             ("lora_bytes_per_gpu", "LoRA slots per GPU", "bytes")),
    "encoder": (("encoder_params", "Vision tower parameters", "count"),
                ("encoder_weights_bytes", "Encoder weights, total", "bytes"),
                ("encoder_weights_bytes_per_gpu", "Encoder weights per GPU", "bytes"),
                ("encoder_added_bytes_per_gpu", "Added beyond the model's share, per GPU", "bytes"),
                ("encoder_budget_tokens", "Encoder cache budget", "tokens"),
                ("encoder_cache_bytes", "Encoder cache, estimated, per GPU", "bytes")),
    "offload": (("offload_bytes", "Offload tier", "bytes"), ("offload_host_bytes", "On the busiest host", "bytes"),
                ("offload_tokens", "Tokens the tier holds", "tokens"),
                ("offload_requests", "Whole requests it holds", "count"),
                ("offload_restore_seconds", "Bringing one request back, at least", "seconds")),
    "prefix_hits": (("prefix_hit_rate", "Hit rate", "number"),
                    ("expected_cached_tokens_per_request", "Expected cached tokens per request", "tokens"),
                    ("expected_requests_fit", "Expected requests that fit", "count"),
                    ("expected_prefill_tokens_skipped", "Expected prefill skipped per request", "tokens")),
}


def _number(value) -> str:
    """An int grouped; an expectation (a Fraction) to two decimals where it is not whole."""
    value = Fraction(value)
    if value.denominator == 1:
        return f"{value.numerator:,}"
    return f"{float(value):,.2f}"


def _seconds(value) -> str:
    seconds = float(value)
    return f"{seconds * 1000:,.1f} ms" if seconds < 1 else f"{seconds:,.2f} s"


def figure(value, how: str, unit: str) -> tuple[str, str]:
    """(the figure as shown, its exact form) for one value."""
    if how == "bytes":
        return size(value, unit), f"{value:,} B"
    if how == "tokens":
        return f"{_number(value)} tokens", ""
    if how == "seconds":
        return _seconds(value), f"{float(value):.6g} s, a lower bound"
    if how == "text":
        return str(value), ""
    return _number(value), ""


def render(data: dict, unit: str) -> None:
    """Each part asked for, its figures and lines; the section hidden when none is."""
    parts = data.get("serving") or {}
    put("#serving-view", not parts, "hidden")
    for part, shown in FIGURES.items():
        figures = parts.get(part)
        put(f"#serving-{part}", figures is None, "hidden")
        if figures is None:
            continue
        rows = []
        for key, name, how in shown:
            value = figures.get(key)
            if value is None or isinstance(value, bool):
                continue            # not given for this engine or these inputs: the lines say why
            text, exact = figure(value, how, unit)
            rows.append(("", [(name, None, ""), (text, str(value), "figure"), (exact, None, "exact")]))
        view(f"#serving-{part}-figures", item_tag="div", first_cell_tag="dt", cell_tag="dd").show(rows)
        lines = [in_page_words(line) for line in figures.get("lines") or []]     # inputs named by their labels
        view(f"#serving-{part}-lines", item_tag="li").show(lines_of(lines))
