"""A start-up log's GPU found by the facts the presets state (data/gpus.json) and the log prints:
the device name the driver reports matched against each preset's device_name first, then by the
words of --gpu; the compute capability, the gfx target, PyTorch's total and the memory free at
start-up rule presets out and the total chooses among those left. Several left, or none: said in
a note naming them, never a silent pick (readers/log_rules.match_gpu, take_gpu)."""

from fractions import Fraction

import pytest

from kvcalc.errors import InputError
from kvcalc.inputs.startup_log import read_log
from kvcalc.readers import gpu_presets
from kvcalc.readers.log_rules import Device, match_gpu, unread_gpu
from support import FIXTURES

LOGS = FIXTURES / "logs"


def log_text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8", errors="replace")


def vllm_start() -> str:
    """A line only vLLM prints at start-up (the A100 fixture's KV cache size), below the lines
    built here, so that they are read as vLLM's."""
    return next(line for line in log_text("vllm-qwen3-coder-30b-a3b-a100-80gb-util090-131k-seqs16-v0.26.1rc1.log")
                .splitlines() if "GPU KV cache size" in line)


def gpu_notes(reading) -> list[str]:
    return [note for note in reading.notes if note.startswith("gpu not read")]


# --- the real fixture logs ------------------------------------------------------------------------

def test_llamacpp_3090_by_its_name_capability_and_free_memory():
    # llamacpp-qwen3-14b-q8kv-3090-32k-fa-b5505.log (https://github.com/bjodah/bug-reproducer-llamacpp-
    # json-parse/blob/60685dc0301ac533514ac491c8b51567dca8fb2d/README.md): ggml_cuda_init prints
    # "Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes", the loader "using device
    # CUDA0 (NVIDIA GeForce RTX 3090) - 23641 MiB free". The name is rtx-3090-24gb's device_name;
    # its compute capability is 8.6 and 23,641 MiB (23.09 GiB) fit in its 24 GiB.
    reading = read_log(log_text("llamacpp-qwen3-14b-q8kv-3090-32k-fa-b5505.log"))
    seen = reading.printed["gpu_device"].value
    assert seen.device == Device("NVIDIA GeForce RTX 3090", free_gib=Fraction(23641, 1024), capability=(8, 6))
    assert reading.values["gpu"] == "rtx-3090-24gb" and seen.candidates == ("rtx-3090-24gb",)
    assert gpu_presets.gpu("rtx-3090-24gb").compute_capability == (8, 6)
    # The same log with another capability printed is not that card: said, not taken.
    other = read_log(log_text("llamacpp-qwen3-14b-q8kv-3090-32k-fa-b5505.log").replace(
        "compute capability 8.6", "compute capability 8.9"))
    assert "gpu" not in other.values
    assert gpu_notes(other) == ["gpu not read: the log's GPU 'NVIDIA GeForce RTX 3090' is no preset: compute "
                                "capability 8.9 printed, rtx-3090-24gb's is 8.6; choose the one its server ran"]


def test_llamacpp_two_4090s_read_as_one_preset():
    # llamacpp-r1-distill-qwen-32b-class-ollama-2x4090-2k-nofa.log (https://github.com/ollama/ollama/
    # issues/9068): two "NVIDIA GeForce RTX 4090, compute capability 8.9" and 20,140 MiB free on CUDA0.
    reading = read_log(log_text("llamacpp-r1-distill-qwen-32b-class-ollama-2x4090-2k-nofa.log"))
    assert reading.printed["gpu_device"].value.device == Device(
        "NVIDIA GeForce RTX 4090", free_gib=Fraction(20140, 1024), capability=(8, 9))
    assert reading.values["gpu"] == "rtx-4090-24gb" and reading.values["gpus"] == "2"


def test_llamacpp_two_different_gpus_are_not_one_preset():
    # llamacpp-command-r-35b-class-4070ti-3090ti-4k-b2450.log (https://github.com/ggml-org/llama.cpp/
    # pull/6122): an RTX 4070 Ti (8.9) and an RTX 3090 Ti (8.6): which binds is the user's to say.
    reading = read_log(log_text("llamacpp-command-r-35b-class-4070ti-3090ti-4k-b2450.log"))
    assert "gpu" not in reading.values and "gpu_device" not in reading.printed
    assert gpu_notes(reading) == ["gpu not read: the GPUs differ (NVIDIA GeForce RTX 3090 Ti, NVIDIA GeForce RTX "
                                  "4070 Ti); choose the one that binds"]


