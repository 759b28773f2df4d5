"""The page's field blocks come from the option schema (kvcalc.inputs.form_blocks, issue 35 item 4): every
option meant for the page has exactly one block in the built page, its label, its help (the
option's own text) and its error each named by the option, and index.html writes none by hand."""

import re
import sys
from html.parser import HTMLParser

import pytest

from kvcalc import engines
from kvcalc.inputs import form_blocks
from kvcalc.inputs.form_blocks import FIELD_BY_NAME, FIELDS, NOT_ON_PAGE, PAGE_OWN, PLACES
from kvcalc.inputs.options import OPTION_BY_NAME, OPTIONS

from support import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import build  # noqa: E402

VOID = {"input", "meta", "link", "br", "img", "hr", "source", "wbr"}


class Elements(HTMLParser):
    """Every element of a page in order: its tag, its attributes and its text."""

    def __init__(self, text: str):
        super().__init__()
        self.elements, self._open = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        element = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.elements.append(element)
        if tag not in VOID:
            self._open.append(element)

    def handle_endtag(self, tag):
        while self._open and self._open.pop()["tag"] != tag:
            pass

    def handle_data(self, data):
        for element in self._open:
            element["text"] += data

    def where(self, tag=None, **attrs):
        """The elements of this tag (any, without one) with these attributes (data_option is data-option)."""
        return [e for e in self.elements if tag in (None, e["tag"])
                and all(e["attrs"].get(k.replace("_", "-")) == v for k, v in attrs.items())]


@pytest.fixture(scope="module")
def page():
    return Elements(build.render_index())


def test_every_option_has_one_home():
    # A block, or index.html's own structure, or no control at all: each said once, with its reason.
    assert form_blocks.problems() == []
    assert {f.name for f in FIELDS} | set(PAGE_OWN) | set(NOT_ON_PAGE) == {o.name for o in OPTIONS}
    assert sorted(PAGE_OWN) == ["hf-config", "model", "unit"]
    assert list(NOT_ON_PAGE) == ["draft-hf-config"]


def test_a_block_dropped_from_the_table_is_named(monkeypatch):
    monkeypatch.setattr(form_blocks, "FIELDS", tuple(f for f in FIELDS if f.name != "batch"))
    monkeypatch.setattr(form_blocks, "FIELD_BY_NAME", {f.name: f for f in form_blocks.FIELDS})
    assert form_blocks.problems() == ["batch: no block and no reason"]
    monkeypatch.setattr(form_blocks, "PAGE_OWN", {**PAGE_OWN, "context": "hand-written"})
    assert "context: a block and a reason" in form_blocks.problems()


def test_one_block_as_the_page_carries_it():
    # The option's name is the control's id, name and data-option; its kind (int) asks for the
    # numeric keyboard; its default ("1") is the value it starts with; its help is the schema's.
    assert form_blocks.render_field(FIELD_BY_NAME["batch"], "    ") == (
        '    <div class="field"><label for="batch">Concurrent requests</label><input id="batch" name="batch" '
        'data-option="batch" inputmode="numeric" value="1" aria-describedby="help-batch error-batch">'
        '<small class="help" id="help-batch" data-help="batch">Concurrent requests, each with its own cache.</small>'
        '<span class="error" id="error-batch"></span></div>')
    assert form_blocks.render_field(FIELD_BY_NAME["measured-with"]) == (
        '<input type="hidden" id="measured-with" name="measured-with" data-option="measured-with" value="">')
    with pytest.raises(KeyError, match="no field goes at 'nowhere'"):
        form_blocks.render_place("nowhere")


def test_each_block_in_the_built_page_is_its_options(page):
    for field in FIELDS:
        name, option = field.name, OPTION_BY_NAME[field.name]
        controls = page.where(data_option=name)
        assert len(controls) == 1, name
        control = controls[0]["attrs"]
        assert control["id"] == control["name"] == name
        if field.control == "hidden":
            assert controls[0]["tag"] == "input" and control["type"] == "hidden" and control["value"] == ""
            assert not page.where(**{"for": name}) and not page.where(id=f"error-{name}")
            continue
        assert controls[0]["tag"] == field.control
        labels = page.where(**{"for": name})
        assert [label["text"] for label in labels] == [field.label], name
        helps, errors = page.where(id=f"help-{name}"), page.where(id=f"error-{name}")
        assert [(h["tag"], h["text"]) for h in helps] == [("small", field.help or option.help)], name
        assert [(e["tag"], e["attrs"]["class"], e["text"]) for e in errors] == [("span", "error", "")], name
        assert control["aria-describedby"] == f"help-{name} error-{name}"
        if field.control == "select":
            listed = field.listed() if field.listed else []
            assert [o["attrs"]["value"] for o in _options_of(page, controls[0])] == [
                value for value, _ in [*field.choices, *listed]], name
        else:
            assert control.get("inputmode") == form_blocks.INPUT_MODES.get(option.kind), name


def test_the_blocks_stand_in_the_tables_order(page):
    generated = [e["attrs"]["data-option"] for e in page.where() if e["attrs"].get("data-option") in FIELD_BY_NAME]
    assert generated == [f.name for f in FIELDS]
    # The page starts as vLLM sizes on one H100 SXM, a context of 8,192 tokens and one request.
    selected = {}
    for select in page.where(tag="select"):
        name = select["attrs"].get("data-option")
        chosen = [o["attrs"]["value"] for o in _options_of(page, select) if "selected" in o["attrs"]]
        if name in FIELD_BY_NAME and chosen:
            selected[name] = chosen
    assert selected == {"gpu": ["h100-sxm-80gb"], "engine": [engines.DEFAULT]}
    assert page.where(id="context")[0]["attrs"]["value"] == "8192" and page.where(id="batch")[0]["attrs"]["value"] == "1"
    assert [b["attrs"]["data-context"] for b in page.where(tag="button") if "data-context" in b["attrs"]] == [
        "2048", "8192", "32768", "131072"]


def _options_of(page, select):
    start = page.elements.index(select) + 1
    out = []
    for e in page.elements[start:]:
        if e["tag"] != "option":
            break
        out.append(e)
    return out


def test_index_html_writes_no_block_by_hand():
    source = (ROOT / "index.html").read_text(encoding="utf-8")
    for field in FIELDS:
        n = field.name
        written = [x for x in (f'data-option="{n}"', f'id="{n}"', f'for="{n}"', f'id="error-{n}"', f'data-help="{n}"')
                   if x in source]
        assert written == [], f"{n} is written by hand in index.html: {written}"
    assert sorted(re.findall(r"@FIELDS:([\w-]+)@", source)) == sorted(PLACES)
    for name in PAGE_OWN:
        assert re.search(rf'(data-option|id)="{name}"', source), name


def test_options_not_on_the_page_have_no_control(page):
    for name in NOT_ON_PAGE:
        assert not page.where(data_option=name) and not page.where(id=name)


def test_the_page_help_is_written_for_the_page():
    """Issue 39: a field's help is read on the page, so it never speaks of the CLI's options or
    contradicts what the page does (the "Size as" help said "default vllm ... as the page starts")."""
    from kvcalc.inputs.form_blocks import FIELDS
    for field in FIELDS:
        text = field.help or field.option.help
        assert "CLI" not in text and "kvcalc" not in text and "as the page starts" not in text, field.name
