"""What a pasted log's figures imply where its lines leave an input unsaid (startup_log.implied,
issue 36): a log that prints its KV memory and what the engine made of it (the tokens, the
concurrency) prints the bytes one token takes on one GPU, which, given the model, is one tensor-
parallel size and one KV dtype, or several (then nothing is taken, and the summary keeps saying
what it assumed). Every log here is a public fixture (tests/fixtures/logs/SOURCES.md)."""

import io
import json
from dataclasses import replace

from kvcalc.cli import run
from kvcalc.evaluation import evaluate
from kvcalc.inputs import log_flow
from kvcalc.inputs.startup_log import implied, read_log
from support import FIXTURES

LOGS = FIXTURES / "logs"


def _log(name: str, drop: str = "") -> str:
    text = (LOGS / name).read_text(encoding="utf-8")
    return "".join(line for line in text.splitlines(keepends=True) if not drop or drop not in line)


def _read(reading, option):
    return next(r for r in reading.read if r.option == option)


QWEN25_L40S = "vllm-qwen2.5-32b-2xl40s-tp2-10k-v0-v0.8.2.log"


def test_v0_blocks_and_the_weights_imply_tp_2_for_the_model_chosen():
    # vLLM 0.8.2's V0 log of Qwen2.5-32B-Instruct on 2 x L40S (issue #15815) names no model and no
    # layout: "the rest of the memory reserved for KV Cache is 7.71GiB" (line 5) and "# CUDA
    # blocks: 3947, # CPU blocks: 2048" (line 9; the figure ends at its comma: 3,947 x 16 =
    # 63,152 tokens). Qwen2.5-32B takes 64 layers x 8 KV heads x 128 x 2 x 2 B = 262,144 B a
    # token at tp 1: 7.71 GiB hold 31,568 of them. 63,152 is tp 2 in bf16, or tp 1 with a 1-byte
    # cache; "Loading model weights took 30.7098 GB" is 1/2 of its 61.03 GiB: tp 2.
    reading = read_log(_log(QWEN25_L40S), "vllm")
    assert reading.printed["kv_tokens"].value == 63_152 and reading.printed["gpu_blocks"].value == 3_947
    assert "tp" not in reading.values and log_flow.unknown_layout(reading) == ("tp",)
    chosen = implied(reading, dict(reading.values, model="Qwen/Qwen2.5-32B"))
    assert (chosen.values["tp"], chosen.values["gpus"]) == ("2", "2") and "kv-dtype" not in chosen.values
    assert _read(chosen, "tp").how == ("implied: 7.71 GiB of KV memory (line 5) holds 3,947 GPU blocks (x 16 = "
                                       "63,152 tokens) (line 9) for Qwen/Qwen2.5-32B only at tp 2 (of 1, 2, 4, 8, "
                                       "16 tried)")
    assert not any(note.startswith("tp not read") for note in chosen.notes)
    assert "tp:2" in chosen.values["measured-with"].split(",")        # the deployment it measured
    e = evaluate(dict(chosen.values, model="Qwen/Qwen2.5-32B"))
    assert e.ok, e.errors
    assert e.engine.kv_tokens == 63_152          # 31,568 with tp 1 assumed, as before


def test_without_the_weights_the_figures_leave_tp_open():
    # The same reading without the weights it printed (V1 logs that print only the KV lines are
    # like it): tp 2 in bf16 and tp 1 in fp8 both hold 63,152 tokens in 7.71 GiB, so neither is
    # taken and the layout stays the one the summary says it assumed.
    read = read_log(_log(QWEN25_L40S), "vllm")
    values = {k: v for k, v in read.values.items() if k != "loaded-weights-gib"}
    reading = replace(read, values=values)
    chosen = implied(reading, dict(values, model="Qwen/Qwen2.5-32B"))
    assert chosen is reading
    e = evaluate(dict(chosen.values, model="Qwen/Qwen2.5-32B"))
    assert e.ok, e.errors
    assert log_flow.assumed_layout(chosen, e, user_gave=False) == [("tp", 1)]


def test_a_hybrid_log_implies_its_layout_and_its_fp8_cache():
    # cyankiwi/Qwen3-Next-80B-A3B-Instruct-AWQ-4bit on 2 x L40S (vLLM 0.13, kv_cache_dtype fp8,
    # tp 2; none of it printed in the excerpt): "Hybrid or mamba-based model detected without
    # support for prefix caching: disabling." (line 1: prefix caching off), "Available KV cache
    # memory: 17.58 GiB" (line 3), "Maximum concurrency for 32,768 tokens per request: 84.29x"
    # (line 5). Sized as Qwen3-Next-80B-A3B at tp 1 in bf16 it is 21.06x; only tp 2 with a
    # 1-byte cache gives 84.29x. No release is printed, so the token count (what it counts
    # changed at 0.20.1) is not compared.
    reading = read_log(_log("vllm-qwen3-next-80b-awq-tp2-l40s-fp8-v0.13.log"), "vllm")
    assert reading.values["prefix-caching"] == "off"
    assert _read(reading, "prefix-caching").line_number == 1
    chosen = implied(reading, dict(reading.values, model="Qwen/Qwen3-Next-80B-A3B-Instruct"))
    assert (chosen.values["tp"], chosen.values["kv-dtype"]) == ("2", "fp8")
    assert _read(chosen, "kv-dtype").how.startswith("implied: 17.58 GiB of KV memory (line 3) holds 767,552 "
                                                    "tokens (line 4) and a concurrency of 84.29x (line 5)")
    e = evaluate(dict(chosen.values, model="Qwen/Qwen3-Next-80B-A3B-Instruct"))
    assert e.ok, e.errors
    rows = log_flow.mismatches(chosen, e)
    assert not [row for row in rows if row[0] == "maximum concurrency"]     # 21.06x before
    before = evaluate(dict(reading.values, model="Qwen/Qwen3-Next-80B-A3B-Instruct"))
    assert [row[:2] for row in log_flow.mismatches(reading, before) if row[0] == "maximum concurrency"] == \
        [("maximum concurrency", "84.29x")]


