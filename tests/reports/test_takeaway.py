"""Launch commands, exports and chart series (the charts-and-exports issue)."""

import csv
import io
import json

import pytest
from hypothesis import given, settings, strategies as st

from kvcalc import evaluate
from kvcalc.reports.compare import compare_table
from kvcalc.reports.export import export
from kvcalc.serving.launch import launch
from kvcalc.reports.link import decode, decode_pins, encode
from kvcalc.reports.report import to_json
from kvcalc.reports.sweep import concurrency_series, context_points, memory_series

from test_cli import cli


def scenario(**values):
    e = evaluate({k.replace("_", "-"): str(v) for k, v in values.items()})
    assert e.ok, e.errors
    return e


def test_vllm_command_flags():
    e = scenario(model="meta-llama/Llama-3.1-70B", context=8192, batch=32, kv_dtype="fp8", gpus=8,
                 memory_utilization="0.9", block_size=16)
    assert launch(e.scenario, "vllm").command == (
        "vllm serve meta-llama/Llama-3.1-70B --max-model-len 8192 --max-num-seqs 32 --kv-cache-dtype fp8 "
        "--tensor-parallel-size 8 --pipeline-parallel-size 1 --gpu-memory-utilization 0.9 --block-size 16")


def test_sglang_command_flags():
    e = scenario(model="Qwen/Qwen3-32B", context=32768, batch=4, gpus=4, pp=2, memory_utilization="0.85")
    assert launch(e.scenario, "sglang").command == (
        "python -m sglang.launch_server --model-path Qwen/Qwen3-32B --context-length 32768 "
        "--max-running-requests 4 --kv-cache-dtype auto --tp-size 2 --pp-size 2 --mem-fraction-static 0.85")


def test_llama_cpp_command_flags():
    e = scenario(model="meta-llama/Llama-3.1-8B", context=16384, batch=4, kv_dtype="q8_0")
    result = launch(e.scenario, "llama.cpp")
    assert result.command == ("llama-server -m Llama-3.1-8B.gguf -c 65536 -np 4 -ctk q8_0 -ctv q8_0 "
                              "-ngl 999 -fa on")
    assert any("flash attention" in note for note in result.notes)


@pytest.mark.parametrize("engine, dtype", [("vllm", "q4_0"), ("sglang", "int4"), ("llama.cpp", "fp8"), ("vllm", "nvfp4")])
def test_unsupported_precision_is_said_not_mapped(engine, dtype):
    e = scenario(model="meta-llama/Llama-3.1-8B", kv_dtype=dtype)
    result = launch(e.scenario, engine)
    assert result.command is None and dtype in result.notes[0]


def test_cli_launch_and_formats_parse_back():
    base = ["--model", "google/gemma-2-9b", "--context", "8192", "--batch", "8", "--gpu", "l40s-48gb"]
    code, out, _ = cli(*base, "--launch", "vllm")
    assert code == 0 and out.startswith("vllm serve google/gemma-2-9b --max-model-len 8192 --max-num-seqs 8")
    code, out, err = cli(*base, "--launch", "llama.cpp", "--kv-dtype", "fp8")
    assert code == 2 and "llama.cpp cannot store the KV cache as fp8" in err
    code, out, _ = cli(*base, "--json")
    expected = json.loads(out)
    code, out, _ = cli(*base, "--format", "csv")
    rows = dict(csv.reader(io.StringIO(out)))
    for key in ("kv_bytes_per_token", "kv_bytes_total", "max_concurrency", "max_context"):
        assert int(rows[key]) == expected[key]
    code, out, _ = cli(*base, "--format", "markdown")
    table = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in out.splitlines()[2:]}
    for key in ("kv_bytes_per_request", "weights_bytes", "max_concurrency"):
        assert int(table[key]) == expected[key]


def test_export_json_is_the_cli_json():
    e = scenario(model="deepseek-ai/DeepSeek-V3", context=65536, gpu="h200-141gb", gpus=8)
    assert json.loads(export(e.scenario, e, "json")) == json.loads(json.dumps(to_json(e.scenario, e)))


