"""Issue 34 item 5: ids as people type them. One matcher (presets.resolve_model, gpu_presets.gpu,
gpu_presets.gpu_family) for the CLI, links, prices, the page's search and a log's model path.

A model resolves to the preset of identical shape only: its id or alias, a checkpoint of its name
(-Instruct, a dated release, an org's re-release, a quantization), a local path's folder, or words
naming one preset. A quantized re-release keeps the preset's shapes, its weights unknown. A name
several presets fit is answered "did you mean" with them; none, with what was typed."""

import json
import os
from fractions import Fraction

import pytest

from kvcalc.readers import gpu_presets, presets
from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.reports.link import decode
from kvcalc.inputs.options import canonical_value, parse_options
from kvcalc.inputs.startup_log import read_log
from kvcalc.readers.log_rules import gpu_preset, model_entry

from support import FIXTURES, cli

LOGS = os.path.join(FIXTURES, "logs")


# ---- models ------------------------------------------------------------------------------------

# (as typed, the preset, its quantization words when the weights are not the preset's)
MODELS = [
    # The issue's own: words, a bare name, repo ids with a checkpoint's words.
    ("llama 3.1 70b", "meta-llama/Llama-3.1-70B", None),
    ("deepseek-r1", "deepseek-ai/DeepSeek-R1", None),
    ("deepseek r1", "deepseek-ai/DeepSeek-R1", None),
    ("Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-72B", None),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen/Qwen3-30B-A3B", None),
    ("mistralai/Mistral-Small-24B-Instruct-2501", "mistralai/Mistral-Small-24B-Base-2501", None),
    ("Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B", None),
    ("gemma 3 27b", "google/gemma-3-27b-it", None),
    ("qwen2.5 72b", "Qwen/Qwen2.5-72B", None),
    ("kimi k2", "moonshotai/Kimi-K2-Instruct", None),
    # Quantized re-releases, under their own org or another's: the shape, not the weights.
    ("Qwen/Qwen2.5-72B-Instruct-AWQ", "Qwen/Qwen2.5-72B", "awq"),
    ("Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "Qwen/Qwen2.5-72B", "gptq-int4"),
    ("Qwen/Qwen2.5-72B-Instruct-GPTQ-Int8", "Qwen/Qwen2.5-72B", "gptq-int8"),
    ("Qwen/Qwen2.5-7B-Instruct-Int8", "Qwen/Qwen2.5-7B", "int8"),
    ("Qwen/Qwen2.5-72B-Instruct-GGUF", "Qwen/Qwen2.5-72B", "gguf"),
    ("unsloth/Llama-3.3-70B-Instruct-bnb-4bit", "meta-llama/Llama-3.3-70B-Instruct", "bnb-4bit"),
    ("unsloth/DeepSeek-R1-GGUF", "deepseek-ai/DeepSeek-R1", "gguf"),
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic", "meta-llama/Llama-3.1-8B", "fp8-dynamic"),
    ("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", "meta-llama/Llama-3.1-70B", "fp8"),
    ("neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w8a8", "meta-llama/Llama-3.1-70B", "quantized-w8a8"),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "Qwen/Qwen3-235B-A22B", "fp8"),
    ("Qwen2.5-7B-Instruct-Q4_K_M.gguf", "Qwen/Qwen2.5-7B", "q4_k_m"),
    ("zai-org/GLM-5-AWQ", "zai-org/GLM-5", "awq"),
    # A quantized preset is itself; its original's id has its shape and other weights.
    ("GLM-5-FP8", "zai-org/GLM-5-FP8", None),
    ("glm 5 fp8", "zai-org/GLM-5-FP8", None),
    ("glm 5", "zai-org/GLM-5", None),
    ("google/gemma-4-31B-it", "nvidia/Gemma-4-31B-IT-NVFP4", ""),
    # Local copies: the last folder, the last two, a Hugging Face cache folder.
    ("/models/Qwen2.5-72B-Instruct/", "Qwen/Qwen2.5-72B", None),
    ("/srv/weights/Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-72B", None),
    ("/root/.cache/huggingface/hub/models--Qwen--Qwen2.5-72B-Instruct/snapshots/0a1b2c", "Qwen/Qwen2.5-72B", None),
    ("C:\\models\\Qwen2.5-72B-Instruct-AWQ", "Qwen/Qwen2.5-72B", "awq"),
    # More quantizations as people name them: Intel's AutoRound (either order), llm-compressor's
    # W4A16 / W8A8, MLX's n-bit, ExLlamaV2's bits per weight.
    ("Intel/Qwen3.6-27B-int4-AutoRound", "nvidia/Qwen3.6-27B-NVFP4", "int4-autoround"),
    ("/models/qwen3.6-27b-autoround-int4", "nvidia/Qwen3.6-27B-NVFP4", "autoround-int4"),
    ("Intel/Qwen3-8B-AutoRound", "Qwen/Qwen3-8B", "autoround"),
    ("Qwen/Qwen3-8B-int4", "Qwen/Qwen3-8B", "int4"),
    ("Qwen/Qwen3-8B-int8", "Qwen/Qwen3-8B", "int8"),
    ("RedHatAI/Qwen3-8B-W4A16", "Qwen/Qwen3-8B", "w4a16"),
    ("RedHatAI/Qwen3-8B-W8A8", "Qwen/Qwen3-8B", "w8a8"),
    ("RedHatAI/Qwen3-8B-FP8-dynamic", "Qwen/Qwen3-8B", "fp8-dynamic"),
    ("nvidia/Qwen3-8B-NVFP4", "Qwen/Qwen3-8B", "nvfp4"),
    ("someone/Qwen3-8B-MXFP4", "Qwen/Qwen3-8B", "mxfp4"),
    ("turboderp/Qwen3-8B-EXL2", "Qwen/Qwen3-8B", "exl2"),
    ("turboderp/Qwen3-8B-exl2-4.0bpw", "Qwen/Qwen3-8B", "exl2-4.0bpw"),
    ("mlx-community/Qwen3-8B-MLX-4bit", "Qwen/Qwen3-8B", "mlx-4bit"),
    ("mlx-community/Qwen3-8B-6bit", "Qwen/Qwen3-8B", "6bit"),
    # The base model (or its own FP8 release) of a quantized preset: the preset's shape, not its weights.
    ("Qwen/Qwen3.6-27B", "nvidia/Qwen3.6-27B-NVFP4", ""),
    ("Qwen/Qwen3.6-27B-FP8", "nvidia/Qwen3.6-27B-NVFP4", "fp8"),
    ("qwen3.6-27b", "nvidia/Qwen3.6-27B-NVFP4", ""),
]