def test_vllm_a100_80gb_by_its_device_name_and_total():
    # vllm-qwen3-coder-30b-a3b-a100-80gb-util090-131k-seqs16-v0.26.1rc1.log (https://github.com/LukeJYK/
    # AutoScientists/blob/e3133549cf9561e4649b382f4f2e17e97e79cc6a/vllm.log): the MoE config file is
    # named "device_name=NVIDIA_A100-SXM4-80GB" (torch's name, "_" for spaces), the profile "Free
    # memory on device (78.84/79.25 GiB)". The name is a100-sxm-80gb's device_name exactly; by words
    # it would be the A100 SXM4 80GB too, and 79.25 GiB fits in its 80.
    reading = read_log(log_text("vllm-qwen3-coder-30b-a3b-a100-80gb-util090-131k-seqs16-v0.26.1rc1.log"))
    seen = reading.printed["gpu_device"].value
    assert seen.device == Device("NVIDIA_A100-SXM4-80GB", total_gib=Fraction(7925, 100))
    assert gpu_presets.gpus_by_device("NVIDIA_A100-SXM4-80GB") == ("a100-sxm-80gb",)
    assert reading.values["gpu"] == "a100-sxm-80gb"


def test_vllm_h100_reads_as_before():
    # vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log (https://github.com/Zzsf11/VideoCuttingAgent/
    # blob/4b5f0c326e790c4d43bda35b8e37ebe418b22580/output/Qwen3_8891_vllm-server.out).
    reading = read_log(log_text("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log"))
    assert reading.values["gpu"] == "h100-sxm-80gb"
    assert {r.option: r for r in reading.read}["gpu"].how == "the preset NVIDIA_H100_80GB_HBM3 is"
    # A capability the H100 has not (vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log's symm_mem line, from
    # https://github.com/gnosia93/eks-agentic-ai/blob/ff9163ca42d0d2690046b156910a8639ac06b25a/lesson/
    # 10-vllm-inference.md, an L40S's 8.9) rules it out.
    symm = next(line for line in log_text("vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log").splitlines()
                if "Device capability" in line)
    mixed = read_log(log_text("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log") + "\n" + symm)
    assert "gpu" not in mixed.values
    assert unread_gpu(mixed.printed) == ("the log's GPU 'NVIDIA_H100_80GB_HBM3' is no preset: compute capability "
                                         "8.9 printed, h100-sxm-80gb's is 9.0")


def test_vllm_bf16_refusal_names_the_device_and_its_capability():
    # vLLM's worker.py refusal as vllm-project/vllm issue #946 prints it: the device's name (torch's)
    # and compute capability, on a V100: the preset v100-sxm2-32gb, whose device_name it is.
    reading = read_log("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
                       "Your Tesla V100-SXM2-32GB GPU has compute capability 7.0.\n" + vllm_start())
    assert reading.printed["gpu_device"].value.device == Device("Tesla V100-SXM2-32GB", capability=(7, 0))
    assert reading.values["gpu"] == "v100-sxm2-32gb"


def test_sglang_check_env_name_and_capability_with_the_fixture():
    # sglang-qwen3-8b-tp1-mfs090.log (https://github.com/sgl-project/sglang/issues/6291) with the two
    # GPU lines `python -m sglang.check_env` prints (sglang/check_env.py: "GPU 0: NAME", "GPU 0 Compute
    # Capability: 9.0"). The 78.84 GiB free before the weights (63.49 + 15.35) fit in the H100's 79.65.
    text = "GPU 0: NVIDIA H100 80GB HBM3\nGPU 0 Compute Capability: 9.0\n" + log_text("sglang-qwen3-8b-tp1-mfs090.log")
    reading = read_log(text)
    assert reading.printed["gpu_device"].value.device == Device(
        "NVIDIA H100 80GB HBM3", free_gib=Fraction(7884, 100), capability=(9, 0))
    assert reading.values["gpu"] == "h100-sxm-80gb" and reading.values["memory-in-use-gib"] == "0.38"


# --- the driver's names the words missed ---------------------------------------------------------

@pytest.mark.parametrize("name, cc, gpu_id", [
    # GH200's driver name counts the Grace CPU's 480 GB with it; the GPU is the 96 GB HBM3 one.
    ("NVIDIA GH200 480GB", "9.0", "gh200-96gb"),
    # Blackwell Ultra's HGX board: sm_103.
    ("NVIDIA B300 SXM6 AC", "10.3", "b300-288gb"),
])
def test_driver_names_the_words_missed(name, cc, gpu_id):
    with pytest.raises(InputError):
        gpu_presets.gpu_family(name)                # by words, no preset: "480gb", "sxm6", "ac" are no preset's
    assert gpu_presets.gpus_by_device(name) == gpu_presets.gpus_by_device(name.upper().replace(" ", "_")) == (gpu_id,)
    line = f"ggml_cuda_init: found 1 CUDA devices:\n  Device 0: {name}, compute capability {cc}, VMM: yes\n"
    reading = read_log(line + "llama_context: n_ctx         = 4096\n")
    assert reading.values["gpu"] == gpu_id and not gpu_notes(reading)
    vllm = read_log("Config file not found at /vllm/fused_moe/configs/E=128,N=768,device_name="
                    f"{name.replace(' ', '_')}.json\n" + vllm_start())
    assert vllm.values["gpu"] == gpu_id


