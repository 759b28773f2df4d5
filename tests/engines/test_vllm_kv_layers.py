"""A KV dtype per layer, as vLLM builds it (engines/vllm/kv_layers.py): TurboQuant's packed slots
(vllm/model_executor/layers/quantization/turboquant/config.py, 0.20.0-0.34.0), the boundary layers it keeps
in the model's dtype (get_boundary_skip_layers), --kv-cache-dtype-skip-layers (0.19.0 on, attention.py
Attention.__init__), and the block the quantized layers grow to beside a kept layer
(platforms/interface.py _align_heterogeneous_kv_block_size, 0.25.0 on). No public start-up log prints
these lines yet: the figures are worked from the code, read in the released wheels."""

import pytest

from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log
from kvcalc.precision import precision
from kvcalc.serving.launch import launch
from support import hf_fixture

GIB = 1 << 30
LLAMA_8B = {"engine": "vllm", "model": "meta-llama/Llama-3.1-8B", "context": "8192", "gpu": "h100-sxm-80gb",
            "kv-memory-gib": "20"}


@pytest.mark.parametrize("name, head_dim, slot", [
    # key: fp8 as it is, or ceil(D x bits / 8) + a 2 B norm; value: ceil(D x bits / 8) + 4 B scale and zero;
    # the sum rounded up to even (slot_size_aligned).
    ("turboquant_k8v4", 128, 128 + 64 + 4), ("turboquant_4bit_nc", 128, 66 + 68),
    ("turboquant_k3v4_nc", 128, 50 + 68), ("turboquant_3bit_nc", 128, 50 + 52),
    ("turboquant_k8v4", 256, 256 + 128 + 4), ("turboquant_3bit_nc", 80, 32 + 34),
    ("turboquant_k3v4_nc", 72, 27 + 2 + 36 + 4 + 1)])
def test_a_turboquant_slot_is_the_presets_packed_key_and_value(name, head_dim, slot):
    assert precision(name).slot_bytes(head_dim) == slot
    assert precision(name).kv_row_bytes(8, head_dim, head_dim) == 8 * slot


def test_llama_8b_under_turboquant_keeps_its_first_and_last_two_layers_in_bf16():
    """32 layers, 8 KV heads of 128. Layers 0, 1, 30, 31 stay bf16: 4 x 2 x 128 x 8 x 2 B = 16,384 B; the other 28
    take 8 heads x 196 B = 1,568 B: 43,904 B; 60,288 B a token against 131,072 all bf16. vLLM 0.33.0 measures the
    quantized page as uint8 K and V (2,048 B a token) and grows the block to 16 x cdiv(16 x 4,096, 16 x 2,048) = 32.
    One group (every layer full attention): 20 GiB // (32 x 60,288 B) = 11,131 blocks of 32 tokens, a request of
    8,192 tokens 256 blocks: 43.48x, 356,192 tokens (int(concurrency x max_model_len))."""
    e = evaluate(LLAMA_8B | {"kv-dtype": "turboquant_k8v4"})
    assert e.ok, e.errors
    layers = e.scenario.model.layers
    assert [i for i, layer in enumerate(layers) if layer.kv_dtype] == [0, 1, 30, 31]
    kv = e.scenario.workload.kv_precision
    assert sum(layer.row_bytes(kv) for layer in layers) == 4 * 4_096 + 28 * 1_568 == 60_288
    assert e.engine.block_size == 32
    assert e.engine.kv_tokens == 11_131 * 8_192 // 256 == 356_192
    assert "Setting attention block size to 32 tokens so the quantized primary KV page" in "\n".join(e.engine.log)
    assert any("4 layers (0, 1, 30, 31) keep their KV cache in bf16" in n for n in e.scenario.warnings)


def test_before_0_25_the_block_stays_16():
    """0.20.0-0.24.x have no _align_heterogeneous_kv_block_size: every layer in 16-token blocks, one group."""
    e = evaluate(LLAMA_8B | {"kv-dtype": "turboquant_k8v4", "engine-version": "0.24.0"})
    assert e.ok, e.errors
    assert e.engine.block_size == 16
    assert not any("padded-spec" in line for line in e.engine.log)


def test_fp8_with_layers_0_and_31_kept():
    """--kv-cache-dtype fp8 --kv-cache-dtype-skip-layers 0 31: 30 x 2,048 + 2 x 4,096 = 69,632 B a token;
    the block grows to 32 as for TurboQuant (the kept page is twice the fp8 one)."""
    e = evaluate(LLAMA_8B | {"kv-dtype": "fp8", "kv-dtype-skip-layers": "0, 31"})
    assert e.ok, e.errors
    assert e.values["kv-dtype-skip-layers"] == "0/31"
    kv = e.scenario.workload.kv_precision
    assert sum(layer.row_bytes(kv) for layer in e.scenario.model.layers) == 69_632
    assert e.engine.block_size == 32


def test_a_skip_list_under_the_models_own_dtype_changes_nothing():
    e = evaluate(LLAMA_8B | {"kv-dtype-skip-layers": "3"})
    assert e.ok and not any(layer.kv_dtype for layer in e.scenario.model.layers)
    assert e.engine.block_size == 16


