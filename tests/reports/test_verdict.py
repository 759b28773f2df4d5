"""The verdict: whether a configuration fits, in one sentence, in every mode (issue 11's cases)."""

import json

from support import cli

EXACT = ("--engine", "exact")     # the exact ideal: the CLI sizes as vLLM unless told (issue 34)


def run(*argv):
    code, out, err = cli(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_fits_says_how_many_and_how_much():
    # Llama 3.1 8B, 16 x 32K on one H100: 16 x 4 GiB = 64 GiB of a 64.69 GiB budget.
    data = run("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--context", "32768", "--batch", "16",
               *EXACT)
    assert data["fits"] is True
    assert data["verdict"] == "Fits: 16 requests of 32,768 tokens take 64.00 GiB of the 64.69 GiB KV budget per GPU."
    assert data["decode_tokens_per_s_per_request"] is not None


def test_kv_over_budget_says_by_how_much_and_what_fits():
    # Issue 11: Llama 3.1 70B, 64 requests of 32K on 4 x H100 at 0.9: the budget is 38.8 GiB per GPU
    # (79.65 x 0.9 - 32.85 of weights), the batch needs 64 x 32,768 x 81,920 B = 160 GiB per GPU.
    data = run("--model", "meta-llama/Llama-3.1-70B", "--gpu", "h100-sxm-80gb", "--gpus", "4",
               "--memory-utilization", "0.9", "--context", "32768", "--batch", "64", *EXACT)
    assert data["fits"] is False
    assert data["kv_budget_bytes_per_gpu"] < data["kv_bytes_per_gpu"] == 64 * 32768 * 81920
    assert "Does not fit: 64 requests of 32,768 tokens need 160.00 GiB of KV cache per GPU" in data["verdict"]
    assert "over the 38.83 GiB left after the weights; at most 15 requests of 32,768 tokens fit" in data["verdict"]
    # A decode speed for a deployment that does not fit would mislead: it is not given.
    assert data["decode_tokens_per_s_per_request"] is None and data["decode_step_seconds"] is None


def test_weights_over_budget():
    # Llama 3.1 405B in bf16 on 8 x H100: 405,853,388,800 x 2 / 8 = 94.5 GiB per GPU > 79.65.
    data = run("--model", "meta-llama/Llama-3.1-405B", "--gpu", "h100-sxm-80gb", "--gpus", "8", *EXACT)
    assert data["fits"] is False
    assert data["verdict"].startswith("Does not fit: the weights need 94.50 GiB per GPU, 14.85 GiB more than "
                                      "the 79.65 GiB usable")
    assert data["decode_tokens_per_s_total"] is None


def test_context_past_the_model_limit():
    # Gemma 3 27B: its config omits max_position_embeddings; Gemma3TextConfig's default is 131,072.
    data = run("--model", "google/gemma-3-27b-it", "--gpu", "h100-sxm-80gb", "--context", "200000")
    assert data["fits"] is False
    assert "a context of 200,000 tokens is past the model's limit of 131,072" in data["verdict"]


def test_max_context_is_capped_by_the_model_limit():
    data = run("--model", "google/gemma-3-27b-it", "--gpu", "b200-180gb")
    assert data["max_context"] == 131_072 and data["max_context_limited_by"] == "model"


def test_unknown_without_a_gpu_or_weights():
    data = run("--model", "meta-llama/Llama-3.1-8B", *EXACT)
    assert data["fits"] is None and data["verdict"] == "Whether it fits needs a GPU (or its memory)."
    data = run("--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--gpu", "h100-sxm-80gb", *EXACT)
    assert data["fits"] is None and "weights" in data["verdict"]


def test_engine_verdicts():
    # vLLM at 128K on one H100, launched with --max-num-seqs 8 (its sampler warm-up then covers 8
    # rows): 3.55 requests at once; asking for 8 does not fit. With --max-num-seqs 2, 2 do.
    base = ("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--context", "131072", "--engine", "vllm")
    data = run(*base, "--batch", "8")
    assert data["fits"] is False and "vLLM holds 3.55 requests of 131,072 tokens at once, not 8" in data["verdict"]
    data = run(*base, "--batch", "2")
    assert data["fits"] is True and data["verdict"] == ("Fits as vLLM allocates: 2 requests of 131,072 tokens "
                                                        "(up to 3.55 at once).")
    # At 0.815 utilization three requests fit at the estimate (1.06 GiB of overhead: 3.03 at once)
    # and not at the top of its band (1.91 GiB: 2.98 at once): the verdict says so.
    data = run(*base, "--batch", "3", "--memory-utilization", "0.815")
    assert data["fits"] is True and data["verdict"].endswith(
        "(up to 3.03 at once); that is at the estimate: at the top of its range (1.91 GiB overhead) it does not "
        "fit, holding 2.98."), data["verdict"]
    # vLLM refuses when one request at max_model_len does not fit: the verdict says so.
    data = run("--model", "meta-llama/Llama-3.1-8B", "--engine", "vllm", "--kv-memory-gib", "10", "--context", "131072")
    assert data["engine_starts"] is False and data["fits"] is False
    assert "vLLM will not start" in data["verdict"] and f"{data['engine_max_model_len']:,}" in data["verdict"]


def test_the_table_leads_with_the_verdict():
    code, out, _ = cli("--model", "meta-llama/Llama-3.1-405B", "--gpu", "h100-sxm-80gb", "--gpus", "8", "--explain")
    assert code == 0
    assert out.splitlines()[0].startswith("Verdict") and "Does not fit" in out.splitlines()[0]
    # The arithmetic gives no decode speed for it either.
    assert "Decode bound: not given, because this configuration does not fit" in out and "tokens/s" not in out


def test_memory_bar_keeps_back_what_the_utilization_cap_reserves():
    from kvcalc import evaluate
    from kvcalc.reports.memory_bar import memory_bar
    e = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "memory-utilization": "0.9",
                  "context": "32768", "batch": "4"})
    bar = memory_bar(e, e.scenario)
    total = 85_520_809_984
    assert bar["reserved"] == total - int(total * 0.9) and bar["usable"] == int(total * 0.9)
    assert bar["free"] == bar["usable"] - bar["weights"] - bar["kv"] - bar["overhead"]
    assert bar["weights"] + bar["kv"] + bar["overhead"] + bar["free"] + bar["reserved"] == total
    assert bar["fits"] and bar["over"] == 0
    over = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "memory-utilization": "0.9",
                     "context": "131072", "batch": "8"})
    bar = memory_bar(over, over.scenario)
    assert not bar["fits"] and bar["over"] == bar["weights"] + bar["kv"] - bar["usable"] > 0


