"""Issue 34 item 6 on the page: the memory chart's hover gives weights from a rounded parameter count
(Qwen3-235B-A22B's card figure, 235B: 470,000,000,000 B in bf16) as "≈", never to the byte, and
neither the budget they leave; weights counted from a config (Llama 3.1 8B's 16,060,522,496 B) are
given to the byte."""

from pagekit import open_folds, open_page, settle


def hover_rows(page) -> dict:
    """The memory chart's tooltip at the middle of its plot: each line's label and its text."""
    open_folds(page, "charts")
    page.locator("#chart-memory").scroll_into_view_if_needed()
    plot = page.locator("#chart-memory .u-over").bounding_box()
    page.mouse.move(plot["x"] + plot["width"] * 0.5, plot["y"] + plot["height"] / 2)
    page.wait_for_function("() => { const tip = document.querySelector('#chart-memory .chart-tip');"
                           " return !tip.hidden && tip.innerText.includes('weights per GPU'); }")
    rows = page.eval_on_selector_all("#chart-memory .chart-tip > div:not(.chart-tip-x)",
                                     "rows => rows.map(r => [r.querySelector('.chart-tip-name').textContent,"
                                     " r.textContent])")
    return {name: text[len(name):].strip() for name, text in rows}


def test_rounded_weights_are_never_hovered_to_the_byte(page, site):
    open_page(page, site + "#model=Qwen/Qwen3-235B-A22B&gpu=h200-141gb&gpus=8&engine=exact")
    settle(page)
    rows = hover_rows(page)
    weights = rows["weights per GPU"]
    assert weights.startswith("≈ 54.72 GiB") and "rounded parameter count" in weights, weights
    assert " B)" not in weights and "58,750,000,000" not in weights
    budget = next(text for name, text in rows.items() if "budget" in name)
    assert budget.startswith("≈ ") and " B)" not in budget, budget


def test_exact_weights_are_hovered_to_the_byte(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&gpu=h100-sxm-80gb&engine=exact")
    settle(page)
    assert hover_rows(page)["weights per GPU"] == "14.96 GiB (16,060,522,496 B)"
