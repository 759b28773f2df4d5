"""SGLang's defaults by release (app/kvcalc/engines/sglang/release.py): the chunk, the decode graph
batch and mem_fraction_static's reserve, term by term, as each release's server_args.py /
arg_groups/memory_hook.py adds them, checked against the public logs that print them
(tests/fixtures/logs/SOURCES.md names their URLs)."""

import re
from fractions import Fraction
from pathlib import Path

from kvcalc.engines import releases
from kvcalc.engines.sglang import engine as sglang, release as rules
from kvcalc.evaluation import evaluate
from kvcalc.readers import gpu_presets

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
H100 = gpu_presets.gpu("h100-sxm-80gb").memory_bytes          # nvidia-smi's 81,559 MiB
B200 = gpu_presets.gpu("b200-180gb").memory_bytes             # 183,359 MiB
H200 = gpu_presets.gpu("h200-141gb").memory_bytes
RTX4090 = gpu_presets.gpu("rtx-4090-24gb").memory_bytes


def r(text):
    return releases.release(text)


def chosen(version, memory, **launch):
    return rules.defaults(r(version), memory, rules.Launch(**launch))


def test_b200_tier_as_the_0_5_6_logs_print_it():
    """sglang-qwen2.5-vl-7b-b200-mfs-auto-nopcg-tp1-v0.5.6dev.log prints chunked_prefill_size=16384
    on one B200 (183,359 MiB, over 160 GiB: decode graphs up to a batch of 512).
    The reserve: 512 + 16,384 x 1.5 + 1/8 GiB + 512 x 2 = 26,240 MiB, so 0.857 before the
    multimodal share (prefill graphs are off by default in 0.5.6)."""
    text = (LOGS / "sglang-qwen2.5-vl-7b-b200-mfs-auto-nopcg-tp1-v0.5.6dev.log").read_text()
    pcg = (LOGS / "sglang-qwen2.5-vl-7b-b200-mfs-auto-pcg-tp1-v0.5.6dev.log").read_text()
    out = chosen("0.5.6", B200, multimodal=True)
    assert "chunked_prefill_size=16384" in text and out.chunk == 16384
    assert out.graph_bs == 512
    assert [m for _, m in out.terms] == [512, 24576, 128, 1024] and out.reserved_mib == 26240
    assert out.fraction == Fraction(857, 1000)
    # Its log (a dev build run with --enable-piecewise-cuda-graph, whose reserve no input names)
    # prints 0.7629746875 after the vision share 0.8965625: ours 0.7683, 0.71% over (6 / 851).
    assert "mem_fraction_static=0.7629746875" in pcg
    assert abs(out.fraction * Fraction(8965625, 10 ** 7) / Fraction("0.7629746875") - 1) == Fraction(6, 851)


def test_0_4_4_keys_the_fraction_on_tp_alone_as_the_gemma3_h200_log_shows():
    """sglang-gemma3-4b-it-h200-mfs088-tp1-v0.4.4.log (no --mem-fraction-static): 0.4.4 takes 0.88
    at tp 1 whatever the GPU (the larger-GPU branches came in 0.4.6), x 0.95 for a multimodal
    model. Memory pool: avail after weights 131.08 - (131.08 + 8.13) x (1 - 0.836) = 108.25 GiB;
    the log's K + V is 54.12 + 54.12 = 108.24 GiB."""
    text = (LOGS / "sglang-gemma3-4b-it-h200-mfs088-tp1-v0.4.4.log").read_text()
    assert "avail mem=131.08 GB, mem usage=8.13 GB" in text and "K size: 54.12 GB, V size: 54.12 GB" in text
    out = chosen("0.4.4", H200)
    assert out.fraction == Fraction(88, 100) and out.reserved_mib is None
    pool = Fraction("131.08") - (Fraction("131.08") + Fraction("8.13")) * (1 - out.fraction * Fraction(95, 100))
    assert abs(pool - 2 * Fraction("54.12")) < Fraction(2, 100)


