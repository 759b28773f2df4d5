"""The dummy forward's peak of vLLM's profiling run (engines/vllm/profile.py forward_peak), checked against
real logs (tests/fixtures/logs, each URL in SOURCES.md).

What the eager code holds per token on one rank at the MLP (read in the 0.8.3 wheel; the same lines in 0.10.2
and 0.26.0): the model loop's layer input (Qwen2Model.forward keeps `hidden_states` bound while the layer runs),
the residual and the MLP's input, which fused_add_rms_norm normalizes in place (layers/layernorm.py): 3 hidden
widths. Qwen2MLP.forward (models/qwen2.py) binds gate_up (2 x MLP / tp) and its activation (MLP / tp) through
down_proj, whose output RowParallelLinear (layers/linear.py) keeps while the all-reduce fills a new tensor
(device_communicators/pynccl.py all_reduce: torch.empty_like): 5 hidden widths at tp > 1, 4 at tp 1.
LlamaMLP.forward (models/llama.py) rebinds x, so gate_up is freed once activated: on V0 (eager) the peak is
the activation's, or down_proj's all-reduce where the hidden width passes MLP / tp.
"""

from kvcalc.engines.releases import release as parse_release
from kvcalc.engines.vllm import profile
from kvcalc.evaluation import evaluate
from kvcalc.readers.hfconfig import parse_config_text

from support import FIXTURES

LOGS = FIXTURES / "logs"
GIB = 1 << 30


def model_of(values: dict):
    """The model and the release (with its engine: V0 where --vllm-engine v0 chose it) the inputs resolve to."""
    e = evaluate(values)
    assert e.ok, e.errors
    return e.scenario.model, e.scenario.settings.release


def text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def test_qwen2_at_tp_2_holds_five_hidden_widths_on_a_worker_that_runs_no_sampler():
    """vllm-qwen2.5-32b-2xl40s-tp2-10k-v0-v0.8.2.log (V0, tp 2, max_model_len 10,000 = max_num_batched_tokens)
    prints "PyTorch activation peak memory takes 1.26GiB" on the second rank, a VllmWorkerProcess, which runs the
    forward but no sampler (V0 samples on the driver). Qwen2.5-32B: hidden 5,120, MLP 27,648 / 2 = 13,824 a rank:
    10,000 x 2 B x (3 x 13,824 + 5 x 5,120) = 1,341,440,000 B, plus the cuBLAS workspace of an L40S (compute
    capability 8.9: 8,519,680 B) = 1.257 GiB. Four widths (no all-reduce output) would print 1.16, six 1.35."""
    line = "(VllmWorkerProcess pid=3280379) INFO 04-02 10:20:54 worker.py:266] model weights take 30.71GiB; " \
           "non_torch_memory takes 0.30GiB; PyTorch activation peak memory takes 1.26GiB"
    assert line in text("vllm-qwen2.5-32b-2xl40s-tp2-10k-v0-v0.8.2.log")
    model, v0 = model_of({"engine": "vllm", "engine-version": "0.8.2", "model": "Qwen/Qwen2.5-32B", "gpu": "l40s-48gb",
                      "gpus": "2", "tp": "2", "context": "10000", "vllm-engine": "v0"})
    assert (model.hidden_size, model.mlp_size) == (5120, 27648)
    forward, how = profile.forward_peak(model, v0, 2, 10_000)
    assert forward == 10_000 * 2 * (3 * 13_824 + 5 * 5_120) == 1_341_440_000 and how == ""
    assert round((forward + profile.CUBLAS_WORKSPACE_BEFORE_HOPPER) / GIB, 2) == 1.26
    for rows, shown in ((4, 1.16), (6, 1.35)):
        assert round((10_000 * 2 * (3 * 13_824 + rows * 5_120) + 8_519_680) / GIB, 2) == shown