# --- several presets, and none ----------------------------------------------------------------------

def test_h100_sxm_pcie_nvl_by_memory():
    # "NVIDIA H100" is the SXM card's alias; the NVL's 93.58 GiB is the only one holding 93 GiB in all
    # (or free), and the PCIe card has the SXM's memory: the total never picks between those two.
    assert match_gpu(Device("NVIDIA H100")).preset == "h100-sxm-80gb"
    nvl = match_gpu(Device("NVIDIA H100", total_gib=Fraction(93)))
    assert nvl.preset == "h100-nvl-94gb" and nvl.candidates == ("h100-sxm-80gb", "h100-pcie-80gb", "h100-nvl-94gb")
    assert match_gpu(Device("NVIDIA H100", free_gib=Fraction(93))).preset == "h100-nvl-94gb"
    assert match_gpu(Device("NVIDIA H100 PCIe", total_gib=Fraction(7919, 100))).preset == "h100-pcie-80gb"
    # A total more than the card named holds: not that card, whatever its name says.
    wrong = match_gpu(Device("NVIDIA H100 80GB HBM3", total_gib=Fraction(93)))
    assert wrong.preset is None and wrong.how == ("the log's GPU 'NVIDIA H100 80GB HBM3' is no preset: a total of "
                                                  "93.00 GiB printed, more than h100-sxm-80gb's 79.65 GiB")


def test_a_name_of_several_presets_is_said_with_them():
    # "NVIDIA A100" has the words of four presets; 79.25 GiB leaves the two 80 GB cards, SXM4 and
    # PCIe, of the same memory: not picked.
    assert match_gpu(Device("NVIDIA A100", total_gib=Fraction(7925, 100))).how == \
        "the log's GPU 'NVIDIA A100' fits 2 presets, a100-sxm-80gb, a100-pcie-80gb"
    reading = read_log("  Device 0: NVIDIA A100, compute capability 8.0, VMM: yes\nllama_context: n_ctx = 4096\n")
    assert "gpu" not in reading.values
    assert gpu_notes(reading) == [
        "gpu not read: the log's GPU 'NVIDIA A100' fits 4 presets, a100-sxm-40gb, a100-pcie-40gb, a100-sxm-80gb, "
        "a100-pcie-80gb (the log prints no total memory to tell them apart); choose the one its server ran"]
    assert unread_gpu(reading.printed).startswith("the log's GPU 'NVIDIA A100' fits 4 presets")


def test_a_name_of_no_preset_is_said():
    # The RTX 4090 D (China's cut-down 4090) is no preset: neither its device name nor its words.
    reading = read_log("llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 4090 D) - 23800 "
                       "MiB free\nllama_context: n_ctx = 4096\n")
    assert "gpu" not in reading.values
    assert gpu_notes(reading) == ["gpu not read: the log's GPU 'NVIDIA GeForce RTX 4090 D' is no preset; choose the "
                                  "one its server ran"]
    assert unread_gpu(reading.printed) == "the log's GPU 'NVIDIA GeForce RTX 4090 D' is no preset"
    # vLLM said nothing of an unknown device before: now the same note.
    vllm = read_log("device_name=NVIDIA_GeForce_RTX_4090_D.json\n" + vllm_start())
    assert "gpu" not in vllm.values and unread_gpu(vllm.printed) == \
        "the log's GPU 'NVIDIA_GeForce_RTX_4090_D' is no preset"


def test_a_rocm_device_by_its_gfx_target():
    # llama.cpp's ROCm list prints the gfx target: gfx942 is the MI300X's; gfx950 (the MI355X's) is not.
    line = ("  Device 0: AMD Instinct MI300X, {}:sramecc+:xnack- (0x942), VMM: no, Wave Size: 64\n"
            "llama_context: n_ctx = 4096\n")
    assert read_log(line.format("gfx942")).values["gpu"] == "mi300x-192gb"
    other = read_log(line.format("gfx950"))
    assert "gpu" not in other.values and unread_gpu(other.printed) == \
        "the log's GPU 'AMD Instinct MI300X' is no preset: gfx950 printed, mi300x-192gb is gfx942"