def test_prefill_graphs_join_the_reserve_from_0_5_10():
    """0.5.9: --enable-piecewise-cuda-graph off by default, H100 tp 1: 512 + 12,288 + 128 + 512 =
    13,440 MiB, 0.835. 0.5.10 on (--disable-piecewise-cuda-graph): 58 sizes up to 8,192 tokens
    (8 of 4-32, 14 of 48-256, 8 of 288-512, 8 of 576-1,024, 12 of 1,280-4,096, 8 of 4,608-8,192)
    x 8 MiB = 464 more, 0.830; 0.5.13 clamps them to a 2,048 context (42 sizes, 0.831)."""
    assert chosen("0.5.9", H100).fraction == Fraction(835, 1000)
    assert len(rules.piecewise_sizes(8192)) == 58
    newer = chosen("0.5.10", H100)
    assert newer.reserved_mib == 13440 + 464 and newer.fraction == Fraction(830, 1000)
    assert chosen("0.5.12", H100, context=2048).fraction == Fraction(830, 1000)       # no clamp yet
    assert chosen("0.5.13", H100, context=2048).reserved_mib == 13440 + 42 * 8
    # MLA: 1.5 GiB instead; none for a multimodal model, DP attention, pp, ROCm or LoRA.
    assert chosen("0.5.23", H100, mla=True).reserved_mib == 13440 + 1536
    for off in ({"multimodal": True}, {"pp": 2}, {"platform": "rocm"}, {"lora": True},
                {"architecture": "Qwen3NextForCausalLM"}):
        launch = dict({"tp": 1, "pp": 1}, **off)
        assert not rules.piecewise_on(r("0.5.23"), rules.Launch(**launch)), off
    # 0.5.23 keeps it for the multimodal architectures it lists.
    assert rules.piecewise_on(r("0.5.23"), rules.Launch(multimodal=True, architecture="KimiK25ForConditionalGeneration"))


def test_small_gpu_tier_by_release():
    """The <35 GiB tier (RTX 4090, 24,564 MiB): 0.5.3-0.5.4 graph batch 16, 0.5.5-0.5.19 24 (chunk
    2,048); 0.5.20 on chunk 4,096 and batch 48 (160 from tp 4), with 50 prefill sizes."""
    assert (chosen("0.5.4", RTX4090).chunk, chosen("0.5.4", RTX4090).graph_bs) == (2048, 16)
    assert chosen("0.5.19", RTX4090).graph_bs == 24 and chosen("0.5.19", RTX4090, tp=4).graph_bs == 80
    new = chosen("0.5.20", RTX4090)
    assert (new.chunk, new.graph_bs, new.reserved_mib) == (4096, 48, 512 + 6144 + 128 + 96 + 50 * 8)
    assert chosen("0.5.20", RTX4090, tp=4).graph_bs == 160


def test_dp_attention_reserve_by_release():
    """--enable-dp-attention: 0.4.7.post1-0.5.2 reserve 4 GiB more (0.5.2 server_args.py);
    0.5.3 on (PR #10975) cuda_graph_max_bs x dp x 3 MiB, and x 1.5 more over a batch of 300: on
    8 H100s at dp 8 512 x 8 x 4.5 = 18,432 MiB, mem_fraction_static 0.592 (prefill graphs off)."""
    old = chosen("0.5.2", H100, tp=2, dp=2)
    assert old.reserved_mib == (9.5 + 2 / 2) * 1024 + 4096 and old.fraction == Fraction(818, 1000)
    wide = chosen("0.5.23", H100, tp=8, dp=8)
    assert ("DP attention's padding buffers: batch 512 x dp 8 x 4.5", 18432) in wide.terms
    assert wide.reserved_mib == 512 + 12288 + 1024 + 1024 + 18432 and wide.fraction == Fraction(592, 1000)
    small = chosen("0.5.23", H100, tp=2, dp=2)
    assert small.reserved_mib == 512 + 12288 + 256 + 512 + 256 * 2 * 3      # 1.5 GiB of DP padding


def test_eager_and_requests_and_no_memory():
    """0.5.16 on, --disable-cuda-graph captures neither phase: no graph terms (below the 10 GiB
    floor on an H100 at a 2,048 chunk). 0.5.23 keeps a default graph batch within
    --max-running-requests. No GPU memory known: 0.88, 0.95 from 0.5.20."""
    eager = chosen("0.5.16", H100, chunk=2048, enforce_eager=True)
    assert eager.reserved_mib == 10 * 1024 and eager.terms[-1][0].startswith("raised to the 10 GiB floor")
    assert chosen("0.5.15", H100, chunk=8192, enforce_eager=True).reserved_mib == 13440 + 464
    assert chosen("0.5.23", H100, requests=32).graph_bs == 32 and chosen("0.5.21", H100, requests=32).graph_bs == 256
    assert chosen("0.5.19", None).fraction == Fraction(88, 100) and chosen("0.5.20", None).fraction == Fraction(95, 100)


