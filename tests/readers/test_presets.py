"""Presets are data: every model checked against its researched source row, every GPU sourced."""

import csv

import pytest

from kvcalc import evaluate, precision
from kvcalc.readers.gpu_presets import gpus
from kvcalc.inputs.options import canonical_value
from kvcalc.readers.presets import model_entries, preset_model

from support import FIXTURES

BF16 = precision("bf16")
REQUIRED = ["meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-405B",
            "deepseek-ai/DeepSeek-V3", "mistralai/Mistral-7B-v0.1", "google/gemma-2-9b",
            "openai/gpt-oss-120b", "Qwen/Qwen3-32B"]


def reference_rows():
    # tests/fixtures/models_reference.csv is a copy of shared/reference/models.csv.
    with open(FIXTURES / "models_reference.csv", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def bf16_per_token(model):
    return sum(layer.row_bytes(BF16) for layer in model.layers)


def test_at_least_35_models_with_sources():
    entries = model_entries()
    assert len(entries) >= 35
    for entry in entries:
        assert entry["source"] and entry["name"] and entry["family"]
        assert isinstance(entry["params"], int) and entry["params"] > 0


@pytest.mark.parametrize("model_id", REQUIRED + [m.upper() for m in REQUIRED[:2]] + [m.lower() for m in REQUIRED])
def test_required_ids_resolve_case_insensitively(model_id):
    assert evaluate({"model": model_id}).ok


@pytest.mark.parametrize("row", reference_rows(), ids=lambda row: row["model"])
def test_preset_matches_its_source_row(row):
    repo = row["hf_repo"]
    if repo.startswith("("):       # GPT-3 has no config.json; the preset carries the paper's dims
        repo = "openai/gpt-3-175b"
    model = preset_model(repo)
    assert bf16_per_token(model) == int(row["kv_bytes_per_token_bf16_all_layers_as_engines_store"])
    assert len(model.layers) == int(row["num_hidden_layers"])
    if row["n_swa_layers"] and row["n_swa_layers"] != "0":
        assert sum(layer.kind == "sliding" for layer in model.layers) == int(row["n_swa_layers"])


@pytest.mark.parametrize("entry", model_entries(), ids=lambda e: e["id"])
def test_preset_matches_its_hand_check(entry):
    assert bf16_per_token(preset_model(entry["id"])) == entry["kv_bytes_per_token_bf16"], entry["kv_check"]


def test_seed_models_are_covered():
    names = " ".join(e["name"] for e in model_entries())
    for family in ("LLaMA-1", "GPT-3", "Llama 3.1 8B", "Llama 3.1 70B", "405B", "Mistral 7B", "Qwen2.5",
                   "Gemma 2", "DeepSeek-V2", "DeepSeek-V3", "Qwen3", "Gemma 3", "gpt-oss", "Mixtral",
                   "Phi", "Falcon", "Kimi K2", "GLM-4.5", "Command R+"):
        assert family.lower() in names.lower(), family


def test_gpu_presets():
    table = gpus()
    for gpu_id in ("a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm-80gb", "h100-pcie-80gb", "h200-141gb",
                   "b200", "l4", "l40s", "a10g", "rtx-3090", "rtx-4090", "rtx-5090", "mi300x", "mi325x"):
        assert any(g.startswith(gpu_id) for g in table), gpu_id
    assert any(g.vendor == "Apple" for g in table.values())
    for g in table.values():
        assert isinstance(g.memory_bytes, int) and g.memory_bytes > 8 << 30
        assert isinstance(g.bandwidth_bytes_per_s, int) and g.bandwidth_bytes_per_s > 10 ** 11
        assert g.source
    # engines.md: nvidia-smi shows 81,920 MiB on A100 80GB and 143,771 MiB on H200.
    assert table["a100-sxm-80gb"].memory_bytes == 81_920 << 20
    assert table["h200-141gb"].memory_bytes == 143_771 << 20


def test_model_search_forgives_separators_versions_and_suffixes():
    # The page's combobox lists presets in this order; the first is what Enter picks.
    from kvcalc.readers.presets import search_models
    first = {query: [e["id"] for e in search_models(query)][:1] for query in
             ("qwen3 32", "deepseek v3", "llama3 70b", "Meta-Llama-3.1-70B-Instruct", "gpt oss 120", "qwen3-next")}
    assert first == {"qwen3 32": ["Qwen/Qwen3-32B"], "deepseek v3": ["deepseek-ai/DeepSeek-V3"],
                     "llama3 70b": ["meta-llama/Llama-3.1-70B"],
                     "Meta-Llama-3.1-70B-Instruct": ["meta-llama/Llama-3.1-70B"],
                     "gpt oss 120": ["openai/gpt-oss-120b"], "qwen3-next": ["Qwen/Qwen3-Next-80B-A3B-Instruct"]}
    for query in ("llama 3.3 70b", "llama-3.3-70b", "Llama 3.3 70B Instruct", "3.3"):
        assert search_models(query)[0]["id"] == "meta-llama/Llama-3.3-70B-Instruct", query
    assert {e["id"] for e in search_models("qwen 32b")} >= {"Qwen/Qwen2.5-32B", "Qwen/Qwen3-32B"}
    assert search_models("zzzz nothing") == []
    assert len(search_models("  ")) == len(search_models(""))  # an empty query lists every preset


def test_model_search_never_fails_on_any_text():
    from hypothesis import given, settings, strategies as st
    from kvcalc.readers.presets import model_entries, search_models

    @settings(max_examples=200, deadline=None)
    @given(st.text(max_size=60))
    def check(query):
        found = search_models(query)
        assert len(found) <= len(model_entries())
    check()


def test_every_preset_knows_its_context_limit():
    # Issue 11: Gemma 3 27B claimed 1.1M tokens of context fit, its preset having no limit. Where
    # the published config.json omits it, the config class's default applies (and is noted).
    for entry in model_entries():
        model = preset_model(entry["id"])
        assert model.max_context_tokens, entry["id"]
    gemma = preset_model("google/gemma-3-27b-it")
    assert gemma.max_context_tokens == 131_072
    assert any("Gemma3TextConfig default" in note for note in gemma.notes)
    assert preset_model("tiiuae/falcon-7b").max_context_tokens == 2048


def test_2025_26_presets_are_their_verbatim_fixtures():
    """Issue 21: presets of models released in 2025-26 carry the whole published config.json, the
    same file the fixtures hold (tests/fixtures/hf/SOURCES.md, "2026 pass 2"), so preset and fixture
    cannot drift. None is a config the calculator refuses."""
    import json
    import re
    from support import REFUSED_FIXTURES
    section = (FIXTURES / "hf" / "SOURCES.md").read_text(encoding="utf-8").split("## 2026 pass 2 (issue 21)")[1]
    found = []
    for entry in model_entries():
        named = re.search(r"tests/fixtures/hf/([\w.-]+\.json)", entry["source"])
        if not named or f"| `{named.group(1)}` |" not in section:
            continue
        name = named.group(1)
        assert name not in REFUSED_FIXTURES, name
        row = next(line for line in section.splitlines() if line.startswith(f"| `{name}` |"))
        url = re.search(r"https://github\.com/\S+/blob/[0-9a-f]{40}/\S+?(?= \|)", row).group(0)
        assert entry["source"].startswith(f"verbatim config.json of {entry['id']} as copied in {url}"), entry["id"]
        assert f"| {entry['id']} |" in row, entry["id"]          # the fixture is that repo's file
        with open(FIXTURES / "hf" / name, encoding="utf-8") as fh:
            assert entry["config"] == json.load(fh), entry["id"]
        assert preset_model(entry["id"]).max_context_tokens
        found.append(name)
    assert len(found) == len(set(found)) >= 15, found


# What a re-save of a config changes without changing a tensor.
NOT_SHAPES = frozenset({"transformers_version", "_name_or_path"})


def _shapes(entry) -> dict:
    return {k: v for k, v in entry["config"].items() if k not in NOT_SHAPES}


def _sized(model_id):
    """A preset on 8 x H200 as vLLM sizes it, with the figures that follow from its shapes."""
    e = evaluate({"model": model_id, "gpu": "h200-141gb", "gpus": "8", "context": "8192", "batch": "8",
                  "engine": "vllm"})
    assert e.ok, (model_id, e.errors)
    r, dep = e.result, e.scenario.deployment
    return {"weights_bytes": dep.weights_bytes, "weights_exact": dep.weights_exact,
            "kv_bytes_per_token": r.kv_bytes_per_token, "capacity": e.capacity,
            "decode_step_seconds": e.timing.decode_step_seconds if e.timing else r.decode_step_seconds}


def test_no_preset_whose_config_gives_its_shapes_is_sized_from_a_rounded_count():
    """Issue 34: a preset whose published config.json (source "verbatim ...") gives every shape the
    parameter count reads is sized from those shapes (or its quantization_config, or the checkpoint's
    bytes), never from the card's rounded figure ("≈ 624.92 GiB" for DeepSeek-R1's 671B); a count
    the config cannot give leaves the weights unknown, not rounded. Presets whose config is a
    trimmed copy (a count from it could be wrong: GLM-4.5's counts 361B of a 355B model) may
    still say "≈"."""
    from kvcalc.errors import InputError
    from kvcalc.readers.params import count_params
    checked = []
    for entry in model_entries():
        if not entry["source"].startswith("verbatim"):
            continue
        try:
            count_params(entry["config"])
        except InputError:
            continue            # a wrapper whose tower is not counted: no count to size from
        dep = evaluate({"model": entry["id"], "gpu": "h200-141gb"}).scenario.deployment
        assert dep.weights_bytes is None or dep.weights_exact, entry["id"]
        checked.append(entry["id"])
    assert {"deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3", "Qwen/Qwen3.5-397B-A17B"} <= set(checked)
    assert len(checked) >= 30


def test_presets_of_one_shape_are_sized_alike():
    """Two presets whose configs hold the same tensors (equal but for what a re-save changes) are
    one model to the calculator: the same weights, exact or not, the same KV per token, requests
    and decode bound. DeepSeek-R1 is DeepSeek-V3's architecture: it was sized from a rounded 671B
    (≈ 624.92 GiB, a decode bound of 51.6 tok/s where V3 gives 339.2); with its published config it
    is V3 to the byte: 673,150,611,808 B from the FP8 quantization_config."""
    entries = model_entries()
    pairs = [(a["id"], b["id"]) for i, a in enumerate(entries) for b in entries[i + 1:] if _shapes(a) == _shapes(b)]
    assert ("deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1") in pairs
    assert ("meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.3-70B-Instruct") in pairs
    for first, second in pairs:
        assert _sized(first) == _sized(second), (first, second)
    r1 = _sized("deepseek-ai/DeepSeek-R1")
    assert r1["weights_bytes"] == 673_150_611_808 and r1["weights_exact"]


def test_a_repo_listed_as_an_alias_is_served_as_typed():
    # models.json's Llama 3.1 8B lists meta-llama/Llama-3.1-8B-Instruct among its aliases: the
    # same shapes, another checkpoint. Its launch command serves the Instruct repo, as typed;
    # the base id, and words that are no repo id, give the preset's own repo.
    assert preset_model("meta-llama/Llama-3.1-8B-Instruct").hf_repo == "meta-llama/Llama-3.1-8B-Instruct"
    assert preset_model("META-LLAMA/llama-3.1-8b-instruct").hf_repo == "meta-llama/Llama-3.1-8B-Instruct"
    assert preset_model("meta-llama/Llama-3.1-8B").hf_repo == "meta-llama/Llama-3.1-8B"
    same = preset_model("meta-llama/Llama-3.1-8B-Instruct")
    assert same.layers == preset_model("meta-llama/Llama-3.1-8B").layers


def test_a_link_keeps_a_repo_alias_as_typed():
    # The page writes a link's model through canonical_value: an alias that is a repo id stays
    # that repo (and its launch commands serve it); words still become the preset's id.
    assert canonical_value("model", "meta-llama/llama-3.1-8b-instruct") == "meta-llama/Llama-3.1-8B-Instruct"
    assert canonical_value("model", "llama 3.1 8b") == "meta-llama/Llama-3.1-8B"