@pytest.mark.parametrize("typed, preset, quantization", MODELS)
def test_a_model_as_typed_is_the_preset_of_its_shape(typed, preset, quantization):
    match = presets.resolve_model(typed)
    assert match.entry["id"] == preset, typed
    assert match.weights_differ == (quantization is not None), typed
    if quantization:
        assert match.quantization == quantization


def test_a_quantized_release_keeps_the_shape_and_says_its_weights_are_unknown():
    # Qwen2.5-72B: 80 layers, 8 KV heads of 128, bf16: 80 x 2 x 8 x 128 x 2 = 327,680 B a token.
    awq = presets.preset_model("Qwen/Qwen2.5-72B-Instruct-AWQ")
    base = presets.preset_model("Qwen/Qwen2.5-72B")
    assert (awq.layers, awq.hidden_size) == (base.layers, base.hidden_size)
    assert base.weights_dtype == "bf16" and awq.weights_dtype is None and awq.checkpoint_bytes is None
    assert any("AWQ's" in note and "Qwen/Qwen2.5-72B" in note for note in awq.notes)
    result = evaluate({"model": "Qwen/Qwen2.5-72B-Instruct-AWQ", "gpu": "l40s", "gpus": "4", "engine": "exact"})
    assert not result.errors and result.result.kv_bytes_per_token == 327_680
    assert result.scenario.deployment.weights_bytes is None        # never the bf16 preset's 145 GB
    # An instruct checkpoint is the preset's weights too: the same figures, a note saying how.
    instruct = presets.preset_model("Qwen/Qwen2.5-72B-Instruct")
    assert instruct.weights_dtype == "bf16" and any("identical shape" in n for n in instruct.notes)
    assert not any("identical shape" in n for n in base.notes)