def test_chart_series_match_the_engine():
    e = scenario(model="meta-llama/Llama-3.1-70B", batch=16, gpus=8, gpu="h100-sxm-80gb", memory_utilization="0.9")
    contexts = context_points(e.scenario)
    assert contexts[0] == 512 and contexts[-1] == 131072 and 8192 in contexts
    mem = memory_series(e.scenario, contexts)
    gqa = next(line for line in mem["lines"] if line["label"] == "GQA")
    for context, value in zip(contexts, gqa["bytes"]):
        assert value == scenario(model="meta-llama/Llama-3.1-70B", batch=16, gpus=8, context=context).result.kv_bytes_per_gpu
    conc = concurrency_series(e.scenario, contexts)
    bf16 = next(line for line in conc["lines"] if line["label"] == "bf16")
    assert bf16["requests"][contexts.index(8192)] == e.result.max_concurrency


def test_pins_round_trip_in_links_and_compare_marks_differences():
    first = encode({"model": "meta-llama/Llama-3.1-8B", "kv-dtype": "fp8"})
    second = encode({"model": "Qwen/Qwen3-32B"})
    fragment = encode({"model": "google/gemma-2-9b"}, pins=[first, second])
    assert decode(fragment) == ({"model": "google/gemma-2-9b"}, [])
    assert decode_pins(fragment) == ([first, second], [])
    too_many = encode({"model": "google/gemma-2-9b"}, pins=[first] * 4) + "&pin=" + first
    pins, ignored = decode_pins(too_many)
    assert len(pins) == 4 and ignored
    columns = [to_json(e.scenario, e) for e in (scenario(model="meta-llama/Llama-3.1-8B"),
                                                       scenario(model="meta-llama/Llama-3.1-8B", kv_dtype="fp8"))]
    rows = {row["key"]: row for row in compare_table(columns)}
    assert rows["kv_bytes_per_token"]["values"] == [131072, 65536] and rows["kv_bytes_per_token"]["differs"]
    assert not rows["context"]["differs"]


def test_utilization_is_passed_only_when_set():
    e = scenario(model="meta-llama/Llama-3.1-8B")
    for engine, flag in (("vllm", "--gpu-memory-utilization"), ("sglang", "--mem-fraction-static")):
        result = launch(e.scenario, engine)
        assert flag not in result.command and any(flag in note for note in result.notes)
    e = scenario(model="meta-llama/Llama-3.1-8B", memory_utilization="0.8")
    assert "--mem-fraction-static 0.8" in launch(e.scenario, "sglang").command


def test_context_past_the_model_limit_carries_the_override_it_needs():
    # vLLM refuses --max-model-len past max_position_embeddings (8,192 for Gemma 2) unless
    # VLLM_ALLOW_LONG_MAX_MODEL_LEN is set; SGLang likewise with its own variable.
    e = scenario(model="google/gemma-2-9b", context=32768)
    command = launch(e.scenario, "vllm")
    assert command.command.startswith("env VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve")
    assert any("max_position_embeddings (8,192)" in note and "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in note
               for note in command.notes)
    assert launch(e.scenario, "sglang").command.startswith("env SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 ")
    assert any("n_ctx_train" in note for note in launch(e.scenario, "llama.cpp").notes)
    within = scenario(model="google/gemma-2-9b", context=8192)
    assert not launch(within.scenario, "vllm").command.startswith("env")


def test_launch_never_throttles_below_what_fits():
    # Issue 11: the default one request passed as --max-num-seqs 1 throttled a server that holds 31.
    from kvcalc.inputs.form_fields import form_values
    e = evaluate(form_values({"model": "meta-llama/Llama-3.1-8B", "batch": "1", "context": "65536",
                              "gpu": "h100-sxm-80gb"}))
    fits = e.result.max_concurrency
    assert fits == 8
    for engine, flag in (("vllm", "--max-num-seqs"), ("sglang", "--max-running-requests"), ("llama.cpp", "-np")):
        command = launch(e.scenario, engine, e)
        assert f" {flag} {fits} " in command.command + " "
        assert any(f"{flag} {fits}: the requests of 65,536 tokens that fit" in note for note in command.notes)
    # An engine chosen: its own capacity (vLLM's printed concurrency, rounded down).
    chosen = evaluate(form_values({"model": "meta-llama/Llama-3.1-8B", "context": "65536", "gpu": "h100-sxm-80gb",
                                   "engine": "vllm"}))
    engine_fits = int(chosen.engine.max_concurrency)
    assert f"--max-num-seqs {engine_fits} " in launch(chosen.scenario, "vllm", chosen).command
    # A batch the user asked for is kept, and the note says how many would fit.
    asked = scenario(model="meta-llama/Llama-3.1-8B", context=65536, gpu="h100-sxm-80gb", batch=2)
    command = launch(asked.scenario, "vllm", asked)
    assert "--max-num-seqs 2 " in command.command
    assert any("your concurrent requests; 8 of 65,536 tokens fit" in note for note in command.notes)


