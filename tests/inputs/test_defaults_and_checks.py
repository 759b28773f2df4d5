"""Issue 34, items 4 and 1's "every check still runs": one default everywhere (the CLI sizes as the
newest vLLM release modelled, as the page starts; a link without an engine keeps meaning the exact
ideal), JSON's memory utilization is the one applied, and a KV memory given or read from a log
never skips the weights: what the card cannot hold is said in the verdict, never a fit."""

import json
import math
import re
from fractions import Fraction

from kvcalc import engines
from kvcalc.engines import releases
from kvcalc.engines.sglang import engine as sglang
from kvcalc.engines.vllm import engine as vllm, release as vllm_release
from kvcalc.evaluation import evaluate
from kvcalc.inputs import form_blocks
from kvcalc.reports.link import encode
from kvcalc.readers.gpu_presets import gpu

from support import cli

# The reproduction: Llama 3.1 70B on 4 x H100 SXM, fp8 KV, 32 requests of 32K.
L70 = ("--model", "meta-llama/Llama-3.1-70B", "--gpu", "h100-sxm-80gb", "--gpus", "4", "--kv-dtype", "fp8",
       "--batch", "32", "--context", "32768")
H100 = gpu("h100-sxm-80gb")


def run(*argv) -> dict:
    code, out, err = cli(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_the_page_starts_sized_as_the_engine_the_cli_defaults_to():
    html = form_blocks.render_field(form_blocks.FIELD_BY_NAME["engine"])      # its block in the page
    select = re.search(r'<select id="engine".*?</select>', html, re.S).group(0)
    assert re.search(r'<option value="([^"]+)" selected>', select).group(1) == engines.DEFAULT == "vllm"


def test_the_cli_answers_as_the_page_does():
    """Before: the CLI said "Fits ... up to 37" (the exact ideal) where the page said vLLM holds
    29.79. Now both size as vLLM 0.33.0: 0.92 x 79.65 GiB less 32.85 GiB of weights and a 2.79 GiB
    overhead leaves 37.24 GiB, 976,304 tokens, 29.79 requests of 32,768."""
    data = run(*L70)
    newest = releases.newest(vllm)
    assert data["sized_as"] == f"vLLM {newest}" and data["engine"] == "vllm"
    assert data["fits"] is False
    assert data["verdict"] == "Does not fit: vLLM holds 29.86 requests of 32,768 tokens at once, not 32: the rest wait."
    assert data["engine_kv_tokens"] == 978_544 and data["max_concurrency"] == 29
    ideal = run(*L70, "--engine", "exact")
    assert ideal["sized_as"] == "exact ideal" and ideal["fits"] is True and ideal["max_concurrency"] == 37
    assert ideal["verdict"] == ("Fits: 32 requests of 32,768 tokens take 40.00 GiB of the 46.79 GiB KV budget "
                                "per GPU; up to 37 requests would fit.")
    assert data["exact_ideal"]["max_concurrency"] == 37       # the ideal's answer stays beside the engine's


def test_json_reports_the_utilization_applied():
    """vLLM 0.33.0's default --gpu-memory-utilization is 0.92 of the total PyTorch reports
    (vllm/config/cache.py), rounded up (request_memory): usable = ceil(0.92 x total). JSON said 1."""
    data = run(*L70)
    assert data["memory_utilization"] == 0.92 == float(vllm_release.default_utilization(releases.newest(vllm)))
    assert data["usable_bytes_per_gpu"] == math.ceil(H100.torch_memory_bytes * Fraction(92, 100))
    assert data["exact_ideal"]["memory_utilization"] == 1        # the ideal's own, unchanged
    assert run(*L70, "--memory-utilization", "0.85")["memory_utilization"] == 0.85
    assert run(*L70, "--engine", "exact")["memory_utilization"] == 1


def test_json_reports_sglangs_derived_fraction():
    """SGLang derives mem_fraction_static from the GPU's memory, the chunk and the parallelism
    (server_args.py); what it multiplies is the memory free at start (PyTorch's total less its
    CUDA context): the JSON key is that fraction, and the usable memory is it times the free."""
    data = run(*L70, "--engine", "sglang")
    # --batch 32 is --max-running-requests 32, within which 0.5.23 keeps its graph batch (release.py).
    _, _, fraction = sglang.defaults(H100.memory_bytes, 4, 1, data["engine_prefill_chunk"], releases.newest(sglang),
                                     launch=sglang.rules.Launch(requests=32))
    assert data["memory_utilization"] == float(fraction) < 1
    assert data["usable_bytes_per_gpu"] == int((H100.torch_memory_bytes - sglang.CONTEXT_BYTES) * fraction)


def test_llamacpp_allocates_what_it_is_asked_for():
    base = ("--model", "meta-llama/Llama-3.1-8B", "--gpu", "rtx-4090-24gb", "--engine", "llama.cpp")
    assert run(*base)["memory_utilization"] == 1
    assert run(*base, "--memory-utilization", "0.9")["memory_utilization"] == 0.9


def test_a_kv_memory_from_a_log_applies_no_utilization():
    data = run("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--kv-memory-gib", "60")
    assert data["engine_budget_source"] == "kv-memory-gib" and data["memory_utilization"] is None


def test_a_link_without_an_engine_keeps_meaning_the_exact_ideal():
    """README: every link shared before issue 23 gives the same numbers; links the page writes
    carry the engine, and the CLI reads both as the page does."""
    values = {"model": "meta-llama/Llama-3.1-70B", "gpu": "h100-sxm-80gb", "gpus": "4", "kv-dtype": "fp8",
              "batch": "32", "context": "32768"}
    old = run("--link", "http://127.0.0.1:8000/#" + encode(values))
    assert old == run(*L70, "--engine", "exact") and old["fits"] is True and old["max_concurrency"] == 37
    page = run("--link", "http://127.0.0.1:8000/#" + encode(dict(values, engine="vllm")))
    assert page == run(*L70) and page["sized_as"].startswith("vLLM")
    # An option typed beside the link still wins over it.
    assert run("--link", "#" + encode(values), "--engine", "vllm") == run(*L70)


def test_a_log_kv_memory_never_skips_the_weights():
    """DeepSeek-R1 on 4 x H200 (140.40 GiB each): its FP8 weights, 673,150,611,808 B as the config's
    quantization_config and shapes give them, are 168,287,652,952 B (156.73 GiB) per GPU. A KV
    memory of 5.11 GiB (a log's, or --kv-memory-gib) said "Fits ... up to 9.52 at once"."""
    data = run("--model", "deepseek-ai/DeepSeek-R1", "--gpu", "h200-141gb", "--gpus", "4", "--engine", "vllm",
               "--kv-memory-gib", "5.11")
    assert data["weights_bytes_per_gpu"] == 168_287_652_952 > data["gpu_memory_bytes"]
    assert data["fits"] is False
    assert data["verdict"] == ("Does not fit: the weights need 156.73 GiB per GPU, 16.33 GiB more than the card's "
                               "140.40 GiB, so the KV memory of 5.11 GiB per GPU, the one given (kv-memory-gib), "
                               "cannot have been measured on this deployment.")
    assert data["max_concurrency"] is None and data["decode_tokens_per_s_per_request"] is None


def test_a_kv_memory_the_card_cannot_hold_is_a_contradiction_not_a_fit():
    """1 PiB of KV memory on an 80 GB H100 said "fits 1,048,576 requests". The card's 79.65 GiB less
    Llama 3.1 8B's 14.96 GiB of weights leaves 64.69 GiB: any KV memory above that contradicts the
    inputs, and the requests and context it would give are withheld. At 60 GiB it fits."""
    base = ("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb")
    data = run(*base, "--kv-memory-gib", "1048576")
    assert data["fits"] is False and data["max_concurrency"] is None and data["max_context"] is None
    assert data["verdict"] == ("Does not fit: a KV memory of 1.00 PiB per GPU, the one given (kv-memory-gib), is "
                               "more than the 64.69 GiB the card's 79.65 GiB leaves beside the weights' 14.96 GiB "
                               "per GPU: the KV memory and these inputs contradict each other (check the GPU, the "
                               "model and the layout it was measured with).")
    assert "plan_best" not in data                    # the inputs need fixing, not a bigger deployment
    code, out, _ = cli(*base, "--kv-memory-gib", "1048576")
    assert code == 0 and "Max concurrent requests (of 8,192 tokens)  n/a (the KV memory contradicts" in out
    assert "1,048,576" not in out.split("\n\n")[0]
    # Just above what the card leaves is refused the same way; below it, the log's figure stands.
    assert run(*base, "--kv-memory-gib", "64.7")["fits"] is False
    fits = run(*base, "--kv-memory-gib", "60")
    assert fits["fits"] is True and fits["max_concurrency"] == 60
    # Every engine: the rule is the card's, not one engine's.
    for engine in ("sglang", "llama.cpp"):
        assert run(*base, "--engine", engine, "--kv-memory-gib", "1048576")["fits"] is False, engine


def test_llamacpp_over_two_gpus_is_two_stages_whether_or_not_pp_1_is_sent():
    """The page sends its untouched pp field (1); the CLI sends none. llama.cpp has no tensor
    parallelism (--split-mode layer): both are 2 stages of whole layers, tp 1. A pp that is neither
    1 nor the GPU count is said, naming pp."""
    base = {"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "engine": "llama.cpp", "gpus": "2"}
    for values in (base, dict(base, pp="1"), dict(base, pp="2")):
        e = evaluate(values)
        assert e.ok, e.errors
        assert (e.scenario.deployment.tp, e.scenario.deployment.pp) == (1, 2), values
    e = evaluate(dict(base, gpus="4", pp="2"))
    assert [err.field for err in e.errors] == ["pp"] and "give pp 4 or 1" in e.errors[0].message