def test_a_checkpoint_of_a_quantized_presets_shape_takes_the_shape_not_the_quantization():
    # nvidia/Qwen3.6-27B-NVFP4's config carries an 8-bit float kv_cache_scheme, so the preset
    # itself caches in fp8: 16 full-attention layers x 2 x 4 KV heads x 256 x 1 B = 32,768 B a token.
    # Qwen/Qwen3.6-27B (and its FP8 release, whose kv_cache_dtype stays auto) caches in bf16,
    # 65,536 B a token. On one H100 SXM (vLLM, utilization 0.9) with 51 GiB of weights the KV
    # memory is 15.44 GiB either way (the overhead now counts the vision tower's profiling pass):
    # 11.93 requests of 32,768 tokens at fp8, 6.71 at bf16.
    argv = ("--gpu", "h100-sxm-80gb", "--weights-gib", "51", "--context", "32768", "--json")
    code, out, err = cli("--model", "nvidia/Qwen3.6-27B-NVFP4", *argv)
    assert code == 0, err
    preset = json.loads(out)
    assert (preset["kv_dtype"], preset["kv_bytes_per_token"]) == ("fp8", 32_768)
    for typed in ("Qwen/Qwen3.6-27B", "Qwen/Qwen3.6-27B-FP8", "qwen3.6-27b", "/models/qwen3.6-27b-autoround-int4"):
        code, out, err = cli("--model", typed, *argv)
        assert code == 0, err
        data = json.loads(out)
        assert (data["kv_dtype"], data["kv_bytes_per_token"]) == ("bf16", 65_536), typed
        assert data["engine_kv_budget_bytes_per_gpu"] == preset["engine_kv_budget_bytes_per_gpu"] == 16_581_369_306
        assert (data["engine_max_concurrency"], preset["engine_max_concurrency"]) == (161 / 24, 322 / 27), typed
        assert any("the KV cache defaults to the model's dtype" in note for note in data["warnings"]), typed
    code, out, err = cli("--model", "Qwen/Qwen3.6-27B", *argv[:-1])
    # At the newest release's default --max-num-seqs (1,024 on an H100) it does not start: its 322
    # Mamba cache blocks hold 322 decode sequences (issue 36's hybrid ceiling).
    assert code == 0 and "exceeds its 322 Mamba cache blocks by 702" in out
    assert "KV precision                                bf16" in out
    # The shape is the preset's; the weights are unknown until given, never the NVFP4 checkpoint's.
    model = presets.preset_model("Qwen/Qwen3.6-27B")
    nvfp4 = presets.preset_model("nvidia/Qwen3.6-27B-NVFP4")
    assert model.layers == nvfp4.layers and (model.kv_dtype, nvfp4.kv_dtype) == (None, "fp8")
    assert model.weights_dtype is None and model.config_weights_bytes is None and model.checkpoint_bytes is None
    assert any("kv_cache_scheme stores the cache in 8-bit floats" in n for n in nvfp4.notes)
    assert not any("kv_cache_scheme stores" in n for n in model.notes)
    # Its config's tensors, read with it, are the shape's: priced without the NVFP4 quantization_config.
    assert not model.shapes.quantized and model.shapes.tensor_bytes is None and nvfp4.shapes.quantized
    # A link keeps the typed name, so it sizes the same.
    assert canonical_value("model", "Qwen/Qwen3.6-27B") == "Qwen/Qwen3.6-27B"
    result = evaluate({"model": "Qwen/Qwen3.6-27B", "gpu": "h100-sxm-80gb", "weights-gib": "51", "context": "32768"})
    assert not result.errors and result.result.kv_bytes_per_token == 65_536


def test_a_logs_path_to_the_base_model_sizes_its_cache_in_the_models_dtype():
    # phivan3008/meeting-translator's vLLM 0.27.1 log (SOURCES.md) serves
    # /workspace/meetting-translator/models/Qwen3.6-27B-FP8 with kv_cache_dtype=auto: a bf16 cache,
    # 65,536 B a token; 41.03 GiB held 292,522 tokens, 71.42x at 4,096. The NVFP4 preset's fp8
    # kv_cache_scheme would have doubled both.
    with open(os.path.join(LOGS, "vllm-qwen3.6-27b-fp8-h100-util088-4k-eager-v0.27.1.log"), encoding="utf-8") as fh:
        text = fh.read()
    reading = read_log(text)
    assert reading.values["model"] == "/workspace/meetting-translator/models/Qwen3.6-27B-FP8"
    assert model_entry(reading.values["model"])["id"] == "nvidia/Qwen3.6-27B-NVFP4"
    result = evaluate(dict(reading.values))
    assert not result.errors and result.result.kv_bytes_per_token == 65_536
    code, out, err = cli("--from-log", os.path.join(LOGS, "vllm-qwen3.6-27b-fp8-h100-util088-4k-eager-v0.27.1.log"),
                         "--json")
    assert code == 0, err
    assert "KV cache tokens: the log printed 292,522 (line 9); sized here 292,522" in err
    assert "Maximum concurrency: the log printed 71.42x (line 10); sized here 71.42x" in err
    # A log naming the base repo itself resolves the same way: the shape, a bf16 cache.
    assert presets.preset_model("Qwen/Qwen3.6-27B").kv_dtype is None