def test_vllm_mla_fp8_e5m2_refused_and_block_256_allowed():
    e = scenario(model="deepseek-ai/DeepSeek-V3", kv_dtype="fp8_e5m2")
    assert launch(e.scenario, "vllm").command is None
    assert launch(scenario(model="deepseek-ai/DeepSeek-V3", kv_dtype="fp8").scenario, "vllm").command
    assert "--block-size 256" in launch(scenario(model="meta-llama/Llama-3.1-8B", block_size=256).scenario, "vllm").command


def test_cli_output_flags_that_conflict():
    assert cli("--model", "meta-llama/Llama-3.1-8B", "--json", "--format", "csv")[0] == 2
    assert cli("--model", "meta-llama/Llama-3.1-8B", "--launch", "vllm", "--format", "csv")[0] == 2


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=12), min_size=1, max_size=5))
def test_shell_quoting_matches_shlex(args):
    import shlex
    from kvcalc.command_line import shell_join
    assert shell_join(args) == shlex.join(args)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=20), st.text(max_size=20))
def test_csv_quoting_reads_back_with_the_csv_module(a, b):
    from kvcalc.reports.export import _csv
    rows = list(csv.reader(io.StringIO(f"{_csv(a)},{_csv(b)}\n", newline="")))
    assert rows == [[a, b]]


def test_the_sections_opened_ride_in_the_link_and_the_cli_reads_past_them():
    """Issue 39: the page's sections open are view state, `open=plan,time` after the inputs; the
    inputs decode as before, and the CLI answers the link as if it were not there."""
    from kvcalc.reports.link import decode_open
    fragment = encode({"model": "google/gemma-2-9b", "context": "8192"}, opened=["plan", "time"])
    assert fragment.endswith("&open=plan,time")
    assert decode(fragment) == ({"model": "google/gemma-2-9b", "context": "8192"}, [])
    assert decode_open(fragment) == (["plan", "time"], []) and decode_open("#model=x") == ([], [])
    # A second `open` is said, as any repeated key is; the key percent-encoded is the same key.
    assert decode_open(fragment + "&open=compare") == (["plan", "time"], [("open", "repeated; the first value was kept")])
    assert decode_open("#model=x&%6Fpen=plan") == (["plan"], [])
    plain = cli("--link", "http://127.0.0.1:8000/#" + encode({"model": "google/gemma-2-9b", "context": "8192"}),
                "--json")
    opened = cli("--link", "http://127.0.0.1:8000/#" + fragment, "--json")
    assert plain == opened and plain[0] == 0


def test_each_attention_design_says_why_it_fits_what_it_fits():
    """Issue 39, the seeds' Llama 3.1 70B on 8 GPUs: GQA's 8 KV heads split one a GPU, MQA's one
    head is copied to all 8, so both cost 40,960 B a token on a GPU (80 layers x 512 B in bf16) and
    fit as many requests; MLA's latent sits whole on each GPU and fits fewer. A precision that
    cannot store a design (TurboQuant's packed heads, an MLA latent) leaves its why empty, the row
    saying the refusal; DeepSeek-V3 gets the GQA row it would have."""
    from kvcalc.reports.compare import attention_variants
    e = scenario(model="meta-llama/Llama-3.1-70B", gpu="h200-141gb", gpus=8, engine="vllm", context=8192)
    rows = {row.label: row for row in attention_variants(e.scenario)}
    assert rows["GQA"].why == "40,960 B a token on the most loaded GPU (8 kv heads split over tp 8: 1 a GPU)"
    assert rows["MQA"].why.startswith("40,960 B a token") and "copied at tp 8" in rows["MQA"].why
    assert rows["GQA"].evaluation.capacity == rows["MQA"].evaluation.capacity > rows["MLA"].evaluation.capacity
    assert "each of the 8 GPUs holds it whole" in rows["MLA"].why
    packed = scenario(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", engine="vllm", kv_dtype="turboquant_k8v4")
    mla = next(row for row in attention_variants(packed.scenario) if row.label == "MLA")
    assert mla.why == "" and mla.refused
    v3 = scenario(model="deepseek-ai/DeepSeek-V3", gpu="h200-141gb", gpus=8, engine="vllm", kv_dtype="fp8")
    assert [row.label for row in attention_variants(v3.scenario)] == ["MHA", "GQA", "MQA", "MLA"]