def test_the_engine_names_the_terms():
    """The engine's note shows the reserve as the release adds it, and the usable memory follows it."""
    e = evaluate({"model": "Qwen/Qwen3-8B", "gpu": "h100-sxm-80gb", "engine": "sglang", "engine-version": "0.5.23",
                  "context": "8192"})
    note = next(n for n in e.engine.notes if "reserves" in n)
    assert "arg_groups/memory_hook.py" in note and "464 (prefill CUDA graphs: 58 sizes up to 8,192 tokens x 8)" in note
    assert "= 13,904 MiB" in note and "= 0.830." in note
    assert sglang.memory_utilization(e.scenario, e.engine.prefill_chunk) == Fraction(830, 1000)


def _mem_usage(name):
    """Every rank's "Init torch distributed ends. mem usage=X GB" in a fixture, TP0's first."""
    text = (LOGS / name).read_text()
    ranks = re.findall(r"(TP\d+)\] Init torch distributed ends\..*?mem usage=([0-9.]+) GB", text)
    tp0 = next(Fraction(v) for rank, v in ranks if rank == "TP0")
    values = [Fraction(v) for _, v in ranks]
    return tp0, min(values), max(values), len(values)


def test_kimi_k25_on_mi355x_prints_the_fraction_0_5_8_derives():
    """sglang-kimi-k2.5-mi355x-tp8-rocm-mfs-auto-v0.5.8.post1.log (rocm/sgl-dev v0.5.8.post1, 8 x MI355X,
    no --mem-fraction-static) prints mem_fraction_static=0.8260405859375, chunked_prefill_size=16384 and
    cuda_graph_max_bs=512. 0.5.8 on 294,912 MiB at --tp-size 8: 512 + 16,384 x 1.5 + 8 / 8 GiB + 512 x 2
    = 27,136 MiB, round(267,776 / 294,912, 3) = 0.908; Kimi K2.5 is multimodal: SGLang's
    KimiK25VisionConfig reads 27 layers of 1,152 (its defaults: the checkpoint names them vt_*), so
    0.95 x (1 - 0.1 x (27 x 1,152^2 / (24 x 1,024^2) - 1)) = 0.909736328125 of it: 0.8260405859375."""
    text = (LOGS / "sglang-kimi-k2.5-mi355x-tp8-rocm-mfs-auto-v0.5.8.post1.log").read_text()
    assert "mem_fraction_static=0.8260405859375," in text and "chunked_prefill_size=16384," in text
    assert "cuda_graph_max_bs=512," in text
    mi355x = gpu_presets.gpu("mi355x-288gb")
    out = chosen("0.5.8.post1", mi355x.memory_bytes, tp=8, mla=True, multimodal=True, platform="rocm")
    assert (out.chunk, out.graph_bs, out.reserved_mib, out.fraction) == (16384, 512, 27136, Fraction(908, 1000))
    e = evaluate({"engine": "sglang", "engine-version": "0.5.8.post1", "model": "moonshotai/Kimi-K2.5",
                  "gpu": "mi355x-288gb", "gpus": "8", "tp": "8"})
    assert e.scenario.model.vision_shape == (27, 1152)
    fraction = sglang.memory_utilization(e.scenario, e.engine.prefill_chunk)
    assert fraction == Fraction(908, 1000) * Fraction(95, 100) * Fraction(9576171875, 10 ** 10)
    assert fraction == Fraction("0.8260405859375")                          # as printed
    # Its pool: 160.63 GiB printed. Ours 164.90 GiB: 0.826 x 3.81 GiB of communicators out (below),
    # and our 69.52 GiB of weights as loaded (the checkpoint's 69.29, MLA's absorbed w_kc and w_vc
    # 61 x 512 x 8 heads x 256 x 2 B = 127,926,272 B and the load's 0.11 GiB, engine.loaded_weights)
    # where it loaded 73.58: 4.06 GiB more on this ROCm build, the rest of the gap.
    assert "KV size: 160.63 GB" in text and "mem usage=73.58 GB" in text
    assert e.result.weights_bytes_per_gpu == 74_400_807_232
    assert e.engine.weights_bytes_per_gpu == 74_400_807_232 + 127_926_272 + 118_111_600
    assert e.engine.kv_budget_bytes_per_gpu == 177_061_160_688           # 164.90 GiB


