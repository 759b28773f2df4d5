"""The page's answer first, the rest one click away (issue 39): the sections beyond the answer
are closed until opened, the ones open ride in the link, a link to one opens it and lands below
the sticky summary, and the default page stays short in both viewports."""

import pytest

from pagekit import open_page, settle, url_of

# The default page's height with nothing opened (issue 39's limits), at each viewport.
LIMITS = {(1280, 800): 4000, (390, 844): 9000}


@pytest.mark.parametrize("width, height", list(LIMITS))
def test_the_default_page_is_short_with_nothing_opened(browser, site, width, height):
    context = browser.new_context(viewport={"width": width, "height": height}, service_workers="block")
    page = context.new_page()
    open_page(page, site)
    settle(page)
    assert page.evaluate("document.querySelectorAll('details[data-fold][open]').length") == 0
    # The answer is shown: the verdict, the headline figures and the engine's start-up lines.
    assert page.inner_text("#engine-log").startswith("Available KV cache memory")
    tall = page.evaluate("document.documentElement.scrollHeight")
    assert tall <= LIMITS[(width, height)], tall
    context.close()


def test_a_section_opened_rides_in_the_link_and_a_link_opens_it(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&gpu=h100-sxm-80gb")
    page.click("#fold-designs > summary")
    page.wait_for_function("location.hash.includes('open=designs')")
    # The table explains each design's figure: replication at this tp, the latent whole.
    assert "kv heads" in page.inner_text("#attention-table tbody")
    again = page.context.new_page()
    open_page(again, url_of(page).replace("open=designs", "open=time,designs,nowhere"))
    assert again.evaluate("[...document.querySelectorAll('details[data-fold][open]')].map(d => d.dataset.fold)") \
        == ["designs", "time"]
    assert "no section 'nowhere'" in again.inner_text("#link-notes")
    again.close()


def test_what_do_i_need_opens_the_plan_below_the_sticky_summary(page, site):
    """Llama 3.1 70B in bf16 on one H100 does not fit: the summary's "What do I need?" opens the
    plan's section and scrolls it to just under the summary, not beneath it."""
    open_page(page, site + "#model=meta-llama/Llama-3.1-70B&gpu=h100-sxm-80gb&context=8192")
    page.wait_for_function("!document.getElementById('plan-best').hidden")
    page.click("#plan-best a")
    page.wait_for_function("document.getElementById('fold-plan').open")
    page.wait_for_function("""() => {
        const s = document.getElementById('summary').getBoundingClientRect();
        const t = document.getElementById('plan').getBoundingClientRect();
        return t.top >= s.bottom - 1 && t.top < window.innerHeight; }""")


def test_the_attention_designs_of_an_mla_model_include_gqa(page, site):
    """DeepSeek-V3 has no GQA of its own: the table gives the GQA (8 KV heads) and MHA it would have,
    and says the latent is held whole on each of the 8 GPUs."""
    open_page(page, site + "#model=deepseek-ai/DeepSeek-V3&gpu=h200-141gb&gpus=8&kv-dtype=fp8&open=designs")
    settle(page)
    rows = page.inner_text("#attention-table tbody")
    assert "GQA" in rows and "8 kv heads (Llama 3's groups)" in rows and "MHA" in rows
    assert "each of the 8 GPUs holds it whole" in rows


def test_on_a_phone_the_index_closes_the_strip_and_shows_the_section_below_it(browser, site):
    context = browser.new_context(viewport={"width": 390, "height": 844}, service_workers="block")
    page = context.new_page()
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&gpu=h100-sxm-80gb")
    page.click("#strip-toggle")
    page.click("#section-index a[href='#fold-designs']")
    page.wait_for_function("document.getElementById('fold-designs').open")
    assert page.get_attribute("#summary", "data-expanded") == "false"
    page.wait_for_function("""() => {
        const s = document.getElementById('summary').getBoundingClientRect();
        const t = document.getElementById('fold-designs').getBoundingClientRect();
        return t.top >= s.bottom - 1 && t.top < window.innerHeight; }""")
    context.close()


def test_a_fold_is_drawn_when_it_opens_for_the_figures_on_screen(page, site):
    # Issue 40: a closed fold draws nothing (web/folds.py) and is drawn when it opens. Two folds
    # opened in one task change the folds open once, and each must still be drawn for the model
    # now on screen, never left with the one it last showed.
    open_page(page, site + "#model=Qwen/Qwen3-32B&gpu=h100-sxm-80gb&open=designs")
    page.wait_for_function("document.getElementById('fold-designs').dataset.drawn === 'true'")
    qwen = page.inner_text("#attention-table tbody")
    page.evaluate("document.getElementById('fold-designs').open = false")
    page.wait_for_function("document.getElementById('fold-designs').dataset.drawn === 'false'")
    page.evaluate("location.hash = '#model=google%2Fgemma-2-9b&gpu=h100-sxm-80gb'")
    page.wait_for_function("document.querySelector('[data-metric=kv_bytes_per_token]').dataset.value === '344064'")
    page.evaluate("""() => { for (const name of ['precisions', 'designs'])
        document.getElementById('fold-' + name).open = true; }""")
    page.wait_for_function("['precisions', 'designs'].every(n => "
                           "document.getElementById('fold-' + n).dataset.drawn === 'true')")
    shown = page.inner_text("#attention-table tbody")
    alone = page.context.new_page()
    open_page(alone, site + "#model=google%2Fgemma-2-9b&gpu=h100-sxm-80gb&open=designs")
    alone.wait_for_function("document.getElementById('fold-designs').dataset.drawn === 'true'")
    assert shown == alone.inner_text("#attention-table tbody") != qwen
    alone.close()
