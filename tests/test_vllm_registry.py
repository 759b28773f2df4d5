"""tools/vllm_registry.py: the architecture table against a vLLM release's model registry (issue 37).
The registry below is written for the test in the shape vLLM's registry.py has (module-level dict
literals of name -> (module, class), a previously-supported dict of name -> release, spreads that
are not entries); the table it is compared with is a small one of the same form as
app/kvcalc/data/architectures.json."""

import json
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import vllm_registry  # noqa: E402
from kvcalc.readers import architectures  # noqa: E402

REGISTRY = '''
_TEXT_GENERATION_MODELS = {
    # [Decoder-only]
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "NewCoderForCausalLM": ("llama", "LlamaForCausalLM"),
    "PlainForCausalLM": ("plain", "PlainForCausalLM"),
    "MovedForCausalLM": ("vllm.models.moved", "MovedForCausalLM"),
    "FreshForCausalLM": ("vllm.models.fresh", "FreshForCausalLM"),
}
_MULTIMODAL_MODELS: dict[str, tuple[str, str]] = {
    "PlainVLForConditionalGeneration": ("plain_vl", "PlainVL"),
}
_TRANSFORMERS_SUPPORTED_MODELS = {"OldTransformersForCausalLM": ("transformers", "TransformersForCausalLM")}
_VLLM_MODELS = {**_TEXT_GENERATION_MODELS, **_MULTIMODAL_MODELS}
_PREVIOUSLY_SUPPORTED_MODELS = {"RetiredForCausalLM": "0.23.0"}
'''
TABLE = {"source": "vLLM registry @ test", "architectures": {
    "LlamaForCausalLM": {"module": "llama", "source": "t", "status": "exact", "layout": "full attention"},
    "PlainForCausalLM": {"module": "plain", "source": "t", "status": "exact", "layout": "full attention"},
    "MovedForCausalLM": {"module": "moved", "source": "t", "status": "exact", "layout": "full attention"},
    "RetiredForCausalLM": {"module": "retired", "source": "t", "status": "exact", "layout": "full attention"},
    "OldTransformersForCausalLM": {"module": "old", "source": "t", "status": "exact", "layout": "full attention"},
    "VanishedForCausalLM": {"module": "gone", "source": "t", "status": "exact", "layout": "full attention"},
}}


def _diff():
    return vllm_registry.compare(TABLE, vllm_registry.registry_dicts(REGISTRY))


def test_the_registry_s_dicts_are_read_as_literals_and_spreads_left_out():
    dicts = vllm_registry.registry_dicts(REGISTRY)
    assert dicts["_TEXT_GENERATION_MODELS"]["NewCoderForCausalLM"] == ("llama", "LlamaForCausalLM")
    assert dicts["_MULTIMODAL_MODELS"] == {"PlainVLForConditionalGeneration": ("plain_vl", "PlainVL")}
    assert dicts["_VLLM_MODELS"] == {}
    assert dicts["_PREVIOUSLY_SUPPORTED_MODELS"] == {"RetiredForCausalLM": "0.23.0"}


def test_new_moved_and_gone_rows_are_told_apart():
    diff = _diff()
    assert diff["new"] == {
        "FreshForCausalLM": ("vllm.models.fresh", "FreshForCausalLM", None),
        "NewCoderForCausalLM": ("llama", "LlamaForCausalLM", "LlamaForCausalLM"),
        "PlainVLForConditionalGeneration": ("plain_vl", "PlainVL", None)}
    assert diff["moved"] == {"MovedForCausalLM": ("moved", "vllm.models.moved")}
    assert diff["unread_aliases"] == {}
    assert diff["gone"] == {"OldTransformersForCausalLM": "served by the Transformers backend",
                            "RetiredForCausalLM": "previously supported (last in vLLM 0.23.0)",
                            "VanishedForCausalLM": "not in the registry"}


