"""The verdict's "What you need" (plan_report.pointer) speaks only where it sizes the verdict's own
question. The plan sizes each deployment from the engine's estimates and drops a deployment's
measurements (ask.DEPLOYMENT_INPUTS); a verdict that rests on a measured KV memory (a log's,
--kv-memory-gib, or a log's parts re-estimated for an edit) answers another question, so the
pointer is left out and one clause says why. And a pointer never names the deployment the verdict
has just said does not fit.

The logs are public (tests/fixtures/logs/SOURCES.md gives each one's URL):
- vllm-gpt-oss-120b-h100-refusal.log: vLLM refuses gpt-oss-120b at 131,072 tokens with 1.71 GiB
  of KV cache on one H100; the pointer said "1 x NVIDIA H100 SXM 80GB (tp 1) fits 2 requests",
  the very setup the log shows refusing.
- sglang-gemma3-4b-it-h200-mfs088-tp1-v0.4.4.log: 108.24 GiB of KV memory measured on an H200,
  which an H100 cannot hold beside the weights; the page's pointer said "1 x H100 ... fits 54".
- vllm-llama3.1-8b-l4-util092-32k-seqs128-v0.11.0.log: 4.75 GiB measured on an L4 holds 1.22
  requests of 32,000 tokens; on a B200 (a link's GPU) the pointer said "4 x B200 fits 161".
"""

import json

from kvcalc.planning import plan as planner
from kvcalc.inputs.options import parse_options
from kvcalc.planning.plan_report import pointer

from support import FIXTURES, cli

LOGS = FIXTURES / "logs"
GPT_OSS = str(LOGS / "vllm-gpt-oss-120b-h100-refusal.log")
GEMMA = str(LOGS / "sglang-gemma3-4b-it-h200-mfs088-tp1-v0.4.4.log")
LLAMA_L4 = str(LOGS / "vllm-llama3.1-8b-l4-util092-32k-seqs128-v0.11.0.log")
WITHHELD = "What you need is not sized here: the plan sizes from {}'s estimates, not {}: kvcalc --plan"


def head(*argv) -> tuple[str, str]:
    """The verdict's line and the line under it, stripped."""
    code, out, err = cli(*argv)
    assert code == 0, err
    first, second = out.splitlines()[:2]
    return first.strip(), second.strip()


def withheld_json(*argv) -> dict:
    code, out, err = cli(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_a_log_that_shows_vllm_refusing_is_never_answered_with_its_own_deployment():
    verdict, needed = head("--from-log", GPT_OSS, "--gpu", "h100-sxm-80gb")
    assert verdict == ("Verdict                                      Does not fit: vLLM will not start: one request of "
                       "131,072 tokens needs more KV cache than the 1.71 GiB it has per GPU; the longest context it "
                       "can serve is 48,624 tokens.")
    assert needed == WITHHELD.format("vLLM", "the measured KV memory of 1.71 GiB per GPU")
    assert "H100" not in needed
    data = withheld_json("--from-log", GPT_OSS, "--gpu", "h100-sxm-80gb")
    assert data["fits"] is False and "plan_best" not in data
    assert data["plan_best_withheld"] == \
        "the plan sizes from vLLM's estimates, not the measured KV memory of 1.71 GiB per GPU"


def test_a_log_that_contradicts_the_card_names_no_deployment():
    verdict, needed = head("--from-log", GEMMA, "--gpu", "h100-sxm-80gb")
    assert verdict.endswith("the KV memory and these inputs contradict each other (check the GPU, the model and "
                            "the layout it was measured with).")
    assert needed == WITHHELD.format("SGLang", "the measured KV memory of 108.24 GiB per GPU")
    # On the H200 it was measured on, it fits: no pointer at all.
    verdict, needed = head("--from-log", GEMMA, "--gpu", "h200-141gb")
    assert verdict.startswith("Verdict") and "Fits as SGLang allocates: 1 request of 8,192 tokens (up to 101.87" \
        in verdict and not needed.startswith("What you need")


def test_a_measured_kv_memory_on_another_gpu_is_not_sized_by_the_plan():
    # The L4 log's 4.75 GiB on a B200 (the GPU of a link the log does not override).
    verdict, needed = head("--from-log", LLAMA_L4, "--gpu", "b200")
    assert verdict.endswith("Does not fit: vLLM holds 1.22 requests of 32,000 tokens at once, not 128: the rest wait.")
    assert needed == WITHHELD.format("vLLM", "the measured KV memory of 4.75 GiB per GPU")
    # The same KV memory given by hand (--kv-memory-gib), without a log: the same clause.
    verdict, needed = head("--model", "meta-llama/Llama-3.1-8B", "--gpu", "l4", "--engine", "vllm",
                           "--context", "32000", "--batch", "128", "--kv-memory-gib", "4.75")
    assert verdict.endswith("vLLM holds 1.22 requests of 32,000 tokens at once, not 128: the rest wait.")
    assert needed == WITHHELD.format("vLLM", "the measured KV memory of 4.75 GiB per GPU")


def test_an_edit_re_estimated_from_the_logs_parts_is_not_sized_by_the_plan():
    # --memory-utilization 0.95 over the log's 0.92: the KV memory is the log's weights and
    # overhead moved by the edit (5.41 GiB), still the log's measurements, not the plan's estimate.
    verdict, needed = head("--from-log", LLAMA_L4, "--gpu", "l4", "--memory-utilization", "0.95")
    assert verdict.endswith("Does not fit: vLLM holds 1.39 requests of 32,000 tokens at once, not 128: the rest wait.")
    assert needed == WITHHELD.format("vLLM", "the log's measurements")


def test_the_pointer_never_names_the_deployment_the_verdict_refuses():
    # --gpu-memory-gib 16 on an H100: vLLM cannot start Llama 3.1 8B (14.96 GiB of weights). The
    # plan drops gpu-memory-gib and finds the same 1 x H100 fits 54 requests at the card's own
    # memory; the pointer named it ("1 x NVIDIA H100 SXM 80GB (tp 1) fits 54 requests; fewest
    # GPUs: ..."), the deployment the verdict had just refused. It names the next row instead.
    args = ("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--gpu-memory-gib", "16",
            "--engine", "vllm")
    verdict, needed = head(*args)
    assert verdict.endswith("Does not fit: vLLM will not start: the weights and its overhead leave no memory for "
                            "the cache (1.76 GiB short per GPU).")
    assert needed == ("What you need: 1 x AMD Instinct MI355X 288GB (tp 1) fits 246 requests; "
                      "kvcalc --plan for every GPU")
    values, errors = parse_options({name[2:]: value for name, value in zip(args[::2], args[1::2])})
    assert not errors
    found = planner.plan(values)
    h100 = [row.words() for row in found.rows if row.gpu == "h100-sxm-80gb"]
    assert h100 == ["1 x NVIDIA H100 SXM 80GB (tp 1) fits 54 requests"]       # what was named before
    assert pointer(found, values) == "1 x AMD Instinct MI355X 288GB (tp 1) fits 246 requests"
    # Another deployment of the same GPU type is named as before (2 x H100 asked for).
    assert pointer(found, dict(values, gpus=2, tp=2)) == \
        "1 x NVIDIA H100 SXM 80GB (tp 1) fits 54 requests; fewest GPUs: 1 x AMD Instinct MI355X 288GB (tp 1) fits " \
        "246 requests"
