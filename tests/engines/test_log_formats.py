"""The start-up lines of every release the engines' modules name, read from public logs (issue 34,
items 2 and 3): the layout a log implies where no config line prints it, each spelling of a
release's version and memory summary, the KV cache's type as each prints it, and a paste of two
start-ups or of a llama.cpp split over GPUs read for what it is.

Every fixture is a public log (tests/fixtures/logs/SOURCES.md names its URL). Where a test takes
lines out of one (the config line, a worker's lines), it says which, and why: to show what the
lines left read alone."""

from fractions import Fraction

import pytest

from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log
from support import FIXTURES

LOGS = FIXTURES / "logs"


def lines(name: str) -> list[str]:
    return (LOGS / name).read_text(encoding="utf-8").rstrip("\n").split("\n")


def without(name: str, *dropped: str, edits: tuple = ()) -> str:
    """The log with every line holding one of `dropped` left out, and (old, new) `edits` made."""
    kept = [line for line in lines(name) if not any(d in line for d in dropped)]
    text = "\n".join(kept) + "\n"
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


def read(reading, option):
    return next(r for r in reading.read if r.option == option)


# --- 1. The layout a log implies ---------------------------------------------------------------

QWEN3_30B_TP2 = "vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log"


def test_tp_inferred_from_the_weights_one_gpu_loaded():
    # vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log with its non-default args line, the
    # engine line's "tensor_parallel_size=2, " and Worker_TP1's line taken out: nothing prints
    # the layout. Worker_TP0 loaded 28.4571 GiB; Qwen3-30B-A3B's bf16 weights (the preset its
    # path names, quantization=None) are 30,532,122,624 params x 2 B = 56.87 GiB: 1/2.00 of them,
    # so tp x pp = 2, said to be inferred.
    text = without(QWEN3_30B_TP2, "non-default args", "Worker_TP1", edits=(("tensor_parallel_size=2, ", ""),))
    reading = read_log(text)
    assert (reading.values["tp"], reading.values["gpus"], reading.values["model"]) == ("2", "2",
                                                                                       "Qwen/Qwen3-30B-A3B")
    assert read(reading, "tp").how.startswith("inferred: the 28.4571 GiB of weights one GPU loaded are 1/2.00 of "
                                               "Qwen/Qwen3-30B-A3B's 56.87 GiB")
    assert any(n.startswith("tp 2 inferred, not printed") for n in reading.notes)
    # With the layout read, the log's own figures come back: 910,464 tokens, 22.23x.
    e = evaluate(reading.values)
    assert e.ok, e.errors
    low, high = e.engine.kv_tokens_range
    assert low <= 910_464 <= high and f"{float(e.engine.max_concurrency):.2f}" == "22.23"


def test_a_quantized_model_never_infers_tp_from_the_weights():
    # The same lines, the model's path renamed to an FP8 re-release's: its weights are not the
    # preset's, so 28.4571 GiB says nothing of the layout; Worker_TP0 alone gives no bound. Its
    # KV figures do (startup_log.implied): 41.68 GiB holds 910,464 tokens, 22.23x at 40,960, of
    # Qwen3-30B-A3B's 48 layers x 4 KV heads x 128 x 2 x 2 B = 98,304 B a token at tp 1 (the
    # engine line printed kv_cache_dtype=auto) only when its 4 KV heads split over tp 2 (49,152 B).
    text = without(QWEN3_30B_TP2, "non-default args", "Worker_TP1",
                   edits=(("tensor_parallel_size=2, ", ""), ("quantization=None", "quantization=fp8")))
    reading = read_log(text)
    assert not read(reading, "tp").how.startswith("inferred")
    assert read(reading, "tp").how.startswith("implied: 41.68 GiB of KV memory (line 6) holds ")
    assert "910,464 tokens (line 7) and a concurrency of 22.23x (line 8) for Qwen/Qwen3-30B-A3B only at tp 2" \
        in read(reading, "tp").how
    assert (reading.values["tp"], reading.values["gpus"]) == ("2", "2")
    assert not any("tensor_parallel_size" in words for words in reading.not_read)
    assert not any(n.startswith("tp not read") for n in reading.notes)