def test_an_alias_is_exact_only_where_no_rule_names_the_row_it_shares_its_class_with(monkeypatch):
    # A rule of the calculator keyed by the row's name (as the allocator's Mamba prefix-caching list names
    # NemotronHForCausalLM, which vLLM matches by class) would not meet the alias: it is left "not yet", the
    # files named. Modules that key names as vLLM does (its V2 runner list, matched by the config's names) pass.
    monkeypatch.setattr(vllm_registry, "keyed_by_name", lambda name: ["engines/vllm/allocator.py"])
    written = vllm_registry.write(TABLE, _diff(), "0.99.0")["architectures"]
    coder = written["NewCoderForCausalLM"]
    assert coder["status"] == "not yet" and "engines/vllm/allocator.py" in coder["why"]
    monkeypatch.setattr(vllm_registry, "keyed_by_name", lambda name: [])
    written = vllm_registry.write(TABLE, _diff(), "0.99.0")["architectures"]
    assert written["NewCoderForCausalLM"] == {"module": "llama", "source": "vLLM 0.99.0 registry (llama)",
                                              "status": "exact",
                                              "layout": "as LlamaForCausalLM: vLLM maps both to LlamaForCausalLM"}
    assert written["FreshForCausalLM"]["status"] == "not yet"
    assert written["RetiredForCausalLM"] == TABLE["architectures"]["RetiredForCausalLM"]   # older releases still


def test_a_row_left_not_yet_is_made_exact_once_nothing_holds_it_back(monkeypatch):
    table = json.loads(json.dumps(TABLE))
    table["architectures"]["NewCoderForCausalLM"] = {"module": "llama", "source": "t", "status": "not yet",
                                                     "why": "rules keyed by name"}
    diff = vllm_registry.compare(table, vllm_registry.registry_dicts(REGISTRY))
    assert diff["unread_aliases"] == {"NewCoderForCausalLM": ("llama", "LlamaForCausalLM", "LlamaForCausalLM")}
    monkeypatch.setattr(vllm_registry, "keyed_by_name", lambda name: [])
    assert vllm_registry.write(table, diff, "0.99.0")["architectures"]["NewCoderForCausalLM"]["status"] == "exact"


def test_the_modules_that_key_names_as_vllm_does_are_the_ones_named():
    assert vllm_registry.keyed_by_name("LlamaForCausalLM") == []          # profile.py's V2 list and the GGUF map
    assert "engines/vllm/allocator.py" in vllm_registry.keyed_by_name("NemotronHForCausalLM")


def test_a_wheel_and_a_tree_give_the_release_they_are(tmp_path):
    wheel = tmp_path / "vllm-0.99.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(vllm_registry.REGISTRY, REGISTRY)
        z.writestr("vllm-0.99.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: vllm\nVersion: 0.99.0\n")
    assert vllm_registry.read_source(wheel) == (REGISTRY, "0.99.0")
    tree = tmp_path / "tree"
    (tree / "vllm" / "model_executor" / "models").mkdir(parents=True)
    (tree / vllm_registry.REGISTRY).write_text(REGISTRY, encoding="utf-8")
    (tree / "vllm" / "_version.py").write_text("__version__ = version = '0.99.1'\n", encoding="utf-8")
    assert vllm_registry.read_source(tree) == (REGISTRY, "0.99.1")


def test_the_table_s_aliases_still_meet_no_rule_keyed_by_name():
    """Every row the tool made exact as another's alias: that row is exact, and no rule of the calculator
    names it (a rule added since would have to be read for the alias too)."""
    rows = architectures.table()["architectures"]
    aliases = {name: row["layout"].split(":")[0][3:] for name, row in rows.items()
               if row["status"] == "exact" and row["layout"].startswith("as ") and ": vLLM maps both to" in row["layout"]}
    assert len(aliases) >= 7
    for name, target in aliases.items():
        assert rows[target]["status"] == "exact", name
        assert vllm_registry.keyed_by_name(target) == [], (name, target)


def test_the_table_lists_the_newest_registry_read(tmp_path):
    table = json.loads((ROOT / "app" / "kvcalc" / "data" / "architectures.json").read_text(encoding="utf-8"))
    assert table["source"].endswith("checked against vLLM 0.34.0's registry by tools/vllm_registry.py")
    # A 0.34.0 name the table did not hold before is refused by its reason now, not as unknown: one not read
    # names its module, one read says what of its layout is not modelled.
    with pytest.raises(Exception) as unread:
        architectures.check("GlmOcrForConditionalGeneration")
    assert "not read yet" in str(unread.value) and "glm_ocr" in str(unread.value)
    with pytest.raises(Exception) as refused:
        architectures.check("Glm5NextForCausalLM")
    assert "k-pool and tail pages are not modelled" in str(refused.value)
