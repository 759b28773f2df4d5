"""Issue 26's "done when": a production deployment sized whole, each part's memory, the verdict
and the launch flags, through the CLI as a user runs it; and its bad input, one line naming the
field, exit 2. The parts' own worked figures are pinned in test_draft, test_lora, test_encoder,
test_offload and test_prefix_hits; here they are read back together, as one answer."""

import json

import pytest

from support import cli

DEEPSEEK_MTP = ["--model", "deepseek-ai/DeepSeek-V3", "--gpu", "h200-141gb", "--gpus", "8", "--engine", "vllm",
                "--mtp", "--offload-gib", "256", "--offload-link", "pcie5", "--context", "32768"]
LLAMA_DRAFT_LORA = ["--model", "meta-llama/Llama-3.1-70B", "--gpu", "h100-sxm-80gb", "--gpus", "4", "--engine",
                    "vllm", "--draft-model", "meta-llama/Llama-3.2-1B", "--spec-tokens", "4", "--max-loras", "4",
                    "--max-lora-rank", "64"]


def answer(*argv) -> dict:
    code, out, err = cli(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


def launch(*argv) -> str:
    code, out, err = cli(*argv, "--launch", "vllm")
    assert code == 0, err
    return out.splitlines()[0]


def test_deepseek_v3_with_mtp_on_8_h200_and_256_gib_of_cpu_offload():
    """vLLM 0.33.0. The MTP head is one more MLA layer of (512 + 64) x 2 B = 1,152 B a token in
    the target's group (62 layers, 71,424 B a token); its weights per GPU are its decoder layer
    split over tp 8 plus eh_proj (2 x 7,168 x 7,168 x 2 B = 205,520,896 B) and three norms
    (43,008 B) whole: ceil(11,511,947,488 / 8) + 205,563,904 = 1,644,557,340 B. The host tier:
    256 x 2^30 B // round_up(71,424 B x 64 tokens, 4 KiB) = 274,877,906,944 // 4,571,136 =
    60,133 chunks of 64 tokens = 3,848,512 tokens, 117 requests of 32,768; one request back over
    PCIe Gen5 x16 (63.0 GB/s) moves 32,768 x 71,424 = 2,340,421,632 B."""
    d = answer(*DEEPSEEK_MTP)
    assert d["draft_kv_bytes_per_token"] == 1_152 and d["kv_bytes_per_token"] == 71_424
    assert d["draft_weights_bytes_per_gpu"] == 1_644_557_340
    assert d["draft_kv_bytes_per_gpu"] == 1_152 * 32_768
    assert d["offload_tokens"] == 3_848_512 and d["offload_requests"] == 117
    assert d["serving"]["offload"]["offload_restore_bytes"] == 2_340_421_632
    # 2,340,421,632 B x 130 x 8 / (32e9 x 16 x 128) s, the link's peak: a lower bound.
    assert d["offload_restore_seconds"] == pytest.approx(2_340_421_632 * 130 * 8 / (32e9 * 16 * 128))
    assert "the MTP heads (1.53 GiB)" in d["verdict"] and "3,848,512 more tokens" in d["verdict"]
    command = launch(*DEEPSEEK_MTP)
    assert '"method": "mtp"' in command and "--kv-offloading-size 256 --kv-offloading-backend native" in command


def test_the_draft_and_its_weights_come_out_of_the_kv_memory():
    """What vLLM prints as "Model loading took" holds the target, the LoRA slots and the draft
    (gpu_model_runner.load_model, one DeviceMemoryProfiler around all three), so its KV memory is
    smaller by exactly the parts' bytes per GPU when the overhead estimate is the same."""
    bare = answer(*DEEPSEEK_MTP[:8], "--context", "32768")
    with_mtp = answer(*DEEPSEEK_MTP)
    if bare["overhead_bytes_per_gpu"] == with_mtp["overhead_bytes_per_gpu"]:
        assert bare["kv_budget_bytes_per_gpu"] - with_mtp["kv_budget_bytes_per_gpu"] == 1_644_557_340
    assert with_mtp["weights_bytes_per_gpu"] - bare["weights_bytes_per_gpu"] == 1_644_557_340


def test_llama_70b_with_a_1b_draft_and_4_lora_adapters():
    """Llama 3.2 1B drafts for Llama 3.1 70B (both 128,256 tokens): 1,235,814,400 parameters in
    bf16 = 2,471,628,800 B, 617,907,200 B a GPU at tp 4; its 16 layers of 8 kv heads x 64 add
    16 x 2 x 2 x 64 x 2 B = 8,192 B a token per GPU. Four LoRA slots at rank 64 over the 70B's
    80 layers, its embedding and head: 3,558,080,512 B per GPU (test_lora has the module sums)."""
    d = answer(*LLAMA_DRAFT_LORA)
    assert d["draft_weights_bytes"] == 2_471_628_800 and d["draft_weights_bytes_per_gpu"] == 617_907_200
    assert d["draft_kv_bytes_per_token"] == 8_192
    assert d["lora_bytes_per_gpu"] == 3_558_080_512
    assert d["serving"]["lora"]["max_loras"] == 4 and d["serving"]["lora"]["max_lora_rank"] == 64
    assert d["fits"] is True and "the draft model (589.28 MiB) and the LoRA slots (3.31 GiB)" in d["verdict"]
    command = launch(*LLAMA_DRAFT_LORA)
    assert '"model": "meta-llama/Llama-3.2-1B"' in command and '"num_speculative_tokens": 4' in command
    assert command.endswith("--enable-lora --max-loras 4 --max-lora-rank 64")


def test_every_part_in_the_table():
    code, out, _ = cli(*LLAMA_DRAFT_LORA, "--explain")
    assert code == 0
    for row in ("Draft weights per GPU", "Draft KV per GPU", "LoRA slots per GPU", "Speculative decoding:",
                "LoRA adapters:"):
        assert row in out
    # The short answer keeps each part's headline row, not its arithmetic.
    code, short, _ = cli(*LLAMA_DRAFT_LORA)
    assert code == 0 and "Draft KV per GPU" in short and "LoRA slots per GPU" in short
    assert "Speculative decoding:" not in short


def test_the_plan_counts_the_parts_in_every_row():
    code, out, err = cli(*LLAMA_DRAFT_LORA, "--plan", "--plan-gpus", "h100-sxm-80gb", "--json")
    assert code == 0, err
    rows = json.loads(out)["plan"]
    fitting = [row for row in rows if row["fits"]]
    assert fitting and all(set(row["beside_weights_bytes_per_gpu"]) == {"draft", "lora"} for row in fitting)


@pytest.mark.parametrize("argv, field, words", [
    (["--prefix-tokens", "2048", "--prefix-hit-rate", "1.5"], "prefix-hit-rate", "too large"),
    (["--prefix-hit-rate", "0.5"], "prefix-hit-rate", "prefix-tokens"),
    (["--offload-gib", "-5"], "offload-gib", "at least 0"),
    (["--engine", "vllm", "--offload-gib", "600", "--host-memory-gib", "512"], "offload-gib", "host"),
    (["--draft-model", "Qwen/Qwen3-8B"], "draft-model", "vocabulary"),
    (["--spec-tokens", "3"], "spec-tokens", ""),
    (["--mtp"], "mtp", ""),
])
def test_bad_input_is_one_line_naming_the_field(argv, field, words):
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"kvcalc: error: --{field}: ")
    assert words in err