def test_the_highest_worker_rank_is_a_lower_bound():
    # vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log with its non-default args line and the engine
    # line's "tensor_parallel_size=4, " taken out: Worker_TP0 to Worker_TP3 print, so tp >= 4.
    # (Qwen/Qwen2.5-72B-Instruct's weights agree where its id names a preset: 33.98 GiB is 1/3.98.)
    text = without("vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log", "non-default args",
                   edits=(("tensor_parallel_size=4, ", ""),))
    reading = read_log(text)
    assert (reading.values["tp"], reading.values["gpus"]) == ("4", "4")
    how = read(reading, "tp").how
    assert how == "at least: the highest worker rank printed is TP3" or how.startswith("inferred: ")


def test_vllm_worker_rank_names_of_the_v1_engine_of_0_8_to_0_10():
    # vllm-mistral-small-3.1-24b-tp2-8k.log prints no tensor_parallel_size; its workers are
    # "(VllmWorker rank=1 pid=51615)": a rank of the tp x pp world, so tp >= 2 (its thread: tp 2).
    reading = read_log((LOGS / "vllm-mistral-small-3.1-24b-tp2-8k.log").read_text(encoding="utf-8"))
    assert (reading.values["tp"], reading.values["gpus"]) == ("2", "2")
    assert read(reading, "tp").how == "at least: the highest worker rank printed is rank1"


def test_the_non_default_args_leave_out_a_size_that_is_its_default():
    # vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log's args name tensor_parallel_size 2 but no
    # pipeline or data parallel size: both are 1, the default, read from that line.
    reading = read_log((LOGS / "vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log").read_text(encoding="utf-8"))
    assert (reading.values["tp"], reading.values["pp"], reading.values["dp"]) == ("2", "1", "1")


def test_an_unknown_layout_is_said_and_no_gpu_count_is_made_up():
    # vllm-qwen3-8b-2xt4-tp2-util085-8k-eager-llm-v0.22.0.log (a Kaggle notebook's path, no
    # preset) with its args line, the engine lines' "tensor_parallel_size=2, " and Worker_TP1's
    # lines taken out: neither a worker nor the weights say the layout. It stays unread and the
    # reading asks for it; before, one GPU was taken from the version line alone.
    text = without("vllm-qwen3-8b-2xt4-tp2-util085-8k-eager-llm-v0.22.0.log", "non-default args", "Worker_TP1",
                   edits=(("tensor_parallel_size=2, ", ""),))
    reading = read_log(text)
    assert "tp" not in reading.values and "gpus" not in reading.values
    assert "tensor_parallel_size (the engine's config line)" in reading.not_read


def test_a_worker_rank_past_the_printed_tp_is_said():
    # vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log's engine line says tensor_parallel_size=2;
    # a Worker_TP3 line pasted in (Worker_TP1's, renamed) cannot be of that start-up.
    text = without(QWEN3_30B_TP2, edits=(("Worker_TP1 pid", "Worker_TP3 pid"),))
    reading = read_log(text)
    assert reading.values["tp"] == "2"
    assert any("names TP rank 3, more than tp 2 allows" in n for n in reading.notes)


# --- 2. Each release's spelling of its lines ----------------------------------------------------

@pytest.mark.parametrize("name,line_number,version,how", [
    # 0.15 and later: the ASCII banner, " ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.19.0".
    ("vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log", 1, "0.19.0", "the banner's version"),
    ("vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log", 1, "0.27.1", "the banner's version"),
    # "vLLM API server version 0.10.1", an NVIDIA build's "0.13.0+faa43dbf.nv26.01".
    ("vllm-gpt-oss-120b-h100-default-negative-kv.log", 1, "0.10.1", ""),
    ("vllm-gpt-oss-20b-dgx-spark-util025-8k-v0.13.0-nv26.01.log", 2, "0.13.0+faa43dbf.nv26.01", ""),
])
def test_each_spelling_of_vllms_version(name, line_number, version, how):
    reading = read_log((LOGS / name).read_text(encoding="utf-8"))
    found = read(reading, "engine-version")
    assert (found.text, found.line_number, found.how) == (version, line_number, how)