@pytest.mark.parametrize("typed, suggested", [
    # DeepSeek's distill of R1 into Qwen3 8B: not R1's shape (61 layers of MLA), and Qwen3-8B's
    # only if its config.json says so: refused with the reason, Qwen3-8B suggested.
    ("deepseek-ai/DeepSeek-R1-0528-Qwen3-8B", "Qwen/Qwen3-8B"),
    ("deepseek r1 0528 qwen3 8b", "Qwen/Qwen3-8B"),
    ("NousResearch/Hermes-3-Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
])
def test_a_name_ending_in_another_models_name_is_refused_with_the_reason(typed, suggested):
    with pytest.raises(InputError) as e:
        presets.resolve_model(typed)
    message = e.value.message
    assert e.value.field == "model" and "ends in another model's name" in message
    assert message.endswith(f"did you mean {suggested}?") and "deepseek-ai/DeepSeek-R1" not in message.replace(typed, "")
    assert model_entry(typed) is None


@pytest.mark.parametrize("typed", [
    "Qwen/Qwen2.5-1.5B-Instruct",            # 1.5B is no preset: never the 14B or 7B
    "Qwen/Qwen2.5-3B-Instruct-AWQ",          # nor the 32B
    "gemma-3-1b-it",                         # nor Gemma 4 31B
    "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
    "nobody/no-such-model",
])
def test_a_size_no_preset_has_is_refused_not_guessed(typed):
    with pytest.raises(InputError) as e:
        presets.resolve_model(typed)
    assert e.value.field == "model"
    assert e.value.message.startswith(f"unknown model {typed!r}") and "kvcalc --list-models" in e.value.message


def test_another_version_of_the_same_size_is_only_suggested():
    # Meta-Llama-3-70B (8K context) is neither 3.1 nor 3.3: suggested, never sized as either.
    with pytest.raises(InputError) as e:
        presets.resolve_model("meta-llama/Meta-Llama-3-70B-Instruct")
    assert "is no preset's name; did you mean" in e.value.message


@pytest.mark.parametrize("typed, candidates", [
    ("llama 70b", ["meta-llama/Llama-2-70b-hf", "meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.3-70B-Instruct"]),
    ("llama 3.1", ["meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-405B"]),
    ("qwen3-next", ["Qwen/Qwen3-Next-80B-A3B-Instruct", "Qwen/Qwen3-Next-80B-A3B-Thinking"]),
])
def test_several_equally_good_answer_did_you_mean(typed, candidates):
    with pytest.raises(InputError) as e:
        presets.resolve_model(typed)
    message = e.value.message
    assert e.value.field == "model" and f"fits {len(candidates)} presets; did you mean" in message
    assert [c for c in candidates if c in message] == candidates
    assert "\n" not in message


def test_did_you_mean_names_at_most_five():
    with pytest.raises(InputError) as e:
        presets.resolve_model("qwen")
    named = [entry["id"] for entry in presets.model_entries() if entry["id"] in e.value.message]
    assert len(named) == 5 and "more" in e.value.message


def test_the_cli_and_the_page_search_share_one_ranking():
    # Words resolve to the search's first preset, only when its words are every word typed.
    for typed in ("llama 3.1 70b", "deepseek r1", "qwen 2.5 72b", "gemma 3 27b", "gpt oss 120b", "phi 4", "kimi k2"):
        assert presets.resolve_model(typed).entry is presets.search_models(typed)[0], typed
    # The page's Enter picks "qwen3 32"'s first; the CLI, asked for an exact answer, suggests it.
    assert presets.search_models("qwen3 32")[0]["id"] == "Qwen/Qwen3-32B"
    with pytest.raises(InputError, match=r"did you mean Qwen/Qwen3-32B"):
        presets.resolve_model("qwen3 32")


def test_links_and_the_page_read_models_alike():
    assert canonical_value("model", "llama 3.1 70b") == "meta-llama/Llama-3.1-70B"
    # A checkpoint with other weights stays as typed, so its weights stay unknown wherever it goes.
    assert canonical_value("model", "Qwen/Qwen2.5-72B-Instruct-AWQ") == "Qwen/Qwen2.5-72B-Instruct-AWQ"
    assert canonical_value("model", "llama 70b") == "llama 70b"
    raw, ignored = decode("model=deepseek-r1&gpu=H200&gpus=8")
    assert ignored == [] and evaluate(raw).scenario.model.hf_repo == "deepseek-ai/DeepSeek-R1"
    # A link's prices and plan GPUs by a family's name, as the page's fields read them.
    raw, ignored = decode("model=llama%203.1%2070b&prices=H100:2.49,h100-nvl-94gb:3&plan-gpus=H100")
    values, errors = parse_options(raw)
    assert ignored == [] and errors == []
    assert values["plan-gpus"] == ("h100-sxm-80gb", "h100-pcie-80gb", "h100-nvl-94gb")
    assert dict(values["prices"])["h100-pcie-80gb"] == Fraction("2.49") and dict(values["prices"])["h100-nvl-94gb"] == 3
    raw, ignored = decode("model=llama%2070b&gpu=a100")
    assert [key for key, _ in ignored] == ["gpu"] and "did you mean a100-sxm-40gb" in ignored[0][1]


# ---- GPUs --------------------------------------------------------------------------------------

@pytest.mark.parametrize("typed, gpu_id", [
    ("H200", "h200-141gb"), ("h200", "h200-141gb"),
    # nvidia-smi names the SXM part "NVIDIA H100 80GB HBM3" and the others by form (PCIe, NVL):
    # its device name is the SXM card; the bare family name "h100" is not (below).
    ("NVIDIA H100 80GB HBM3", "h100-sxm-80gb"), ("H100 SXM5", "h100-sxm-80gb"),
    ("H100 SXM", "h100-sxm-80gb"), ("h100-sxm", "h100-sxm-80gb"), ("h100 pcie", "h100-pcie-80gb"),
    ("H100 NVL", "h100-nvl-94gb"),
    ("4090", "rtx-4090-24gb"), ("RTX 4090", "rtx-4090-24gb"), ("rtx4090", "rtx-4090-24gb"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090-24gb"),
    ("MI300X", "mi300x-192gb"), ("AMD Instinct MI300X", "mi300x-192gb"),
    ("A100-SXM4-80GB", "a100-sxm-80gb"), ("A100 80GB PCIe", "a100-pcie-80gb"), ("a100 sxm 40 GB", "a100-sxm-40gb"),
    ("Tesla T4", "t4-16gb"), ("l40", "l40-48gb"), ("L40S", "l40s-48gb"), ("B200", "b200-180gb"),
    ("GB200 NVL72", "gb200-186gb"), ("m3 ultra", "m3-ultra-512gb"), ("h100-sxm-80gb", "h100-sxm-80gb"),
])
def test_a_gpu_by_its_common_name(typed, gpu_id):
    assert gpu_presets.gpu(typed).id == gpu_id


@pytest.mark.parametrize("typed, candidates", [
    ("a100", ["a100-sxm-40gb", "a100-pcie-40gb", "a100-sxm-80gb", "a100-pcie-80gb"]),
    # The A100 80GB comes as SXM4 and PCIe: PyTorch sees 85,100,068,864 B of one and
    # 84,986,036,224 B of the other, at 2,039 and 1,935 GB/s. Not ours to pick.
    ("A100 80GB", ["a100-sxm-80gb", "a100-pcie-80gb"]),
    # H100 comes as SXM (80 GB, 3.35 TB/s), PCIe (80 GB, 2.0 TB/s) and NVL (94 GB): a typed family
    # name is never one card of it, though gpus.json gives the SXM "H100" as nvidia-smi's alias.
    ("H100", ["h100-sxm-80gb", "h100-pcie-80gb", "h100-nvl-94gb"]),
    ("nvidia h100", ["h100-sxm-80gb", "h100-pcie-80gb", "h100-nvl-94gb"]),
    ("H100 80GB", ["h100-sxm-80gb", "h100-pcie-80gb"]),
    ("rtx 6000", ["rtx-pro-6000-96gb", "rtx-pro-6000-server-96gb", "rtx-6000-ada-48gb"]),
])
def test_an_ambiguous_gpu_answers_did_you_mean(typed, candidates):
    with pytest.raises(InputError) as e:
        gpu_presets.gpu(typed)
    assert e.value.field == "gpu" and f"fits {len(candidates)} GPU presets; did you mean" in e.value.message
    named = [g for g in gpu_presets.gpus() if g in e.value.message]
    assert sorted(named) == sorted(candidates)


def test_an_unknown_gpu_is_one_line_never_the_whole_list():
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "tpu-v9")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith("kvcalc: error: --gpu: unknown GPU 'tpu-v9'") and "kvcalc --list-gpus" in err
    assert sum(g in err for g in gpu_presets.gpus()) <= 3
    code, _, err = cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "mi300")
    assert code == 2 and "did you mean mi300x-192gb?" in err


