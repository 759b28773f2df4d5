"""A pasted vLLM start-up log becomes the inputs it implies, and computing from them gives the
log's own figures back (issue 24). Every log is a real one from a public thread
(tests/fixtures/logs/SOURCES.md names each URL); only what a log does not print is added, and the
test says where it comes from."""

import io
import json
from fractions import Fraction

import pytest

from kvcalc.cli import run
from kvcalc.engines.result import BudgetSource
from kvcalc.engines.vllm import engine as vllm
from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import LogReader, comparison, read_log
from support import FIXTURES

LOGS = FIXTURES / "logs"


def text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


# Log, what it does not print that the thread states (SOURCES.md), and what it printed.
REPRODUCED = (
    ("vllm-llama3.1-8b-l4-util092-32k-seqs128-v0.11.0.log", {}, 38_944, "1.22"),
    ("vllm-phi-3-mini-rtx3090-wsl-util085-4k-v0.19.1.log", {}, 35_648, "8.67"),
    ("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log", {}, 910_464, "22.23"),
    # A Kaggle path (qwen-3/transformers/8b/1) names Qwen3 8B.
    ("vllm-qwen3-8b-2xt4-tp2-util085-8k-eager-llm-v0.22.0.log", {"model": "Qwen/Qwen3-8B"}, 59_856, "7.31"),
    ("vllm-qwen3-14b-a100-40g-32k-lmcache.log", {"model": "Qwen/Qwen3-14B"}, 42_656, "1.30"),
    # Mistral Small 3.1's text model has Mistral Small 3's shapes; the thread runs tp 2.
    ("vllm-mistral-small-3.1-24b-tp2-8k.log", {"model": "mistralai/Mistral-Small-24B-Base-2501", "gpus": "2",
                                               "tp": "2"}, 212_352, "25.92"),
    # Qwen3-Coder-30B-A3B has Qwen3-30B-A3B's attention (48 layers, 4 kv heads of 128); tp 8.
    ("vllm-qwen3-coder-30b-a3b-tp8-24gb-ampere.log", {"model": "Qwen/Qwen3-30B-A3B", "gpus": "8", "tp": "8"},
     534_064, "2.04"),
    ("vllm-qwen2.5-32b-4x3090-tp4-util088-32k-eager-seqs1-v0.18.1.log", {"model": "Qwen/Qwen2.5-32B"}, 85_760, "2.62"),
    ("vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log", {"model": "Qwen/Qwen2.5-72B"}, 67_024, "8.18"),
)


@pytest.mark.parametrize("name,added,tokens,concurrency", REPRODUCED, ids=[r[0][:48] for r in REPRODUCED])
def test_a_log_read_back_gives_its_own_figures(name, added, tokens, concurrency):
    reading = read_log(text(name))
    assert reading.engine == "vllm" and reading.printed["kv_tokens"].value == tokens
    e = evaluate({**reading.values, **added})
    assert e.ok, e.errors
    engine = e.engine
    low, high = engine.kv_tokens_range
    assert low <= tokens <= high                      # within what the log's 0.01 GiB allows
    assert f"{float(engine.max_concurrency):.2f}" == concurrency
    assert engine.budget_source is BudgetSource.GIVEN_KV_MEMORY


def test_what_the_qwen3_30b_log_says_it_reads_line_by_line():
    # vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log (vLLM 0.12.0, 2 x H100, max_model_len
    # 40960, max_num_seqs 64): its local path ends in Qwen/Qwen3-30B-A3B, the preset.
    reading = read_log(text("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log"))
    values = reading.values
    assert {k: values[k] for k in ("engine", "engine-version", "model", "tp", "gpus", "context", "batch",
                                   "prefill-chunk", "gpu", "kv-memory-gib", "loaded-weights-gib")} == {
        "engine": "vllm", "engine-version": "0.12.0", "model": "Qwen/Qwen3-30B-A3B", "tp": "2", "gpus": "2",
        "context": "40960", "batch": "64", "prefill-chunk": "8192", "gpu": "h100-sxm-80gb",
        "kv-memory-gib": "41.68", "loaded-weights-gib": "28.4571"}
    by_option = {r.option: r for r in reading.read}
    assert by_option["kv-memory-gib"].line_number == 8 and "Available KV cache memory" in by_option["kv-memory-gib"].line
    assert by_option["gpu"].how == "the preset NVIDIA_H100_80GB_HBM3 is"
    # It prints no memory profile: the GPU's total and the utilization are said to be missing.
    assert any("utilization" in words for words in reading.not_read)
    # The measured deployment travels with the inputs, never the log.
    assert values["measured-with"] == ("model:Qwen/Qwen3-30B-A3B,context:40960,batch:64,gpus:2,tp:2,pp:1,dp:1,"
                                       "gpu:h100-sxm-80gb,engine:vllm,engine-version:0.12.0,prefill-chunk:8192,"
                                       "enforce-eager:off")