def test_the_banner_alone_gives_the_release():
    # vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log with its engine line ("Initializing a V1 LLM
    # engine (v0.19.0)") taken out: the banner still says 0.19.0, and 0.19's rules size it.
    reading = read_log(without("vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log", "Initializing a V1 LLM engine"))
    assert reading.values["engine-version"] == "0.19.0"


@pytest.mark.parametrize("line,version,variant", [
    # V0 engines before 0.8: "Initializing an LLM engine (v0.6.4.post1) with config:".
    ("INFO 12-06 10:51:28 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) with config: "
     "model='meta-llama/Llama-3.1-8B', tensor_parallel_size=1, pipeline_parallel_size=1, quantization=None, "
     "kv_cache_dtype=auto, device_config=cuda", "0.6.4.post1", "v0"),
    # 0.8-0.10 with VLLM_USE_V1=0 (github.com/vllm-project/vllm/issues/14452): "a V0 LLM engine".
    ("INFO 04-23 14:42:34 [llm_engine.py:243] Initializing a V0 LLM engine (v0.8.5.dev169+gce17db808.d20250423) "
     "with config: model='/models/QwQ-32B-unsloth-bnb-4bit', speculative_config=None, tensor_parallel_size=1, "
     "pipeline_parallel_size=2, disable_custom_all_reduce=False, quantization=bitsandbytes, enforce_eager=False, "
     "kv_cache_dtype=auto,  device_config=cuda", "0.8.5.dev169+gce17db808.d20250423", "v0"),
])
def test_each_spelling_of_the_engine_line(line, version, variant):
    reading = read_log(line + "\n")
    assert reading.values["engine-version"] == version
    assert reading.printed["engine_variant"].value == variant
    if "pipeline_parallel_size=2" in line:
        assert (reading.values["tp"], reading.values["pp"], reading.values["gpus"]) == ("1", "2", "2")


def test_the_one_line_memory_summary_for_weight_and_non_torch():
    # 0.10-0.11 (vllm-llava-v1.6-mistral-7b-h100-pcie-llm-4k-v0.10.2.log): "Actual usage is 14.08
    # GiB for weight, 1.97 GiB for peak activation, 0.07 GiB for non-torch memory, and 0.67 GiB for
    # CUDAGraph memory. ... Current kv cache memory in use is 59212694937 bytes."
    reading = read_log((LOGS / "vllm-llava-v1.6-mistral-7b-h100-pcie-llm-4k-v0.10.2.log").read_text(encoding="utf-8"))
    values = reading.values
    assert [values[k] for k in ("gpu-memory-gib", "memory-utilization", "loaded-weights-gib", "activation-gib",
                                "non-torch-gib", "cudagraph-gib")] == ["79.19", "0.9", "14.08", "1.97", "0.07", "0.67"]
    # The bytes replace the rounded "Available KV cache memory: 55.15 GiB": 59,212,694,937 B.
    assert reading.printed["kv_memory_gib"].value == Fraction(59_212_694_937, 1 << 30)
    assert read(reading, "kv-memory-gib").how == "kv cache memory in use, bytes in GiB"


def test_the_one_line_memory_summary_for_consumed_memory():
    # 0.12 and later (vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log): "Actual usage is ... GiB for
    # consumed memory (weights + non-torch), 2.32 GiB for peak activation, and 1.01 GiB for
    # CUDAGraph memory": the weights come from "Model loading took 25.69 GiB".
    reading = read_log((LOGS / "vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log").read_text(encoding="utf-8"))
    values = reading.values
    assert [values[k] for k in ("gpu-memory-gib", "memory-utilization", "loaded-weights-gib", "activation-gib",
                                "cudagraph-gib", "kv-memory-gib")] == ["79.25", "0.92", "25.69", "2.32", "1.01",
                                                                       "44.73"]
    assert "non-torch-gib" not in values           # folded into the consumed memory: not printed alone


