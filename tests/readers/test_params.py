"""Parameter counts from config.json shapes, against the totals the publishers and the Hugging
Face safetensors metadata give; and the parameter-count input (7.6B, 70e9, 1.2T)."""

import pytest
from hypothesis import given, settings, strategies as st

from kvcalc import InputError, evaluate
from kvcalc.inputs.options import OPTION_BY_NAME, parse_value
from kvcalc.readers.params import count_params

from support import hf_fixture


@pytest.mark.parametrize("name, total, active", [
    # Issue 11's three published totals (HF safetensors parameter counts).
    ("Qwen__Qwen2.5-7B.json", 7_615_616_512, None),
    ("mistralai__Mistral-7B-v0.1.json", 7_241_732_096, None),
    ("microsoft__Phi-3-mini-4k-instruct.json", 3_821_079_552, None),
    # Meta's and Qwen's model cards: 8.03B, 70.6B; Qwen3-32B 32.8B (tied: no).
    ("meta-llama__Llama-3.1-8B.json", 8_030_261_248, None),
    ("meta-llama__Llama-3.1-70B.json", 70_553_706_496, None),
    ("Qwen__Qwen3-32B.json", 32_762_123_264, None),
    ("Qwen__Qwen2.5-7B-Instruct.json", 7_615_616_512, None),
    # Gemma 2 9B: tied embeddings, four norms per layer (9.24B).
    ("google__gemma-2-9b-it.json", 9_241_705_984, None),
    # Mixtral 8x7B: 46.7B total, 12.9B active (Mistral's announcement: 46.7B, 12.9B per token).
    ("mistralai__Mixtral-8x7B-v0.1.json", 46_702_792_704, 12_879_925_248),
    # DeepSeek-V3: 671B main model (the 14B MTP module excluded), 37B activated (its paper).
    ("deepseek-ai__DeepSeek-V3.json", 671_026_419_200, 37_552_297_472),
    ("deepseek-ai__DeepSeek-V2-Lite.json", 15_706_484_224, 2_661_150_208),
    # gpt-oss model card: 116.83B and 20.91B total (its "active" leaves out the embedding).
    ("openai__gpt-oss-120b.json", 116_829_156_672, 5_711_982_912),
    ("openai__gpt-oss-20b.json", 20_914_757_184, 4_187_440_704),
    ("moonshotai__Kimi-K2-Instruct.json", 1_026_408_232_448, 32_861_500_928),
])
def test_counts_equal_the_published_totals(name, total, active):
    counted = count_params(hf_fixture(name))
    assert counted.total == total
    assert counted.active == (active or total)


def test_gpt_oss_active_without_the_embedding_is_the_model_cards():
    # OpenAI: 5.13B and 3.61B active parameters per token, embeddings not counted.
    for name, active in (("openai__gpt-oss-120b.json", 5.13e9), ("openai__gpt-oss-20b.json", 3.61e9)):
        counted = count_params(hf_fixture(name))
        assert abs(counted.active - counted.embedding - active) < 0.01e9


def test_falcon_7b_from_its_transformers_config():
    # transformers FalconConfig fields of tiiuae/falcon-7b; 6,921,720,704 is the preset's sourced count.
    cfg = {"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71, "num_hidden_layers": 32,
           "vocab_size": 65024, "multi_query": True, "parallel_attn": True, "bias": False,
           "new_decoder_architecture": False}
    assert count_params(cfg).total == 6_921_720_704


def test_other_architectures_are_refused_naming_the_field():
    with pytest.raises(InputError) as e:
        count_params(hf_fixture("google__gemma-4-26B-A4B.json"))
    assert e.value.field == "text_config.model_type" and "gemma4_text" in e.value.message
    cfg = dict(hf_fixture("meta-llama__Llama-3.1-8B.json"))
    del cfg["intermediate_size"]
    with pytest.raises(InputError) as e:
        count_params(cfg)
    assert e.value.field == "intermediate_size"


def test_a_pasted_config_reaches_capacity():
    cfg = hf_fixture("Qwen__Qwen2.5-7B.json")
    cfg = {k: v for k, v in cfg.items() if k != "_name_or_path"}
    ev = evaluate({"hf-config": cfg, "gpu": "h100-sxm-80gb", "context": "32768"})
    assert ev.ok
    assert ev.result.weights_bytes == 2 * 7_615_616_512
    assert ev.result.max_concurrency is not None and ev.result.max_concurrency > 0
    assert any("counted from the config" in w for w in ev.scenario.warnings)