def test_a_hybrid_under_turboquant_keeps_no_boundary_layer():
    """get_boundary_skip_layers returns [] for a hybrid (0.21.0 on); its attention layers all take the packed
    slot, and the attention block grows to hold a state page with the packed row (the TurboQuant branch of
    _align_hybrid_block_size)."""
    cfg = hf_fixture("Qwen__Qwen3.5-27B.json")
    e = evaluate({"engine": "vllm", "hf-config": cfg, "kv-dtype": "turboquant_4bit_nc", "context": "8192",
                  "kv-memory-gib": "20"})
    assert e.ok, e.errors
    attention = [layer for layer in e.scenario.model.layers if layer.kind == "full"]
    assert attention and not any(layer.kv_dtype for layer in attention)
    head = attention[0]
    assert head.row_bytes(e.scenario.workload.kv_precision) == head.kv_heads * (
        (head.head_dim * 4 // 8 + 2) + (head.head_dim * 4 // 8 + 4))
    refused = evaluate({"engine": "vllm", "hf-config": cfg, "kv-dtype": "turboquant_4bit_nc",
                        "engine-version": "0.20.0", "kv-memory-gib": "20"})
    assert [x.field for x in refused.errors] == ["kv-dtype"] and "0.21.0" in refused.errors[0].message


@pytest.mark.parametrize("inputs, field, words", [
    ({"kv-dtype": "turboquant_k8v4", "engine-version": "0.19.1"}, "kv-dtype", "0.20.0"),
    ({"kv-dtype": "nvfp4", "engine-version": "0.19.1"}, "kv-dtype", "no nvfp4 cache dtype"),
    ({"kv-dtype": "fp8", "kv-dtype-skip-layers": "0", "engine-version": "0.18.1"}, "kv-dtype-skip-layers", "0.19.0"),
    ({"kv-dtype": "fp8", "kv-dtype-skip-layers": "32"}, "kv-dtype-skip-layers", "layers 0 to 31"),
    ({"kv-dtype": "fp8", "kv-dtype-skip-layers": "sliding_window"}, "kv-dtype-skip-layers", "no sliding-window"),
    ({"kv-dtype": "fp8", "kv-dtype-skip-layers": "first"}, "kv-dtype-skip-layers", "layer indices"),
    ({"kv-dtype": "fp8", "kv-dtype-skip-layers": "-1"}, "kv-dtype-skip-layers", "layer indices"),
])
def test_what_vllm_does_not_take_is_refused_by_name(inputs, field, words):
    out = evaluate(LLAMA_8B | inputs)
    assert [e.field for e in out.errors] == [field] and words in out.errors[0].message


def test_a_state_layer_has_no_kv_dtype_to_keep():
    """Qwen3.5-27B's layer 0 is a Gated DeltaNet: it keeps no KV cache, so a dtype for it is a mistake."""
    out = evaluate({"engine": "vllm", "hf-config": hf_fixture("Qwen__Qwen3.5-27B.json"), "kv-dtype": "fp8",
                    "kv-dtype-skip-layers": "0", "kv-memory-gib": "20"})
    assert [e.field for e in out.errors] == ["kv-dtype-skip-layers"]
    assert "layer 0 is a recurrent-state layer" in out.errors[0].message


@pytest.mark.parametrize("model, words", [
    ("google/gemma-3-27b-it", "sliding-window backend"),      # its layers slide 5 of 6
    ("deepseek-ai/DeepSeek-V3", "MLA"),                        # no MLA backend takes a packed dtype
])
def test_turboquant_where_vllm_has_no_backend_is_refused(model, words):
    out = evaluate({"engine": "vllm", "model": model, "kv-dtype": "turboquant_k8v4", "kv-memory-gib": "20"})
    assert [e.field for e in out.errors] == ["kv-dtype"] and words in out.errors[0].message


def test_other_engines_and_the_exact_ideal_refuse_the_packed_formats():
    for engine in ("sglang", "llamacpp"):
        out = evaluate(LLAMA_8B | {"engine": engine, "kv-dtype": "turboquant_k8v4"})
        assert [e.field for e in out.errors] == ["kv-dtype"]
    out = evaluate({"engine": "exact", "model": "meta-llama/Llama-3.1-8B", "kv-dtype": "turboquant_k8v4"})
    assert [e.field for e in out.errors] == ["kv-dtype"] and "choose engine vllm" in out.errors[0].message
    out = evaluate(LLAMA_8B | {"engine": "sglang", "kv-dtype": "fp8", "kv-dtype-skip-layers": "0"})
    assert [e.field for e in out.errors] == ["kv-dtype-skip-layers"]


def test_the_log_and_the_command_give_the_list():
    args = ("(APIServer pid=41356) INFO 05-01 10:00:00 [api_server.py:1623] vLLM API server version 0.33.0\n"
            "(APIServer pid=41356) INFO 05-01 10:00:00 [api_utils.py:273] non-default args: {'model': 'meta-llama/Llama-3.1-8B', "
            "'kv_cache_dtype': 'fp8', 'kv_cache_dtype_skip_layers': ['0', '31']}")
    assert read_log(args, "vllm").values["kv-dtype-skip-layers"] == "0/31"
    command = ("vllm serve meta-llama/Llama-3.1-8B --kv-cache-dtype turboquant_k8v4 "
               "--kv-cache-dtype-skip-layers 0 5 --max-model-len 8192")
    version = "INFO 05-01 10:00:00 [api_server.py:1623] vLLM API server version 0.33.0"
    reading = read_log(command + "\n" + version, "vllm")
    assert (reading.values["kv-dtype"], reading.values["kv-dtype-skip-layers"]) == ("turboquant_k8v4", "0/5")


def test_the_command_writes_the_list_and_the_preset():
    e = evaluate(LLAMA_8B | {"kv-dtype": "turboquant_k8v4", "kv-dtype-skip-layers": "5,3"})
    assert e.ok, e.errors
    assert [i for i, layer in enumerate(e.scenario.model.layers) if layer.kv_dtype] == [0, 1, 3, 5, 30, 31]
    command = launch(e.scenario, "vllm", e).command
    assert "--kv-cache-dtype turboquant_k8v4" in command and "--kv-cache-dtype-skip-layers 3 5" in command


def test_each_precision_row_and_line_places_its_own_kept_layers():
    """The side table and the charts size fp8 as fp8 is chosen (no layer kept), not with TurboQuant's
    boundary layers in bf16: the fp8 row of a TurboQuant page equals the fp8 page's own answer."""
    from kvcalc.reports import compare, sweep
    tq = evaluate(LLAMA_8B | {"kv-dtype": "turboquant_k8v4", "kv-memory-gib": "40"})
    fp8 = evaluate(LLAMA_8B | {"kv-dtype": "fp8", "kv-memory-gib": "40"})
    row = next(r for r in compare.precision_rows(tq.scenario) if r.label == "fp8")
    assert row.evaluation.engine.kv_tokens == fp8.engine.kv_tokens
    assert not any(layer.kv_dtype for layer in row.evaluation.scenario.model.layers)
    lines = sweep.engine_answers(tq.scenario, tq.result, [8_192, 32_768], ["fp8"])["fp8"]
    own = sweep.engine_answers(fp8.scenario, fp8.result, [8_192, 32_768], ["fp8"])["fp8"]
    assert [a.kv_tokens for a in lines] == [a.kv_tokens for a in own]


def test_the_kept_model_is_made_once_per_precision():
    """The page asks on every update: the same inputs give the same model object, its memo kept."""
    first = evaluate(LLAMA_8B | {"kv-dtype": "turboquant_k8v4"}).scenario.model
    again = evaluate(LLAMA_8B | {"kv-dtype": "turboquant_k8v4"}).scenario.model
    assert first is again


def test_the_source_formula_names_the_packed_slot_and_the_kept_layers():
    from kvcalc.reports.source_formula import _per_token_words
    e = evaluate(LLAMA_8B | {"kv-dtype": "turboquant_k8v4"})
    words = _per_token_words(e.scenario.model, e.scenario.workload)
    assert "4 of the 32 layers keep their cache in bf16" in words and "196 B a head" in words


@pytest.mark.parametrize("inputs, field", [
    ({"weights-dtype": "turboquant_3bit_nc"}, "weights-dtype"),
    ({"plan-weights-dtypes": "bf16,turboquant_4bit_nc"}, "plan-weights-dtypes"),
    ({"kv-dtype": "fp8", "kv-dtype-skip-layers": "\u00b2"}, "kv-dtype-skip-layers"),
])
def test_packed_formats_are_no_weights_and_a_list_takes_digits_only(inputs, field):
    assert [e.field for e in evaluate(LLAMA_8B | inputs).errors] == [field]


def test_a_log_listing_every_layer_keeps_the_list():
    """Llama 3.1 70B's 80 layers listed print as 229 characters: the option takes up to 8,192 (200 for others)."""
    entries = ", ".join(f"'{i}'" for i in range(80))
    args = ("(APIServer pid=1) INFO 05-01 10:00:00 [api_server.py:1623] vLLM API server version 0.33.0\n"
            "(APIServer pid=1) INFO 05-01 10:00:00 [api_utils.py:273] non-default args: {'model': "
            f"'meta-llama/Llama-3.1-70B', 'kv_cache_dtype': 'fp8', 'kv_cache_dtype_skip_layers': [{entries}]}}")
    listed = read_log(args, "vllm").values["kv-dtype-skip-layers"]
    assert listed == "/".join(map(str, range(80))) and len(listed) == 229
    e = evaluate({"engine": "vllm", "model": "meta-llama/Llama-3.1-70B", "kv-dtype": "fp8", "kv-dtype-skip-layers": listed,
                  "kv-memory-gib": "20"})
    assert e.ok and all(layer.kv_dtype == "bf16" for layer in e.scenario.model.layers)