@pytest.mark.parametrize("printed,taken", [("fp8", "fp8"), ("fp8_e4m3", "fp8"), ("fp8_e5m2", "fp8_e5m2")])
def test_the_fp8_kv_cache_in_the_engine_line(printed, taken):
    # vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log's engine line with its
    # "kv_cache_dtype=auto" as a run with --kv-cache-dtype PRINTED prints it.
    text = without(QWEN3_30B_TP2, edits=(("kv_cache_dtype=auto", f"kv_cache_dtype={printed}"),))
    reading = read_log(text)
    assert reading.values["kv-dtype"] == taken and read(reading, "kv-dtype").line_number == 5


def test_the_fp8_kv_cache_in_the_non_default_args():
    # vllm-qwen3.6-35b-a3b-nvfp4-5090-fp8kv.log: "'kv_cache_dtype': 'fp8'".
    reading = read_log((LOGS / "vllm-qwen3.6-35b-a3b-nvfp4-5090-fp8kv.log").read_text(encoding="utf-8"))
    assert reading.values["kv-dtype"] == "fp8"


def test_llamacpps_older_cache_line_and_its_q8_0_types():
    # llamacpp-qwen3-14b-q8kv-3090-32k-fa-b5505.log (build 5505): "llama_kv_cache_unified: size =
    # 2720.00 MiB ( 32768 cells,  40 layers,  1 seqs), K (q8_0): 1360.00 MiB, V (q8_0): 1360.00 MiB".
    reading = read_log((LOGS / "llamacpp-qwen3-14b-q8kv-3090-32k-fa-b5505.log").read_text(encoding="utf-8"))
    printed = reading.printed
    assert (printed["kv_tokens"].value, printed["kv_cache_mib"].value, printed["kv_layers"].value) == (32768, 2720, 40)
    assert reading.values["kv-dtype"] == "q8_0" and "kv-dtype-v" not in reading.values
    # Its qwen3 metadata is the shape: 32768 cells x 40 layers x (K + V) 1024 wide x 34/32 B = 2720 MiB.
    e = evaluate(dict(reading.values, gpu="rtx-3090-24gb"))
    assert e.ok, e.errors
    assert e.engine.kv_bytes_per_request == 2720 << 20


@pytest.mark.parametrize("name,line_number,total", [
    # "llama_new_context_with_model: KV self size  = 5120.00 MiB, K (f16): ..." (b2450).
    ("llamacpp-command-r-35b-class-4070ti-3090ti-4k-b2450.log", 17, 5120),
    # "llama_kv_cache_unified: KV self size  = 1280.00 MiB, K (f16): ..." (Ollama's vendored copy).
    ("llamacpp-llama3-70b-q3km-ollama-4k-2gpu.log", 17, 1280),
])
def test_llamacpps_kv_self_size_lines(name, line_number, total):
    reading = read_log((LOGS / name).read_text(encoding="utf-8"))
    figure = reading.printed["kv_cache_mib"]
    assert (figure.value, figure.line_number) == (total, line_number)
    assert reading.values["kv-dtype"] == "fp16"


# --- 3. Two start-ups, and a llama.cpp split over GPUs ------------------------------------------

def test_a_log_pasted_twice_is_two_start_ups():
    # vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log twice: the second banner (line 26) begins
    # another start-up after the first allocated its KV cache.
    text = (LOGS / "vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log").read_text(encoding="utf-8")
    assert len(lines("vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log")) == 25
    with pytest.raises(InputError) as e:
        read_log(text + text)
    assert e.value.field == "log" and "more than one start-up: lines 1 and 26" in e.value.message