def test_a_gpu_family_on_the_cli_and_in_a_link_answers_did_you_mean():
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err == ("kvcalc: error: --gpu: 'H100' fits 3 GPU presets; did you mean h100-sxm-80gb, h100-pcie-80gb, "
                   "h100-nvl-94gb?\n")
    raw, ignored = decode("model=llama%203.1%208b&gpu=H100")
    assert "gpu" not in raw and [key for key, _ in ignored] == ["gpu"] and "did you mean h100-sxm-80gb" in ignored[0][1]


@pytest.mark.parametrize("option", ["--gpu", "--model", "--engine", "--price", "--kv-dtype", "--weights-file"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_option_is_one_line_naming_it_never_dropped(option, value):
    # `--gpu ""` sized without a GPU, as if not given; a link's empty gpu= says "ignored gpu: empty value".
    argv = {"--model": "meta-llama/Llama-3.1-8B", "--gpu": "h100-sxm-80gb", "--context": "8192"}
    argv[option] = value
    code, out, err = cli(*[w for pair in argv.items() for w in pair])
    assert (code, out) == (2, "")
    assert err.startswith(f"kvcalc: error: {option}: ") and err.count("\n") == 1, err


def test_the_cli_sizes_ids_as_typed():
    # Llama 3.1 70B, fp8 KV: 80 layers x 2 x 8 heads x 128 x 1 B = 163,840 B a token, on one H200.
    code, out, err = cli("--model", "llama 3.1 70b", "--gpu", "H200", "--kv-dtype", "fp8", "--engine", "exact", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["kv_bytes_per_token"] == 163_840 and data["gpu_memory_bytes"] == gpu_presets.gpu("h200-141gb").memory_bytes


# ---- prices ------------------------------------------------------------------------------------

def test_a_family_price_prices_each_of_its_presets_unless_named_more_narrowly():
    values, errors = parse_options({"prices": "H100=2.49"})
    assert errors == [] and values["prices"] == (
        ("h100-sxm-80gb", Fraction("2.49")), ("h100-pcie-80gb", Fraction("2.49")), ("h100-nvl-94gb", Fraction("2.49")))
    for text in ("H100=2.49,h100-nvl-94gb=3", "h100-nvl-94gb=3,H100=2.49"):
        values, errors = parse_options({"prices": text})
        assert dict(values["prices"]) == {"h100-sxm-80gb": Fraction("2.49"), "h100-pcie-80gb": Fraction("2.49"),
                                          "h100-nvl-94gb": Fraction(3)}, text
    values, _ = parse_options({"prices": "a100 80gb=1.8"})
    assert dict(values["prices"]) == {"a100-sxm-80gb": Fraction("1.8"), "a100-pcie-80gb": Fraction("1.8")}


def test_prices_on_the_cli():
    code, out, err = cli("--model", "meta-llama/Llama-3.1-70B", "--plan", "--json", "--plan-gpus", "H100,H200",
                         "--price", "H100=2.49", "--price", "H200=3.5")
    assert code == 0, err
    rows = {row["gpu"]: row for row in json.loads(out)["plan"]}
    assert set(rows) == {"h100-sxm-80gb", "h100-pcie-80gb", "h100-nvl-94gb", "h200-141gb"}
    # usd_per_hour is the price times the GPUs: each row's own count.
    for gpu_id, price in (("h100-sxm-80gb", Fraction("2.49")), ("h100-nvl-94gb", Fraction("2.49")),
                          ("h200-141gb", Fraction("3.5"))):
        row = rows[gpu_id]
        assert Fraction(str(row["usd_per_hour"])) == price * row["gpus"], gpu_id


@pytest.mark.parametrize("price", ["H100=abc", "tpu=2", "H100=2,h100=3", "=2", "H100", "x" * 10_000 + "=2"])
def test_a_bad_price_is_one_short_line_naming_price(price):
    code, out, err = cli("--model", "meta-llama/Llama-3.1-70B", "--plan", "--price", price)
    assert (code, out) == (2, "") and err.startswith("kvcalc: error: --price: ") and err.count("\n") == 1
    assert len(err) < 200 and sum(g in err for g in gpu_presets.gpus()) <= 3


# ---- logs --------------------------------------------------------------------------------------

def test_a_logs_model_path_resolves_as_typed_ids_do():
    assert model_entry("Qwen/Qwen2.5-72B-Instruct")["id"] == "Qwen/Qwen2.5-72B"
    assert model_entry("/data/models/Qwen3-8B")["id"] == "Qwen/Qwen3-8B"
    assert model_entry("/workspace/qwen/Qwen2.5-32B-Instruct")["id"] == "Qwen/Qwen2.5-32B"
    assert model_entry("meta-llama/Meta-Llama-3-8B") is None        # Llama 3 8B is no preset
    assert model_entry("/kaggle/input/models/qwen-lm/qwen-3/transformers/8b/1") is None


def test_the_issues_log_names_its_model():
    # The vLLM 0.19 log of Qwen/Qwen2.5-72B-Instruct on 4 x L40S (SOURCES.md): the Qwen2.5-72B preset.
    with open(os.path.join(LOGS, "vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log"), encoding="utf-8") as fh:
        reading = read_log(fh.read())
    assert reading.values["model"] == "Qwen/Qwen2.5-72B"
    read = next(r for r in reading.read if r.option == "model")
    assert "identical shape" in read.how and "Qwen/Qwen2.5-72B-Instruct" in read.how


def test_a_logs_quantized_model_is_its_shape_with_its_own_weights():
    # SGLang --model /path/to/Qwen3-235B-A22B-FP8: Qwen3-235B-A22B's shapes, FP8 weights.
    with open(os.path.join(LOGS, "sglang-qwen3-235b-a22b-fp8-tp4-mfs093.log"), encoding="utf-8") as fh:
        reading = read_log(fh.read())
    assert reading.values["model"] == "/path/to/Qwen3-235B-A22B-FP8"
    read = next(r for r in reading.read if r.option == "model")
    assert "Qwen/Qwen3-235B-A22B" in read.how and "FP8's" in read.how
    model = presets.preset_model(reading.values["model"])
    assert model.hf_repo == "Qwen/Qwen3-235B-A22B" and model.weights_dtype is None


# ---- hostile input -----------------------------------------------------------------------------

@pytest.mark.parametrize("option", ["--model", "--gpu"])
@pytest.mark.parametrize("value", ["x" * 10_000, "ab/" * 3000, "Ωmega‐3 ☃", "\u200b", "llama\x00 70b",
                                   "a-" * 500, "a" + "-b" * 300 + "-awq" * 50, "a100 " * 200, "llama " * 170])
def test_hostile_ids_are_one_line_naming_the_option(option, value):
    argv = ["--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb"]
    argv[argv.index(option) + 1] = value
    code, out, err = cli(*argv)
    assert (code, out) == (2, ""), value[:40]
    assert err.startswith(f"kvcalc: error: {option}: ") and err.count("\n") == 1 and len(err) < 400


@pytest.mark.parametrize("value", ["", "   ", "''"])
def test_an_empty_model_names_the_option(value):
    code, out, err = cli("--model", value)
    assert (code, out) == (2, "") and err.startswith("kvcalc: error: --model: ") and err.count("\n") == 1


def test_the_search_takes_any_text():
    assert presets.search_models("x" * 10_000) == []
    assert presets.search_models("\u2603 \x00") == list(presets.model_entries())
    assert presets.search_models(None) == list(presets.model_entries())


def test_a_dated_release_is_the_shape_and_its_limits_are_said_to_differ():
    # Qwen3-30B-A3B-Instruct-2507 has Qwen3-30B-A3B's layers and heads; its config.json sets a
    # longer context (262,144) than the preset's 40,960, which the note says may differ.
    model = presets.preset_model("Qwen/Qwen3-30B-A3B-Instruct-2507")
    assert model.hf_repo == "Qwen/Qwen3-30B-A3B" and model.weights_dtype == "bf16"
    assert any("2507 is a release of its own" in note for note in model.notes)
    # A dated id the preset carries as an alias is the preset itself.
    assert presets.resolve_model("deepseek-ai/DeepSeek-R1-0528").release == ""
    with open(os.path.join(LOGS, "vllm-qwen3-30b-a3b-2507-fp8-h100-8k-seqs64-v0.22.1.log"), encoding="utf-8") as fh:
        reading = read_log(fh.read())
    read = next(r for r in reading.read if r.option == "model")
    assert reading.values["model"] == "Qwen/Qwen3-30B-A3B" and "2507 is a release of its own" in read.how


def test_a_path_is_a_name_not_words():
    # Typed words "llama 1b" fit one preset; a folder called llama-1b may be any 1B Llama.
    assert presets.resolve_model("llama 1b").entry["id"] == "meta-llama/Llama-3.2-1B"
    with pytest.raises(InputError, match=r"'/data/llama-1b' is no preset's name; did you mean meta-llama/Llama-3.2-1B\?"):
        presets.resolve_model("/data/llama-1b")
    assert presets.resolve_model("/models/llama-3.2-1b").entry["id"] == "meta-llama/Llama-3.2-1B"


@pytest.mark.parametrize("device, total_gib, gpu_id", [
    # Device names as vLLM, SGLang and llama.cpp print them (the fixtures' and nvidia-smi's).
    ("NVIDIA_H100_80GB_HBM3", None, "h100-sxm-80gb"),
    ("NVIDIA_A100-SXM4-80GB", Fraction(317, 4), "a100-sxm-80gb"),       # vllm-*-a100-80gb logs: 79.25 GiB
    ("NVIDIA_GeForce_RTX_3090", Fraction(1179, 50), "rtx-3090-24gb"),
    ("NVIDIA_L4", None, "l4-24gb"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", None, "rtx-pro-6000-96gb"),
    ("NVIDIA H100", None, "h100-sxm-80gb"),                              # the alias: a device's name
    ("NVIDIA H100", Fraction(93), "h100-nvl-94gb"),                      # a total only the 94 GB card has
    # Not a preset's device: another chip of the same number.
    ("NVIDIA GeForce RTX 4090 D", None, None),
    # The driver's name of the GH200 of 96 GB HBM3 (480 GB is the Grace CPU's memory with it):
    # the preset's device_name in data/gpus.json (tests/engines/test_log_gpu.py).
    ("NVIDIA GH200 480GB", None, "gh200-96gb"),
    # Two presets of the same memory (A100 80GB SXM4 and PCIe): not picked by the total.
    ("NVIDIA A100", Fraction(317, 4), None),
    ("x" * 100_000, None, None),
])
def test_a_logs_device_name_is_read_by_the_same_matcher(device, total_gib, gpu_id):
    assert gpu_preset(device, total_gib) == gpu_id


# ---- MIG instances (issue 41, part 4a) ---------------------------------------------------------
# A MIG instance is found by its id, its name, or a profile ("3g.40gb", "3g-40gb", "3g 40gb") with its
# GPU's words, "mig" or neither; a profile alone when one GPU has it. A family's words alone never
# reach one: "H100", "H100 SXM", --price H100=2.49 and --plan-gpus H100 resolve as above.

@pytest.mark.parametrize("typed, gpu_id", [
    ("h100-sxm-80gb-mig-3g-40gb", "h100-sxm-80gb-mig-3g-40gb"),
    ("NVIDIA H100 SXM 80GB MIG 3g.40gb", "h100-sxm-80gb-mig-3g-40gb"),
    ("H100 3g.40gb", "h100-sxm-80gb-mig-3g-40gb"),          # of the H100 presets, only the SXM has 3g.40gb
    ("h100 mig 3g.40gb", "h100-sxm-80gb-mig-3g-40gb"),
    ("H100 SXM MIG 3G.40GB", "h100-sxm-80gb-mig-3g-40gb"),
    ("3g.40gb", "h100-sxm-80gb-mig-3g-40gb"),               # one GPU's profile
    ("h100 1g.10gb+me", "h100-sxm-80gb-mig-1g-10gb"),       # the media engines: the same memory and SMs
    ("H100 3g.47gb", "h100-nvl-94gb-mig-3g-47gb"),
    ("H200 mig 1g.18gb", "h200-141gb-mig-1g-18gb"),
    ("GB200 1g.23gb", "gb200-186gb-mig-1g-23gb"),
    # nvidia-smi's and torch's name of the MIG device, as a log prints it.
    ("NVIDIA H100 80GB HBM3 MIG 3g.40gb", "h100-sxm-80gb-mig-3g-40gb"),
])
def test_a_mig_instance_by_its_profile(typed, gpu_id):
    assert gpu_presets.gpu(typed).id == gpu_id
    assert gpu_presets.gpu_family(typed) == (gpu_id,)


def test_a_familys_name_reaches_no_mig_instance():
    assert gpu_presets.gpu_family("H100") == ("h100-sxm-80gb", "h100-pcie-80gb", "h100-nvl-94gb")
    assert gpu_presets.gpu("H100 SXM").id == "h100-sxm-80gb"
    values, errors = parse_options({"prices": "H100=2.49", "plan-gpus": "H100"})
    assert errors == [] and [gpu_id for gpu_id, _ in values["prices"]] == list(values["plan-gpus"]) == \
        ["h100-sxm-80gb", "h100-pcie-80gb", "h100-nvl-94gb"]
    # "all" is every whole GPU's preset; "h100 mig" every H100 instance; an instance's price is its own.
    values, errors = parse_options({"plan-gpus": "all", "prices": "H100=2.49,H100 3g.40gb=1.2"})
    assert errors == [] and not any("mig" in gpu_id for gpu_id in values["plan-gpus"])
    assert dict(values["prices"])["h100-sxm-80gb-mig-3g-40gb"] == Fraction("1.2")
    assert len(gpu_presets.gpu_family("h100 mig")) == 12


@pytest.mark.parametrize("typed, words", [
    # A GPU without MIG presets: the line names it and the GPUs that have them.
    ("L40S 3g.40gb", "gpu: 'L40S 3g.40gb': l40s-48gb has no MIG presets; the MIG presets are of h100-sxm-80gb, "
                     "h100-nvl-94gb, h200-141gb, b200-180gb and gb200-186gb"),
    ("RTX 4090 mig 1g.10gb", "gpu: 'RTX 4090 mig 1g.10gb': rtx-4090-24gb has no MIG presets; the MIG presets are of "
                             "h100-sxm-80gb, h100-nvl-94gb, h200-141gb, b200-180gb and gb200-186gb"),
    # A profile the GPU does not have: the line names the profiles it has.
    ("H100 SXM 5g.50gb", "gpu: 'H100 SXM 5g.50gb': h100-sxm-80gb has no MIG profile 5g.50gb; its profiles are "
                         "1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb"),
    ("H100 5g.50gb", "gpu: 'H100 5g.50gb': no H100 preset has MIG profile 5g.50gb; h100-sxm-80gb has 1g.10gb, "
                     "1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb; h100-nvl-94gb has 1g.12gb, 1g.24gb, 2g.24gb, "
                     "3g.47gb, 4g.47gb, 7g.94gb"),
    # No GPU has a 9g profile: still the profiles it has, the text quoted as typed (the review
    # found "unknown GPU 'h100 9g.90gb'", its "mig" gone and no profile named).
    ("h100 sxm mig 9g.90gb", "gpu: 'h100 sxm mig 9g.90gb': h100-sxm-80gb has no MIG profile 9g.90gb; its profiles "
                             "are 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb"),
    # Two GPUs' profile of one name: did you mean.
    ("1g.23gb", "gpu: '1g.23gb' fits 2 GPU presets; did you mean b200-180gb-mig-1g-23gb, gb200-186gb-mig-1g-23gb?"),
])
def test_a_mig_profile_a_gpu_does_not_have_is_one_line(typed, words):
    with pytest.raises(InputError) as e:
        gpu_presets.gpu(typed)
    assert f"{e.value.field}: {e.value.message}" == words


def test_a_mig_profile_on_a_gpu_without_one_is_one_line_on_the_cli():
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "L40S 3g.40gb")
    assert (code, out) == (2, "") and err == (
        "kvcalc: error: --gpu: 'L40S 3g.40gb': l40s-48gb has no MIG presets; the MIG presets are of "
        "h100-sxm-80gb, h100-nvl-94gb, h200-141gb, b200-180gb and gb200-186gb\n")
    code, out, err = cli("--model", "meta-llama/Llama-3.1-70B", "--plan", "--price", "H100 5g.50gb=1")
    assert (code, out) == (2, "") and err.startswith("kvcalc: error: --price: 'H100 5g.50gb': no H100 preset has "
                                                     "MIG profile 5g.50gb;") and err.count("\n") == 1