def test_fp8_kv_what_if_doubles_the_tokens_at_the_same_kv_memory():
    # The done-when: the log's figures, then fp8 KV. KV memory stays 41.68 GiB (the dtype does
    # not move what vLLM measured); Qwen3-30B-A3B's 48 layers x 4 heads x 128 x 2 take 1 B each
    # instead of 2, so twice the blocks: 1,821,024 tokens (within the log's rounding, as above).
    values = read_log(text("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log")).values
    fp8 = evaluate({**values, "kv-dtype": "fp8"})
    engine = fp8.engine
    assert engine.kv_budget_bytes_per_gpu == int(Fraction("41.68") * (1 << 30))
    assert engine.budget_source is BudgetSource.GIVEN_KV_MEMORY
    bf16 = evaluate(values).engine
    assert engine.kv_tokens == 1_821_024 and abs(engine.kv_tokens - 2 * bf16.kv_tokens) <= 16 * 2
    assert f"{float(engine.max_concurrency):.2f}" == "44.46"
    assert any("nothing changed here moves it" in n for n in engine.notes)


def test_a_tp_what_if_re_estimates_only_what_moves():
    # tp 2 -> 4 on the same log: the weights per GPU halve exactly (28.46 GiB measured - 14.22
    # GiB, our split's move), and the overhead moves by the estimate's change between the two
    # layouts; the band is that move, either way.
    values = read_log(text("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log")).values
    logged = evaluate(values)
    e = evaluate({**values, "tp": "4", "gpus": "4"})
    engine, ideal = e.engine, e.result
    assert engine.budget_source is BudgetSource.MEASURED
    moved_weights = logged.result.weights_bytes_per_gpu - ideal.weights_bytes_per_gpu
    assert engine.weights_bytes_per_gpu == int(Fraction("28.4571") * (1 << 30)) - moved_weights
    usable = vllm.usable_memory(e.scenario, engine.prefill_chunk, [], None)
    assert engine.kv_budget_bytes_per_gpu == usable - engine.weights_bytes_per_gpu - engine.overhead_bytes_per_gpu
    low, high = engine.band[1].overhead_bytes_per_gpu, engine.band[0].overhead_bytes_per_gpu
    assert low < engine.overhead_bytes_per_gpu < high
    assert any(n.startswith("Re-estimated from the log") and "the weights per GPU -" in n for n in engine.notes)


def test_a_log_of_the_full_memory_profile_reads_every_part():
    # vllm-llava-v1.6-mistral-7b-h100-pcie-llm-4k-v0.10.2.log prints V1's whole profile line:
    # "Free memory on device (78.66/79.19 GiB) ... (0.9, 71.27 GiB). Actual usage is 14.08 GiB for
    # weight, 1.97 GiB for peak activation, 0.07 GiB for non-torch memory, and 0.67 GiB for CUDAGraph".
    # Its last sentence, "Current kv cache memory in use is 59212694937 bytes", is the KV memory
    # "Available KV cache memory: 55.15 GiB" rounded: 59,212,694,937 / 2^30 = 55.146119 GiB.
    values = read_log(text("vllm-llava-v1.6-mistral-7b-h100-pcie-llm-4k-v0.10.2.log")).values
    assert {k: values[k] for k in ("gpu-memory-gib", "memory-utilization", "loaded-weights-gib", "activation-gib",
                                   "non-torch-gib", "cudagraph-gib", "kv-memory-gib", "vllm-engine")} == {
        "gpu-memory-gib": "79.19", "memory-utilization": "0.9", "loaded-weights-gib": "14.08",
        "activation-gib": "1.97", "non-torch-gib": "0.07", "cudagraph-gib": "0.67", "kv-memory-gib": "55.146119",
        "vllm-engine": "v1"}