def test_an_uncounted_config_says_why_weights_are_unknown():
    ev = evaluate({"hf-config": hf_fixture("google__gemma-4-26B-A4B.json"), "gpu": "h100-sxm-80gb"})
    assert ev.ok and ev.result.weights_bytes is None
    assert any("not counted" in w and "gemma4_text" in w for w in ev.scenario.warnings)


PARAMS = OPTION_BY_NAME["params"]


@pytest.mark.parametrize("text, value", [
    ("7.6B", 7_600_000_000), ("70e9", 70_000_000_000), ("671B", 671_000_000_000), ("1.2T", 1_200_000_000_000),
    ("8,030,261,248", 8_030_261_248), ("8030261248", 8_030_261_248), ("7.6 b", 7_600_000_000),
    ("350M", 350_000_000), ("1_000_000", 1_000_000),
])
def test_params_take_model_card_spellings(text, value):
    assert parse_value(PARAMS, text) == value


@pytest.mark.parametrize("text, words", [
    ("70", "implausibly few"), ("999999", "implausibly few"), ("-5", "must be at least"),
    ("7.6.B", "expected a count"), ("seven", "expected a count"), ("1.23456789012B", "whole number"),
])
def test_params_refuse_with_words(text, words):
    with pytest.raises(InputError) as e:
        parse_value(PARAMS, text)
    assert words in e.value.message and e.value.field == "params"


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.integers(1_000_000, 10 ** 15), st.sampled_from(["", "B", "M", "T", "e9"]), st.booleans())
def test_params_parse_back_what_a_card_writes(n, suffix, grouped):
    scale = {"": 1, "B": 10 ** 9, "M": 10 ** 6, "T": 10 ** 12, "e9": 10 ** 9}[suffix]
    whole, rest = divmod(n, scale)
    digits = f"{whole:,}" if grouped else str(whole)
    text = digits + (f".{rest:0{len(str(scale)) - 1}d}".rstrip("0").rstrip(".") if rest else "") + suffix
    if n < 10 ** 6 or n > 10 ** 15:
        return
    assert parse_value(PARAMS, text) == n


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(max_size=24))
def test_params_never_raise_anything_but_a_readable_error(text):
    try:
        value = parse_value(PARAMS, text)
    except InputError as e:
        assert e.field == "params" and e.message
    else:
        assert isinstance(value, int) and 10 ** 6 <= value <= 10 ** 15


def test_weights_from_a_rounded_count_are_not_shown_to_the_byte():
    from kvcalc.reports.report import page_texts
    # Qwen3-235B-A22B's preset has the card's rounded 235B and a trimmed config (no count to size
    # from): 470,000,000,000 B in bf16, shown as "≈". (DeepSeek-R1 was the example until its
    # published config gave it V3's exact weights, issue 34.)
    ev = evaluate({"model": "Qwen/Qwen3-235B-A22B", "gpus": "8", "gpu": "h200-141gb"})
    metrics = page_texts(ev.scenario, ev)["metrics"]
    assert metrics["weights_bytes"][1].startswith("≈ ") and "rounded" in metrics["weights_bytes"][2]
    assert "470,000,000,000" not in " ".join(metrics["weights_bytes"])
    exact = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb"})
    shown = page_texts(exact.scenario, exact)["metrics"]["weights_bytes"]
    assert shown[2] == "16,060,522,496 B"


def test_custom_dimensions_count_parameters_from_widths():
    # Llama 3.1 8B's widths as custom dimensions give its published 8,030,261,248 parameters.
    raw = {"layers": "32", "kv-heads": "8", "head-dim": "128", "hidden-size": "4096", "mlp-size": "14336",
           "vocab-size": "128256", "gpu": "h100-sxm-80gb"}
    ev = evaluate(raw)
    assert ev.ok and ev.result.weights_bytes == 2 * 8_030_261_248 and ev.result.max_concurrency > 0
    # Part of the widths: the missing one is named, in plain words.
    ev = evaluate({k: v for k, v in raw.items() if k != "vocab-size"})
    assert ev.errors[0].field == "vocab-size" and "count the parameters" in ev.errors[0].message
    # None of them: weights are unknown and the note says what would give them.
    ev = evaluate({"layers": "32", "kv-heads": "8", "head-dim": "128", "gpu": "h100-sxm-80gb"})
    assert ev.ok and ev.result.weights_bytes is None
    assert any("hidden size, MLP size and vocabulary size, or the parameter count" in w for w in ev.scenario.warnings)