def test_a_second_args_line_begins_another_start_up():
    # Its non-default args line (line 2) and, after the KV cache lines, the same line again.
    name = "vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log"
    text = "\n".join(lines(name)[1:] + lines(name)[1:2]) + "\n"
    with pytest.raises(InputError, match="more than one start-up: lines 1 and 25"):
        read_log(text)


def test_a_notebook_printing_each_line_twice_is_one_start_up():
    # vllm-qwen3-8b-2xt4-tp2-util085-8k-eager-llm-v0.22.0.log: Kaggle shows stdout and stderr, each
    # line with its own elapsed-time prefix ("295.8s 291", "296.0s 294"), the engine line twice
    # before any KV cache: one start-up.
    reading = read_log((LOGS / "vllm-qwen3-8b-2xt4-tp2-util085-8k-eager-llm-v0.22.0.log").read_text(encoding="utf-8"))
    assert (reading.values["engine-version"], reading.values["tp"]) == ("0.22.0", "2")


def test_a_llamacpp_log_over_three_gpus_is_its_layer_split_not_tensor_parallel():
    # llamacpp-gemma4-e4b-iswa-131k-3gpu.log: KV buffers on CUDA0, CUDA1 and CUDA2. llama.cpp has
    # no tensor parallelism (--split-mode layer): the three GPUs are stages of whole layers, so
    # vLLM's "tp must divide the attention heads" (3 does not divide 8) never applies.
    reading = read_log((LOGS / "llamacpp-gemma4-e4b-iswa-131k-3gpu.log").read_text(encoding="utf-8"))
    assert reading.values["gpus"] == "3" and "tp" not in reading.values
    e = evaluate(dict(reading.values, model="google/gemma-3-4b-it", gpu="rtx-4090-24gb"))
    assert e.ok, e.errors
    dep = e.scenario.deployment
    assert (dep.tp, dep.pp, dep.gpus) == (1, 3, 3)
    assert any("splits the layers over the 3 GPUs" in n for n in e.engine.notes)
    # The same three GPUs under vLLM are tensor parallel, and refused as vLLM refuses them.
    refused = evaluate({"model": "google/gemma-3-4b-it", "gpus": "3", "engine": "vllm", "gpu": "rtx-4090-24gb"})
    assert [err.field for err in refused.errors] == ["tp"]


def test_sglang_rank_prefixes_with_and_without_the_time():
    # sglang-qwen3-omni-30b-a3b-tp4-pool.log: "[2025-... TP3] KV Cache is allocated. ..." from the
    # ranks TP0 to TP3 and no command: tp 4. Builds that print the rank alone ("[TP3] Load weight
    # begin", as SGLang's Ascend CI logs do) say the same: the times taken out, tp 4 still.
    import re
    name = "sglang-qwen3-omni-30b-a3b-tp4-pool.log"
    for text in ("\n".join(lines(name)) + "\n",
                 "\n".join(re.sub(r"^\[[\d\-]+ [\d:.]+ ", "[", line) for line in lines(name)) + "\n"):
        reading = read_log(text)
        assert (reading.values["tp"], reading.values["gpus"]) == ("4", "4")
        assert read(reading, "tp").how == "the ranks TP0 to TP3 it prints"


def test_vllm_worker_tp_names_of_0_10_in_a_log_pasted_as_html():
    # vllm-tp2-vllmworker-names-html-v0.10.log (ragflow#9856): each prefix wrapped in HTML,
    # "<b>(VllmWorker TP1 pid=19251)</b>", and no tensor_parallel_size: tp >= 2 from the ranks.
    reading = read_log((LOGS / "vllm-tp2-vllmworker-names-html-v0.10.log").read_text(encoding="utf-8"))
    assert (reading.values["tp"], reading.values["gpus"], reading.values["kv-memory-gib"]) == ("2", "2", "26.13")
    assert read(reading, "tp").how == "at least: the highest worker rank printed is TP1"
    assert reading.printed["kv_tokens"].value == 570_848