def test_communicators_as_the_logs_print_them():
    """What SGLang's distributed start-up holds before load_model measures the memory
    mem_fraction_static multiplies (model_runner.py init_torch_distributed logs it): TP0's figure
    the estimate, the ranks' spread the band. 8 x H200 (sglang#11716): 1.96, 1.77-2.01 GiB; 8 x B200
    with DP attention (sglang#5390): 2.38, 1.88-2.50 (seven ranks quoted); 8 x MI355X (RCCL and AITER's
    all-reduce): 3.81, 3.41-3.83; 4 x L4 over PCIe at tp 4: 0.13."""
    assert _mem_usage("sglang-tp8-h200-init-distributed-pr11716.log") == (*sglang.COMM_NVLS_TP8, 8)
    assert _mem_usage("sglang-dp8-attention-b200-init-distributed-pr5390.log")[:3] == sglang.COMM_NVLS_DP8
    assert _mem_usage("sglang-kimi-k2.5-mi355x-tp8-rocm-mfs-auto-v0.5.8.post1.log") == (*sglang.COMM_ROCM_TP8, 8)
    # Off NVLink-Hopper: 4 x L4 over PCIe at tp 4 (0.4.3.post4), TP0 alone quoted: 0.13 GiB.
    assert _mem_usage("sglang-qwq-32b-4xl4-tp4-mfs085-v0.4.3.post4.log")[0] == sglang.COMM_OTHER[0]
    # The H200 log: Load weight begin 137.34 GiB on TP0 = PyTorch's 139.81 GiB less 1.96 and a context
    # of 0.51 GiB (ours 0.38).
    h200 = gpu_presets.gpu("h200-141gb").torch_memory_bytes
    assert abs(Fraction(h200, 1 << 30) - Fraction("1.96") - Fraction("137.34") - Fraction("0.51")) < Fraction(1, 100)


def test_communicators_come_out_of_the_pool_with_their_band():
    """The pool is mem_fraction_static x (free - communicators) - weights: the engine's overhead is
    mem_fraction_static x their estimate, its band the ranks' spread; none at tp 1 or where the memory
    in use is given (--memory-in-use-gib holds it)."""
    e = evaluate({"engine": "sglang", "engine-version": "0.5.8.post1", "model": "moonshotai/Kimi-K2.5",
                  "gpu": "mi355x-288gb", "gpus": "8", "tp": "8"})
    fraction = Fraction("0.8260405859375")
    assert e.engine.overhead_bytes_per_gpu == int(int(Fraction("3.81") * (1 << 30)) * fraction) == 3_379_295_979
    top, bottom = e.engine.band
    assert (top.overhead_bytes_per_gpu, bottom.overhead_bytes_per_gpu) == (
        int(int(Fraction("3.83") * (1 << 30)) * fraction), int(int(Fraction("3.41") * (1 << 30)) * fraction))
    assert any("--tp-size 8 holds about 3.81 GiB" in n and "ROCm" in n for n in e.engine.notes)
    one = evaluate({"engine": "sglang", "model": "Qwen/Qwen3-8B", "gpu": "h100-sxm-80gb"})
    assert one.engine.overhead_bytes_per_gpu == 0 and one.engine.band is None
    given = evaluate({"engine": "sglang", "model": "Qwen/Qwen3-8B", "gpu": "h100-sxm-80gb", "gpus": "8",
                      "tp": "8", "memory-in-use-gib": "2.5"})
    assert given.engine.overhead_bytes_per_gpu == 0
    # tp 2 on H100s (no SGLang log at this size): half the tp 8 figure, the band up to it.
    two = evaluate({"engine": "sglang", "model": "Qwen/Qwen3-8B", "gpu": "h100-sxm-80gb", "gpus": "2", "tp": "2"})
    estimate, low, high, words = sglang.communicators(two.scenario)
    assert (estimate, high) == (int(Fraction("0.98") * (1 << 30)), int(Fraction("2.01") * (1 << 30)))
    assert "read at tp 8 only" in words
    # A GPU given only by its memory: NCCL over PCIe taken, NVLink on Hopper's figure the band's top.
    custom = evaluate({"engine": "sglang", "model": "Qwen/Qwen3-8B", "gpu-memory-gib": "80", "gpus": "4", "tp": "4"})
    estimate, low, high, words = sglang.communicators(custom.scenario)
    assert high == int(Fraction("2.01") * (1 << 30)) and "given only by its memory" in words