def test_the_0_8_3_qwen2_5_vl_72b_log_is_too_low_for_a_forward_over_32768_tokens():
    """vllm-qwen2.5-vl-72b-4xa100-40gb-tp4-util095-v0-v0.8.3.log prints 2.51 GiB on every rank at tp 4. Over
    32,768 tokens the Qwen2.5-72B text model (hidden 8,192, MLP 29,568 / 4 = 7,392 a rank) holds 5 widths + 3 x
    7,392 = 3.85 GiB by the count the 0.8.2 log above confirms, and no eager forward holds less than the layer
    input, residual, MLP input, gate_up and its activation (3 x 8,192 + 3 x 7,392 widths): 2.85 GiB, past the
    printed 2.51 too. So that run's forward was shorter than 32,768 tokens (at most 21,343 by this count): the
    miss is the dummy prompt's length, not the forward's widths."""
    assert "PyTorch activation peak memory takes 2.51GiB" in text(
        "vllm-qwen2.5-vl-72b-4xa100-40gb-tp4-util095-v0-v0.8.3.log")
    model, v0 = model_of({"engine": "vllm", "engine-version": "0.8.3", "model": "Qwen/Qwen2.5-72B", "gpu": "a100-sxm-40gb",
                      "gpus": "4", "tp": "4", "context": "4096", "vllm-engine": "v0"})
    forward, _ = profile.forward_peak(model, v0, 4, 32_768)
    assert forward == 32_768 * 2 * (3 * 7_392 + 5 * 8_192) == 4_137_680_896
    printed = 251 * GIB // 100
    assert 32_768 * 2 * (3 * 8_192 + 3 * 7_392) == 3_063_939_072 > printed
    assert printed // (2 * (3 * 7_392 + 5 * 8_192)) == 21_343


def test_qwen2_vl_2b_forward_is_too_small_to_hold_the_missing_0_6_gib():
    """vllm-qwen2-vl-2b-rtx4080-util080-4k-v0.10.2.log prints 2.65 GiB. Its forward over the default 2,048 tokens
    (hidden 1,536, MLP 8,960, tp 1) is 2,048 x 2 B x (3 x 8,960 + 4 x 1,536) = 135,266,304 B, 0.13 GiB: the
    0.6 GiB our estimate lacks there cannot be the forward's (four times it is still under 0.6 GiB); it is in
    the encoder's pass over its 16,384-token image (engines/vllm/encoder_profile.py)."""
    assert "Model loading took 4.1513 GiB" in text("vllm-qwen2-vl-2b-rtx4080-util080-4k-v0.10.2.log")
    config = parse_config_text((FIXTURES / "hf" / "Qwen__Qwen2-VL-2B-Instruct.json").read_text(encoding="utf-8"))
    model, v1 = model_of({"engine": "vllm", "engine-version": "0.10.2", "hf-config": config, "gpu-memory-gib": "15.99",
                      "context": "4096", "memory-utilization": "0.8"})
    forward, _ = profile.forward_peak(model, v1, 1, 2_048)
    assert forward == 2_048 * 2 * (3 * 8_960 + 4 * 1_536) == 135_266_304
    assert 4 * forward < 6 * GIB // 10


def test_a_llama_mlp_on_v0_binds_at_its_all_reduce_where_hidden_passes_mlp_over_tp():
    """LlamaMLP frees gate_up once activated. vllm-llama3-8b-h100-tp1-breakdown-v0.6.5dev.log (V0, 8,192 tokens,
    tp 1) takes the activation's point: 8,192 x 2 B x (3 x 4,096 + 3 x 14,336) = 905,969,664 B, under its
    sampler (the printed 1.26 GiB is the driver's sampler warm-up). At tp 8 a Llama-3.1-70B rank (hidden 8,192,
    MLP 28,672 / 8 = 3,584) binds at down_proj's all-reduce instead: 3 + 2 widths and the activated input,
    44,544 a token against the activation's 35,328 (no public log prints this layout; the code's own count). The
    V1 engine compiles the model (torch.compile), whose Inductor frees the activated input after down_proj's
    matmul: there the activation's point binds."""
    assert "PyTorch activation peak memory       1.26GiB" in text("vllm-llama3-8b-h100-tp1-breakdown-v0.6.5dev.log")
    small, v0 = model_of({"engine": "vllm", "engine-version": "0.6.5", "model": "meta-llama/Llama-3.1-8B",
                      "gpu": "h100-sxm-80gb", "context": "8192"})
    assert profile.forward_peak(small, v0, 1, 8_192)[0] == 8_192 * 2 * (3 * 4_096 + 3 * 14_336) == 905_969_664
    big, _ = model_of({"engine": "vllm", "engine-version": "0.6.5", "model": "meta-llama/Llama-3.1-70B",
                    "gpu": "h100-sxm-80gb", "gpus": "8", "tp": "8", "context": "8192"})
    assert (big.hidden_size, big.mlp_size) == (8192, 28672)
    assert profile.forward_peak(big, v0, 8, 8_192)[0] == 8_192 * 2 * (5 * 8_192 + 3_584) == 729_808_896
    assert profile.forward_peak(big, parse_release("0.11.0"), 8, 8_192)[0] == 8_192 * 2 * (3 * 8_192 + 3 * 3_584)