def test_a_source_builds_engine_line_is_read_and_its_version_said():
    # github.com/livepeer/ai-runner/pull/230: "Initializing an LLM engine (vdev) with config: ...
    # tensor_parallel_size=2, pipeline_parallel_size=1, ..." - a build from source prints "dev".
    line = ("runner-llm-1  | INFO 12-20 00:49:35 llm_engine.py:237] Initializing an LLM engine (vdev) with config: "
            "model='/models/models--meta-llama--Meta-Llama-3.1-8B-Instruct/snapshots/"
            "0e9e39f249a16976918f6564b8830bc894c89659', speculative_config=None, dtype=torch.bfloat16, "
            "max_seq_len=8192, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=2, "
            "pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
            "kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda\n")
    reading = read_log(line)
    assert (reading.values["tp"], reading.values["pp"], reading.values["gpus"], reading.values["context"]) == (
        "2", "1", "2", "8192")
    assert "engine-version" not in reading.values
    assert any("engine-version 'dev' not taken" in note for note in reading.notes)


# --- 4. A real fp8 KV cache in vLLM's config line -----------------------------------------------

QWEN25_14B_FP8KV = "vllm-qwen2.5-14b-fp8dyn-fp8kv-dgx-spark-util04-32k-v0.13.0-nv26.01.log"


def test_a_real_fp8_kv_cache_start_up_is_read_whole():
    # vllm-qwen2.5-14b-fp8dyn-fp8kv-dgx-spark-util04-32k-v0.13.0-nv26.01.log: NVIDIA's 26.01 container
    # of vLLM 0.13.0 on a DGX Spark, serving neuralmagic/Qwen2.5-14B-Instruct-FP8-dynamic with
    # "'gpu_memory_utilization': 0.4, 'kv_cache_dtype': 'fp8'" (line 25) and the engine line's
    # "kv_cache_dtype=fp8" (line 48).
    from kvcalc.engines import releases
    reading = read_log((LOGS / QWEN25_14B_FP8KV).read_text(encoding="utf-8"))
    values = reading.values
    assert [values[k] for k in ("kv-dtype", "context", "memory-utilization", "tp", "gpus", "kv-memory-gib")] == [
        "fp8", "32768", "0.4", "1", "1", "30.46"]
    assert read(reading, "kv-dtype").line_number == 25
    # An FP8-dynamic re-release has Qwen2.5-14B's shape, not its bf16 weights: sized as that preset,
    # the weights left to the log's 15.2227 GiB.
    assert values["model"] == "neuralmagic/Qwen2.5-14B-Instruct-FP8-dynamic"
    assert read(reading, "model").how.startswith("the preset of identical shape, Qwen/Qwen2.5-14B; its weights are "
                                                 "FP8-DYNAMIC's, not the preset's")
    assert values["loaded-weights-gib"] == "15.2227"
    # "vLLM API server version 0.13.0+faa43dbf.nv26.01" (line 24) is kept as printed; its local part
    # (+faa43dbf.nv26.01, NVIDIA's build) leaves the release 0.13.0, whose rules size it.
    version = read(reading, "engine-version")
    assert (version.text, version.line_number) == ("0.13.0+faa43dbf.nv26.01", 24)
    assert releases.pep440(version.text).key == (0, 13, 0, 0, 0)
    printed = reading.printed
    assert (printed["kv_tokens"].value, printed["max_concurrency"].value) == (332_672, Fraction("10.15"))


def test_the_engine_line_alone_says_the_kv_cache_is_fp8():
    # The same log with its non-default args line taken out: "kv_cache_dtype=fp8" in the engine line
    # (now line 47) is what says it. The same line with "kv_cache_dtype=auto" says nothing of fp8.
    text = without(QWEN25_14B_FP8KV, "non-default args")
    reading = read_log(text)
    assert (reading.values["kv-dtype"], read(reading, "kv-dtype").line_number) == ("fp8", 47)
    assert "kv_cache_dtype=fp8" in text.split("\n")[46]
    auto = read_log(text.replace("kv_cache_dtype=fp8", "kv_cache_dtype=auto"))
    assert auto.values.get("kv-dtype") != "fp8"