def test_a_lower_bound_from_the_worker_names_is_confirmed_and_the_cache_dtype_implied():
    # Qwen3.6-27B AutoRound INT4 on 2 x RTX 3090 (club-3090 issue #104): Worker_TP0 and
    # Worker_TP1 print (tp at least 2); "Available KV cache memory: 9.84 GiB" (line 1), "GPU KV
    # cache size: 619,202 tokens" (line 4), "Maximum concurrency for 262,144 tokens per request:
    # 2.36x" (line 5). The Qwen3.5-27B shape in bf16 gives 1.21x at tp 2; fp8_e5m2 (the title's)
    # is 1 byte: 2.36x, and no larger tp does.
    reading = read_log(_log("vllm-qwen3.6-27b-int4-2x3090-tp2-util088-fp8e5m2-cudagraph-est.log"), "vllm")
    assert _read(reading, "tp").how.startswith("at least")
    chosen = implied(reading, dict(reading.values, model="Qwen/Qwen3.5-27B"))
    assert (chosen.values["tp"], chosen.values["kv-dtype"]) == ("2", "fp8")
    assert _read(chosen, "tp").how.endswith("only at tp 2 (of 2, 4, 8, 16 tried)")
    assert [r.option for r in chosen.read].count("tp") == 1 and [r.option for r in chosen.read].count("gpus") == 1
    e = evaluate(dict(chosen.values, model="Qwen/Qwen3.5-27B"))
    assert e.ok, e.errors
    low, high = e.engine.kv_tokens_range
    assert low <= 619_202 <= high                # 315,956 in bf16
    assert log_flow.mismatches(chosen, e) == []


def test_a_log_that_prints_its_layout_and_dtype_is_left_as_read():
    # vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log prints tensor_parallel_size=2 and
    # kv_cache_dtype=auto: nothing is left to imply, and its figures are ours as read.
    reading = read_log(_log("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log"), "vllm")
    assert "kv_dtype_default" in reading.printed
    assert not any(r.how.startswith("implied") for r in reading.read)
    assert implied(reading, reading.values) is reading


def test_the_cli_reads_the_implied_layout_with_the_model_given():
    # kvcalc --from-log FILE --model Qwen/Qwen2.5-32B over the 2 x L40S V0 log: tp 2 read with
    # the lines it comes from, and the log's 63,152 tokens sized (31,568 with tp 1 assumed).
    out, err = io.StringIO(), io.StringIO()
    code = run(["--from-log", str(LOGS / QWEN25_L40S), "--model", "Qwen/Qwen2.5-32B", "--json"], out, err)
    assert code == 0, err.getvalue()
    assert "tp = 2 (implied: 7.71 GiB of KV memory (line 5) holds 3,947 GPU blocks" in err.getvalue()
    assert "the log does not say its layout" not in err.getvalue()
    assert json.loads(out.getvalue())["engine_kv_tokens"] == 63_152


def test_a_model_chosen_over_a_log_naming_none_reads_its_layout_unless_the_user_set_it():
    """The page's path (log_flow.implied_for_model): vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log
    without the lines naming its model and its second worker. The form holds gpus 1 whether or not
    the log said so; given Qwen3-30B-A3B, its 41.68 GiB holding 910,464 tokens implies tp 2. Once
    the user sets 4 GPUs after the paste, the layout is theirs and nothing is taken."""
    text = "".join(line for line in _log("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log").splitlines(keepends=True)
                   if "non-default args" not in line and "Initializing" not in line and "Worker_TP1" not in line)
    reading = read_log(text)
    assert "model" not in reading.values and "tp" not in reading.values
    applied = dict(reading.values, gpus="1", model="")
    current = dict(applied, model="Qwen/Qwen3-30B-A3B")
    again, taken = log_flow.implied_for_model(reading, current, applied)
    # measured-with: the deployment the log's figures were measured on, now at tp 2 too.
    assert (taken["tp"], taken["gpus"]) == ("2", "2") and "gpus:2,tp:2" in taken["measured-with"]
    assert _read(again, "tp").how.startswith("implied: 41.68 GiB of KV memory (line 5) holds 910,464 tokens")
    mine = dict(current, gpus="4")
    again, taken = log_flow.implied_for_model(reading, mine, applied)
    assert again is reading and taken == {}
