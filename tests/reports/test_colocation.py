"""Several models on one GPU or node (issue 41, part 4b: reports/colocation, `kvcalc --also`).

The acceptance, worked by hand: Llama 3.1 8B Instruct and Qwen3 14B at --gpu-memory-utilization
0.45 each on one H100 SXM 80GB, vLLM 0.33.0 (the newest modelled), 8,192 tokens x 16 requests.
  the memory vLLM multiplies   85,061,827,297 B (data/gpus.json torch_memory_bytes: 79.22 GiB)
  each server's share          ceil(85,061,827,297 x 0.45) = ceil(38,277,822,283.65)
                                                           = 38,277,822,284 B (0.14.0 on: math.ceil)
  Llama 8B's KV memory         38,277,822,284 - 16,094,076,928 loaded weights - 1,205,938,688
                               overhead (vLLM's profile estimate)   = 20,977,806,668 B = 19.54 GiB:
                               19 requests of 8,192 tokens (it prints 19.54x)
  Qwen3 14B's KV memory        38,277,822,284 - 29,547,644,928 - 1,517,880,064 = 7,212,297,292 B
                               = 6.72 GiB: 5 requests (5.37x), fewer than the 16 asked
  held, each                   38,277,822,284 + 268,435,456 CUDA context (engines/vllm/non_torch.py
                               CUDA_CONTEXT, outside its start-up snapshot) = 38,546,257,740 B
  together                     77,092,515,480 B of 85,061,827,297 B: 7,969,311,817 B (7.42 GiB) left
The shares 0.45 + 0.45 = 0.90 <= 1: they fit together; 0.6 + 0.6 = 1.2 is refused.
"""

import json
from fractions import Fraction

import pytest

from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.inputs.options import parse_options, server_sets
from kvcalc.reports.colocation import colocate, colocate_raw, kv_bytes, requests_held, server_inputs, to_json, to_text
from kvcalc.reports.link import decode, encode
from kvcalc.units import GIB, MIB

from support import FIXTURES, cli

H100_TORCH = 85_061_827_297
SHARE_045 = 38_277_822_284
VLLM_CONTEXT = 256 * MIB
SGLANG_CONTEXT = 390 * MIB
L8 = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "h100-sxm-80gb", "engine": "vllm",
      "memory-utilization": "0.45", "context": "8192", "batch": "16"}
Q14 = {"model": "Qwen/Qwen3-14B", "memory-utilization": "0.45"}
ARGV = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100-sxm-80gb", "--engine", "vllm",
        "--memory-utilization", "0.45", "--context", "8192", "--batch", "16"]


