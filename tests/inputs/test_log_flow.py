"""Issue 34: a start-up log never leaves another model sized in its place. The model the log
names is the preset the readers resolve it to, or the answer is refused naming that model and
how to give it; the log's printed figures and ours are set side by side, and where they differ
by more than the log's rounding (or the log does not say its layout) it is said, not only in
the notes. Every log here is a public one (tests/fixtures/logs/SOURCES.md names each URL)."""

import io
import json

import pytest

from kvcalc.inputs import failed_start, log_flow
from kvcalc.cli import run
from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log
from kvcalc.readers.log_rules import model_entry
from support import FIXTURES

LOGS = FIXTURES / "logs"
QWEN25_72B = "vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log"        # Qwen/Qwen2.5-72B-Instruct, 4 x L40S
KAGGLE = "vllm-qwen3-8b-2xt4-tp2-util085-8k-eager-llm-v0.22.0.log"  # a Kaggle path ending in "/8b/1"
KAGGLE_PATH = "/kaggle/input/models/qwen-lm/qwen-3/transformers/8b/1"
QWEN3_30B = "vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log"


def text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def without(name: str, *needles: str) -> str:
    """A public log with the lines holding any of `needles` left out (what a trimmed paste is)."""
    return "".join(line + "\n" for line in text(name).splitlines() if not any(n in line for n in needles))