def test_v0_profile_lines_are_read_too():
    # vllm-qwen2-vl-7b-80gb-util080-10k-v0-v0.7.3.log: "total_gpu_memory (79.32GiB) x
    # gpu_memory_utilization (0.80) = ..." and "model weights take 15.53GiB; non_torch_memory takes
    # 0.09GiB; PyTorch activation peak memory takes 1.72GiB; the rest ... KV Cache is 46.11GiB."
    values = read_log(text("vllm-qwen2-vl-7b-80gb-util080-10k-v0-v0.7.3.log")).values
    assert {k: values[k] for k in ("gpu-memory-gib", "memory-utilization", "loaded-weights-gib", "non-torch-gib",
                                   "activation-gib", "kv-memory-gib")} == {
        "gpu-memory-gib": "79.32", "memory-utilization": "0.80", "loaded-weights-gib": "15.53",
        "non-torch-gib": "0.09", "activation-gib": "1.72", "kv-memory-gib": "46.11"}


def test_the_calibration_rows_inputs_are_what_the_reader_reads():
    """The curated inputs of every vLLM log in overhead-vllm-2026.json (each read by hand from its
    thread) are what the reader takes from the same log: release, layout, context, requests."""
    rows = json.loads((LOGS / "overhead-vllm-2026.json").read_text(encoding="utf-8"))
    checked = 0
    for row in rows:
        values = read_log(text(row["file"])).values
        assert values["engine-version"] == row["version"], row["file"]
        assert values.get("tp", "1") == str(row["tp"]) and values.get("pp", "1") == str(row["pp"]), row["file"]
        assert values["context"] == str(row["max_model_len"]), row["file"]
        if row.get("max_num_seqs") and "batch" in values:
            assert values["batch"] == str(row["max_num_seqs"]), row["file"]
        if row.get("max_num_batched_tokens"):
            assert values["prefill-chunk"] == str(row["max_num_batched_tokens"]), row["file"]
        assert values.get("enforce-eager", "off") == ("on" if row["enforce_eager"] else "off"), row["file"]
        if row["printed"].get("kv_gib") is not None:
            assert Fraction(values["kv-memory-gib"]) == Fraction(str(row["printed"]["kv_gib"])), row["file"]
        checked += 1
    assert checked == len(rows) >= 8


def test_interleaved_coloured_truncated_and_reordered_logs_still_read():
    lines = text("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log").splitlines()
    want = read_log("\n".join(lines)).values
    # Reordered (workers print out of order), every line coloured, CRLF endings.
    shuffled = "\r\n".join(f"\x1b[1;36m{line}\x1b[0m" for line in reversed(lines))
    assert read_log(shuffled).values == want
    # Interleaved with another worker's lines and cut mid-line at the end.
    noisy = []
    for i, line in enumerate(lines):
        noisy += [f"(VllmWorker TP1 pid={4000 + i}) INFO 12-20 18:32:{i:02d} [custom_all_reduce.py:1] ok", line]
    cut = "\n".join(noisy)
    assert read_log(cut[:-7]).values["kv-memory-gib"] == "41.68"
    # Fed one character at a time, as slices may fall anywhere.
    reader = LogReader()
    for char in "\n".join(lines):
        reader.feed(char)
    assert reader.finish().values == want


@pytest.mark.parametrize("bad,words", [
    ("", "is empty"),
    ("hello world\nthis is not a log\n", "not a start-up log"),
    ("INFO Available KV cache memory: 41.68 GiB\nKV Cache is allocated. #tokens: 404890, K size: 27.80 GB, "
     "V size: 27.80 GB\n", "more than one engine"),
    ("vLLM API server version 0.12.0\nUsing max model len 4096\nUsing max model len 4096\n"
     "Available KV cache memory: 1.00 GiB\nGPU KV cache size: 10 tokens\nvLLM API server version 0.11.0\n",
     "more than one start-up"),
    ("non-default args: {'tensor_parallel_size': 2}\nnon-default args: {'tensor_parallel_size': 4}\n"
     "Using max model len 4096\n", "more than one start-up"),
])
def test_bad_logs_are_one_line_naming_the_log(bad, words):
    with pytest.raises(InputError) as e:
        read_log(bad)
    assert e.value.field == "log" and words in e.value.message and "\n" not in e.value.message


