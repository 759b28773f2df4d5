"""Launch commands for the serving engines, for the configuration on screen.

Only flags each engine has. A KV precision an engine cannot store is said, never mapped to
something else: the command is withheld with the reason.
"""

import shlex
from dataclasses import dataclass
from fractions import Fraction

from .options import Scenario

ENGINES = ("vllm", "sglang", "llama.cpp")

# vLLM --kv-cache-dtype choices (vllm/config/cache.py CacheDType) by our precision name.
VLLM_KV = {"fp8": "fp8", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "bf16": "bfloat16"}
# SGLang --kv-cache-dtype choices (server_args.py).
SGLANG_KV = {"fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "bf16": "bf16"}
# llama.cpp -ctk / -ctv cache types (common/arg.cpp).
LLAMA_CPP_KV = {"fp32": "f32", "fp16": "f16", "bf16": "bf16", "q8_0": "q8_0", "q5_1": "q5_1",
                "q5_0": "q5_0", "q4_1": "q4_1", "q4_0": "q4_0", "iq4_nl": "iq4_nl"}
VLLM_BLOCK_SIZES = (1, 8, 16, 32, 64, 128)


@dataclass(frozen=True)
class Launch:
    engine: str
    command: str | None          # None when the engine cannot run this configuration
    notes: tuple[str, ...]


def _decimal(value: Fraction) -> str:
    return f"{float(value):g}"


def _kv_flag(scenario: Scenario, table: dict, engine: str):
    kv = scenario.workload.kv_precision.name
    if kv == scenario.model.dtype:
        return "auto", None
    if kv in table:
        return table[kv], None
    allowed = ", ".join(sorted(set(table)))
    return None, f"{engine} cannot store the KV cache as {kv}; its choices here: {scenario.model.dtype} (auto), {allowed}"


def _repo(scenario: Scenario, notes: list) -> str:
    if scenario.model.hf_repo:
        return scenario.model.hf_repo
    notes.append("replace MODEL with your checkpoint: this model has no Hugging Face repo id here")
    return "MODEL"


def vllm(scenario: Scenario) -> Launch:
    work, dep, notes = scenario.workload, scenario.deployment, []
    kv, why = _kv_flag(scenario, VLLM_KV, "vLLM")
    if why:
        return Launch("vllm", None, (why,))
    args = ["vllm", "serve", _repo(scenario, notes), "--max-model-len", str(work.context_tokens),
            "--max-num-seqs", str(work.batch), "--kv-cache-dtype", kv,
            "--tensor-parallel-size", str(dep.tp), "--pipeline-parallel-size", str(dep.pp),
            "--gpu-memory-utilization", _decimal(dep.memory_utilization)]
    if work.block_size_tokens > 1:
        if work.block_size_tokens not in VLLM_BLOCK_SIZES:
            return Launch("vllm", None, (f"vLLM block sizes are {', '.join(map(str, VLLM_BLOCK_SIZES))}; "
                                         f"not {work.block_size_tokens}",))
        args += ["--block-size", str(work.block_size_tokens)]
    if dep.memory_utilization == 1:
        notes.append("utilization 1.0 leaves vLLM no headroom; its default is 0.9")
    return Launch("vllm", shlex.join(args), tuple(notes))


def sglang(scenario: Scenario) -> Launch:
    work, dep, notes = scenario.workload, scenario.deployment, []
    kv, why = _kv_flag(scenario, SGLANG_KV, "SGLang")
    if why:
        return Launch("sglang", None, (why,))
    args = ["python", "-m", "sglang.launch_server", "--model-path", _repo(scenario, notes),
            "--context-length", str(work.context_tokens), "--max-running-requests", str(work.batch),
            "--kv-cache-dtype", kv, "--tp-size", str(dep.tp), "--pp-size", str(dep.pp),
            "--mem-fraction-static", _decimal(dep.memory_utilization)]
    if work.block_size_tokens > 1:
        args += ["--page-size", str(work.block_size_tokens)]
    notes.append("SGLang's --mem-fraction-static covers weights and KV cache, close to vLLM's utilization")
    return Launch("sglang", shlex.join(args), tuple(notes))


def llama_cpp(scenario: Scenario) -> Launch:
    work, dep, notes = scenario.workload, scenario.deployment, []
    kv = scenario.workload.kv_precision.name
    if kv not in LLAMA_CPP_KV:
        return Launch("llama.cpp", None, (f"llama.cpp cannot store the KV cache as {kv}; its cache types: "
                                          f"{', '.join(LLAMA_CPP_KV)}",))
    cache = LLAMA_CPP_KV[kv]
    model = f"{scenario.model.hf_repo.split('/')[-1]}.gguf" if scenario.model.hf_repo else "MODEL.gguf"
    # -c is the whole cache, shared by the -np parallel slots: context x requests.
    args = ["llama-server", "-m", model, "-c", str(work.context_tokens * work.batch), "-np", str(work.batch),
            "-ctk", cache, "-ctv", cache, "-ngl", "999"]
    if cache not in ("f32", "f16", "bf16"):
        args += ["-fa", "on"]
        notes.append("a quantized V cache needs flash attention (-fa on)")
    notes.append("point -m at a GGUF conversion of the model")
    if dep.gpus > 1:
        notes.append(f"llama.cpp has no tensor parallelism: over {dep.gpus} GPUs it splits layers "
                     "(--split-mode layer, the default)")
    if work.block_size_tokens > 1 or work.prefix_tokens:
        notes.append("llama.cpp has no block-size or shared-prefix flag; those inputs are not in this command")
    return Launch("llama.cpp", shlex.join(args), tuple(notes))


def launch(scenario: Scenario, engine: str) -> Launch:
    return {"vllm": vllm, "sglang": sglang, "llama.cpp": llama_cpp}[engine](scenario)