def cli(tmp_path, log_text: str, *args) -> tuple[int, str, str]:
    path = tmp_path / "start-up.log"
    path.write_text(log_text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    return run(["--from-log", str(path), *args], stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_a_log_whose_model_is_no_preset_is_refused_naming_it(tmp_path):
    assert model_entry(KAGGLE_PATH) is None
    code, out, err = cli(tmp_path, text(KAGGLE))
    assert (code, out) == (2, "")
    assert err == (f"kvcalc: error: --model: the log names the model '{KAGGLE_PATH}', which is no preset here: "
                   "give its config.json with --hf-config FILE, or choose a model of its shape with --model ID\n")
    # Given the model, the log's figures come back: 59,856 tokens at its 4.11 GiB on each T4.
    code, out, err = cli(tmp_path, text(KAGGLE), "--model", "Qwen/Qwen3-8B", "--json")
    assert code == 0 and json.loads(out)["engine_kv_tokens"] == 59_856
    assert "Not as the log printed" not in err and "does not say its layout" not in err


def test_the_qwen25_72b_log_is_sized_as_its_own_model_or_refused(tmp_path):
    # The log: on a page showing Llama 3.1 8B it said "up to 20.44 at once", Llama's figure.
    log = text(QWEN25_72B)
    assert model_entry("Qwen/Qwen2.5-72B-Instruct")["id"] == "Qwen/Qwen2.5-72B"    # the -Instruct release
    code, out, err = cli(tmp_path, log, "--json")
    assert code == 0
    data = json.loads(out)
    # Qwen2.5 72B at tp 4 (80 layers x 2 KV heads a GPU x 128 x 2 x 2 bytes = 81,920 B a token) in the
    # log's 5.11 GiB: 66,976 tokens and 8.18x. The log printed 67,024, which 5.11's rounding allows.
    assert data["engine_kv_tokens"] == 66_976 and f"{float(data['engine_max_concurrency']):.2f}" == "8.18"
    assert "# KV cache tokens: the log printed 67,024 (line 22); sized here 66,976" in err
    assert "Not as the log printed" not in err


def test_a_log_that_names_no_gpu_says_which_card_the_memory_checks_use(tmp_path):
    # The Qwen2.5-72B log ran on 4 x L40S but prints neither the device nor its total: its KV
    # figures hold (they are the log's 5.11 GiB), the card the weights are checked on is the one
    # given, and the answer says so until the user names the log's.
    log = text(QWEN25_72B)
    reading = read_log(log)
    assert not any(name in reading.values for name in log_flow.GPU_GIVEN)
    code, out, err = cli(tmp_path, log, "--gpu", "h100-sxm-80gb")
    assert code == 0
    assert log_flow.assumed_gpu(reading, evaluate({**reading.values, "gpu": "h100-sxm-80gb"}), False) == \
        "NVIDIA H100 SXM 80GB"
    # Typed beside the log, the GPU is the user's answer: nothing to ask.
    assert "does not say its GPU" not in err
    assert log_flow.assumed_gpu(reading, evaluate({**reading.values, "gpu": "h100-sxm-80gb"}), True) is None
    # A log that prints its device names it: nothing to ask.
    named = read_log(text(QWEN3_30B))
    assert "gpu" in named.values
    assert log_flow.assumed_gpu(named, evaluate(named.values), False) is None


def test_a_what_if_beside_a_log_is_said_beside_the_answer(tmp_path):
    # The Qwen log's 5.11 GiB with an fp8 cache: twice its tokens and concurrency, said at once,
    # not only in the rows of what was read.
    code, _, err = cli(tmp_path, text(QWEN25_72B), "--model", "Qwen/Qwen2.5-72B", "--kv-dtype", "fp8")
    assert code == 0
    assert ("# Not as the log printed: KV cache tokens 67,024 (line 22), these inputs 133,952; "
            "maximum concurrency 8.18x (line 23), these inputs 16.35x\n") in err


def test_a_log_naming_no_model_is_refused_saying_so(tmp_path):
    log = without(QWEN3_30B, "non-default args", "Initializing")
    assert log_flow.named_model(read_log(log)) is None
    code, _, err = cli(tmp_path, log)
    assert code == 2
    assert err == ("kvcalc: error: --model: the log names no model: give its config.json with --hf-config FILE, "
                   "or choose a model its server ran with --model ID\n")


def test_a_log_that_does_not_say_its_layout_is_asked_for_it(tmp_path):
    # Without its config lines and its second worker's, the Qwen3-30B-A3B log (tp 2, 41.68 GiB a GPU)
    # says neither tp nor pp. Its figures still do: at tp 1 the same memory holds half its 910,464
    # tokens, so with the model given tp 2 is implied (startup_log.implied) and nothing is asked.
    log = without(QWEN3_30B, "non-default args", "Initializing", "Worker_TP1")
    reading = read_log(log)
    assert log_flow.unknown_layout(reading) == ("tp",)
    code, _, err = cli(tmp_path, log, "--model", "Qwen/Qwen3-30B-A3B")
    assert code == 0
    assert "#   tp = 2 (implied: 41.68 GiB of KV memory (line 5) holds 910,464 tokens (line 6)" in err
    assert "Not as the log printed" not in err and "does not say its layout" not in err
    # Without the token count and the concurrency, nothing says the layout: tp 1 is assumed, and asked.
    bare = without(QWEN3_30B, "non-default args", "Initializing", "Worker_TP1", "GPU KV cache size", "Maximum concurrency")
    code, _, err = cli(tmp_path, bare, "--model", "Qwen/Qwen3-30B-A3B")
    assert code == 0
    assert "# the log does not say its layout (--tp): these figures assume tp 1; give --tp as its server ran\n" in err
    # Given as the server ran, nothing is asked.
    code, _, err = cli(tmp_path, bare, "--model", "Qwen/Qwen3-30B-A3B", "--tp", "2")
    assert code == 0 and "does not say its layout" not in err


def test_sglangs_rounded_pool_is_no_mismatch():
    # SGLang prints K and V to 0.01 GB each: 55.60 GiB is K + V, each within 0.005, and the pool of
    # tokens it printed is inside what that allows.
    reading = read_log(text("sglang-qwen3-8b-tp1-mfs090.log"))
    evaluation = evaluate(dict(reading.values, model="Qwen/Qwen3-8B", gpu="h100-sxm-80gb"))
    assert evaluation.ok, evaluation.errors
    assert log_flow.mismatches(reading, evaluation) == []


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*.log")))
def test_no_log_is_sized_as_a_model_it_did_not_run(tmp_path, name):
    """Every public log: the CLI gives figures only where the log gives its model (a preset, or
    llama.cpp's own shapes); otherwise it refuses naming --model, and the model it names."""
    try:
        reading = read_log(text(name))
    except InputError:
        return                       # a refused log gives nothing to size at all
    code, out, err = cli(tmp_path, text(name), "--json")
    if log_flow.model_given(reading):
        assert "--model: the log names" not in err
        return
    named = log_flow.named_model(reading)
    if failed_start.read(text(name)).read:
        # A failed start (issue 38): its cause and the fixes its own figures give, no figure of a
        # model: the model is still asked for, in a note.
        data = json.loads(out)
        assert code == 0 and set(data) == {"failed_start", "fixes"}
        assert "# the log names" in err and ((repr(named) in err) if named else ("names no model" in err))
        return
    assert code == 2 and err.startswith("kvcalc: error: --model: the log names ")
    assert (repr(named) in err) if named else ("names no model" in err)


def test_a_paste_that_is_no_one_start_up_is_refused_naming_from_log(tmp_path):
    # Two public logs one after the other (two models, two start-ups), and a text that is no log.
    two = text(QWEN25_72B) + text(KAGGLE)
    code, out, err = cli(tmp_path, two)
    assert (code, out) == (2, "")
    assert err == "kvcalc: error: --from-log: holds more than one start-up: lines 5 and 34 each begin one; paste one\n"
    code, _, err = cli(tmp_path, "hello\n")
    assert code == 2 and err.startswith("kvcalc: error: --from-log: is not a start-up log of vLLM, SGLang or llama.cpp")


# --- issue 34 review: a KV cache of nothing, figures printed in the engine's own terms ----------

def test_a_negative_kv_memory_says_the_engine_does_not_start(tmp_path):
    # vllm-gpt-oss-120b-h100-default-negative-kv.log line 7: "Available KV cache memory: -2.14 GiB".
    # vLLM raises "No available memory for the cache blocks": no estimate of ours stands in for it.
    reading = read_log(text("vllm-gpt-oss-120b-h100-default-negative-kv.log"))
    assert "kv-memory-gib" not in reading.values
    assert not any("KV memory" in words for words in reading.not_read)
    assert log_flow.no_cache(reading) == (
        "the log's engine will not start: line 7 printed 'Available KV cache memory: -2.14 GiB': no memory for its "
        "KV cache, 2.14 GiB short of any (vLLM does not start: \"ValueError: No available memory for the cache "
        "blocks\"); the figures here are not what it ran")
    # A failed start is answered (issue 38): the cause in vLLM's line and ours, by how much, the fixes.
    code, out, err = cli(tmp_path, text("vllm-gpt-oss-120b-h100-default-negative-kv.log"), "--gpu", "h100-sxm-80gb")
    assert code == 0 and "Fits" not in out
    assert ("vLLM will not start: the weights and its overhead leave no memory for the KV cache, 2.14 GiB short. "
            "It printed (line 7)") in out
    assert "# the log's engine will not start: line 7" in err
    # The user's own KV memory is a what-if: sized, the log's line still said.
    code, out, err = cli(tmp_path, text("vllm-gpt-oss-120b-h100-default-negative-kv.log"), "--gpu",
                         "h100-sxm-80gb", "--kv-memory-gib", "10")
    assert code == 0 and "# the log's engine will not start: line 7" in err


def test_a_pool_of_zero_tokens_is_no_cache_either():
    # The same log with its KV memory line cut: vLLM's "GPU KV cache size: 0 tokens" alone.
    log = without("vllm-gpt-oss-120b-h100-default-negative-kv.log", "Available KV cache memory")
    log += "(EngineCore_0 pid=5839) INFO 08-20 18:04:22 [kv_cache_utils.py:1087] GPU KV cache size: 0 tokens\n"
    said = log_flow.no_cache(read_log(log))
    assert said.startswith("the log's engine will not start: line ") and "'GPU KV cache size: 0 tokens'" in said
    assert "short" not in said


def test_early_v1_gpu_blocks_are_its_kv_tokens():
    # vllm-granite-3.0-2b-l40s-v1-0.7-gpu-blocks-only.log: "# GPU blocks: 33660", no token line:
    # 33,660 x 16 (vLLM's default block) = 538,560 tokens, and 538,560 / 4,096 = 131.48x as printed.
    reading = read_log(text("vllm-granite-3.0-2b-l40s-v1-0.7-gpu-blocks-only.log"))
    tokens = reading.printed["kv_tokens"]
    assert (tokens.value, tokens.line_number) == (538_560, 8)
    assert round(538_560 / 4096, 2) == float(reading.printed["max_concurrency"].value) == 131.48
    assert "KV cache tokens read as 33,660 GPU blocks (line 8) x vLLM's default block size 16" in reading.notes


def test_consumed_memory_covers_the_weights_and_non_torch_together():
    # vllm-pr57047-consumed-memory-summary-sm89.log line 5: "2.81 GiB for consumed memory (weights + non-torch)".
    reading = read_log(text("vllm-pr57047-consumed-memory-summary-sm89.log"))
    assert "loaded-weights-gib" not in reading.values
    assert not any("the weights" in words for words in reading.not_read)
    assert any(note.startswith("line 5 printed 2.81 GiB for the weights and the non-torch memory together")
               for note in reading.notes)


def test_the_kv_memory_is_said_as_the_log_printed_it():
    # vLLM 0.10-0.11 prints the KV memory rounded, then its bytes: said as the bytes (and their GiB).
    log = ("INFO 01-01 00:00:00 [gpu_worker.py:298] Available KV cache memory: 10.65 GiB\n"
           "INFO 01-01 00:00:00 [gpu_worker.py:391] Current kv cache memory in use is 11425000000 bytes.\n")
    reading = read_log(log)
    assert reading.printed["kv_memory_gib"].text == "11,425,000,000 bytes (10.64 GiB)"
    assert not any("local path" in words for words in reading.not_read)


def test_llamacpps_printed_kv_size_is_compared_with_ours():
    # llamacpp-pr5104-kv-self-size-160mib.log line 5: "KV self size  =  160.00 MiB" at n_ctx 512.
    # Llama 3.1 8B at 512 cells: 32 layers x 2 x 8 x 128 x 2 B x 512 = 67,108,864 B = 64.00 MiB.
    reading = read_log(text("llamacpp-pr5104-kv-self-size-160mib.log"))
    values = dict(reading.values, model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb")
    rows = log_flow.mismatches(reading, evaluate(values))
    assert ("KV cache size (its KV buffers)", "160.00 MiB", "64.00 MiB", 5) in rows
    assert log_flow.mismatch_text(rows).startswith("Not as the log printed: KV cache size (its KV buffers) 160.00 MiB")


def test_rpc_servers_are_devices_holding_the_kv_buffers():
    # llamacpp-llama31-70b-q4_0-rpc-2nodes-b6209.log lines 72-73: "RPC[172.31.27.42:50052] KV buffer
    # size = 656.00 MiB" and "RPC[172.31.20.38:50052] ... 624.00 MiB": two devices, 1,280 MiB in all,
    # the size line's 1280.00 MiB (80 layers x 2 x 1,024 x 2 B x 4,096 cells), which ours gives too.
    reading = read_log(text("llamacpp-llama31-70b-q4_0-rpc-2nodes-b6209.log"))
    gpus = next(r for r in reading.read if r.option == "gpus")
    assert (gpus.text, gpus.line_number) == ("2", 73)
    assert gpus.how == "KV buffers on RPC[172.31.20.38:50052], RPC[172.31.27.42:50052]"
    assert not reading.not_read
    evaluation = evaluate(dict(reading.values, **{"gpu-memory-gib": "30"}))
    assert log_flow.mismatches(reading, evaluation) == []
    # The same log with a model of 72 layers given instead (all on the GPUs): its size and layers are said.
    values = {k: v for k, v in reading.values.items() if k not in ("layers", "n-gpu-layers")}
    rows = log_flow.mismatches(reading, evaluate(dict(values, layers="72", **{"gpu-memory-gib": "30"})))
    assert [row[:3] for row in rows] == [("KV cache size (its KV buffers)", "1,280.00 MiB", "1,152.00 MiB"),
                                         ("KV cache layers", "80 layers", "72 layers")]


def test_the_models_facts_the_log_printed_are_held_to_the_chosen_model():
    # llamacpp-llama31-70b-q4_0-rpc-2nodes-b6209.log's GGUF metadata: llama.embedding_length 8192 (line 14),
    # llama.attention.head_count 64 (line 16), head_count_kv 8: a 70B, which Llama 3.1 8B (4,096 wide,
    # 32 heads, 8 KV heads, 32 layers) is not.
    reading = read_log(text("llamacpp-llama31-70b-q4_0-rpc-2nodes-b6209.log"))
    values = {k: v for k, v in reading.values.items() if k not in ("layers", "attention-heads", "kv-heads",
                                                                    "head-dim", "n-gpu-layers")}
    evaluation = evaluate(dict(values, model="meta-llama/Llama-3.1-8B", **{"gpu-memory-gib": "30"}))
    assert log_flow.model_facts(reading, evaluation) == [("the model's width (n_embd)", "8,192", "4,096", 14),
                                                         ("its attention heads (n_head)", "64", "32", 16)]
    rows = log_flow.mismatches(reading, evaluation)
    assert [row[0] for row in rows] == ["KV cache size (its KV buffers)", "KV cache layers",
                                        "the model's width (n_embd)", "its attention heads (n_head)"]
    # The model the log ran (its own metadata) contradicts none of them.
    assert log_flow.model_facts(reading, evaluate(dict(reading.values, **{"gpu-memory-gib": "30"}))) == []


def test_a_log_whose_gpu_is_no_preset_says_why(tmp_path):
    # vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log names NVIDIA_H100_80GB_HBM3; with the L40S
    # log's "Device capability 8.9" line added, no preset is both (the H100's is 9.0): the GPU is
    # not read, and the answer says why; where a card is in force for the memory checks (the page's
    # GPU on screen), the sentence beside it gives this reason, not "the log does not say its GPU".
    symm = next(line for line in text("vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log").splitlines()
                if "Device capability" in line)
    log = text("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log") + "\n" + symm
    reading = read_log(log)
    assert "gpu" not in reading.values
    assert log_flow.gpu_unsaid(reading) == ("the log's GPU 'NVIDIA_H100_80GB_HBM3' is no preset: compute "
                                            "capability 8.9 printed, h100-sxm-80gb's is 9.0")
    code, _, err = cli(tmp_path, log)
    assert code == 0
    assert ("# note: gpu not read: the log's GPU 'NVIDIA_H100_80GB_HBM3' is no preset: compute capability 8.9 "
            "printed, h100-sxm-80gb's is 9.0; choose the one its server ran\n") in err
    assert log_flow.gpu_unsaid(read_log(text(QWEN25_72B))) == "the log does not say its GPU"