def test_a_log_of_another_engine_than_the_one_chosen_is_refused():
    with pytest.raises(InputError) as e:
        read_log(text("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log"), engine="sglang")
    assert "vLLM's, not SGLang's" in e.value.message


def test_hostile_numbers_are_said_and_never_taken():
    log = ("vLLM API server version 0.12.0\n"
           "Using max model len 99999999999999999999999999999999\n"
           "Available KV cache memory: nan GiB\n"
           "Available KV cache memory: 1e999 GiB\n"
           "Model loading took 123456789012345678901234567890.5 GiB memory\n"
           "non-default args: {'max_model_len': 'NaN', 'gpu_memory_utilization': 7.5}\n")
    reading = read_log(log)
    assert "context" not in reading.values and "memory-utilization" not in reading.values
    assert "kv-memory-gib" not in reading.values and "loaded-weights-gib" not in reading.values
    assert any("context" in n and "not taken" in n for n in reading.notes)
    assert any("memory-utilization" in n for n in reading.notes)


def test_a_ten_megabyte_log_reads_and_a_huge_one_is_refused():
    head = text("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log")
    chatter = "(APIServer pid=1) INFO 12-20 18:40:00 [loggers.py:1] Avg prompt throughput: 0.0 tokens/s\n"
    big = head + chatter * (10_000_000 // len(chatter))
    assert len(big) > 10_000_000
    assert read_log(big).values["kv-memory-gib"] == "41.68"
    with pytest.raises(InputError) as e:
        read_log(big * 2)
    assert "longer than 16 MiB" in e.value.message


def test_comparison_sets_the_log_beside_the_inputs_on_screen():
    reading = read_log(text("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log"))
    rows = {label: (printed, ours) for label, printed, ours, _ in comparison(reading, evaluate(reading.values))}
    assert rows["Maximum concurrency"] == ("22.23x", "22.23x")
    assert rows["KV memory per GPU"] == ("41.68 GiB", "41.68 GiB")


def cli(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return run(list(args), stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_cli_from_log_says_what_it_read_and_flags_win(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(text("vllm-qwen3-8b-2xt4-tp2-util085-8k-eager-llm-v0.22.0.log"), encoding="utf-8")
    # The log names a Kaggle path, not a preset: the CLI says to choose the model.
    code, _, err = cli("--from-log", str(log))
    assert code == 2 and "choose a model" in err
    code, out, err = cli("--from-log", str(log), "--model", "Qwen/Qwen3-8B", "--json")
    assert code == 0
    assert "# read from the vLLM log:" in err and "kv-memory-gib = 4.11, line" in err
    assert "KV cache tokens: the log printed 59,856" in err
    assert json.loads(out)["engine_kv_tokens"] == 59_856
    # A flag beside the log wins: the context, then the engine the log is not of.
    code, out, _ = cli("--from-log", str(log), "--model", "Qwen/Qwen3-8B", "--context", "4096", "--json")
    assert code == 0 and json.loads(out)["context"] == 4096
    code, _, err = cli("--from-log", str(log), "--model", "Qwen/Qwen3-8B", "--engine", "sglang")
    assert code == 2 and "vLLM's, not SGLang's" in err


def test_a_vllm_serve_command_over_several_lines_is_read_whole():
    log = ("$ vllm serve Qwen/Qwen3-8B \\\n"
           "    --tensor-parallel-size 2 \\\n"
           "    --max-model-len 16k \\\n"
           "    --kv-cache-dtype fp8 --enable-expert-parallel\n"
           "--max-num-seqs 99\n"            # not part of it: the line before did not go on
           "INFO 01-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: 10.00 GiB\n")
    values = read_log(log).values
    assert (values["model"], values["tp"], values["context"], values["kv-dtype"]) == ("Qwen/Qwen3-8B", "2", "16384",
                                                                                      "fp8")
    assert "batch" not in values


def test_every_vllm_log_fixture_reads():
    """Each vllm-*.log reads to at least the engine and one figure it measured, but the one paste
    of two runs (the Qwen3-Coder-480B thread's two commands), which is refused as two start-ups."""
    names = sorted(p.name for p in LOGS.glob("vllm-*.log"))
    assert len(names) >= 60
    for name in names:
        if name == "vllm-qwen3-coder-480b-fp8-dp8-h20-refusal.log":
            with pytest.raises(InputError, match="more than one start-up: lines 1 and 5"):
                read_log(text(name))
            assert read_log(text(name).split("\n\n#")[0]).values["dp"] == "8"    # its first run alone
            continue
        reading = read_log(text(name))
        assert reading.engine == "vllm", name
        assert {"kv-memory-gib", "loaded-weights-gib", "context"} & set(reading.values), name


def test_another_model_after_the_log_is_a_what_if_not_a_refusal():
    # The log measured Qwen3-30B-A3B; a config.json pasted afterwards is the model on screen, and
    # the measured deployment keeps the log's model: the weights move by the two models' difference.
    values = read_log(text("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log")).values
    config = json.loads((FIXTURES / "hf" / "Qwen__Qwen3-32B.json").read_text(encoding="utf-8"))
    now = {k: v for k, v in values.items() if k != "model"}
    e = evaluate({**now, "hf-config": config})
    assert e.ok, e.errors
    assert e.engine.budget_source is BudgetSource.MEASURED
    assert any("the weights per GPU +" in n for n in e.engine.notes)


def test_a_log_without_its_weights_still_moves_from_its_kv_memory():
    # vllm-mistral-small-3.1-24b-tp2-8k.log prints the KV memory (16.20 GiB) but neither its
    # weights nor tensor_parallel_size; its workers "(VllmWorker rank=1 pid=..)" say tp >= 2, as
    # its thread gives (2): the overhead it implies is then taken with our weights for its
    # deployment, so a tp edit is re-estimated from the log's memory rather than its KV memory
    # kept as if nothing moved.
    reading = read_log(text("vllm-mistral-small-3.1-24b-tp2-8k.log")).values
    assert (reading["tp"], reading["gpus"]) == ("2", "2") and "tp:2" in reading["measured-with"]
    values = {**reading, "model": "mistralai/Mistral-Small-24B-Base-2501", "gpu": "l40s-48gb"}
    assert "loaded-weights-gib" not in values and values["kv-memory-gib"] == "16.20"
    logged = evaluate({**values, "gpus": "2", "tp": "2"}).engine
    assert logged.budget_source is BudgetSource.GIVEN_KV_MEMORY
    moved = evaluate({**values, "gpus": "4", "tp": "4"}).engine
    assert moved.budget_source is BudgetSource.MEASURED and moved.kv_budget_bytes_per_gpu > logged.kv_budget_bytes_per_gpu


def test_the_largest_graph_batch_given_is_read_and_an_unset_one_is_not():
    """--max-cudagraph-capture-size in the command, in the non-default args at the top or inside
    compilation_config (its -cc form); a whole compilation_config printed with
    'max_cudagraph_capture_size': None leaves the default."""
    given = read_log("vLLM API server version 0.33.0\n"
                     "non-default args: {'model': 'meta-llama/Llama-3.1-8B', 'compilation_config': "
                     "{'mode': None, 'max_cudagraph_capture_size': 64}}\n")
    assert given.values["max-cudagraph-capture-size"] == "64"
    flag = read_log("$ vllm serve meta-llama/Llama-3.1-8B --max-cudagraph-capture-size=128\n"
                    "vLLM API server version 0.33.0\n")
    assert flag.values["max-cudagraph-capture-size"] == "128"
    unset = read_log("vLLM API server version 0.33.0\n"
                     "non-default args: {'model': 'meta-llama/Llama-3.1-8B', 'compilation_config': "
                     "{'mode': None, 'max_cudagraph_capture_size': None}}\n")
    assert "max-cudagraph-capture-size" not in unset.values