def test_words_a_user_can_act_on():
    from kvcalc import evaluate
    from kvcalc.reports.compare import compare_table
    from kvcalc.reports.export import export
    from kvcalc.reports.report import to_json
    # tp 3 on a 64-head model: the suggestion is a tp that works, not "use 3 GPUs".
    e = evaluate({"model": "meta-llama/Llama-3.1-70B", "tp": "3", "gpus": "4"})
    assert e.errors[0].field == "tp" and "the nearest that work: 2 or 4" in e.errors[0].message
    assert "use 3 GPUs" not in e.errors[0].message
    # -5 is "at least 1", not "a whole number".
    e = evaluate({"model": "meta-llama/Llama-3.1-8B", "batch": "-5"})
    assert e.errors[0].message == "must be at least 1, got '-5'"
    # No paging is "off" in JSON, CSV, Markdown and the comparison, never "Block size 1".
    e = evaluate({"model": "meta-llama/Llama-3.1-8B"})
    data = to_json(e.scenario, e)
    assert data["block_size"] == "off"
    assert "block_size,off" in export(e.scenario, e, "csv")
    assert "| block_size | off |" in export(e.scenario, e, "markdown")
    row = next(r for r in compare_table([data]) if r["key"] == "block_size")
    assert row["values"] == ["off"]
    paged = evaluate({"model": "meta-llama/Llama-3.1-8B", "block-size": "16"})
    assert to_json(paged.scenario, paged)["block_size"] == 16