def test_the_fp8_kv_cache_log_reproduces_its_own_figures():
    """kvcalc --from-log on vllm-qwen2.5-14b-fp8dyn-fp8kv-dgx-spark-util04-32k-v0.13.0-nv26.01.log.

    Qwen2.5-14B: 48 layers, 8 KV heads, head_dim 128; an fp8 KV element is 1 byte:
      K + V a layer = 2 x 8 x 128 x 1 B = 2,048 B a token; x 48 layers = 98,304 B a token;
      a block of 16 tokens = 1,572,864 B (1.5 MiB).
    The log's "Available KV cache memory: 30.46 GiB" is rounded to 0.01 GiB: the memory lies in
    [30.455, 30.465) GiB = [31,185.92, 31,196.16) MiB, so floor(MiB / 1.5) is 20,790 to 20,797 blocks,
    332,640 to 332,752 tokens. The log's 332,672 tokens are 20,792 blocks (31,188 MiB = 30.457 GiB:
    inside). 30.46 GiB itself = 32,706,175,959 B -> 20,794 blocks = 332,704 tokens.
    A request of 32,768 tokens takes cdiv(32768, 16) = 2,048 blocks: 20,792 / 2,048 = 10.152 -> "10.15x";
    every count in the range gives 10.15 (20,790 / 2,048 = 10.151, 20,797 / 2,048 = 10.155)."""
    import io
    import json
    from kvcalc.cli import run
    out, err = io.StringIO(), io.StringIO()
    code = run(["--from-log", str(LOGS / QWEN25_14B_FP8KV), "--json"], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    data = json.loads(out.getvalue())
    assert (data["kv_dtype"], data["kv_bytes_per_token"], data["engine_block_size"]) == ("fp8", 98_304, 16)
    assert data["engine_kv_budget_bytes_per_gpu"] == 32_706_175_959            # 30.46 GiB
    assert (data["engine_kv_tokens"], data["engine_kv_tokens_range"]) == (332_704, [332_640, 332_752])
    low, high = data["engine_kv_tokens_range"]
    assert low <= 332_672 <= high
    assert {f"{blocks / 2048:.2f}" for blocks in range(low // 16, high // 16 + 1)} == {"10.15"}
    assert f"{data['engine_max_concurrency']:.2f}" == "10.15"
    said = err.getvalue()
    assert "# KV cache tokens: the log printed 332,672 (line 71); sized here 332,704" in said
    assert "# Maximum concurrency: the log printed 10.15x (line 72); sized here 10.15x" in said
    assert "Not as the log printed" not in said


# --- vLLM 0.6.2-0.6.4's one-line memory profile (issue 36) ------------------------------------

def test_vllm_0_6_4s_memory_profiling_results_line_gives_its_kv_memory_and_the_concurrency_follows():
    """vllm-llama3.1-8b-rtx3090-20k-profile-v0.6.4.log (SOURCES.md) prints vLLM 0.6.4's
    "Memory profiling results: total_gpu_memory=23.58GiB ... non_torch_memory=0.35GiB
    kv_cache_size=3.81GiB gpu_memory_utilization=0.90" (vllm/worker/worker.py). Read, its KV memory
    gives the concurrency the log printed: 1.56x."""
    reading = read_log((LOGS / "vllm-llama3.1-8b-rtx3090-20k-profile-v0.6.4.log").read_text(encoding="utf-8"))
    assert {r.option: r.text for r in reading.read if r.line_number == 5} == {
        "gpu-memory-gib": "23.58", "memory-utilization": "0.90", "non-torch-gib": "0.35", "kv-memory-gib": "3.81"}
    e = evaluate(reading.values | {"model": "meta-llama/Llama-3.1-8B"})
    assert e.ok, e.errors
    assert f"{float(e.engine.max_concurrency):.2f}" == "1.56"
    assert e.engine.kv_budget_bytes_per_gpu == int(Fraction("3.81") * (1 << 30))
