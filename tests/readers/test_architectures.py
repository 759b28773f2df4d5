"""Which architectures are sized (issue 21): every text-generating one in vLLM's registry is in
app/kvcalc/data/architectures.json, exact, refused with why, or not yet; anything else is refused
by field name, never computed as if it were a plain decoder."""

import re

import pytest

from kvcalc import InputError, model_from_config
from kvcalc.readers import architectures, presets
from kvcalc.readers.gguf import ARCHITECTURES as GGUF_ARCHITECTURES

from support import ROOT, cli, fixture_names, hf_fixture

TABLE = architectures.table()["architectures"]


def llama(**top):
    return {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256,
            "vocab_size": 1000, **top}


def test_every_row_says_what_it_is_and_where_it_was_read():
    assert len(TABLE) >= 200
    for name, row in TABLE.items():
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name), name
        assert row["status"] in architectures.STATUSES, name
        assert row["module"] and row["source"].startswith("vLLM"), name
        assert row.get("layout" if row["status"] == "exact" else "why"), name


def test_readme_table_is_the_data():
    readme = (ROOT / "docs" / "formulas.md").read_text(encoding="utf-8")
    block = readme.split("<!-- architectures:start -->\n")[1].split("\n<!-- architectures:end -->")[0]
    assert block == architectures.markdown_table(), "run python tools/readme_architectures.py"


def test_presets_fixtures_and_gguf_architectures_are_all_exact():
    named = [entry["config"].get("architectures", [None])[0] for entry in presets.model_entries()]
    named += [hf_fixture(name).get("architectures", [None])[0] for name in fixture_names()]
    named += [arch for _, arch in GGUF_ARCHITECTURES.values()]
    for arch in filter(None, named):
        assert TABLE[arch]["status"] == "exact", arch


def test_an_unknown_architecture_is_refused_by_field_name():
    """A Llama-shaped config under a name nobody registered: its model code is unknown."""
    assert model_from_config(llama(architectures=["LlamaForCausalLM"])).layers
    with pytest.raises(InputError) as e:
        model_from_config(llama(architectures=["FooForCausalLM"]))
    assert e.value.field == "architectures" and "FooForCausalLM" in e.value.message
    # Without the key, a hand-written config is read by its fields.
    assert model_from_config(llama()).layers


@pytest.mark.parametrize("status", ["refused", "not yet"])
def test_refused_and_unread_rows_refuse_with_their_reason(status):
    names = [name for name, row in TABLE.items() if row["status"] == status]
    assert names
    for name in names:
        with pytest.raises(InputError) as e:
            model_from_config(llama(architectures=[name]))
        assert e.value.field == "architectures" and name in e.value.message
        if status == "refused":
            assert TABLE[name]["why"] in e.value.message


def test_longcat_two_latents_per_layer_is_refused_not_halved():
    """vLLM longcat_flash.py builds two MLA modules per decoder layer: one latent per layer would
    be half its cache, so the architecture is refused though its model_type is an MLA one."""
    cfg = {"architectures": ["LongcatFlashForCausalLM"], "model_type": "longcat_flash", "num_layers": 2,
           "num_hidden_layers": 2, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "num_attention_heads": 8}
    with pytest.raises(InputError) as e:
        model_from_config(cfg)
    assert e.value.field == "architectures"


def test_a_wrapper_is_checked_for_the_model_its_text_config_names():
    cfg = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
           "text_config": llama(architectures=["OuroForCausalLM"])}
    with pytest.raises(InputError) as e:
        model_from_config(cfg)
    assert e.value.field == "text_config.architectures"
    cfg["text_config"]["architectures"] = ["MistralForCausalLM"]
    assert model_from_config(cfg).layers


def test_a_malformed_architectures_value_is_one_clear_error():
    for value in ("LlamaForCausalLM", [], [3], {"a": 1}):
        with pytest.raises(InputError) as e:
            model_from_config(llama(architectures=value))
        assert e.value.field == "architectures"


def test_cli_lists_them():
    code, out, err = cli("--list-architectures")
    assert code == 0 and not err
    lines = out.splitlines()
    assert len(lines) == len(TABLE)
    assert any(line.startswith("DeepseekV4ForCausalLM") and " refused " in line for line in lines)