def test_two_models_on_one_h100_each_have_their_own_figures_and_fit_together():
    found = colocate(L8, [Q14])
    one, two = found.servers
    assert SHARE_045 == -(-H100_TORCH * 45 // 100)
    # Each server's figures are its own single view's at 0.45 (the other's share takes nothing of it).
    assert one.evaluation.engine == evaluate(L8).engine
    assert two.evaluation.engine == evaluate({**L8, **Q14}).engine
    assert one.evaluation.engine.kv_budget_bytes_per_gpu == SHARE_045 - 16_094_076_928 - 1_205_938_688 \
        == 20_977_806_668
    assert two.evaluation.engine.kv_budget_bytes_per_gpu == SHARE_045 - 29_547_644_928 - 1_517_880_064 \
        == 7_212_297_292
    assert (one.evaluation.capacity, two.evaluation.capacity) == (19, 5)
    assert round(20_977_806_668 / GIB, 2) == 19.54 and round(7_212_297_292 / GIB, 2) == 6.72
    # Server 2 takes server 1's context and batch, its engine and release.
    assert two.values["context"] == "8192" and two.values["batch"] == "16" and two.values["engine"] == "vllm"
    assert (one.share, two.share) == (Fraction(45, 100), Fraction(45, 100))
    assert one.held_bytes == two.held_bytes == SHARE_045 + VLLM_CONTEXT == 38_546_257_740
    assert two.in_use_bytes == one.held_bytes
    together = found.together
    assert together.fits and together.short_server is None
    assert together.memory_bytes == H100_TORCH and together.held_bytes == 77_092_515_480
    assert together.left_bytes == 7_969_311_817
    assert together.words.startswith("They fit together on each NVIDIA H100 SXM 80GB:")
    assert "7,969,311,817 B (7.42 GiB) left" in together.words
    # Started together, the 14B's 6.72 GiB holds 5 of its 16 requests: the joint verdict says so too.
    assert together.waiting == (2,)
    assert together.words.endswith(" Server 2 (Qwen3 14B) holds 5 requests of the 16 asked at once: the rest wait.")


def test_one_launch_command_each_on_its_own_port():
    one, two = colocate(L8, [Q14]).servers
    assert (one.port, two.port) == (8000, 8001)
    # Served as typed: the Instruct repo, an alias of the Llama 3.1 8B preset, not its base.
    assert one.command.startswith("vllm serve meta-llama/Llama-3.1-8B-Instruct ") and one.command.endswith(" --port 8000")
    assert two.command.startswith("vllm serve Qwen/Qwen3-14B ") and two.command.endswith(" --port 8001")
    assert "--gpu-memory-utilization 0.45" in one.command and "--gpu-memory-utilization 0.45" in two.command


def test_shares_past_one_are_refused_naming_the_server_and_the_sum():
    with pytest.raises(InputError) as e:
        colocate({**L8, "memory-utilization": "0.6"}, [{**Q14, "memory-utilization": "0.6"}])
    assert e.value.field == "also"
    assert e.value.message == (
        "server 2's memory-utilization 0.6 (yours) takes the shares past 1: 0.6 (server 1) + 0.6 (server 2) = 1.2; "
        "vLLM gives each server its share of the whole GPU's memory, so the shares of the servers beside each other "
        "add up to 1 at most")


def test_a_default_share_counts_too():
    """No --gpu-memory-utilization: vLLM 0.33.0's default 0.92 (release.py default_utilization)."""
    with pytest.raises(InputError, match=r"0\.45 \(yours\) takes the shares past 1: 0\.92 \(server 1\) \+ 0\.45 "
                                         r"\(server 2\) = 1\.37"):
        colocate({k: v for k, v in L8.items() if k != "memory-utilization"}, [Q14])


def test_shares_that_add_up_to_one_do_not_fit_beside_two_cuda_contexts():
    """0.5 + 0.5: each holds ceil(85,061,827,297 / 2) = 42,530,913,649 B and a context of 268,435,456 B:
    85,598,698,210 B, 536,870,913 B past the memory; vLLM's start-up check refuses server 2."""
    found = colocate({**L8, "memory-utilization": "0.5", "batch": "1"}, [{**Q14, "memory-utilization": "0.5"}])
    together = found.together
    assert not together.fits and together.short_server == 2
    assert together.held_bytes == 2 * (42_530_913_649 + VLLM_CONTEXT)
    assert -together.left_bytes == 536_870_913
    assert "server 2 (Qwen3 14B)" in together.words and "start-up check refuses" in together.words


def test_a_model_too_big_for_its_share_is_that_servers_refusal():
    with pytest.raises(InputError) as e:
        colocate({**L8, "memory-utilization": "0.6"}, [{"model": "meta-llama/Llama-3.1-70B", "memory-utilization": "0.2"}])
    assert e.value.field == "also"
    assert e.value.message.startswith("server 2 (Llama 3.1 70B): Does not fit: vLLM will not start: the weights")


def test_a_key_a_server_does_not_set_is_one_line_naming_it_and_the_allowed():
    with pytest.raises(InputError) as e:
        server_sets("model:Qwen/Qwen3-14B,mig:1g.10gb")
    assert e.value.field == "also"
    assert e.value.message == ("server 2: 'mig' is not an input a server sets for itself; allowed: model, engine, "
                               "engine-version, memory-utilization, context, batch, kv-dtype, weights-dtype, tp, pp "
                               "(the GPU, GPU count and node are server 1's)")
    with pytest.raises(InputError, match="server 3: give its model"):
        server_sets("model:Qwen/Qwen3-14B;batch:2")
    with pytest.raises(InputError, match="server 2: memory-utilization: 1.5 is too large"):
        server_sets("model:Qwen/Qwen3-14B,memory-utilization:1.5")


def test_the_also_option_keeps_its_sets_for_a_link():
    values, errors = parse_options({"also": " model:Qwen/Qwen3-14B , memory-utilization:0.45 ;model:Qwen/Qwen3-8B"})
    assert errors == []
    assert values["also"] == "model:Qwen/Qwen3-14B,memory-utilization:0.45;model:Qwen/Qwen3-8B"
    found = colocate_raw({**L8, "memory-utilization": "0.25", "also": values["also"] + ",memory-utilization:0.25"})
    assert [s.values["model"] for s in found.servers] == [L8["model"], "Qwen/Qwen3-14B", "Qwen/Qwen3-8B"]
    assert found.together.fits          # 0.25 + 0.45 + 0.25 = 0.95, and three CUDA contexts of 0.25 GiB
    # A server that sets no share takes vLLM 0.33.0's default 0.92: past 1 with the others.
    with pytest.raises(InputError, match=r"server 3's memory-utilization 0\.92 \(vLLM 0\.33\.0's default\) takes "
                                         r"the shares past 1: 0\.25 \(server 1\) \+ 0\.45 \(server 2\) \+ 0\.92"):
        colocate_raw({**L8, "memory-utilization": "0.25", "also": "model:Qwen/Qwen3-14B,memory-utilization:0.45;"
                                                                  "model:Qwen/Qwen3-8B"})


def test_a_release_that_charges_other_processes_is_refused():
    """vLLM 0.8.5 (V1, gpu_worker.py before PR #19312) counts other processes' memory as its own."""
    with pytest.raises(InputError) as e:
        colocate({**L8, "engine-version": "0.8.5"}, [Q14])
    assert e.value.field == "engine-version"
    assert e.value.message.startswith("server 1: vLLM 0.8.5 counts the memory other processes hold as its own")


def test_sglang_sizes_a_later_server_in_what_the_earlier_leave_free():
    """SGLang's --mem-fraction-static is of the memory free at its start (engines/sglang/engine.py
    usable_memory; its CUDA context CONTEXT_BYTES = 390 MiB = 408,944,640 B comes first):
      server 1 (Llama 8B, 0.4): int((85,061,827,297 - 408,944,640) x 0.4) = 33,861,153,062 B,
                                held with its context 34,270,097,702 B
      server 2 (Qwen3 14B, 0.8) starts with 34,270,097,702 + 408,944,640 = 34,679,042,342 B in use:
                                int((85,061,827,297 - 34,679,042,342) x 0.8) = 40,306,227,964 B,
                                held 40,715,172,604 B
      together 74,985,270,306 B of 85,061,827,297 B: they fit (0.4 + 0.8 is no sum here)."""
    first = {**L8, "engine": "sglang", "memory-utilization": "0.4", "batch": "4"}
    found = colocate(first, [{"model": "Qwen/Qwen3-14B", "memory-utilization": "0.8"}])
    one, two = found.servers
    assert one.held_bytes == int((H100_TORCH - SGLANG_CONTEXT) * Fraction(4, 10)) + SGLANG_CONTEXT == 34_270_097_702
    assert two.values["memory-in-use-gib"] * GIB == 34_679_042_342
    assert two.held_bytes == int((H100_TORCH - 34_679_042_342) * Fraction(8, 10)) + SGLANG_CONTEXT == 40_715_172_604
    # Server 2's figures are its single view's with that memory in use.
    assert two.evaluation.engine == evaluate({**first, "model": "Qwen/Qwen3-14B", "memory-utilization": "0.8",
                                              "memory-in-use-gib": Fraction(34_679_042_342, GIB)}).engine
    assert found.together.fits and found.together.held_bytes == 74_985_270_306
    # What server 1's fraction leaves free holds its CUDA graphs and activations, not sized here.
    assert found.together.words.endswith(" Not counted: the CUDA graphs and activations of server 1, in the memory "
                                         "its fraction leaves free, which the servers started after it then do not "
                                         "find.")
    assert (one.port, two.port) == (30000, 30001)
    # At 0.45 each, server 2's 0.45 of what is left does not hold Qwen3 14B's weights: its own refusal.
    with pytest.raises(InputError, match=r"server 2 \(Qwen3 14B\): Does not fit: SGLang will not start.* sized with "
                                         r"the 35\.86 GiB the servers before it hold in use"):
        colocate({**first, "memory-utilization": "0.45"}, [Q14])


def test_llama_cpp_servers_hold_what_they_need():
    """llama.cpp takes no share: each holds its weights, its cells and its compute buffers. Qwen3 8B
    at 8,192 tokens: 2 x 36 layers x 8 KV heads x 128 x 2 B = 147,456 B a token, 1,207,959,552 B of
    cells; Qwen3 14B 2 x 40 x 8 x 128 x 2 = 163,840 B a token, 1,342,177,280 B."""
    found = colocate({"model": "Qwen/Qwen3-8B", "gpu": "h100-sxm-80gb", "engine": "llama.cpp"},
                     [{"model": "Qwen/Qwen3-14B"}])
    one, two = found.servers
    for server, cells in ((one, 8192 * 147_456), (two, 8192 * 163_840)):
        engine, result = server.evaluation.engine, server.evaluation.result
        assert engine.kv_bytes_on_busiest_gpu == cells
        assert server.held_bytes == result.weights_bytes_per_gpu + cells + engine.overhead_bytes_per_gpu
        assert server.share is None
    assert found.together.fits and found.together.held_bytes == one.held_bytes + two.held_bytes
    assert (one.port, two.port) == (8080, 8081) and one.command.startswith("llama-server ")
    # Each shows the cells it allocates for the one request it was asked for, not the KV memory
    # its single view alone would leave it (the review found 51.82 GiB shown for a 14B).
    assert (kv_bytes(one), kv_bytes(two)) == (1_207_959_552, 1_342_177_280)
    assert two.evaluation.budget_bytes_per_gpu > 40 * 2 ** 30
    assert (requests_held(one), requests_held(two)) == (1, 1)


def test_the_exact_ideal_sums_what_each_needs_within_its_share():
    found = colocate({**L8, "engine": "exact"}, [{**Q14, "engine": "exact"}])
    for server in found.servers:
        result = server.evaluation.result
        needs = result.weights_bytes_per_gpu + result.kv_bytes_per_gpu
        assert server.held_bytes == min(needs, result.usable_bytes_per_gpu)
        assert server.command is None
    assert found.together.memory_bytes == 85_520_809_984       # the ideal's: nvidia-smi's total


def test_the_cli_prints_each_server_the_verdict_and_the_commands():
    code, out, err = cli(*ARGV, "--also", "model:Qwen/Qwen3-14B,memory-utilization:0.45")
    assert code == 0, err
    assert out.startswith("Server 1: Llama 3.1 8B on vLLM 0.33.0, memory share 0.45\n")
    assert "  KV memory   19.54 GiB per GPU: holds 19 requests of 8,192 tokens at once (asked 16)" in out
    assert "  KV memory   6.72 GiB per GPU: holds 5 requests of 8,192 tokens at once (asked 16)" in out
    assert "Together: They fit together on each NVIDIA H100 SXM 80GB" in out
    commands = [line for line in out.splitlines() if line.startswith("  vllm serve")]
    assert len(commands) == 2 and commands[0].endswith("--port 8000") and commands[1].endswith("--port 8001")
    assert out == to_text(colocate(L8, [Q14]))


def test_the_cli_json_gives_servers_and_together():
    code, out, err = cli(*ARGV, "--also", "model:Qwen/Qwen3-14B,memory-utilization:0.45", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert [s["server"] for s in data["servers"]] == [1, 2]
    assert [s["max_concurrency"] for s in data["servers"]] == [19, 5]
    assert data["together"]["fits"] is True and data["together"]["left_bytes_per_gpu"] == 7_969_311_817
    assert data == json.loads(json.dumps(to_json(colocate(L8, [Q14]))))


def test_the_cli_repeats_also_and_refuses_in_one_line():
    code, out, err = cli(*ARGV, "--memory-utilization", "0.3", "--also", "model:Qwen/Qwen3-14B,memory-utilization:0.45",
                         "--also", "model:meta-llama/Llama-3.2-1B,memory-utilization:0.2")
    assert code == 0, err
    assert "Server 3: Llama 3.2 1B" in out and out.count("--port 800") == 3
    code, out, err = cli(*ARGV[:-4], "--memory-utilization", "0.6", "--also",
                         "model:Qwen/Qwen3-14B,memory-utilization:0.6")
    assert code == 2 and out == ""
    assert err.startswith("kvcalc: error: --also: server 2's memory-utilization 0.6 (yours) takes the shares past 1: "
                          "0.6 (server 1) + 0.6 (server 2) = 1.2;") and err.count("\n") == 1
    code, out, err = cli(*ARGV, "--also", "model:Qwen/Qwen3-14B,gpu:h200")
    assert code == 2 and err.startswith("kvcalc: error: --also: server 2: 'gpu' is not an input a server sets")
    code, out, err = cli(*ARGV, "--also", "model:Qwen/Qwen3-14B,memory-utilization:0.45", "--launch", "vllm")
    assert code == 2 and "leave out --plan, --launch and --format" in err
    # A failed start's log is read alone: --also beside it is refused, not dropped unsaid.
    code, out, err = cli("--from-log", str(FIXTURES / "logs" / "vllm-gpt-oss-120b-h100-refusal.log"), "--also",
                         "model:Qwen/Qwen3-14B")
    assert (code, out) == (2, "") and err == ("kvcalc: error: --also: sizes servers from their inputs, not beside a "
                                              "log's measured start: leave out --from-log, or --also\n")


def test_without_also_nothing_changes():
    assert cli(*ARGV)[1].startswith("Verdict ")


def test_a_link_carries_the_servers_and_the_cli_reads_it():
    """The link's `also` keeps its commas percent-encoded and its sets apart with `;`."""
    fragment = encode({**L8, "also": "model:Qwen/Qwen3-14B,memory-utilization:0.45"})
    assert "also=model:Qwen/Qwen3-14B%2Cmemory-utilization:0.45" in fragment
    assert decode(fragment) == ({**L8, "also": "model:Qwen/Qwen3-14B,memory-utilization:0.45"}, [])
    code, out, err = cli("--link", "#" + fragment)
    assert code == 0, err
    assert out == to_text(colocate(L8, [Q14]))


def test_memory_in_use_is_the_servers_own_to_say():
    with pytest.raises(InputError, match="memory each finds in use at its start is what the servers started before"):
        colocate({**L8, "engine": "sglang", "memory-in-use-gib": "2"}, [Q14])


def test_a_server_naming_server_1_s_engine_keeps_its_release():
    # engine:vllm is server 1's engine: its release (0.10.0) stays; another engine drops it.
    assert server_inputs({"engine": "vllm", "engine-version": "0.10.0"}, {"engine": "vllm"})["engine-version"] == "0.10.0"
    assert "engine-version" not in server_inputs({"engine": "vllm", "engine-version": "0.10.0"}, {"engine": "sglang"})
    assert server_inputs({"engine": "vllm", "engine-version": "0.10.0"}, {})["engine-version"] == "0.10.0"


def test_an_ideal_server_beside_an_engine_s_is_weighed_on_pytorch_s_total():
    # The ideal takes nvidia-smi's 85,520,809,984 B; vLLM sizes server 2 on PyTorch's
    # 85,061,827,297 B. Together they are weighed on the smaller, not 458,982,687 B more.
    found = colocate({**L8, "engine": "exact"}, [{**Q14, "engine": "vllm"}])
    assert found.together.memory_bytes == H100_TORCH == 85_061_827_297


def test_a_later_server_whose_layout_misses_the_shared_gpu_count_is_told_to_fix_its_own():
    with pytest.raises(InputError) as e:
        colocate({**L8, "gpus": "2", "memory-utilization": "0.4"}, [{**Q14, "tp": "1", "memory-utilization": "0.4"}])
    assert e.value.field == "also"
    assert e.value.message == ("server 2: gpus: gpus=2 does not equal tp x pp = 1 x 1; use 1 GPU or change tp (gpus is "
                               "every server's, from server 1: set this server's own inputs to match it)")
